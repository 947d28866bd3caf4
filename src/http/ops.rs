//! Operating the service: `/healthz` and `/readyz` (no authentication, no internals), `/metrics`
//! (Prometheus text; operator token), and the account-actor view `GET /api/admin/actors` with its
//! small self-refreshing page `GET /admin/actors`, which has its own sign-in ([`signin`]).

mod signin;

use actix_web::{HttpRequest, HttpResponse, middleware::from_fn, web};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::auth::{Operator, bearer_token, is_operator_token, require_operator};
use crate::{
    AppState,
    actors::{
        account::ActorHealth,
        collector::{CollectorStatus, GetCollectorStatus},
        reconciler::{self, ReconcilerStatus},
        scheduler::{GetStatus, SchedulerStatus},
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
    signin::configure(cfg);
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
        let scheduler = state.scheduler.get().is_some_and(|a| a.connected());
        checks["scheduler"] = json!(if scheduler { "ok" } else { "failed" });
        ready &= scheduler;
    }
    if state.config.collector.enabled {
        let collector = state.collector.get().is_some_and(|a| a.connected());
        checks["collector"] = json!(if collector { "ok" } else { "failed" });
        ready &= collector;
    }
    // Always running: unconfirmed publishes are checked whatever the scheduler's setting.
    let reconciler = state.reconciler.get().is_some_and(|a| a.connected());
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
struct ActorsQuery {
    platform: Option<String>,
    state: Option<String>,
}

/// The actor view, serialized in one pass (no intermediate JSON tree: it may hold 10,000
/// actors).
#[derive(Serialize)]
struct ActorsView {
    success: bool,
    count: usize,
    actors: Vec<ActorHealth>,
    scheduler: Option<SchedulerStatus>,
    collector: Option<CollectorStatus>,
    reconciler: Option<ReconcilerStatus>,
}

async fn view(state: &AppState, query: &ActorsQuery) -> Result<ActorsView, ApiError> {
    const STATES: [&str; 4] = ["idle", "publishing", "backing_off", "token_invalid"];
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
        .filter(|a| platform.is_none_or(|p| a.platform == p))
        .filter(|a| wanted_state.is_none_or(|s| a.state.as_str() == s))
        .collect();
    actors.sort_unstable_by(|a, b| {
        (&a.platform, &a.name, a.account_id).cmp(&(&b.platform, &b.name, b.account_id))
    });
    let scheduler = match state.scheduler.get() {
        Some(addr) => addr.send(GetStatus).await.ok(),
        None => None,
    };
    let reconciler = match state.reconciler.get() {
        Some(addr) => addr.send(reconciler::GetStatus).await.ok(),
        None => None,
    };
    let collector = match state.collector.get() {
        Some(addr) => addr.send(GetCollectorStatus).await.ok(),
        None => None,
    };
    Ok(ActorsView {
        success: true,
        count: actors.len(),
        actors,
        scheduler,
        collector,
        reconciler,
    })
}

async fn actors(
    state: web::Data<AppState>,
    _operator: Operator,
    query: web::Query<ActorsQuery>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(view(&state, &query).await?))
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Who may open the page.
enum PageAccess {
    Granted,
    /// A browser without credentials: show it the sign-in form.
    SignIn,
    Refused,
}

/// The bearer header when one is sent (a wrong one is refused, cookie or not), else the page's
/// cookie. Never a token in the address: it would land in the history and in logs.
fn page_access(req: &HttpRequest, state: &AppState) -> PageAccess {
    match bearer_token(req.headers()) {
        Some(token) if is_operator_token(token, state) => PageAccess::Granted,
        Some(_) => PageAccess::Refused,
        None if signin::has_operator_cookie(req, state) => PageAccess::Granted,
        None if signin::wants_html(req) => PageAccess::SignIn,
        None => PageAccess::Refused,
    }
}

/// The same view as a page that refreshes itself every 5 s, for the operator's browser.
async fn actors_page(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<ActorsQuery>,
) -> Result<HttpResponse, ApiError> {
    match page_access(&req, &state) {
        PageAccess::Granted => {}
        PageAccess::SignIn => return Ok(signin::to_login()),
        PageAccess::Refused => return Err(ApiError::unauthorized("Operator token required")),
    }
    let view = serde_json::to_value(view(&state, &query).await?).map_err(ApiError::internal)?;
    let mut rows = String::new();
    for actor in view["actors"].as_array().into_iter().flatten() {
        let cell = |v: &Value| {
            escape_html(&match v {
                Value::String(s) => s.clone(),
                Value::Null => "—".into(),
                other => other.to_string(),
            })
        };
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=s-{}>{}</td><td>{}</td><td>{}</td><td>{} / {} {} ({} s to full)</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            cell(&actor["platform"]),
            cell(&actor["name"]),
            cell(&actor["account_id"]),
            cell(&actor["state"]),
            cell(&actor["state"]),
            cell(&actor["queue_depth"]),
            cell(&actor["in_flight_ms"]),
            cell(&actor["limiter"]["remaining"]),
            cell(&actor["limiter"]["capacity"]),
            cell(&actor["limiter"]["unit"]),
            cell(&actor["limiter"]["full_in_secs"]),
            if actor["token_valid"] == true { "valid" } else { "invalid" },
            cell(&actor["published"]),
            cell(&actor["failed"]),
            cell(&actor["last_error"]),
        ));
    }
    let scheduler =
        escape_html(&serde_json::to_string_pretty(&view["scheduler"]).unwrap_or_default());
    let collector =
        escape_html(&serde_json::to_string_pretty(&view["collector"]).unwrap_or_default());
    let reconciler =
        escape_html(&serde_json::to_string_pretty(&view["reconciler"]).unwrap_or_default());
    let html = format!(
        "<!doctype html><html><head><meta charset=utf-8><meta http-equiv=refresh content=5>\
         <title>Account actors</title><style>body{{font:14px system-ui;margin:1em}}\
         table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px}}\
         .s-publishing{{background:#def}}.s-backing_off{{background:#ffd}}.s-token_invalid{{background:#fdd}}</style>\
         </head><body><h1>Account actors ({count})</h1>\
         <table><tr><th>platform</th><th>name</th><th>account</th><th>state</th><th>queue</th>\
         <th>in flight (ms)</th><th>limiter</th><th>token</th><th>published</th><th>failed</th><th>last error</th></tr>\n\
         {rows}</table><h2>Scheduler</h2><pre>{scheduler}</pre><h2>Collector</h2><pre>{collector}</pre><h2>Unconfirmed publishes</h2><pre>{reconciler}</pre>\
         <form method=post action=/admin/logout><button type=submit>Sign out</button></form>\
         </body></html>",
        count = view["count"],
    );
    let mut response = HttpResponse::Ok();
    signin::page_headers(&mut response);
    Ok(response.body(html))
}
