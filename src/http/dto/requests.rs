//! Request bodies and query strings. Numbers and dates some endpoints read as text are declared
//! as strings here because that is what the handler accepts (its own check gives the precise
//! message); the document says which format is expected.

use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// `POST /api/keys`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateKeyRequest {
    /// 1 to 100 characters (trimmed). Missing: `MissingParameter`.
    #[schema(required = true)]
    pub name: Option<String>,
}

/// `POST /api/token/info`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TokenInfoRequest {
    /// The account's id. Missing: `MissingParameter`; unknown: `AccountNotFound`.
    #[schema(required = true, format = Uuid)]
    pub account_id: Option<String>,
}

/// `GET /api/published-posts`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// Page size, at least 1 (default 20; above 100 is clamped to 100).
    pub limit: Option<i64>,
    /// Items to skip, at least 0 (default 0).
    pub offset: Option<i64>,
}

/// `GET /api/scheduled-posts`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScheduledListQuery {
    /// `scheduled`, `publishing`, `published`, `failed` or `cancelled` (empty: all).
    pub status: Option<String>,
    /// A platform name (empty: all).
    pub platform: Option<String>,
    /// At least 1 (default 50; above 100 is clamped to 100).
    pub limit: Option<i64>,
}

/// `GET /admin/users`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsersQuery {
    /// Part of an email address.
    pub email: Option<String>,
}

/// The performance endpoints' query (`/api/performance/*`).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PerformanceQuery {
    /// The account (required unless `platform` picks the caller's only account of it).
    pub account_id: Option<String>,
    /// A platform name: the caller's account on it.
    pub platform: Option<String>,
    /// `/account` only: `day`, `week`, `days_28` or `lifetime` where the platform has them.
    pub period: Option<String>,
    /// `/account` only: first date, `YYYY-MM-DD`.
    pub since: Option<String>,
    /// `/account` only: last date, `YYYY-MM-DD`.
    pub until: Option<String>,
    /// `/posts` only: how many posts (a positive integer).
    pub limit: Option<String>,
}

/// `GET /api/cron/collection-status`, `GET /api/cron/check-missing`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DaysQuery {
    /// How many days back from yesterday (a positive integer).
    pub days: Option<String>,
    /// The account (check-missing: required).
    pub account_id: Option<String>,
}

/// `POST /api/cron/backfill`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct BackfillBody {
    #[schema(required = true)]
    pub account_id: Option<String>,
    /// Dates (`YYYY-MM-DD`) to collect again.
    #[schema(required = true)]
    pub missing_dates: Option<Vec<String>>,
}

/// `POST /api/cron/collect-performance`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CollectQuery {
    /// The day to collect, `YYYY-MM-DD` (default yesterday).
    pub date: Option<String>,
    /// Only this account (default: every account in scope).
    pub account_id: Option<String>,
}

// `POST /v2/posts`: its loose wire types live beside their conversion into the domain's
// `PostRequest` (the scheduler reads stored requests through the same path).
pub use crate::publish::validate::{
    CreatePost, CreatePostContent, CreatePostRequest, CreatePostTarget, TextOrTexts, TiktokOptions,
};
