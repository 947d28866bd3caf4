//! Spent one-time form tokens (see `used_form_tokens`).

use chrono::{DateTime, Utc};
use entity::used_form_token;
use sea_orm::{DbErr, EntityTrait, sea_query::OnConflict};
use uuid::Uuid;

use super::Store;

/// How long a rendered form's token is valid, and so how long a spent one is kept.
pub const FORM_TOKEN_TTL: chrono::Duration = chrono::Duration::hours(24);

impl Store {
    /// Spends `token` for `user_id`: `true` if this call spent it, `false` if it was spent
    /// before (by this instance or another; the primary key decides, so two concurrent
    /// submissions cannot both win).
    pub async fn spend_form_token(
        &self,
        token: &str,
        user_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let row = used_form_token::ActiveModel {
            token: sea_orm::Set(token.to_string()),
            user_id: sea_orm::Set(user_id),
            used_at: sea_orm::Set(now),
        };
        let inserted = used_form_token::Entity::insert(row)
            .on_conflict(
                OnConflict::column(used_form_token::Column::Token)
                    .do_nothing()
                    .to_owned(),
            )
            .exec_without_returning(&self.db)
            .await;
        match inserted {
            Ok(rows) => Ok(rows == 1),
            Err(DbErr::RecordNotInserted) => Ok(false),
            Err(error) => Err(error),
        }
    }
}
