use sea_orm::entity::prelude::*;

/// A dashboard user, created on first sign-in through the identity provider.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "users")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub email: Option<String>,
    pub display_name: Option<String>,
    pub oidc_issuer: String,
    pub oidc_subject: String,
    /// `free`, `pro` or `ultra`.
    pub plan: String,
    /// `monthly` or `annual`; paid plans only.
    pub plan_type: Option<String>,
    pub current_period_end: Option<DateTimeUtc>,
    /// Granted the operator role by the `service user operator` CLI (the configuration's
    /// `auth.operator_emails` grants it too, without touching this column).
    pub is_operator: bool,
    /// Registration time; anchors the monthly usage period.
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
