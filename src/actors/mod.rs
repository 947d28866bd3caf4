//! The account actors and what routes to them:
//! - [`supervisor`]: routes requests to account actors (one per connected account), built once;
//! - [`account`]: an account's token state, rate limiter and publish queue ([`limiter`]).
//!
//! The actors that work on their own (scheduler, reconciler, collector, token keeper, sweeper)
//! are [`crate::background`]'s; they reach accounts through the supervisor.

pub mod account;
pub mod limiter;
pub mod supervisor;
