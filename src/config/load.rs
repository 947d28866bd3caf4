//! Loading: the layers merged in order, the environment variables read verbatim, and the check
//! of the secrets `serve` refuses to start without.

use std::path::Path;

use figment::{
    Figment,
    providers::{Env, Format, Serialized, Toml},
};
use secrecy::{ExposeSecret, SecretString};

use super::{Config, ConfigError};

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
        let (figment, mut problems) = layers(path)?;
        if !problems.is_empty() {
            return Err(problems.remove(0));
        }
        figment
            .extract()
            .map_err(|e| ConfigError::Load(Box::new(e)))
    }

    /// Loads as [`Self::load`] does, but goes on past a problem: every variable given twice or
    /// unreadable, and every value of the wrong type, is reported, with the default standing in
    /// for the bad value so that the rest can still be read (`service config check`). `None`
    /// when nothing could be read at all.
    pub fn load_reporting_every_problem(path: Option<&Path>) -> (Option<Self>, Vec<ConfigError>) {
        let (mut figment, mut problems) = match layers(path) {
            Ok(loaded) => loaded,
            Err(problem) => return (None, vec![problem]),
        };
        let defaults = serde_json::to_value(Config::default()).unwrap_or_default();
        let mut replaced = Vec::new();
        loop {
            match figment.extract::<Config>() {
                Ok(config) => return (Some(config), problems),
                Err(error) => {
                    let path = error.path.clone();
                    problems.push(ConfigError::Load(Box::new(error)));
                    let pointer = format!("/{}", path.join("/"));
                    // A key whose default cannot stand in, or that failed again with its
                    // default, ends the reading: nothing more can be learnt from it.
                    let Some(default) = defaults.pointer(&pointer).filter(|_| !path.is_empty())
                    else {
                        return (None, problems);
                    };
                    if replaced.contains(&pointer) {
                        return (None, problems);
                    }
                    figment = figment.merge(Serialized::default(&path.join("."), default.clone()));
                    replaced.push(pointer);
                }
            }
        }
    }

    /// Checks that every secret `serve` needs is present and well-formed; the first problem
    /// of [`Self::secret_problems`].
    pub fn check_secrets(&self) -> Result<(), ConfigError> {
        match self.secret_problems().into_iter().next() {
            Some(problem) => Err(problem),
            None => Ok(()),
        }
    }

    /// Every problem with the secrets `serve` needs, in the order `serve` checks them.
    pub fn secret_problems(&self) -> Vec<ConfigError> {
        let mut problems = Vec::new();
        match present(
            &self.secrets.session_key,
            "secrets.session_key",
            "SERVICE__SECRETS__SESSION_KEY",
        ) {
            Ok(session) if session.len() < 32 => problems.push(ConfigError::Invalid(
                "secrets.session_key",
                "must be at least 32 characters".into(),
            )),
            Ok(_) => {}
            Err(problem) => problems.push(problem),
        }
        match present(
            &self.secrets.token_encryption_key,
            "secrets.token_encryption_key",
            "SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY",
        ) {
            Ok(token_key) => {
                if let Err(e) = crate::crypto::TokenCipher::from_config_value(token_key) {
                    problems.push(ConfigError::Invalid(
                        "secrets.token_encryption_key",
                        e.to_string(),
                    ));
                }
            }
            Err(problem) => problems.push(problem),
        }
        match present(
            &self.secrets.operator_token,
            "secrets.operator_token",
            "SERVICE__SECRETS__OPERATOR_TOKEN",
        ) {
            Ok(operator) if operator.len() < 16 => problems.push(ConfigError::Invalid(
                "secrets.operator_token",
                "must be at least 16 characters".into(),
            )),
            Ok(_) => {}
            Err(problem) => problems.push(problem),
        }
        problems
    }
}

/// Whether `key` (`section.key`) may be given as `SERVICE__SECTION__KEY_FILE`: the keys whose
/// environment values are read verbatim as strings.
pub fn has_file_form(key: &str) -> bool {
    STRING_KEYS.contains(&key)
}

/// The configuration's layers merged in order, and every problem with the string-typed
/// variables (given twice, or a file that cannot be read).
fn layers(path: Option<&Path>) -> Result<(Figment, Vec<ConfigError>), ConfigError> {
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
    Ok(with_string_variables(figment, |variable| {
        std::env::var(variable).ok()
    }))
}

/// Merges the string-typed keys' `SERVICE__SECTION__KEY` variables, read through `lookup` so
/// tests can check the mapping without touching the process environment. Each may instead be
/// given as `SERVICE__SECTION__KEY_FILE`, the path of a file holding the value (how container
/// secrets are mounted); a final line break in the file is not part of the value. Both at once
/// is refused: which one was meant cannot be known. Every such problem is returned, in the
/// keys' order.
fn with_string_variables(
    mut figment: Figment,
    lookup: impl Fn(&str) -> Option<String>,
) -> (Figment, Vec<ConfigError>) {
    let mut problems = Vec::new();
    for key in STRING_KEYS {
        let variable = format!("SERVICE__{}", key.replace('.', "__").to_ascii_uppercase());
        let file_variable = format!("{variable}_FILE");
        let value = match (lookup(&variable), lookup(&file_variable)) {
            (Some(_), Some(_)) => {
                problems.push(ConfigError::Invalid(
                    key,
                    format!("set {variable} or {file_variable}, not both"),
                ));
                None
            }
            (Some(value), None) => Some(value),
            (None, Some(path)) => match read_value_file(key, &file_variable, &path) {
                Ok(value) => Some(value),
                Err(problem) => {
                    problems.push(problem);
                    None
                }
            },
            (None, None) => None,
        };
        if let Some(value) = value {
            figment = figment.merge(Serialized::default(key, value));
        }
    }
    (figment, problems)
}

/// The value held in the file a `…_FILE` variable names, without its final line break.
fn read_value_file(key: &'static str, variable: &str, path: &str) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Invalid(key, format!("{variable}: cannot read {path}: {e}")))?;
    let value = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    Ok(value.to_string())
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
mod tests {
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
                "scheduler": c.scheduler, "logging": c.logging, "collector": c.collector,
                "oauth": serde_json::to_value(&c.oauth).ok(),
            })
        };
        assert_eq!(json(&from_file), json(&Config::default()));
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
        .0
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

    fn temp_file(name: &str, contents: &str) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("{name}-{}", uuid::Uuid::new_v4()));
        std::fs::write(&path, contents).unwrap();
        path
    }

    #[test]
    fn a_secret_can_come_from_the_file_its_file_variable_names() {
        let file = temp_file("session-key", "0123456789abcdef0123456789abcdef\n");
        let path = file.to_string_lossy().to_string();
        let config: Config = with_string_variables(
            Figment::from(Serialized::defaults(Config::default())),
            |name| (name == "SERVICE__SECRETS__SESSION_KEY_FILE").then(|| path.clone()),
        )
        .0
        .extract()
        .unwrap();
        let key = config.secrets.session_key.unwrap();
        // Read verbatim (a string, not a number) and without the file's final line break.
        assert_eq!(key.expose_secret(), "0123456789abcdef0123456789abcdef");
        let _ = std::fs::remove_file(file);
    }

    #[test]
    fn a_value_and_its_file_variable_together_or_an_unreadable_file_are_refused() {
        let file = temp_file("operator-token", "x");
        let path = file.to_string_lossy().to_string();
        let (_, both) = with_string_variables(Figment::new(), |name| match name {
            "SERVICE__SECRETS__OPERATOR_TOKEN" => Some("y".to_string()),
            "SERVICE__SECRETS__OPERATOR_TOKEN_FILE" => Some(path.clone()),
            "SERVICE__AUTH__CLIENT_SECRET_FILE" => Some("/nonexistent/secret".to_string()),
            _ => None,
        });
        // Both problems, in the keys' order.
        let [
            ConfigError::Invalid(first_key, first),
            ConfigError::Invalid(second_key, second),
        ] = &both[..]
        else {
            panic!("both problems must be reported: {both:?}");
        };
        assert_eq!(*first_key, "secrets.operator_token");
        assert!(first.contains("not both"), "{first}");
        assert_eq!(*second_key, "auth.client_secret");
        assert!(second.contains("/nonexistent/secret"), "{second}");
        let _ = std::fs::remove_file(file);
    }
}
