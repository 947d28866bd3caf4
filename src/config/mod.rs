//! Layered configuration.
//!
//! Precedence, lowest first: built-in defaults → the TOML file (`config.toml`, or `--config PATH`)
//! → `DATABASE_URL` (for `database.url` only) → environment variables `SERVICE__SECTION__KEY`
//! (e.g. `SERVICE__SERVER__BIND=127.0.0.1:0`). Secrets are held in `SecretString`, which never
//! prints its value.

mod auth;
mod cluster;
mod load;
mod media;
mod oauth;
mod platforms;
mod publishing;
mod server;
mod webhooks;

pub use auth::{AuthConfig, DEFAULT_LIST_CAPACITY, SecretsConfig, UsageConfig};
pub use cluster::ClusterConfig;
pub use load::has_file_form;
pub use media::{MediaConfig, MediaStoreKind};
pub use oauth::OAuthConfig;
pub use platforms::PlatformsConfig;
pub use publishing::{CollectorConfig, MAX_ACTOR_ARBITERS, PublishingConfig, SchedulerConfig};
pub use server::{
    ConnectionLimits, DEFAULT_GROUP_COMMIT_MAX, DEFAULT_SQLITE_CACHE_KIB, DatabaseConfig,
    LoggingConfig, ServerConfig, SqliteSync,
};
pub use webhooks::WebhooksConfig;

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
    pub webhooks: WebhooksConfig,
    pub media: MediaConfig,
    pub cluster: ClusterConfig,
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
