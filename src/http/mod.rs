//! The JSON API: its route table and its handlers (thin: parse → call a service or the store →
//! shape the spec's JSON). Authentication and the other middlewares are [`crate::web`]'s.
//!
//! Every error a client can see goes through the catalogue in [`crate::error`], including
//! actix's own extractor failures, unknown routes and wrong methods.

pub mod accounts;
pub mod admin;
pub mod connect;
pub mod cron;
pub mod docs;
pub mod dto;
pub mod history;
pub mod keys;
pub mod login;
pub mod media;
pub mod openapi;
pub mod ops;
pub mod performance;
pub mod posts;
pub mod scheduled;
pub mod subscription;
pub mod webhooks;

use actix_web::{
    HttpRequest, HttpResponse,
    error::{JsonPayloadError, PathError, QueryPayloadError},
    web,
};

use crate::error::{ApiError, ErrorCode};

/// Registers every route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.app_data(json_config())
        .app_data(query_config())
        .app_data(path_config())
        .service(web::resource("/health").route(web::get().to(health)));
    login::configure(cfg);
    keys::configure(cfg);
    accounts::configure(cfg);
    connect::configure(cfg);
    subscription::configure(cfg);
    history::configure(cfg);
    posts::configure(cfg);
    scheduled::configure(cfg);
    webhooks::configure(cfg);
    media::configure(cfg);
    performance::configure(cfg);
    cron::configure(cfg);
    // Before `admin`: its `/admin` scope would otherwise take `/admin/actors`.
    ops::configure(cfg);
    admin::configure(cfg);
    openapi::configure(cfg);
    docs::configure(cfg);
}

/// Liveness and database reachability.
#[utoipa::path(get, path = "/health", tag = "ops",
    responses(
        (status = 200, description = "Up, database reachable", body = dto::responses::Health),
        (status = 503, description = "Database unreachable (`degraded`)", body = dto::responses::Health),
    ))]
pub async fn health(state: web::Data<crate::AppState>) -> HttpResponse {
    let health = |status: &str, database: &str| dto::responses::Health {
        status: status.to_string(),
        database: database.to_string(),
    };
    match state.store.ping().await {
        Ok(()) => HttpResponse::Ok().json(health("ok", "ok")),
        Err(err) => {
            tracing::warn!(error = %err, "health: database unreachable");
            HttpResponse::ServiceUnavailable().json(health("degraded", "unreachable"))
        }
    }
}

/// Unknown routes answer in catalogue form.
pub async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(route_not_found(&req))
}

fn route_not_found(req: &HttpRequest) -> ApiError {
    ApiError::not_found(format!("No route for {} {}", req.method(), req.path()))
}

/// The largest JSON body a handler reads.
const JSON_LIMIT: usize = 1024 * 1024;

fn json_config() -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(JSON_LIMIT)
        .error_handler(|err, _req| json_error(err).into())
}

fn json_error(err: JsonPayloadError) -> ApiError {
    match err {
        JsonPayloadError::OverflowKnownLength { .. } | JsonPayloadError::Overflow { .. } => {
            ApiError::new(ErrorCode::PayloadTooLarge, "Request body is too large")
        }
        JsonPayloadError::Payload(err) if crate::web::body_deadline::is_deadline_error(&err) => {
            crate::web::body_deadline::body_timeout_error()
        }
        JsonPayloadError::ContentType => {
            ApiError::invalid_request("Content-Type must be application/json")
        }
        JsonPayloadError::Deserialize(err) if err.is_data() => {
            ApiError::invalid_request(format!("Invalid request body: {err}"))
        }
        JsonPayloadError::Deserialize(err) => {
            ApiError::invalid_request(format!("Malformed JSON: {err}"))
        }
        other => ApiError::invalid_request(format!("Invalid request body: {other}")),
    }
}

fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err, _req| {
        let QueryPayloadError::Deserialize(err) = err else {
            return ApiError::invalid_request("Invalid query string").into();
        };
        ApiError::invalid_request(format!("Invalid query parameter: {err}")).into()
    })
}

fn path_config() -> web::PathConfig {
    web::PathConfig::default().error_handler(|err: PathError, _req| {
        ApiError::invalid_request(format!("Invalid path parameter: {err}")).into()
    })
}
