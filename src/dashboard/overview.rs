//! `GET /dashboard`: plan, usage this period, the accounts' health, the next scheduled posts
//! and the latest results.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use entity::scheduled_post::ScheduledStatus;

use super::{
    Layout, Nav, When,
    accounts::{AccountRow, platform_name},
    i18n::Msg,
    plan_name, render, usage_text,
};
use crate::{
    AppState,
    error::ApiError,
    store::{Page, ScheduledFilter},
    web::auth::SessionUser,
};

/// How many scheduled posts and results the overview shows.
const SHOWN: u64 = 5;

#[derive(Template)]
#[template(path = "overview.html")]
struct OverviewPage {
    layout: Layout,
    plan: &'static str,
    usage: String,
    resets: When,
    accounts: Vec<AccountRow>,
    scheduled: Vec<PostRow>,
    results: Vec<PostRow>,
}

/// A scheduled post or a history item, as the overview lists it.
pub struct PostRow {
    pub when: When,
    pub platform: String,
    pub account: String,
    pub text: String,
    /// The status value of the spec (for the badge's class) and in words.
    pub status: String,
    pub status_text: String,
    /// The platform's post id, or the error's code and message.
    pub detail: String,
}

/// The first words of a post's text (also the history list's).
pub(crate) fn snippet(content: &serde_json::Value) -> String {
    const MAX: usize = 80;
    let text = content.get("text").and_then(|v| v.as_str()).unwrap_or("");
    if text.chars().count() <= MAX {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(MAX).collect();
    cut.push('…');
    cut
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
pub async fn page(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
) -> Result<HttpResponse, ApiError> {
    let mut layout = Layout::signed_in(&req, &session, Nav::Overview);
    // Operator pages: a non-operator sent here is told why.
    layout.error = super::operator::refusal_notice(&req, layout.t);
    let t = layout.t;
    let user = &session.user;
    let now = state.clock.now();
    let usage_now = state.usage.now(user).await?;
    let usage = usage_text(t, &usage_now);
    let period = usage_now.period;
    let plan = plan_name(t, user.plan);
    let accounts = state
        .store
        .list_connected_accounts(user.id)
        .await?
        .into_iter()
        .map(|mut account| {
            crate::tokens::flag_unreadable(&state.cipher, &mut account);
            AccountRow::new(t, &account, now)
        })
        .collect();
    let scheduled = state
        .store
        .list_scheduled_posts(
            user.id,
            ScheduledFilter {
                status: Some(ScheduledStatus::Scheduled),
                platform: None,
                limit: SHOWN,
            },
        )
        .await?
        .into_iter()
        .map(|row| PostRow {
            when: When::new(t, row.scheduled_at, now),
            platform: platform_name(row.platform).to_string(),
            account: row.page_name,
            text: snippet(&row.content),
            status_text: t.status(row.status.as_str()),
            status: row.status.as_str().to_string(),
            detail: String::new(),
        })
        .collect();
    let (results, _) = state
        .store
        .list_submissions(
            user.id,
            Page {
                limit: SHOWN,
                offset: 0,
            },
        )
        .await?;
    let results = results
        .into_iter()
        .map(|row| {
            let detail = match (&row.post_id, &row.error_code) {
                (_, Some(code)) => {
                    format!("{code}: {}", row.error_message.as_deref().unwrap_or(""))
                }
                (Some(post_id), None) => post_id.clone(),
                (None, None) => String::new(),
            };
            PostRow {
                when: When::new(t, row.published_at.unwrap_or(row.created_at), now),
                platform: platform_name(row.platform).to_string(),
                account: row.page_name,
                text: snippet(&row.content),
                status_text: t.status(row.status.as_str()),
                status: row.status.as_str().to_string(),
                detail,
            }
        })
        .collect();
    let page = OverviewPage {
        resets: When::new(t, period.end, now),
        layout,
        plan,
        usage,
        accounts,
        scheduled,
        results,
    };
    Ok(render(&req, page))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn snippets_are_cut_at_a_character_boundary() {
        assert_eq!(snippet(&json!({"text": "short"})), "short");
        assert_eq!(snippet(&json!({})), "");
        let long = "字".repeat(100);
        let cut = snippet(&json!({ "text": long }));
        assert_eq!(cut.chars().count(), 81);
        assert!(cut.ends_with('…'));
    }
}
