//! Connected social accounts. Disconnecting is a soft delete (`disabled`): history and tokens stay.

use chrono::{DateTime, Utc};
use entity::account;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, Set,
    sea_query::Expr,
};
use uuid::Uuid;

use super::Store;

/// What is needed to record a connected account. Tokens arrive already encrypted.
#[derive(Debug, Clone)]
pub struct NewAccount {
    pub user_id: Uuid,
    pub platform: String,
    pub external_id: String,
    pub display_name: String,
    pub username: Option<String>,
    pub account_type: Option<String>,
    pub profile_picture_url: Option<String>,
    pub access_token_enc: String,
    pub refresh_token_enc: Option<String>,
    pub token_expires_at: Option<DateTime<Utc>>,
    pub data_access_expires_at: Option<DateTime<Utc>>,
}

impl Store {
    pub async fn insert_account(
        &self,
        new: NewAccount,
        now: DateTime<Utc>,
    ) -> Result<account::Model, DbErr> {
        account::ActiveModel {
            id: Set(Uuid::new_v4()),
            user_id: Set(new.user_id),
            platform: Set(new.platform),
            external_id: Set(new.external_id),
            display_name: Set(new.display_name),
            username: Set(new.username),
            account_type: Set(new.account_type),
            profile_picture_url: Set(new.profile_picture_url),
            access_token_enc: Set(new.access_token_enc),
            refresh_token_enc: Set(new.refresh_token_enc),
            token_expires_at: Set(new.token_expires_at),
            data_access_expires_at: Set(new.data_access_expires_at),
            is_valid: Set(true),
            disabled: Set(false),
            disabled_at: Set(None),
            last_error: Set(None),
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
        let result = account::Entity::update_many()
            .col_expr(account::Column::Disabled, Expr::value(true))
            .col_expr(account::Column::DisabledAt, Expr::value(now))
            .col_expr(account::Column::UpdatedAt, Expr::value(now))
            .filter(account::Column::Id.eq(account_id))
            .filter(account::Column::UserId.eq(user_id))
            .filter(account::Column::Disabled.eq(false))
            .exec(&self.db)
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
        account::Entity::update_many()
            .col_expr(account::Column::IsValid, Expr::value(false))
            .col_expr(account::Column::LastError, Expr::value(reason))
            .col_expr(account::Column::UpdatedAt, Expr::value(now))
            .filter(account::Column::Id.eq(account_id))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    /// An account by id, whoever owns it (actors start from the row).
    pub async fn find_account(&self, account_id: Uuid) -> Result<Option<account::Model>, DbErr> {
        account::Entity::find_by_id(account_id).one(&self.db).await
    }
}
