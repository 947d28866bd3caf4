use sea_orm::entity::prelude::*;

/// An uploaded file: its owner, the token of its public URL (`/media/{id}/{token}.{ext}`), and
/// what was read from its bytes. The file itself is in the media store under its id. It is
/// deleted at `expires_at` unless a scheduled post still uses it; each use moves that on.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "media")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub user_id: Uuid,
    pub token: String,
    pub content_type: String,
    pub size: i64,
    /// Lowercase hex.
    pub sha256: String,
    pub width: Option<i32>,
    pub height: Option<i32>,
    pub created_at: DateTimeUtc,
    pub last_used_at: Option<DateTimeUtc>,
    pub expires_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
