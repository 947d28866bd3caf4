//! `GET /dashboard/scheduled` (the list, with status and platform filters and a time-zone
//! picker), cancel (`GET …/{id}/cancel` confirmation, `POST` the same path).
//!
//! - The list comes from the store function `GET /api/scheduled-posts` uses, with the same
//!   filters, capped at [`SHOWN`] rows (the API's own maximum), earliest first (the store's order); the page says so
//!   when the cap is reached.
//! - Times are shown in the user's zone and in UTC. The zone is an IANA name (chrono-tz) picked
//!   in the filter form (`?tz=`, a GET that only changes how times are shown, like `?lang=`) and
//!   remembered in a cookie; UTC until picked.
//! - "Cancel" is offered only where spec §3.1 allows it (status `scheduled`); the POST calls
//!   the same store function as `DELETE /api/scheduled-posts/{id}`, whose answer decides.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use entity::scheduled_post::ScheduledStatus;
use serde::Deserialize;

use super::{
    Layout, Nav, When,
    accounts::platform_name,
    i18n::{Msg, T},
    render, see_other,
};
use crate::domain::text::parse_uuid;
use crate::{
    AppState, domain::plan::Platform, error::ApiError, store::CancelOutcome,
    store::ScheduledFilter, web::auth::SessionUser,
};

const SCHEDULED_PATH: &str = "/dashboard/scheduled";
/// The cookie that remembers the picked time zone.
const ZONE_COOKIE: &str = "service_tz";
/// Rows shown at most: the maximum `GET /api/scheduled-posts` returns.
pub const SHOWN: u64 = 100;

/// Routes inside the `/dashboard` scope.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/scheduled").route(web::get().to(page)))
        .service(
            web::resource("/scheduled/{id}/cancel")
                .route(web::get().to(confirm_cancel))
                .route(web::post().to(cancel)),
        );
}

/// The user's time zone: the remembered pick, else UTC.
pub fn zone_of(req: &HttpRequest) -> Tz {
    req.cookie(ZONE_COOKIE)
        .and_then(|cookie| cookie.value().parse::<Tz>().ok())
        .unwrap_or(Tz::UTC)
}

/// One entry of a zone select.
pub struct ZoneOption {
    pub name: &'static str,
    pub selected: bool,
}

/// Every IANA zone chrono-tz knows, `selected` marked.
pub fn zone_options(selected: Tz) -> Vec<ZoneOption> {
    let mut zones: Vec<ZoneOption> = chrono_tz::TZ_VARIANTS
        .iter()
        .map(|zone| ZoneOption {
            name: zone.name(),
            selected: *zone == selected,
        })
        .collect();
    zones.sort_by_key(|zone| zone.name);
    zones
}

/// A value of a filter select.
pub struct FilterOption {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

/// A row of the list.
pub struct ScheduledRow {
    pub id: String,
    pub account: String,
    pub platform: String,
    pub text: String,
    pub media_count: usize,
    pub status: String,
    pub status_label: String,
    pub when: When,
    /// The time in the user's zone.
    pub local: String,
    pub error: Option<String>,
    pub cancellable: bool,
}

#[derive(Template)]
#[template(path = "scheduled.html")]
struct ScheduledPage {
    layout: Layout,
    rows: Vec<ScheduledRow>,
    statuses: Vec<FilterOption>,
    platforms: Vec<FilterOption>,
    zones: Vec<ZoneOption>,
    zone: &'static str,
    filtered: bool,
    capped: bool,
    shown: u64,
}

#[derive(Deserialize)]
struct ListQuery {
    status: Option<String>,
    platform: Option<String>,
    tz: Option<String>,
    notice: Option<String>,
}

/// The text of a scheduled post's content, in one line (a thread's parts joined by " / ").
fn content_text(content: &serde_json::Value) -> String {
    match &content["text"] {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.as_str())
            .collect::<Vec<_>>()
            .join(" / "),
        _ => String::new(),
    }
}

fn in_zone(at: DateTime<Utc>, zone: Tz) -> String {
    at.with_timezone(&zone)
        .format("%Y-%m-%d %H:%M %Z")
        .to_string()
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn page(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let mut layout = Layout::signed_in(&req, &session, Nav::Scheduled);
    let t = layout.t;
    layout.notice = match query.notice.as_deref() {
        Some("cancelled") => Some(t.s(Msg::NoticeScheduledCancelled).to_string()),
        Some("missing") => Some(t.s(Msg::NoticeScheduledMissing).to_string()),
        Some("not_cancellable") => Some(t.s(Msg::NoticeScheduledNotCancellable).to_string()),
        _ => None,
    };
    // Unknown filter values are ignored (the list unfiltered) rather than refused: this is a
    // page, and the selects only offer known ones.
    let status = query.status.as_deref().and_then(ScheduledStatus::parse);
    let platform = query.platform.as_deref().and_then(Platform::parse);
    let picked = query.tz.as_deref().and_then(|name| name.parse::<Tz>().ok());
    let zone = picked.unwrap_or_else(|| zone_of(&req));
    let now = state.clock.now();
    let posts = state
        .store
        .list_scheduled_posts(
            session.user.id,
            ScheduledFilter {
                status,
                platform,
                limit: SHOWN,
            },
        )
        .await?;
    let capped = posts.len() as u64 >= SHOWN;
    let rows = posts
        .iter()
        .map(|post| ScheduledRow {
            id: post.id.to_string(),
            account: post.page_name.clone(),
            platform: platform_name(post.platform).to_string(),
            text: content_text(&post.content),
            media_count: post.content["media_urls"]
                .as_array()
                .map_or(0, |urls| urls.len()),
            status_label: t.status(post.status.as_str()),
            status: post.status.as_str().to_string(),
            when: When::new(t, post.scheduled_at, now),
            local: in_zone(post.scheduled_at, zone),
            error: post.error.clone(),
            cancellable: post.status == ScheduledStatus::Scheduled,
        })
        .collect();
    let statuses = ScheduledStatus::ALL
        .iter()
        .map(|value| FilterOption {
            value: value.as_str().to_string(),
            label: t.status(value.as_str()),
            selected: status == Some(*value),
        })
        .collect();
    let platforms = Platform::ALL
        .iter()
        .map(|value| FilterOption {
            value: value.as_str().to_string(),
            label: platform_name(*value).to_string(),
            selected: platform == Some(*value),
        })
        .collect();
    let page = ScheduledPage {
        layout,
        rows,
        statuses,
        platforms,
        zones: zone_options(zone),
        zone: zone.name(),
        filtered: status.is_some() || platform.is_some(),
        capped,
        shown: SHOWN,
    };
    let mut response = render(&req, page);
    if let Some(zone) = picked {
        remember_zone(&mut response, zone, state.cookie_secure)?;
    }
    Ok(response)
}

/// Remembers a zone the user picked (here or when scheduling on Compose), so the next pages
/// show times in it.
pub fn remember_zone(response: &mut HttpResponse, zone: Tz, secure: bool) -> Result<(), ApiError> {
    let cookie = super::preference_cookie(ZONE_COOKIE, zone.name(), secure);
    response.add_cookie(&cookie).map_err(ApiError::internal)
}

#[derive(Template)]
#[template(path = "scheduled_cancel.html")]
struct CancelPage {
    layout: Layout,
    id: String,
    text: String,
}

fn redirect(notice: &str) -> HttpResponse {
    see_other(&format!("{SCHEDULED_PATH}?notice={notice}"))
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn confirm_cancel(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let Some(id) = parse_uuid(&path) else {
        return Ok(redirect("missing"));
    };
    // Another user's post is "missing", exactly like an unknown one.
    let owned = state
        .store
        .find_scheduled_post(id)
        .await?
        .filter(|post| post.user_id == session.user.id);
    let Some(post) = owned else {
        return Ok(redirect("missing"));
    };
    if post.status != ScheduledStatus::Scheduled {
        return Ok(redirect("not_cancellable"));
    }
    let layout = Layout::signed_in(&req, &session, Nav::Scheduled);
    let t: T = layout.t;
    let zone = zone_of(&req);
    let text = t.fill(
        Msg::ScheduledCancelText,
        &[
            ("name", &post.page_name),
            ("platform", platform_name(post.platform)),
            ("local", &in_zone(post.scheduled_at, zone)),
            ("utc", &in_zone(post.scheduled_at, Tz::UTC)),
        ],
    );
    let page = CancelPage {
        layout,
        id: post.id.to_string(),
        text,
    };
    Ok(render(&req, page))
}

/// `POST /dashboard/scheduled/{id}/cancel`: the cancel of `DELETE /api/scheduled-posts/{id}`.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn cancel(
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let Some(id) = parse_uuid(&path) else {
        return Ok(redirect("missing"));
    };
    Ok(
        match state
            .publishing
            .cancel_scheduled(session.user.id, id)
            .await?
        {
            CancelOutcome::Cancelled => redirect("cancelled"),
            CancelOutcome::NotFound => redirect("missing"),
            CancelOutcome::NotCancellable(_) => redirect("not_cancellable"),
        },
    )
}
