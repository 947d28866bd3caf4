//! Connected accounts: `GET /api/accounts`, `DELETE /api/accounts/{account_id}`,
//! `POST /api/token/info` (session; spec §4.9), and `GET /v2/accounts` (API key; our addition so
//! programmatic clients can find their `accountId`s).

use actix_web::{HttpResponse, middleware::from_fn, web};

use super::dto::{
    requests::TokenInfoRequest,
    resources::{Account, TokenInfo},
    responses::{AccountList, AccountListForKey, Done, TokenInfoResponse},
    schema::ErrorBody,
};
use crate::domain::text::parse_uuid;
use crate::web::auth::{ApiCaller, SessionUser, require_api_key, require_session};
use crate::{AppState, error::ApiError, tokens};

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

async fn accounts_of(state: &AppState, user_id: uuid::Uuid) -> Result<Vec<Account>, ApiError> {
    let mut accounts = state.store.list_connected_accounts(user_id).await?;
    for account in &mut accounts {
        tokens::flag_unreadable(&state.cipher, account);
    }
    Ok(accounts.iter().map(Account::from).collect())
}

/// The caller's connected accounts.
#[utoipa::path(get, path = "/api/accounts", tag = "accounts", security(("session" = [])),
    responses(
        (status = 200, description = "The connected accounts", body = AccountList),
        (status = 401, description = "No valid session", body = ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
pub async fn list_accounts(
    state: web::Data<AppState>,
    session: SessionUser,
) -> Result<HttpResponse, ApiError> {
    let accounts = accounts_of(&state, session.user.id).await?;
    Ok(HttpResponse::Ok().json(AccountList { accounts }))
}

/// The key owner's connected accounts (to find an `accountId`).
#[utoipa::path(get, path = "/v2/accounts", tag = "accounts", security(("api_key" = [])),
    responses(
        (status = 200, description = "The connected accounts", body = AccountListForKey),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %caller.user.id))]
pub async fn list_accounts_for_key(
    state: web::Data<AppState>,
    caller: ApiCaller,
) -> Result<HttpResponse, ApiError> {
    let accounts = accounts_of(&state, caller.user.id).await?;
    Ok(HttpResponse::Ok().json(AccountListForKey {
        success: true,
        accounts,
    }))
}

/// Disconnects one of the caller's accounts.
#[utoipa::path(delete, path = "/api/accounts/{account_id}", tag = "accounts", security(("session" = [])),
    params(("account_id" = String, Path, description = "The account's id (a UUID)")),
    responses(
        (status = 200, description = "Disconnected", body = Done),
        (status = 401, description = "No valid session", body = ErrorBody),
        (status = 403, description = "Cross-site request", body = ErrorBody),
        (status = 404, description = "`AccountNotFound`", body = ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
pub async fn disconnect_account(
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
    Ok(HttpResponse::Ok().json(Done::new("Account disconnected")))
}

/// The token state of one of the caller's accounts (§4.9).
#[utoipa::path(post, path = "/api/token/info", tag = "accounts", security(("session" = [])),
    request_body = TokenInfoRequest,
    responses(
        (status = 200, description = "The token's state", body = TokenInfoResponse),
        (status = 400, description = "`MissingParameter` or a malformed body", body = ErrorBody),
        (status = 401, description = "No valid session", body = ErrorBody),
        (status = 403, description = "Cross-site request", body = ErrorBody),
        (status = 404, description = "`AccountNotFound`", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
pub async fn token_info(
    state: web::Data<AppState>,
    session: SessionUser,
    body: web::Json<TokenInfoRequest>,
) -> Result<HttpResponse, ApiError> {
    let account_id = uuid::Uuid::try_from(body.into_inner())?;
    let mut account = state
        .store
        .find_owned_account(session.user.id, account_id)
        .await?
        .filter(|account| !account.disabled)
        .ok_or_else(ApiError::account_not_found)?;
    tokens::flag_unreadable(&state.cipher, &mut account);
    Ok(HttpResponse::Ok().json(TokenInfoResponse {
        success: true,
        data: TokenInfo::new(&account, state.clock.now()),
    }))
}
