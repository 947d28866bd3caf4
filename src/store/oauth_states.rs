//! Connections in progress (`/api/connect/{platform}` → platform → callback). A state is stored
//! hashed, bound to the user and the session that started it, and consumed by one conditional
//! update: a replayed, expired, forged or another session's state finds nothing.

use chrono::{DateTime, Utc};
use entity::oauth_state::{self, ConnectionKind};
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, Set, sea_query::Expr};
use uuid::Uuid;

use super::Store;

/// Who may finish a connection.
pub struct StateOwner<'a> {
    pub user_id: Uuid,
    pub session_hash: &'a str,
}

impl Store {
    pub async fn insert_oauth_state(
        &self,
        state_hash: &str,
        owner: StateOwner<'_>,
        kind: ConnectionKind,
        code_verifier_enc: String,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<(), DbErr> {
        oauth_state::Entity::insert(oauth_state::ActiveModel {
            state_hash: Set(state_hash.to_string()),
            user_id: Set(owner.user_id),
            session_hash: Set(owner.session_hash.to_string()),
            kind: Set(kind),
            code_verifier_enc: Set(code_verifier_enc),
            created_at: Set(now),
            expires_at: Set(expires_at),
            used_at: Set(None),
        })
        .exec_without_returning(&self.db)
        .await?;
        Ok(())
    }

    /// Uses the state once: only for its owner's session and connection kind, before it expires.
    pub async fn consume_oauth_state(
        &self,
        state_hash: &str,
        owner: StateOwner<'_>,
        kind: ConnectionKind,
        now: DateTime<Utc>,
    ) -> Result<Option<oauth_state::Model>, DbErr> {
        let result = oauth_state::Entity::update_many()
            .col_expr(oauth_state::Column::UsedAt, Expr::value(now))
            .filter(oauth_state::Column::StateHash.eq(state_hash))
            .filter(oauth_state::Column::UserId.eq(owner.user_id))
            .filter(oauth_state::Column::SessionHash.eq(owner.session_hash))
            .filter(oauth_state::Column::Kind.eq(kind))
            .filter(oauth_state::Column::UsedAt.is_null())
            .filter(oauth_state::Column::ExpiresAt.gt(now))
            .exec(&self.db)
            .await?;
        if result.rows_affected != 1 {
            return Ok(None);
        }
        oauth_state::Entity::find_by_id(state_hash.to_string())
            .one(&self.db)
            .await
    }
}
