//! Long-lived actors of the service:
//! - [`supervisor`]: routes requests to account actors (one per connected account), built once;
//! - [`account`]: an account's token state, rate limiter and publish queue ([`limiter`]);
//! - [`scheduler`]: publishes due scheduled posts, at most once across crashes and instances;
//! - [`reconciler`]: checks publishes the platform was still processing at our deadline until
//!   they are published or failed (through the account actors);
//! - [`collector`]: takes the daily performance snapshot of every account;
//! - [`token_keeper`]: refreshes tokens in their window (through the account actors);
//! - [`last_used`]: the batch writer of API-key last-use times;
//! - [`sweeper`]: deletes expired sign-in and connection states, and dead sessions.

pub mod account;
pub mod limiter;
pub mod supervisor;
