//! `GET /dashboard/webhooks/{id}`: one endpoint's delivery log, newest message first, 20 a page,
//! each message with its attempts (time, HTTP status, duration, the first KB of the answer, the
//! error) and a Replay button (`POST /dashboard/webhooks/{id}/replay`).
//!
//! The data is [`WebhookService::deliveries`](crate::services::webhooks::WebhookService::deliveries),
//! as `GET /api/webhooks/{id}/deliveries` reads it. Another user's endpoint, an unknown one or a
//! malformed id is the same 404 page: the address of a log is not a way to probe ids.

use actix_web::{HttpRequest, HttpResponse, ResponseError, http::StatusCode, web};
use askama::Template;
use serde::Deserialize;

use super::{
    Layout, Nav, When, form_token,
    i18n::{Msg, T},
    render, see_other,
    webhooks::{TokenForm, WEBHOOKS_PATH, missing, refuse_spent, when_of},
};
use crate::{
    AppState,
    error::ApiError,
    services::webhooks::{WebhookDelivery, WebhookEndpoint},
    store::Page,
    web::auth::SessionUser,
};

/// Messages per page of the log.
const PER_PAGE: u64 = 20;

/// Routes inside the `/dashboard` scope.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/webhooks/{id}").route(web::get().to(page)))
        .service(web::resource("/webhooks/{id}/replay").route(web::post().to(replay)));
}

/// One attempt of a message.
pub struct AttemptRow {
    pub at: Option<When>,
    pub http_status: Option<i32>,
    pub duration: String,
    pub response: Option<String>,
    pub error: Option<String>,
}

/// One message of the log.
pub struct MessageRow {
    pub id: String,
    pub event: String,
    /// `pending`, `delivered` or `failed`, and in words.
    pub status: String,
    pub status_text: &'static str,
    pub created: Option<When>,
    pub next_attempt: Option<When>,
    pub attempts: Vec<AttemptRow>,
    pub replay_token: String,
}

#[derive(Template)]
#[template(path = "webhook_log.html")]
struct LogPage {
    layout: Layout,
    id: String,
    url: String,
    active: bool,
    disabled_reason: Option<String>,
    messages: Vec<MessageRow>,
    /// "Page 2 of 5 (93 messages)".
    position: String,
    prev: Option<u64>,
    next: Option<u64>,
}

#[derive(Deserialize)]
struct LogQuery {
    page: Option<String>,
    notice: Option<String>,
    error: Option<String>,
}

fn status_text(t: T, status: &str) -> &'static str {
    t.s(match status {
        "delivered" => Msg::WebhookStatusDelivered,
        "failed" => Msg::WebhookStatusFailed,
        _ => Msg::WebhookStatusPending,
    })
}

fn message_row(
    state: &AppState,
    session: &SessionUser,
    t: T,
    delivery: WebhookDelivery,
) -> MessageRow {
    let now = state.clock.now();
    MessageRow {
        status_text: status_text(t, &delivery.status),
        created: when_of(t, &delivery.created_at, now),
        next_attempt: delivery
            .next_attempt_at
            .as_deref()
            .and_then(|at| when_of(t, at, now)),
        attempts: delivery
            .attempts
            .into_iter()
            .map(|attempt| AttemptRow {
                at: when_of(t, &attempt.at, now),
                http_status: attempt.http_status,
                duration: format!("{} ms", attempt.duration_ms),
                response: attempt.response.filter(|r| !r.is_empty()),
                error: attempt.error,
            })
            .collect(),
        replay_token: form_token::issue(&state.signer, session.user.id, now),
        id: delivery.message_id,
        event: delivery.event,
        status: delivery.status,
    }
}

async fn owned(
    state: &AppState,
    session: &SessionUser,
    id: &str,
) -> Result<Option<WebhookEndpoint>, ApiError> {
    Ok(state
        .webhooks
        .list(session.user.id)
        .await?
        .into_iter()
        .find(|endpoint| endpoint.id.to_string() == id))
}

fn log_path(id: &str) -> String {
    format!("{WEBHOOKS_PATH}/{id}")
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn page(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
    query: web::Query<LogQuery>,
) -> Result<HttpResponse, ApiError> {
    let Some(endpoint) = owned(&state, &session, &path).await? else {
        return Err(ApiError::not_found("Webhook endpoint not found"));
    };
    let mut layout = Layout::signed_in(&req, &session, Nav::Webhooks);
    let t = layout.t;
    layout.notice = match query.notice.as_deref() {
        Some("replayed") => Some(t.s(Msg::NoticeWebhookReplayed).to_string()),
        Some("already_sent") => Some(t.s(Msg::NoticeFormAlreadySent).to_string()),
        _ => None,
    };
    layout.error = match query.error.as_deref() {
        Some("form_expired") => Some(t.s(Msg::ErrorFormExpired).to_string()),
        Some("message_missing") => Some(t.s(Msg::NoticeWebhookMessageMissing).to_string()),
        _ => None,
    };
    // A person editing the address gets page 1 rather than an error.
    let asked = query
        .page
        .as_deref()
        .and_then(|p| p.trim().parse::<u64>().ok())
        .filter(|p| *p >= 1)
        .unwrap_or(1);
    let id = endpoint.id.to_string();
    let page = Page {
        limit: PER_PAGE,
        offset: (asked - 1).saturating_mul(PER_PAGE),
    };
    let (deliveries, total) = state
        .webhooks
        .deliveries(session.user.id, &id, page)
        .await?;
    let pages = total.div_ceil(PER_PAGE).max(1);
    let messages = deliveries
        .into_iter()
        .map(|delivery| message_row(&state, &session, t, delivery))
        .collect();
    let page = LogPage {
        position: t.fill(
            Msg::WebhookLogPosition,
            &[
                ("page", &asked.min(pages).to_string()),
                ("pages", &pages.to_string()),
                ("total", &total.to_string()),
            ],
        ),
        prev: (asked > 1).then(|| asked.min(pages + 1) - 1),
        next: (asked < pages).then_some(asked + 1),
        layout,
        id,
        url: endpoint.url,
        active: endpoint.is_active,
        disabled_reason: endpoint.disabled_reason,
        messages,
    };
    Ok(render(&req, page))
}

/// `POST /dashboard/webhooks/{id}/replay` (`message_id` in the form): as
/// `POST /api/webhooks/{id}/deliveries/{message_id}/replay`, then back to the log.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn replay(
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
    form: web::Form<TokenForm>,
) -> Result<HttpResponse, ApiError> {
    if owned(&state, &session, &path).await?.is_none() {
        return Ok(missing());
    }
    let back = log_path(&path);
    if let Some(refused) = refuse_spent(&state, &session, &form.form_token, &back).await? {
        return Ok(refused);
    }
    match state
        .webhooks
        .replay(session.user.id, &path, &form.message_id)
        .await
    {
        Ok(()) => Ok(see_other(&format!("{back}?notice=replayed"))),
        Err(error) if error.status_code() == StatusCode::NOT_FOUND => {
            Ok(see_other(&format!("{back}?error=message_missing")))
        }
        Err(error) => Err(error),
    }
}
