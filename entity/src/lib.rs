//! SeaORM models of the service's tables. Plain data, no logic: queries live in the service's
//! `store` layer and request/response shapes in its `http` layer.

pub mod account;
pub mod api_key;
pub mod idempotency_key;
pub mod login_state;
pub mod media_usage;
pub mod medium;
pub mod oauth_state;
pub mod performance_snapshot;
pub mod platform;
pub mod post_submission;
pub mod scheduled_post;
pub mod session;
pub mod usage_counter;
pub mod used_form_token;
pub mod user;
pub mod webhook_attempt;
pub mod webhook_endpoint;
pub mod webhook_event;
pub mod webhook_message;

/// Calls the macro `$callback` with the module of every table, each after the tables its foreign
/// keys point at: the one list that whole-database work (`service db copy`) goes through. A
/// table added without its line here fails the service's test that compares this list with the
/// tables of a migrated database.
#[macro_export]
macro_rules! for_every_table {
    ($callback:ident) => {
        $callback!(
            user,
            session,
            login_state,
            api_key,
            account,
            post_submission,
            scheduled_post,
            usage_counter,
            performance_snapshot,
            oauth_state,
            used_form_token,
            idempotency_key,
            webhook_endpoint,
            webhook_event,
            webhook_message,
            webhook_attempt,
            medium,
            media_usage
        )
    };
}
