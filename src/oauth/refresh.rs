//! Keeping tokens alive: when each platform's token is due for a refresh, and the refresh.

use chrono::{DateTime, Duration, Utc};

use super::{
    INSTAGRAM_LOGIN_MIN_REFRESH_AGE_HOURS, LoginRoute, OAuthContext, Refreshed, app,
    call::{call, expiry},
    instagram_login::instagram_login_url,
    is_instagram_login,
};
use crate::{config::OAuthConfig, domain::plan::Platform, platforms::PlatformError};

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
}
