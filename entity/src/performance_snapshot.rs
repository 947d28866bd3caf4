use sea_orm::entity::prelude::*;

use crate::platform::Platform;

/// One account's performance on one date (spec §2.7). Unique per `(account_id, snapshot_date)`.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "performance_snapshots")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub account_id: Uuid,
    pub user_id: Uuid,
    pub platform: Platform,
    /// `YYYY-MM-DD`, the Asia/Taipei date the numbers are for.
    pub snapshot_date: String,
    pub page_name: String,
    pub posts_count: i64,
    /// Views of the day's posts; `None` when the platform would not give them (the views
    /// metric is then in `failed_metrics`), never a 0 that would read as measured.
    pub total_post_views: Option<i64>,
    /// Metric name → value.
    pub page_metrics: Json,
    /// `[{metric, error}]`: metrics the platform would not give.
    pub failed_metrics: Json,
    /// `collecting` (claimed, in progress), `success`, `partial` (some metrics failed) or `failed`.
    pub status: String,
    pub error: Option<String>,
    /// Collections started for this date.
    pub attempts: i32,
    /// The instance collecting it, while `collecting`.
    pub claimed_by: Option<String>,
    /// Until when that claim holds; a `collecting` row past it belongs to a process that died.
    pub lease_until: Option<DateTimeUtc>,
    pub collected_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
