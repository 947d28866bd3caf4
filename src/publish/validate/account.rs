//! Step 2: a request against the account it names (disconnected, wrong platform, dead token).

use chrono::{DateTime, Utc};

use super::PostRequest;
use crate::{
    domain::plan::Platform,
    error::{ApiError, ErrorCode},
};

/// What step 2 needs to know about the account.
#[derive(Debug, Clone)]
pub struct AccountFacts<'a> {
    pub platform: Platform,
    pub disabled: bool,
    pub is_valid: bool,
    pub token_expires_at: Option<DateTime<Utc>>,
    /// Why the token was marked invalid (`TokenExpired: …` or `InvalidToken: …`).
    pub invalid_reason: Option<&'a str>,
}

/// Step 2: the request against the account (already known to be the caller's).
pub fn check_account(
    request: &PostRequest,
    account: &AccountFacts<'_>,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    if account.disabled {
        return Err(ApiError::new(
            ErrorCode::AccountDisabled,
            "This account has been disconnected; reconnect it to publish",
        ));
    }
    if account.platform != request.platform {
        return Err(ApiError::new(
            ErrorCode::InvalidPlatform,
            format!(
                "Account {} is a {} account; content.platform is '{}'",
                request.account_id,
                account.platform,
                request.platform.as_str()
            ),
        ));
    }
    if account.token_expires_at.is_some_and(|at| at <= now) {
        return Err(ApiError::new(
            ErrorCode::TokenExpired,
            "The platform access token of this account has expired; reconnect the account",
        ));
    }
    if !account.is_valid
        && account
            .invalid_reason
            .is_some_and(|r| r.starts_with("TokenExpired"))
    {
        return Err(ApiError::new(
            ErrorCode::TokenExpired,
            "The platform access token of this account has expired; reconnect the account",
        ));
    }
    if !account.is_valid {
        return Err(ApiError::new(
            ErrorCode::InvalidToken,
            "The platform access token of this account is no longer valid; reconnect the account",
        ));
    }
    Ok(())
}
