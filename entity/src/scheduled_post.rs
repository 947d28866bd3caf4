use sea_orm::entity::prelude::*;

use crate::platform::Platform;

/// A post to publish later (spec §2.4). `request` keeps the validated `post` object, so the
/// publish at due time runs exactly what was accepted.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "scheduled_posts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub user_id: Uuid,
    pub account_id: Uuid,
    pub platform: Platform,
    pub page_name: String,
    /// The `POST /v2/posts` body as accepted.
    pub request: Json,
    /// `{text, media_urls}`.
    pub content: Json,
    pub scheduled_at: DateTimeUtc,
    pub status: ScheduledStatus,
    /// Publish attempts started so far.
    pub attempts: i32,
    /// When the scheduler may next try it (the scheduled time, or later after a transient failure).
    pub next_attempt_at: DateTimeUtc,
    /// The instance that claimed it, while `publishing`.
    pub claimed_by: Option<String>,
    /// When the latest attempt was claimed (its dispatch time).
    pub claimed_at: Option<DateTimeUtc>,
    /// Until when the claim holds; a claim past its lease belongs to a process that died.
    pub lease_until: Option<DateTimeUtc>,
    /// The publishing-history row of the latest attempt.
    pub submission_id: Option<Uuid>,
    pub post_id: Option<String>,
    pub error_code: Option<String>,
    #[sea_orm(column_type = "Text", nullable)]
    pub error: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub published_at: Option<DateTimeUtc>,
}

/// Where a scheduled post is in its life (spec §3.1). Stored as its text; a stored value that
/// is none of these fails to load (an error, never a guess).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, serde::Serialize)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "snake_case")]
pub enum ScheduledStatus {
    /// Waiting for its time; the only status that can be cancelled.
    #[sea_orm(string_value = "scheduled")]
    Scheduled,
    /// Claimed by an instance's scheduler, being published.
    #[sea_orm(string_value = "publishing")]
    Publishing,
    #[sea_orm(string_value = "published")]
    Published,
    #[sea_orm(string_value = "failed")]
    Failed,
    #[sea_orm(string_value = "cancelled")]
    Cancelled,
}

impl ScheduledStatus {
    /// Every status, in the order of the spec's list.
    pub const ALL: [Self; 5] = [
        Self::Scheduled,
        Self::Publishing,
        Self::Published,
        Self::Failed,
        Self::Cancelled,
    ];

    /// The status as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::Publishing => "publishing",
            Self::Published => "published",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The status a client's filter names (`?status=`), if any.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == raw)
    }
}

impl std::fmt::Display for ScheduledStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
