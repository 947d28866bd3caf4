//! Checks derived from `data/youtube/` (filled in by issue 13).
