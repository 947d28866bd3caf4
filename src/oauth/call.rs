//! How the flows call a platform's OAuth and profile endpoints (one JSON call, its errors
//! classified), and the readers of what those answer.

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::{Identity, OAuthContext};
use crate::{
    config::PlatformsConfig,
    domain::plan::Platform,
    platforms::{PlatformError, SendTraced},
};

/// A platform call answering JSON; errors classified by HTTP status and body.
pub(super) async fn call(
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
pub(super) struct Profile {
    pub(super) external_id: String,
    pub(super) display_name: String,
    pub(super) username: Option<String>,
    pub(super) picture: Option<String>,
}

impl Profile {
    /// The identity with the tokens of an OAuth token answer (`refresh_token`, `expires_in`).
    pub(super) fn with_tokens(
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

pub(super) fn expiry(now: DateTime<Utc>, body: &Value, field: &str) -> Option<DateTime<Utc>> {
    body[field]
        .as_i64()
        .filter(|s| *s > 0)
        .map(|s| now + Duration::seconds(s))
}

/// The `access_token` of a token endpoint's answer; empty when it has none (the platform call
/// made with it then fails as unauthorized).
pub(super) fn access_token(body: &Value) -> String {
    body["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub(super) fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

pub(super) fn graph_base(p: &PlatformsConfig) -> String {
    format!(
        "{}/{}",
        p.graph_url.trim_end_matches('/'),
        p.graph_version.trim_matches('/')
    )
}
