//! OAuth/OIDC authorization requests in flight (state, PKCE verifier, nonce). Each is used once.

use chrono::{DateTime, Utc};
use entity::login_state;
use sea_orm::{ActiveModelTrait, ColumnTrait, DbErr, EntityTrait, QueryFilter};

use super::Store;

impl Store {
    pub async fn insert_login_state(&self, state: login_state::Model) -> Result<(), DbErr> {
        let active: login_state::ActiveModel = state.into();
        active.insert(&self.db).await.map(|_| ())
    }

    /// Consumes a state: returns it only if it existed, was unexpired, and this call deleted it
    /// (so a replayed callback, even a concurrent one, finds nothing).
    pub async fn take_login_state(
        &self,
        state: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<login_state::Model>, DbErr> {
        let Some(found) = login_state::Entity::find_by_id(state.to_string())
            .one(&self.db)
            .await?
        else {
            return Ok(None);
        };
        let deleted = login_state::Entity::delete_by_id(state.to_string())
            .exec(&self.db)
            .await?;
        if deleted.rows_affected != 1 || found.expires_at <= now {
            return Ok(None);
        }
        // Opportunistic clean-up of abandoned sign-ins.
        login_state::Entity::delete_many()
            .filter(login_state::Column::ExpiresAt.lt(now))
            .exec(&self.db)
            .await?;
        Ok(Some(found))
    }
}
