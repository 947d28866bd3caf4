//! Checks derived from `data/x/` (filled in by issue 13).
