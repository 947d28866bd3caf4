use sea_orm::entity::prelude::*;

/// One delivery attempt of a message: when, the HTTP status (none when no answer came), the
/// first KB of the answer, how long it took, and what went wrong when no answer came.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_attempts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub message_id: String,
    pub attempted_at: DateTimeUtc,
    pub http_status: Option<i32>,
    pub response: Option<String>,
    pub duration_ms: i32,
    pub error: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
