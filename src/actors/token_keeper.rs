//! The token keeper: every `oauth.refresh_sweep_secs` it looks at the stored expiries (so it
//! survives restarts) and
//! - asks the account actor of every token in its refresh window to refresh it (threads 5 days
//!   before expiry; tiktok, youtube and x `oauth.refresh_margin_secs` before), the actor owning
//!   the refresh;
//! - asks for the refresh of instagram tokens from Instagram Login
//!   `oauth.instagram_login_refresh_days_before` days before their 60 days end (the account's
//!   actor also waits until the token is 24 h old, which Meta requires; see
//!   [`crate::oauth::refresh_due`]);
//! - marks instagram accounts whose 60-day token has expired invalid (instagram tokens from
//!   Facebook Login have no refresh grant: the user reconnects; an Instagram Login token that
//!   could not be refreshed in time ends the same way).

use std::time::Duration;

use actix::prelude::*;
use actix_web::web;
use serde::Serialize;

use super::in_runtime::in_runtime;
use crate::{AppState, publish::plan::Platform};

/// What the operator view shows of the token keeper.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TokenKeeperStatus {
    /// A sweep is running.
    pub sweeping: bool,
    /// Completed sweeps (failed ones too): a waiter that sees it advance twice knows a whole
    /// sweep started after it read this. (The refreshes a sweep asks for run on the accounts'
    /// actors and may end after it.)
    pub passes: u64,
    pub last_error: Option<String>,
}

pub struct TokenKeeper {
    state: web::Data<AppState>,
    status: TokenKeeperStatus,
}

impl TokenKeeper {
    pub fn new(state: web::Data<AppState>) -> Self {
        Self {
            state,
            status: TokenKeeperStatus::default(),
        }
    }

    fn sweep(&mut self, ctx: &mut Context<Self>) {
        if self.status.sweeping {
            return;
        }
        self.status.sweeping = true;
        let state = self.state.clone();
        ctx.spawn(
            in_runtime(async move { sweep(&state).await })
                .into_actor(self)
                .map(|result, actor, _| {
                    actor.status.sweeping = false;
                    actor.status.passes += 1;
                    if let Err(error) = result {
                        tracing::warn!(%error, "token sweep failed; trying again at the next one");
                        actor.status.last_error = Some(format!("database: {error}"));
                    }
                }),
        );
    }
}

async fn sweep(state: &AppState) -> Result<(), sea_orm::DbErr> {
    let config = &state.config.oauth;
    let now = state.clock.now();
    let threads = state
        .store
        .accounts_expiring(
            &[Platform::Threads],
            now + chrono::Duration::days(config.threads_refresh_days_before),
        )
        .await?;
    let short_lived = state
        .store
        .accounts_expiring(
            &[Platform::Tiktok, Platform::Youtube, Platform::X],
            now + chrono::Duration::seconds(config.refresh_margin_secs),
        )
        .await?;
    // Facebook Login instagram tokens have no refresh grant: only Instagram Login ones.
    let instagram_login: Vec<_> = state
        .store
        .accounts_expiring(
            &[Platform::Instagram],
            now + chrono::Duration::days(config.instagram_login_refresh_days_before),
        )
        .await?
        .into_iter()
        .filter(|a| a.login_route == entity::account::LoginRoute::InstagramLogin)
        .filter(|a| {
            // Not before it is 24 h old, which the actor would only put off anyway.
            crate::oauth::refresh_due(
                config,
                crate::publish::plan::Platform::Instagram,
                a.login_route,
                a.token_expires_at,
                a.token_issued_at,
            )
            .is_some_and(|due| due <= now)
        })
        .collect();
    for account in threads.iter().chain(&short_lived).chain(&instagram_login) {
        if let Err(error) = state.supervisor.refresh_token(account).await {
            tracing::warn!(account = %account.id, %error, "could not ask for a token refresh");
        }
    }
    for account in state
        .store
        .accounts_expiring(&[Platform::Instagram], now)
        .await?
    {
        state
            .store
            .mark_account_invalid(
                account.id,
                "TokenExpired: the 60-day instagram token has expired; reconnect the account",
                now,
            )
            .await?;
        state.supervisor.reload(account.id);
    }
    Ok(())
}

impl Actor for TokenKeeper {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.sweep(ctx);
        let every = Duration::from_secs(self.state.config.oauth.refresh_sweep_secs.max(1));
        ctx.run_interval(every, |actor, ctx| actor.sweep(ctx));
    }
}

/// The token keeper's status (operator view).
pub struct GetTokenKeeperStatus;

impl Message for GetTokenKeeperStatus {
    type Result = TokenKeeperStatus;
}

impl Handler<GetTokenKeeperStatus> for TokenKeeper {
    type Result = MessageResult<GetTokenKeeperStatus>;

    fn handle(&mut self, _msg: GetTokenKeeperStatus, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.status.clone())
    }
}
