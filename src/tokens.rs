//! An account's platform tokens at rest: sealed to the row they are stored in, opened for that
//! row only, and what a reader makes of a token that does not open.
//!
//! A token that does not open for its row (copied from another row, or sealed by a key that is
//! no longer configured) is never sent to a platform. Readers show its account as invalid,
//! without writing that down: should the cause be a key missing from the configuration,
//! restoring the key makes the account valid again, and reconnecting it always does.

use entity::account;
use secrecy::SecretString;
use uuid::Uuid;

use crate::crypto::{Binding, CipherError, TokenCipher};

/// Why an account whose tokens do not open shows as invalid (`invalid_reason`).
pub const UNREADABLE_REASON: &str =
    "InvalidToken: the stored token cannot be read for this account; reconnect the account";

/// An account's tokens in the clear, on their way to being sealed.
pub struct PlainTokens {
    pub access: SecretString,
    pub refresh: Option<SecretString>,
}

impl PlainTokens {
    pub fn new(access: &str, refresh: Option<&str>) -> Self {
        Self {
            access: SecretString::from(access),
            refresh: refresh.map(SecretString::from),
        }
    }
}

/// An account's tokens sealed to its row: only [`seal`] makes one, so what is stored in a row
/// was sealed for that row.
#[derive(Debug, Clone)]
pub struct SealedTokens {
    account_id: Uuid,
    access_token_enc: String,
    refresh_token_enc: Option<String>,
}

impl SealedTokens {
    /// The account whose row these are sealed for.
    pub fn account_id(&self) -> Uuid {
        self.account_id
    }

    /// The stored values, for the row of [`Self::account_id`].
    pub fn into_columns(self) -> (String, Option<String>) {
        (self.access_token_enc, self.refresh_token_enc)
    }
}

/// Seals `tokens` for the row of `account_id`.
pub fn seal(
    cipher: &TokenCipher,
    account_id: Uuid,
    tokens: &PlainTokens,
) -> Result<SealedTokens, CipherError> {
    use secrecy::ExposeSecret;
    let access_token_enc = cipher.encrypt(
        &Binding::account_access_token(account_id),
        tokens.access.expose_secret(),
    )?;
    let refresh_token_enc = tokens
        .refresh
        .as_ref()
        .map(|refresh| {
            cipher.encrypt(
                &Binding::account_refresh_token(account_id),
                refresh.expose_secret(),
            )
        })
        .transpose()?;
    Ok(SealedTokens {
        account_id,
        access_token_enc,
        refresh_token_enc,
    })
}

/// The account's access token, opened for its row.
pub fn open_access(cipher: &TokenCipher, account: &account::Model) -> Result<String, CipherError> {
    cipher.decrypt(
        &Binding::account_access_token(account.id),
        &account.access_token_enc,
    )
}

/// The account's refresh token (if it has one), opened for its row.
pub fn open_refresh(
    cipher: &TokenCipher,
    account: &account::Model,
) -> Result<Option<String>, CipherError> {
    account
        .refresh_token_enc
        .as_deref()
        .map(|stored| cipher.decrypt(&Binding::account_refresh_token(account.id), stored))
        .transpose()
}

/// Whether both of the account's tokens open for its row.
pub fn readable(cipher: &TokenCipher, account: &account::Model) -> bool {
    open_access(cipher, account).is_ok() && open_refresh(cipher, account).is_ok()
}

/// Shows this copy of `account` as invalid when its tokens do not open for its row, so that
/// every reader (lists, token info, publish checks) refuses it as it refuses a revoked token.
pub fn flag_unreadable(cipher: &TokenCipher, account: &mut account::Model) {
    if account.is_valid && !readable(cipher, account) {
        account.is_valid = false;
        account.last_error = Some(UNREADABLE_REASON.to_string());
    }
}
