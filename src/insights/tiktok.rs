//! tiktok insights (not built yet: see the README).

use chrono::NaiveDate;
use serde_json::Value;

use super::{DailyMetrics, InsightsContext, InsightsQuery};
use crate::platforms::PlatformError;

pub async fn query(
    _ctx: &InsightsContext<'_>,
    _query: &InsightsQuery,
) -> Result<Value, PlatformError> {
    Err(PlatformError::Rejected(
        "tiktok insights are not built yet".into(),
    ))
}

pub async fn daily(
    _ctx: &InsightsContext<'_>,
    _date: NaiveDate,
) -> Result<DailyMetrics, PlatformError> {
    Err(PlatformError::Rejected(
        "tiktok insights are not built yet".into(),
    ))
}
