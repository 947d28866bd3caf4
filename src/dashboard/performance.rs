//! `GET /dashboard/performance?account_id=…&days=30`: per account, a chart of each daily
//! snapshot metric over 7, 30 or 90 days, drawn as SVG here (no script, no `style=`); the
//! account's recent posts with their metrics; the dates without a snapshot, with a Backfill
//! button (`POST /dashboard/performance/backfill` → 303 back with a notice).
//!
//! Same use cases as the JSON API: the recent posts of `GET /api/performance/posts`
//! ([`recent_posts`]), the missing dates of `GET /api/cron/check-missing` and the collection
//! of `POST /api/cron/backfill`
//! ([`CollectionService`](crate::services::collection::CollectionService)).
//!
//! A day without a snapshot, or whose metric is `null` (the platform would not give it), is a
//! gap: the line breaks (a new `M` in the path) and no point is drawn, never a zero.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::Value;

use super::{
    Layout, Nav, When,
    accounts::platform_name,
    i18n::{Msg, T},
    render, see_other,
};
use crate::domain::text::parse_uuid;
use crate::{
    AppState,
    error::ApiError,
    insights::bodies::{MetricValues, PostsBody},
    services::{
        collection::backfill::{BackfillDates, Yesterday},
        performance::recent_posts,
    },
    web::auth::SessionUser,
};

const PERFORMANCE_PATH: &str = "/dashboard/performance";
/// The ranges offered, in days; anything else asked for is read as the default.
const RANGES: [i64; 3] = [7, 30, 90];
const DEFAULT_DAYS: i64 = 30;
/// Recent posts shown in the table.
const POSTS_SHOWN: u32 = 10;

/// The chart's drawing area, in SVG user units (the SVG scales to the card's width).
const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 160.0;
const PAD_LEFT: f64 = 8.0;
const PAD_RIGHT: f64 = 8.0;
const PAD_TOP: f64 = 10.0;
const PAD_BOTTOM: f64 = 10.0;

/// Routes inside the `/dashboard` scope.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/performance", web::get().to(page))
        .route("/performance/backfill", web::post().to(backfill));
}

/// An account in the select.
pub struct AccountOption {
    pub id: String,
    pub label: String,
    pub selected: bool,
}

/// A drawn point (a day with a value).
pub struct Point {
    pub cx: String,
    pub cy: String,
    pub date: String,
    pub value: String,
}

/// One metric's line over the range.
pub struct Chart {
    pub id: String,
    pub title: String,
    /// The path's `d`: a new `M` after every gap.
    pub path: String,
    pub points: Vec<Point>,
    pub min: String,
    pub max: String,
    /// "12 of 30 days have a value".
    pub coverage: String,
}

/// A recent post and its metrics.
pub struct PostRow {
    pub id: String,
    pub text: String,
    /// When the platform says it was created, if its time could be read; else its text.
    pub created: Result<When, String>,
    /// `name: value` pairs, as the platform named them; a `null` metric reads "—".
    pub metrics: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "performance.html")]
struct PerformancePage {
    layout: Layout,
    accounts: Vec<AccountOption>,
    /// The account shown (its id), if the user has one.
    account_id: Option<String>,
    days: i64,
    ranges: [i64; 3],
    range_text: String,
    charts: Vec<Chart>,
    /// The recent posts, or what the platform call answered instead.
    posts: Result<Vec<PostRow>, String>,
    missing: Vec<String>,
    /// Why the chosen account has no performance page (its platform gives no metrics).
    unsupported: Option<String>,
}

#[derive(Deserialize)]
struct PageQuery {
    account_id: Option<String>,
    days: Option<String>,
    notice: Option<String>,
    ok: Option<String>,
    total: Option<String>,
}

/// The range asked for, if it is one of those offered.
fn days_of(raw: Option<&str>) -> i64 {
    raw.and_then(|d| d.trim().parse::<i64>().ok())
        .filter(|d| RANGES.contains(d))
        .unwrap_or(DEFAULT_DAYS)
}

/// A number for people: integers without decimals, others with up to two.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

/// A metric's value on one day; anything but a number (absent, `null`) is a gap.
fn metric_value(snapshot: &entity::performance_snapshot::Model, name: &str) -> Option<f64> {
    match name {
        "posts_count" => Some(snapshot.posts_count as f64),
        "total_post_views" => snapshot.total_post_views.map(|v| v as f64),
        other => snapshot.page_metrics.get(other).and_then(Value::as_f64),
    }
}

/// Draws one metric over `dates` (`values[i]` is the value of `dates[i]`, `None` a gap).
fn chart(t: T, id: String, title: String, dates: &[NaiveDate], values: &[Option<f64>]) -> Chart {
    let present: Vec<f64> = values.iter().flatten().copied().collect();
    // The axis starts at zero unless a value is negative, so heights compare honestly.
    let low = present.iter().copied().fold(0.0_f64, f64::min);
    let high = present.iter().copied().fold(low, f64::max);
    let span = if high > low { high - low } else { 1.0 };
    let steps = (dates.len().max(2) - 1) as f64;
    let plot_w = WIDTH - PAD_LEFT - PAD_RIGHT;
    let plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM;
    let mut path = String::new();
    let mut points = Vec::new();
    let mut previous_present = false;
    for (i, (date, value)) in dates.iter().zip(values).enumerate() {
        let Some(value) = value else {
            previous_present = false;
            continue;
        };
        let x = PAD_LEFT + plot_w * i as f64 / steps;
        let y = PAD_TOP + plot_h * (1.0 - (value - low) / span);
        let (cx, cy) = (format!("{x:.1}"), format!("{y:.1}"));
        if !path.is_empty() {
            path.push(' ');
        }
        path.push(if previous_present { 'L' } else { 'M' });
        path.push_str(&format!("{cx} {cy}"));
        previous_present = true;
        points.push(Point {
            cx,
            cy,
            date: date.format("%Y-%m-%d").to_string(),
            value: number(*value),
        });
    }
    Chart {
        id,
        title,
        path,
        coverage: t.fill(
            Msg::PerfCoverage,
            &[
                ("n", &points.len().to_string()),
                ("days", &dates.len().to_string()),
            ],
        ),
        points,
        min: number(low),
        max: number(high),
    }
}

/// One chart per metric found in the snapshots (posts count and post views first).
fn charts(
    t: T,
    snapshots: &[entity::performance_snapshot::Model],
    dates: &[NaiveDate],
) -> Vec<Chart> {
    let mut names: Vec<String> = vec!["posts_count".into(), "total_post_views".into()];
    let mut page_names: Vec<String> = snapshots
        .iter()
        .filter_map(|s| s.page_metrics.as_object())
        .flat_map(|metrics| metrics.keys().cloned())
        .collect();
    page_names.sort();
    page_names.dedup();
    names.extend(page_names);
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let values: Vec<Option<f64>> = dates
                .iter()
                .map(|date| {
                    let text = date.format("%Y-%m-%d").to_string();
                    snapshots
                        .iter()
                        .find(|s| s.snapshot_date == text)
                        .and_then(|s| metric_value(s, name))
                })
                .collect();
            let title = match name.as_str() {
                "posts_count" => t.s(Msg::PerfPostsCount).to_string(),
                "total_post_views" => t.s(Msg::PerfPostViews).to_string(),
                other => other.to_string(),
            };
            chart(t, format!("chart-{i}"), title, dates, &values)
        })
        .collect()
}

/// The posts of `GET /api/performance/posts`'s body, each platform's shape read through its
/// type: an id, a text, a time, and the post's numbers (its counts, then its metrics).
fn post_rows(t: T, body: &PostsBody, now: DateTime<Utc>) -> Vec<PostRow> {
    let row = |id: &str, text: &str, created: &str, metrics: Vec<(String, String)>| PostRow {
        id: id.to_string(),
        text: text.to_string(),
        // Graph writes `+0000`, the others RFC 3339.
        created: DateTime::parse_from_rfc3339(created)
            .or_else(|_| DateTime::parse_from_str(created, "%Y-%m-%dT%H:%M:%S%z"))
            .map(|at| When::new(t, at.with_timezone(&Utc), now))
            .map_err(|_| created.to_string()),
        metrics,
    };
    let count = |name: &str, value: u64| (name.to_string(), number(value as f64));
    match body {
        PostsBody::Facebook(body) => body
            .posts
            .iter()
            .map(|post| {
                let mut metrics = vec![
                    count("comments", post.comments),
                    count("reactions", post.reactions),
                    count("shares", post.shares),
                ];
                metrics.extend(metric_cells(&post.insights.metrics));
                row(
                    post.post_id.as_deref().unwrap_or_default(),
                    &post.message,
                    post.created_time.as_deref().unwrap_or_default(),
                    metrics,
                )
            })
            .collect(),
        PostsBody::Instagram(body) => body
            .data
            .media
            .iter()
            .map(|media| {
                let mut metrics = vec![
                    count("comments_count", media.comments_count),
                    count("like_count", media.like_count),
                ];
                metrics.extend(metric_cells(&media.insights.metrics));
                row(
                    &media.media_id,
                    &media.caption,
                    media.timestamp.as_deref().unwrap_or_default(),
                    metrics,
                )
            })
            .collect(),
        PostsBody::Threads(body) => body
            .data
            .threads
            .iter()
            .map(|thread| {
                row(
                    &thread.id,
                    &thread.text,
                    thread.timestamp.as_deref().unwrap_or_default(),
                    metric_cells(&thread.insights).collect(),
                )
            })
            .collect(),
        PostsBody::Youtube(body) => body
            .data
            .videos
            .iter()
            .map(|video| {
                let metrics = video
                    .metrics
                    .iter()
                    .map(|(name, value)| {
                        let cell = value
                            .as_ref()
                            .and_then(serde_json::Number::as_f64)
                            .map_or_else(|| "—".to_string(), number);
                        (name.clone(), cell)
                    })
                    .collect();
                row(&video.video_id, &video.title, &video.published_at, metrics)
            })
            .collect(),
        PostsBody::Tiktok(body) => body
            .data
            .videos
            .iter()
            .map(|video| {
                row(
                    video.video_id.as_deref().unwrap_or_default(),
                    &video.title,
                    video.published_at.as_deref().unwrap_or_default(),
                    metric_cells(&video.metrics).collect(),
                )
            })
            .collect(),
    }
}

/// `name: value` cells of a metric map; a `null` metric (the platform would not give it) reads
/// "—", never 0.
fn metric_cells(metrics: &MetricValues) -> impl Iterator<Item = (String, String)> + '_ {
    metrics.iter().map(|(name, value)| {
        (
            name.clone(),
            value.map_or_else(|| "—".to_string(), |v| number(v as f64)),
        )
    })
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn page(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let mut layout = Layout::signed_in(&req, &session, Nav::Performance);
    let t = layout.t;
    let user_id = session.user.id;
    let days = days_of(query.days.as_deref());
    if query.notice.as_deref() == Some("backfilled") {
        let count = |raw: &Option<String>| {
            raw.as_deref()
                .and_then(|n| n.parse::<u32>().ok())
                .unwrap_or(0)
                .to_string()
        };
        layout.notice = Some(t.fill(
            Msg::PerfBackfilled,
            &[("ok", &count(&query.ok)), ("total", &count(&query.total))],
        ));
    }
    let accounts = state.store.list_connected_accounts(user_id).await?;
    let asked = query.account_id.as_deref().and_then(parse_uuid);
    // The account asked for, else the first one with performance metrics, else the first.
    let chosen = asked
        .and_then(|id| accounts.iter().find(|a| a.id == id))
        .or_else(|| {
            accounts
                .iter()
                .find(|a| crate::insights::supported(a.platform))
        })
        .or_else(|| accounts.first());
    let options = accounts
        .iter()
        .map(|a| AccountOption {
            id: a.id.to_string(),
            label: format!("{} ({})", a.display_name, platform_name(a.platform)),
            selected: chosen.is_some_and(|c| c.id == a.id),
        })
        .collect();
    let yesterday = state.collection.schedule().yesterday(state.clock.now());
    let from = yesterday - Duration::days(days - 1);
    let dates: Vec<NaiveDate> = from.iter_days().take(days as usize).collect();
    let range_text = t.fill(
        Msg::PerfRange,
        &[
            ("from", &from.format("%Y-%m-%d").to_string()),
            ("to", &yesterday.format("%Y-%m-%d").to_string()),
        ],
    );
    let platform = chosen.map(|a| a.platform);
    // An account whose platform has no performance metrics (x) gets no charts, no missing
    // days and no Backfill button that could only fail: the page says why instead.
    let unsupported = chosen
        .filter(|_| !platform.is_some_and(crate::insights::supported))
        .map(|a| {
            t.fill(
                Msg::PerfNotAvailable,
                &[("platform", platform_name(a.platform))],
            )
        });
    let (charts, posts, missing) = match chosen.filter(|_| unsupported.is_none()) {
        Some(account) => {
            let snapshots = state
                .store
                .account_snapshots(
                    account.id,
                    &from.format("%Y-%m-%d").to_string(),
                    &yesterday.format("%Y-%m-%d").to_string(),
                )
                .await?;
            let posts = recent_posts(
                &state.supervisor,
                user_id,
                &account.id.to_string(),
                POSTS_SHOWN,
            )
            .await
            .map(|body| post_rows(t, &body, state.clock.now()))
            .map_err(|error| format!("{}: {}", error.code.as_str(), error.message));
            (
                charts(t, &snapshots, &dates),
                posts,
                state.collection.missing_dates(account, days).await?,
            )
        }
        None => (Vec::new(), Ok(Vec::new()), Vec::new()),
    };
    let page = PerformancePage {
        account_id: chosen.map(|a| a.id.to_string()),
        accounts: options,
        layout,
        days,
        ranges: RANGES,
        range_text,
        charts,
        posts,
        missing,
        unsupported,
    };
    Ok(render(&req, page))
}

#[derive(Deserialize)]
struct BackfillForm {
    account_id: Option<String>,
    days: Option<String>,
}

/// `POST /dashboard/performance/backfill`: collects every missing date of the range again
/// (the dates are worked out here, as the page listed them, not taken from the form).
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn backfill(
    state: web::Data<AppState>,
    session: SessionUser,
    form: web::Form<BackfillForm>,
) -> Result<HttpResponse, ApiError> {
    let days = days_of(form.days.as_deref());
    let account = match form.account_id.as_deref().and_then(parse_uuid) {
        Some(id) => state.store.find_owned_account(session.user.id, id).await?,
        None => None,
    }
    .filter(|account| !account.disabled);
    let Some(account) = account else {
        return Ok(see_other(&format!("{PERFORMANCE_PATH}?days={days}")));
    };
    let back = format!("{PERFORMANCE_PATH}?account_id={}&days={days}", account.id);
    let missing = state.collection.missing_dates(&account, days).await?;
    if missing.is_empty() {
        return Ok(see_other(&back));
    }
    let yesterday = Yesterday(state.collection.schedule().yesterday(state.clock.now()));
    let dates = BackfillDates::try_from((missing, yesterday))?;
    let results = state.collection.backfill(account, &dates).await;
    let ok = results.iter().filter(|r| r.succeeded()).count();
    Ok(see_other(&format!(
        "{back}&notice=backfilled&ok={ok}&total={}",
        results.len()
    )))
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::*;
    use crate::usage::Locale;

    #[test]
    fn a_missing_day_breaks_the_line_and_draws_no_point() {
        let from = NaiveDate::from_ymd_opt(2026, 11, 1).unwrap_or_default();
        let dates: Vec<NaiveDate> = from.iter_days().take(5).collect();
        let values = [Some(2.0), Some(4.0), None, Some(0.0), Some(4.0)];
        let c = chart(T(Locale::En), "c".into(), "m".into(), &dates, &values);
        assert_eq!(c.path.matches('M').count(), 2, "{}", c.path);
        assert_eq!(c.path.matches('L').count(), 2, "{}", c.path);
        let drawn: Vec<&str> = c.points.iter().map(|p| p.date.as_str()).collect();
        assert_eq!(
            drawn,
            ["2026-11-01", "2026-11-02", "2026-11-04", "2026-11-05"]
        );
        // A measured zero is on the baseline; a gap is nowhere.
        assert_eq!(c.points[2].cy, format!("{:.1}", HEIGHT - PAD_BOTTOM));
        assert_eq!(c.coverage, "4 of 5 days have a value");
    }

    #[test]
    fn ranges_other_than_those_offered_read_as_thirty_days() {
        assert_eq!(days_of(Some("7")), 7);
        assert_eq!(days_of(Some("90")), 90);
        for bad in [None, Some("8"), Some("x"), Some("-7")] {
            assert_eq!(days_of(bad), 30, "{bad:?}");
        }
    }
}
