//! Checks derived from `data/meta/` (filled in by issue 13).
