use sea_orm::entity::prelude::*;

/// The outbox: one event, written in the same transaction as the state change it reports, and
/// removed when it is fanned out into messages. A post event copies the post's changing columns
/// as they were at the change (the rest of the post resource does not change).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_events")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub user_id: Uuid,
    /// `post` for a publish's outcome (its type follows from `status`), otherwise the event's
    /// own name (`account.invalid`, `account.token_expiring`).
    pub event_type: String,
    /// The history row (post events) or the account (account events).
    pub subject_id: Uuid,
    pub status: Option<String>,
    pub post_id: Option<String>,
    pub result: Option<String>,
    pub published_at: Option<DateTimeUtc>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub reason: Option<String>,
    pub expires_at: Option<DateTimeUtc>,
    pub occurred_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
