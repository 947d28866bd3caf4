//! `GET /dashboard/webhooks` (the user's endpoints and the form to add one), `POST` to it (add:
//! the answer shows the signing secret, once), and per endpoint: send a test, rotate the secret
//! (the answer shows the new one, once, and when the old one stops signing), disable or enable,
//! delete (confirmation page, then POST). The delivery log is [`super::webhook_log`].
//!
//! - Every change goes through [`WebhookService`](crate::services::webhooks::WebhookService),
//!   the same use cases as `/api/webhooks`; this module never touches the store's webhook rows.
//! - A secret only ever travels in the body of a POST's answer, marked `no-store`, as the API
//!   keys page does with a key: no URL carries it and no GET shows it.
//! - Every form carries a one-time token ([`super::form_token`]): a second submission of one
//!   rendered form (a double click, a reload of the answer) adds no second endpoint, sends no
//!   second test and rotates nothing again.

use actix_web::{
    HttpRequest, HttpResponse, ResponseError,
    http::{
        StatusCode,
        header::{self, HeaderValue},
    },
    web,
};
use askama::Template;
use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::{
    Layout, Nav, When,
    form_token::{self, Spent},
    i18n::{Msg, T},
    render, see_other,
};
use crate::{
    AppState,
    domain::webhook::{MAX_DESCRIPTION_CHARS, MAX_URL_CHARS, WebhookEvent},
    error::ApiError,
    services::webhooks::{EndpointInput, EndpointPatch, WebhookEndpoint},
    web::auth::SessionUser,
};

pub(super) const WEBHOOKS_PATH: &str = "/dashboard/webhooks";

/// Routes inside the `/dashboard` scope.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/webhooks")
            .route(web::get().to(page))
            .route(web::post().to(create)),
    )
    .service(web::resource("/webhooks/{id}/test").route(web::post().to(send_test)))
    .service(web::resource("/webhooks/{id}/rotate-secret").route(web::post().to(rotate)))
    .service(web::resource("/webhooks/{id}/enable").route(web::post().to(enable)))
    .service(web::resource("/webhooks/{id}/disable").route(web::post().to(disable)))
    .service(
        web::resource("/webhooks/{id}/delete")
            .route(web::get().to(confirm_delete))
            .route(web::post().to(delete)),
    );
}

/// An endpoint as the list shows it: never its secret.
pub struct EndpointRow {
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub description: Option<String>,
    pub active: bool,
    pub disabled_reason: Option<String>,
    pub created: Option<When>,
    /// One-time tokens of the row's forms.
    pub test_token: String,
    pub rotate_token: String,
    pub toggle_token: String,
}

/// An event's checkbox in the add form.
pub struct EventChoice {
    pub name: &'static str,
    pub checked: bool,
}

/// A secret shown this once: after adding an endpoint, or after rotating its secret.
pub struct ShownSecret {
    pub title: String,
    pub value: String,
    /// When the previous secret stops signing (after a rotation).
    pub until: Option<String>,
}

/// A refusal of the service, as the page shows it: the catalogue's code and message.
pub struct Problem {
    pub code: String,
    pub message: String,
}

#[derive(Template)]
#[template(path = "webhooks.html")]
struct WebhooksPage {
    layout: Layout,
    secret: Option<ShownSecret>,
    problem: Option<Problem>,
    endpoints: Vec<EndpointRow>,
    events: Vec<EventChoice>,
    url_value: String,
    description_value: String,
    create_token: String,
    max_url: usize,
    max_description: usize,
}

/// What the add form holds: blank on a fresh page, what was typed after a refusal.
#[derive(Default)]
struct AddForm {
    url: String,
    events: Vec<String>,
    description: String,
    form_token: String,
}

impl AddForm {
    /// The form's fields; `events` is a checkbox group, so it comes once per checked box.
    fn parse(body: &[u8]) -> Self {
        let mut form = Self::default();
        for (name, value) in url::form_urlencoded::parse(body) {
            match name.as_ref() {
                "url" => form.url = value.into_owned(),
                "events" => form.events.push(value.into_owned()),
                "description" => form.description = value.into_owned(),
                "form_token" => form.form_token = value.into_owned(),
                _ => {}
            }
        }
        form
    }
}

/// `at` (RFC 3339, as the service answers times) as a moment to show.
pub(super) fn when_of(t: T, at: &str, now: DateTime<Utc>) -> Option<When> {
    DateTime::parse_from_rfc3339(at)
        .ok()
        .map(|at| When::new(t, at.with_timezone(&Utc), now))
}

fn row(state: &AppState, user: uuid::Uuid, t: T, endpoint: WebhookEndpoint) -> EndpointRow {
    let now = state.clock.now();
    let token = || form_token::issue(&state.signer, user, now);
    EndpointRow {
        id: endpoint.id.to_string(),
        created: when_of(t, &endpoint.created_at, now),
        url: endpoint.url,
        events: endpoint.events,
        description: endpoint.description,
        active: endpoint.is_active,
        disabled_reason: endpoint.disabled_reason,
        test_token: token(),
        rotate_token: token(),
        toggle_token: token(),
    }
}

/// The list page around `layout`, with what the add form shows.
async fn list_page(
    req: &HttpRequest,
    state: &AppState,
    session: &SessionUser,
    layout: Layout,
    secret: Option<ShownSecret>,
    problem: Option<Problem>,
    form: AddForm,
) -> Result<HttpResponse, ApiError> {
    let t = layout.t;
    let user = session.user.id;
    let endpoints = state
        .webhooks
        .list(user)
        .await?
        .into_iter()
        .map(|endpoint| row(state, user, t, endpoint))
        .collect();
    // A fresh form offers every event; a refused one keeps the boxes as they were.
    let fresh = form.url.is_empty() && form.events.is_empty();
    let events = WebhookEvent::DEFAULT
        .into_iter()
        .map(|event| EventChoice {
            name: event.as_str(),
            checked: fresh || form.events.iter().any(|e| e == event.as_str()),
        })
        .collect();
    let shows_secret = secret.is_some();
    let page = WebhooksPage {
        layout,
        secret,
        problem,
        endpoints,
        events,
        url_value: form.url,
        description_value: form.description,
        create_token: form_token::issue(&state.signer, user, state.clock.now()),
        max_url: MAX_URL_CHARS,
        max_description: MAX_DESCRIPTION_CHARS,
    };
    let mut response = render(req, page);
    if shows_secret {
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    Ok(response)
}

#[derive(Deserialize)]
struct NoticeQuery {
    notice: Option<String>,
    error: Option<String>,
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn page(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    query: web::Query<NoticeQuery>,
) -> Result<HttpResponse, ApiError> {
    let mut layout = Layout::signed_in(&req, &session, Nav::Webhooks);
    let t = layout.t;
    // Known codes only: nothing a link carries is echoed onto the page.
    layout.notice = match query.notice.as_deref() {
        Some("test_queued") => Some(Msg::NoticeWebhookTestQueued),
        Some("enabled") => Some(Msg::NoticeWebhookEnabled),
        Some("disabled") => Some(Msg::NoticeWebhookDisabled),
        Some("deleted") => Some(Msg::NoticeWebhookDeleted),
        Some("missing") => Some(Msg::NoticeWebhookMissing),
        Some("already_sent") => Some(Msg::NoticeFormAlreadySent),
        _ => None,
    }
    .map(|msg| t.s(msg).to_string());
    layout.error = match query.error.as_deref() {
        Some("form_expired") => Some(t.s(Msg::ErrorFormExpired).to_string()),
        _ => None,
    };
    list_page(
        &req,
        &state,
        &session,
        layout,
        None,
        None,
        AddForm::default(),
    )
    .await
}

/// `POST /dashboard/webhooks`: [`WebhookService::create`](crate::services::webhooks::WebhookService::create),
/// as `POST /api/webhooks`. A refusal (a URL that is not public https, too many endpoints…) is
/// shown above the form with the catalogue's code and message, on a 200 page that keeps what
/// was typed (as the API keys form does); nothing is created.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn create(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let mut layout = Layout::signed_in(&req, &session, Nav::Webhooks);
    let t = layout.t;
    let form = AddForm::parse(&body);
    let spent = form_token::spend(
        &state.store,
        &state.signer,
        &form.form_token,
        session.user.id,
        state.clock.now(),
    )
    .await?;
    match spent {
        Spent::Now => {}
        Spent::Before => {
            layout.notice = Some(t.s(Msg::WebhookCreateAlreadySent).to_string());
            let fresh = AddForm::default();
            return list_page(&req, &state, &session, layout, None, None, fresh).await;
        }
        // Left open too long, or not one of our forms: nothing is added, and what was typed
        // comes back to send again.
        Spent::Unusable => {
            layout.error = Some(t.s(Msg::ErrorFormExpired).to_string());
            return list_page(&req, &state, &session, layout, None, None, form).await;
        }
    }
    let input = EndpointInput {
        url: form.url.trim().to_string(),
        // No box checked: every event, as the API reads an empty list.
        events: Some(form.events.clone()),
        description: Some(form.description.clone()),
    };
    match state.webhooks.create(session.user.id, input).await {
        Ok((endpoint, secret)) => {
            let shown = ShownSecret {
                title: t.fill(Msg::WebhookCreatedTitle, &[("url", &endpoint.url)]),
                value: secret,
                until: None,
            };
            let fresh = AddForm::default();
            list_page(&req, &state, &session, layout, Some(shown), None, fresh).await
        }
        Err(error) if error.status_code() == StatusCode::BAD_REQUEST => {
            layout.error = Some(t.s(Msg::ErrorWebhookRefused).to_string());
            let problem = Problem {
                code: error.code.as_str().to_string(),
                message: error.message,
            };
            list_page(&req, &state, &session, layout, None, Some(problem), form).await
        }
        Err(error) => Err(error),
    }
}

#[derive(Deserialize)]
pub(super) struct TokenForm {
    #[serde(default)]
    pub form_token: String,
    /// The message to replay (the delivery log's form only).
    #[serde(default)]
    pub message_id: String,
}

/// Spends a row form's token; `Some` answer (back to `back` with why) when the form may not act.
pub(super) async fn refuse_spent(
    state: &AppState,
    session: &SessionUser,
    token: &str,
    back: &str,
) -> Result<Option<HttpResponse>, ApiError> {
    let spent = form_token::spend(
        &state.store,
        &state.signer,
        token,
        session.user.id,
        state.clock.now(),
    )
    .await?;
    Ok(match spent {
        Spent::Now => None,
        Spent::Before => Some(see_other(&format!("{back}?notice=already_sent"))),
        Spent::Unusable => Some(see_other(&format!("{back}?error=form_expired"))),
    })
}

/// Back to the list with `notice`; another user's endpoint, or one that is gone, with the same
/// notice as an unknown one.
fn back_with(result: Result<(), ApiError>, notice: &str) -> Result<HttpResponse, ApiError> {
    match result {
        Ok(()) => Ok(see_other(&format!("{WEBHOOKS_PATH}?notice={notice}"))),
        Err(error) if error.status_code() == StatusCode::NOT_FOUND => Ok(missing()),
        Err(error) => Err(error),
    }
}

pub(super) fn missing() -> HttpResponse {
    see_other(&format!("{WEBHOOKS_PATH}?notice=missing"))
}

/// `POST /dashboard/webhooks/{id}/test`: queues one `webhook.test` message, as
/// `POST /api/webhooks/{id}/test`.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn send_test(
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
    form: web::Form<TokenForm>,
) -> Result<HttpResponse, ApiError> {
    if let Some(refused) = refuse_spent(&state, &session, &form.form_token, WEBHOOKS_PATH).await? {
        return Ok(refused);
    }
    let queued = state.webhooks.test(session.user.id, &path).await;
    back_with(queued.map(|_| ()), "test_queued")
}

async fn set_active(
    state: &AppState,
    session: &SessionUser,
    id: &str,
    token: &str,
    active: bool,
) -> Result<HttpResponse, ApiError> {
    if let Some(refused) = refuse_spent(state, session, token, WEBHOOKS_PATH).await? {
        return Ok(refused);
    }
    let patch = EndpointPatch {
        is_active: Some(active),
        ..EndpointPatch::default()
    };
    let changed = state.webhooks.change(session.user.id, id, patch).await;
    back_with(
        changed.map(|_| ()),
        if active { "enabled" } else { "disabled" },
    )
}

/// `POST /dashboard/webhooks/{id}/enable`: as `PATCH /api/webhooks/{id}` `{is_active: true}`
/// (its disabled reason and failure streak cleared).
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn enable(
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
    form: web::Form<TokenForm>,
) -> Result<HttpResponse, ApiError> {
    set_active(&state, &session, &path, &form.form_token, true).await
}

/// `POST /dashboard/webhooks/{id}/disable`: as `PATCH /api/webhooks/{id}` `{is_active: false}`.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn disable(
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
    form: web::Form<TokenForm>,
) -> Result<HttpResponse, ApiError> {
    set_active(&state, &session, &path, &form.form_token, false).await
}

/// `POST /dashboard/webhooks/{id}/rotate-secret`: as `POST /api/webhooks/{id}/rotate-secret`;
/// the answer is the list with the new secret, shown once, and when the old one stops signing.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn rotate(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
    form: web::Form<TokenForm>,
) -> Result<HttpResponse, ApiError> {
    if let Some(refused) = refuse_spent(&state, &session, &form.form_token, WEBHOOKS_PATH).await? {
        return Ok(refused);
    }
    let (secret, until) = match state.webhooks.rotate_secret(session.user.id, &path).await {
        Ok(rotated) => rotated,
        Err(error) if error.status_code() == StatusCode::NOT_FOUND => return Ok(missing()),
        Err(error) => return Err(error),
    };
    let layout = Layout::signed_in(&req, &session, Nav::Webhooks);
    let t = layout.t;
    let url = state
        .webhooks
        .list(session.user.id)
        .await?
        .into_iter()
        .find(|endpoint| endpoint.id.to_string() == path.as_str())
        .map(|endpoint| endpoint.url)
        .unwrap_or_default();
    let shown = ShownSecret {
        title: t.fill(Msg::WebhookRotatedTitle, &[("url", &url)]),
        value: secret,
        until: Some(t.fill(
            Msg::WebhookRotatedUntil,
            &[("until", &until.format("%Y-%m-%d %H:%M UTC").to_string())],
        )),
    };
    let fresh = AddForm::default();
    list_page(&req, &state, &session, layout, Some(shown), None, fresh).await
}

#[derive(Template)]
#[template(path = "webhook_delete.html")]
struct DeletePage {
    layout: Layout,
    id: String,
    text: String,
    token: String,
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn confirm_delete(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let found = state
        .webhooks
        .list(session.user.id)
        .await?
        .into_iter()
        .find(|endpoint| endpoint.id.to_string() == path.as_str());
    let Some(endpoint) = found else {
        return Ok(missing());
    };
    let layout = Layout::signed_in(&req, &session, Nav::Webhooks);
    let page = DeletePage {
        id: endpoint.id.to_string(),
        text: layout
            .t
            .fill(Msg::WebhookDeleteText, &[("url", &endpoint.url)]),
        token: form_token::issue(&state.signer, session.user.id, state.clock.now()),
        layout,
    };
    Ok(render(&req, page))
}

/// `POST /dashboard/webhooks/{id}/delete`: as `DELETE /api/webhooks/{id}`.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn delete(
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
    form: web::Form<TokenForm>,
) -> Result<HttpResponse, ApiError> {
    if let Some(refused) = refuse_spent(&state, &session, &form.form_token, WEBHOOKS_PATH).await? {
        return Ok(refused);
    }
    let deleted = state.webhooks.delete(session.user.id, &path).await;
    back_with(deleted, "deleted")
}
