//! Performance insights: what the `/api/performance/*` endpoints and the daily collector read
//! from each platform's own insights API (Graph insights, Threads insights, YouTube Analytics +
//! Data API, TikTok Display API).
//!
//! Each platform module turns a resolved [`InsightsQuery`] into the spec's response body (§4.4–
//! 4.7), and a date into the [`DailyMetrics`] of a snapshot (§2.7). Every metric is fetched so
//! that one failing or retired metric does not fail the call: the others still come back and
//! the failed one is named in `failed_metrics`.
//!
//! These functions are called by the account actor (never by handlers directly), so the calls
//! share the account's rate limiter with publishing.

pub mod catalogue;
pub mod facebook;
pub mod instagram;
pub mod threads;
pub mod tiktok;
pub mod youtube;

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use crate::{
    config::PlatformsConfig,
    platforms::{AccountCredentials, PlatformError},
    publish::plan::Platform,
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
    Post { post_id: String },
}

/// A metric the platform would not give, and why. Listed in responses as `failed_metrics`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetricFailure {
    pub metric: String,
    pub error: String,
}

/// One account's numbers for one date (a daily snapshot's content).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DailyMetrics {
    /// Metric name → value for that date (spec §2.8 account-level identifiers).
    pub page_metrics: BTreeMap<String, f64>,
    /// Posts the account published on that date.
    pub posts_count: u64,
    /// Sum of the views of those posts (`post_media_view`, reels/video views…).
    pub total_post_views: u64,
    pub failed_metrics: Vec<MetricFailure>,
}

/// Whether the platform has performance insights here (x does not: see the README).
pub fn supported(platform: Platform) -> bool {
    !matches!(platform, Platform::X)
}

/// How many platform calls a query costs at most, charged to the account's limiter before it
/// runs (youtube: quota units).
pub fn estimated_calls(platform: Platform, query: &InsightsQuery) -> u32 {
    match (platform, query) {
        // The tiktok limiter models TikTok's limit on publish inits; its read API has its own,
        // far larger limits, so reads take nothing from the publishing budget.
        (Platform::Tiktok, _) => 0,
        (_, InsightsQuery::Post { .. }) => 2,
        (_, InsightsQuery::Account { .. }) => 2,
        (_, InsightsQuery::Posts { limit }) => 2 + limit.div_ceil(25),
    }
}

/// Calls a daily collection of one account costs at most.
pub fn estimated_daily_calls(platform: Platform) -> u32 {
    match platform {
        Platform::Tiktok => 0,
        _ => 3,
    }
}

/// Runs a query against the account's platform; the result is the whole response body.
pub async fn query(
    ctx: &InsightsContext<'_>,
    query: &InsightsQuery,
) -> Result<Value, PlatformError> {
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
    /// The summary of a stored account (`None` for a platform this build does not know).
    pub fn of(account: &entity::account::Model) -> Option<Self> {
        Some(Self {
            account_id: account.id,
            platform: Platform::parse(&account.platform)?,
            name: account.display_name.clone(),
            username: account.username.clone(),
        })
    }
}
