//! `service config check`: every problem the configuration would stop `serve` with, found at
//! once rather than one per attempted start, and the effective configuration as TOML with its
//! secrets redacted.

use secrecy::ExposeSecret;
use serde_json::{Map, Value};

use crate::{
    config::{Config, ConfigError},
    crypto::TokenCipher,
    media::MediaFetcher,
    services::collection::schedule::DailySchedule,
};

/// What stands in a printed configuration for a secret that is set.
pub const REDACTED: &str = "[redacted]";

/// Whether a key holds a secret: everything in `[secrets]` and every client secret. A rule, not a
/// list, so a secret added later is redacted without being named here. `Config`'s own
/// serializer exposes secrets (it seeds the loader with the defaults), so printing must
/// replace them.
fn is_secret(section: &str, key: &str) -> bool {
    section == "secrets" || key.ends_with("client_secret")
}

/// Every problem among the checks that need no database, network or listener, in the order
/// `Application::build` makes them (the front ends' own checks are added by
/// `startup::configuration_problems`).
pub fn problems(config: &Config) -> Vec<ConfigError> {
    let mut problems = config.secret_problems();
    if let Some(key) = &config.secrets.token_encryption_key
        && let Ok(cipher) = TokenCipher::from_config_value(key.expose_secret())
    {
        let previous = config
            .secrets
            .previous_token_encryption_keys
            .as_ref()
            .map(|keys| keys.expose_secret().to_string())
            .unwrap_or_default();
        if let Err(e) = cipher.with_previous(&previous) {
            problems.push(ConfigError::Invalid(
                "secrets.previous_token_encryption_keys",
                e.to_string(),
            ));
        }
    }
    let checks = [
        config.server.limits().map(|_| ()),
        config.publishing.actor_arbiters().map(|_| ()),
        config.webhooks.check(),
        config.cluster.check(),
        config.media.check(),
        config.server.checked_public_url().map(|_| ()),
        MediaFetcher::new(
            &config.publishing.media_allow_hosts,
            config.publishing.max_media_bytes,
        )
        .map(|_| ())
        .map_err(|e| ConfigError::Invalid("media client", e.to_string())),
        DailySchedule::parse(&config.collector.time_zone, &config.collector.run_at)
            .map(|_| ())
            .map_err(|e| ConfigError::Invalid("collector.time_zone / collector.run_at", e)),
    ];
    problems.extend(checks.into_iter().filter_map(Result::err));
    problems
}

/// The configuration as TOML, every secret replaced by [`REDACTED`] and a database URL's
/// password by `redacted` (brackets would be percent-encoded in a URL); unset values are left
/// out, as TOML has no null.
pub fn redacted_toml(config: &Config) -> Result<String, serde_json::Error> {
    let mut value = serde_json::to_value(config)?;
    if let Value::Object(sections) = &mut value {
        for (section, table) in sections.iter_mut() {
            let Value::Object(table) = table else {
                continue;
            };
            for (key, secret) in table.iter_mut() {
                if is_secret(section, key) && !secret.is_null() {
                    *secret = Value::from(REDACTED);
                }
            }
        }
    }
    if let Some(url) = value.get_mut("database").and_then(|d| d.get_mut("url")) {
        *url = Value::from(redacted_url(&config.database.url));
    }
    let mut out = String::new();
    if let Value::Object(sections) = &value {
        write_tables(&mut out, "", sections);
    }
    Ok(out)
}

/// A database URL without its password.
fn redacted_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut url) if url.password().is_some() => {
            // Only a URL that cannot have a password refuses one, and this one has one.
            let _ = url.set_password(Some("redacted"));
            url.to_string()
        }
        _ => raw.to_string(),
    }
}

/// Writes `table`'s plain values under its `[path]` header, then its sub-tables.
fn write_tables(out: &mut String, path: &str, table: &Map<String, Value>) {
    if !path.is_empty() {
        out.push_str(&format!("\n[{path}]\n"));
    }
    for (key, value) in table {
        if !value.is_object() && !value.is_null() {
            // JSON's strings, numbers, booleans and arrays of them are TOML's too.
            out.push_str(&format!("{key} = {value}\n"));
        }
    }
    for (key, value) in table {
        if let Value::Object(inner) = value {
            let inner_path = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            write_tables(out, &inner_path, inner);
        }
    }
}
