//! The three authentication modes, as middlewares that run before any body is read:
//! - [`require_api_key`]: the `service-api-key` header (programmatic endpoints). Also meters
//!   usage (spec §8) and adds the `X-RateLimit-*` headers. [`require_api_key_unmetered`] is the
//!   same without counting the call (reading a post's outcome; a publish with an
//!   `Idempotency-Key`, which its use case meters once the key is claimed).
//! - [`require_session`]: the signed `service_session` cookie (dashboard endpoints). A
//!   state-changing request must also come from this site ([`origin`]).
//! - [`require_operator`]: `Authorization: Bearer <operator token>` (`/admin/*`).
//!
//! Each puts what it established into the request extensions, where the matching extractor
//! ([`ApiCaller`], [`SessionUser`], [`Operator`]) picks it up. An API key is never accepted where
//! a session is required, nor a session where a key is required.

mod origin;

use std::{
    future::{Ready, ready},
    sync::Arc,
};

use actix_web::{
    FromRequest, HttpMessage, HttpRequest,
    body::{EitherBody, MessageBody},
    dev::{Payload, ServiceRequest, ServiceResponse},
    http::header,
    middleware::Next,
    web,
};
use secrecy::ExposeSecret;
use uuid::Uuid;

use crate::{
    AppState,
    crypto::{self, KeyFormatError},
    error::{ApiError, RateLimitHeaders},
    usage::Plan,
};

pub use origin::require_same_origin;

/// The API-key header (spec §5). A `HeaderName`, not a `&str`: a lookup by a string that is not
/// a standard header's name copies it into a new name first, on every request.
pub const API_KEY_HEADER: header::HeaderName = header::HeaderName::from_static("service-api-key");
/// The dashboard session cookie.
pub const SESSION_COOKIE: &str = "service_session";

/// The authenticated owner of an API key, for handlers of programmatic endpoints.
#[derive(Debug, Clone)]
pub struct ApiCaller {
    /// Shared with the access cache (no copy per request).
    pub user: Arc<entity::user::Model>,
    pub key_id: Uuid,
    pub plan: Plan,
    /// The monthly allowance after this call (the `X-RateLimit-*` values).
    pub allowance: RateLimitHeaders,
}

/// The signed-in dashboard user.
#[derive(Debug, Clone)]
pub struct SessionUser {
    pub user: entity::user::Model,
    pub token_hash: String,
}

/// Whose data a route that takes a session or an API key works on.
#[derive(Debug, Clone, Copy)]
pub struct Owner {
    pub user_id: Uuid,
}

/// Proof that the operator token was presented.
#[derive(Debug, Clone, Copy)]
pub struct Operator;

fn state_of(req: &ServiceRequest) -> Result<web::Data<AppState>, ApiError> {
    req.app_data::<web::Data<AppState>>()
        .cloned()
        .ok_or_else(|| ApiError::internal("application state is not registered"))
}

/// A refusal answered as a response (not an `Err`), so the outer middleware still sees it as a
/// response and can add its headers (the request id).
type Guarded<B> = Result<ServiceResponse<EitherBody<B>>, actix_web::Error>;

fn refuse<B>(req: ServiceRequest, error: ApiError) -> Guarded<B> {
    Ok(req.error_response(error).map_into_right_body())
}

/// Performance endpoints answer auth failures in their own body form (spec §7).
fn shape_for_path(error: ApiError, path: &str) -> ApiError {
    if path.starts_with("/api/performance") {
        error.in_performance_form()
    } else {
        error
    }
}

/// Middleware: authenticates the API key, then admits the call against the plan's monthly
/// allowance. Every authenticated call that is admitted counts, whatever its outcome; a refused
/// call does not.
pub async fn require_api_key(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Guarded<impl MessageBody + 'static> {
    with_api_key(req, next, Metering::Counted).await
}

/// Middleware: authenticates the API key without counting the call or refusing it for the
/// plan's allowance: reading a post's outcome (`GET /v2/posts…`), which a client polls after
/// publishing, must not use up the allowance nor be refused once it is used up. The
/// `X-RateLimit-*` headers still describe the allowance (unchanged by the call), unless the
/// handler set them: a publish with an `Idempotency-Key` is metered by its use case after the
/// key is claimed (so a replayed answer is not counted again), and sends the allowance after
/// that call.
pub async fn require_api_key_unmetered(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Guarded<impl MessageBody + 'static> {
    with_api_key(req, next, Metering::Uncounted).await
}

/// Whether an API-key call counts against the plan's monthly allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metering {
    Counted,
    Uncounted,
}

async fn with_api_key<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
    metering: Metering,
) -> Guarded<B> {
    let caller = match authenticate_key(&req, metering).await {
        Ok(caller) => caller,
        Err(error) => {
            let error = shape_for_path(error, req.path());
            return refuse(req, error);
        }
    };
    let allowance = caller.allowance;
    req.extensions_mut().insert(caller);
    let mut response = next.call(req).await?;
    // A handler that answered with a limiter of its own (e.g. a platform limit) keeps its headers.
    // (A `HeaderName`: actix's header map turns a `&str` into a new name to look it up.)
    const LIMIT: header::HeaderName = header::HeaderName::from_static("x-ratelimit-limit");
    if !response.headers().contains_key(&LIMIT) {
        allowance.apply(response.headers_mut());
    }
    Ok(response.map_into_left_body())
}

async fn authenticate_key(req: &ServiceRequest, metering: Metering) -> Result<ApiCaller, ApiError> {
    let state = state_of(req)?;
    let presented = match req.headers().get(&API_KEY_HEADER) {
        Some(value) => value.to_str().map_err(|_| ApiError::invalid_api_key())?,
        None => "",
    };
    if let Err(KeyFormatError::Missing | KeyFormatError::Malformed) =
        crypto::check_api_key_format(presented)
    {
        return Err(ApiError::invalid_api_key());
    }
    // From the access cache when warm: no round trip for the key or the plan, on the
    // path every API request takes.
    let found = state
        .store
        .authenticate_api_key(presented)
        .await?
        .ok_or_else(ApiError::invalid_api_key)?;
    let (key_id, user) = (found.key_id, found.user);
    state.last_used.record(key_id, state.clock.now());
    let accept_language = req
        .headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    let (plan, allowance) = match metering {
        Metering::Counted => state.usage.meter(&user, accept_language).await?,
        Metering::Uncounted => state.usage.peek(&user).await?,
    };
    Ok(ApiCaller {
        user,
        key_id,
        plan,
        allowance,
    })
}

/// Middleware: requires a live dashboard session. API keys are refused here. A request that
/// changes state must also come from this site: the cookie rides along on any site's form post,
/// so the browser's word on where the request comes from is checked here, once for every
/// session route.
pub async fn require_session(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Guarded<impl MessageBody + 'static> {
    let state = match state_of(&req) {
        Ok(state) => state,
        Err(error) => return refuse(req, error),
    };
    let session = match authenticate_session(&req, &state).await {
        Ok(session) => session,
        Err(error) => return refuse(req, error),
    };
    if let Err(error) = origin::check_request(&req, &state.public_url) {
        return refuse(req, error);
    }
    req.extensions_mut().insert(session);
    Ok(next.call(req).await?.map_into_left_body())
}

/// Middleware of routes a backend integration and a signed-in user share (webhooks): an API
/// key when its header is sent (authenticated, not counted against the allowance: managing
/// webhooks is not a use of the API), otherwise a dashboard session, whose writes must come
/// from this site, as on every session route.
pub async fn require_session_or_api_key(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Guarded<impl MessageBody + 'static> {
    let owner = if req.headers().contains_key(&API_KEY_HEADER) {
        match authenticate_key(&req, Metering::Uncounted).await {
            Ok(caller) => Owner {
                user_id: caller.user.id,
            },
            Err(error) => return refuse(req, error),
        }
    } else {
        let state = match state_of(&req) {
            Ok(state) => state,
            Err(error) => return refuse(req, error),
        };
        let session = match authenticate_session(&req, &state).await {
            Ok(session) => session,
            Err(_) => {
                return refuse(
                    req,
                    ApiError::unauthorized(
                        "Authentication required: an API key or a dashboard session",
                    ),
                );
            }
        };
        if let Err(error) = origin::check_request(&req, &state.public_url) {
            return refuse(req, error);
        }
        Owner {
            user_id: session.user.id,
        }
    };
    req.extensions_mut().insert(owner);
    Ok(next.call(req).await?.map_into_left_body())
}

async fn authenticate_session(
    req: &ServiceRequest,
    state: &AppState,
) -> Result<SessionUser, ApiError> {
    let Some(cookie) = req.cookie(SESSION_COOKIE) else {
        if req.headers().contains_key(&API_KEY_HEADER) {
            return Err(ApiError::unauthorized(
                "This endpoint requires a dashboard session; API keys are not accepted here",
            ));
        }
        return Err(ApiError::unauthorized(
            "Authentication required: sign in to the dashboard",
        ));
    };
    let token = state
        .signer
        .verify(cookie.value())
        .ok_or_else(|| ApiError::unauthorized("Invalid session"))?;
    let token_hash = crypto::sha256_hex(token);
    let (_, user) = state
        .store
        .find_live_session(&token_hash, state.clock.now())
        .await?
        .ok_or_else(|| ApiError::unauthorized("Session expired or signed out"))?;
    Ok(SessionUser { user, token_hash })
}

/// Middleware: requires the operator bearer token (compared in constant time).
pub async fn require_operator(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Guarded<impl MessageBody + 'static> {
    let state = match state_of(&req) {
        Ok(state) => state,
        Err(error) => return refuse(req, error),
    };
    if !operator_token_matches(&req, &state) {
        return refuse(req, ApiError::unauthorized("Operator token required"));
    }
    req.extensions_mut().insert(Operator);
    Ok(next.call(req).await?.map_into_left_body())
}

/// Who called a `/api/cron/*` endpoint: the operator (every account) or an API key's owner
/// (their own accounts only).
#[derive(Debug, Clone)]
pub enum CronCaller {
    Operator,
    Owner(Box<ApiCaller>),
}

impl CronCaller {
    /// The user whose accounts the call may touch; `None` for the operator (all).
    pub fn user_scope(&self) -> Option<Uuid> {
        match self {
            CronCaller::Operator => None,
            CronCaller::Owner(caller) => Some(caller.user.id),
        }
    }
}

/// Middleware of the `/api/cron/*` endpoints: the operator token when an `Authorization`
/// header is sent, otherwise an API key (authenticated and metered like any key call).
pub async fn require_operator_or_api_key(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Guarded<impl MessageBody + 'static> {
    if req.headers().contains_key(header::AUTHORIZATION) {
        let state = match state_of(&req) {
            Ok(state) => state,
            Err(error) => return refuse(req, error),
        };
        if !operator_token_matches(&req, &state) {
            return refuse(req, ApiError::unauthorized("Operator token required"));
        }
        req.extensions_mut().insert(CronCaller::Operator);
        return Ok(next.call(req).await?.map_into_left_body());
    }
    let caller = match authenticate_key(&req, Metering::Counted).await {
        Ok(caller) => caller,
        Err(error) => return refuse(req, error),
    };
    let allowance = caller.allowance;
    req.extensions_mut()
        .insert(CronCaller::Owner(Box::new(caller)));
    let mut response = next.call(req).await?;
    allowance.apply(response.headers_mut());
    Ok(response.map_into_left_body())
}

fn operator_token_matches(req: &ServiceRequest, state: &AppState) -> bool {
    is_operator_token(bearer_token(req.headers()).unwrap_or(""), state)
}

/// The token of an `Authorization: Bearer <token>` header, if one was sent.
pub(crate) fn bearer_token(headers: &header::HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// Whether `presented` is the operator token (compared in constant time; never empty).
pub(crate) fn is_operator_token(presented: &str, state: &AppState) -> bool {
    let expected = state.operator_token.expose_secret();
    !presented.is_empty() && crypto::constant_time_eq(presented, expected)
}

impl FromRequest for CronCaller {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        from_extensions(req)
    }
}

fn from_extensions<T: Clone + 'static>(req: &HttpRequest) -> Ready<Result<T, ApiError>> {
    // Present unless a route was registered without its middleware: a programming error.
    ready(
        req.extensions()
            .get::<T>()
            .cloned()
            .ok_or_else(|| ApiError::internal("route is missing its authentication middleware")),
    )
}

impl FromRequest for ApiCaller {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        from_extensions(req)
    }
}

impl FromRequest for SessionUser {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        from_extensions(req)
    }
}

impl FromRequest for Owner {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        from_extensions(req)
    }
}

impl FromRequest for Operator {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        from_extensions(req)
    }
}
