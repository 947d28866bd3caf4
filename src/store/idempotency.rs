//! `Idempotency-Key`s of `POST /v2/posts` (see `idempotency_keys`): claiming a key for the
//! request that runs with it, taking over a claim whose request never answered, and keeping
//! the answer it got. The unique index on `(user_id, idempotency_key)` decides between
//! concurrent claims, on one instance or many.

use chrono::{DateTime, Utc};
use entity::idempotency_key;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DbErr, EntityTrait, QueryFilter, sea_query::OnConflict,
};
use uuid::Uuid;

use super::Store;

/// A key as a request claims it.
#[derive(Debug, Clone)]
pub struct NewIdempotencyKey {
    pub user_id: Uuid,
    pub key: String,
    pub fingerprint: String,
    pub post_submission_id: Uuid,
    pub locked_until: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyClaim {
    /// The key was free (or its row had expired): this row is the caller's claim.
    Claimed(idempotency_key::Model),
    /// Another request holds or held the key: its row, as it stands.
    Taken(idempotency_key::Model),
}

impl Store {
    /// Claims `new.key` for `new.user_id`, unless a live row holds it. A row past its
    /// `expires_at` (not yet swept) no longer holds its key: it is deleted and the claim tried
    /// again.
    pub async fn claim_idempotency_key(&self, new: NewIdempotencyKey) -> Result<KeyClaim, DbErr> {
        for _ in 0..2 {
            if let Some(claimed) = self.insert_idempotency_key(&new).await? {
                return Ok(KeyClaim::Claimed(claimed));
            }
            let Some(held) = idempotency_key::Entity::find()
                .filter(idempotency_key::Column::UserId.eq(new.user_id))
                .filter(idempotency_key::Column::IdempotencyKey.eq(new.key.as_str()))
                .one(&self.db)
                .await?
            else {
                // Swept between the insert and the read: try again.
                continue;
            };
            if held.expires_at > new.created_at {
                return Ok(KeyClaim::Taken(held));
            }
            idempotency_key::Entity::delete_many()
                .filter(idempotency_key::Column::Id.eq(held.id))
                .filter(idempotency_key::Column::ExpiresAt.lte(new.created_at))
                .exec(&self.db)
                .await?;
        }
        Err(DbErr::Custom(format!(
            "idempotency key of user {} could be neither claimed nor read",
            new.user_id
        )))
    }

    /// The inserted row, or `None` when the key is held.
    async fn insert_idempotency_key(
        &self,
        new: &NewIdempotencyKey,
    ) -> Result<Option<idempotency_key::Model>, DbErr> {
        let row = idempotency_key::Model {
            id: super::new_row_id(),
            user_id: new.user_id,
            idempotency_key: new.key.clone(),
            fingerprint: new.fingerprint.clone(),
            post_submission_id: new.post_submission_id,
            locked_until: Some(new.locked_until),
            response_status: None,
            response_body: None,
            created_at: new.created_at,
            expires_at: new.expires_at,
        };
        let inserted = idempotency_key::Entity::insert(idempotency_key::ActiveModel {
            id: Set(row.id),
            user_id: Set(row.user_id),
            idempotency_key: Set(row.idempotency_key.clone()),
            fingerprint: Set(row.fingerprint.clone()),
            post_submission_id: Set(row.post_submission_id),
            locked_until: Set(row.locked_until),
            response_status: Set(None),
            response_body: Set(None),
            created_at: Set(row.created_at),
            expires_at: Set(row.expires_at),
        })
        .on_conflict(
            OnConflict::columns([
                idempotency_key::Column::UserId,
                idempotency_key::Column::IdempotencyKey,
            ])
            .do_nothing()
            .to_owned(),
        )
        .exec_without_returning(&self.db)
        .await;
        match inserted {
            Ok(1) => Ok(Some(row)),
            Ok(_) | Err(DbErr::RecordNotInserted) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Takes over the claim of row `id`, whose request never answered, until `locked_until`:
    /// `true` if this call took it (still unanswered and its lease over at `now`), `false` if
    /// another request took it first or it was answered meanwhile.
    pub async fn take_over_idempotency_key(
        &self,
        id: Uuid,
        now: DateTime<Utc>,
        locked_until: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let updated = idempotency_key::Entity::update_many()
            .col_expr(
                idempotency_key::Column::LockedUntil,
                sea_orm::sea_query::Expr::value(Some(locked_until)),
            )
            .filter(idempotency_key::Column::Id.eq(id))
            .filter(idempotency_key::Column::ResponseStatus.is_null())
            .filter(idempotency_key::Column::LockedUntil.lte(now))
            .exec(&self.db)
            .await?;
        Ok(updated.rows_affected == 1)
    }

    /// Keeps the answer of the request that claimed row `id`, and ends its claim.
    pub async fn record_idempotent_response(
        &self,
        id: Uuid,
        status: u16,
        body: String,
    ) -> Result<(), DbErr> {
        idempotency_key::Entity::update_many()
            .col_expr(
                idempotency_key::Column::ResponseStatus,
                sea_orm::sea_query::Expr::value(Some(i32::from(status))),
            )
            .col_expr(
                idempotency_key::Column::ResponseBody,
                sea_orm::sea_query::Expr::value(Some(body)),
            )
            .col_expr(
                idempotency_key::Column::LockedUntil,
                sea_orm::sea_query::Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(idempotency_key::Column::Id.eq(id))
            .filter(idempotency_key::Column::ResponseStatus.is_null())
            .exec(&self.db)
            .await?;
        Ok(())
    }

    /// Gives the key of row `id` back, unanswered: its request did nothing a retry could
    /// repeat (it was not admitted).
    pub async fn release_idempotency_key(&self, id: Uuid) -> Result<(), DbErr> {
        idempotency_key::Entity::delete_many()
            .filter(idempotency_key::Column::Id.eq(id))
            .filter(idempotency_key::Column::ResponseStatus.is_null())
            .exec(&self.db)
            .await?;
        Ok(())
    }
}
