//! Disabling users and ending their sessions (the `service user disable|enable|sessions
//! revoke` commands). The refusal itself is where credentials are checked: a disabled user's
//! sessions ([`Store::find_live_session`]) and API keys ([`Store::authenticate_api_key`]) find
//! nothing, and sign-in asks [`Store::sign_in_refused`].

use chrono::{DateTime, Utc};
use entity::{session, user};
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, sea_query::Expr};
use uuid::Uuid;

use super::Store;
use crate::store::access::Invalidation;

impl Store {
    /// Disables (`true`) or enables every user with e-mail `email`, in one transaction that
    /// also, when disabling, revokes their live sessions. Evicts the users from the access
    /// cache here and tells the other instances (PostgreSQL: in the transaction; a SQLite file:
    /// see [`Self::tell_other_processes`]). The users changed, as they are now.
    pub async fn set_users_disabled(
        &self,
        email: &str,
        disabled: bool,
        now: DateTime<Utc>,
    ) -> Result<Vec<user::Model>, DbErr> {
        // The write comes first: a transaction that read first and then wrote would, on
        // SQLite, fail at once ("database is locked") if another connection wrote in between.
        let txn = self.begin_invalidating().await?;
        let users = user::Entity::update_many()
            .col_expr(
                user::Column::DisabledAt,
                Expr::value(disabled.then_some(now)),
            )
            .col_expr(user::Column::UpdatedAt, Expr::value(now))
            .filter(super::users::email_is(email))
            .exec_with_returning(&txn)
            .await?;
        let ids: Vec<Uuid> = users.iter().map(|user| user.id).collect();
        if ids.is_empty() {
            txn.commit().await?;
            return Ok(Vec::new());
        }
        if disabled {
            revoke_sessions(&txn, &ids, now).await?;
        }
        let what: Vec<Invalidation> = ids.iter().copied().map(Invalidation::User).collect();
        self.commit_invalidating(txn, &what).await?;
        self.tell_other_processes(&what);
        Ok(users)
    }

    /// Revokes the live sessions of every user with e-mail `email`; how many were revoked.
    /// Sessions are read from the database on every request, so no cache is involved.
    pub async fn revoke_sessions_by_email(
        &self,
        email: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, DbErr> {
        let ids: Vec<Uuid> = self
            .find_users_by_email(email)
            .await?
            .into_iter()
            .map(|user| user.id)
            .collect();
        if ids.is_empty() {
            return Ok(0);
        }
        revoke_sessions(&self.db, &ids, now).await
    }

    /// Whether sign-in must be refused for this identity: its user is disabled, or a disabled
    /// user has the e-mail address it presents (an identity deleted at the provider and made
    /// again gets a new subject, but not a way back in).
    pub async fn sign_in_refused(
        &self,
        issuer: &str,
        subject: &str,
        email: Option<&str>,
    ) -> Result<bool, DbErr> {
        let mut same = sea_orm::Condition::any().add(
            sea_orm::Condition::all()
                .add(user::Column::OidcIssuer.eq(issuer))
                .add(user::Column::OidcSubject.eq(subject)),
        );
        if let Some(email) = email {
            same = same.add(super::users::email_is(email));
        }
        let disabled = user::Entity::find()
            .filter(same)
            .filter(user::Column::DisabledAt.is_not_null())
            .one(&self.db)
            .await?;
        Ok(disabled.is_some())
    }
}

/// Revokes the live sessions of `user_ids` on `db` (a transaction or the pool).
async fn revoke_sessions<C: sea_orm::ConnectionTrait>(
    db: &C,
    user_ids: &[Uuid],
    now: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let result = session::Entity::update_many()
        .col_expr(session::Column::RevokedAt, Expr::value(now))
        .filter(session::Column::UserId.is_in(user_ids.iter().copied()))
        .filter(session::Column::RevokedAt.is_null())
        .exec(db)
        .await?;
    Ok(result.rows_affected)
}
