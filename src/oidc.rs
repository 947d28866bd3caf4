//! The dashboard's OpenID Connect client: authorization code flow with PKCE (S256), `state` and
//! `nonce`. Endpoints come from configuration or from the issuer's discovery document.
//!
//! ID-token checks: `iss` equals the configured issuer, `aud` contains our client id, `exp` is in
//! the future, `nonce` matches the one we sent. HS256 tokens are verified with the client secret.
//! Tokens signed otherwise (RS256, …) are accepted on the strength of having come straight from
//! the token endpoint over TLS (OpenID Connect Core 1.0 §3.1.3.7, item 6) — so we require an
//! `https` token endpoint for them.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use secrecy::ExposeSecret;
use serde::Deserialize;
use tokio::sync::OnceCell;
use url::Url;

use crate::{config::AuthConfig, crypto};

/// The provider endpoints we use.
#[derive(Debug, Clone, Deserialize)]
pub struct Endpoints {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
}

/// Who signed in, from a validated ID token.
#[derive(Debug, Clone)]
pub struct Identity {
    pub issuer: String,
    pub subject: String,
    pub email: Option<String>,
    pub name: Option<String>,
}

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
}

impl OidcClient {
    pub fn new(config: AuthConfig, http: reqwest::Client) -> Self {
        Self {
            config,
            http,
            endpoints: OnceCell::new(),
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
                response
                    .json::<Endpoints>()
                    .await
                    .map_err(|e| OidcError::Unreachable(e.to_string()))
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
        let token_endpoint_is_tls = endpoints.token_endpoint.starts_with("https://");
        validate_id_token(
            id_token,
            &endpoints.issuer,
            &self.config.client_id,
            &secret,
            expected_nonce,
            token_endpoint_is_tls,
            now,
        )
    }
}

#[derive(Deserialize)]
struct Header {
    alg: String,
}

#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    aud: serde_json::Value,
    exp: i64,
    nonce: Option<String>,
    email: Option<String>,
    name: Option<String>,
}

/// Validates an ID token's signature (HS256) or channel, and its claims.
fn validate_id_token(
    token: &str,
    issuer: &str,
    client_id: &str,
    client_secret: &str,
    expected_nonce: &str,
    token_endpoint_is_tls: bool,
    now: DateTime<Utc>,
) -> Result<Identity, OidcError> {
    let mut parts = token.split('.');
    let (Some(header_b64), Some(claims_b64), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(OidcError::InvalidIdToken("not a JWS compact token"));
    };
    let header: Header = decode_part(header_b64)?;
    match header.alg.as_str() {
        "HS256" => {
            let signing_input = format!("{header_b64}.{claims_b64}");
            let expected =
                crypto::hmac_sha256_b64(client_secret.as_bytes(), signing_input.as_bytes());
            if !crypto::constant_time_eq(&expected, signature) {
                return Err(OidcError::InvalidIdToken("bad signature"));
            }
        }
        "none" => return Err(OidcError::InvalidIdToken("unsigned token")),
        _ if token_endpoint_is_tls => {}
        _ => {
            return Err(OidcError::InvalidIdToken(
                "asymmetric signatures are only accepted from an https token endpoint",
            ));
        }
    }
    let claims: Claims = decode_part(claims_b64)?;
    if claims.iss.trim_end_matches('/') != issuer.trim_end_matches('/') {
        return Err(OidcError::InvalidIdToken("issuer mismatch"));
    }
    let audience_ok = match &claims.aud {
        serde_json::Value::String(aud) => aud == client_id,
        serde_json::Value::Array(auds) => auds.iter().any(|a| a.as_str() == Some(client_id)),
        _ => false,
    };
    if !audience_ok {
        return Err(OidcError::InvalidIdToken("audience mismatch"));
    }
    // One minute of leeway for clock skew.
    if claims.exp + 60 < now.timestamp() {
        return Err(OidcError::InvalidIdToken("expired"));
    }
    if claims.nonce.as_deref() != Some(expected_nonce) {
        return Err(OidcError::InvalidIdToken("nonce mismatch"));
    }
    if claims.sub.is_empty() {
        return Err(OidcError::InvalidIdToken("empty subject"));
    }
    Ok(Identity {
        issuer: issuer.trim_end_matches('/').to_string(),
        subject: claims.sub,
        email: claims.email,
        name: claims.name,
    })
}

fn decode_part<T: serde::de::DeserializeOwned>(part: &str) -> Result<T, OidcError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| OidcError::InvalidIdToken("bad base64"))?;
    serde_json::from_slice(&bytes).map_err(|_| OidcError::InvalidIdToken("bad JSON"))
}

/// Builds an HS256 JWT (used by the test identity provider).
pub fn sign_hs256(claims: &serde_json::Value, secret: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signing_input = format!("{header}.{payload}");
    let signature = crypto::hmac_sha256_b64(secret.as_bytes(), signing_input.as_bytes());
    format!("{signing_input}.{signature}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn token(claims: serde_json::Value) -> String {
        sign_hs256(&claims, "secret")
    }

    fn good_claims(now: i64) -> serde_json::Value {
        json!({"iss": "http://idp/oidc", "sub": "u1", "aud": "client", "exp": now + 300,
               "nonce": "n1", "email": "a@example.com"})
    }

    #[test]
    fn accepts_a_good_token_and_rejects_each_bad_claim() {
        let now = Utc::now();
        let ts = now.timestamp();
        let check =
            |t: &str| validate_id_token(t, "http://idp/oidc", "client", "secret", "n1", false, now);
        assert_eq!(check(&token(good_claims(ts))).unwrap().subject, "u1");

        let mut cases = vec![];
        for (field, value) in [
            ("iss", json!("http://evil/oidc")),
            ("aud", json!("other")),
            ("exp", json!(ts - 3600)),
            ("nonce", json!("n2")),
        ] {
            let mut claims = good_claims(ts);
            claims[field] = value;
            cases.push((field, token(claims)));
        }
        cases.push(("signature", sign_hs256(&good_claims(ts), "wrong")));
        for (what, bad) in cases {
            assert!(check(&bad).is_err(), "{what} should be rejected");
        }
    }
}
