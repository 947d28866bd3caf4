//! [`ConnectionService`]: the use cases around an account's tokens. Connecting an account
//! (start: a single-use state and the platform's authorize URL; callback: the state checked,
//! the code exchanged, the accounts stored with their tokens sealed to their rows), and the token keeper's
//! sweep (refreshes asked of the account actors, expired instagram tokens marked invalid).
//!
//! Whenever a stored token changes, the account's actor is told ([`ConnectionService::token_changed`]),
//! since it holds the decrypted token it had when it started.

use std::{sync::Arc, time::Duration};

use chrono::{DateTime, Utc};

use uuid::Uuid;

use crate::oauth::{self, LoginRoute, OAuthContext, OAuthError};
use entity::oauth_state::ConnectionKind;

use crate::{
    actors::supervisor::Supervisor,
    clock::SharedClock,
    config::{OAuthConfig, PlatformsConfig},
    crypto::{self, Binding, Pkce, TokenCipher},
    domain::plan::Platform,
    error::{ApiError, ErrorCode},
    store::{NewAccount, StateOwner, Store},
    tokens::PlainTokens,
};

/// What the platform sent back to the callback.
pub struct Callback {
    /// The `state` presented (empty when missing: then it matches nothing).
    pub state: String,
    pub code: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

/// Connecting accounts and keeping their tokens fresh. Holds only what those use.
pub struct ConnectionService {
    store: Store,
    cipher: TokenCipher,
    clock: SharedClock,
    /// The client for platform calls (token exchanges and profile reads).
    http: reqwest::Client,
    platforms: PlatformsConfig,
    oauth: OAuthConfig,
    /// Base URL users reach us at (the callback URL is under it), without a trailing slash.
    public_url: String,
    /// Tells account actors of a new token, and runs their refreshes.
    supervisor: Arc<Supervisor>,
}

impl ConnectionService {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: Store,
        cipher: TokenCipher,
        clock: SharedClock,
        http: reqwest::Client,
        platforms: PlatformsConfig,
        oauth: OAuthConfig,
        public_url: String,
        supervisor: Arc<Supervisor>,
    ) -> Self {
        Self {
            store,
            cipher,
            clock,
            http,
            platforms,
            oauth,
            public_url,
            supervisor,
        }
    }

    /// Where the platform sends the browser back.
    fn redirect_uri(&self, platform: Platform) -> String {
        format!(
            "{}/api/connect/{}/callback",
            self.public_url,
            platform.as_str()
        )
    }

    /// Starts a connection of `platform` through `route` for the session `owner`: stores a
    /// single-use state (with the PKCE verifier, encrypted) and answers the authorize URL.
    pub async fn start(
        &self,
        owner: StateOwner<'_>,
        platform: Platform,
        route: LoginRoute,
        login_hint: Option<&str>,
    ) -> Result<String, ApiError> {
        let now = self.clock.now();
        let pkce = Pkce::generate();
        let state_value = crypto::random_token(24);
        let url = oauth::authorize_url(
            &self.oauth,
            platform,
            route,
            &state_value,
            &pkce.challenge,
            &self.redirect_uri(platform),
            login_hint,
        )?;
        let state_hash = crypto::sha256_hex(&state_value);
        let verifier = self
            .cipher
            .encrypt(&Binding::oauth_code_verifier(&state_hash), &pkce.verifier)
            .map_err(|e| ApiError::internal(format!("cannot encrypt the PKCE verifier: {e}")))?;
        self.store
            .insert_oauth_state(
                &state_hash,
                owner,
                state_kind(platform, route),
                verifier,
                now,
                now + chrono::Duration::seconds(self.oauth.state_ttl_secs.max(1) as i64),
            )
            .await?;
        Ok(url)
    }

    /// Finishes a connection: checks the state (it must be the session's own, unused and
    /// unexpired), exchanges the code, stores the accounts. Returns them.
    pub async fn complete(
        &self,
        user_id: Uuid,
        session_hash: &str,
        platform: Platform,
        callback: Callback,
    ) -> Result<Vec<entity::account::Model>, ApiError> {
        let now = self.clock.now();
        // An instagram state was started through one of two routes; the state names which.
        let routes: &[LoginRoute] = if platform == Platform::Instagram {
            &[LoginRoute::InstagramLogin, LoginRoute::FacebookLogin]
        } else {
            &[LoginRoute::FacebookLogin]
        };
        let mut pending = None;
        for &route in routes {
            if let Some(found) = self
                .store
                .consume_oauth_state(
                    &crypto::sha256_hex(&callback.state),
                    StateOwner {
                        user_id,
                        session_hash,
                    },
                    state_kind(platform, route),
                    now,
                )
                .await?
            {
                pending = Some((found, route));
                break;
            }
        }
        let (pending, route) = pending.ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidOAuthState,
                "This connection link is unknown, expired, already used or was started in another session; start the connection again",
            )
        })?;
        if let Some(error) = callback.error {
            return Err(ApiError::new(
                ErrorCode::ConnectionFailed,
                format!("The connection was not authorized on {}", platform.as_str()),
            )
            .with_details(format!(
                "{error}: {}",
                callback.error_description.unwrap_or_default()
            )));
        }
        let code = callback
            .code
            .ok_or_else(|| ApiError::missing_parameter("code"))?;
        // A verifier that does not open for its state (sealed by a key that is not configured
        // any more, or not bound to its state) only means this connection must start again.
        let verifier = self
            .cipher
            .decrypt(
                &Binding::oauth_code_verifier(&pending.state_hash),
                &pending.code_verifier_enc,
            )
            .map_err(|e| {
                tracing::warn!(error = %e, "a connection's PKCE verifier does not open");
                ApiError::new(
                    ErrorCode::InvalidOAuthState,
                    "This connection link can no longer be completed; start the connection again",
                )
            })?;
        let ctx = OAuthContext {
            http: &self.http,
            platforms: &self.platforms,
            oauth: &self.oauth,
            now,
        };
        let identities = oauth::complete(
            &ctx,
            platform,
            route,
            &code,
            &verifier,
            &self.redirect_uri(platform),
        )
        .await?;
        let mut connected = Vec::with_capacity(identities.len());
        for identity in identities {
            let new = NewAccount {
                user_id,
                platform: identity.platform,
                external_id: identity.external_id,
                display_name: identity.display_name,
                username: identity.username,
                account_type: identity.account_type,
                profile_picture_url: identity.profile_picture_url,
                tokens: PlainTokens::new(&identity.access_token, identity.refresh_token.as_deref()),
                token_expires_at: identity.token_expires_at,
                data_access_expires_at: identity.data_access_expires_at,
                login_route: route,
                token_issued_at: Some(now),
            };
            let (account, created) = self
                .store
                .upsert_connected_account(new, &self.cipher, now)
                .await?;
            if !created {
                self.token_changed(account.id);
            }
            tracing::info!(account = %account.id, platform = %account.platform, created, "account connected");
            connected.push(account);
        }
        Ok(connected)
    }

    /// The account's stored token changed: its actor (if running) holds the old one, so the
    /// next request starts a fresh one from the row.
    pub fn token_changed(&self, account_id: Uuid) {
        self.supervisor.reload(account_id);
    }

    /// How often the token keeper sweeps.
    pub fn sweep_every(&self) -> Duration {
        Duration::from_secs(self.oauth.refresh_sweep_secs.max(1))
    }

    /// One sweep of the stored expiries: asks the account actor of every token in its refresh
    /// window to refresh it, and marks instagram accounts whose 60-day token expired invalid.
    pub async fn sweep_tokens(&self) -> Result<(), sea_orm::DbErr> {
        let config = &self.oauth;
        let now = self.clock.now();
        let threads = self
            .store
            .accounts_expiring(
                &[Platform::Threads],
                now + chrono::Duration::days(config.threads_refresh_days_before),
            )
            .await?;
        let short_lived = self
            .store
            .accounts_expiring(
                &[Platform::Tiktok, Platform::Youtube, Platform::X],
                now + chrono::Duration::seconds(config.refresh_margin_secs),
            )
            .await?;
        // Facebook Login instagram tokens have no refresh grant: only Instagram Login ones.
        let instagram_login: Vec<_> = self
            .store
            .accounts_expiring(
                &[Platform::Instagram],
                now + chrono::Duration::days(config.instagram_login_refresh_days_before),
            )
            .await?
            .into_iter()
            .filter(|a| a.login_route == LoginRoute::InstagramLogin)
            .filter(|a| {
                // Not before it is 24 h old, which the actor would only put off anyway.
                oauth::refresh_due(
                    config,
                    Platform::Instagram,
                    a.login_route,
                    a.token_expires_at,
                    a.token_issued_at,
                )
                .is_some_and(|due| due <= now)
            })
            .collect();
        for account in threads.iter().chain(&short_lived).chain(&instagram_login) {
            if let Err(error) = self.supervisor.refresh_token(account).await {
                tracing::warn!(account = %account.id, %error, "could not ask for a token refresh");
            }
        }
        for account in self
            .store
            .accounts_expiring(&[Platform::Instagram], now)
            .await?
        {
            self.store
                .mark_account_invalid(
                    account.id,
                    "TokenExpired: the 60-day instagram token has expired; reconnect the account",
                    now,
                )
                .await?;
            self.token_changed(account.id);
        }
        self.announce_expiries(now).await
    }

    /// Writes an `account.token_expiring` webhook event, once per expiry, for every token (and
    /// facebook data-access window) ending within [`EXPIRY_NOTICE_DAYS`] that the service will
    /// not renew on its own: see [`needs_expiry_notice`].
    async fn announce_expiries(&self, now: DateTime<Utc>) -> Result<(), sea_orm::DbErr> {
        let horizon = now + chrono::Duration::days(EXPIRY_NOTICE_DAYS);
        let within = |at: Option<DateTime<Utc>>| at.filter(|at| *at > now && *at <= horizon);
        for account in self.store.accounts_nearing_expiry(now, horizon).await? {
            if let Some(expires) = within(account.token_expires_at)
                && needs_expiry_notice(&self.oauth, &account, expires, now)
            {
                self.store
                    .note_token_expiring(account.id, false, expires, now)
                    .await?;
            }
            if let Some(ends) = within(account.data_access_expires_at) {
                self.store
                    .note_token_expiring(account.id, true, ends, now)
                    .await?;
            }
        }
        Ok(())
    }
}

/// How long before a token's end its owner is told (`account.token_expiring`).
pub const EXPIRY_NOTICE_DAYS: i64 = 7;

/// Whether a token ending at `expires` warrants telling its owner now. Tokens the service does
/// not renew (facebook, instagram through Facebook Login) do, from seven days before. Threads
/// and Instagram Login tokens are renewed ahead of their end (`oauth.*_refresh_days_before`):
/// their owner is told only once a renewal is a day overdue. TikTok, YouTube and X tokens last
/// hours and are renewed by their refresh grant; a refresh that fails marks the account invalid
/// (`account.invalid`) instead.
pub fn needs_expiry_notice(
    config: &OAuthConfig,
    account: &entity::account::Model,
    expires: DateTime<Utc>,
    now: DateTime<Utc>,
) -> bool {
    let renewed_days_before = match (account.platform, account.login_route) {
        (Platform::Threads, _) => config.threads_refresh_days_before,
        (Platform::Instagram, LoginRoute::InstagramLogin) => {
            config.instagram_login_refresh_days_before
        }
        (Platform::Facebook | Platform::Instagram, _) => return true,
        (Platform::Tiktok | Platform::Youtube | Platform::X, _) => return false,
    };
    let overdue = chrono::Duration::days(renewed_days_before.saturating_sub(1));
    expires - now <= overdue
}

/// What the stored state names as the connection's kind: the platform, or for instagram
/// through Instagram Login, the route (so its callback finishes that flow).
fn state_kind(platform: Platform, route: LoginRoute) -> ConnectionKind {
    if oauth::is_instagram_login(platform, route) {
        ConnectionKind::InstagramLogin
    } else {
        ConnectionKind::from(platform)
    }
}

impl From<OAuthError> for ApiError {
    fn from(error: OAuthError) -> Self {
        match error {
            OAuthError::NotConfigured(_) => ApiError::service_unavailable(error.to_string()),
            OAuthError::Unavailable(_) => {
                tracing::warn!(%error, "platform unreachable during a connection");
                ApiError::service_unavailable("The platform is unreachable; try connecting again")
            }
            OAuthError::Refused(reason) => ApiError::new(
                ErrorCode::ConnectionFailed,
                "The platform did not complete the connection",
            )
            .with_details(reason),
        }
    }
}
