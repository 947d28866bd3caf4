//! Taking a user's access away and giving it back (the `service user disable`, `enable` and
//! `sessions revoke` commands), by e-mail address: every user with that address (several
//! identity providers may share one); and the operator's list of every user (`user list`).
//!
//! - **Disable**: the users' sessions are revoked and their API keys refused (401) from the
//!   very next request, on every instance, and sign-in is refused until they are enabled. The
//!   keys themselves are kept: enabling gives them back, where deleting them could not be
//!   undone; the sessions stay revoked (the user signs in again).
//! - **Enable**: undoes the refusal.
//! - **Sessions revoke**: ends the users' dashboard sessions and nothing else (their keys go on
//!   working, and they may sign in again).
//!
//! Every instance refuses on its very next request: sessions are read from the database on
//! every request, and the cached key owners are evicted by the write itself (PostgreSQL
//! notifies the other instances in the transaction; on a SQLite file the command leaves a
//! mark the running instance checks, see [`crate::store::access::ChangeMarker`]).

use chrono::{DateTime, Utc};

use crate::store::Store;

/// Why a command found nothing to do, or could not do it.
#[derive(Debug, thiserror::Error)]
pub enum UserAccessError {
    #[error("no user has the e-mail address {0}")]
    NoSuchUser(String),
    #[error("database: {0}")]
    Database(#[from] sea_orm::DbErr),
}

/// Disables every user with e-mail `email` (see the module's comment); the users disabled.
pub async fn disable_users(
    store: &Store,
    now: DateTime<Utc>,
    email: &str,
) -> Result<Vec<entity::user::Model>, UserAccessError> {
    set_disabled(store, now, email, true).await
}

/// Enables every user with e-mail `email` again; the users enabled.
pub async fn enable_users(
    store: &Store,
    now: DateTime<Utc>,
    email: &str,
) -> Result<Vec<entity::user::Model>, UserAccessError> {
    set_disabled(store, now, email, false).await
}

async fn set_disabled(
    store: &Store,
    now: DateTime<Utc>,
    email: &str,
    disabled: bool,
) -> Result<Vec<entity::user::Model>, UserAccessError> {
    let users = store.set_users_disabled(email, disabled, now).await?;
    if users.is_empty() {
        return Err(UserAccessError::NoSuchUser(email.to_string()));
    }
    tracing::info!(email, disabled, users = users.len(), "user access changed");
    Ok(users)
}

/// Ends the dashboard sessions of every user with e-mail `email`; how many were live.
pub async fn revoke_sessions(
    store: &Store,
    now: DateTime<Utc>,
    email: &str,
) -> Result<u64, UserAccessError> {
    if store.find_users_by_email(email).await?.is_empty() {
        return Err(UserAccessError::NoSuchUser(email.to_string()));
    }
    Ok(store.revoke_sessions_by_email(email, now).await?)
}

/// Every user, oldest first (`service user list`).
pub async fn list_users(store: &Store) -> Result<Vec<entity::user::Model>, UserAccessError> {
    Ok(store.all_users().await?)
}
