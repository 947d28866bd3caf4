//! The API's one way of writing a time.

use chrono::{DateTime, SecondsFormat, Utc};

/// ISO 8601 / RFC 3339 in UTC with milliseconds, e.g. `2026-11-22T08:00:00.000Z`.
pub fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}
