//! API keys. Only hashes are stored; lookups go by a short prefix and the hash is then compared
//! in constant time.

use chrono::{DateTime, Utc};
use entity::{api_key, user};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DbErr, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
    Set, sea_query::Expr,
};
use uuid::Uuid;

use super::Store;
use crate::crypto::{self, NewApiKey};

impl Store {
    pub async fn insert_api_key(
        &self,
        user_id: Uuid,
        name: &str,
        key: &NewApiKey,
        now: DateTime<Utc>,
    ) -> Result<api_key::Model, DbErr> {
        api_key::ActiveModel {
            id: Set(Uuid::new_v4()),
            user_id: Set(user_id),
            name: Set(name.to_string()),
            key_hash: Set(key.hash.clone()),
            lookup_prefix: Set(key.lookup_prefix.clone()),
            key_preview: Set(key.preview.clone()),
            created_at: Set(now),
            last_used_at: Set(None),
            is_active: Set(true),
            deleted_at: Set(None),
        }
        .insert(&self.db)
        .await
    }

    pub async fn count_active_keys(&self, user_id: Uuid) -> Result<u64, DbErr> {
        api_key::Entity::find()
            .filter(api_key::Column::UserId.eq(user_id))
            .filter(api_key::Column::IsActive.eq(true))
            .count(&self.db)
            .await
    }

    /// The user's active keys, oldest first.
    pub async fn list_active_keys(&self, user_id: Uuid) -> Result<Vec<api_key::Model>, DbErr> {
        api_key::Entity::find()
            .filter(api_key::Column::UserId.eq(user_id))
            .filter(api_key::Column::IsActive.eq(true))
            .order_by_asc(api_key::Column::CreatedAt)
            .all(&self.db)
            .await
    }

    /// The active key matching `presented` and its owner, in one joined query. Reads the
    /// database every time, so a deleted key fails on the very next request.
    pub async fn authenticate_api_key(
        &self,
        presented: &str,
    ) -> Result<Option<(api_key::Model, user::Model)>, DbErr> {
        let Some(prefix) = crypto::api_key_lookup_prefix(presented) else {
            return Ok(None);
        };
        let presented_hash = crypto::sha256_hex(presented);
        let candidates = api_key::Entity::find()
            .find_also_related(user::Entity)
            .filter(api_key::Column::LookupPrefix.eq(prefix))
            .filter(api_key::Column::IsActive.eq(true))
            .all(&self.db)
            .await?;
        let Some((key, user)) = candidates
            .into_iter()
            .find(|(key, _)| crypto::constant_time_eq(&key.key_hash, &presented_hash))
        else {
            return Ok(None);
        };
        match user {
            Some(user) => Ok(Some((key, user))),
            // The joined read gives no user both when there is none and when its row does not
            // load (a stored value that is no value, such as an unknown plan): read it on its
            // own, so the second is the error it is, not an "invalid key".
            None => Ok(user::Entity::find_by_id(key.user_id)
                .one(&self.db)
                .await?
                .map(|user| (key, user))),
        }
    }

    /// Deactivates one of the user's keys; false when it is unknown, foreign or already deleted.
    pub async fn deactivate_api_key(
        &self,
        user_id: Uuid,
        key_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let result = api_key::Entity::update_many()
            .col_expr(api_key::Column::IsActive, Expr::value(false))
            .col_expr(api_key::Column::DeletedAt, Expr::value(now))
            .filter(api_key::Column::Id.eq(key_id))
            .filter(api_key::Column::UserId.eq(user_id))
            .filter(api_key::Column::IsActive.eq(true))
            .exec(&self.db)
            .await?;
        Ok(result.rows_affected == 1)
    }

    /// Writes a batch of last-use times (each key keeps the latest).
    pub async fn record_keys_last_used(
        &self,
        batch: &[(Uuid, DateTime<Utc>)],
    ) -> Result<(), DbErr> {
        for (key_id, at) in batch {
            api_key::Entity::update_many()
                .col_expr(api_key::Column::LastUsedAt, Expr::value(*at))
                .filter(api_key::Column::Id.eq(*key_id))
                .exec(&self.db)
                .await?;
        }
        Ok(())
    }
}
