//! Operating the service: `/healthz` and `/readyz` (no authentication, no internals), `/metrics`
//! (Prometheus text; operator token), and the account-actor view `GET /api/admin/actors`. The
//! address `GET /admin/actors` redirects to the dashboard's operator page, where operators sign
//! in like every dashboard user: no token in an address, and no sign-in form or cookie of its
//! own.

use actix_web::{HttpResponse, middleware::from_fn, web};

use super::dto::{
    responses::{Liveness, Readiness, ReadinessChecks},
    schema::ErrorBody,
};
use crate::web::auth::{Operator, require_operator};
use crate::{
    AppState,
    background::view::{ActorsQuery, ActorsView, view},
    error::ApiError,
};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/healthz").route(web::get().to(healthz)))
        .service(web::resource("/readyz").route(web::get().to(readyz)))
        .service(
            web::resource("/metrics")
                .wrap(from_fn(require_operator))
                .route(web::get().to(metrics)),
        )
        .service(
            web::resource("/api/admin/actors")
                .wrap(from_fn(require_operator))
                .route(web::get().to(actors)),
        )
        .service(web::resource("/admin/actors").route(web::get().to(actors_page)));
}

/// The process is alive and serving.
#[utoipa::path(get, path = "/healthz", tag = "ops",
    responses((status = 200, description = "Alive", body = Liveness)))]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(Liveness {
        status: "ok".to_string(),
    })
}

/// Ready for traffic: the database answers, migrations are applied, the supervisor's, the
/// scheduler's, the collector's and the reconciler's actors run. Says which check failed, never
/// why (no internals).
#[utoipa::path(get, path = "/readyz", tag = "ops",
    responses(
        (status = 200, description = "Ready", body = Readiness),
        (status = 503, description = "Not ready: the failed checks say `failed`", body = Readiness),
    ))]
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let database = state.store.ping().await.is_ok();
    let migrations = database && matches!(state.store.pending_migrations().await, Ok(0));
    let supervisor = state.supervisor.is_running();
    let verdict = |ok: bool| if ok { "ok" } else { "failed" };
    let mut ready = database && migrations && supervisor;
    let scheduler = state.config.scheduler.enabled.then(|| {
        let scheduler = state.background.scheduler().is_some_and(|a| a.connected());
        ready &= scheduler;
        verdict(scheduler)
    });
    let collector = state.config.collector.enabled.then(|| {
        let collector = state.background.collector().is_some_and(|a| a.connected());
        ready &= collector;
        verdict(collector)
    });
    // Always running: unconfirmed publishes are checked whatever the scheduler's setting.
    let reconciler = state.background.reconciler().is_some_and(|a| a.connected());
    ready &= reconciler;
    // An instance that cannot renew its membership stops publishing: send it no traffic.
    let membership = state.cluster.is_member();
    ready &= membership;
    let body = Readiness {
        status: if ready { "ready" } else { "not_ready" }.to_string(),
        checks: ReadinessChecks {
            database: verdict(database),
            migrations: verdict(migrations),
            supervisor: verdict(supervisor),
            scheduler,
            collector,
            reconciler: verdict(reconciler),
            membership: verdict(membership),
        },
    };
    if ready {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

/// Prometheus metrics (text exposition format).
#[utoipa::path(get, path = "/metrics", tag = "ops", security(("operator_token" = [])),
    responses(
        (status = 200, description = "Prometheus text", content_type = "text/plain", body = String),
        (status = 401, description = "Missing or wrong operator token", body = ErrorBody),
    ))]
pub async fn metrics(state: web::Data<AppState>, _operator: Operator) -> HttpResponse {
    let (open, idle) = state.store.pool_stats();
    let metrics = &state.metrics;
    metrics.gauge_set("db_pool_connections", &[("state", "idle")], idle as i64);
    metrics.gauge_set(
        "db_pool_connections",
        &[("state", "in_use")],
        i64::from(open) - idle as i64,
    );
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(metrics.render())
}

/// Every account actor's health, and the scheduler's, collector's, reconciler's and token
/// keeper's status (each `null` when not running).
#[utoipa::path(get, path = "/api/admin/actors", tag = "ops", security(("operator_token" = [])),
    params(ActorsQuery),
    responses(
        (status = 200, description = "The actor view", body = ActorsView),
        (status = 400, description = "Unknown `state`", body = ErrorBody),
        (status = 401, description = "Missing or wrong operator token", body = ErrorBody),
    ))]
pub(crate) async fn actors(
    state: web::Data<AppState>,
    _operator: Operator,
    query: web::Query<ActorsQuery>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok()
        .json(view(&state.supervisor, &state.background, &state.cluster, &query).await?))
}

/// `GET /admin/actors`: a redirect only, so that no page takes a token in its address (where
/// logs and browser history keep it); operators sign in through the identity provider and find
/// the same view, filterable and refreshing, at `/dashboard/operator`. Nothing is served here,
/// whoever asks.
#[utoipa::path(get, path = "/admin/actors", tag = "ops",
    responses((status = 303, description = "To `/dashboard/operator`",
        headers(("location" = String, description = "`/dashboard/operator`")))))]
pub async fn actors_page() -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((actix_web::http::header::LOCATION, OPERATOR_PAGE))
        .finish()
}

/// Where people find the actor view.
pub const OPERATOR_PAGE: &str = "/dashboard/operator";
