//! API-key management (session): `GET/POST /api/keys`, `DELETE /api/keys/{id}` (spec §2.1, §4.11).

use actix_web::{HttpResponse, middleware::from_fn, web};

use super::auth::{SessionUser, require_session};
use crate::domain::text::parse_uuid;
use crate::{
    AppState, crypto,
    error::{ApiError, ErrorCode},
};

use super::dto::{
    requests::CreateKeyRequest,
    resources::ApiKey,
    responses::{KeyCreated, KeyDeleted, KeyList},
    schema::ErrorBody,
};

/// Longest key name accepted (characters).
pub const MAX_NAME_CHARS: usize = 100;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/keys")
            .wrap(from_fn(require_session))
            .route(web::get().to(list_keys))
            .route(web::post().to(create_key)),
    )
    .service(
        web::resource("/api/keys/{id}")
            .wrap(from_fn(require_session))
            .route(web::delete().to(delete_key)),
    );
}

/// The caller's active API keys.
#[utoipa::path(get, path = "/api/keys", tag = "keys", security(("session" = [])),
    responses(
        (status = 200, description = "The active keys", body = KeyList),
        (status = 401, description = "No valid session", body = ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
pub async fn list_keys(
    state: web::Data<AppState>,
    session: SessionUser,
) -> Result<HttpResponse, ApiError> {
    let keys = state.store.list_active_keys(session.user.id).await?;
    let keys = keys.iter().map(ApiKey::from).collect();
    Ok(HttpResponse::Ok().json(KeyList { keys }))
}

/// Creates an API key; the full key is in this answer only.
#[utoipa::path(post, path = "/api/keys", tag = "keys", security(("session" = [])),
    request_body = CreateKeyRequest,
    responses(
        (status = 200, description = "Created", body = KeyCreated),
        (status = 400, description = "Missing, empty or too long name; too many keys; malformed body", body = ErrorBody),
        (status = 401, description = "No valid session", body = ErrorBody),
        (status = 403, description = "Cross-site request", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
pub async fn create_key(
    state: web::Data<AppState>,
    session: SessionUser,
    body: web::Json<CreateKeyRequest>,
) -> Result<HttpResponse, ApiError> {
    let name = KeyName::try_from(body.into_inner())?;
    let (full, stored) = create_api_key(&state, session.user.id, &name).await?;
    Ok(HttpResponse::Ok().json(KeyCreated {
        success: true,
        message: "API key created. Copy it now: it will not be shown again.".to_string(),
        api_key: full,
        key: ApiKey::from(&stored),
    }))
}

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
    /// Checks in the order the API has always answered: NUL, then empty, then too long.
    pub fn parse(raw: &str) -> Result<Self, CreateKeyError> {
        let name = raw.trim();
        crate::domain::text::reject_nul("name", name).map_err(CreateKeyError::NameHasNul)?;
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
pub async fn create_api_key(
    state: &AppState,
    user_id: uuid::Uuid,
    name: &KeyName,
) -> Result<(String, entity::api_key::Model), CreateKeyError> {
    let max_keys = state.config.auth.max_api_keys_per_user;
    let active = state
        .store
        .count_active_keys(user_id)
        .await
        .map_err(|e| CreateKeyError::Internal(e.into()))?;
    if active >= max_keys {
        return Err(CreateKeyError::TooManyKeys { max: max_keys });
    }
    let key = crypto::generate_api_key();
    let stored = state
        .store
        .insert_api_key(user_id, name.as_str(), &key, state.clock.now())
        .await
        .map_err(|e| CreateKeyError::Internal(e.into()))?;
    Ok((key.full, stored))
}

/// Deactivates one of the caller's keys.
#[utoipa::path(delete, path = "/api/keys/{id}", tag = "keys", security(("session" = [])),
    params(("id" = String, Path, description = "The key's id (a UUID)")),
    responses(
        (status = 200, description = "Deleted", body = KeyDeleted),
        (status = 401, description = "No valid session", body = ErrorBody),
        (status = 403, description = "Cross-site request", body = ErrorBody),
        (status = 404, description = "`KeyNotFound`: unknown, foreign or already deleted", body = ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
pub async fn delete_key(
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let not_found = || ApiError::new(ErrorCode::KeyNotFound, "API key not found");
    let key_id = parse_uuid(&path).ok_or_else(not_found)?;
    let deleted = state
        .store
        .deactivate_api_key(session.user.id, key_id, state.clock.now())
        .await?;
    if !deleted {
        return Err(not_found());
    }
    Ok(HttpResponse::Ok().json(KeyDeleted {
        success: true,
        message: "API key deleted".to_string(),
        id: key_id,
    }))
}
