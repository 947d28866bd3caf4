//! The process's own sections: where and how the HTTP server listens (`[server]`), its log
//! output (`[logging]`) and its database (`[database]`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ConfigError;

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
    pub sqlite_synchronous: SqliteSync,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self {
            url: "sqlite://data/service.db?mode=rwc".into(),
            max_connections: 10,
            group_commit_max: DEFAULT_GROUP_COMMIT_MAX,
            sqlite_cache_kib: DEFAULT_SQLITE_CACHE_KIB,
            sqlite_synchronous: SqliteSync::default(),
        }
    }
}

/// `database.group_commit_max`'s default.
pub const DEFAULT_GROUP_COMMIT_MAX: usize = 64;

/// SQLite page cache per pooled connection, in KiB, unless `database.sqlite_cache_kib` says
/// otherwise. SQLite's default (2,000 KiB) made each of a pool's connections grow by up to
/// 2 MB as it read pages: with 10 connections, 20 MB of RSS duplicating the OS page cache (half
/// of what the memory benchmark charged to 10,000 live actors).
pub const DEFAULT_SQLITE_CACHE_KIB: u32 = 256;

/// How SQLite's commits reach the disk (`database.sqlite_synchronous`; WAL mode either way).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqliteSync {
    /// Every commit is synced to disk (`fdatasync` of the WAL) before it is answered. The
    /// write that records a publish before its irreversible platform call is on stable storage
    /// before the call, so a power cut cannot make a post look untouched and publish it again.
    /// The pool's connections sync at each commit (SQLite's `synchronous = FULL`, on sqlx's
    /// threads); the group commit's batches are synced by a thread of their own
    /// (`wal_sync.rs`), one sync for all the publishes that arrive together.
    #[default]
    Full,
    /// Commits are appended to the WAL and synced only at checkpoints. A process crash loses
    /// nothing, but a power cut or a kernel crash can roll back the last commits, including a
    /// publish's pre-call record: that post may then be published a second time.
    Normal,
}

impl SqliteSync {
    /// The `PRAGMA synchronous` value.
    pub fn pragma(self) -> &'static str {
        match self {
            SqliteSync::Full => "FULL",
            SqliteSync::Normal => "NORMAL",
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
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
