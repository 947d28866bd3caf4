//! Checks derived from `data/threads/` (filled in by issue 13).
