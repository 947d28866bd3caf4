//! `GET /dashboard/accounts` (connect links, the list with each account's health),
//! disconnect (confirmation page, then POST), "check token" (what `POST /api/token/info`
//! reports), and the landing of a browser's OAuth connect callback.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::{
    Layout, Nav, When,
    i18n::{Msg, T, nearest_days},
    render, see_other,
};
use crate::domain::text::parse_uuid;
use crate::{
    AppState, domain::plan::Platform, domain::token_status::TokenStatus, error::ApiError,
    web::auth::SessionUser,
};

use crate::web::connect_landing::{ACCOUNTS_PATH, ConnectProblem};

/// Routes inside the `/dashboard` scope.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/accounts", web::get().to(page))
        .service(
            web::resource("/accounts/{account_id}/disconnect")
                .route(web::get().to(confirm_disconnect))
                .route(web::post().to(disconnect)),
        )
        .route("/accounts/{account_id}/token", web::get().to(token));
}

/// A platform's name as people write it (a brand name: the same in every language).
pub(crate) fn platform_name(platform: Platform) -> &'static str {
    match platform {
        Platform::Facebook => "Facebook",
        Platform::Instagram => "Instagram",
        Platform::Threads => "Threads",
        Platform::Tiktok => "TikTok",
        Platform::Youtube => "YouTube",
        Platform::X => "X",
    }
}

/// "12 days left" (to the nearest day, like the relative time beside it), or "expired".
fn days_left(t: T, at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    if at <= now {
        return t.s(Msg::Expired).to_string();
    }
    let seconds = (at - now).num_seconds().unsigned_abs();
    match nearest_days(seconds) {
        0 => t.s(Msg::LessThanADayLeft).to_string(),
        1 => t.s(Msg::DayLeft).to_string(),
        days => t.fill(Msg::DaysLeft, &[("days", &days.to_string())]),
    }
}

/// An account as the overview and the accounts page list it (spec §2.2's fields that matter
/// to a person).
pub struct AccountRow {
    pub id: String,
    pub name: String,
    pub platform: String,
    pub valid: bool,
    /// Token expiry and days left; `None` when the token does not expire (facebook).
    pub expiry: Option<(When, String)>,
    /// facebook's data-access window and days left.
    pub data_access: Option<(When, String)>,
    pub invalid_reason: Option<String>,
}

impl AccountRow {
    pub fn new(t: T, account: &entity::account::Model, now: DateTime<Utc>) -> Self {
        // facebook page tokens do not expire (§2.2); the API shows `expires_at: null` too.
        let expires_at = account
            .token_expires_at
            .filter(|_| account.platform != Platform::Facebook);
        let expired = expires_at.is_some_and(|at| at <= now);
        let window = |at: DateTime<Utc>| (When::new(t, at, now), days_left(t, at, now));
        Self {
            id: account.id.to_string(),
            name: account.display_name.clone(),
            platform: platform_name(account.platform).to_string(),
            valid: account.is_valid && !expired,
            expiry: expires_at.map(window),
            data_access: account
                .data_access_expires_at
                .filter(|_| account.platform == Platform::Facebook)
                .map(window),
            invalid_reason: account.last_error.clone().filter(|_| !account.is_valid),
        }
    }
}

/// A "Connect" link.
pub struct ConnectLink {
    pub href: String,
    pub label: String,
}

fn connect_links(t: T) -> Vec<ConnectLink> {
    let mut links = Vec::new();
    for platform in Platform::ALL {
        let base = format!("/api/connect/{}", platform.as_str());
        if platform == Platform::Instagram {
            links.push(ConnectLink {
                href: format!("{base}?via=facebook_login"),
                label: t.s(Msg::ConnectInstagramViaFacebook).to_string(),
            });
            links.push(ConnectLink {
                href: format!("{base}?via=instagram_login"),
                label: t.s(Msg::ConnectInstagramDirect).to_string(),
            });
        } else {
            links.push(ConnectLink {
                href: base,
                label: t.fill(
                    Msg::ConnectPlatform,
                    &[("platform", platform_name(platform))],
                ),
            });
        }
    }
    links
}

/// What the accounts page was sent to say (after a redirect). Only known values are shown:
/// nothing from the query string is echoed as text, except a platform we know and a number.
#[derive(Deserialize)]
pub struct NoticeQuery {
    notice: Option<String>,
    platform: Option<String>,
    count: Option<String>,
    error: Option<String>,
}

fn apply_notice(layout: &mut Layout, query: &NoticeQuery) {
    let t = layout.t;
    layout.notice = match query.notice.as_deref() {
        Some("connected") => {
            let platform = query.platform.as_deref().and_then(Platform::parse);
            let count = query.count.as_deref().and_then(|c| c.parse::<u32>().ok());
            platform.zip(count).map(|(platform, count)| {
                t.fill(
                    Msg::NoticeConnected,
                    &[
                        ("count", &count.to_string()),
                        ("platform", platform_name(platform)),
                    ],
                )
            })
        }
        Some("disconnected") => Some(t.s(Msg::NoticeDisconnected).to_string()),
        Some("account_missing") => Some(t.s(Msg::NoticeAccountMissing).to_string()),
        _ => None,
    };
    layout.error = query
        .error
        .as_deref()
        .and_then(ConnectProblem::parse)
        .map(|problem| t.s(problem.message()).to_string());
}

#[derive(Template)]
#[template(path = "accounts.html")]
struct AccountsPage {
    layout: Layout,
    connect: Vec<ConnectLink>,
    accounts: Vec<AccountRow>,
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn page(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    query: web::Query<NoticeQuery>,
) -> Result<HttpResponse, ApiError> {
    let mut layout = Layout::signed_in(&req, &session, Nav::Accounts);
    apply_notice(&mut layout, &query);
    let t = layout.t;
    let now = state.clock.now();
    let accounts = state
        .store
        .list_connected_accounts(session.user.id)
        .await?
        .into_iter()
        .map(|mut account| {
            crate::tokens::flag_unreadable(&state.cipher, &mut account);
            AccountRow::new(t, &account, now)
        })
        .collect();
    let page = AccountsPage {
        connect: connect_links(t),
        layout,
        accounts,
    };
    Ok(render(&req, page))
}

/// The user's connected (not disconnected) account named in the path, if any.
async fn owned_account(
    state: &AppState,
    session: &SessionUser,
    raw_id: &str,
) -> Result<Option<entity::account::Model>, ApiError> {
    let Some(account_id) = parse_uuid(raw_id) else {
        return Ok(None);
    };
    Ok(state
        .store
        .find_owned_account(session.user.id, account_id)
        .await?
        .filter(|account| !account.disabled))
}

fn account_missing() -> HttpResponse {
    see_other(&format!("{ACCOUNTS_PATH}?notice=account_missing"))
}

#[derive(Template)]
#[template(path = "disconnect.html")]
struct DisconnectPage {
    layout: Layout,
    id: String,
    text: String,
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn confirm_disconnect(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let Some(account) = owned_account(&state, &session, &path).await? else {
        return Ok(account_missing());
    };
    let layout = Layout::signed_in(&req, &session, Nav::Accounts);
    let text = layout.t.fill(
        Msg::DisconnectText,
        &[
            ("name", &account.display_name),
            ("platform", platform_name(account.platform)),
        ],
    );
    let page = DisconnectPage {
        layout,
        id: account.id.to_string(),
        text,
    };
    Ok(render(&req, page))
}

/// `POST /dashboard/accounts/{id}/disconnect`: the same store call as
/// `DELETE /api/accounts/{id}`.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn disconnect(
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let Some(account_id) = parse_uuid(&path) else {
        return Ok(account_missing());
    };
    let disconnected = state
        .store
        .disconnect_account(session.user.id, account_id, state.clock.now())
        .await?;
    if !disconnected {
        return Ok(account_missing());
    }
    Ok(see_other(&format!("{ACCOUNTS_PATH}?notice=disconnected")))
}

#[derive(Template)]
#[template(path = "token.html")]
struct TokenPage {
    layout: Layout,
    title: String,
    platform: String,
    valid: bool,
    expiry: Option<(When, String)>,
    data_access: Option<(When, String)>,
    data_access_expired: bool,
    invalid_reason: Option<String>,
}

/// `GET /dashboard/accounts/{id}/token`: what `POST /api/token/info` reports.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn token(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let Some(account) = owned_account(&state, &session, &path).await? else {
        return Ok(account_missing());
    };
    let layout = Layout::signed_in(&req, &session, Nav::Accounts);
    let t = layout.t;
    let now = state.clock.now();
    // The verdicts are those `POST /api/token/info` answers with, so the page and the API
    // cannot disagree; the moments come from the row itself (the JSON's ISO text is rounded to
    // milliseconds, which can cost a day in "days left").
    let status = TokenStatus::of(&account, now);
    let row = AccountRow::new(t, &account, now);
    let page = TokenPage {
        title: t.fill(Msg::TokenTitle, &[("name", &account.display_name)]),
        platform: row.platform,
        valid: status.is_valid,
        expiry: row.expiry,
        data_access: row.data_access,
        data_access_expired: status.data_access_expired.unwrap_or(false),
        invalid_reason: status.invalid_reason,
        layout,
    };
    Ok(render(&req, page))
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;

    #[test]
    fn days_left_to_the_nearest_day() {
        let t = T(crate::usage::Locale::En);
        let now = Utc::now();
        let cases = [
            (
                "sixty days less a moment",
                Duration::days(60) - Duration::milliseconds(5),
                "60 days left",
            ),
            ("a day and a half", Duration::hours(36), "2 days left"),
            ("a day", Duration::hours(20), "1 day left"),
            ("hours", Duration::hours(3), "less than a day left"),
            ("past", Duration::seconds(-1), "expired"),
            ("now", Duration::zero(), "expired"),
        ];
        for (name, delta, want) in cases {
            assert_eq!(days_left(t, now + delta, now), want, "{name}");
        }
    }

    #[test]
    fn connect_problems_round_trip_and_unknown_values_show_nothing() {
        for problem in [
            ConnectProblem::State,
            ConnectProblem::Refused,
            ConnectProblem::Unavailable,
            ConnectProblem::Other,
        ] {
            assert_eq!(ConnectProblem::parse(problem.as_str()), Some(problem));
        }
        assert_eq!(ConnectProblem::parse("<script>"), None);
    }

    #[test]
    fn every_platform_has_a_connect_link_and_instagram_has_two() {
        let links = connect_links(T(crate::usage::Locale::En));
        assert_eq!(links.len(), Platform::ALL.len() + 1);
        assert!(
            links
                .iter()
                .any(|l| l.href == "/api/connect/instagram?via=instagram_login")
        );
    }
}
