//! Connected accounts: `GET /api/accounts`, `DELETE /api/accounts/{account_id}`,
//! `POST /api/token/info` (session; spec §4.9), and `GET /v2/accounts` (API key; our addition so
//! programmatic clients can find their `accountId`s).

use actix_web::{HttpResponse, middleware::from_fn, web};
use serde::Deserialize;
use serde_json::json;

use super::{
    auth::{ApiCaller, SessionUser, require_api_key, require_session},
    parse_uuid,
};
use crate::{AppState, error::ApiError, views};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/accounts")
            .wrap(from_fn(require_session))
            .route(web::get().to(list_accounts)),
    )
    .service(
        web::resource("/api/accounts/{account_id}")
            .wrap(from_fn(require_session))
            .route(web::delete().to(disconnect_account)),
    )
    .service(
        web::resource("/api/token/info")
            .wrap(from_fn(require_session))
            .route(web::post().to(token_info)),
    )
    .service(
        web::resource("/v2/accounts")
            .wrap(from_fn(require_api_key))
            .route(web::get().to(list_accounts_for_key)),
    );
}

async fn accounts_body(
    state: &AppState,
    user_id: uuid::Uuid,
) -> Result<serde_json::Value, ApiError> {
    let accounts = state.store.list_connected_accounts(user_id).await?;
    let accounts: Vec<_> = accounts.iter().map(views::account).collect();
    Ok(json!({ "accounts": accounts }))
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn list_accounts(
    state: web::Data<AppState>,
    session: SessionUser,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(accounts_body(&state, session.user.id).await?))
}

#[tracing::instrument(skip_all, fields(user_id = %caller.user.id))]
async fn list_accounts_for_key(
    state: web::Data<AppState>,
    caller: ApiCaller,
) -> Result<HttpResponse, ApiError> {
    let mut body = accounts_body(&state, caller.user.id).await?;
    body["success"] = json!(true);
    Ok(HttpResponse::Ok().json(body))
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn disconnect_account(
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let account_id = parse_uuid(&path).ok_or_else(ApiError::account_not_found)?;
    let disconnected = state
        .store
        .disconnect_account(session.user.id, account_id, state.clock.now())
        .await?;
    if !disconnected {
        return Err(ApiError::account_not_found());
    }
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "message": "Account disconnected",
    })))
}

#[derive(Deserialize)]
struct TokenInfoRequest {
    account_id: Option<String>,
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn token_info(
    state: web::Data<AppState>,
    session: SessionUser,
    body: web::Json<TokenInfoRequest>,
) -> Result<HttpResponse, ApiError> {
    let raw = body
        .into_inner()
        .account_id
        .ok_or_else(|| ApiError::missing_parameter("account_id"))?;
    let account_id = parse_uuid(&raw).ok_or_else(ApiError::account_not_found)?;
    let account = state
        .store
        .find_owned_account(session.user.id, account_id)
        .await?
        .filter(|account| !account.disabled)
        .ok_or_else(ApiError::account_not_found)?;
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "data": views::token_info(&account, state.clock.now()),
    })))
}
