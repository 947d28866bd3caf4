use sea_orm::entity::prelude::*;

/// A post to publish later (spec §2.4). `request` keeps the validated `post` object, so the
/// publish at due time runs exactly what was accepted.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "scheduled_posts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub user_id: Uuid,
    pub account_id: Uuid,
    pub platform: String,
    pub page_name: String,
    /// The `POST /v2/posts` body as accepted.
    pub request: Json,
    /// `{text, media_urls}`.
    pub content: Json,
    pub scheduled_at: DateTimeUtc,
    /// `scheduled`, `publishing`, `published`, `failed` or `cancelled`.
    pub status: String,
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

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
