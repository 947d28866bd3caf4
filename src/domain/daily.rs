//! A day's numbers for one account: what the collector writes as a daily snapshot and what the
//! performance reads answer. The insights adapters produce them; the store keeps them.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// A metric the platform would not give, and why. Listed in responses as `failed_metrics`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct MetricFailure {
    pub metric: String,
    pub error: String,
}

/// One account's numbers for one date (a daily snapshot's content).
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct DailyMetrics {
    /// Metric name → value (a JSON number) for that date (spec §2.8 account-level identifiers);
    /// `null` for a metric the platform would not give (never 0).
    #[schema(value_type = BTreeMap<String, Option<f64>>)]
    pub page_metrics: BTreeMap<String, Value>,
    /// Posts the account published on that date.
    pub posts_count: u64,
    /// Sum of the views of those posts (`post_media_view`, reels/video views…); `None` when a
    /// post's views failed (the metric is in `failed_metrics`): a partial sum or a 0 would read
    /// as measured.
    #[schema(required = true)]
    pub total_post_views: Option<u64>,
    pub failed_metrics: Vec<MetricFailure>,
}
