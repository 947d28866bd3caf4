//! Re-sealing stored account tokens: with the current key (`service rotate-token-key`), and
//! from the unbound `v1:` form to the form bound to their row (at startup).
//!
//! Both run while the service may be refreshing tokens (X and TikTok hand out a new refresh
//! token on every refresh, and the old one stops working), so a row is written only if it still
//! holds the ciphertexts that were read; one that changed meanwhile is read again and re-sealed
//! from its new values.

use entity::account;
use sea_orm::{
    ColumnTrait, Condition, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
    sea_query::Expr,
};
use uuid::Uuid;

use super::Store;
use crate::{
    crypto::{Binding, CipherError, TokenCipher},
    store::access::Invalidation,
    tokens::{self, PlainTokens},
};

/// Rows read per query.
const PAGE: u64 = 500;
/// How many times a row that keeps changing under the re-sealing is read again before giving
/// up on it (a token is refreshed at most every few minutes, so twice is already rare).
const MAX_ATTEMPTS: usize = 8;

/// Which accounts to re-seal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResealScope {
    /// Every account (key rotation).
    Every,
    /// Accounts with a token still in the unbound `v1:` form (the startup upgrade).
    UnboundOnly,
}

/// What a re-sealing did.
#[derive(Debug, Default)]
pub struct ResealReport {
    /// Accounts whose tokens were rewritten.
    pub resealed: u64,
    /// Accounts whose tokens open with no configured key for their row; left as they are.
    pub unreadable: Vec<Uuid>,
}

/// One account's compare-and-set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowReseal {
    /// Rewritten.
    Written,
    /// The row no longer holds the ciphertexts read: nothing was written.
    Changed,
    /// A token opens with no configured key for this row: nothing was written.
    Unreadable,
}

/// Why re-sealing stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReEncryptError {
    #[error(transparent)]
    Database(#[from] DbErr),
    #[error(
        "account {0}: its tokens kept changing while being re-encrypted; run the command again"
    )]
    KeptChanging(Uuid),
}

/// Opens a stored token of `binding`'s place: the bound form for that place, or the unbound
/// `v1:` form, which only re-sealing reads.
fn open_for_reseal(
    cipher: &TokenCipher,
    binding: &Binding,
    stored: &str,
) -> Result<String, CipherError> {
    if TokenCipher::is_unbound(stored) {
        cipher.decrypt_unbound(stored)
    } else {
        cipher.decrypt(binding, stored)
    }
}

fn has_unbound(row: &account::Model) -> bool {
    TokenCipher::is_unbound(&row.access_token_enc)
        || row
            .refresh_token_enc
            .as_deref()
            .is_some_and(TokenCipher::is_unbound)
}

impl Store {
    /// Re-seals the tokens of the accounts in `scope` with `cipher`'s current key, each bound
    /// to its row, a page at a time. A row changed since it was read is read again.
    #[tracing::instrument(skip_all, fields(?scope))]
    pub async fn reseal_tokens(
        &self,
        cipher: &TokenCipher,
        scope: ResealScope,
    ) -> Result<ResealReport, ReEncryptError> {
        let mut report = ResealReport::default();
        let mut after: Option<Uuid> = None;
        loop {
            let mut query = account::Entity::find().order_by_asc(account::Column::Id);
            if let Some(last) = after {
                query = query.filter(account::Column::Id.gt(last));
            }
            if scope == ResealScope::UnboundOnly {
                query = query.filter(
                    Condition::any()
                        .add(account::Column::AccessTokenEnc.starts_with("v1:"))
                        .add(account::Column::RefreshTokenEnc.starts_with("v1:")),
                );
            }
            let page = query.limit(PAGE).all(&self.db).await?;
            let Some(last) = page.last() else {
                break;
            };
            after = Some(last.id);
            for row in page {
                self.reseal_until_settled(cipher, scope, row, &mut report)
                    .await?;
            }
        }
        Ok(report)
    }

    async fn reseal_until_settled(
        &self,
        cipher: &TokenCipher,
        scope: ResealScope,
        mut row: account::Model,
        report: &mut ResealReport,
    ) -> Result<(), ReEncryptError> {
        let id = row.id;
        for _ in 0..MAX_ATTEMPTS {
            match self.reseal_account(cipher, &row).await? {
                RowReseal::Written => {
                    report.resealed += 1;
                    return Ok(());
                }
                RowReseal::Unreadable => {
                    tracing::warn!(account = %id, "the account's tokens open with no configured key for its row; left as they are");
                    report.unreadable.push(id);
                    return Ok(());
                }
                RowReseal::Changed => {
                    tracing::info!(account = %id, "the account's tokens changed while being re-sealed; reading them again");
                    match self.find_account(id).await? {
                        // Whoever changed it wrote the bound form: nothing left to upgrade.
                        Some(fresh)
                            if scope == ResealScope::UnboundOnly && !has_unbound(&fresh) =>
                        {
                            return Ok(());
                        }
                        Some(fresh) => row = fresh,
                        None => return Ok(()),
                    }
                }
            }
        }
        Err(ReEncryptError::KeptChanging(id))
    }

    /// Re-seals one account's tokens as `row` holds them, writing only if the stored row still
    /// holds the same ciphertexts (compare-and-set), so a token refreshed since `row` was read
    /// is never overwritten by the older one.
    #[tracing::instrument(skip_all, fields(account = %row.id))]
    pub async fn reseal_account(
        &self,
        cipher: &TokenCipher,
        row: &account::Model,
    ) -> Result<RowReseal, DbErr> {
        let Ok(access) = open_for_reseal(
            cipher,
            &Binding::account_access_token(row.id),
            &row.access_token_enc,
        ) else {
            return Ok(RowReseal::Unreadable);
        };
        let refresh = row
            .refresh_token_enc
            .as_deref()
            .map(|stored| open_for_reseal(cipher, &Binding::account_refresh_token(row.id), stored))
            .transpose();
        let Ok(refresh) = refresh else {
            return Ok(RowReseal::Unreadable);
        };
        let sealed = tokens::seal(
            cipher,
            row.id,
            &PlainTokens::new(&access, refresh.as_deref()),
        )
        .map_err(|e| DbErr::Custom(format!("cannot seal the tokens of account {}: {e}", row.id)))?;
        let (access_enc, refresh_enc) = sealed.into_columns();
        let same_refresh = match &row.refresh_token_enc {
            Some(stored) => account::Column::RefreshTokenEnc.eq(stored.as_str()),
            None => account::Column::RefreshTokenEnc.is_null(),
        };
        let txn = self.begin_invalidating().await?;
        let result = account::Entity::update_many()
            .col_expr(account::Column::AccessTokenEnc, Expr::value(access_enc))
            .col_expr(account::Column::RefreshTokenEnc, Expr::value(refresh_enc))
            .filter(account::Column::Id.eq(row.id))
            .filter(account::Column::AccessTokenEnc.eq(row.access_token_enc.as_str()))
            .filter(same_refresh)
            .exec(&txn)
            .await?;
        self.commit_invalidating(txn, &[Invalidation::Account(row.id)])
            .await?;
        Ok(if result.rows_affected == 1 {
            RowReseal::Written
        } else {
            RowReseal::Changed
        })
    }
}

impl Store {
    /// Re-seals every webhook endpoint's signing secrets (the current one and a rotated-out one
    /// still signing) with `cipher`'s current key. A row whose secrets changed meanwhile (a
    /// rotation) is read again. Answers how many endpoints were rewritten and those whose
    /// secrets open with no configured key (left as they are).
    pub async fn reseal_webhook_secrets(
        &self,
        cipher: &TokenCipher,
    ) -> Result<(u64, Vec<Uuid>), ReEncryptError> {
        use entity::webhook_endpoint::{self, Column};
        let (mut resealed, mut unreadable) = (0, Vec::new());
        let ids: Vec<Uuid> = webhook_endpoint::Entity::find()
            .select_only()
            .column(Column::Id)
            .into_tuple()
            .all(&self.db)
            .await?;
        for id in ids {
            let binding = Binding::webhook_secret(id);
            for _ in 0..MAX_ATTEMPTS {
                let Some(row) = webhook_endpoint::Entity::find_by_id(id)
                    .one(&self.db)
                    .await?
                else {
                    break;
                };
                let reseal = |sealed: &str| -> Result<String, CipherError> {
                    let plain = cipher.decrypt(&binding, sealed)?;
                    cipher.encrypt(&binding, &plain)
                };
                let previous = row.previous_secret_enc.as_deref().map(reseal).transpose();
                let (Ok(secret), Ok(previous)) = (reseal(&row.secret_enc), previous) else {
                    unreadable.push(id);
                    break;
                };
                let mut unchanged = Condition::all()
                    .add(Column::Id.eq(id))
                    .add(Column::SecretEnc.eq(row.secret_enc.as_str()));
                unchanged = match &row.previous_secret_enc {
                    Some(old) => unchanged.add(Column::PreviousSecretEnc.eq(old.as_str())),
                    None => unchanged.add(Column::PreviousSecretEnc.is_null()),
                };
                let written = webhook_endpoint::Entity::update_many()
                    .col_expr(Column::SecretEnc, Expr::value(secret))
                    .col_expr(Column::PreviousSecretEnc, Expr::value(previous))
                    .filter(unchanged)
                    .exec(&self.db)
                    .await?
                    .rows_affected;
                if written == 1 {
                    resealed += 1;
                    break;
                }
            }
        }
        Ok((resealed, unreadable))
    }
}
