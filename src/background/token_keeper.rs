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

use std::sync::Arc;

use actix::prelude::*;
use serde::Serialize;

use crate::services::connection::ConnectionService;
use crate::store::in_runtime::in_runtime;

/// What the operator view shows of the token keeper.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct TokenKeeperStatus {
    /// A sweep is running.
    pub sweeping: bool,
    /// Completed sweeps (failed ones too): a waiter that sees it advance twice knows a whole
    /// sweep started after it read this. (The refreshes a sweep asks for run on the accounts'
    /// actors and may end after it.)
    pub passes: u64,
    #[schema(required = true)]
    pub last_error: Option<String>,
}

pub struct TokenKeeper {
    service: Arc<ConnectionService>,
    status: TokenKeeperStatus,
}

impl TokenKeeper {
    pub fn new(service: Arc<ConnectionService>) -> Self {
        Self {
            service,
            status: TokenKeeperStatus::default(),
        }
    }

    fn sweep(&mut self, ctx: &mut Context<Self>) {
        if self.status.sweeping {
            return;
        }
        self.status.sweeping = true;
        let service = self.service.clone();
        ctx.spawn(
            in_runtime(async move { service.sweep_tokens().await })
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

impl Actor for TokenKeeper {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.sweep(ctx);
        let every = self.service.sweep_every();
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
