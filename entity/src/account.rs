use sea_orm::entity::prelude::*;

use crate::platform::Platform;

/// A connected social account. Tokens are stored encrypted (AES-256-GCM) by the service.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "accounts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub user_id: Uuid,
    /// `facebook`, `instagram`, `threads`, `tiktok`, `youtube` or `x`.
    pub platform: Platform,
    /// The platform's id of the page / user / channel.
    pub external_id: String,
    /// Page name, or the username for platforms without a page name.
    pub display_name: String,
    pub username: Option<String>,
    /// instagram: `BUSINESS`, `CREATOR` or `MEDIA_CREATOR`.
    pub account_type: Option<String>,
    pub profile_picture_url: Option<String>,
    #[sea_orm(column_type = "Text")]
    pub access_token_enc: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub refresh_token_enc: Option<String>,
    pub token_expires_at: Option<DateTimeUtc>,
    pub data_access_expires_at: Option<DateTimeUtc>,
    pub is_valid: bool,
    /// Soft delete: a disconnected account keeps its history and tokens.
    pub disabled: bool,
    pub disabled_at: Option<DateTimeUtc>,
    #[sea_orm(column_type = "Text", nullable)]
    pub last_error: Option<String>,
    /// While set and in the future, one instance is refreshing this account's token.
    pub refresh_lease_until: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    /// How the account was connected: instagram through Facebook Login or Instagram Login
    /// (the host and token policy follow from it); every other platform has one route, stored
    /// as the default.
    pub login_route: LoginRoute,
    /// When the current access token was issued (connect or refresh); `None` on rows from
    /// before it was recorded. Instagram Login refuses to refresh a token younger than 24 h.
    pub token_issued_at: Option<DateTimeUtc>,
    /// The token expiry an `account.token_expiring` webhook event has been written for, so
    /// that each expiry is announced once.
    pub expiry_notice_for: Option<DateTimeUtc>,
    /// The same for the end of the data-access window.
    pub data_access_notice_for: Option<DateTimeUtc>,
}

/// The login an account was connected through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(32))")]
pub enum LoginRoute {
    /// Facebook Login (the Meta app): facebook pages, and instagram accounts linked to a page,
    /// on graph.facebook.com.
    #[default]
    #[sea_orm(string_value = "facebook_login")]
    FacebookLogin,
    /// Instagram API with Instagram Login: professional instagram accounts without a page, on
    /// graph.instagram.com.
    #[sea_orm(string_value = "instagram_login")]
    InstagramLogin,
}

impl LoginRoute {
    /// The `via` value of `GET /api/connect/instagram?via=`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FacebookLogin => "facebook_login",
            Self::InstagramLogin => "instagram_login",
        }
    }

    /// The route a `via` value names.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "facebook_login" => Some(Self::FacebookLogin),
            "instagram_login" => Some(Self::InstagramLogin),
            _ => None,
        }
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
