use sea_orm::entity::prelude::*;

/// A dashboard user, created on first sign-in through the identity provider.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "users")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub email: Option<String>,
    /// The identity provider asserted `email_verified` for `email` at the last sign-in.
    pub email_verified: bool,
    pub display_name: Option<String>,
    pub oidc_issuer: String,
    pub oidc_subject: String,
    pub plan: Plan,
    /// `monthly` or `annual`; paid plans only.
    pub plan_type: Option<String>,
    pub current_period_end: Option<DateTimeUtc>,
    /// Granted the operator role by the `service user operator` CLI (the configuration's
    /// `auth.operator_emails` grants it too, to a verified address, without touching this
    /// column).
    pub is_operator: bool,
    /// When an operator disabled the user (`service user disable`); while set, the user's
    /// sessions and API keys are refused and sign-in is too.
    pub disabled_at: Option<DateTimeUtc>,
    /// Registration time; anchors the monthly usage period.
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

/// A subscription plan.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, serde::Serialize)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "snake_case")]
pub enum Plan {
    #[sea_orm(string_value = "free")]
    Free,
    #[sea_orm(string_value = "pro")]
    Pro,
    /// Pro plus the `x` platform.
    #[sea_orm(string_value = "ultra")]
    Ultra,
}

impl Plan {
    /// The plan a client or an operator names, if any.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "free" => Some(Self::Free),
            "pro" => Some(Self::Pro),
            "ultra" => Some(Self::Ultra),
            _ => None,
        }
    }

    /// The plan as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Free => "free",
            Self::Pro => "pro",
            Self::Ultra => "ultra",
        }
    }

    /// Monthly API-call allowance; `None` means unlimited.
    pub fn monthly_limit(self, free_limit: i64) -> Option<i64> {
        match self {
            Self::Free => Some(free_limit),
            Self::Pro | Self::Ultra => None,
        }
    }

    /// `subscription.status` of spec §2.6.
    pub fn subscription_status(self) -> &'static str {
        match self {
            Self::Free => "free",
            Self::Pro | Self::Ultra => "active",
        }
    }

    pub fn is_paid(self) -> bool {
        !matches!(self, Self::Free)
    }
}

impl std::fmt::Display for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
