//! Users: created on first sign-in, found by their identity-provider identity.

use chrono::{DateTime, Utc};
use entity::user;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set,
    SqlErr,
};
use uuid::Uuid;

use super::Store;
use crate::{domain::identity::Identity, store::access::Invalidation, usage::Plan};

/// An operator's user search: the e-mail address to look for (free of NUL, which no stored
/// address holds and some databases refuse in a query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserSearch {
    pub email: String,
}

impl Store {
    /// Finds or creates the user of an identity without an e-mail verification (tools, tests,
    /// benchmarks): the address counts as unverified. Sign-in uses [`Self::record_sign_in`].
    pub async fn upsert_oidc_user(
        &self,
        issuer: &str,
        subject: &str,
        email: Option<&str>,
        display_name: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<user::Model, DbErr> {
        let identity = Identity {
            issuer: issuer.to_string(),
            subject: subject.to_string(),
            email: email.map(str::to_string),
            email_verified: false,
            name: display_name.map(str::to_string),
        };
        self.record_sign_in(&identity, now).await
    }

    /// Finds the user of an identity-provider identity (issuer and subject), creating it (Free
    /// plan) on first sign-in. Profile fields, and whether the e-mail address is verified, are
    /// refreshed on every sign-in.
    #[tracing::instrument(skip_all, fields(issuer = %identity.issuer, subject = %identity.subject))]
    pub async fn record_sign_in(
        &self,
        identity: &Identity,
        now: DateTime<Utc>,
    ) -> Result<user::Model, DbErr> {
        let (issuer, subject) = (identity.issuer.as_str(), identity.subject.as_str());
        let email = identity.email.as_deref();
        let display_name = identity.name.as_deref();
        if let Some(existing) = self.find_user_by_identity(issuer, subject).await? {
            let mut active: user::ActiveModel = existing.into();
            active.email = Set(email.map(str::to_string));
            active.email_verified = Set(identity.email_verified);
            active.display_name = Set(display_name.map(str::to_string));
            active.updated_at = Set(now);
            return self.update_user(active).await;
        }
        let new_user = user::ActiveModel {
            id: Set(Uuid::new_v4()),
            email: Set(email.map(str::to_string)),
            email_verified: Set(identity.email_verified),
            display_name: Set(display_name.map(str::to_string)),
            oidc_issuer: Set(issuer.to_string()),
            oidc_subject: Set(subject.to_string()),
            plan: Set(Plan::Free),
            plan_type: Set(None),
            current_period_end: Set(None),
            is_operator: Set(false),
            disabled_at: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        };
        match new_user.insert(&self.db).await {
            Ok(model) => Ok(model),
            // Two first sign-ins raced: the other one created the row.
            Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => self
                .find_user_by_identity(issuer, subject)
                .await?
                .ok_or(err),
            Err(err) => Err(err),
        }
    }

    async fn find_user_by_identity(
        &self,
        issuer: &str,
        subject: &str,
    ) -> Result<Option<user::Model>, DbErr> {
        user::Entity::find()
            .filter(user::Column::OidcIssuer.eq(issuer))
            .filter(user::Column::OidcSubject.eq(subject))
            .one(&self.db)
            .await
    }

    pub async fn find_user(&self, id: Uuid) -> Result<Option<user::Model>, DbErr> {
        user::Entity::find_by_id(id).one(&self.db).await
    }

    /// Users with this e-mail address (several identity providers may share one).
    /// The users an operator's search matches.
    pub async fn find_users(&self, search: &UserSearch) -> Result<Vec<user::Model>, DbErr> {
        self.find_users_by_email(&search.email).await
    }

    pub async fn find_users_by_email(&self, email: &str) -> Result<Vec<user::Model>, DbErr> {
        user::Entity::find()
            .filter(email_is(email))
            .all(&self.db)
            .await
    }

    /// Sets a user's plan. `plan_type` and `current_period_end` are kept only for paid plans.
    #[tracing::instrument(skip(self))]
    pub async fn set_plan(
        &self,
        user_id: Uuid,
        plan: Plan,
        plan_type: Option<String>,
        current_period_end: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<Option<user::Model>, DbErr> {
        let Some(existing) = self.find_user(user_id).await? else {
            return Ok(None);
        };
        let mut active: user::ActiveModel = existing.into();
        active.plan = Set(plan);
        active.plan_type = Set(plan_type.filter(|_| plan.is_paid()));
        active.current_period_end = Set(current_period_end.filter(|_| plan.is_paid()));
        active.updated_at = Set(now);
        self.update_user(active).await.map(Some)
    }

    /// Grants (`true`) or withdraws the operator role stored on the user row (`service user
    /// operator`). `None` when there is no such user.
    pub async fn set_operator(
        &self,
        user_id: Uuid,
        on: bool,
        now: DateTime<Utc>,
    ) -> Result<Option<user::Model>, DbErr> {
        let Some(existing) = self.find_user(user_id).await? else {
            return Ok(None);
        };
        let mut active: user::ActiveModel = existing.into();
        active.is_operator = Set(on);
        active.updated_at = Set(now);
        self.update_user(active).await.map(Some)
    }

    /// Writes a changed user row and evicts it from the access cache (here, and on the other
    /// instances by notification) in the same operation: a plan change meters the very next
    /// call. Every update of a user row goes through here.
    async fn update_user(&self, active: user::ActiveModel) -> Result<user::Model, DbErr> {
        let txn = self.begin_invalidating().await?;
        let updated = active.update(&txn).await?;
        self.commit_invalidating(txn, &[Invalidation::User(updated.id)])
            .await?;
        Ok(updated)
    }

    /// Every user, oldest first (`service user list`).
    pub async fn all_users(&self) -> Result<Vec<user::Model>, DbErr> {
        user::Entity::find()
            .order_by_asc(user::Column::CreatedAt)
            .order_by_asc(user::Column::Id)
            .all(&self.db)
            .await
    }

    /// The first `limit` users, oldest first (the operators' usage table).
    pub async fn list_users(&self, limit: u64) -> Result<Vec<user::Model>, DbErr> {
        user::Entity::find()
            .order_by_asc(user::Column::CreatedAt)
            .order_by_asc(user::Column::Id)
            .limit(limit)
            .all(&self.db)
            .await
    }
}

/// The user's e-mail address is `email`, compared without regard to case: providers keep the
/// case a user typed, and `Bob@` and `bob@` reach the same mailbox in practice.
pub(super) fn email_is(email: &str) -> sea_orm::sea_query::SimpleExpr {
    use sea_orm::sea_query::{Expr, ExprTrait, Func};
    Func::lower(Expr::col((user::Entity, user::Column::Email))).eq(email.to_lowercase())
}
