//! The envelopes each JSON endpoint answers with.

use serde::Serialize;
use std::collections::BTreeMap;

use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

// The publish outcome is defined beside its use case, which needs nothing from HTTP.
pub use crate::services::publishing::{PostOutcome, PostPublished, PostScheduled};
// The performance bodies are built by the insights adapters, beside their platform calls.
pub use crate::insights::{
    bodies::{AccountBody, PostBody, PostsBody},
    catalogue::MetricsBody,
};
use crate::services::collection::AccountOutcome;
use crate::services::collection::backfill::{Backfilled, date_text};
use entity::platform::Platform;

use super::{
    resources::{Account, ApiKey, PostResource, ScheduledPost, Submission, TokenInfo, User},
    schema::{ErrorBody, QuotaExceededBody},
};

/// `{success: true, message}`: an action done (disconnect, sign-out).
#[derive(Debug, Serialize, ToSchema)]
pub struct Done {
    pub success: bool,
    pub message: String,
}

impl Done {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            success: true,
            message: message.into(),
        }
    }
}

/// `GET /health`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` or `degraded`.
    pub status: String,
    /// `ok` or `unreachable`.
    pub database: String,
}

/// `GET /healthz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Liveness {
    /// Always `ok`.
    pub status: String,
}

/// `GET /readyz`: each check is `ok` or `failed`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// `ready` (200) or `not_ready` (503).
    pub status: String,
    pub checks: ReadinessChecks,
}

/// The checks of `GET /readyz` (`ok` or `failed`); `scheduler` and `collector` only when enabled.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReadinessChecks {
    pub database: &'static str,
    pub migrations: &'static str,
    pub supervisor: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = String)]
    pub scheduler: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = String)]
    pub collector: Option<&'static str>,
    pub reconciler: &'static str,
    /// This instance's membership of the instances sharing the database is current (it
    /// renewed it within half of `cluster.takeover_secs`).
    pub membership: &'static str,
}

/// `GET /api/keys`.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyList {
    pub keys: Vec<ApiKey>,
}

/// `POST /api/keys`: the full key, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyCreated {
    pub success: bool,
    pub message: String,
    /// The full key (`service_` and 40 letters or digits); it is never shown again.
    #[schema(pattern = "^service_[A-Za-z0-9]{40}$")]
    pub api_key: String,
    pub key: ApiKey,
}

/// `DELETE /api/keys/{id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyDeleted {
    pub success: bool,
    pub message: String,
    pub id: Uuid,
}

/// `GET /api/accounts`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountList {
    pub accounts: Vec<Account>,
}

/// `GET /v2/accounts`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountListForKey {
    pub success: bool,
    pub accounts: Vec<Account>,
}

/// `GET /api/connect/{platform}/callback` (JSON clients).
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountsConnected {
    pub success: bool,
    pub message: String,
    pub accounts: Vec<Account>,
}

/// `POST /admin/accounts`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountCreated {
    pub success: bool,
    pub account: Account,
}

/// `POST /api/token/info`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenInfoResponse {
    pub success: bool,
    pub data: TokenInfo,
}

/// `GET /api/published-posts`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublishedPosts {
    pub posts: Vec<Submission>,
    pub total: u64,
    pub limit: u64,
    pub offset: u64,
}

/// `GET /v2/posts/{post_submission_id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PostFound {
    /// Always `true`.
    pub success: bool,
    pub post: PostResource,
}

/// `GET /v2/posts`: §2.5's list form, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct PostList {
    /// Always `true`.
    pub success: bool,
    pub posts: Vec<PostResource>,
    /// How many posts the filters pick in all.
    pub total: u64,
    pub limit: u64,
    pub offset: u64,
}

/// `GET /api/scheduled-posts`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduledPosts {
    pub success: bool,
    pub count: usize,
    pub posts: Vec<ScheduledPost>,
}

/// `DELETE /api/scheduled-posts/{id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduledPostCancelled {
    pub success: bool,
    pub message: String,
    #[serde(rename = "scheduledPostId")]
    pub scheduled_post_id: Uuid,
}

/// `GET /auth/me`, `PUT /admin/users/{id}/plan`.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserResponse {
    pub success: bool,
    pub user: User,
}

/// `GET /admin/users`.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserList {
    pub success: bool,
    pub users: Vec<User>,
}

/// `GET /api/subscription/status`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionStatus {
    pub success: bool,
    pub subscription: Subscription,
    pub api_usage: ApiUsage,
}

/// The plan part of `GET /api/subscription/status`; the paid fields only on paid plans.
#[derive(Debug, Serialize, ToSchema)]
pub struct Subscription {
    /// `active` (paid plans) or `free`.
    pub status: String,
    pub plan: &'static str,
    /// Paid plans only: `monthly` or `annual`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = String)]
    pub plan_type: Option<String>,
    /// Paid plans only (present, possibly `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = Option<String>, format = DateTime)]
    pub current_period_end: Option<Option<String>>,
}

/// This period's usage; `limit` and `remaining` are -1 when unlimited.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiUsage {
    pub current_usage: i64,
    pub limit: i64,
    pub remaining: i64,
    /// `YYYY-MM` of the period's start.
    pub current_month: String,
    #[schema(format = DateTime)]
    pub period_start: String,
    #[schema(format = DateTime)]
    pub period_end: String,
}

/// A 429: the catalogue body (`RateLimitExceeded`) or the Free plan's quota refusal.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum TooManyRequests {
    RateLimited(ErrorBody),
    QuotaExceeded(QuotaExceededBody),
}

/// The errors every performance endpoint can answer, all in the performance form: listed once
/// here and named by each endpoint's `responses(...)`.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // Only the document reads it: the handlers answer `ApiError`s.
pub enum PerformanceErrors {
    #[response(
        status = 400,
        description = "A bad parameter, or no metrics for this platform"
    )]
    BadRequest(PerformanceError),
    #[response(
        status = 401,
        description = "Missing or invalid API key; the account's token expired or was revoked"
    )]
    Unauthorized(PerformanceError),
    #[response(status = 403, description = "The platform refused (permissions)")]
    Forbidden(PerformanceError),
    #[response(
        status = 404,
        description = "No such account (`/post/{post_id}`: or no such post)"
    )]
    NotFound(PerformanceError),
    #[response(status = 429, description = "Rate limited (ours or the platform's)")]
    TooManyRequests(PerformanceError),
    #[response(status = 500, description = "The platform failed")]
    PlatformFailed(PerformanceError),
    #[response(status = 503, description = "Unavailable")]
    Unavailable(PerformanceError),
    #[response(status = 504, description = "The platform timed out")]
    TimedOut(PerformanceError),
}

/// A performance endpoint's error: `{success: false, error: <message>}`
/// ([`PerformanceErrorBody`](super::schema::PerformanceErrorBody)), or the catalogue body
/// (`error` the code, with `message`) for failures before the endpoint runs (authentication,
/// rate limits, malformed requests). One schema covers both: `message` is then present.
#[derive(Debug, Serialize, ToSchema)]
pub struct PerformanceError {
    /// Always `false`.
    pub success: bool,
    /// The message text (performance form) or the catalogue code.
    pub error: String,
    /// Catalogue form only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = String)]
    pub message: Option<String>,
    /// Seconds to wait before retrying (429, 503).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = u64)]
    pub retry_after: Option<u64>,
}

/// `GET /api/cron/collection-status`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CollectionStatus {
    pub success: bool,
    pub days: i64,
    pub total_snapshots: usize,
    pub unique_dates: usize,
    pub unique_accounts: usize,
    /// One per stored snapshot.
    pub history: Vec<Snapshot>,
}

/// A collected day of one account (`GET /api/cron/collection-status`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Snapshot {
    /// `YYYY-MM-DD`.
    pub snapshot_date_str: String,
    pub account_id: Uuid,
    pub platform: Platform,
    pub page_name: String,
    pub posts_count: i64,
    /// The platform's account-level figures, by metric name.
    #[schema(value_type = Object)]
    pub page_metrics: Value,
    /// The metrics the platform did not answer.
    #[schema(value_type = Vec<String>)]
    pub failed_metrics: Value,
    /// When it was collected, as an HTTP date (`Tue, 24 Nov 2026 08:00:00 GMT`).
    #[schema(required = true)]
    pub collected_at: Option<String>,
    /// `success`, `partial` or `failed`; `collecting` while a collection runs.
    pub status: String,
    #[schema(required = true)]
    pub error: Option<String>,
}

/// `GET /api/cron/check-missing`.
#[derive(Debug, Serialize, ToSchema)]
pub struct MissingDates {
    pub success: bool,
    pub account_id: Uuid,
    pub page_name: String,
    pub days_checked: i64,
    pub missing_dates_count: usize,
    /// `YYYY-MM-DD`, oldest first.
    #[schema(value_type = Vec<String>)]
    pub missing_dates: Vec<String>,
}

/// `POST /api/cron/backfill`.
#[derive(Debug, Serialize, ToSchema)]
pub struct BackfillRun {
    pub success: bool,
    pub message: String,
    pub results: BackfillResults,
}

/// The dates a backfill collected again.
#[derive(Debug, Serialize, ToSchema)]
pub struct BackfillResults {
    pub total_dates: usize,
    /// `success` and `partial` dates.
    pub success_count: usize,
    pub failed_count: usize,
    /// One per distinct date, in the request's order.
    pub dates: Vec<BackfilledDate>,
}

/// One date of a backfill.
#[derive(Debug, Serialize, ToSchema)]
pub struct BackfilledDate {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// `success`, `partial`, `failed` or `skipped`.
    #[schema(value_type = String)]
    pub status: &'static str,
    #[schema(required = true)]
    pub data: Option<BackfilledData>,
    #[schema(required = true)]
    pub error: Option<String>,
}

impl From<Backfilled> for BackfilledDate {
    fn from(Backfilled { date, outcome }: Backfilled) -> Self {
        Self {
            date: date_text(date),
            status: outcome.as_ref().map_or("failed", |o| o.status),
            data: outcome
                .as_ref()
                .and_then(|o| o.data.as_ref())
                .map(|data| BackfilledData {
                    page_metrics: data.page_metrics.clone(),
                    posts_count: data.posts_count,
                    total_post_impressions: data.total_post_views,
                }),
            error: outcome.as_ref().map_or_else(
                || Some("performance metrics are not available for this platform".to_string()),
                |o| o.error.clone(),
            ),
        }
    }
}

/// The figures a backfill collected for a date.
#[derive(Debug, Serialize, ToSchema)]
pub struct BackfilledData {
    /// Metric name → value; `null` for a metric the platform would not give (never 0).
    #[schema(value_type = BTreeMap<String, Option<f64>>)]
    pub page_metrics: BTreeMap<String, Value>,
    pub posts_count: u64,
    /// The views of that day's posts; `null` when one of them failed.
    #[schema(required = true)]
    pub total_post_impressions: Option<u64>,
}

/// `POST /api/cron/collect-performance`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CollectRun {
    pub success: bool,
    pub message: String,
    pub results: CollectResults,
}

/// What a collection did.
#[derive(Debug, Serialize, ToSchema)]
pub struct CollectResults {
    /// `YYYY-MM-DD`.
    pub target_date: String,
    pub total_accounts: usize,
    /// `success` and `partial` outcomes.
    pub success_count: usize,
    pub failed_count: usize,
    pub accounts: Vec<AccountOutcome>,
}
