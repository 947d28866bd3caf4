//! Schema-only types: the wire strings' enums and the error bodies (spec §7).

use serde::Serialize;
use utoipa::ToSchema;

/// A platform name as it appears on the wire.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PlatformName {
    Facebook,
    Instagram,
    Threads,
    Tiktok,
    Youtube,
    X,
}

/// The kind of post published (history and publish receipts).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PostTypeName {
    Text,
    Photo,
    Album,
    Carousel,
    Video,
    Reels,
    Thread,
}

/// A publishing-history item's status.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubmissionStatusName {
    Publishing,
    Published,
    Failed,
    Unconfirmed,
}

/// A scheduled post's status.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScheduledStatusName {
    Scheduled,
    Publishing,
    Published,
    Failed,
    Cancelled,
}

/// A subscription plan.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanName {
    Free,
    Pro,
    Ultra,
}

/// The catalogue's error body (spec §7), the answer of every failed request except the Free-plan
/// quota refusal ([`QuotaExceededBody`]) and the performance endpoints ([`PerformanceErrorBody`]).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Always `false`.
    pub success: bool,
    /// The catalogue code, e.g. `InvalidApiKey`, `InvalidRequest`, `NotFound`.
    pub error: String,
    /// A human message.
    pub message: String,
    /// Extra detail, when there is some.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub details: Option<String>,
    /// Seconds to wait before retrying (429, 503).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, minimum = 0)]
    pub retry_after: Option<u64>,
    /// The history row to look at (`POST /v2/posts`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, format = Uuid, value_type = Option<String>)]
    pub post_submission_id: Option<uuid::Uuid>,
}

/// The Free plan's quota refusal (429 `UsageLimitExceeded` on `POST /v2/posts`).
#[derive(Debug, Serialize, ToSchema)]
pub struct QuotaExceededBody {
    /// Localized message (English or Traditional Chinese, by `Accept-Language`).
    pub error: String,
    pub error_en: String,
    pub current_usage: i64,
    pub limit: i64,
    pub plan: PlanName,
}

/// The performance endpoints' error body: `error` is the message text.
#[derive(Debug, Serialize, ToSchema)]
pub struct PerformanceErrorBody {
    /// Always `false`.
    pub success: bool,
    pub error: String,
    /// Seconds to wait before retrying (429, 503).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, minimum = 0)]
    pub retry_after: Option<u64>,
}
