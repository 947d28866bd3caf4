//! Who may use the service: the secrets `serve` needs (`[secrets]`), dashboard sign-in and the
//! access caches (`[auth]`), and the Free plan's allowance (`[usage]`).

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::serialize_secret;

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
    /// Bearer token for the operator endpoints (`/admin/*`, `/api/admin/*`, `/metrics`, and the
    /// cron endpoints for every account). At least 16 characters.
    #[serde(serialize_with = "serialize_secret")]
    pub operator_token: Option<SecretString>,
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
    /// How often expired sign-in states, connection states, sessions (expired or revoked),
    /// spent form tokens and idempotency keys are deleted (at least 1 s).
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
            list_cache_capacity: DEFAULT_LIST_CAPACITY,
            sweep_interval_secs: 600,
            signin_rate_per_minute: 30,
            signin_burst: 10,
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

/// `auth.list_cache_capacity`'s default.
pub const DEFAULT_LIST_CAPACITY: usize = 1_000;
