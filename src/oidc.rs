//! The dashboard's OpenID Connect client: authorization code flow with PKCE (S256), `state` and
//! `nonce`. Endpoints come from configuration or from the issuer's discovery document.
//!
//! ID tokens are verified in [`id_token`]: the signature against the provider's JWKS
//! (`jwks_uri` from discovery, or `auth.jwks_uri`), cached in [`jwks`] and fetched again when a
//! token names a new key; HS256 with the client secret only where `auth.allow_hs256_id_tokens`
//! says so. Then `iss`, `aud` (and `azp`), `exp` and `nonce`.

mod id_token;
mod jwks;

use chrono::{DateTime, Utc};
use secrecy::ExposeSecret;
use serde::Deserialize;
use tokio::sync::OnceCell;
use url::Url;

use crate::config::AuthConfig;

/// The provider endpoints we use.
#[derive(Debug, Clone, Deserialize)]
pub struct Endpoints {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    /// Where the provider publishes its signing keys; `None` when endpoints are configured by
    /// hand without `auth.jwks_uri`.
    #[serde(default)]
    pub jwks_uri: Option<String>,
}

pub use crate::domain::identity::Identity;

/// Why a sign-in could not complete.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    #[error("dashboard sign-in is not configured (set auth.issuer and auth.client_id)")]
    NotConfigured,
    #[error("identity provider unreachable: {0}")]
    Unreachable(String),
    #[error("identity provider refused the code: {0}")]
    Rejected(String),
    #[error("ID token is invalid: {0}")]
    InvalidIdToken(&'static str),
}

/// OIDC client; discovery happens once, on first use.
pub struct OidcClient {
    config: AuthConfig,
    http: reqwest::Client,
    endpoints: OnceCell<Endpoints>,
    jwks: jwks::JwksCache,
}

impl OidcClient {
    pub fn new(config: AuthConfig, http: reqwest::Client) -> Self {
        Self {
            config,
            http,
            endpoints: OnceCell::new(),
            jwks: jwks::JwksCache::default(),
        }
    }

    pub fn is_configured(&self) -> bool {
        !self.config.issuer.is_empty() && !self.config.client_id.is_empty()
    }

    /// Configured endpoints, or those of the discovery document.
    pub async fn endpoints(&self) -> Result<&Endpoints, OidcError> {
        if !self.is_configured() {
            return Err(OidcError::NotConfigured);
        }
        self.endpoints
            .get_or_try_init(|| async {
                let issuer = self.config.issuer.trim_end_matches('/').to_string();
                if !self.config.authorization_endpoint.is_empty()
                    && !self.config.token_endpoint.is_empty()
                {
                    return Ok(Endpoints {
                        issuer,
                        authorization_endpoint: self.config.authorization_endpoint.clone(),
                        token_endpoint: self.config.token_endpoint.clone(),
                        jwks_uri: Some(self.config.jwks_uri.clone()).filter(|uri| !uri.is_empty()),
                    });
                }
                let url = format!("{issuer}/.well-known/openid-configuration");
                let response = self
                    .http
                    .get(&url)
                    .send()
                    .await
                    .map_err(|e| OidcError::Unreachable(e.to_string()))?;
                if !response.status().is_success() {
                    return Err(OidcError::Unreachable(format!(
                        "{url} answered {}",
                        response.status()
                    )));
                }
                let discovered = response
                    .json::<Endpoints>()
                    .await
                    .map_err(|e| OidcError::Unreachable(e.to_string()))?;
                // The ID token's `iss` is checked against this issuer, so a document naming
                // another one is not the configured provider's (OpenID Connect Discovery §4.3).
                if discovered.issuer.trim_end_matches('/') != issuer {
                    return Err(OidcError::Unreachable(format!(
                        "{url} names the issuer {:?}, not the configured {issuer:?}",
                        discovered.issuer
                    )));
                }
                Ok(discovered)
            })
            .await
    }

    /// The URL to send the browser to.
    pub fn authorization_url(
        &self,
        endpoints: &Endpoints,
        redirect_uri: &str,
        state: &str,
        nonce: &str,
        code_challenge: &str,
        login_hint: Option<&str>,
    ) -> Result<Url, OidcError> {
        let mut url = Url::parse(&endpoints.authorization_endpoint)
            .map_err(|e| OidcError::Unreachable(format!("bad authorization endpoint: {e}")))?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &self.config.client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("scope", &self.config.scopes)
                .append_pair("state", state)
                .append_pair("nonce", nonce)
                .append_pair("code_challenge", code_challenge)
                .append_pair("code_challenge_method", "S256");
            if let Some(hint) = login_hint {
                query.append_pair("login_hint", hint);
            }
        }
        Ok(url)
    }

    /// Exchanges an authorization code and validates the ID token.
    pub async fn exchange_code(
        &self,
        code: &str,
        code_verifier: &str,
        redirect_uri: &str,
        expected_nonce: &str,
        now: DateTime<Utc>,
    ) -> Result<Identity, OidcError> {
        let endpoints = self.endpoints().await?;
        let secret = self
            .config
            .client_secret
            .as_ref()
            .map(|s| s.expose_secret().to_string())
            .unwrap_or_default();
        let response = self
            .http
            .post(&endpoints.token_endpoint)
            .basic_auth(&self.config.client_id, Some(&secret))
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", redirect_uri),
                ("code_verifier", code_verifier),
            ])
            .send()
            .await
            .map_err(|e| OidcError::Unreachable(e.to_string()))?;
        let status = response.status();
        let body: serde_json::Value = response
            .json()
            .await
            .map_err(|e| OidcError::Rejected(format!("unreadable token response: {e}")))?;
        if !status.is_success() {
            let reason = body
                .get("error")
                .and_then(|v| v.as_str())
                .unwrap_or("unknown_error")
                .to_string();
            return Err(OidcError::Rejected(reason));
        }
        let id_token =
            body.get("id_token")
                .and_then(|v| v.as_str())
                .ok_or(OidcError::InvalidIdToken(
                    "no id_token in the token response",
                ))?;
        let keys = match &endpoints.jwks_uri {
            Some(uri) => Some(
                self.jwks
                    .keys(
                        |keys| id_token::names_unknown_kid(id_token, keys),
                        || jwks::fetch(&self.http, uri),
                    )
                    .await?,
            ),
            None => None,
        };
        let hs256_secret =
            (self.config.allow_hs256_id_tokens && !secret.is_empty()).then_some(secret.as_str());
        id_token::validate(
            id_token,
            &id_token::Expected {
                issuer: &endpoints.issuer,
                client_id: &self.config.client_id,
                nonce: expected_nonce,
                now,
                keys: keys.as_deref(),
                hs256_secret,
            },
        )
    }
}
