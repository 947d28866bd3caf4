//! Layered configuration.
//!
//! Precedence, lowest first: built-in defaults → the TOML file (`config.toml`, or `--config PATH`)
//! → `DATABASE_URL` (for `database.url` only) → environment variables `SERVICE__SECTION__KEY`
//! (e.g. `SERVICE__SERVER__BIND=127.0.0.1:0`). Secrets are held in `SecretString`, which never
//! prints its value.

use std::{num::NonZeroUsize, path::Path, time::Duration};

use figment::{
    Figment,
    providers::{Env, Format, Serialized, Toml},
};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

/// The whole configuration of the service.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Config {
    pub server: ServerConfig,
    pub database: DatabaseConfig,
    pub secrets: SecretsConfig,
    pub auth: AuthConfig,
    pub usage: UsageConfig,
    pub platforms: PlatformsConfig,
    pub publishing: PublishingConfig,
    pub scheduler: SchedulerConfig,
    pub collector: CollectorConfig,
    pub oauth: OAuthConfig,
    pub logging: LoggingConfig,
}

/// Log output (to stderr; `RUST_LOG` sets the filter).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct LoggingConfig {
    /// `text` (human-readable) or `json` (one object per line).
    pub format: String,
}

impl Default for LoggingConfig {
    fn default() -> Self {
        Self {
            format: "text".into(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerConfig {
    /// Listen address; port 0 picks a free port (the bound address is logged).
    pub bind: String,
    /// The address users and identity providers reach the service at (OAuth redirect URIs,
    /// the cookie `Secure` flag). Empty: `http://` + the bound address.
    pub public_url: String,
    /// HTTP worker threads; 0 means one per core.
    pub workers: usize,
    /// How long a client has, from its first byte, to send the head (request line and headers)
    /// of a connection's first request; past it actix answers `408` and closes.
    pub request_head_timeout_ms: u64,
    /// How long a client has to send a whole request body, counted from when its head was
    /// read; past it the request gets `408 RequestTimeout` and the connection is closed. Not the
    /// publish time limits of spec §8 (`publishing.*_timeout_secs`), which start once the body
    /// is in.
    pub request_body_timeout_secs: u64,
    /// How long an idle keep-alive connection stays open between requests; 0 disables
    /// keep-alive (one request per connection).
    pub keep_alive_secs: u64,
    /// Once a connection is being closed (a refused or timed-out request), how long we still
    /// read and discard what the client sends so it sees our answer, then drop it.
    pub client_disconnect_timeout_ms: u64,
    /// Open connections per worker thread; beyond it new connections wait in the listen
    /// backlog until one closes.
    pub max_connections: usize,
    /// Reverse proxies (addresses and CIDR blocks) whose `X-Forwarded-For` names the client,
    /// for the sign-in rate limit; from any other peer the header is ignored.
    pub trusted_proxies: Vec<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8080".into(),
            public_url: String::new(),
            workers: 0,
            request_head_timeout_ms: 5_000,
            request_body_timeout_secs: 30,
            keep_alive_secs: 5,
            client_disconnect_timeout_ms: 1_000,
            max_connections: 25_000,
            trusted_proxies: Vec::new(),
        }
    }
}

impl ServerConfig {
    /// `server.public_url`, checked: the address sign-in and connect callbacks, cookie security
    /// and the cross-site check are built from, so a value that is no http(s) origin (a typo, a
    /// path or query left in) would break them in ways far from the cause. Empty: `None` (the
    /// bound address is used). Returned without a trailing slash.
    pub fn checked_public_url(&self) -> Result<Option<String>, ConfigError> {
        const KEY: &str = "server.public_url";
        let raw = self.public_url.trim();
        if raw.is_empty() {
            return Ok(None);
        }
        let invalid = |why: &str| ConfigError::Invalid(KEY, format!("{why}: {raw:?}"));
        let url = url::Url::parse(raw).map_err(|e| invalid(&format!("not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid("must be an http:// or https:// URL"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(invalid("has no host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid("must not carry a user name or password"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(invalid("must not have a query or fragment"));
        }
        Ok(Some(raw.trim_end_matches('/').to_string()))
    }

    /// The connection limits, checked: a zero head or body deadline would switch the deadline
    /// off (actix reads 0 as "no timeout"), and zero connections would serve nobody.
    pub fn limits(&self) -> Result<ConnectionLimits, ConfigError> {
        let positive = |key: &'static str, value: u64| {
            if value == 0 {
                Err(ConfigError::Invalid(key, "must be at least 1".into()))
            } else {
                Ok(value)
            }
        };
        let head = positive(
            "server.request_head_timeout_ms",
            self.request_head_timeout_ms,
        )?;
        let body = positive(
            "server.request_body_timeout_secs",
            self.request_body_timeout_secs,
        )?;
        let max_connections = positive("server.max_connections", self.max_connections as u64)?;
        Ok(ConnectionLimits {
            request_head: Duration::from_millis(head),
            request_body: Duration::from_secs(body),
            keep_alive: (self.keep_alive_secs > 0)
                .then(|| Duration::from_secs(self.keep_alive_secs)),
            client_disconnect: Duration::from_millis(self.client_disconnect_timeout_ms),
            max_connections: max_connections as usize,
        })
    }
}

/// What a client may hold: [`ServerConfig`]'s limits as durations, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    pub request_head: Duration,
    pub request_body: Duration,
    /// `None`: keep-alive is off.
    pub keep_alive: Option<Duration>,
    pub client_disconnect: Duration,
    pub max_connections: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct DatabaseConfig {
    /// `sqlite://PATH?mode=rwc` (created on first run) or `postgres://…`.
    pub url: String,
    pub max_connections: u32,
    /// Most publish-path writes (history rows before and after the final call) committed in one
    /// transaction when they arrive together. 1 turns group commit off.
    pub group_commit_max: usize,
    /// SQLite's page cache per pooled connection, in KiB (ignored on PostgreSQL).
    pub sqlite_cache_kib: u32,
    /// `full` (default): every SQLite commit is synced to disk before it is answered, so a
    /// power cut loses no recorded publish. `normal`: synced only at checkpoints; a process
    /// crash loses nothing, a power cut may lose the last commits and publish a post again.
    /// Ignored on PostgreSQL.
    pub sqlite_synchronous: crate::store::SqliteSync,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self {
            url: "sqlite://data/service.db?mode=rwc".into(),
            max_connections: 10,
            group_commit_max: crate::store::DEFAULT_GROUP_COMMIT_MAX,
            sqlite_cache_kib: crate::store::DEFAULT_SQLITE_CACHE_KIB,
            sqlite_synchronous: crate::store::SqliteSync::default(),
        }
    }
}

/// Secrets have no usable default: `serve` refuses to start while one is empty.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct SecretsConfig {
    /// Signs dashboard session cookies (HMAC-SHA256). At least 32 characters.
    #[serde(serialize_with = "serialize_secret")]
    pub session_key: Option<SecretString>,
    /// Encrypts platform tokens at rest (AES-256-GCM): 32 bytes, base64 or 64 hex characters.
    #[serde(serialize_with = "serialize_secret")]
    pub token_encryption_key: Option<SecretString>,
    /// Keys being rotated out (comma-separated, same form): still used to decrypt.
    #[serde(serialize_with = "serialize_secret")]
    pub previous_token_encryption_keys: Option<SecretString>,
    /// Bearer token for the operator (`/admin/*`) endpoints. At least 16 characters.
    #[serde(serialize_with = "serialize_secret")]
    pub operator_token: Option<SecretString>,
}

fn serialize_secret<S: serde::Serializer>(
    value: &Option<SecretString>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    // Only used to seed figment with defaults, which are always empty.
    match value {
        Some(secret) => serializer.serialize_str(secret.expose_secret()),
        None => serializer.serialize_none(),
    }
}

/// Dashboard sign-in through an OpenID Connect provider.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct AuthConfig {
    /// The provider's issuer URL; endpoints are discovered from
    /// `{issuer}/.well-known/openid-configuration` unless given below.
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub client_id: String,
    #[serde(serialize_with = "serialize_secret")]
    pub client_secret: Option<SecretString>,
    pub scopes: String,
    /// The provider's JWKS (its signing keys) when the endpoints above are set by hand;
    /// discovery's `jwks_uri` otherwise.
    pub jwks_uri: String,
    /// Accept ID tokens signed HS256 with the client secret (a provider configured for it);
    /// off, only signatures verified against the provider's JWKS count.
    pub allow_hs256_id_tokens: bool,
    /// Lifetime of a dashboard session.
    pub session_ttl_hours: i64,
    /// How many active API keys one user may hold.
    pub max_api_keys_per_user: u64,
    /// E-mail addresses whose dashboard users are operators (the operator pages under
    /// `/dashboard/operator`); compared case-insensitively with the identity provider's e-mail.
    /// The `service user operator` CLI grants the role per user as well.
    pub operator_emails: Vec<String>,
    /// How long an API key's verification, its owner's plan and an account's row are trusted
    /// from memory without a re-read (see `access`). Writes on this instance evict at once, and
    /// on PostgreSQL other instances are told by notification; this bounds everything else
    /// (a listener that lost its connection, a SQLite file shared by hand).
    pub cache_ttl_ms: u64,
    /// Entries the access cache holds per kind (keys, users, accounts); 0 turns it off.
    pub cache_capacity: usize,
    /// Rendered `GET /api/scheduled-posts` answers kept (one per user and filter); 0 turns it
    /// off. Any scheduled-post write drops them all; `cache_ttl_ms` bounds them too.
    pub list_cache_capacity: usize,
    /// How often expired sign-in states, connection states, sessions (expired or revoked) and
    /// spent form tokens are deleted (at least 1 s).
    pub sweep_interval_secs: u64,
    /// Anonymous sign-in requests (`/auth/login`, `/auth/callback`) one client address may
    /// make in any minute; 0 turns the limit off.
    pub signin_rate_per_minute: u32,
    /// How many of those may come back to back (1 to `signin_rate_per_minute - 1`).
    pub signin_burst: u32,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            issuer: String::new(),
            authorization_endpoint: String::new(),
            token_endpoint: String::new(),
            client_id: String::new(),
            client_secret: None,
            scopes: "openid email profile".into(),
            jwks_uri: String::new(),
            allow_hs256_id_tokens: false,
            session_ttl_hours: 24 * 14,
            max_api_keys_per_user: 25,
            operator_emails: Vec::new(),
            cache_ttl_ms: 5_000,
            cache_capacity: 10_000,
            list_cache_capacity: crate::store::access::DEFAULT_LIST_CAPACITY,
            sweep_interval_secs: 600,
            signin_rate_per_minute: 30,
            signin_burst: 10,
        }
    }
}

/// Where each platform's API lives, and how long to wait for its asynchronous processing.
/// Every base URL is configuration, so tests and the demo point them at the simulator.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct PlatformsConfig {
    /// Meta Graph API host (facebook pages and instagram with Facebook Login).
    pub graph_url: String,
    pub graph_version: String,
    /// Instagram API with Instagram Login host (`graph.instagram.com`): instagram accounts
    /// connected through Instagram Login publish and read insights here, and exchange and
    /// refresh their tokens at `{instagram_login_graph_url}/access_token` and
    /// `/refresh_access_token`. `graph_version` applies (Meta versions both hosts together).
    pub instagram_login_graph_url: String,
    /// Meta's video host: facebook page videos (`POST /{page}/videos`) are created there, as
    /// Meta asks for video uploads; `graph_version` applies.
    pub graph_video_url: String,
    /// Threads API host.
    pub threads_url: String,
    pub threads_version: String,
    /// TikTok Open API host.
    pub tiktok_url: String,
    /// Google API data host: `{youtube_url}/youtube/v3/...`.
    pub youtube_url: String,
    /// Google API upload host: `{youtube_upload_url}/upload/youtube/v3/...` (video resumable
    /// uploads and thumbnails); separate from the data host so either can be moved.
    pub youtube_upload_url: String,
    /// YouTube Analytics host: `{youtube_analytics_url}/v2/reports`.
    pub youtube_analytics_url: String,
    /// X API host.
    pub x_url: String,
    /// Pause between status polls of asynchronous processing (containers, uploads).
    pub poll_interval_ms: u64,
    /// Stop waiting for processing after this long: the publish is then `unconfirmed` (202
    /// `PublishUnconfirmed`) and checked in the background (`publishing.unconfirmed_check_*`).
    pub processing_timeout_secs: u64,
    /// Timeout of one HTTP call to a platform (uploads excluded).
    pub call_timeout_secs: u64,
    /// Bytes per upload chunk where a platform takes chunks (x append, tiktok FILE_UPLOAD).
    pub upload_chunk_bytes: u64,
    /// How tiktok gets a video: `FILE_UPLOAD` (we stream the bytes; works for any media host) or
    /// `PULL_FROM_URL` (tiktok fetches it; needs a domain verified with tiktok).
    pub tiktok_video_source: String,
}

impl Default for PlatformsConfig {
    fn default() -> Self {
        Self {
            graph_url: "https://graph.facebook.com".into(),
            graph_version: "v24.0".into(),
            graph_video_url: "https://graph-video.facebook.com".into(),
            instagram_login_graph_url: "https://graph.instagram.com".into(),
            threads_url: "https://graph.threads.net".into(),
            threads_version: "v1.0".into(),
            tiktok_url: "https://open.tiktokapis.com".into(),
            youtube_url: "https://www.googleapis.com".into(),
            youtube_upload_url: "https://www.googleapis.com".into(),
            youtube_analytics_url: "https://youtubeanalytics.googleapis.com".into(),
            x_url: "https://api.x.com".into(),
            poll_interval_ms: 3_000,
            processing_timeout_secs: 240,
            call_timeout_secs: 30,
            upload_chunk_bytes: 8 * 1024 * 1024,
            tiktok_video_source: "FILE_UPLOAD".into(),
        }
    }
}

impl PlatformsConfig {
    /// Every base URL pointed at one simulator (`http://127.0.0.1:PORT`).
    pub fn simulator(base_url: &str) -> Self {
        let base = base_url.trim_end_matches('/');
        Self {
            graph_url: format!("{base}/graph"),
            // The simulator serves video creation on its one graph mount.
            graph_video_url: format!("{base}/graph"),
            instagram_login_graph_url: format!("{base}/instagram"),
            threads_url: format!("{base}/threads"),
            tiktok_url: format!("{base}/tiktok"),
            youtube_url: format!("{base}/youtube"),
            youtube_upload_url: format!("{base}/youtube"),
            youtube_analytics_url: format!("{base}/youtubeanalytics"),
            x_url: format!("{base}/x"),
            poll_interval_ms: 100,
            ..Self::default()
        }
    }
}

/// Publishing: account actors, their limiters and queues, media checks and request time limits.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct PublishingConfig {
    /// Publishes waiting per account (the one in flight not counted); more answer 503.
    pub queue_capacity: usize,
    /// An account actor with nothing to do stops after this long; the next request restarts it.
    pub actor_idle_secs: u64,
    /// Threads (actix arbiters) the account actors are spread over, chosen by a hash of the
    /// account id, so one account's heavy upload only delays the accounts sharing its thread.
    /// With `actors_on_http_workers`, these host every actor not started by a publish request.
    /// Unset: one per core. See [`Self::actor_arbiters`].
    pub actor_arbiters: Option<usize>,
    /// An actor started by a publish request (`POST /v2/posts`) runs on the HTTP worker thread
    /// serving it, so that worker's requests for the account reach it without a thread
    /// hand-over (issue 16). Off: every actor runs on the `actor_arbiters` threads.
    pub actors_on_http_workers: bool,
    /// Time limits of `POST /v2/posts` (spec §8); past them the caller gets 504 `Timeout` and the
    /// publish goes on and lands in the history.
    pub request_timeout_secs: u64,
    pub video_timeout_secs: u64,
    pub thread_timeout_secs: u64,
    /// Platform API calls allowed per account (spec §8).
    pub facebook_calls_per_hour: u32,
    pub instagram_calls_per_hour: u32,
    pub threads_calls_per_hour: u32,
    pub x_calls_per_3_hours: u32,
    /// TikTok's limit is not in the spec; 6 video inits per minute per token is TikTok's own.
    pub tiktok_calls_per_minute: u32,
    /// YouTube's daily quota and what each operation costs of it.
    pub youtube_daily_units: u32,
    pub youtube_video_insert_cost: u32,
    pub youtube_thumbnail_set_cost: u32,
    /// x posts per user per usage month, across all of the user's x accounts (spec §8).
    pub x_monthly_posts: i64,
    /// Largest accepted media file.
    pub max_media_bytes: u64,
    /// `host:port` pairs media URLs may use even though they resolve to a loopback or private
    /// address (and may stay on plain http). Empty in production.
    pub media_allow_hosts: Vec<String>,
    /// A publish the platform was still processing at `platforms.processing_timeout_secs` is
    /// `unconfirmed` and checked again this often (through its account's limiter) until the
    /// platform says published or failed.
    pub unconfirmed_check_interval_ms: u64,
    /// After this long the service stops checking; the post stays `unconfirmed`, saying so.
    pub unconfirmed_check_horizon_secs: u64,
}

impl Default for PublishingConfig {
    fn default() -> Self {
        Self {
            queue_capacity: 32,
            actor_idle_secs: 600,
            actor_arbiters: None,
            actors_on_http_workers: true,
            request_timeout_secs: 60,
            video_timeout_secs: 300,
            thread_timeout_secs: 360,
            facebook_calls_per_hour: 200,
            instagram_calls_per_hour: 200,
            threads_calls_per_hour: 250,
            x_calls_per_3_hours: 300,
            tiktok_calls_per_minute: 6,
            youtube_daily_units: 10_000,
            youtube_video_insert_cost: 1_600,
            youtube_thumbnail_set_cost: 50,
            x_monthly_posts: 60,
            max_media_bytes: 100 * 1024 * 1024,
            media_allow_hosts: Vec::new(),
            unconfirmed_check_interval_ms: 30_000,
            // Instagram and Threads containers expire unpublished after 24 h.
            unconfirmed_check_horizon_secs: 86_400,
        }
    }
}

/// Most arbiter threads `publishing.actor_arbiters` may ask for: more than this is a typo, not
/// a deployment (each is an OS thread with its own runtime).
pub const MAX_ACTOR_ARBITERS: usize = 256;

impl PublishingConfig {
    /// How many arbiters the account actors run on, checked: unset means one per core (1 when
    /// the core count is unknown); 0 would leave the actors nowhere to run, and more than
    /// [`MAX_ACTOR_ARBITERS`] is refused rather than spawning that many threads.
    pub fn actor_arbiters(&self) -> Result<NonZeroUsize, ConfigError> {
        const KEY: &str = "publishing.actor_arbiters";
        match self.actor_arbiters {
            None => Ok(std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN)),
            Some(n) if n > MAX_ACTOR_ARBITERS => Err(ConfigError::Invalid(
                KEY,
                format!("{n} is more than the {MAX_ACTOR_ARBITERS} allowed (one thread each)"),
            )),
            Some(n) => NonZeroUsize::new(n).ok_or_else(|| {
                ConfigError::Invalid(
                    KEY,
                    "must be at least 1 (leave it unset for one per core)".into(),
                )
            }),
        }
    }
}

/// The scheduler actor: publishes due scheduled posts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SchedulerConfig {
    /// Whether this instance publishes due posts (several instances may, on one PostgreSQL).
    pub enabled: bool,
    /// Scheduled posts publishing at once on this instance (at most one per account, so this is
    /// also how many accounts publish at once). Claimed posts beyond it wait, claimed, in the
    /// scheduler's per-account queues (see `max_claimed`).
    pub max_in_flight: usize,
    /// Due posts claimed per statement; the scheduler claims batch after batch while more are
    /// due and `max_claimed` allows, without waiting for publishes to finish.
    pub claim_batch: usize,
    /// Posts this instance may hold claimed and not yet ended (queued, publishing, or ended and
    /// not yet written). Their leases are renewed together; past it, claiming waits for ends.
    pub max_claimed: usize,
    /// Ended attempts written per transaction (outcomes that end together are written
    /// together).
    pub settle_batch: usize,
    /// How long a claim holds without renewal; a claim older than this belongs to a process that
    /// died, and its post is settled from its recorded steps.
    pub lease_secs: u64,
    /// Publish attempts of one post before a transient failure becomes final.
    pub max_attempts: i32,
    /// First retry delay; doubles with each attempt (at least the platform's `retry_after`).
    pub retry_base_secs: u64,
    /// Longest sleep between looks at the table (posts scheduled by other instances are seen
    /// within this).
    pub max_sleep_ms: u64,
    /// On shutdown, how long in-flight publishes may take to finish.
    pub shutdown_grace_secs: u64,
    /// An immediate publish still `publishing` in the history after this long was cut off by a
    /// stopped process; it is settled like a scheduled one (failed, or unconfirmed).
    pub stale_publish_secs: u64,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_in_flight: 256,
            claim_batch: 500,
            max_claimed: 20_000,
            settle_batch: 500,
            lease_secs: 120,
            max_attempts: 5,
            retry_base_secs: 30,
            max_sleep_ms: 5_000,
            shutdown_grace_secs: 30,
            stale_publish_secs: 1_800,
        }
    }
}

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

/// The collector actor: daily performance snapshots of every account (spec §2.7, §4.8).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct CollectorConfig {
    /// Whether this instance runs the daily collection (several may, on one database).
    pub enabled: bool,
    /// Local time of the daily run, `HH:MM`, in `time_zone`.
    pub run_at: String,
    /// IANA time zone of `run_at`; the run collects the previous day of this zone.
    pub time_zone: String,
    /// Accounts collected at the same time.
    pub concurrency: usize,
    /// How long a claimed account-date stays claimed without finishing; after that another
    /// collector may take it over (its collector died).
    pub lease_secs: u64,
    /// Automatic attempts per account and date; backfill and manual collection always try.
    pub max_attempts: i32,
    /// How often the latest date is looked at again for accounts still missing (failed ones,
    /// ones connected since, ones a dead instance held).
    pub repair_interval_secs: u64,
    /// A limiter refusal asking to wait at most this long is waited out; longer ones fail the
    /// account for this pass (a later pass retries).
    pub max_limiter_wait_secs: u64,
    /// Longest sleep between looks at the clock.
    pub max_sleep_ms: u64,
}

impl Default for CollectorConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            run_at: "02:00".into(),
            time_zone: "Asia/Taipei".into(),
            concurrency: 16,
            lease_secs: 600,
            max_attempts: 3,
            repair_interval_secs: 1_800,
            max_limiter_wait_secs: 60,
            max_sleep_ms: 5_000,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct UsageConfig {
    /// API-key calls per usage month on the Free plan.
    pub free_monthly_limit: i64,
    /// How often recorded API-key `last_used_at` times are written to the database.
    pub last_used_flush_ms: u64,
}

impl Default for UsageConfig {
    fn default() -> Self {
        Self {
            free_monthly_limit: 10,
            last_used_flush_ms: 30_000,
        }
    }
}

/// Why the configuration could not be loaded or used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration could not be read: {0}")]
    Load(#[from] Box<figment::Error>),
    #[error("missing secret `{0}`: set it in the config file or as {1} (or run `serve --demo`)")]
    MissingSecret(&'static str, &'static str),
    #[error("invalid value for `{0}`: {1}")]
    Invalid(&'static str, String),
}

/// Keys whose environment values are taken as strings, verbatim.
const STRING_KEYS: &[&str] = &[
    "server.bind",
    "server.public_url",
    "database.url",
    "secrets.session_key",
    "secrets.token_encryption_key",
    "secrets.previous_token_encryption_keys",
    "secrets.operator_token",
    "auth.issuer",
    "auth.authorization_endpoint",
    "auth.token_endpoint",
    "auth.client_id",
    "auth.client_secret",
    "auth.scopes",
    "auth.jwks_uri",
    "platforms.graph_url",
    "platforms.graph_version",
    "platforms.graph_video_url",
    "platforms.instagram_login_graph_url",
    "platforms.threads_url",
    "platforms.threads_version",
    "platforms.tiktok_url",
    "platforms.youtube_url",
    "platforms.youtube_upload_url",
    "platforms.youtube_analytics_url",
    "platforms.x_url",
    "platforms.tiktok_video_source",
    "collector.run_at",
    "oauth.meta_client_id",
    "oauth.meta_client_secret",
    "oauth.meta_authorize_url",
    "oauth.meta_token_url",
    "oauth.instagram_login_client_id",
    "oauth.instagram_login_client_secret",
    "oauth.instagram_login_authorize_url",
    "oauth.instagram_login_token_url",
    "oauth.threads_client_id",
    "oauth.threads_client_secret",
    "oauth.threads_authorize_url",
    "oauth.threads_token_url",
    "oauth.threads_exchange_url",
    "oauth.threads_refresh_url",
    "oauth.tiktok_client_key",
    "oauth.tiktok_client_secret",
    "oauth.tiktok_authorize_url",
    "oauth.tiktok_token_url",
    "oauth.google_client_id",
    "oauth.google_client_secret",
    "oauth.google_authorize_url",
    "oauth.google_token_url",
    "oauth.x_client_id",
    "oauth.x_client_secret",
    "oauth.x_authorize_url",
    "oauth.x_token_url",
    "collector.time_zone",
    "logging.format",
];

impl Config {
    /// Loads defaults → file → `DATABASE_URL` → `SERVICE__*` environment.
    /// A missing file is fine only when no path was given explicitly.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        match path {
            Some(path) => {
                if !path.exists() {
                    return Err(ConfigError::Invalid(
                        "--config",
                        format!("{} does not exist", path.display()),
                    ));
                }
                figment = figment.merge(Toml::file(path));
            }
            None => figment = figment.merge(Toml::file("config.toml")),
        }
        if let Ok(url) = std::env::var("DATABASE_URL")
            && !url.is_empty()
        {
            figment = figment.merge(Serialized::default("database.url", url));
        }
        // figment parses environment values (`0123` becomes a number), which would corrupt a
        // hex key or a numeric client id: string-typed keys are read verbatim instead.
        figment = figment.merge(Env::prefixed("SERVICE__").split("__").filter(|key| {
            let key = key.as_str().to_ascii_lowercase();
            !STRING_KEYS.contains(&key.as_str())
        }));
        with_string_variables(figment, |variable| std::env::var(variable).ok())
            .extract()
            .map_err(|e| ConfigError::Load(Box::new(e)))
    }

    /// Checks that every secret `serve` needs is present and well-formed.
    pub fn check_secrets(&self) -> Result<(), ConfigError> {
        let session = present(
            &self.secrets.session_key,
            "secrets.session_key",
            "SERVICE__SECRETS__SESSION_KEY",
        )?;
        if session.len() < 32 {
            return Err(ConfigError::Invalid(
                "secrets.session_key",
                "must be at least 32 characters".into(),
            ));
        }
        let token_key = present(
            &self.secrets.token_encryption_key,
            "secrets.token_encryption_key",
            "SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY",
        )?;
        crate::crypto::TokenCipher::from_config_value(token_key)
            .map_err(|e| ConfigError::Invalid("secrets.token_encryption_key", e.to_string()))?;
        let operator = present(
            &self.secrets.operator_token,
            "secrets.operator_token",
            "SERVICE__SECRETS__OPERATOR_TOKEN",
        )?;
        if operator.len() < 16 {
            return Err(ConfigError::Invalid(
                "secrets.operator_token",
                "must be at least 16 characters".into(),
            ));
        }
        Ok(())
    }
}

/// Merges the string-typed keys' `SERVICE__SECTION__KEY` variables, read through `lookup` so
/// tests can check the mapping without touching the process environment.
fn with_string_variables(mut figment: Figment, lookup: impl Fn(&str) -> Option<String>) -> Figment {
    for key in STRING_KEYS {
        let variable = format!("SERVICE__{}", key.replace('.', "__").to_ascii_uppercase());
        if let Some(value) = lookup(&variable) {
            figment = figment.merge(Serialized::default(key, value));
        }
    }
    figment
}

fn present<'a>(
    value: &'a Option<SecretString>,
    key: &'static str,
    env: &'static str,
) -> Result<&'a str, ConfigError> {
    match value {
        Some(secret) if !secret.expose_secret().trim().is_empty() => Ok(secret.expose_secret()),
        _ => Err(ConfigError::MissingSecret(key, env)),
    }
}

#[cfg(test)]
mod shipped_file_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// `config.toml` documents every key with its default: loading it changes nothing.
    #[test]
    fn the_shipped_config_file_holds_the_defaults() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.toml")).unwrap();
        let from_file: Config = Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(&text))
            .extract()
            .unwrap();
        let json = |c: &Config| {
            serde_json::json!({
                "server": c.server, "database": c.database, "auth": serde_json::to_value(&c.auth).ok(),
                "usage": c.usage, "platforms": c.platforms, "publishing": c.publishing,
                "scheduler": c.scheduler, "logging": c.logging,
            })
        };
        assert_eq!(json(&from_file), json(&Config::default()));
    }
}

#[cfg(test)]
mod limit_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn actor_arbiters_default_to_the_cores_and_refuse_zero_and_absurd_counts() {
        let with = |n| PublishingConfig {
            actor_arbiters: n,
            ..PublishingConfig::default()
        };
        let cores = std::thread::available_parallelism().unwrap();
        assert_eq!(with(None).actor_arbiters().unwrap(), cores);
        assert_eq!(with(Some(1)).actor_arbiters().unwrap().get(), 1);
        assert_eq!(
            with(Some(MAX_ACTOR_ARBITERS))
                .actor_arbiters()
                .unwrap()
                .get(),
            MAX_ACTOR_ARBITERS
        );
        for bad in [0, MAX_ACTOR_ARBITERS + 1, usize::MAX] {
            assert!(
                matches!(
                    with(Some(bad)).actor_arbiters(),
                    Err(ConfigError::Invalid("publishing.actor_arbiters", _))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn zero_deadlines_are_refused_and_zero_keep_alive_turns_it_off() {
        for (key, adjust) in [
            (
                "server.request_head_timeout_ms",
                (|s: &mut ServerConfig| s.request_head_timeout_ms = 0) as fn(&mut ServerConfig),
            ),
            ("server.request_body_timeout_secs", |s| {
                s.request_body_timeout_secs = 0
            }),
            ("server.max_connections", |s| s.max_connections = 0),
        ] {
            let mut server = ServerConfig::default();
            adjust(&mut server);
            assert!(
                matches!(server.limits(), Err(ConfigError::Invalid(k, _)) if k == key),
                "{key}"
            );
        }
        let server = ServerConfig {
            keep_alive_secs: 0,
            ..ServerConfig::default()
        };
        assert_eq!(server.limits().unwrap().keep_alive, None);
        assert_eq!(
            ServerConfig::default().limits().unwrap().request_body,
            Duration::from_secs(30)
        );
    }
}

#[cfg(test)]
mod upstream_url_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Every upstream an operator may move defaults to the real host the code called before
    /// these were configuration.
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

    #[test]
    fn upstream_urls_are_overridden_by_their_variables() {
        let variables = [
            (
                "SERVICE__OAUTH__TIKTOK_TOKEN_URL",
                "http://proxy.internal/tiktok/token",
            ),
            (
                "SERVICE__OAUTH__THREADS_REFRESH_URL",
                "http://proxy.internal/threads/refresh",
            ),
            (
                "SERVICE__PLATFORMS__GRAPH_VIDEO_URL",
                "http://proxy.internal/graph-video",
            ),
            (
                "SERVICE__PLATFORMS__YOUTUBE_UPLOAD_URL",
                "http://proxy.internal/upload",
            ),
        ];
        let config: Config = with_string_variables(
            Figment::from(Serialized::defaults(Config::default())),
            |name| {
                variables
                    .iter()
                    .find(|(variable, _)| *variable == name)
                    .map(|(_, value)| value.to_string())
            },
        )
        .extract()
        .unwrap();
        assert_eq!(
            config.oauth.tiktok_token_url,
            "http://proxy.internal/tiktok/token"
        );
        assert_eq!(
            config.oauth.threads_refresh_url,
            "http://proxy.internal/threads/refresh"
        );
        assert_eq!(
            config.platforms.graph_video_url,
            "http://proxy.internal/graph-video"
        );
        assert_eq!(
            config.platforms.youtube_upload_url,
            "http://proxy.internal/upload"
        );
        // Untouched keys keep their defaults.
        assert_eq!(config.oauth.x_token_url, "https://api.x.com/2/oauth2/token");
    }
}
