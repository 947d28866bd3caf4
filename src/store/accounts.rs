//! Connected social accounts. Disconnecting is a soft delete (`disabled`): history and tokens stay.

use chrono::{DateTime, Utc};
use entity::account;
use entity::platform::Platform;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, Set,
    TransactionTrait, sea_query::Expr,
};
use uuid::Uuid;

use super::Store;
use crate::{
    crypto::TokenCipher,
    store::access::Invalidation,
    tokens::{self, PlainTokens, SealedTokens},
};

/// What is needed to record a connected account. Its tokens are sealed here, once the row they
/// go to is known.
pub struct NewAccount {
    pub user_id: Uuid,
    pub platform: Platform,
    pub external_id: String,
    pub display_name: String,
    pub username: Option<String>,
    pub account_type: Option<String>,
    pub profile_picture_url: Option<String>,
    pub tokens: PlainTokens,
    pub token_expires_at: Option<DateTime<Utc>>,
    pub data_access_expires_at: Option<DateTime<Utc>>,
    /// How the account was connected (instagram: Facebook or Instagram Login).
    pub login_route: account::LoginRoute,
    /// When the access token was issued (`None`: unknown, e.g. an operator-added token).
    pub token_issued_at: Option<DateTime<Utc>>,
}

/// Seals `tokens` for the row of `account_id`. AES-GCM fails only on inputs far larger than any
/// token; should it fail, the write fails like a database error, naming no secret.
fn seal_for_row(
    cipher: &TokenCipher,
    account_id: Uuid,
    tokens: &PlainTokens,
) -> Result<(String, Option<String>), DbErr> {
    tokens::seal(cipher, account_id, tokens)
        .map(SealedTokens::into_columns)
        .map_err(|e| {
            DbErr::Custom(format!(
                "cannot seal the tokens of account {account_id}: {e}"
            ))
        })
}

impl Store {
    /// Records a new account, its tokens sealed for its row.
    pub async fn insert_account(
        &self,
        new: NewAccount,
        cipher: &TokenCipher,
        now: DateTime<Utc>,
    ) -> Result<account::Model, DbErr> {
        let id = Uuid::new_v4();
        let (access_token_enc, refresh_token_enc) = seal_for_row(cipher, id, &new.tokens)?;
        account::ActiveModel {
            id: Set(id),
            user_id: Set(new.user_id),
            platform: Set(new.platform),
            external_id: Set(new.external_id),
            display_name: Set(new.display_name),
            username: Set(new.username),
            account_type: Set(new.account_type),
            profile_picture_url: Set(new.profile_picture_url),
            access_token_enc: Set(access_token_enc),
            refresh_token_enc: Set(refresh_token_enc),
            token_expires_at: Set(new.token_expires_at),
            data_access_expires_at: Set(new.data_access_expires_at),
            is_valid: Set(true),
            disabled: Set(false),
            disabled_at: Set(None),
            last_error: Set(None),
            refresh_lease_until: Set(None),
            login_route: Set(new.login_route),
            token_issued_at: Set(new.token_issued_at),
            expiry_notice_for: Set(None),
            data_access_notice_for: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&self.db)
        .await
    }

    /// The user's connected (not disconnected) accounts, oldest first.
    pub async fn list_connected_accounts(
        &self,
        user_id: Uuid,
    ) -> Result<Vec<account::Model>, DbErr> {
        account::Entity::find()
            .filter(account::Column::UserId.eq(user_id))
            .filter(account::Column::Disabled.eq(false))
            .order_by_asc(account::Column::CreatedAt)
            .order_by_asc(account::Column::Id)
            .all(&self.db)
            .await
    }

    /// One of the user's accounts, connected or not; `None` when unknown or another user's.
    pub async fn find_owned_account(
        &self,
        user_id: Uuid,
        account_id: Uuid,
    ) -> Result<Option<account::Model>, DbErr> {
        account::Entity::find_by_id(account_id)
            .filter(account::Column::UserId.eq(user_id))
            .one(&self.db)
            .await
    }

    /// Soft-deletes one of the user's connected accounts; false when unknown, foreign or already
    /// disconnected.
    pub async fn disconnect_account(
        &self,
        user_id: Uuid,
        account_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let txn = self.begin_invalidating().await?;
        let result = account::Entity::update_many()
            .col_expr(account::Column::Disabled, Expr::value(true))
            .col_expr(account::Column::DisabledAt, Expr::value(now))
            .col_expr(account::Column::UpdatedAt, Expr::value(now))
            .filter(account::Column::Id.eq(account_id))
            .filter(account::Column::UserId.eq(user_id))
            .filter(account::Column::Disabled.eq(false))
            .exec(&txn)
            .await?;
        self.commit_invalidating(txn, &[Invalidation::Account(account_id)])
            .await?;
        Ok(result.rows_affected == 1)
    }

    /// Marks an account's token unusable (the platform said expired or revoked).
    pub async fn mark_account_invalid(
        &self,
        account_id: Uuid,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<(), DbErr> {
        let txn = self.begin_invalidating().await?;
        let was_valid = account::Entity::update_many()
            .col_expr(account::Column::IsValid, Expr::value(false))
            .col_expr(account::Column::LastError, Expr::value(reason))
            .col_expr(account::Column::UpdatedAt, Expr::value(now))
            .filter(account::Column::Id.eq(account_id))
            .filter(account::Column::IsValid.eq(true))
            .exec(&txn)
            .await?
            .rows_affected
            == 1;
        if was_valid {
            // `account.invalid` once, when it stops being valid, in the same transaction.
            super::outbox::account_event(&txn, account_id, "account.invalid", reason, None, now)
                .await?;
        } else {
            account::Entity::update_many()
                .col_expr(account::Column::LastError, Expr::value(reason))
                .col_expr(account::Column::UpdatedAt, Expr::value(now))
                .filter(account::Column::Id.eq(account_id))
                .exec(&txn)
                .await?;
        }
        self.commit_invalidating(txn, &[Invalidation::Account(account_id)])
            .await?;
        if was_valid {
            self.outbox_may_have_events();
        }
        Ok(())
    }

    /// Records that `account_id`'s token (or, with `data_access`, its data-access window)
    /// expiring at `expires_at` has been announced, with its `account.token_expiring` event in
    /// the same transaction; false, writing nothing, when that expiry was announced already.
    pub async fn note_token_expiring(
        &self,
        account_id: Uuid,
        data_access: bool,
        expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let column = if data_access {
            account::Column::DataAccessNoticeFor
        } else {
            account::Column::ExpiryNoticeFor
        };
        let txn = self.db.begin().await?;
        let noted = account::Entity::update_many()
            .col_expr(column, Expr::value(expires_at))
            .filter(account::Column::Id.eq(account_id))
            .filter(
                sea_orm::Condition::any()
                    .add(column.is_null())
                    .add(column.ne(expires_at)),
            )
            .exec(&txn)
            .await?
            .rows_affected
            == 1;
        if noted {
            let reason = if data_access { "data_access" } else { "token" };
            super::outbox::account_event(
                &txn,
                account_id,
                "account.token_expiring",
                reason,
                Some(expires_at),
                now,
            )
            .await?;
        }
        txn.commit().await?;
        if noted {
            self.outbox_may_have_events();
        }
        Ok(noted)
    }

    /// Valid, connected accounts whose token or data-access window ends between `now` and
    /// `before`: the candidates for an `account.token_expiring` event.
    pub async fn accounts_nearing_expiry(
        &self,
        now: DateTime<Utc>,
        before: DateTime<Utc>,
    ) -> Result<Vec<account::Model>, DbErr> {
        let window = |column: account::Column| {
            sea_orm::Condition::all()
                .add(column.gt(now))
                .add(column.lte(before))
        };
        account::Entity::find()
            .filter(account::Column::Disabled.eq(false))
            .filter(account::Column::IsValid.eq(true))
            .filter(
                sea_orm::Condition::any()
                    .add(window(account::Column::TokenExpiresAt))
                    .add(window(account::Column::DataAccessExpiresAt)),
            )
            .all(&self.db)
            .await
    }

    /// An account by id, whoever owns it (actors start from the row).
    pub async fn find_account(&self, account_id: Uuid) -> Result<Option<account::Model>, DbErr> {
        account::Entity::find_by_id(account_id).one(&self.db).await
    }
}

/// New tokens of an account, sealed for its row (which they name). A sealed refresh token of
/// `None` keeps the stored one (platforms that do not rotate it).
#[derive(Debug, Clone)]
pub struct NewTokens {
    pub sealed: SealedTokens,
    pub token_expires_at: Option<DateTime<Utc>>,
}

impl Store {
    /// Records a connection: the user's connected account with this platform identity gets the
    /// new tokens and names and is valid again; otherwise (never connected, or disconnected
    /// since: spec §3.2) a new account is created. Returns the row and whether it is new.
    pub async fn upsert_connected_account(
        &self,
        new: NewAccount,
        cipher: &TokenCipher,
        now: DateTime<Utc>,
    ) -> Result<(account::Model, bool), DbErr> {
        let existing = account::Entity::find()
            .filter(account::Column::UserId.eq(new.user_id))
            .filter(account::Column::Platform.eq(new.platform))
            .filter(account::Column::ExternalId.eq(new.external_id.clone()))
            .filter(account::Column::Disabled.eq(false))
            .one(&self.db)
            .await?;
        let Some(existing) = existing else {
            return Ok((self.insert_account(new, cipher, now).await?, true));
        };
        let (access_token_enc, refresh_token_enc) = seal_for_row(cipher, existing.id, &new.tokens)?;
        let mut row: account::ActiveModel = existing.into();
        row.display_name = Set(new.display_name);
        row.username = Set(new.username);
        row.account_type = Set(new.account_type);
        row.profile_picture_url = Set(new.profile_picture_url);
        row.access_token_enc = Set(access_token_enc);
        row.refresh_token_enc = Set(refresh_token_enc);
        row.token_expires_at = Set(new.token_expires_at);
        row.data_access_expires_at = Set(new.data_access_expires_at);
        // Connecting again through the other login moves the account to that route (the
        // professional account's id is the same on both).
        row.login_route = Set(new.login_route);
        row.token_issued_at = Set(new.token_issued_at);
        row.is_valid = Set(true);
        row.last_error = Set(None);
        row.updated_at = Set(now);
        let txn = self.begin_invalidating().await?;
        let updated = row.update(&txn).await?;
        self.commit_invalidating(txn, &[Invalidation::Account(updated.id)])
            .await?;
        Ok((updated, false))
    }

    /// Takes the account's refresh lease until `until`; false when another holder's lease runs.
    pub async fn take_refresh_lease(
        &self,
        account_id: Uuid,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let txn = self.begin_invalidating().await?;
        let result = account::Entity::update_many()
            .col_expr(account::Column::RefreshLeaseUntil, Expr::value(until))
            .filter(account::Column::Id.eq(account_id))
            .filter(
                sea_orm::Condition::any()
                    .add(account::Column::RefreshLeaseUntil.is_null())
                    .add(account::Column::RefreshLeaseUntil.lt(now)),
            )
            .exec(&txn)
            .await?;
        self.commit_invalidating(txn, &[Invalidation::Account(account_id)])
            .await?;
        Ok(result.rows_affected == 1)
    }

    /// Stores refreshed tokens in the row they were sealed for and releases its lease.
    pub async fn store_refreshed_tokens(
        &self,
        tokens: NewTokens,
        now: DateTime<Utc>,
    ) -> Result<(), DbErr> {
        let account_id = tokens.sealed.account_id();
        let (access_token_enc, refresh_token_enc) = tokens.sealed.into_columns();
        let mut update = account::Entity::update_many()
            .col_expr(
                account::Column::AccessTokenEnc,
                Expr::value(access_token_enc),
            )
            .col_expr(
                account::Column::TokenExpiresAt,
                Expr::value(tokens.token_expires_at),
            )
            .col_expr(
                account::Column::RefreshLeaseUntil,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .col_expr(account::Column::TokenIssuedAt, Expr::value(now))
            .col_expr(account::Column::UpdatedAt, Expr::value(now));
        if let Some(refresh) = refresh_token_enc {
            update = update.col_expr(account::Column::RefreshTokenEnc, Expr::value(refresh));
        }
        let txn = self.begin_invalidating().await?;
        update
            .filter(account::Column::Id.eq(account_id))
            .exec(&txn)
            .await?;
        self.commit_invalidating(txn, &[Invalidation::Account(account_id)])
            .await
    }

    /// Releases the refresh lease without new tokens (the refresh failed).
    pub async fn release_refresh_lease(&self, account_id: Uuid) -> Result<(), DbErr> {
        let txn = self.begin_invalidating().await?;
        account::Entity::update_many()
            .col_expr(
                account::Column::RefreshLeaseUntil,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(account::Column::Id.eq(account_id))
            .exec(&txn)
            .await?;
        self.commit_invalidating(txn, &[Invalidation::Account(account_id)])
            .await
    }

    /// Valid, connected accounts of `platforms` whose token expires before `before`.
    pub async fn accounts_expiring(
        &self,
        platforms: &[Platform],
        before: DateTime<Utc>,
    ) -> Result<Vec<account::Model>, DbErr> {
        account::Entity::find()
            .filter(account::Column::Disabled.eq(false))
            .filter(account::Column::IsValid.eq(true))
            .filter(account::Column::Platform.is_in(platforms.iter().copied()))
            .filter(account::Column::TokenExpiresAt.lt(before))
            .all(&self.db)
            .await
    }
}
