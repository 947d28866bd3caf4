//! API keys. Only hashes are stored; lookups go by a short prefix and the hash is then compared
//! in constant time.

use chrono::{DateTime, Utc};
use entity::{api_key, user};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DbErr, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
    Set, sea_query::Expr,
};
use uuid::Uuid;

use std::sync::Arc;

use super::Store;
use crate::{
    crypto::{self, NewApiKey},
    store::access::{CachedKey, Invalidation},
};

/// A key that authenticated, and its owner as the cache holds it.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub key_id: Uuid,
    pub user: Arc<user::Model>,
}

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

    /// Every key of these users, deleted ones included, oldest first (`service key list`).
    pub async fn keys_of_users(&self, user_ids: &[Uuid]) -> Result<Vec<api_key::Model>, DbErr> {
        api_key::Entity::find()
            .filter(api_key::Column::UserId.is_in(user_ids.iter().copied()))
            .order_by_asc(api_key::Column::CreatedAt)
            .order_by_asc(api_key::Column::Id)
            .all(&self.db)
            .await
    }

    pub async fn find_api_key(&self, key_id: Uuid) -> Result<Option<api_key::Model>, DbErr> {
        api_key::Entity::find_by_id(key_id).one(&self.db).await
    }

    /// The active key matching `presented` and its owner: from the access cache when both are
    /// there (no round trip), otherwise from the database, caching what was read. A deleted
    /// key still fails on the very next request: its deletion evicts it (see
    /// [`Self::deactivate_api_key`]). Unknown keys are not cached.
    pub async fn authenticate_api_key(
        &self,
        presented: &str,
    ) -> Result<Option<Authenticated>, DbErr> {
        let presented_hash = crypto::sha256_hex(presented);
        self.apply_other_processes_changes();
        let seen = self.access.generation();
        if let Some(key) = self.access.key(&presented_hash) {
            if let Some(user) = self.access.user(key.user_id) {
                // A disabled user is cached too (so refusing them costs no query either).
                return Ok(enabled(user).map(|user| Authenticated {
                    key_id: key.key_id,
                    user,
                }));
            }
            // The key is known, its user was evicted (a plan change): read only the user.
            let Some(user) = user::Entity::find_by_id(key.user_id).one(&self.db).await? else {
                return Ok(None);
            };
            let user = Arc::new(user);
            self.access.insert_user(seen, user.clone());
            return Ok(enabled(user).map(|user| Authenticated {
                key_id: key.key_id,
                user,
            }));
        }
        let Some((key, user)) = self.read_api_key(presented, &presented_hash).await? else {
            return Ok(None);
        };
        let user = Arc::new(user);
        let cached = CachedKey {
            key_id: key.id,
            user_id: user.id,
        };
        self.access.insert_key(seen, presented_hash, cached);
        self.access.insert_user(seen, user.clone());
        Ok(enabled(user).map(|user| Authenticated {
            key_id: key.id,
            user,
        }))
    }

    /// The active key matching `presented` (whose SHA-256 is `presented_hash`) and its owner,
    /// in one joined query.
    async fn read_api_key(
        &self,
        presented: &str,
        presented_hash: &str,
    ) -> Result<Option<(api_key::Model, user::Model)>, DbErr> {
        let Some(prefix) = crypto::api_key_lookup_prefix(presented) else {
            return Ok(None);
        };
        let candidates = api_key::Entity::find()
            .find_also_related(user::Entity)
            .filter(api_key::Column::LookupPrefix.eq(prefix))
            .filter(api_key::Column::IsActive.eq(true))
            .all(&self.db)
            .await?;
        let Some((key, user)) = candidates
            .into_iter()
            .find(|(key, _)| crypto::constant_time_eq(&key.key_hash, presented_hash))
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
    /// Evicts the key from the access cache (and tells the other instances) in the same
    /// operation.
    pub async fn deactivate_api_key(
        &self,
        user_id: Uuid,
        key_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let txn = self.begin_invalidating().await?;
        let result = api_key::Entity::update_many()
            .col_expr(api_key::Column::IsActive, Expr::value(false))
            .col_expr(api_key::Column::DeletedAt, Expr::value(now))
            .filter(api_key::Column::Id.eq(key_id))
            .filter(api_key::Column::UserId.eq(user_id))
            .filter(api_key::Column::IsActive.eq(true))
            .exec(&txn)
            .await?;
        self.commit_invalidating(txn, &[Invalidation::Key(key_id)])
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

/// The user, unless an operator disabled them (their keys are then refused like unknown ones).
fn enabled(user: Arc<user::Model>) -> Option<Arc<user::Model>> {
    user.disabled_at.is_none().then_some(user)
}
