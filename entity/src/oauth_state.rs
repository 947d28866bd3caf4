use sea_orm::entity::prelude::*;

/// A connection in progress: the `state` sent to the platform (stored hashed), who started it
/// and from which session, and the PKCE verifier (encrypted). Usable once, until `expires_at`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_states")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub state_hash: String,
    pub user_id: Uuid,
    pub session_hash: String,
    pub platform: String,
    #[sea_orm(column_type = "Text")]
    pub code_verifier_enc: String,
    pub created_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
    pub used_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
