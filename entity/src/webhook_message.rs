use sea_orm::entity::prelude::*;

/// One event for one endpoint: the exact body every attempt sends, and where its delivery
/// stands (`pending`, `delivered`, `failed`). `retry_index` is its place in the retry schedule
/// (a replay starts it over); `claim_token` and `lease_until` hold it for the instance
/// attempting it.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_messages")]
pub struct Model {
    /// `msg_` and 32 hex digits: the `webhook-id` of every attempt.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub endpoint_id: Uuid,
    pub user_id: Uuid,
    pub event_type: String,
    pub payload: String,
    pub occurred_at: DateTimeUtc,
    pub status: String,
    pub attempts: i32,
    pub retry_index: i32,
    pub next_attempt_at: Option<DateTimeUtc>,
    pub claim_token: Option<String>,
    pub lease_until: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
