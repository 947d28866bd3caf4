//! Operating the service: `/healthz` and `/readyz` (no authentication, no internals), `/metrics`
//! (Prometheus text; operator token), and the account-actor view `GET /api/admin/actors`. The old
//! page `GET /admin/actors` now redirects to the dashboard's operator page, where operators sign
//! in like every dashboard user (its token sign-in form and cookie went away with it).

use actix_web::{HttpResponse, middleware::from_fn, web};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::auth::{Operator, require_operator};
use crate::{
    AppState,
    actors::{
        account::ActorHealth,
        collector::{CollectorStatus, GetCollectorStatus},
        reconciler::{self, ReconcilerStatus},
        scheduler::{GetStatus, SchedulerStatus},
        token_keeper::{GetTokenKeeperStatus, TokenKeeperStatus},
    },
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
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// Ready for traffic: the database answers, migrations are applied, the supervisor's, the
/// scheduler's, the collector's and the reconciler's actors run. Says which check failed, never
/// why (no internals).
async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let database = state.store.ping().await.is_ok();
    let migrations = database && matches!(state.store.pending_migrations().await, Ok(0));
    let supervisor = state.supervisor.is_running();
    let mut checks = json!({
        "database": if database { "ok" } else { "failed" },
        "migrations": if migrations { "ok" } else { "failed" },
        "supervisor": if supervisor { "ok" } else { "failed" },
    });
    let mut ready = database && migrations && supervisor;
    if state.config.scheduler.enabled {
        let scheduler = state.background.scheduler().is_some_and(|a| a.connected());
        checks["scheduler"] = json!(if scheduler { "ok" } else { "failed" });
        ready &= scheduler;
    }
    if state.config.collector.enabled {
        let collector = state.background.collector().is_some_and(|a| a.connected());
        checks["collector"] = json!(if collector { "ok" } else { "failed" });
        ready &= collector;
    }
    // Always running: unconfirmed publishes are checked whatever the scheduler's setting.
    let reconciler = state.background.reconciler().is_some_and(|a| a.connected());
    checks["reconciler"] = json!(if reconciler { "ok" } else { "failed" });
    ready &= reconciler;
    let body = json!({"status": if ready { "ready" } else { "not_ready" }, "checks": checks});
    if ready {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

async fn metrics(state: web::Data<AppState>, _operator: Operator) -> HttpResponse {
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

#[derive(Deserialize)]
pub(crate) struct ActorsQuery {
    pub platform: Option<String>,
    pub state: Option<String>,
}

/// The actor view, serialized in one pass (no intermediate JSON tree: it may hold 10,000
/// actors).
#[derive(Serialize)]
pub(crate) struct ActorsView {
    success: bool,
    pub count: usize,
    pub actors: Vec<ActorHealth>,
    pub scheduler: Option<SchedulerStatus>,
    pub collector: Option<CollectorStatus>,
    pub reconciler: Option<ReconcilerStatus>,
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

async fn actors(
    state: web::Data<AppState>,
    _operator: Operator,
    query: web::Query<ActorsQuery>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(view(&state, &query).await?))
}

/// `GET /admin/actors`: the old token-in-query page went away (issue 14); operators sign in
/// through the identity provider and find the same view, filterable and refreshing, at
/// `/dashboard/operator`. Nothing is served here, whoever asks.
async fn actors_page() -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((actix_web::http::header::LOCATION, OPERATOR_PAGE))
        .finish()
}

/// Where the actor view now lives for people.
pub const OPERATOR_PAGE: &str = "/dashboard/operator";
