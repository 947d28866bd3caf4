//! Deleting what can no longer be used: sign-in states and connection states past their
//! expiry, dashboard sessions that expired or were revoked, spent form tokens older than
//! any valid one, idempotency keys past their 24 hours, and webhook messages ended 30 days ago
//! (with their attempts). Nothing reads these rows once
//! they are dead (each lookup checks the expiry itself), so the sweep only bounds the tables.
//!
//! Each statement deletes at most one batch, chosen by a sub-select with a `LIMIT` (both
//! backends accept `DELETE … WHERE key IN (SELECT key … LIMIT n)`), so a large backlog is
//! cleared in short transactions that never hold the SQLite write lock for long.

use chrono::{DateTime, Utc};
use entity::{
    idempotency_key, login_state, oauth_state, session, used_form_token, webhook_message,
};

use crate::domain::webhook::WEBHOOK_LOG_DAYS;
use sea_orm::{
    ColumnTrait, Condition, DbErr, EntityTrait, QueryFilter, QuerySelect, QueryTrait,
    sea_query::{Expr, ExprTrait, SelectStatement},
};

use super::Store;

/// Rows deleted by one sweep, per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepCounts {
    pub login_states: u64,
    pub oauth_states: u64,
    pub sessions: u64,
    pub form_tokens: u64,
    pub idempotency_keys: u64,
    pub webhook_messages: u64,
}

impl SweepCounts {
    pub fn total(self) -> u64 {
        self.login_states
            + self.oauth_states
            + self.sessions
            + self.form_tokens
            + self.idempotency_keys
            + self.webhook_messages
    }
}

/// How much one sweep may delete: `batch` rows per statement, at most `max_batches`
/// statements per table (the rest waits for the next sweep).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepBounds {
    pub batch: u64,
    pub max_batches: u32,
}

impl Store {
    /// Deletes the login states, connection states and idempotency keys that expired before
    /// `now`, the sessions that expired before `now` or were revoked, and the spent form tokens
    /// no valid token is as old as, within `bounds`.
    #[tracing::instrument(skip_all)]
    pub async fn sweep_expired(
        &self,
        now: DateTime<Utc>,
        bounds: SweepBounds,
    ) -> Result<SweepCounts, DbErr> {
        let login_states = self
            .delete_in_batches(bounds, || {
                let dead = login_state::Entity::find()
                    .select_only()
                    .column(login_state::Column::State)
                    .filter(login_state::Column::ExpiresAt.lt(now))
                    .limit(bounds.batch)
                    .into_query();
                login_state::Entity::delete_many()
                    .filter(login_state::Column::State.in_subquery(dead))
            })
            .await?;
        let oauth_states = self
            .delete_in_batches(bounds, || {
                let dead = oauth_state::Entity::find()
                    .select_only()
                    .column(oauth_state::Column::StateHash)
                    .filter(oauth_state::Column::ExpiresAt.lt(now))
                    .limit(bounds.batch)
                    .into_query();
                oauth_state::Entity::delete_many()
                    .filter(oauth_state::Column::StateHash.in_subquery(dead))
            })
            .await?;
        let sessions = self
            .delete_in_batches(bounds, || {
                let dead: SelectStatement = session::Entity::find()
                    .select_only()
                    .column(session::Column::Id)
                    .filter(
                        Condition::any()
                            .add(session::Column::ExpiresAt.lt(now))
                            .add(Expr::col(session::Column::RevokedAt).is_not_null()),
                    )
                    .limit(bounds.batch)
                    .into_query();
                session::Entity::delete_many().filter(session::Column::Id.in_subquery(dead))
            })
            .await?;
        // A spent form token older than any valid one cannot be presented again.
        let spent_before = now - super::FORM_TOKEN_TTL;
        let form_tokens = self
            .delete_in_batches(bounds, || {
                let dead = used_form_token::Entity::find()
                    .select_only()
                    .column(used_form_token::Column::Token)
                    .filter(used_form_token::Column::UsedAt.lt(spent_before))
                    .limit(bounds.batch)
                    .into_query();
                used_form_token::Entity::delete_many()
                    .filter(used_form_token::Column::Token.in_subquery(dead))
            })
            .await?;
        let idempotency_keys = self
            .delete_in_batches(bounds, || {
                let dead = idempotency_key::Entity::find()
                    .select_only()
                    .column(idempotency_key::Column::Id)
                    .filter(idempotency_key::Column::ExpiresAt.lte(now))
                    .limit(bounds.batch)
                    .into_query();
                idempotency_key::Entity::delete_many()
                    .filter(idempotency_key::Column::Id.in_subquery(dead))
            })
            .await?;
        // The delivery log keeps a message for a while after it ended; its attempts go with
        // it (their foreign key cascades).
        let log_before = now - chrono::Duration::days(WEBHOOK_LOG_DAYS);
        let webhook_messages = self
            .delete_in_batches(bounds, || {
                let dead = webhook_message::Entity::find()
                    .select_only()
                    .column(webhook_message::Column::Id)
                    .filter(webhook_message::Column::Status.ne(super::webhooks::PENDING))
                    .filter(webhook_message::Column::UpdatedAt.lt(log_before))
                    .limit(bounds.batch)
                    .into_query();
                webhook_message::Entity::delete_many()
                    .filter(webhook_message::Column::Id.in_subquery(dead))
            })
            .await?;
        Ok(SweepCounts {
            login_states,
            oauth_states,
            sessions,
            form_tokens,
            idempotency_keys,
            webhook_messages,
        })
    }

    /// Runs the delete `statement` builds until one deletes less than a batch, or
    /// `bounds.max_batches` ran; the rows deleted.
    async fn delete_in_batches<E: EntityTrait>(
        &self,
        bounds: SweepBounds,
        statement: impl Fn() -> sea_orm::DeleteMany<E>,
    ) -> Result<u64, DbErr> {
        let mut deleted = 0;
        for _ in 0..bounds.max_batches {
            let rows = statement().exec(&self.db).await?.rows_affected;
            deleted += rows;
            if rows < bounds.batch {
                break;
            }
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use chrono::Duration;

    use super::*;
    use crate::store::temp_sqlite_store;

    /// A backlog larger than one sweep is cleared over several, a batch at a time.
    #[tokio::test]
    async fn a_backlog_is_deleted_a_bounded_batch_at_a_time() {
        let (_dir, store) = temp_sqlite_store(2).await;
        let now = Utc::now();
        for n in 0..7 {
            store
                .insert_login_state(login_state::Model {
                    state: format!("s{n}"),
                    purpose: "login".into(),
                    pkce_verifier: "v".into(),
                    nonce: "n".into(),
                    return_to: None,
                    created_at: now - Duration::hours(1),
                    expires_at: now - Duration::minutes(1),
                })
                .await
                .unwrap();
        }
        let bounds = SweepBounds {
            batch: 2,
            max_batches: 2,
        };
        let first = store.sweep_expired(now, bounds).await.unwrap();
        assert_eq!(first.login_states, 4, "two batches of two");
        let second = store.sweep_expired(now, bounds).await.unwrap();
        assert_eq!(second.login_states, 3);
        let third = store.sweep_expired(now, bounds).await.unwrap();
        assert_eq!(third.total(), 0);
    }
}
