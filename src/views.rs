//! The wire shapes of the spec's resources (§2), for callers outside the HTTP layer (the CLI,
//! the dashboard). The types themselves, and their conversions from the stored rows, are the
//! contract in [`crate::http::dto`]; these helpers only render them as JSON values.

use chrono::{DateTime, Utc};
use entity::{account, user};
use serde_json::Value;

use crate::http::dto::resources::{TokenInfo, User};

pub use crate::http::dto::iso;

/// `data` of `POST /api/token/info` (§4.9), as JSON.
pub fn token_info(account: &account::Model, now: DateTime<Utc>) -> Value {
    to_value(&TokenInfo::new(account, now))
}

/// A user as operators and `/auth/me` see it, as JSON.
pub fn user(user: &user::Model) -> Value {
    to_value(&User::from(user))
}

fn to_value(value: &impl serde::Serialize) -> Value {
    // A struct of strings, numbers and booleans always serializes.
    serde_json::to_value(value).unwrap_or(Value::Null)
}
