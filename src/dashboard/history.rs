//! `GET /dashboard/history` (the publishing history, paginated, with status badges) and
//! `GET /dashboard/history/{id}` (one publish's delivery timeline: every step the adapter
//! recorded in `post_submissions.steps`, the final call, and the result — on failure with our
//! error code and the platform's own words).
//!
//! The list reads the same store function as `GET /api/published-posts`; the timeline reads
//! the row by id and shows it only to its owner. Anyone else gets the page's not-found (as on
//! the keys and accounts pages: back to the list with a notice), the same answer as for an id
//! that does not exist, so ids of other users cannot be probed. A 404 status is not used: the
//! service's safety net turns every non-JSON error response into the JSON catalogue body.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use chrono::{DateTime, Utc};
use entity::post_submission::{
    ProcessingOutcome, Step as RecordedStep, StepKind, SubmissionStatus,
};
use serde::Deserialize;
use serde_json::Value;

use super::{
    Layout, Nav, When,
    accounts::platform_name,
    i18n::{Msg, T},
    overview::snippet,
    render, see_other,
};
use crate::domain::text::parse_uuid;
use crate::{AppState, error::ApiError, store::Page, web::auth::SessionUser};

const HISTORY_PATH: &str = "/dashboard/history";

/// Items per history page.
const PER_PAGE: u64 = 20;

/// Routes inside the `/dashboard` scope.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/history", web::get().to(page))
        .route("/history/{id}", web::get().to(timeline));
}

/// A history item as the list shows it.
pub struct HistoryRow {
    pub id: String,
    pub when: When,
    pub platform: String,
    pub account: String,
    pub text: String,
    /// The status value of the store (for the badge's class) and in words.
    pub status: String,
    pub status_text: String,
    /// The platform's post id, or our error code.
    pub detail: String,
}

#[derive(Template)]
#[template(path = "history.html")]
struct HistoryPage {
    layout: Layout,
    rows: Vec<HistoryRow>,
    /// "Page 2 of 5 (93 posts)".
    position: String,
    prev: Option<u64>,
    next: Option<u64>,
}

#[derive(Deserialize)]
struct PageQuery {
    /// 1-based; anything unreadable or out of range is read as the nearest valid page.
    page: Option<String>,
    notice: Option<String>,
}

/// The 1-based page asked for; a person editing the URL gets page 1, not an error.
fn page_number(raw: Option<&str>) -> u64 {
    raw.and_then(|p| p.trim().parse::<u64>().ok())
        .filter(|p| *p >= 1)
        .unwrap_or(1)
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn page(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let mut layout = Layout::signed_in(&req, &session, Nav::History);
    let t = layout.t;
    if query.notice.as_deref() == Some("post_missing") {
        layout.notice = Some(t.s(Msg::NoticePostMissing).to_string());
    }
    let now = state.clock.now();
    let mut asked = page_number(query.page.as_deref());
    let offset = (asked - 1).saturating_mul(PER_PAGE);
    let (mut rows, total) = state
        .store
        .list_submissions(
            session.user.id,
            Page {
                limit: PER_PAGE,
                offset,
            },
        )
        .await?;
    let pages = total.div_ceil(PER_PAGE).max(1);
    // Past the last page (an old link, an edited URL): the last page, not an empty list that
    // would read as "nothing published yet".
    if asked > pages {
        asked = pages;
        rows = state
            .store
            .list_submissions(
                session.user.id,
                Page {
                    limit: PER_PAGE,
                    offset: (pages - 1) * PER_PAGE,
                },
            )
            .await?
            .0;
    }
    let rows: Vec<HistoryRow> = rows
        .into_iter()
        .map(|row| HistoryRow {
            id: row.id.to_string(),
            when: When::new(t, row.published_at.unwrap_or(row.created_at), now),
            platform: platform_name(row.platform).to_string(),
            account: row.page_name,
            text: snippet(&row.content),
            status_text: t.status(row.status.as_str()),
            status: row.status.as_str().to_string(),
            detail: row.error_code.or(row.post_id).unwrap_or_default(),
        })
        .collect();
    let page = HistoryPage {
        position: t.fill(
            Msg::HistoryPosition,
            &[
                ("page", &asked.to_string()),
                ("pages", &pages.to_string()),
                ("total", &total.to_string()),
            ],
        ),
        prev: (asked > 1).then(|| asked - 1),
        next: (asked < pages).then_some(asked + 1),
        layout,
        rows,
    };
    Ok(render(&req, page))
}

/// One entry of the delivery timeline.
pub struct Step {
    /// What happened, in words.
    pub label: String,
    /// The platform's id of the object (container, upload session, post…), if any.
    pub id: Option<String>,
    /// When it was recorded; steps recorded before the steps had times carry none.
    pub when: Option<When>,
    /// `step`, `final`, `ok`, `bad` or `wait` (the marker's class).
    pub kind: &'static str,
}

#[derive(Template)]
#[template(path = "history_item.html")]
struct TimelinePage {
    layout: Layout,
    title: String,
    platform: String,
    account: String,
    text: String,
    status: String,
    status_text: String,
    post_type: String,
    steps: Vec<Step>,
    /// Our catalogue code and the message (which carries the platform's own words).
    error: Option<(String, String)>,
    /// A publish still being checked on the platform says so.
    checking: bool,
}

/// What an adapter's step means, in words.
fn step_label(t: T, step: &RecordedStep) -> String {
    let msg = match step.kind {
        StepKind::Processing => match step.outcome {
            Some(ProcessingOutcome::Finished) => Msg::StepProcessingFinished,
            Some(ProcessingOutcome::Failed) => Msg::StepProcessingFailed,
            Some(ProcessingOutcome::StillProcessing) | None => Msg::StepProcessingPending,
        },
        StepKind::Container => Msg::StepContainer,
        StepKind::Child => Msg::StepChild,
        StepKind::Media => Msg::StepMedia,
        StepKind::Photo => Msg::StepPhoto,
        StepKind::Video => Msg::StepVideo,
        StepKind::Post => Msg::StepPost,
        StepKind::PublishId => Msg::StepPublishId,
        StepKind::UploadSession => Msg::StepUploadSession,
    };
    t.s(msg).to_string()
}

/// The timeline of one submission: started, each recorded step, the final call, the result.
fn timeline_steps(t: T, row: &entity::post_submission::Model, now: DateTime<Utc>) -> Vec<Step> {
    let when = |at: DateTime<Utc>| Some(When::new(t, at, now));
    let mut steps = vec![Step {
        label: t.s(Msg::StepStarted).to_string(),
        id: None,
        when: when(row.created_at),
        kind: "step",
    }];
    let recorded = row.steps.as_ref();
    for step in recorded.map(|s| s.steps.as_slice()).unwrap_or_default() {
        steps.push(Step {
            label: step_label(t, step),
            id: Some(step.id.clone()),
            when: step.at.and_then(when),
            kind: "step",
        });
    }
    if let Some(recorded) = recorded.filter(|s| s.final_started) {
        let at = recorded.final_started_at;
        let final_step = Step {
            label: t.s(Msg::StepFinal).to_string(),
            id: None,
            when: at.and_then(when),
            kind: "final",
        };
        // Without its own time the final call goes after the steps; with one, in its place
        // (steps recorded after it, such as the published post's id, come after).
        let place = match at {
            Some(at) => steps
                .iter()
                .skip(1)
                .position(|s| {
                    s.when
                        .as_ref()
                        .is_some_and(|w| w.iso > crate::domain::time::iso(at))
                })
                .map_or(steps.len(), |i| i + 1),
            None => steps.len(),
        };
        steps.insert(place, final_step);
    }
    let (label, kind, at) = match row.status {
        SubmissionStatus::Published => (
            t.s(Msg::StepPublished).to_string(),
            "ok",
            row.published_at.unwrap_or(row.updated_at),
        ),
        SubmissionStatus::Failed => (t.s(Msg::StepFailed).to_string(), "bad", row.updated_at),
        SubmissionStatus::Unconfirmed => {
            (t.s(Msg::StepUnconfirmed).to_string(), "bad", row.updated_at)
        }
        SubmissionStatus::Publishing => {
            (t.s(Msg::StepPublishing).to_string(), "wait", row.updated_at)
        }
    };
    steps.push(Step {
        label,
        id: row.post_id.clone(),
        when: when(at),
        kind,
    });
    steps
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn timeline(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let layout = Layout::signed_in(&req, &session, Nav::History);
    let t = layout.t;
    let row = match parse_uuid(&path) {
        Some(id) => state.store.find_submission(id).await?,
        None => None,
    }
    // Another user's submission is answered exactly as one that does not exist.
    .filter(|row| row.user_id == session.user.id);
    let Some(row) = row else {
        return Ok(see_other(&format!("{HISTORY_PATH}?notice=post_missing")));
    };
    let now = state.clock.now();
    let steps = timeline_steps(t, &row, now);
    let platform = platform_name(row.platform).to_string();
    let page = TimelinePage {
        title: t.fill(
            Msg::TimelineTitle,
            &[("account", &row.page_name), ("platform", &platform)],
        ),
        checking: row.status == SubmissionStatus::Unconfirmed && row.next_check_at.is_some(),
        error: row
            .error_code
            .clone()
            .map(|code| (code, row.error_message.clone().unwrap_or_default())),
        text: row
            .content
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        post_type: row
            .post_type
            .map(|p| p.as_str().to_string())
            .unwrap_or_default(),
        status_text: t.status(row.status.as_str()),
        status: row.status.as_str().to_string(),
        account: row.page_name,
        platform,
        steps,
        layout,
    };
    Ok(render(&req, page))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_numbers_fall_back_to_the_first_page() {
        assert_eq!(page_number(None), 1);
        assert_eq!(page_number(Some("3")), 3);
        for bad in ["0", "-1", "two", ""] {
            assert_eq!(page_number(Some(bad)), 1, "{bad}");
        }
    }
}
