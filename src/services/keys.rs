//! Creating API keys: the name's rules and the per-user limit, for `POST /api/keys` and the
//! dashboard's key form alike; and the operator's view of keys (`service key list|revoke`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{
    crypto,
    domain::text::reject_nul,
    error::{ApiError, ErrorCode},
    store::{Store, access::Invalidation},
};

/// Longest key name accepted (characters).
pub const MAX_NAME_CHARS: usize = 100;

/// Why a key could not be created: each is the user's to fix, except `Internal`.
#[derive(Debug)]
pub enum CreateKeyError {
    NameHasNul(ApiError),
    NameEmpty,
    NameTooLong,
    TooManyKeys { max: u64 },
    Internal(ApiError),
}

impl From<CreateKeyError> for ApiError {
    fn from(error: CreateKeyError) -> Self {
        match error {
            CreateKeyError::NameHasNul(error) | CreateKeyError::Internal(error) => error,
            CreateKeyError::NameEmpty => ApiError::invalid_request("name must not be empty"),
            CreateKeyError::NameTooLong => ApiError::invalid_request(format!(
                "name must be at most {MAX_NAME_CHARS} characters"
            )),
            CreateKeyError::TooManyKeys { max } => ApiError::new(
                ErrorCode::InvalidRequest,
                format!("A user may hold at most {max} active API keys; delete one first"),
            ),
        }
    }
}

/// A key's name as stored: trimmed, 1 to [`MAX_NAME_CHARS`] characters, no NUL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyName(String);

impl KeyName {
    /// Checks in this order, which decides the error of a name with several faults: NUL, then
    /// empty, then too long.
    pub fn parse(raw: &str) -> Result<Self, CreateKeyError> {
        let name = raw.trim();
        reject_nul("name", name).map_err(CreateKeyError::NameHasNul)?;
        if name.is_empty() {
            return Err(CreateKeyError::NameEmpty);
        }
        if name.chars().count() > MAX_NAME_CHARS {
            return Err(CreateKeyError::NameTooLong);
        }
        Ok(Self(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Creates a key named `name` for `user_id` and returns its full value (to show once) with the
/// stored row. Shared by `POST /api/keys` and the dashboard's key form.
/// `max_keys` is `auth.max_api_keys_per_user`.
pub async fn create_api_key(
    store: &Store,
    now: DateTime<Utc>,
    max_keys: u64,
    user_id: Uuid,
    name: &KeyName,
) -> Result<(String, entity::api_key::Model), CreateKeyError> {
    let active = store
        .count_active_keys(user_id)
        .await
        .map_err(|e| CreateKeyError::Internal(e.into()))?;
    if active >= max_keys {
        return Err(CreateKeyError::TooManyKeys { max: max_keys });
    }
    let key = crypto::generate_api_key();
    let stored = store
        .insert_api_key(user_id, name.as_str(), &key, now)
        .await
        .map_err(|e| CreateKeyError::Internal(e.into()))?;
    Ok((key.full, stored))
}

/// Why an operator's key command could not be done.
#[derive(Debug, thiserror::Error)]
pub enum KeyCommandError {
    #[error("no user has the e-mail address {0}")]
    NoSuchUser(String),
    #[error("no API key has the id {0}")]
    NoSuchKey(Uuid),
    #[error("database: {0}")]
    Database(#[from] sea_orm::DbErr),
}

/// Every key of the users with e-mail `email`, revoked ones included, oldest first.
pub async fn list_keys_by_email(
    store: &Store,
    email: &str,
) -> Result<Vec<entity::api_key::Model>, KeyCommandError> {
    let users = store.find_users_by_email(email).await?;
    if users.is_empty() {
        return Err(KeyCommandError::NoSuchUser(email.to_string()));
    }
    let ids: Vec<Uuid> = users.iter().map(|user| user.id).collect();
    Ok(store.keys_of_users(&ids).await?)
}

/// Revokes the key `key_id` as its owner's `DELETE /api/keys/{id}` does, and tells the
/// running instances so they refuse it on their very next request (PostgreSQL: by the write's
/// notification; a SQLite file: by the change mark). The key as it now is; revoking a revoked
/// key changes nothing.
pub async fn revoke_key(
    store: &Store,
    now: DateTime<Utc>,
    key_id: Uuid,
) -> Result<entity::api_key::Model, KeyCommandError> {
    let key = store
        .find_api_key(key_id)
        .await?
        .ok_or(KeyCommandError::NoSuchKey(key_id))?;
    if store.deactivate_api_key(key.user_id, key_id, now).await? {
        store.tell_other_processes(&[Invalidation::Key(key_id)]);
        tracing::info!(%key_id, user_id = %key.user_id, "API key revoked by the operator");
    }
    store
        .find_api_key(key_id)
        .await?
        .ok_or(KeyCommandError::NoSuchKey(key_id))
}
