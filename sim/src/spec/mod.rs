//! Request checks derived from the platforms' own machine-readable specs.
//!
//! `data/` holds those specs exactly as published (see `data/README.md` for the repository, path and
//! commit of each file; they are copies of `../shared/platform-specs/`, byte for byte, so a fresh
//! clone of this repository has them). Each submodule parses its files once, on first use, into the
//! tables the simulator's handlers check requests against: the fields of each node and edge, the
//! parameters of each method with their types, enums and whether they are required. Rules the specs
//! do not carry (scopes, Graph-wide parameters, report combinations) are hand-written next to the
//! handler that enforces them, with the documentation they come from.

pub mod meta;
pub mod params;
pub mod threads;
pub mod x;
pub mod youtube;
