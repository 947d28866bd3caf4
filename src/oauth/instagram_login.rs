//! Connecting instagram through Instagram Login (`platform-apis.md` §3.7), for professional
//! accounts without a facebook page.

use super::{
    Identity, OAuthContext, OAuthError,
    call::{call, expiry, text},
};
use crate::{
    config::PlatformsConfig,
    domain::plan::Platform,
    platforms::ids::{GraphId, InvalidId},
};

/// `{instagram_login_graph_url}/{endpoint}`: the token endpoints have no version segment.
pub(super) fn instagram_login_url(p: &PlatformsConfig, endpoint: &str) -> String {
    format!(
        "{}/{endpoint}",
        p.instagram_login_graph_url.trim_end_matches('/')
    )
}

/// Instagram Login (`platform-apis.md` §3.7): code → short-lived token (`POST`, form) → 60-day
/// token (`ig_exchange_token`) → the professional account's profile.
pub(super) async fn instagram_login(
    ctx: &OAuthContext<'_>,
    client: &str,
    secret: &str,
    code: &str,
    redirect_uri: &str,
) -> Result<Vec<Identity>, OAuthError> {
    let http = ctx.http;
    let p = ctx.platforms;
    let short = call(
        ctx,
        "instagram",
        http.post(&ctx.oauth.instagram_login_token_url).form(&[
            ("client_id", client),
            ("client_secret", secret),
            ("grant_type", "authorization_code"),
            ("redirect_uri", redirect_uri),
            ("code", code),
        ]),
    )
    .await?;
    // Meta documents `{"data":[{"access_token","user_id","permissions"}]}`; clients in the wild
    // read it flat. Either is accepted (tolerant adapter; the simulator answers the documented
    // form).
    let short_token = short["data"][0]["access_token"]
        .as_str()
        .or(short["access_token"].as_str())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| OAuthError::Refused("instagram gave no access token".into()))?
        .to_string();
    let long = call(
        ctx,
        "instagram",
        http.get(instagram_login_url(p, "access_token")).query(&[
            ("grant_type", "ig_exchange_token"),
            ("client_secret", secret),
            ("access_token", short_token.as_str()),
        ]),
    )
    .await?;
    let token = long["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| OAuthError::Refused("instagram gave no long-lived token".into()))?
        .to_string();
    let me = call(
        ctx,
        "instagram",
        http.get(format!(
            "{}/{}/me",
            p.instagram_login_graph_url.trim_end_matches('/'),
            p.graph_version.trim_matches('/')
        ))
        .query(&[(
            "fields",
            "user_id,username,name,account_type,profile_picture_url",
        )])
        .bearer_auth(&token),
    )
    .await?;
    // `user_id` is the professional account's id, the one media and insights are addressed
    // by (`id` is app-scoped); checked before it goes into paths.
    let user_id = text(&me["user_id"])
        .or_else(|| text(&me["id"]))
        .ok_or_else(|| OAuthError::Refused("instagram gave no user id".into()))?;
    GraphId::parse(&user_id).map_err(InvalidId::unexpected)?;
    let username = me["username"].as_str().map(str::to_string);
    Ok(vec![Identity {
        platform: Platform::Instagram,
        external_id: user_id,
        display_name: username
            .clone()
            .or_else(|| me["name"].as_str().map(str::to_string))
            .unwrap_or_default(),
        username,
        // Instagram Login serves professional accounts only; the profile says which kind, in
        // the IG user reference's spelling (`Business`, `Media_Creator`), which spec §2.2
        // writes in capitals.
        account_type: Some(
            me["account_type"]
                .as_str()
                .filter(|t| !t.is_empty())
                .unwrap_or("BUSINESS")
                .to_ascii_uppercase(),
        ),
        profile_picture_url: me["profile_picture_url"].as_str().map(str::to_string),
        access_token: token,
        refresh_token: None,
        token_expires_at: expiry(ctx.now, &long, "expires_in"),
        data_access_expires_at: None,
    }])
}
