//! Validation of `POST /v2/posts` (spec §4.1, §7, §8), as pure functions:
//!
//! 1. [`parse_request`]: the body's shape → [`PostRequest`] (missing parameters, types, platform);
//! 2. [`check_account`]: the request against the account row (disconnected, wrong platform, dead
//!    token);
//! 3. [`media_slots`]: counts and text rules that need no network, and what each media position
//!    accepts — the caller then probes each URL;
//! 4. [`build_plan`]: the request plus the probed media → a typed
//!    [`PublishPlan`](crate::domain::plan::PublishPlan).
//!
//! Nothing here touches the network or the database, so every row of the platform rules table
//! is covered by table-driven unit tests (`tests.rs`).

mod account;
mod assemble;
mod request;
mod rules;
#[cfg(test)]
mod tests;

pub use account::{AccountFacts, check_account};
pub use assemble::build_plan;
pub use request::{
    CreatePost, CreatePostContent, CreatePostRequest, CreatePostTarget, PostRequest, Text,
    TextOrTexts, TiktokOptions, parse_request,
};
pub use rules::{
    THREADS_TEXT_MAX_CHARS, X_TWEET_MAX_CHARS, cover_accept, media_slots, split_title,
    truncate_tweet,
};
