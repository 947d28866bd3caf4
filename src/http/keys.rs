//! API-key management (session): `GET/POST /api/keys`, `DELETE /api/keys/{id}` (spec §2.1, §4.11).

use actix_web::{HttpResponse, middleware::from_fn, web};
use serde::Deserialize;
use serde_json::json;

use super::{
    auth::{SessionUser, require_session},
    parse_uuid,
};
use crate::{
    AppState, crypto,
    error::{ApiError, ErrorCode},
    views,
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

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn list_keys(
    state: web::Data<AppState>,
    session: SessionUser,
) -> Result<HttpResponse, ApiError> {
    let keys = state.store.list_active_keys(session.user.id).await?;
    let keys: Vec<_> = keys.iter().map(views::api_key).collect();
    Ok(HttpResponse::Ok().json(json!({ "keys": keys })))
}

#[derive(Deserialize)]
struct CreateKeyRequest {
    name: Option<String>,
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn create_key(
    state: web::Data<AppState>,
    session: SessionUser,
    body: web::Json<CreateKeyRequest>,
) -> Result<HttpResponse, ApiError> {
    let name = body
        .into_inner()
        .name
        .ok_or_else(|| ApiError::missing_parameter("name"))?;
    let (full, stored) = create_api_key(&state, session.user.id, &name).await?;
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "message": "API key created. Copy it now: it will not be shown again.",
        "api_key": full,
        "key": views::api_key(&stored),
    })))
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

/// Creates a key named `name` (trimmed) for `user_id` and returns its full value (to show
/// once) with the stored row. Shared by `POST /api/keys` and the dashboard's key form.
pub async fn create_api_key(
    state: &AppState,
    user_id: uuid::Uuid,
    name: &str,
) -> Result<(String, entity::api_key::Model), CreateKeyError> {
    let name = name.trim();
    super::reject_nul("name", name).map_err(CreateKeyError::NameHasNul)?;
    if name.is_empty() {
        return Err(CreateKeyError::NameEmpty);
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(CreateKeyError::NameTooLong);
    }
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
        .insert_api_key(user_id, name, &key, state.clock.now())
        .await
        .map_err(|e| CreateKeyError::Internal(e.into()))?;
    Ok((key.full, stored))
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn delete_key(
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
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "message": "API key deleted",
        "id": key_id,
    })))
}
