//! Dashboard sessions, stored by the SHA-256 of their token so a database leak yields no
//! usable cookie. Revocation is server-side: a revoked row fails the next request.

use chrono::{DateTime, Utc};
use entity::{session, user};
use sea_orm::{ActiveModelTrait, ColumnTrait, DbErr, EntityTrait, QueryFilter, Set};
use uuid::Uuid;

use super::Store;

impl Store {
    pub async fn create_session(
        &self,
        user_id: Uuid,
        token_hash: String,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<session::Model, DbErr> {
        session::ActiveModel {
            id: Set(Uuid::new_v4()),
            token_hash: Set(token_hash),
            user_id: Set(user_id),
            created_at: Set(now),
            expires_at: Set(expires_at),
            revoked_at: Set(None),
        }
        .insert(&self.db)
        .await
    }

    /// The live session with this token hash and its user; `None` when unknown, revoked or
    /// expired, or when its user is disabled.
    pub async fn find_live_session(
        &self,
        token_hash: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<(session::Model, user::Model)>, DbErr> {
        let Some(session) = session::Entity::find()
            .filter(session::Column::TokenHash.eq(token_hash))
            .one(&self.db)
            .await?
        else {
            return Ok(None);
        };
        if session.revoked_at.is_some() || session.expires_at <= now {
            return Ok(None);
        }
        let user = self.find_user(session.user_id).await?;
        Ok(user
            .filter(|user| user.disabled_at.is_none())
            .map(|user| (session, user)))
    }

    /// Revokes a session; true when a live session was revoked.
    pub async fn revoke_session(
        &self,
        token_hash: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let result = session::Entity::update_many()
            .col_expr(
                session::Column::RevokedAt,
                sea_orm::sea_query::Expr::value(now),
            )
            .filter(session::Column::TokenHash.eq(token_hash))
            .filter(session::Column::RevokedAt.is_null())
            .exec(&self.db)
            .await?;
        Ok(result.rows_affected == 1)
    }
}
