//! The OAuth apps accounts connect through, one per platform (`[oauth]`), and how early their
//! tokens are refreshed.

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::{PlatformsConfig, serialize_secret};

/// Connecting social accounts (OAuth apps per platform) and keeping their tokens alive.
/// Token endpoints live on the platform hosts of `[platforms]`, except Google's.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct OAuthConfig {
    /// How long a connection may take between `/api/connect/{platform}` and its callback.
    pub state_ttl_secs: u64,
    /// The Meta app (facebook pages and instagram, through Facebook Login).
    pub meta_client_id: String,
    #[serde(serialize_with = "serialize_secret")]
    pub meta_client_secret: Option<SecretString>,
    pub meta_authorize_url: String,
    /// Code → short-lived user token, and short → long-lived (`fb_exchange_token`): one endpoint.
    pub meta_token_url: String,
    /// The Instagram app (Instagram API with Instagram Login: professional instagram accounts
    /// without a facebook page). Its app id and secret are the Instagram app's own, shown under
    /// "Instagram > API setup with Instagram login" in the Meta app dashboard, not the
    /// Facebook app id.
    pub instagram_login_client_id: String,
    #[serde(serialize_with = "serialize_secret")]
    pub instagram_login_client_secret: Option<SecretString>,
    pub instagram_login_authorize_url: String,
    /// Code → short-lived (1 h) token (`POST`, form). The 60-day exchange and the refresh are on
    /// `platforms.instagram_login_graph_url`.
    pub instagram_login_token_url: String,
    /// Instagram Login tokens (60 days) are refreshed this many days before they expire, and
    /// never before they are 24 h old (Meta refuses younger ones).
    pub instagram_login_refresh_days_before: i64,
    pub threads_client_id: String,
    #[serde(serialize_with = "serialize_secret")]
    pub threads_client_secret: Option<SecretString>,
    pub threads_authorize_url: String,
    /// Code → short-lived token.
    pub threads_token_url: String,
    /// Short → long-lived token (`th_exchange_token`).
    pub threads_exchange_url: String,
    /// Long-lived token → a new one (`th_refresh_token`).
    pub threads_refresh_url: String,
    /// TikTok calls it the client key.
    pub tiktok_client_key: String,
    #[serde(serialize_with = "serialize_secret")]
    pub tiktok_client_secret: Option<SecretString>,
    pub tiktok_authorize_url: String,
    /// Code and refresh token → tokens.
    pub tiktok_token_url: String,
    pub google_client_id: String,
    #[serde(serialize_with = "serialize_secret")]
    pub google_client_secret: Option<SecretString>,
    pub google_authorize_url: String,
    /// Code and refresh token → tokens.
    pub google_token_url: String,
    pub x_client_id: String,
    #[serde(serialize_with = "serialize_secret")]
    pub x_client_secret: Option<SecretString>,
    pub x_authorize_url: String,
    /// Code and refresh token → tokens.
    pub x_token_url: String,
    /// How often the token keeper looks for tokens to refresh (and expired ones to report).
    pub refresh_sweep_secs: u64,
    /// threads long-lived tokens are refreshed this many days before they expire (spec §5.8).
    pub threads_refresh_days_before: i64,
    /// tiktok, youtube and x access tokens are refreshed this long before they expire.
    pub refresh_margin_secs: i64,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        Self {
            state_ttl_secs: 600,
            meta_client_id: String::new(),
            meta_client_secret: None,
            meta_authorize_url: "https://www.facebook.com/v24.0/dialog/oauth".into(),
            meta_token_url: "https://graph.facebook.com/v24.0/oauth/access_token".into(),
            instagram_login_client_id: String::new(),
            instagram_login_client_secret: None,
            instagram_login_authorize_url: "https://www.instagram.com/oauth/authorize".into(),
            instagram_login_token_url: "https://api.instagram.com/oauth/access_token".into(),
            instagram_login_refresh_days_before: 5,
            threads_client_id: String::new(),
            threads_client_secret: None,
            threads_authorize_url: "https://threads.net/oauth/authorize".into(),
            threads_token_url: "https://graph.threads.net/oauth/access_token".into(),
            threads_exchange_url: "https://graph.threads.net/access_token".into(),
            threads_refresh_url: "https://graph.threads.net/refresh_access_token".into(),
            tiktok_client_key: String::new(),
            tiktok_client_secret: None,
            tiktok_authorize_url: "https://www.tiktok.com/v2/auth/authorize/".into(),
            tiktok_token_url: "https://open.tiktokapis.com/v2/oauth/token/".into(),
            google_client_id: String::new(),
            google_client_secret: None,
            google_authorize_url: "https://accounts.google.com/o/oauth2/v2/auth".into(),
            google_token_url: "https://oauth2.googleapis.com/token".into(),
            x_client_id: String::new(),
            x_client_secret: None,
            x_authorize_url: "https://x.com/i/oauth2/authorize".into(),
            x_token_url: "https://api.x.com/2/oauth2/token".into(),
            refresh_sweep_secs: 300,
            threads_refresh_days_before: 5,
            refresh_margin_secs: 900,
        }
    }
}

impl OAuthConfig {
    /// Every app pointed at the simulator's authorize and token endpoints, with one client.
    pub fn simulator(base_url: &str, client_id: &str, client_secret: &str) -> Self {
        let base = base_url.trim_end_matches('/');
        let secret = || Some(SecretString::from(client_secret.to_string()));
        Self {
            meta_client_id: client_id.into(),
            meta_client_secret: secret(),
            meta_authorize_url: format!("{base}/oauth/meta/authorize"),
            meta_token_url: format!(
                "{base}/graph/{}/oauth/access_token",
                PlatformsConfig::default().graph_version
            ),
            instagram_login_client_id: client_id.into(),
            instagram_login_client_secret: secret(),
            instagram_login_authorize_url: format!("{base}/oauth/instagram/authorize"),
            instagram_login_token_url: format!("{base}/instagram-api/oauth/access_token"),
            threads_client_id: client_id.into(),
            threads_client_secret: secret(),
            threads_authorize_url: format!("{base}/oauth/threads/authorize"),
            threads_token_url: format!("{base}/threads/oauth/access_token"),
            threads_exchange_url: format!("{base}/threads/access_token"),
            threads_refresh_url: format!("{base}/threads/refresh_access_token"),
            tiktok_client_key: client_id.into(),
            tiktok_client_secret: secret(),
            tiktok_authorize_url: format!("{base}/oauth/tiktok/authorize"),
            tiktok_token_url: format!("{base}/tiktok/v2/oauth/token/"),
            google_client_id: client_id.into(),
            google_client_secret: secret(),
            google_authorize_url: format!("{base}/oauth/google/authorize"),
            google_token_url: format!("{base}/oauth/google/token"),
            x_client_id: client_id.into(),
            x_client_secret: secret(),
            x_authorize_url: format!("{base}/oauth/x/authorize"),
            x_token_url: format!("{base}/x/2/oauth2/token"),
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    /// Every upstream an operator may move defaults to the platform's real host, so an
    /// unconfigured service talks to the real platforms.
    #[test]
    fn upstream_urls_default_to_the_real_hosts() {
        let p = PlatformsConfig::default();
        assert_eq!(p.graph_video_url, "https://graph-video.facebook.com");
        assert_eq!(p.instagram_login_graph_url, "https://graph.instagram.com");
        assert_eq!(p.youtube_url, "https://www.googleapis.com");
        assert_eq!(p.youtube_upload_url, "https://www.googleapis.com");
        let o = OAuthConfig::default();
        for (url, real) in [
            (
                &o.meta_token_url,
                "https://graph.facebook.com/v24.0/oauth/access_token",
            ),
            (
                &o.threads_token_url,
                "https://graph.threads.net/oauth/access_token",
            ),
            (
                &o.threads_exchange_url,
                "https://graph.threads.net/access_token",
            ),
            (
                &o.threads_refresh_url,
                "https://graph.threads.net/refresh_access_token",
            ),
            (
                &o.tiktok_token_url,
                "https://open.tiktokapis.com/v2/oauth/token/",
            ),
            (&o.google_token_url, "https://oauth2.googleapis.com/token"),
            (&o.x_token_url, "https://api.x.com/2/oauth2/token"),
            (
                &o.instagram_login_authorize_url,
                "https://www.instagram.com/oauth/authorize",
            ),
            (
                &o.instagram_login_token_url,
                "https://api.instagram.com/oauth/access_token",
            ),
        ] {
            assert_eq!(url, real);
        }
        // The meta default follows the default Graph host and version.
        assert_eq!(
            o.meta_token_url,
            format!("{}/{}/oauth/access_token", p.graph_url, p.graph_version)
        );
    }
}
