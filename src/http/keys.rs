//! API-key management (session): `GET/POST /api/keys`, `DELETE /api/keys/{id}` (spec §2.1, §4.11).

use actix_web::{HttpResponse, middleware::from_fn, web};

use crate::domain::text::parse_uuid;
use crate::web::auth::{SessionUser, require_session};
use crate::{
    AppState,
    error::{ApiError, ErrorCode},
    services::keys::{KeyName, create_api_key},
};

use super::dto::{
    requests::CreateKeyRequest,
    resources::ApiKey,
    responses::{KeyCreated, KeyDeleted, KeyList},
    schema::ErrorBody,
};

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
    let (full, stored) = create_api_key(
        &state.store,
        state.clock.now(),
        state.config.auth.max_api_keys_per_user,
        session.user.id,
        &name,
    )
    .await?;
    Ok(HttpResponse::Ok().json(KeyCreated {
        success: true,
        message: "API key created. Copy it now: it will not be shown again.".to_string(),
        api_key: full,
        key: ApiKey::from(&stored),
    }))
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
