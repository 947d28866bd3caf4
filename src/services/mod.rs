//! The use cases: what the front ends (the JSON API, the dashboard, the CLI) and the background
//! actors ask of the service. Each service holds only what it uses (the store, the supervisor's
//! handle, the media fetcher, the clock, its settings), never the HTTP state.
//!
//! - [`publishing`]: a post now or at a time (`POST /v2/posts`, the compose form);
//! - [`idempotency`]: a retried `POST /v2/posts` with an `Idempotency-Key` answered once;
//! - [`posts`]: a publish's outcome as its resource shows it (`GET /v2/posts…`);
//! - [`scheduling`]: what the scheduler decides for a due post, and settling expired claims;
//! - [`reconciling`]: publishes the platform was still processing at our deadline;
//! - [`collection`]: the daily snapshots, backfills and the dates still missing;
//! - [`connection`]: connecting accounts over OAuth;
//! - [`operator`] and [`user_access`]: operator actions (CLI and `/admin`);
//! - [`config_check`]: every problem of a configuration at once (`service config check`);
//! - [`keys`], [`usage`] and [`performance`]: API keys, metering and recent posts;
//! - [`backup`]: a copy of the database (`service backup`);
//! - [`db_copy`]: every row of one database into another (`service db copy`).

pub mod backup;
pub mod collection;
pub mod config_check;
pub mod connection;
pub mod db_copy;
pub mod idempotency;
pub mod keys;
pub mod media;
pub mod operator;
pub mod performance;
pub mod posts;
pub mod publishing;
pub mod reconciling;
pub mod scheduling;
pub mod usage;
pub mod user_access;
pub mod webhooks;
