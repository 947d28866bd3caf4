//! One-time tokens for dashboard forms whose submission acts on a platform (Compose).
//!
//! Each rendered form carries a fresh token: `{user}.{nonce}.{issued}`, signed. Rendering writes
//! nothing; submitting spends the nonce in the database ([`Store::spend_form_token`]), so the
//! second submission of one rendered form (a double click, the browser's "resend" after a
//! reload or a back button, a retry by an impatient proxy) is recognised on any instance and
//! acts on nothing. A token is valid for [`FORM_TOKEN_TTL`]; the sweeper forgets spent nonces after that.
//!
//! [`Store::spend_form_token`]: crate::store::Store::spend_form_token

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{
    crypto::{self, SessionSigner},
    store::{FORM_TOKEN_TTL, Store},
};

/// The signing purpose: no other signed value of ours verifies as a form token.
const PURPOSE: &str = "form-token";
/// Longest token looked at; ours are about 110 characters.
const MAX_TOKEN_LEN: usize = 256;

/// What a submitted token allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    /// First use: act on the form.
    Now,
    /// This form was submitted before: act on nothing.
    Before,
    /// No token, a forged one, another user's, or an expired one: act on nothing and give the
    /// user a fresh form.
    Unusable,
}

/// A fresh token for a form rendered for `user_id`.
pub fn issue(signer: &SessionSigner, user_id: Uuid, now: DateTime<Utc>) -> String {
    let nonce = crypto::random_token(18);
    signer
        .derive(PURPOSE)
        .sign(&format!("{user_id}.{nonce}.{}", now.timestamp()))
}

/// The nonce of `token` if it is ours, for `user_id`, and unexpired at `now`.
fn nonce_of<'a>(
    signer: &SessionSigner,
    token: &'a str,
    user_id: Uuid,
    now: DateTime<Utc>,
) -> Option<&'a str> {
    if token.len() > MAX_TOKEN_LEN {
        return None;
    }
    let payload = signer.derive(PURPOSE).verify(token)?;
    let mut parts = payload.split('.');
    let (Some(user), Some(nonce), Some(issued), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let issued = DateTime::<Utc>::from_timestamp(issued.parse().ok()?, 0)?;
    (user == user_id.to_string() && issued <= now && now - issued < FORM_TOKEN_TTL).then_some(nonce)
}

/// Spends `token`, submitted by `user_id`.
pub async fn spend(
    store: &Store,
    signer: &SessionSigner,
    token: &str,
    user_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Spent, sea_orm::DbErr> {
    let Some(nonce) = nonce_of(signer, token, user_id, now) else {
        return Ok(Spent::Unusable);
    };
    Ok(if store.spend_form_token(nonce, user_id, now).await? {
        Spent::Now
    } else {
        Spent::Before
    })
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;

    fn signer() -> SessionSigner {
        SessionSigner::new("0123456789abcdef0123456789abcdef")
    }

    #[test]
    fn a_token_is_good_for_its_user_within_its_lifetime_only() {
        let (user, other) = (Uuid::new_v4(), Uuid::new_v4());
        let now = Utc::now();
        let token = issue(&signer(), user, now);
        let nonce = nonce_of(&signer(), &token, user, now).unwrap();
        assert!(token.contains(nonce));
        assert_eq!(nonce_of(&signer(), &token, other, now), None);
        assert_eq!(
            nonce_of(&signer(), &token, user, now + FORM_TOKEN_TTL),
            None
        );
        assert_eq!(
            nonce_of(&signer(), &token, user, now - Duration::minutes(5)),
            None
        );
        let other_key = SessionSigner::new("another-key-another-key-another-key");
        assert_eq!(nonce_of(&other_key, &token, user, now), None);
        // A session cookie's signature does not make a form token.
        assert_eq!(
            nonce_of(&signer(), &signer().sign(&format!("{user}.n.1")), user, now),
            None
        );
        assert_eq!(nonce_of(&signer(), "", user, now), None);
        assert_eq!(nonce_of(&signer(), &"a".repeat(300), user, now), None);
    }
}
