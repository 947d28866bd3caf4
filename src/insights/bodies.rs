//! The typed bodies of `GET /api/performance/{account,posts,post/{post_id}}` (spec §4.5–4.7):
//! one struct per platform and endpoint, an untagged enum per endpoint across the platforms
//! (each platform's body has its own shape, as in [`super::catalogue::MetricsBody`]).
//!
//! A metric the platform would not give is `None` (`null`, and named in `failed_metrics`),
//! never 0: the `Option`s of the metric maps are always serialized.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::MetricFailure;
use crate::domain::plan::Platform;

/// What a performance query answers, by endpoint.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum InsightsBody {
    Account(AccountBody),
    Posts(PostsBody),
    Post(PostBody),
}

/// Metric name → value over the range; `null` for a metric the platform would not give.
pub type MetricValues = BTreeMap<String, Option<u64>>;

/// `since..=until` of an account answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct DateRange {
    #[schema(value_type = String, format = Date)]
    pub start: NaiveDate,
    #[schema(value_type = String, format = Date)]
    pub end: NaiveDate,
}

/// One day of a metric's series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct DatedValue {
    #[schema(value_type = String, format = Date)]
    pub date: NaiveDate,
    pub value: u64,
}

/// Metric name → its daily values (a failed metric has none, and no entry).
pub type TimeSeries = BTreeMap<String, Vec<DatedValue>>;

/// `GET /api/performance/account`: the account's figures over a date range. Each platform's
/// body has its own shape, so the variants are untagged.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum AccountBody {
    Facebook(FacebookAccountBody),
    Instagram(InstagramAccountBody),
    Threads(ThreadsAccountBody),
    Youtube(YoutubeAccountBody),
    Tiktok(TiktokAccountBody),
}

/// Facebook page insights over the range.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FacebookAccountBody {
    /// Always `true`.
    pub success: bool,
    pub account_id: Uuid,
    pub page_name: String,
    pub platform: Platform,
    /// The page's Graph id.
    pub page_id: String,
    pub data: FacebookAccountData,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FacebookAccountData {
    pub page_id: String,
    pub platform: Platform,
    /// Always `page`.
    pub data_type: &'static str,
    /// `day`, `week` or `days_28`.
    pub period: String,
    pub date_range: DateRange,
    /// A daily metric added up over the range; a rolling one (week, days_28) at its end.
    #[schema(value_type = BTreeMap<String, Option<u64>>)]
    pub metrics: MetricValues,
    #[schema(value_type = BTreeMap<String, Vec<DatedValue>>)]
    pub time_series: TimeSeries,
}

/// Instagram account insights over the range.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InstagramAccountBody {
    /// Always `true`.
    pub success: bool,
    pub account_id: Uuid,
    /// The username, or the account's name where there is none.
    pub ig_username: String,
    pub platform: Platform,
    /// The Instagram user id as stored (a string).
    pub ig_account_id: String,
    pub data: InstagramAccountData,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InstagramAccountData {
    pub ig_account_id: IgAccountId,
    pub platform: Platform,
    /// Always `account`.
    pub data_type: &'static str,
    /// `day`, `week` or `days_28`.
    pub period: String,
    pub date_range: DateRange,
    /// Flows added up over the range; follower counts and rolling periods at its end; the
    /// total-value metrics (`profile_views`, `website_clicks`) as Meta totals them.
    #[schema(value_type = BTreeMap<String, Option<u64>>)]
    pub metrics: MetricValues,
    /// The series metrics only (totals have no series).
    #[schema(value_type = BTreeMap<String, Vec<DatedValue>>)]
    pub time_series: TimeSeries,
}

/// The Instagram user id inside `data`: a number where it is one (the spec's example), else
/// the id as a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(untagged)]
pub enum IgAccountId {
    Number(u64),
    Text(String),
}

impl IgAccountId {
    pub fn of(id: &str) -> Self {
        id.parse::<u64>()
            .map(Self::Number)
            .unwrap_or_else(|_| Self::Text(id.to_string()))
    }
}

/// Threads account insights over the range: `{success, data, failed_metrics}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadsAccountBody {
    /// Always `true`.
    pub success: bool,
    pub data: ThreadsAccountData,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadsAccountData {
    pub account_id: Uuid,
    pub account_name: String,
    pub platform: Platform,
    /// Views over the range; `null` when Threads would not give them.
    #[schema(required = true)]
    pub views: Option<u64>,
    /// Each metric as Threads gave it.
    pub raw_data: Vec<ThreadsRawMetric>,
}

/// A Threads account metric as Threads answers it: a total over the range, or a daily series.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ThreadsRawMetric {
    Total(ThreadsTotalMetric),
    Series(ThreadsSeriesMetric),
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadsTotalMetric {
    #[schema(required = true)]
    pub name: Option<String>,
    #[schema(required = true)]
    pub description: Option<String>,
    pub total_value: TotalValue,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TotalValue {
    pub value: u64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadsSeriesMetric {
    #[schema(required = true)]
    pub name: Option<String>,
    #[schema(required = true)]
    pub description: Option<String>,
    /// `day`.
    #[schema(required = true)]
    pub period: Option<String>,
    pub values: Vec<MetaPoint>,
}

/// One value of a Meta daily series, as Meta writes it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MetaPoint {
    pub value: u64,
    /// The end of the day the value is for (Meta's own timestamp text).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub end_time: Option<String>,
}

/// YouTube channel figures over the range.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct YoutubeAccountBody {
    /// Always `true`.
    pub success: bool,
    pub data: YoutubeAccountData,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct YoutubeAccountData {
    pub account_id: Uuid,
    pub account_name: String,
    pub platform: Platform,
    pub channel_id: String,
    pub date_range: DateRange,
    /// YouTube Analytics' numbers as it gives them (some are fractional, e.g.
    /// `averageViewDuration`); 0 for a metric with no rows, `null` for a failed one.
    #[schema(value_type = BTreeMap<String, Option<f64>>)]
    pub metrics: BTreeMap<String, Option<serde_json::Number>>,
}

/// TikTok account counts as of now (TikTok keeps no history).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TiktokAccountBody {
    /// Always `true`.
    pub success: bool,
    pub data: TiktokAccountData,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TiktokAccountData {
    pub account_id: Uuid,
    pub account_name: String,
    pub platform: Platform,
    /// As TikTok gives it; `null` when it does not.
    #[schema(required = true)]
    pub username: Option<String>,
    /// When the counts were read (RFC 3339, seconds).
    pub as_of: String,
    #[schema(value_type = BTreeMap<String, Option<u64>>)]
    pub metrics: MetricValues,
}

/// YouTube's number cells: numbers as given, anything else unknown.
pub(crate) fn number_or_null(value: &Value) -> Option<serde_json::Number> {
    match value {
        Value::Number(n) => Some(n.clone()),
        _ => None,
    }
}

/// `GET /api/performance/posts`: the account's most recent posts with their figures, newest
/// first. Each platform's body has its own shape, so the variants are untagged.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum PostsBody {
    Facebook(FacebookPostsBody),
    Instagram(InstagramPostsBody),
    Threads(ThreadsPostsBody),
    Youtube(YoutubePostsBody),
    Tiktok(TiktokPostsBody),
}

/// A Facebook page post with its figures (spec §4.6).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FacebookPost {
    /// As Graph gives it (`{page}_{post}`).
    #[schema(required = true)]
    pub post_id: Option<String>,
    /// Empty when the post has no text.
    pub message: String,
    /// As Graph writes it (`2026-11-20T10:00:00+0000`).
    #[schema(required = true)]
    pub created_time: Option<String>,
    pub reactions: u64,
    pub comments: u64,
    /// 0 when Graph leaves `shares` out (it does when there are none).
    pub shares: u64,
    pub insights: FacebookPostInsights,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FacebookPostInsights {
    /// `post_media_view`; `null` when Meta would not give it.
    #[schema(value_type = BTreeMap<String, Option<u64>>)]
    pub metrics: MetricValues,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FacebookPostsBody {
    /// Always `true`.
    pub success: bool,
    pub account_id: Uuid,
    pub page_name: String,
    pub platform: Platform,
    pub total_posts: usize,
    pub posts: Vec<FacebookPost>,
    pub failed_metrics: Vec<MetricFailure>,
}

/// An Instagram media with its figures.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InstagramMedia {
    pub media_id: String,
    /// Empty when the media has no caption.
    pub caption: String,
    /// `IMAGE`, `VIDEO`, `CAROUSEL_ALBUM` or `REELS`.
    pub media_type: String,
    #[schema(required = true)]
    pub permalink: Option<String>,
    /// As Graph writes it.
    #[schema(required = true)]
    pub timestamp: Option<String>,
    pub like_count: u64,
    pub comments_count: u64,
    pub insights: InstagramMediaInsights,
}

/// A media's lifetime metrics for its type (reels have more).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InstagramMediaInsights {
    pub platform: Platform,
    /// Always `media`.
    pub data_type: &'static str,
    /// `null` for a metric Meta would not give, or answered "unavailable" (an empty `values`).
    #[schema(value_type = BTreeMap<String, Option<u64>>)]
    pub metrics: MetricValues,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InstagramPostsBody {
    /// Always `true`.
    pub success: bool,
    pub account_id: Uuid,
    pub ig_username: String,
    pub platform: Platform,
    pub data: InstagramMediaList,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InstagramMediaList {
    pub total: usize,
    pub media: Vec<InstagramMedia>,
}

/// A thread with its figures.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadsPost {
    pub id: String,
    /// Empty when the thread has no text.
    pub text: String,
    #[schema(required = true)]
    pub timestamp: Option<String>,
    /// As Threads writes it (`TEXT_POST`, `IMAGE`…).
    #[schema(required = true)]
    pub media_type: Option<String>,
    #[schema(required = true)]
    pub permalink: Option<String>,
    /// Always `false`: the threads read here are the user's own, never replies.
    pub is_reply: bool,
    /// Metric → value; `null` when Threads would not give it.
    #[schema(value_type = BTreeMap<String, Option<u64>>)]
    pub insights: MetricValues,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadsPostsBody {
    /// Always `true`.
    pub success: bool,
    pub data: ThreadsPostsData,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadsPostsData {
    pub account_id: Uuid,
    pub account_name: String,
    pub platform: Platform,
    pub count: usize,
    pub threads: Vec<ThreadsPost>,
}

/// A YouTube video with its lifetime figures.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct YoutubeVideo {
    pub video_id: String,
    pub title: String,
    /// RFC 3339 as YouTube writes it; empty when it gives none.
    pub published_at: String,
    /// Empty when there is none.
    pub thumbnail: String,
    /// As YouTube Analytics gives them; 0 when nothing was measured, `null` for a failed one.
    #[schema(value_type = BTreeMap<String, Option<f64>>)]
    pub metrics: BTreeMap<String, Option<serde_json::Number>>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct YoutubePostsBody {
    /// Always `true`.
    pub success: bool,
    pub data: YoutubePostsData,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct YoutubePostsData {
    pub account_id: Uuid,
    pub account_name: String,
    pub platform: Platform,
    pub count: usize,
    pub videos: Vec<YoutubeVideo>,
}

/// A TikTok video with its figures as TikTok gives them.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TiktokVideo {
    #[schema(required = true)]
    pub video_id: Option<String>,
    pub title: String,
    /// RFC 3339 (seconds) from TikTok's `create_time`.
    #[schema(required = true)]
    pub published_at: Option<String>,
    /// TikTok's `cover_image_url`.
    #[schema(required = true)]
    pub thumbnail: Option<String>,
    #[schema(required = true)]
    pub share_url: Option<String>,
    /// `null` for a metric TikTok left out.
    #[schema(value_type = BTreeMap<String, Option<u64>>)]
    pub metrics: MetricValues,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TiktokPostsBody {
    /// Always `true`.
    pub success: bool,
    pub data: TiktokPostsData,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TiktokPostsData {
    pub account_id: Uuid,
    pub account_name: String,
    pub platform: Platform,
    pub count: usize,
    pub videos: Vec<TiktokVideo>,
}

/// A JSON string as text, `None` for anything else (absent, null).
pub(crate) fn text(value: &Value) -> Option<String> {
    value.as_str().map(str::to_string)
}

/// `GET /api/performance/post/{post_id}`: one post's figures. Each platform's body has its own
/// shape, so the variants are untagged.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum PostBody {
    Facebook(FacebookPostBody),
    Instagram(InstagramPostBody),
    Threads(ThreadsPostBody),
    Youtube(YoutubePostBody),
    Tiktok(TiktokPostBody),
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FacebookPostBody {
    /// Always `true`.
    pub success: bool,
    pub account_id: Uuid,
    pub page_name: String,
    pub platform: Platform,
    pub post: FacebookPost,
    pub failed_metrics: Vec<MetricFailure>,
}

/// An Instagram media's figures: `data` is its insights (as in a posts item).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InstagramPostBody {
    /// Always `true`.
    pub success: bool,
    pub account_id: Uuid,
    pub ig_username: String,
    pub platform: Platform,
    pub data: InstagramMediaInsights,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadsPostBody {
    /// Always `true`.
    pub success: bool,
    pub data: ThreadsPostData,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadsPostData {
    pub account_id: Uuid,
    pub account_name: String,
    pub platform: Platform,
    pub thread: ThreadsPost,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct YoutubePostBody {
    /// Always `true`.
    pub success: bool,
    pub data: YoutubePostData,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct YoutubePostData {
    pub account_id: Uuid,
    pub account_name: String,
    pub platform: Platform,
    pub video: YoutubeVideo,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TiktokPostBody {
    /// Always `true`.
    pub success: bool,
    pub data: TiktokPostData,
    pub failed_metrics: Vec<MetricFailure>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TiktokPostData {
    pub account_id: Uuid,
    pub account_name: String,
    pub platform: Platform,
    pub video: TiktokVideo,
}
