use sea_orm::entity::prelude::*;

/// Where a user wants webhook messages sent: the URL, the events it takes, and the signing
/// secret (sealed like account tokens). During a rotation the previous secret also signs until
/// `previous_secret_until`. An endpoint that answered `410 Gone`, or failed for days, is
/// disabled (`is_active` false, `disabled_reason` says why) until its user enables it again.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_endpoints")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub user_id: Uuid,
    pub url: String,
    /// The event names it takes, comma-separated, in their canonical order.
    pub events: String,
    pub description: Option<String>,
    pub secret_enc: String,
    pub previous_secret_enc: Option<String>,
    pub previous_secret_until: Option<DateTimeUtc>,
    pub is_active: bool,
    pub disabled_reason: Option<String>,
    /// When its deliveries started failing (the first failed attempt with no success since).
    pub failing_since: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
