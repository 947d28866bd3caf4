//! Dashboard sign-in through the OpenID Connect provider, and sign-out.
//!
//! `GET /auth/login` → provider → `GET /auth/callback` (creates the user on first sign-in and a
//! session) → redirect to `return_to` (a local path). `POST /auth/logout` revokes the session
//! server-side. `GET /auth/me` shows who is signed in.

use actix_web::{
    HttpRequest, HttpResponse,
    cookie::{Cookie, SameSite, time::Duration as CookieDuration},
    http::header,
    middleware::from_fn,
    web,
};
use chrono::Duration;
use serde::Deserialize;
use serde_json::json;

use super::auth::{SESSION_COOKIE, SessionUser, require_session};
use crate::{
    AppState,
    crypto::{self, Pkce},
    error::ApiError,
    oidc::OidcError,
    views,
};

/// How long a sign-in may take between `/auth/login` and the callback.
const LOGIN_STATE_TTL_MINUTES: i64 = 10;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/auth/login").route(web::get().to(login)))
        .service(web::resource("/auth/callback").route(web::get().to(callback)))
        .service(web::resource("/auth/logout").route(web::post().to(logout)))
        .service(
            web::resource("/auth/me")
                .wrap(from_fn(require_session))
                .route(web::get().to(me)),
        );
}

impl From<OidcError> for ApiError {
    fn from(err: OidcError) -> Self {
        match err {
            OidcError::NotConfigured => ApiError::service_unavailable(err.to_string()),
            OidcError::Unreachable(_) => {
                tracing::warn!(error = %err, "identity provider unreachable");
                ApiError::service_unavailable("The identity provider is unreachable")
            }
            OidcError::Rejected(_) | OidcError::InvalidIdToken(_) => {
                tracing::warn!(error = %err, "sign-in refused");
                ApiError::unauthorized(format!("Sign-in failed: {err}"))
            }
        }
    }
}

#[derive(Deserialize)]
struct LoginQuery {
    return_to: Option<String>,
    login_hint: Option<String>,
}

/// Only local paths are accepted as redirect targets (no open redirect).
fn safe_return_to(raw: Option<String>) -> Option<String> {
    raw.filter(|path| path.starts_with('/') && !path.starts_with("//") && !path.contains('\\'))
}

fn redirect_uri(state: &AppState) -> String {
    format!("{}/auth/callback", state.public_url)
}

#[tracing::instrument(skip_all)]
async fn login(
    state: web::Data<AppState>,
    query: web::Query<LoginQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.into_inner();
    let endpoints = state.oidc.endpoints().await?;
    let now = state.clock.now();
    let pkce = Pkce::generate();
    let login_state = entity::login_state::Model {
        state: crypto::random_token(24),
        purpose: "login".into(),
        pkce_verifier: pkce.verifier,
        nonce: crypto::random_token(16),
        return_to: safe_return_to(query.return_to),
        created_at: now,
        expires_at: now + Duration::minutes(LOGIN_STATE_TTL_MINUTES),
    };
    let url = state.oidc.authorization_url(
        endpoints,
        &redirect_uri(&state),
        &login_state.state,
        &login_state.nonce,
        &pkce.challenge,
        query.login_hint.as_deref(),
    )?;
    state.store.insert_login_state(login_state).await?;
    Ok(HttpResponse::Found()
        .insert_header((header::LOCATION, url.to_string()))
        .finish())
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

#[tracing::instrument(skip_all)]
async fn callback(
    state: web::Data<AppState>,
    query: web::Query<CallbackQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.into_inner();
    if let Some(error) = query.error {
        let description = query.error_description.unwrap_or_default();
        return Err(ApiError::unauthorized(format!(
            "Sign-in was not completed: {error} {description}"
        )));
    }
    let code = query
        .code
        .ok_or_else(|| ApiError::missing_parameter("code"))?;
    let state_value = query
        .state
        .ok_or_else(|| ApiError::missing_parameter("state"))?;
    let now = state.clock.now();
    let login_state = state
        .store
        .take_login_state(&state_value, now)
        .await?
        .filter(|s| s.purpose == "login")
        .ok_or_else(|| {
            ApiError::invalid_request(
                "Unknown or expired sign-in state; start again at /auth/login",
            )
        })?;
    let identity = state
        .oidc
        .exchange_code(
            &code,
            &login_state.pkce_verifier,
            &redirect_uri(&state),
            &login_state.nonce,
            now,
        )
        .await?;
    let user = state
        .store
        .upsert_oidc_user(
            &identity.issuer,
            &identity.subject,
            identity.email.as_deref(),
            identity.name.as_deref(),
            now,
        )
        .await?;
    let token = crypto::random_token(32);
    let ttl = Duration::hours(state.config.auth.session_ttl_hours.max(1));
    state
        .store
        .create_session(user.id, crypto::sha256_hex(&token), now, now + ttl)
        .await?;
    tracing::info!(user_id = %user.id, "dashboard sign-in");
    let cookie = Cookie::build(SESSION_COOKIE, state.signer.sign(&token))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(state.cookie_secure)
        .max_age(CookieDuration::seconds(ttl.num_seconds()))
        .finish();
    let target = login_state.return_to.unwrap_or_else(|| "/auth/me".into());
    Ok(HttpResponse::SeeOther()
        .cookie(cookie)
        .insert_header((header::LOCATION, target))
        .finish())
}

/// Revokes the session (if any) and clears the cookie. Idempotent.
async fn logout(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    if let Some(cookie) = req.cookie(SESSION_COOKIE)
        && let Some(token) = state.signer.verify(cookie.value())
    {
        state
            .store
            .revoke_session(&crypto::sha256_hex(token), state.clock.now())
            .await?;
    }
    let mut removal = Cookie::build(SESSION_COOKIE, "")
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(state.cookie_secure)
        .finish();
    removal.make_removal();
    Ok(HttpResponse::Ok()
        .cookie(removal)
        .json(json!({"success": true, "message": "Signed out"})))
}

async fn me(session: SessionUser) -> HttpResponse {
    HttpResponse::Ok().json(json!({"success": true, "user": views::user(&session.user)}))
}
