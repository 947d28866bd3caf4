use sea_orm::entity::prelude::*;

/// An OAuth/OIDC authorization request in flight: CSRF `state`, PKCE verifier and nonce.
/// Stored in the database (not in memory) so any instance can finish a sign-in.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "login_states")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub state: String,
    /// What the flow is for (`login` for dashboard sign-in).
    pub purpose: String,
    pub pkce_verifier: String,
    pub nonce: String,
    pub return_to: Option<String>,
    pub created_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
