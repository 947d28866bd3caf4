//! An account actor's token refresh: when it is due, running it once at a time, and the refresh
//! itself under the account's refresh lease in the database.

use std::sync::Arc;

use actix::prelude::*;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{AccountActor, in_runtime};
use crate::{
    crypto::CipherError, domain::plan::Platform, error::ErrorCode, oauth,
    publish::run::PublishDeps, tokens,
};

impl AccountActor {
    /// Whether the token is in its refresh window (spec §5.8: threads 5 days before expiry;
    /// tiktok, youtube and x shortly before their access token expires).
    pub(super) fn refresh_is_due(&self) -> bool {
        oauth::refresh_due(
            &self.deps().oauth,
            self.platform,
            self.token.credentials.login_route,
            self.token.expires_at,
            self.token.issued_at,
        )
        .is_some_and(|due| due <= self.deps().clock.now())
    }

    /// Refreshes the token in a spawned future, once at a time. Across instances the account's
    /// refresh lease in the database decides who refreshes; the others adopt the stored result.
    pub(super) fn start_refresh(&mut self, ctx: &mut Context<Self>) {
        if self.refreshing || self.token_failure().is_some() {
            return;
        }
        let platform = self.platform;
        self.refreshing = true;
        let deps = self.deps().clone();
        let account_id = self.seat.account_id;
        let route = self.token.credentials.login_route;
        let work = async move { refresh_account(&deps, account_id, platform, route).await };
        ctx.spawn(in_runtime(work).into_actor(self).map(|outcome, actor, ctx| {
            actor.refreshing = false;
            match outcome {
                RefreshOutcome::Refreshed { access_token, expires_at, issued_at } => {
                    let token = Arc::make_mut(&mut actor.token);
                    token.credentials.access_token = access_token;
                    token.expires_at = expires_at;
                    token.issued_at = issued_at;
                    actor.deps().metrics.inc("token_refreshes_total", &[("platform", actor.platform.as_str()), ("outcome", "refreshed")]);
                }
                RefreshOutcome::Dead(reason) => {
                    actor.deps().metrics.inc("token_refreshes_total", &[("platform", actor.platform.as_str()), ("outcome", "revoked")]);
                    actix::spawn(actor.token_dead(ErrorCode::InvalidToken, reason));
                }
                RefreshOutcome::Failed(reason) => {
                    tracing::warn!(account = %actor.seat.account_id, %reason, "token refresh failed; retried at the next sweep");
                    actor.deps().metrics.inc("token_refreshes_total", &[("platform", actor.platform.as_str()), ("outcome", "failed")]);
                    actor.note_error(format!("token refresh: {reason}"));
                }
                RefreshOutcome::Busy => {}
            }
            actor.post_health();
            // Publishes that waited for the refresh go now (with a dead token they fail fast).
            actor.start_next(ctx);
        }));
    }
}

/// Refresh the account's token now (the token keeper sends it when the refresh window opens).
pub struct RefreshToken;

impl Message for RefreshToken {
    type Result = ();
}

impl Handler<RefreshToken> for AccountActor {
    type Result = ();

    fn handle(&mut self, _msg: RefreshToken, ctx: &mut Self::Context) {
        let _span = tracing::debug_span!("account_actor", account = %self.seat.account_id, message = "refresh").entered();
        self.touch();
        self.start_refresh(ctx);
    }
}

/// How a refresh ended.
enum RefreshOutcome {
    /// New tokens, stored (by us, or by another instance whose result we adopt).
    Refreshed {
        access_token: secrecy::SecretString,
        expires_at: Option<DateTime<Utc>>,
        issued_at: Option<DateTime<Utc>>,
    },
    /// The platform refused the refresh for good (revoked, expired refresh token).
    Dead(String),
    /// A transient failure: the next sweep tries again.
    Failed(String),
    /// Another instance holds the refresh lease.
    Busy,
}

/// One refresh, from the stored row (the truth across instances) under its refresh lease.
async fn refresh_account(
    deps: &PublishDeps,
    account_id: Uuid,
    platform: Platform,
    route: oauth::LoginRoute,
) -> RefreshOutcome {
    let store = &deps.store;
    // Under the account's publish lease too: no other instance publishes with the token being
    // replaced, and the next publish anywhere reads the new one (see `publish::leased`).
    let _lease = match deps
        .cluster
        .hold(account_id, deps.cluster.takeover() * 2, None)
        .await
    {
        Ok(lease) => lease,
        Err(crate::cluster::LeaseError::Busy { .. }) => return RefreshOutcome::Busy,
        Err(e) => return RefreshOutcome::Failed(e.to_string()),
    };
    let now = deps.clock.now();
    match store
        .take_refresh_lease(account_id, now, now + chrono::Duration::seconds(120))
        .await
    {
        Ok(true) => {}
        Ok(false) => return RefreshOutcome::Busy,
        Err(e) => return RefreshOutcome::Failed(format!("database: {e}")),
    }
    let outcome = refresh_under_lease(deps, account_id, platform, route, now).await;
    if !matches!(outcome, RefreshOutcome::Refreshed { .. })
        && let Err(e) = store.release_refresh_lease(account_id).await
    {
        tracing::warn!(error = %e, %account_id, "cannot release a refresh lease; it lapses by itself");
    }
    outcome
}

async fn refresh_under_lease(
    deps: &PublishDeps,
    account_id: Uuid,
    platform: Platform,
    route: oauth::LoginRoute,
    now: DateTime<Utc>,
) -> RefreshOutcome {
    let row = match deps.store.find_account(account_id).await {
        Ok(Some(row)) => row,
        Ok(None) => return RefreshOutcome::Dead("the account is gone".into()),
        Err(e) => return RefreshOutcome::Failed(format!("database: {e}")),
    };
    // A token that does not open for this row is not sent to the platform. Failed, not Dead:
    // should a key be missing from the configuration, restoring it revives the account.
    let unreadable =
        |e: CipherError| RefreshOutcome::Failed(format!("cannot decrypt a stored token: {e}"));
    let access = match tokens::open_access(&deps.cipher, &row) {
        Ok(token) => token,
        Err(e) => return unreadable(e),
    };
    // Another instance refreshed since this actor loaded its token: adopt it.
    let still_due = oauth::refresh_due(
        &deps.oauth,
        platform,
        route,
        row.token_expires_at,
        row.token_issued_at,
    )
    .is_some_and(|due| due <= now);
    if !still_due {
        if let Err(e) = deps.store.release_refresh_lease(account_id).await {
            tracing::warn!(error = %e, %account_id, "cannot release a refresh lease");
        }
        return RefreshOutcome::Refreshed {
            access_token: secrecy::SecretString::from(access),
            expires_at: row.token_expires_at,
            issued_at: row.token_issued_at,
        };
    }
    let refresh_token = match tokens::open_refresh(&deps.cipher, &row) {
        Ok(token) => token,
        Err(e) => return unreadable(e),
    };
    let http = deps.http();
    let ctx = oauth::OAuthContext {
        http: &http,
        platforms: &deps.platforms,
        oauth: &deps.oauth,
        now,
    };
    let refreshed = match oauth::refresh(&ctx, platform, route, &access, refresh_token.as_deref())
        .await
    {
        Ok(refreshed) => refreshed,
        Err(error) if error.invalidates_token() => return RefreshOutcome::Dead(error.to_string()),
        Err(error) => return RefreshOutcome::Failed(error.to_string()),
    };
    let plain =
        tokens::PlainTokens::new(&refreshed.access_token, refreshed.refresh_token.as_deref());
    let Ok(sealed) = tokens::seal(&deps.cipher, account_id, &plain) else {
        return RefreshOutcome::Failed("cannot encrypt the new tokens".into());
    };
    let tokens = crate::store::NewTokens {
        sealed,
        token_expires_at: refreshed.expires_at,
    };
    // A rotated refresh token is only ours once stored; failing here loses it, so say so loudly.
    if let Err(e) = deps.store.store_refreshed_tokens(tokens, now).await {
        tracing::error!(error = %e, %account_id, "refreshed tokens could not be stored; the account may need reconnecting");
        return RefreshOutcome::Failed(format!("database: {e}"));
    }
    tracing::info!(%account_id, platform = platform.as_str(), "token refreshed");
    RefreshOutcome::Refreshed {
        access_token: secrecy::SecretString::from(refreshed.access_token),
        expires_at: refreshed.expires_at,
        issued_at: Some(now),
    }
}
