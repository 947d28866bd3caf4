//! Connecting accounts over each platform's OAuth (`platform-apis.md` §1.4, §4.5, §5.9, §6.8,
//! §7.4) and refreshing their tokens. Plain functions: the connection service
//! (`services::connection`) runs the connect flow and the token keeper's sweep, the account
//! actor runs refreshes (it owns the token state).
//!
//! facebook and instagram both use the Meta app (Facebook Login): a user token, exchanged for a
//! long-lived one, lists the user's pages with their page tokens (which do not expire) and the
//! instagram business account linked to each page (used with the 60-day user token).
//!
//! instagram also connects through Instagram Login (`platform-apis.md` §3.7), the route Meta
//! offers professional accounts without a facebook page: the Instagram app's authorize page, a
//! code → short-lived token → 60-day token, the user's profile from `graph.instagram.com`, and a
//! refresh once the token is at least 24 h old ([`LoginRoute`]).

use chrono::{DateTime, Utc};
use secrecy::ExposeSecret;
use serde_json::Value;

pub use entity::account::LoginRoute;

mod call;
mod complete;
mod instagram_login;
mod meta;
mod refresh;

pub use complete::complete;
pub use refresh::{refresh, refresh_due};

use crate::{
    config::{OAuthConfig, PlatformsConfig},
    domain::plan::Platform,
    platforms::PlatformError,
};

/// Facebook's data-access window: data access must be re-authorized every 90 days (spec §5.8).
pub const DATA_ACCESS_DAYS: i64 = 90;

/// An account the user connected, as the platform describes it, with its tokens.
#[derive(Debug, Clone)]
pub struct Identity {
    pub platform: Platform,
    pub external_id: String,
    pub display_name: String,
    pub username: Option<String>,
    pub account_type: Option<String>,
    pub profile_picture_url: Option<String>,
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub token_expires_at: Option<DateTime<Utc>>,
    pub data_access_expires_at: Option<DateTime<Utc>>,
}

/// Tokens after a refresh.
#[derive(Debug, Clone)]
pub struct Refreshed {
    pub access_token: String,
    /// A new refresh token where the platform rotates them (TikTok, X); `None` keeps the old.
    pub refresh_token: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// What the flows need.
pub struct OAuthContext<'a> {
    pub http: &'a reqwest::Client,
    pub platforms: &'a PlatformsConfig,
    pub oauth: &'a OAuthConfig,
    pub now: DateTime<Utc>,
}

/// What the callback brought, with the app it is redeemed through.
struct CodeGrant<'a> {
    client: &'a str,
    secret: &'a str,
    code: &'a str,
    code_verifier: &'a str,
    redirect_uri: &'a str,
}

/// Why a connection failed.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("the {0} app is not configured (oauth.{0}_client_id and its secret)")]
    NotConfigured(&'static str),
    #[error("{0}")]
    Refused(String),
    #[error("the platform is unreachable: {0}")]
    Unavailable(String),
}

impl From<PlatformError> for OAuthError {
    fn from(error: PlatformError) -> Self {
        if error.is_transient() {
            OAuthError::Unavailable(error.to_string())
        } else {
            OAuthError::Refused(error.to_string())
        }
    }
}

/// The scopes Instagram Login asks for: reading the profile and media, publishing, insights
/// (the `instagram_business_*` names; the older `business_*` ones are dead since 2025-01-27).
pub const INSTAGRAM_LOGIN_SCOPES: &str = "instagram_business_basic,instagram_business_content_publish,instagram_business_manage_insights";

/// The shortest age at which Meta refreshes an Instagram Login token (`platform-apis.md` §3.7).
pub const INSTAGRAM_LOGIN_MIN_REFRESH_AGE_HOURS: i64 = 24;

/// Whether an account of `platform` connected through `route` uses Instagram Login.
pub fn is_instagram_login(platform: Platform, route: LoginRoute) -> bool {
    platform == Platform::Instagram && route == LoginRoute::InstagramLogin
}

/// What the Google authorization asks for: uploads, reading the channel and its videos, and
/// Analytics reports (each the scope one of our calls relies on).
const GOOGLE_SCOPES: &str = "https://www.googleapis.com/auth/youtube.upload \
    https://www.googleapis.com/auth/youtube.readonly \
    https://www.googleapis.com/auth/yt-analytics.readonly";
/// What the X authorization asks for: posting (`tweet.write` with `tweet.read` and
/// `users.read`, per `POST /2/tweets`'s security), media uploads, and a refresh token.
const X_SCOPES: &str = "tweet.read tweet.write users.read media.write offline.access";

/// The scopes of `asked` that a token response's `scope` (space- or comma-separated) lacks.
/// Google and TikTok let the person untick scopes on the consent screen and say in `scope`
/// what was granted; without `scope` the platform said nothing and nothing is presumed missing.
fn missing_scopes<'a>(asked: &'a str, granted: Option<&str>) -> Vec<&'a str> {
    let Some(granted) = granted else {
        return Vec::new();
    };
    let granted: Vec<&str> = granted.split([' ', ',']).collect();
    asked
        .split([' ', ','])
        .filter(|s| !s.is_empty() && !granted.contains(s))
        .collect()
}

/// Refuses a connection whose authorization did not grant every scope we asked for, naming
/// them: the account would otherwise connect and fail later with a bare permission error.
fn require_granted(platform: &str, asked: &str, tokens: &Value) -> Result<(), OAuthError> {
    let missing = missing_scopes(asked, tokens["scope"].as_str());
    if missing.is_empty() {
        return Ok(());
    }
    Err(OAuthError::from(PlatformError::Permission(format!(
        "the {platform} authorization did not grant {}; reconnect and allow {}",
        missing.join(", "),
        if missing.len() == 1 { "it" } else { "them" }
    ))))
}

/// The app a platform connects through: (client id, secret, authorize URL).
fn app(
    config: &OAuthConfig,
    platform: Platform,
    route: LoginRoute,
) -> Result<(&str, &str, &str), OAuthError> {
    let (name, id, secret, url) = match platform {
        Platform::Instagram if route == LoginRoute::InstagramLogin => (
            "instagram_login",
            &config.instagram_login_client_id,
            &config.instagram_login_client_secret,
            &config.instagram_login_authorize_url,
        ),
        Platform::Facebook | Platform::Instagram => (
            "meta",
            &config.meta_client_id,
            &config.meta_client_secret,
            &config.meta_authorize_url,
        ),
        Platform::Threads => (
            "threads",
            &config.threads_client_id,
            &config.threads_client_secret,
            &config.threads_authorize_url,
        ),
        Platform::Tiktok => (
            "tiktok",
            &config.tiktok_client_key,
            &config.tiktok_client_secret,
            &config.tiktok_authorize_url,
        ),
        Platform::Youtube => (
            "google",
            &config.google_client_id,
            &config.google_client_secret,
            &config.google_authorize_url,
        ),
        Platform::X => (
            "x",
            &config.x_client_id,
            &config.x_client_secret,
            &config.x_authorize_url,
        ),
    };
    match secret {
        Some(secret) if !id.is_empty() => Ok((id, secret.expose_secret(), url)),
        _ => Err(OAuthError::NotConfigured(name)),
    }
}

/// Whether the platform's flow takes PKCE (we send it wherever it is accepted).
pub fn uses_pkce(platform: Platform) -> bool {
    matches!(platform, Platform::Tiktok | Platform::Youtube | Platform::X)
}

/// The URL to send the user's browser to.
pub fn authorize_url(
    config: &OAuthConfig,
    platform: Platform,
    route: LoginRoute,
    state: &str,
    code_challenge: &str,
    redirect_uri: &str,
    login_hint: Option<&str>,
) -> Result<String, OAuthError> {
    let (client, _, base) = app(config, platform, route)?;
    let mut url =
        url::Url::parse(base).map_err(|e| OAuthError::Refused(format!("authorize URL: {e}")))?;
    {
        let mut q = url.query_pairs_mut();
        match platform {
            _ if is_instagram_login(platform, route) => {
                q.append_pair("client_id", client)
                    .append_pair("response_type", "code")
                    .append_pair("scope", INSTAGRAM_LOGIN_SCOPES);
            }
            Platform::Facebook | Platform::Instagram => {
                q.append_pair("client_id", client).append_pair("response_type", "code").append_pair(
                    "scope",
                    "pages_show_list,pages_manage_posts,pages_read_engagement,read_insights,business_management,instagram_basic,instagram_content_publish,instagram_manage_insights",
                );
            }
            Platform::Threads => {
                q.append_pair("client_id", client).append_pair("response_type", "code").append_pair(
                    "scope",
                    "threads_basic,threads_content_publish,threads_manage_insights,threads_read_replies",
                );
            }
            Platform::Tiktok => {
                q.append_pair("client_key", client)
                    .append_pair("response_type", "code")
                    .append_pair("scope", crate::platforms::tiktok::SCOPES);
            }
            Platform::Youtube => {
                q.append_pair("client_id", client)
                    .append_pair("response_type", "code")
                    .append_pair("scope", GOOGLE_SCOPES)
                    .append_pair("access_type", "offline")
                    .append_pair("prompt", "consent");
            }
            Platform::X => {
                q.append_pair("client_id", client)
                    .append_pair("response_type", "code")
                    .append_pair("scope", X_SCOPES);
            }
        }
        q.append_pair("redirect_uri", redirect_uri)
            .append_pair("state", state);
        if uses_pkce(platform) {
            q.append_pair("code_challenge", code_challenge)
                .append_pair("code_challenge_method", "S256");
        }
        if let Some(hint) = login_hint {
            q.append_pair("login_hint", hint);
        }
    }
    Ok(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_scope_the_person_did_not_grant_is_named() {
        assert_eq!(missing_scopes(X_SCOPES, Some(X_SCOPES)), Vec::<&str>::new());
        assert_eq!(
            missing_scopes(X_SCOPES, Some("tweet.read users.read offline.access")),
            ["tweet.write", "media.write"]
        );
        // Google may add scopes (openid) and order them as it likes.
        let granted = "openid https://www.googleapis.com/auth/yt-analytics.readonly \
            https://www.googleapis.com/auth/youtube.upload";
        assert_eq!(
            missing_scopes(GOOGLE_SCOPES, Some(granted)),
            ["https://www.googleapis.com/auth/youtube.readonly"]
        );
        // TikTok separates with commas.
        assert_eq!(
            missing_scopes("user.info.basic,video.publish", Some("user.info.basic")),
            ["video.publish"]
        );
        assert_eq!(missing_scopes(X_SCOPES, None), Vec::<&str>::new());
        let refused = require_granted("x", X_SCOPES, &serde_json::json!({"scope": "tweet.read"}));
        match refused {
            Err(OAuthError::Refused(message)) => {
                assert!(message.contains("missing permission"), "{message}");
                assert!(message.contains("tweet.write, users.read"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
