//! Checks every text and id from a request passes before it goes further.

use crate::error::ApiError;

/// Refuses text with a NUL character: PostgreSQL cannot store it (in `text` or `jsonb`), and
/// SQLite would, so both backends refuse it alike, as a client error rather than a failed query.
pub fn reject_nul(name: &str, value: &str) -> Result<(), ApiError> {
    if value.contains('\0') {
        return Err(ApiError::invalid_request(format!(
            "{name} must not contain NUL characters (\\u0000)"
        )));
    }
    Ok(())
}

/// Parses an id from a path segment; anything that is not a UUID is simply not found.
pub fn parse_uuid(raw: &str) -> Option<uuid::Uuid> {
    uuid::Uuid::parse_str(raw.trim()).ok()
}
