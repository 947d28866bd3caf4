use sea_orm::entity::prelude::*;

use crate::platform::Platform;

/// A connection in progress: the `state` sent to the platform (stored hashed), who started it
/// and from which session, and the PKCE verifier (encrypted). Usable once, until `expires_at`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_states")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub state_hash: String,
    pub user_id: Uuid,
    pub session_hash: String,
    /// What is being connected. The column is named `platform` (it held only platforms until
    /// Instagram Login came); it holds the platform, or `instagram_login`.
    #[sea_orm(column_name = "platform")]
    pub kind: ConnectionKind,
    #[sea_orm(column_type = "Text")]
    pub code_verifier_enc: String,
    pub created_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
    pub used_at: Option<DateTimeUtc>,
}

/// What a connection in progress connects: a platform, or instagram through Instagram Login
/// (so that its callback finishes that flow and not Facebook Login's). Stored as its text; a
/// stored value that is none of these fails to load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
pub enum ConnectionKind {
    #[sea_orm(string_value = "facebook")]
    Facebook,
    /// Instagram through Facebook Login.
    #[sea_orm(string_value = "instagram")]
    Instagram,
    #[sea_orm(string_value = "threads")]
    Threads,
    #[sea_orm(string_value = "tiktok")]
    Tiktok,
    #[sea_orm(string_value = "youtube")]
    Youtube,
    #[sea_orm(string_value = "x")]
    X,
    /// Instagram through Instagram Login.
    #[sea_orm(string_value = "instagram_login")]
    InstagramLogin,
}

impl ConnectionKind {
    /// The platform being connected.
    pub fn platform(self) -> Platform {
        match self {
            Self::Facebook => Platform::Facebook,
            Self::Instagram | Self::InstagramLogin => Platform::Instagram,
            Self::Threads => Platform::Threads,
            Self::Tiktok => Platform::Tiktok,
            Self::Youtube => Platform::Youtube,
            Self::X => Platform::X,
        }
    }
}

/// A platform connected through its only (or, for instagram, its default) login.
impl From<Platform> for ConnectionKind {
    fn from(platform: Platform) -> Self {
        match platform {
            Platform::Facebook => Self::Facebook,
            Platform::Instagram => Self::Instagram,
            Platform::Threads => Self::Threads,
            Platform::Tiktok => Self::Tiktok,
            Platform::Youtube => Self::Youtube,
            Platform::X => Self::X,
        }
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::ActiveEnum;

    /// States started before the type existed hold these texts; each reads as what it named.
    #[test]
    fn stored_connection_kinds_read_as_what_they_named() {
        for platform in Platform::ALL {
            let stored = platform.as_str().to_string();
            let kind = ConnectionKind::try_from_value(&stored).ok();
            assert_eq!(kind.map(ConnectionKind::platform), Some(platform));
            assert_eq!(ConnectionKind::from(platform).to_value(), stored);
        }
        let login = ConnectionKind::try_from_value(&"instagram_login".to_string()).ok();
        assert_eq!(login, Some(ConnectionKind::InstagramLogin));
        assert_eq!(
            ConnectionKind::InstagramLogin.platform(),
            Platform::Instagram
        );
        assert!(ConnectionKind::try_from_value(&"myspace".to_string()).is_err());
    }
}
