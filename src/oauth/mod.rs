//! Connecting accounts over each platform's OAuth (`platform-apis.md` §1.4, §4.5, §5.9, §6.8,
//! §7.4) and refreshing their tokens. Plain functions: [`ConnectionService`] runs the connect
//! flow and the token keeper's sweep, the account actor runs refreshes (it owns the token state).
//!
//! facebook and instagram both use the Meta app (Facebook Login): a user token, exchanged for a
//! long-lived one, lists the user's pages with their page tokens (which do not expire) and the
//! instagram business account linked to each page (used with the 60-day user token).
//!
//! instagram also connects through Instagram Login (`platform-apis.md` §3.7), the route Meta
//! offers professional accounts without a facebook page: the Instagram app's authorize page, a
//! code → short-lived token → 60-day token, the user's profile from `graph.instagram.com`, and a
//! refresh once the token is at least 24 h old ([`LoginRoute`]).

use chrono::{DateTime, Duration, Utc};
use reqwest::Method;
use secrecy::ExposeSecret;
use serde_json::Value;

pub use entity::account::LoginRoute;

use crate::{
    config::{OAuthConfig, PlatformsConfig},
    domain::plan::Platform,
    platforms::{
        PlatformError, SendTraced,
        ids::{ApiPath, GraphId, InvalidId},
    },
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

/// A platform call answering JSON; errors classified by HTTP status and body.
async fn call(
    ctx: &OAuthContext<'_>,
    platform: &'static str,
    request: reqwest::RequestBuilder,
) -> Result<Value, PlatformError> {
    let response = request
        .timeout(std::time::Duration::from_secs(
            ctx.platforms.call_timeout_secs.max(1),
        ))
        .send_traced(platform)
        .await
        .map_err(PlatformError::from_reqwest)?;
    let status = response.status();
    let text = response.text().await.map_err(PlatformError::from_reqwest)?;
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    // TikTok answers API errors with 200 and an envelope; its token endpoint with `error`.
    let envelope_error = body["error"]["code"].as_str().is_some_and(|c| c != "ok");
    if status.is_success() && body.is_object() && !envelope_error && !body["error"].is_string() {
        return Ok(body);
    }
    let message = body["error_description"]
        .as_str()
        .or(body["error"]["message"].as_str())
        .or(body["error"].as_str())
        // api.instagram.com's own shape: `{"error_type","code","error_message"}`.
        .or(body["error_message"].as_str())
        .or(body["detail"].as_str())
        .map(str::to_string)
        .unwrap_or_else(|| {
            format!(
                "HTTP {}: {}",
                status.as_u16(),
                text.chars().take(200).collect::<String>()
            )
        });
    let grant = body["error"].as_str().unwrap_or_default();
    Err(if status.is_server_error() || status.as_u16() == 429 {
        PlatformError::Transient(message)
    } else if body["error"]["code"]
        .as_str()
        .is_some_and(|c| c.starts_with("scope_"))
    {
        // TikTok answers a scope it was not granted with 401 too; the token itself is good.
        PlatformError::Permission(message)
    } else if grant == "invalid_grant" || body["error"]["code"] == 190 || status.as_u16() == 401 {
        PlatformError::TokenInvalid(message)
    } else {
        PlatformError::Rejected(message)
    })
}

/// Who connected, as the platform's profile call says.
struct Profile {
    external_id: String,
    display_name: String,
    username: Option<String>,
    picture: Option<String>,
}

impl Profile {
    /// The identity with the tokens of an OAuth token answer (`refresh_token`, `expires_in`).
    fn with_tokens(
        self,
        platform: Platform,
        access_token: String,
        tokens: &Value,
        now: DateTime<Utc>,
    ) -> Identity {
        Identity {
            platform,
            external_id: self.external_id,
            display_name: self.display_name,
            username: self.username,
            account_type: None,
            profile_picture_url: self.picture,
            access_token,
            refresh_token: tokens["refresh_token"].as_str().map(str::to_string),
            token_expires_at: expiry(now, tokens, "expires_in"),
            data_access_expires_at: None,
        }
    }
}

fn expiry(now: DateTime<Utc>, body: &Value, field: &str) -> Option<DateTime<Utc>> {
    body[field]
        .as_i64()
        .filter(|s| *s > 0)
        .map(|s| now + Duration::seconds(s))
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn graph_base(p: &PlatformsConfig) -> String {
    format!(
        "{}/{}",
        p.graph_url.trim_end_matches('/'),
        p.graph_version.trim_matches('/')
    )
}

/// Exchanges the callback's code and reads who connected.
pub async fn complete(
    ctx: &OAuthContext<'_>,
    platform: Platform,
    route: LoginRoute,
    code: &str,
    code_verifier: &str,
    redirect_uri: &str,
) -> Result<Vec<Identity>, OAuthError> {
    let (client, secret, _) = app(ctx.oauth, platform, route)?;
    let http = ctx.http;
    let p = ctx.platforms;
    let now = ctx.now;
    match platform {
        _ if is_instagram_login(platform, route) => {
            instagram_login(ctx, client, secret, code, redirect_uri).await
        }
        Platform::Facebook | Platform::Instagram => {
            let url = &ctx.oauth.meta_token_url;
            let short = call(
                ctx,
                "meta",
                http.get(url).query(&[
                    ("client_id", client),
                    ("client_secret", secret),
                    ("redirect_uri", redirect_uri),
                    ("code", code),
                ]),
            )
            .await?;
            let short = short["access_token"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let long = call(
                ctx,
                "meta",
                http.get(url).query(&[
                    ("grant_type", "fb_exchange_token"),
                    ("client_id", client),
                    ("client_secret", secret),
                    ("fb_exchange_token", short.as_str()),
                ]),
            )
            .await?;
            let user_token = long["access_token"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let user_expires = expiry(now, &long, "expires_in");
            let pages = call(
                ctx,
                "meta",
                http.get(format!("{}/me/accounts", graph_base(p)))
                    .query(&[
                        ("fields", "id,name,access_token,instagram_business_account"),
                        ("limit", "100"),
                    ])
                    .bearer_auth(&user_token),
            )
            .await?;
            let pages = pages["data"].as_array().cloned().unwrap_or_default();
            let mut identities = Vec::new();
            for page in &pages {
                if platform == Platform::Facebook {
                    let (Some(id), Some(token)) =
                        (text(&page["id"]), page["access_token"].as_str())
                    else {
                        continue;
                    };
                    identities.push(Identity {
                        platform,
                        external_id: id,
                        display_name: page["name"].as_str().unwrap_or_default().to_string(),
                        username: None,
                        account_type: None,
                        profile_picture_url: None,
                        access_token: token.to_string(),
                        refresh_token: None,
                        // Page tokens from a long-lived user token do not expire.
                        token_expires_at: None,
                        data_access_expires_at: Some(now + Duration::days(DATA_ACCESS_DAYS)),
                    });
                } else if let Some(ig) = text(&page["instagram_business_account"]["id"]) {
                    // The id Meta handed back becomes a path: checked, and one segment.
                    let ig_id = GraphId::parse(&ig).map_err(InvalidId::unexpected)?;
                    let user = call(
                        ctx,
                        "meta",
                        http.get(ApiPath::id(&ig_id).on(&graph_base(p))?)
                            .query(&[("fields", "id,username,name")])
                            .bearer_auth(&user_token),
                    )
                    .await?;
                    let username = user["username"].as_str().map(str::to_string);
                    identities.push(Identity {
                        platform,
                        external_id: ig,
                        display_name: username
                            .clone()
                            .or_else(|| user["name"].as_str().map(str::to_string))
                            .unwrap_or_default(),
                        username,
                        // Only business (or creator) accounts link to a page and can publish.
                        account_type: Some("BUSINESS".into()),
                        profile_picture_url: None,
                        access_token: user_token.clone(),
                        refresh_token: None,
                        token_expires_at: user_expires,
                        data_access_expires_at: None,
                    });
                }
            }
            if identities.is_empty() {
                return Err(OAuthError::Refused(match platform {
                    Platform::Facebook => "the user granted no page".into(),
                    _ => "no instagram business or creator account is linked to the pages granted"
                        .into(),
                }));
            }
            Ok(identities)
        }
        Platform::Threads => {
            let base = p.threads_url.trim_end_matches('/');
            let short = call(
                ctx,
                "threads",
                http.post(&ctx.oauth.threads_token_url).form(&[
                    ("client_id", client),
                    ("client_secret", secret),
                    ("code", code),
                    ("grant_type", "authorization_code"),
                    ("redirect_uri", redirect_uri),
                ]),
            )
            .await?;
            let short = short["access_token"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let long = call(
                ctx,
                "threads",
                http.get(&ctx.oauth.threads_exchange_url).query(&[
                    ("grant_type", "th_exchange_token"),
                    ("client_secret", secret),
                    ("access_token", short.as_str()),
                ]),
            )
            .await?;
            let token = long["access_token"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let me = call(
                ctx,
                "threads",
                http.get(format!("{base}/{}/me", p.threads_version.trim_matches('/')))
                    .query(&[("fields", "id,username,name,threads_profile_picture_url")])
                    .bearer_auth(&token),
            )
            .await?;
            let username = me["username"].as_str().map(str::to_string);
            Ok(vec![Identity {
                platform,
                external_id: text(&me["id"])
                    .ok_or_else(|| OAuthError::Refused("threads gave no user id".into()))?,
                display_name: username.clone().unwrap_or_default(),
                username,
                account_type: None,
                profile_picture_url: me["threads_profile_picture_url"]
                    .as_str()
                    .map(str::to_string),
                access_token: token,
                refresh_token: None,
                token_expires_at: expiry(now, &long, "expires_in"),
                data_access_expires_at: None,
            }])
        }
        Platform::Tiktok => {
            let base = p.tiktok_url.trim_end_matches('/');
            let tokens = call(
                ctx,
                "tiktok",
                http.post(&ctx.oauth.tiktok_token_url).form(&[
                    ("client_key", client),
                    ("client_secret", secret),
                    ("code", code),
                    ("grant_type", "authorization_code"),
                    ("redirect_uri", redirect_uri),
                    ("code_verifier", code_verifier),
                ]),
            )
            .await?;
            require_granted("tiktok", crate::platforms::tiktok::SCOPES, &tokens)?;
            let token = tokens["access_token"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let info = call(
                ctx,
                "tiktok",
                http.request(Method::GET, format!("{base}/v2/user/info/"))
                    .query(&[("fields", "open_id,display_name,username,avatar_url")])
                    .bearer_auth(&token),
            )
            .await?;
            let user = &info["data"]["user"];
            let profile = Profile {
                external_id: text(&tokens["open_id"])
                    .or_else(|| text(&user["open_id"]))
                    .ok_or_else(|| OAuthError::Refused("tiktok gave no open_id".into()))?,
                display_name: user["display_name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                username: user["username"].as_str().map(str::to_string),
                picture: user["avatar_url"].as_str().map(str::to_string),
            };
            Ok(vec![profile.with_tokens(platform, token, &tokens, now)])
        }
        Platform::Youtube => {
            let tokens = call(
                ctx,
                "youtube",
                http.post(&ctx.oauth.google_token_url).form(&[
                    ("client_id", client),
                    ("client_secret", secret),
                    ("code", code),
                    ("grant_type", "authorization_code"),
                    ("redirect_uri", redirect_uri),
                    ("code_verifier", code_verifier),
                ]),
            )
            .await?;
            require_granted("youtube", GOOGLE_SCOPES, &tokens)?;
            let token = tokens["access_token"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let channels = call(
                ctx,
                "youtube",
                http.get(format!(
                    "{}/youtube/v3/channels",
                    p.youtube_url.trim_end_matches('/')
                ))
                .query(&[("part", "snippet"), ("mine", "true")])
                .bearer_auth(&token),
            )
            .await?;
            let channel = &channels["items"][0];
            let snippet = &channel["snippet"];
            let profile = Profile {
                external_id: text(&channel["id"]).ok_or_else(|| {
                    OAuthError::Refused("the Google account has no youtube channel".into())
                })?,
                display_name: snippet["title"].as_str().unwrap_or_default().to_string(),
                username: snippet["customUrl"].as_str().map(str::to_string),
                picture: snippet["thumbnails"]["default"]["url"]
                    .as_str()
                    .map(str::to_string),
            };
            Ok(vec![profile.with_tokens(platform, token, &tokens, now)])
        }
        Platform::X => {
            let base = p.x_url.trim_end_matches('/');
            let tokens = call(
                ctx,
                "x",
                http.post(&ctx.oauth.x_token_url)
                    .basic_auth(client, Some(secret))
                    .form(&[
                        ("code", code),
                        ("grant_type", "authorization_code"),
                        ("redirect_uri", redirect_uri),
                        ("code_verifier", code_verifier),
                    ]),
            )
            .await?;
            require_granted("x", X_SCOPES, &tokens)?;
            let token = tokens["access_token"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let me = call(
                ctx,
                "x",
                http.get(format!("{base}/2/users/me")).bearer_auth(&token),
            )
            .await?;
            let user = &me["data"];
            let profile = Profile {
                external_id: text(&user["id"])
                    .ok_or_else(|| OAuthError::Refused("x gave no user id".into()))?,
                display_name: user["name"].as_str().unwrap_or_default().to_string(),
                username: user["username"].as_str().map(str::to_string),
                picture: None,
            };
            Ok(vec![profile.with_tokens(platform, token, &tokens, now)])
        }
    }
}

/// Refreshes an account's token: threads exchanges its long-lived token for a new one; tiktok,
/// youtube and x use the refresh token. facebook (page tokens do not expire) and instagram
/// (no refresh grant with Facebook Login) have nothing to refresh.
pub async fn refresh(
    ctx: &OAuthContext<'_>,
    platform: Platform,
    route: LoginRoute,
    access_token: &str,
    refresh_token: Option<&str>,
) -> Result<Refreshed, PlatformError> {
    let http = ctx.http;
    let now = ctx.now;
    let secret_of = |platform| {
        app(ctx.oauth, platform, route).map_err(|e| PlatformError::Rejected(e.to_string()))
    };
    let need_refresh_token = || {
        refresh_token.ok_or_else(|| {
            PlatformError::TokenInvalid("no refresh token is stored; reconnect the account".into())
        })
    };
    let body = match platform {
        _ if is_instagram_login(platform, route) => {
            call(
                ctx,
                "instagram",
                http.get(instagram_login_url(ctx.platforms, "refresh_access_token"))
                    .query(&[
                        ("grant_type", "ig_refresh_token"),
                        ("access_token", access_token),
                    ]),
            )
            .await?
        }
        Platform::Threads => {
            call(
                ctx,
                "threads",
                http.get(&ctx.oauth.threads_refresh_url).query(&[
                    ("grant_type", "th_refresh_token"),
                    ("access_token", access_token),
                ]),
            )
            .await?
        }
        Platform::Tiktok => {
            let (client, secret, _) = secret_of(platform)?;
            call(
                ctx,
                "tiktok",
                http.post(&ctx.oauth.tiktok_token_url).form(&[
                    ("client_key", client),
                    ("client_secret", secret),
                    ("grant_type", "refresh_token"),
                    ("refresh_token", need_refresh_token()?),
                ]),
            )
            .await?
        }
        Platform::Youtube => {
            let (client, secret, _) = secret_of(platform)?;
            call(
                ctx,
                "youtube",
                http.post(&ctx.oauth.google_token_url).form(&[
                    ("client_id", client),
                    ("client_secret", secret),
                    ("grant_type", "refresh_token"),
                    ("refresh_token", need_refresh_token()?),
                ]),
            )
            .await?
        }
        Platform::X => {
            let (client, secret, _) = secret_of(platform)?;
            call(
                ctx,
                "x",
                http.post(&ctx.oauth.x_token_url)
                    .basic_auth(client, Some(secret))
                    .form(&[
                        ("grant_type", "refresh_token"),
                        ("refresh_token", need_refresh_token()?),
                    ]),
            )
            .await?
        }
        Platform::Facebook | Platform::Instagram => {
            return Err(PlatformError::Rejected(format!(
                "{} tokens are not refreshed",
                platform.as_str()
            )));
        }
    };
    let access_token = body["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| PlatformError::Rejected("the refresh answer had no access token".into()))?
        .to_string();
    Ok(Refreshed {
        access_token,
        refresh_token: body["refresh_token"].as_str().map(str::to_string),
        expires_at: expiry(now, &body, "expires_in"),
    })
}

/// When an account's token should be refreshed (`None`: never, by us).
///
/// Instagram Login: `oauth.instagram_login_refresh_days_before` days before the 60-day token
/// expires, and not before the token is 24 h old (Meta refuses younger ones); a token issued
/// at an unknown time is taken as issued a full lifetime before its expiry.
pub fn refresh_due(
    config: &OAuthConfig,
    platform: Platform,
    route: LoginRoute,
    expires_at: Option<DateTime<Utc>>,
    issued_at: Option<DateTime<Utc>>,
) -> Option<DateTime<Utc>> {
    let expires_at = expires_at?;
    match platform {
        _ if is_instagram_login(platform, route) => {
            let issued_at = issued_at
                .unwrap_or_else(|| expires_at - Duration::seconds(INSTAGRAM_LOGIN_LIFETIME_SECS));
            let window = expires_at - Duration::days(config.instagram_login_refresh_days_before);
            Some(window.max(issued_at + Duration::hours(INSTAGRAM_LOGIN_MIN_REFRESH_AGE_HOURS)))
        }
        Platform::Threads => Some(expires_at - Duration::days(config.threads_refresh_days_before)),
        Platform::Tiktok | Platform::Youtube | Platform::X => {
            Some(expires_at - Duration::seconds(config.refresh_margin_secs))
        }
        Platform::Facebook | Platform::Instagram => None,
    }
}

/// The lifetime of a long-lived Instagram Login token as Meta states it (`expires_in`).
const INSTAGRAM_LOGIN_LIFETIME_SECS: i64 = 5_183_944;

/// `{instagram_login_graph_url}/{endpoint}`: the token endpoints have no version segment.
fn instagram_login_url(p: &PlatformsConfig, endpoint: &str) -> String {
    format!(
        "{}/{endpoint}",
        p.instagram_login_graph_url.trim_end_matches('/')
    )
}

/// Instagram Login (`platform-apis.md` §3.7): code → short-lived token (`POST`, form) → 60-day
/// token (`ig_exchange_token`) → the professional account's profile.
async fn instagram_login(
    ctx: &OAuthContext<'_>,
    client: &str,
    secret: &str,
    code: &str,
    redirect_uri: &str,
) -> Result<Vec<Identity>, OAuthError> {
    let http = ctx.http;
    let p = ctx.platforms;
    let short = call(
        ctx,
        "instagram",
        http.post(&ctx.oauth.instagram_login_token_url).form(&[
            ("client_id", client),
            ("client_secret", secret),
            ("grant_type", "authorization_code"),
            ("redirect_uri", redirect_uri),
            ("code", code),
        ]),
    )
    .await?;
    // Meta documents `{"data":[{"access_token","user_id","permissions"}]}`; clients in the wild
    // read it flat. Either is accepted (tolerant adapter; the simulator answers the documented
    // form).
    let short_token = short["data"][0]["access_token"]
        .as_str()
        .or(short["access_token"].as_str())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| OAuthError::Refused("instagram gave no access token".into()))?
        .to_string();
    let long = call(
        ctx,
        "instagram",
        http.get(instagram_login_url(p, "access_token")).query(&[
            ("grant_type", "ig_exchange_token"),
            ("client_secret", secret),
            ("access_token", short_token.as_str()),
        ]),
    )
    .await?;
    let token = long["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| OAuthError::Refused("instagram gave no long-lived token".into()))?
        .to_string();
    let me = call(
        ctx,
        "instagram",
        http.get(format!(
            "{}/{}/me",
            p.instagram_login_graph_url.trim_end_matches('/'),
            p.graph_version.trim_matches('/')
        ))
        .query(&[(
            "fields",
            "user_id,username,name,account_type,profile_picture_url",
        )])
        .bearer_auth(&token),
    )
    .await?;
    // `user_id` is the professional account's id, the one media and insights are addressed
    // by (`id` is app-scoped); checked before it goes into paths.
    let user_id = text(&me["user_id"])
        .or_else(|| text(&me["id"]))
        .ok_or_else(|| OAuthError::Refused("instagram gave no user id".into()))?;
    GraphId::parse(&user_id).map_err(InvalidId::unexpected)?;
    let username = me["username"].as_str().map(str::to_string);
    Ok(vec![Identity {
        platform: Platform::Instagram,
        external_id: user_id,
        display_name: username
            .clone()
            .or_else(|| me["name"].as_str().map(str::to_string))
            .unwrap_or_default(),
        username,
        // Instagram Login serves professional accounts only; the profile says which kind, in
        // the IG user reference's spelling (`Business`, `Media_Creator`), which spec §2.2
        // writes in capitals.
        account_type: Some(
            me["account_type"]
                .as_str()
                .filter(|t| !t.is_empty())
                .unwrap_or("BUSINESS")
                .to_ascii_uppercase(),
        ),
        profile_picture_url: me["profile_picture_url"].as_str().map(str::to_string),
        access_token: token,
        refresh_token: None,
        token_expires_at: expiry(ctx.now, &long, "expires_in"),
        data_access_expires_at: None,
    }])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn at(hours: i64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
            + Duration::hours(hours)
    }

    /// Instagram Login: 5 days before the 60 days end by default, never before 24 h of age;
    /// Facebook Login instagram tokens are not refreshed.
    #[test]
    fn instagram_login_refreshes_in_its_window_and_not_before_24_hours() {
        let mut config = OAuthConfig::default();
        let issued = at(0);
        let expires = issued + Duration::seconds(INSTAGRAM_LOGIN_LIFETIME_SECS);
        let due = |config: &OAuthConfig, route, issued_at| {
            refresh_due(config, Platform::Instagram, route, Some(expires), issued_at)
        };
        assert_eq!(
            due(&config, LoginRoute::InstagramLogin, Some(issued)),
            Some(expires - Duration::days(5))
        );
        assert_eq!(due(&config, LoginRoute::FacebookLogin, Some(issued)), None);
        config.instagram_login_refresh_days_before = 60;
        assert_eq!(
            due(&config, LoginRoute::InstagramLogin, Some(issued)),
            Some(issued + Duration::hours(24))
        );
        // An unknown issue time is taken as a full lifetime before the expiry.
        assert_eq!(
            due(&config, LoginRoute::InstagramLogin, None),
            Some(issued + Duration::hours(24))
        );
        // The route means nothing to other platforms.
        assert_eq!(
            refresh_due(
                &config,
                Platform::Threads,
                LoginRoute::InstagramLogin,
                Some(expires),
                Some(issued)
            ),
            Some(expires - Duration::days(config.threads_refresh_days_before))
        );
    }

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
