//! Connecting social accounts (spec §2.2, §3.2, §5.2):
//! - `GET /api/connect/{platform}` (dashboard session) → 302 to the platform's authorize page;
//! - `GET /api/connect/{platform}/callback` (the platform redirects the browser back; no API
//!   key, §5.2) → the accounts connected, as JSON; or, when the request's `Accept` names
//!   `text/html` (a browser), 303 to the dashboard's accounts page with a notice.
//!
//! The `state` is single-use, expires after `oauth.state_ttl_secs`, and is bound to the user and
//! the session that started the connection: a forged, replayed, expired or foreign state is
//! refused with `InvalidOAuthState` and connects nothing.
//!
//! instagram connects through Facebook Login (the default, `via=facebook_login`: accounts linked
//! to a facebook page) or Instagram Login (`via=instagram_login`: professional accounts without
//! a page). The state remembers the route, so the callback (the same URL for both) finishes the
//! flow that was started.

use actix_web::{HttpRequest, HttpResponse, http::header, middleware::from_fn, web};
use serde::Deserialize;

use super::dto::{resources::Account, responses::AccountsConnected, schema::ErrorBody};
use crate::web::auth::{SessionUser, require_session};
use crate::{
    AppState,
    domain::plan::Platform,
    error::{ApiError, ErrorCode},
    oauth::LoginRoute,
    services::connection::Callback,
    store::StateOwner,
};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/connect/{platform}")
            .wrap(from_fn(require_session))
            .wrap(from_fn(crate::web::html_errors))
            .route(web::get().to(start)),
    )
    .service(
        web::resource("/api/connect/{platform}/callback")
            .wrap(from_fn(require_session))
            // A browser coming back from the platform gets a page, even for an error.
            .wrap(from_fn(crate::web::html_errors))
            .route(web::get().to(callback)),
    );
}

fn platform_of(raw: &str) -> Result<Platform, ApiError> {
    Platform::parse(raw).ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidPlatform,
            format!("Unknown platform {raw:?}: facebook, instagram, threads, tiktok, youtube or x"),
        )
    })
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StartQuery {
    /// Passed to the platform's sign-in page (Google honours it; the simulator signs in as it).
    login_hint: Option<String>,
    /// instagram only: `facebook_login` (default) or `instagram_login`.
    via: Option<String>,
}

/// The login route a connection of `platform` asked for with `via`.
fn route_of(platform: Platform, via: Option<&str>) -> Result<LoginRoute, ApiError> {
    let Some(via) = via else {
        return Ok(LoginRoute::FacebookLogin);
    };
    match (platform, LoginRoute::parse(via)) {
        (Platform::Instagram, Some(route)) => Ok(route),
        (Platform::Facebook, Some(LoginRoute::FacebookLogin)) => Ok(LoginRoute::FacebookLogin),
        (Platform::Instagram, None) => Err(ApiError::invalid_request(format!(
            "Unknown via {via:?}: instagram connects via facebook_login or instagram_login"
        ))),
        _ => Err(ApiError::invalid_request(format!(
            "{} has one login; via {via:?} does not apply",
            platform.as_str()
        ))),
    }
}

/// Starts connecting an account: redirects to the platform's authorize page.
#[utoipa::path(get, path = "/api/connect/{platform}", tag = "accounts", security(("session" = [])),
    params(("platform" = String, Path, description = "facebook, instagram, threads, tiktok, youtube or x"), StartQuery),
    responses(
        (status = 302, description = "To the platform's authorize page",
            headers(("location" = String, description = "The platform's authorize URL"))),
        (status = 400, description = "`InvalidPlatform`, or a `via` that does not apply (an HTML page for browsers)", content((ErrorBody = "application/json"), (String = "text/html"))),
        (status = 401, description = "No valid session", content((ErrorBody = "application/json"), (String = "text/html"))),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
pub async fn start(
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
    query: web::Query<StartQuery>,
) -> Result<HttpResponse, ApiError> {
    let platform = platform_of(&path)?;
    let route = route_of(platform, query.via.as_deref())?;
    let url = state
        .connection
        .start(
            StateOwner {
                user_id: session.user.id,
                session_hash: &session.token_hash,
            },
            platform,
            route,
            query.login_hint.as_deref(),
        )
        .await?;
    Ok(HttpResponse::Found()
        .insert_header((header::LOCATION, url))
        .finish())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// The callback answers a browser with a page and anything else with the API's JSON. Only an
/// `Accept` that names `text/html` itself counts as a browser (every browser sends it on a
/// navigation); `*/*`, no header, or `application/json` get the JSON of the API contract, so
/// scripts and API clients read what the contract describes.
#[utoipa::path(get, path = "/api/connect/{platform}/callback", tag = "accounts", security(("session" = [])),
    params(("platform" = String, Path, description = "The platform the connection started for"), CallbackQuery),
    responses(
        (status = 200, description = "The accounts connected (JSON clients)", body = AccountsConnected),
        (status = 303, description = "Browsers (`Accept: text/html`): to the dashboard's accounts page with a notice",
            headers(("location" = String))),
        (status = 400, description = "`InvalidOAuthState`, `ConnectionFailed`, `InvalidPlatform`, `MissingParameter`", content((ErrorBody = "application/json"), (String = "text/html"))),
        (status = 401, description = "No valid session", content((ErrorBody = "application/json"), (String = "text/html"))),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
pub async fn callback(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
    query: web::Query<CallbackQuery>,
) -> Result<HttpResponse, ApiError> {
    let outcome = complete_connection(&state, &session, &path, query.into_inner()).await;
    if crate::web::wants_html(req.headers()) {
        return Ok(crate::web::connect_landing::connect_landing(outcome));
    }
    let (platform, accounts) = outcome?;
    let connected: Vec<_> = accounts.iter().map(Account::from).collect();
    Ok(HttpResponse::Ok().json(AccountsConnected {
        success: true,
        message: format!(
            "Connected {} {} account(s)",
            connected.len(),
            platform.as_str()
        ),
        accounts: connected,
    }))
}

/// Finishes a connection: checks the state, exchanges the code, stores the accounts.
async fn complete_connection(
    state: &AppState,
    session: &SessionUser,
    path: &str,
    query: CallbackQuery,
) -> Result<(Platform, Vec<entity::account::Model>), ApiError> {
    let platform = platform_of(path)?;
    let callback = Callback {
        state: query.state.unwrap_or_default(),
        code: query.code,
        error: query.error,
        error_description: query.error_description,
    };
    let connected = state
        .connection
        .complete(session.user.id, &session.token_hash, platform, callback)
        .await?;
    Ok((platform, connected))
}
