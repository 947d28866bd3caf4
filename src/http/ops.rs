//! Operating the service: `/healthz` and `/readyz` (no authentication, no internals), `/metrics`
//! (Prometheus text; operator token), and the account-actor view `GET /api/admin/actors`. The old
//! page `GET /admin/actors` now redirects to the dashboard's operator page, where operators sign
//! in like every dashboard user (its token sign-in form and cookie went away with it).

use actix_web::{HttpResponse, middleware::from_fn, web};
use serde::{Deserialize, Serialize};

use super::{
    auth::{Operator, require_operator},
    dto::{
        responses::{Liveness, Readiness, ReadinessChecks},
        schema::ErrorBody,
    },
};
use crate::{
    AppState,
    actors::account::ActorHealth,
    background::collector::{CollectorStatus, GetCollectorStatus},
    background::reconciler::{self, ReconcilerStatus},
    background::scheduler::{GetStatus, SchedulerStatus},
    background::token_keeper::{GetTokenKeeperStatus, TokenKeeperStatus},
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
    let body = Readiness {
        status: if ready { "ready" } else { "not_ready" }.to_string(),
        checks: ReadinessChecks {
            database: verdict(database),
            migrations: verdict(migrations),
            supervisor: verdict(supervisor),
            scheduler,
            collector,
            reconciler: verdict(reconciler),
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

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ActorsQuery {
    /// Only this platform's actors.
    pub platform: Option<String>,
    /// Only actors in this state: `idle`, `publishing`, `backing_off` or `token_invalid`.
    pub state: Option<String>,
}

// Serialized in one pass (no intermediate JSON tree: it may hold 10,000 actors).
/// `GET /api/admin/actors`: the account actors and the background actors' status; a
/// background actor that is not enabled is `null`.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ActorsView {
    success: bool,
    pub count: usize,
    pub actors: Vec<ActorHealth>,
    #[schema(required = true)]
    pub scheduler: Option<SchedulerStatus>,
    #[schema(required = true)]
    pub collector: Option<CollectorStatus>,
    #[schema(required = true)]
    pub reconciler: Option<ReconcilerStatus>,
    #[schema(required = true)]
    pub token_keeper: Option<TokenKeeperStatus>,
}

/// The actor view's states, in the order filters offer them.
pub(crate) const STATES: [&str; 4] = ["idle", "publishing", "backing_off", "token_invalid"];

/// The data of `GET /api/admin/actors` (also the dashboard's operator page).
pub(crate) async fn view(state: &AppState, query: &ActorsQuery) -> Result<ActorsView, ApiError> {
    let wanted_state = query.state.as_deref().filter(|s| !s.is_empty());
    if let Some(s) = wanted_state
        && !STATES.contains(&s)
    {
        return Err(ApiError::invalid_request(format!(
            "state must be one of {}",
            STATES.join(", ")
        )));
    }
    let platform = query.platform.as_deref().filter(|p| !p.is_empty());
    let mut actors: Vec<ActorHealth> = state
        .supervisor
        .all_health()
        .into_iter()
        .filter(|a| platform.is_none_or(|p| a.platform.as_str() == p))
        .filter(|a| wanted_state.is_none_or(|s| a.state.as_str() == s))
        .collect();
    actors.sort_unstable_by(|a, b| {
        (a.platform.as_str(), &a.name, a.account_id).cmp(&(
            b.platform.as_str(),
            &b.name,
            b.account_id,
        ))
    });
    let scheduler = match state.background.scheduler() {
        Some(addr) => addr.send(GetStatus).await.ok(),
        None => None,
    };
    let reconciler = match state.background.reconciler() {
        Some(addr) => addr.send(reconciler::GetStatus).await.ok(),
        None => None,
    };
    let collector = match state.background.collector() {
        Some(addr) => addr.send(GetCollectorStatus).await.ok(),
        None => None,
    };
    let token_keeper = match state.background.token_keeper() {
        Some(addr) => addr.send(GetTokenKeeperStatus).await.ok(),
        None => None,
    };
    Ok(ActorsView {
        success: true,
        count: actors.len(),
        actors,
        scheduler,
        collector,
        reconciler,
        token_keeper,
    })
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
    Ok(HttpResponse::Ok().json(view(&state, &query).await?))
}

/// `GET /admin/actors`: the old token-in-query page went away (issue 14); operators sign in
/// through the identity provider and find the same view, filterable and refreshing, at
/// `/dashboard/operator`. Nothing is served here, whoever asks.
#[utoipa::path(get, path = "/admin/actors", tag = "ops",
    responses((status = 303, description = "To `/dashboard/operator`",
        headers(("location" = String, description = "`/dashboard/operator`")))))]
pub async fn actors_page() -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((actix_web::http::header::LOCATION, OPERATOR_PAGE))
        .finish()
}

/// Where the actor view now lives for people.
pub const OPERATOR_PAGE: &str = "/dashboard/operator";
