//! SeaORM models of the service's tables. Plain data, no logic: queries live in the service's
//! `store` layer and request/response shapes in its `http` layer.

pub mod account;
pub mod api_key;
pub mod login_state;
pub mod oauth_state;
pub mod performance_snapshot;
pub mod platform;
pub mod post_submission;
pub mod scheduled_post;
pub mod session;
pub mod usage_counter;
pub mod used_form_token;
pub mod user;
