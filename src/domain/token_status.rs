//! What an account's token row says about it at a given moment: valid or not and why, when the
//! token expires, and for facebook when its 90-day data access ends (spec §2.2, §5.8). The API's
//! token info and the dashboard's token page both read it, so they cannot disagree.

use chrono::{DateTime, Utc};
use entity::{account, platform::Platform};

/// When the account's token expires; `None` for facebook, whose page tokens do not (§2.2).
pub fn token_expiry(account: &account::Model) -> Option<DateTime<Utc>> {
    if account.platform == Platform::Facebook {
        None
    } else {
        account.token_expires_at
    }
}

/// An account's token verdicts at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenStatus {
    /// Valid and not expired.
    pub is_valid: bool,
    pub expires_at: Option<DateTime<Utc>>,
    /// facebook only: when data access ends.
    pub data_access_expires_at: Option<DateTime<Utc>>,
    /// facebook only: whether data access has ended.
    pub data_access_expired: Option<bool>,
    /// Why the account is invalid (only when it is).
    pub invalid_reason: Option<String>,
}

impl TokenStatus {
    pub fn of(account: &account::Model, now: DateTime<Utc>) -> Self {
        let expires_at = token_expiry(account);
        let expired = expires_at.is_some_and(|at| at <= now);
        // facebook page tokens do not expire, but data access must be renewed every 90 days
        // (spec §5.8): say when, and whether the user must reconnect for it.
        let data_access = account
            .data_access_expires_at
            .filter(|_| account.platform == Platform::Facebook);
        Self {
            is_valid: account.is_valid && !expired,
            expires_at,
            data_access_expires_at: data_access,
            data_access_expired: data_access.map(|at| at <= now),
            invalid_reason: account.last_error.clone().filter(|_| !account.is_valid),
        }
    }
}
