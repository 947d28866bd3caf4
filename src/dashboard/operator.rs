//! The operator pages: `GET /dashboard/operator` shows the live actor view (every account actor,
//! filterable by platform and state, refreshing itself through `static/app.js`), the scheduler's,
//! collector's and reconciler's state as panels, and a usage table of users and plans with a plan
//! change form per user (`POST /dashboard/operator/users/{id}/plan`), and the webhook delivery
//! queue (depth, oldest waiting message, failing or disabled endpoints) from
//! [`WebhookService::queue`](crate::services::webhooks::WebhookService::queue), as
//! `GET /api/admin/webhooks` reads it.
//!
//! - The data is that of the JSON views, from the same functions: [`crate::background::view::view`]
//!   (`GET /api/admin/actors`), the store's users and [`crate::services::operator::set_user_plan`]
//!   (`PUT /admin/users/{id}/plan`), [`UsageService::of_users`](crate::services::usage::UsageService::of_users) (`GET /api/subscription/status`'s
//!   reading, for every listed user in one query).
//! - The role is checked from the session's user on every request ([`crate::services::operator::is_operator`]:
//!   `auth.operator_emails` or the CLI's `is_operator`). Anyone else is sent (303) to the
//!   overview, which says the pages are for operators; no data is read for them.

use actix_web::{HttpRequest, HttpResponse, ResponseError, http::StatusCode, web};
use askama::Template;
use serde::Deserialize;
use uuid::Uuid;

use super::{
    Layout, Nav, When,
    i18n::{Msg, T},
    plan_name, render, see_other, usage_text,
};
use crate::domain::text::parse_uuid;
use crate::{
    AppState,
    background::view::{self as actors_view, ActorsQuery, STATES},
    domain::plan::Platform,
    error::ApiError,
    services::operator,
    services::operator::PlanChange,
    web::auth::SessionUser,
};

const OPERATOR_PATH: &str = "/dashboard/operator";
/// How many users the usage table lists (oldest first).
const USERS_SHOWN: u64 = 500;

/// Routes inside the `/dashboard` scope.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/operator").route(web::get().to(page)))
        .service(web::resource("/operator/users/{id}/plan").route(web::post().to(change_plan)));
}

/// One account actor, as the table shows it.
pub struct ActorRow {
    pub platform: String,
    pub name: String,
    pub account_id: String,
    pub state: String,
    pub queue: usize,
    /// In-flight age in words (`12 s`), or empty.
    pub in_flight: Option<String>,
    pub limiter: String,
    pub token_valid: bool,
    pub token_expires: Option<When>,
    pub published: u64,
    pub failed: u64,
    pub last_error: Option<String>,
    pub last_error_at: Option<When>,
}

/// One line of a status panel: a label and a value (a moment, when it is one).
pub struct PanelRow {
    pub label: &'static str,
    pub value: String,
    pub when: Option<When>,
}

/// A status panel (scheduler, collector, reconciler): `None` rows when it does not run here.
pub struct Panel {
    pub title: &'static str,
    pub rows: Option<Vec<PanelRow>>,
}

/// One user in the usage table.
pub struct UserRow {
    pub id: String,
    pub email: String,
    pub name: String,
    pub plan: &'static str,
    /// `free`, `pro` or `ultra`: preselects the form.
    pub plan_value: String,
    pub plan_type: String,
    pub usage: String,
    pub created: When,
}

/// An endpoint whose deliveries fail, or that is disabled.
pub struct FailingRow {
    pub url: String,
    /// The owner's e-mail when the usage table lists them, else their id.
    pub user: String,
    pub failing_since: Option<When>,
    pub disabled_reason: Option<String>,
}

/// The webhook delivery queue.
pub struct WebhookPanel {
    pub rows: Vec<PanelRow>,
    pub failing: Vec<FailingRow>,
}

/// A filter's option.
pub struct Choice {
    pub value: &'static str,
    pub selected: bool,
}

#[derive(Template)]
#[template(path = "operator.html")]
struct OperatorPage {
    layout: Layout,
    platforms: Vec<Choice>,
    states: Vec<Choice>,
    /// This page's own address with the current filters (the "Refresh" link, and what the
    /// script fetches).
    self_href: String,
    actors: Vec<ActorRow>,
    panels: Vec<Panel>,
    webhooks: WebhookPanel,
    instances: InstancesPanel,
    users: Vec<UserRow>,
}

/// The instances sharing the database.
struct InstancesPanel {
    note: String,
    single: bool,
    rows: Vec<InstanceRow>,
}

struct InstanceRow {
    instance: String,
    address: String,
    started: When,
    heartbeat: String,
    live: bool,
    this: bool,
    leases: u64,
}

fn instances_panel(
    t: T,
    view: &crate::cluster::ClusterView,
    now: chrono::DateTime<chrono::Utc>,
) -> InstancesPanel {
    InstancesPanel {
        note: t.fill(
            Msg::OpInstancesNote,
            &[("secs", &view.takeover_secs.to_string())],
        ),
        single: !view.shared,
        rows: view
            .members
            .iter()
            .map(|m| InstanceRow {
                instance: m.instance.clone(),
                address: m.address.clone(),
                started: When::new(t, m.started_at, now),
                heartbeat: t.fill(
                    Msg::OpHeartbeatAgo,
                    &[("secs", &format!("{:.1}", m.silent_secs))],
                ),
                live: m.live,
                this: m.this,
                leases: m.leases_held,
            })
            .collect(),
    }
}

/// Where a signed-in user who is not an operator is sent: the overview, which says why
/// ([`refusal_notice`]). A redirect rather than a 403 page: the service's error safety net turns
/// every non-JSON 4xx into the JSON catalogue body, and a person should land on a page.
const REFUSED_PATH: &str = "/dashboard?notice=operator_only";

fn refused() -> HttpResponse {
    see_other(REFUSED_PATH)
}

/// The overview's message for a user the operator pages refused (`?notice=operator_only`).
pub fn refusal_notice(req: &HttpRequest, t: T) -> Option<String> {
    url::form_urlencoded::parse(req.query_string().as_bytes())
        .any(|(name, value)| name == "notice" && value == "operator_only")
        .then(|| t.s(Msg::OpRefused).to_string())
}

#[derive(Deserialize)]
struct PageQuery {
    platform: Option<String>,
    state: Option<String>,
    notice: Option<String>,
    error: Option<String>,
}

fn yes_no(t: T, value: bool) -> String {
    t.s(if value { Msg::OpYes } else { Msg::OpNo }).to_string()
}

fn row(label: &'static str, value: impl ToString) -> PanelRow {
    PanelRow {
        label,
        value: value.to_string(),
        when: None,
    }
}

fn when_row(label: &'static str, when: Option<When>, t: T) -> PanelRow {
    PanelRow {
        label,
        value: if when.is_some() {
            String::new()
        } else {
            t.s(Msg::OpNone).to_string()
        },
        when,
    }
}

fn or_none(t: T, value: Option<String>) -> String {
    value.unwrap_or_else(|| t.s(Msg::OpNone).to_string())
}

fn panels(t: T, view: &actors_view::ActorsView, now: chrono::DateTime<chrono::Utc>) -> Vec<Panel> {
    let scheduler = view.scheduler.as_ref().map(|s| {
        vec![
            row(t.s(Msg::OpRunning), yes_no(t, s.running)),
            row(t.s(Msg::OpDraining), yes_no(t, s.draining)),
            row(t.s(Msg::OpInFlight), s.in_flight),
            when_row(
                t.s(Msg::OpNextDue),
                s.next_due.map(|at| When::new(t, at, now)),
                t,
            ),
            row(
                t.s(Msg::OpLastLag),
                or_none(t, s.last_lag_ms.map(|ms| format!("{ms} ms"))),
            ),
            row(t.s(Msg::OpPublished), s.published),
            row(t.s(Msg::OpFailed), s.failed),
            row(t.s(Msg::OpRetried), s.retried),
            row(t.s(Msg::OpSettled), s.settled),
            row(t.s(Msg::OpLastError), or_none(t, s.last_error.clone())),
        ]
    });
    let collector = view.collector.as_ref().map(|c| {
        let last_run = c.last_run.as_ref().map(|run| {
            t.fill(
                Msg::OpRunSummary,
                &[
                    ("date", &run.target_date.to_string()),
                    ("ok", &run.success_count.to_string()),
                    ("failed", &run.failed_count.to_string()),
                    ("skipped", &run.skipped_count.to_string()),
                    ("total", &run.total_accounts.to_string()),
                ],
            )
        });
        vec![
            row(t.s(Msg::OpRunning), yes_no(t, c.running)),
            when_row(t.s(Msg::OpNextRun), Some(When::new(t, c.next_run, now)), t),
            row(t.s(Msg::OpTarget), c.current_target),
            row(t.s(Msg::OpLastRun), or_none(t, last_run)),
            row(t.s(Msg::OpLastError), or_none(t, c.last_error.clone())),
        ]
    });
    let reconciler = view.reconciler.as_ref().map(|r| {
        vec![
            row(t.s(Msg::OpPasses), r.passes),
            row(t.s(Msg::OpPublished), r.published),
            row(t.s(Msg::OpFailed), r.failed),
            row(t.s(Msg::OpStillProcessing), r.still_processing),
            row(t.s(Msg::OpGaveUp), r.gave_up),
            row(t.s(Msg::OpLastError), or_none(t, r.last_error.clone())),
        ]
    });
    vec![
        Panel {
            title: t.s(Msg::OpScheduler),
            rows: scheduler,
        },
        Panel {
            title: t.s(Msg::OpCollector),
            rows: collector,
        },
        Panel {
            title: t.s(Msg::OpReconciler),
            rows: reconciler,
        },
    ]
}

async fn webhook_panel(
    state: &AppState,
    t: T,
    users: &[entity::user::Model],
) -> Result<WebhookPanel, ApiError> {
    let now = state.clock.now();
    let queue = state.webhooks.queue().await?;
    let emails: std::collections::HashMap<Uuid, &str> = users
        .iter()
        .filter_map(|user| Some((user.id, user.email.as_deref()?)))
        .collect();
    Ok(WebhookPanel {
        rows: vec![
            row(t.s(Msg::OpQueueDepth), queue.queue_depth),
            when_row(
                t.s(Msg::OpOldestPending),
                queue.oldest_pending_at.map(|at| When::new(t, at, now)),
                t,
            ),
            row(t.s(Msg::OpEventsWaiting), queue.events_waiting),
        ],
        failing: queue
            .failing
            .into_iter()
            .map(|endpoint| FailingRow {
                user: emails
                    .get(&endpoint.user_id)
                    .map_or_else(|| endpoint.user_id.to_string(), |e| e.to_string()),
                url: endpoint.url,
                failing_since: endpoint.failing_since.map(|at| When::new(t, at, now)),
                disabled_reason: endpoint.disabled_reason,
            })
            .collect(),
    })
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn page(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    if !operator::is_operator(&state.config, &session.user) {
        return Ok(refused());
    }
    let mut layout = Layout::signed_in(&req, &session, Nav::Operator);
    let t = layout.t;
    let query = query.into_inner();
    layout.notice = match query.notice.as_deref() {
        Some("plan_changed") => Some(t.s(Msg::OpPlanChanged).to_string()),
        _ => None,
    };
    layout.error = match query.error.as_deref() {
        Some("plan_invalid") => Some(t.s(Msg::OpPlanInvalid).to_string()),
        Some("user_missing") => Some(t.s(Msg::OpUserMissing).to_string()),
        _ => None,
    };
    // Unknown filter values are ignored rather than refused: a hand-edited address still shows
    // the page.
    let platform = query
        .platform
        .and_then(|p| Platform::parse(&p))
        .map(Platform::as_str);
    let wanted_state = query
        .state
        .and_then(|s| STATES.iter().copied().find(|known| *known == s));
    let view = actors_view::view(
        &state.supervisor,
        &state.background,
        &state.cluster,
        &ActorsQuery {
            platform: platform.map(str::to_string),
            state: wanted_state.map(str::to_string),
        },
    )
    .await?;
    let now = state.clock.now();
    let actors = view
        .actors
        .iter()
        .map(|a| ActorRow {
            platform: a.platform.to_string(),
            name: a.name.to_string(),
            account_id: a.account_id.to_string(),
            state: a.state.as_str().to_string(),
            queue: a.queue_depth,
            in_flight: a.in_flight_ms.map(|ms| format!("{} s", ms / 1000)),
            limiter: t.fill(
                Msg::OpLimiter,
                &[
                    ("remaining", &a.limiter.remaining.to_string()),
                    ("capacity", &a.limiter.capacity.to_string()),
                    ("unit", a.limiter.unit),
                    ("full", &a.limiter.full_in_secs.to_string()),
                ],
            ),
            token_valid: a.token_valid,
            token_expires: a.token_expires_at.map(|at| When::new(t, at, now)),
            published: a.published,
            failed: a.failed,
            last_error: a.last_error.clone(),
            last_error_at: a.last_error_at.map(|at| When::new(t, at, now)),
        })
        .collect();
    let panels = panels(t, &view, now);
    let instances = instances_panel(t, &view.cluster, now);
    let listed = state.store.list_users(USERS_SHOWN).await?;
    let usages = state.usage.of_users(&listed).await?;
    let webhooks = webhook_panel(&state, t, &listed).await?;
    let mut users = Vec::new();
    for (user, usage) in listed.into_iter().zip(usages) {
        let usage = usage_text(t, &usage);
        users.push(UserRow {
            id: user.id.to_string(),
            email: user.email.clone().unwrap_or_default(),
            name: user.display_name.clone().unwrap_or_default(),
            plan: plan_name(t, user.plan),
            plan_value: user.plan.as_str().to_string(),
            plan_type: user.plan_type.clone().unwrap_or_default(),
            usage,
            created: When::new(t, user.created_at, now),
        });
    }
    let mut filters = url::form_urlencoded::Serializer::new(String::new());
    if let Some(p) = platform {
        filters.append_pair("platform", p);
    }
    if let Some(s) = wanted_state {
        filters.append_pair("state", s);
    }
    let filters = filters.finish();
    let self_href = if filters.is_empty() {
        OPERATOR_PATH.to_string()
    } else {
        format!("{OPERATOR_PATH}?{filters}")
    };
    let page = OperatorPage {
        layout,
        platforms: Platform::ALL
            .map(Platform::as_str)
            .into_iter()
            .map(|value| Choice {
                value,
                selected: platform == Some(value),
            })
            .collect(),
        states: STATES
            .iter()
            .map(|&value| Choice {
                value,
                selected: wanted_state == Some(value),
            })
            .collect(),
        self_href,
        actors,
        panels,
        webhooks,
        instances,
        users,
    };
    Ok(render(&req, page))
}

#[derive(Deserialize)]
struct PlanForm {
    plan: String,
    plan_type: Option<String>,
}

/// `POST /dashboard/operator/users/{id}/plan`: the same function as `PUT /admin/users/{id}/plan`.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn change_plan(
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
    form: web::Form<PlanForm>,
) -> Result<HttpResponse, ApiError> {
    if !operator::is_operator(&state.config, &session.user) {
        return Ok(refused());
    }
    let Some(user_id): Option<Uuid> = parse_uuid(&path) else {
        return Ok(see_other(&format!("{OPERATOR_PATH}?error=user_missing")));
    };
    let form = form.into_inner();
    let change = PlanChange {
        plan: form.plan,
        plan_type: form.plan_type.filter(|p| !p.is_empty()),
        current_period_end: None,
    };
    match operator::set_user_plan(&state.store, state.clock.now(), user_id, change).await {
        Ok(user) => {
            tracing::info!(target_user = %user.id, plan = %user.plan, "operator set plan (dashboard)");
            Ok(see_other(&format!("{OPERATOR_PATH}?notice=plan_changed")))
        }
        Err(error) if error.status_code() == StatusCode::NOT_FOUND => {
            Ok(see_other(&format!("{OPERATOR_PATH}?error=user_missing")))
        }
        Err(error) if error.status_code() == StatusCode::BAD_REQUEST => {
            Ok(see_other(&format!("{OPERATOR_PATH}?error=plan_invalid")))
        }
        Err(error) => Err(error),
    }
}
