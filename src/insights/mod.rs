//! Performance insights: what the `/api/performance/*` endpoints and the daily collector read
//! from each platform's own insights API (Graph insights, Threads insights, YouTube Analytics +
//! Data API, TikTok Display API).
//!
//! Each platform module turns a resolved [`InsightsQuery`] into the spec's response body (§4.4–
//! 4.7), and a date into the [`DailyMetrics`] of a snapshot (§2.7). Every metric is fetched so
//! that one failing or retired metric does not fail the call: the others still come back and
//! the failed one is named in `failed_metrics` and is `null` where its number would be (never 0,
//! which would read as measured).
//!
//! These functions are called by the account actor (never by handlers directly), so the calls
//! share the account's rate limiter with publishing.

pub mod bodies;
pub mod catalogue;
pub mod facebook;
pub mod instagram;
pub mod threads;
pub mod tiktok;
pub mod youtube;

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde_json::Value;
use uuid::Uuid;

use crate::{
    config::PlatformsConfig,
    domain::plan::Platform,
    platforms::{
        AccountCredentials, PlatformError,
        ids::{FacebookPostId, GraphId, InvalidId, TiktokVideoId, YoutubeVideoId},
    },
};

/// What an insights adapter needs for one account.
pub struct InsightsContext<'a> {
    pub http: &'a reqwest::Client,
    pub config: &'a PlatformsConfig,
    pub credentials: &'a AccountCredentials,
    pub account: &'a AccountSummary,
}

/// The account as the response bodies name it.
#[derive(Debug, Clone)]
pub struct AccountSummary {
    pub account_id: Uuid,
    pub platform: Platform,
    /// Page name, channel title, or the username where there is no other name.
    pub name: String,
    /// `ig_username`, `threads_username`, tiktok/x username.
    pub username: Option<String>,
}

/// A performance query with every default already applied by the HTTP layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsightsQuery {
    /// `GET /api/performance/account`.
    Account {
        /// `day`, `week`, `days_28` (facebook, instagram); others ignore it.
        period: String,
        since: NaiveDate,
        /// Inclusive.
        until: NaiveDate,
    },
    /// `GET /api/performance/posts`: the most recent posts, newest first.
    Posts { limit: u32 },
    /// `GET /api/performance/post/{post_id}`.
    Post { post_id: PostId },
}

/// The post of a `post/{post_id}` query, checked against its platform's id grammar before
/// anything is asked of the platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostId {
    Facebook(FacebookPostId),
    Instagram(GraphId),
    Threads(GraphId),
    Youtube(YoutubeVideoId),
    Tiktok(TiktokVideoId),
}

impl PostId {
    /// `raw` as a post id of `platform`; anything else names no post there ([`PlatformError::NotFound`]).
    pub fn parse(platform: Platform, raw: &str) -> Result<Self, PlatformError> {
        let parsed = match platform {
            Platform::Facebook => FacebookPostId::parse(raw).map(Self::Facebook),
            Platform::Instagram => GraphId::parse(raw).map(Self::Instagram),
            Platform::Threads => GraphId::parse(raw).map(Self::Threads),
            Platform::Youtube => YoutubeVideoId::parse(raw).map(Self::Youtube),
            Platform::Tiktok => TiktokVideoId::parse(raw).map(Self::Tiktok),
            Platform::X => {
                return Err(PlatformError::NotFound("x has no performance reads".into()));
            }
        };
        parsed.map_err(InvalidId::not_found)
    }

    /// The id as the platform writes it.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Facebook(id) => id.as_str(),
            Self::Instagram(id) | Self::Threads(id) => id.as_str(),
            Self::Youtube(id) => id.as_str(),
            Self::Tiktok(id) => id.as_str(),
        }
    }

    /// The error for a post id of another platform than the account's (the HTTP layer parses
    /// with the account's platform, so this is a slip, and still names no post).
    pub(crate) fn mismatch(&self, platform: Platform) -> PlatformError {
        PlatformError::NotFound(format!(
            "{:?} is not a {} post id",
            self.as_str(),
            platform.as_str()
        ))
    }
}

pub use crate::domain::daily::{DailyMetrics, MetricFailure};

/// Fetches `metrics` in one request (`fetch` gets them comma-joined); when the platform refuses
/// that request (Meta and Google refuse a whole request for one invalid or retired metric), asks
/// for each metric alone so the others still come back. Token, rate-limit, permission and
/// transient failures still fail the whole read.
pub(crate) async fn each_metric<T, F, Fut>(
    metrics: &[&str],
    fetch: F,
) -> Result<(Vec<T>, Vec<MetricFailure>), PlatformError>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<T>, PlatformError>>,
{
    let error = match fetch(metrics.join(",")).await {
        Ok(items) => return Ok((items, Vec::new())),
        Err(PlatformError::Rejected(message)) => message,
        Err(other) => return Err(other),
    };
    if metrics.len() == 1 {
        let failure = MetricFailure {
            metric: metrics.join(","),
            error,
        };
        return Ok((Vec::new(), vec![failure]));
    }
    let mut items = Vec::new();
    let mut failures = Vec::new();
    for metric in metrics {
        match fetch((*metric).to_string()).await {
            Ok(found) => items.extend(found),
            Err(PlatformError::Rejected(error)) => failures.push(MetricFailure {
                metric: (*metric).to_string(),
                error,
            }),
            Err(other) => return Err(other),
        }
    }
    Ok((items, failures))
}

/// `(metric, null)` for every metric named in `failures` (one failure may name several,
/// comma-joined), to extend a `metrics`/`page_metrics` map with: a metric the platform would
/// not give is unknown, and a 0 in its place would read as a measured zero.
pub(crate) fn failed_as_null(failures: &[MetricFailure]) -> impl Iterator<Item = (String, Value)> {
    failures
        .iter()
        .flat_map(|f| f.metric.split(','))
        .map(|metric| (metric.to_string(), Value::Null))
}

/// `(metric, None)` for every metric named in `failures`, for typed metric maps (see
/// [`failed_as_null`]).
pub(crate) fn failed_as_none<T>(
    failures: &[MetricFailure],
) -> impl Iterator<Item = (String, Option<T>)> + '_ {
    failures
        .iter()
        .flat_map(|f| f.metric.split(','))
        .map(|metric| (metric.to_string(), None))
}

/// Whether `metric` is named in `failures`.
pub(crate) fn has_failed(failures: &[MetricFailure], metric: &str) -> bool {
    failures
        .iter()
        .any(|f| f.metric.split(',').any(|m| m == metric))
}

/// A Meta insights value: a number, or an object of numbers (a breakdown) to add up.
pub(crate) fn meta_value(value: &Value) -> u64 {
    match value {
        Value::Number(n) => n
            .as_u64()
            .unwrap_or_else(|| n.as_f64().unwrap_or(0.0) as u64),
        Value::Object(parts) => parts.values().map(meta_value).sum(),
        _ => 0,
    }
}

/// The day a daily Meta value is for: its `end_time` is the end of that day.
pub(crate) fn meta_day(end_time: &str) -> Option<NaiveDate> {
    chrono::DateTime::parse_from_str(end_time, "%Y-%m-%dT%H:%M:%S%z")
        .ok()
        .map(|t| (t - chrono::Duration::days(1)).date_naive())
}

/// Each metric's value on `date`, from daily series.
pub(crate) fn values_on(
    series: Vec<(String, Vec<(NaiveDate, u64)>)>,
    date: NaiveDate,
) -> BTreeMap<String, Value> {
    series
        .into_iter()
        .map(|(name, points)| {
            let value: u64 = points
                .iter()
                .filter(|(d, _)| *d == date)
                .map(|(_, v)| v)
                .sum();
            (name, Value::from(value))
        })
        .collect()
}

/// `since`/`until` (unix seconds, `until` exclusive) of the UTC day `date`, for post lists.
pub(crate) fn day_window(date: NaiveDate) -> (String, String) {
    let next = date.succ_opt().unwrap_or(date);
    (unix_day(date).to_string(), unix_day(next).to_string())
}

/// Unix seconds of midnight UTC starting `date`.
pub(crate) fn unix_day(date: NaiveDate) -> i64 {
    date.and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc().timestamp())
        .unwrap_or_default()
}

/// Whether the platform has performance insights here (x does not: see docs/platforms.md).
pub fn supported(platform: Platform) -> bool {
    !matches!(platform, Platform::X)
}

/// How many platform calls a query costs (youtube: quota units, one per call), charged to the
/// account's limiter before it runs. The per-metric fallback after a refused metric costs more;
/// it is rare and not charged.
pub fn estimated_calls(platform: Platform, query: &InsightsQuery) -> u32 {
    match (platform, query) {
        // The tiktok limiter models TikTok's limit on publish inits; its read API has its own,
        // far larger limits, so reads take nothing from the publishing budget.
        (Platform::Tiktok | Platform::X, _) => 0,
        // Page insights; posts with their insights expanded inline; one post.
        (Platform::Facebook, _) => 1,
        // The list, then one insights call per media or thread.
        (Platform::Instagram | Platform::Threads, InsightsQuery::Posts { limit }) => 1 + limit,
        (Platform::Instagram | Platform::Threads, InsightsQuery::Post { .. }) => 2,
        // Instagram: the series metrics, then the total-value ones (asked apart).
        (Platform::Instagram, InsightsQuery::Account { .. }) => 2,
        (Platform::Threads, InsightsQuery::Account { .. }) => 1,
        // Channel + report; channel + uploads (50 a page) + one report; video + report.
        (Platform::Youtube, InsightsQuery::Account { .. }) => 2,
        (Platform::Youtube, InsightsQuery::Posts { limit }) => 2 + limit.div_ceil(50),
        (Platform::Youtube, InsightsQuery::Post { .. }) => 2,
    }
}

/// Calls a daily collection of one account costs (instagram and threads add one per post of
/// that day, rarely more than a few).
pub fn estimated_daily_calls(platform: Platform) -> u32 {
    match platform {
        Platform::Tiktok | Platform::X => 0,
        Platform::Facebook => 2,
        Platform::Instagram => 4,
        Platform::Threads => 3,
        Platform::Youtube => 4,
    }
}

/// Runs a query against the account's platform; the result is the whole response body.
pub async fn query(
    ctx: &InsightsContext<'_>,
    query: &InsightsQuery,
) -> Result<bodies::InsightsBody, PlatformError> {
    match ctx.account.platform {
        Platform::Facebook => facebook::query(ctx, query).await,
        Platform::Instagram => instagram::query(ctx, query).await,
        Platform::Threads => threads::query(ctx, query).await,
        Platform::Youtube => youtube::query(ctx, query).await,
        Platform::Tiktok => tiktok::query(ctx, query).await,
        Platform::X => Err(PlatformError::Rejected(
            "performance metrics are not available for x accounts".into(),
        )),
    }
}

/// The account's numbers for one date.
pub async fn daily(
    ctx: &InsightsContext<'_>,
    date: NaiveDate,
) -> Result<DailyMetrics, PlatformError> {
    match ctx.account.platform {
        Platform::Facebook => facebook::daily(ctx, date).await,
        Platform::Instagram => instagram::daily(ctx, date).await,
        Platform::Threads => threads::daily(ctx, date).await,
        Platform::Youtube => youtube::daily(ctx, date).await,
        Platform::Tiktok => tiktok::daily(ctx, date).await,
        Platform::X => Err(PlatformError::Rejected(
            "performance metrics are not available for x accounts".into(),
        )),
    }
}

impl AccountSummary {
    /// The summary of a stored account.
    pub fn of(account: &entity::account::Model) -> Self {
        Self {
            account_id: account.id,
            platform: account.platform,
            name: account.display_name.clone(),
            username: account.username.clone(),
        }
    }
}
