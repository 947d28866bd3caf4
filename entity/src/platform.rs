use sea_orm::entity::prelude::*;

/// The six platforms. Stored as its text in every table that names one (accounts, OAuth states,
/// snapshots, the history, scheduled posts); a stored value that is none of these fails to load
/// (an error, never a guess).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    #[sea_orm(string_value = "facebook")]
    Facebook,
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
}

impl Platform {
    pub const ALL: [Platform; 6] = [
        Platform::Facebook,
        Platform::Instagram,
        Platform::Threads,
        Platform::Tiktok,
        Platform::Youtube,
        Platform::X,
    ];

    /// The platform a client names (`content.platform`, `?platform=`, a connect path), if any.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == value)
    }

    /// The platform as the API writes it (and as it is stored).
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Facebook => "facebook",
            Platform::Instagram => "instagram",
            Platform::Threads => "threads",
            Platform::Tiktok => "tiktok",
            Platform::Youtube => "youtube",
            Platform::X => "x",
        }
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::ActiveEnum;

    #[test]
    fn the_stored_text_is_the_api_text() {
        for platform in Platform::ALL {
            assert_eq!(platform.to_value(), platform.as_str());
            assert_eq!(
                Platform::try_from_value(&platform.as_str().to_string()).ok(),
                Some(platform)
            );
            assert_eq!(Platform::parse(platform.as_str()), Some(platform));
        }
    }

    #[test]
    fn an_unknown_stored_text_is_an_error() {
        assert!(Platform::try_from_value(&"myspace".to_string()).is_err());
        assert!(Platform::try_from_value(&"Facebook".to_string()).is_err());
    }
}
