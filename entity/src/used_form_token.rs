use sea_orm::entity::prelude::*;

/// A one-time form token that has been spent: a dashboard form submitted with it is not acted
/// on again (a double click, a browser's resubmission). Kept as long as such a token is valid.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "used_form_tokens")]
pub struct Model {
    /// The token's random part.
    #[sea_orm(primary_key, auto_increment = false)]
    pub token: String,
    pub user_id: Uuid,
    pub used_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
