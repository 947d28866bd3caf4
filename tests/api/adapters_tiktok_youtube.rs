//! Adapter tests against the simulator: TODO (being written).

#[allow(unused_imports)]
use crate::adapters::Harness;
