//! Completing a connection: the callback's code exchanged for tokens and who connected read
//! with them, one function per platform (Facebook Login in `meta`, Instagram Login in
//! `instagram_login`).

use reqwest::Method;

use super::{
    CodeGrant, GOOGLE_SCOPES, Identity, LoginRoute, OAuthContext, OAuthError, X_SCOPES, app,
    call::{Profile, access_token, call, expiry, text},
    instagram_login::instagram_login,
    is_instagram_login, meta, require_granted,
};
use crate::domain::plan::Platform;

/// Exchanges the callback's code and reads who connected.
pub async fn complete(
    ctx: &OAuthContext<'_>,
    platform: Platform,
    route: LoginRoute,
    code: &str,
    code_verifier: &str,
    redirect_uri: &str,
) -> Result<Vec<Identity>, OAuthError> {
    let (client, secret, _) = app(ctx.oauth, platform, route)?;
    let grant = CodeGrant {
        client,
        secret,
        code,
        code_verifier,
        redirect_uri,
    };
    match platform {
        _ if is_instagram_login(platform, route) => {
            instagram_login(ctx, client, secret, code, redirect_uri).await
        }
        Platform::Facebook | Platform::Instagram => {
            meta::facebook_login(ctx, platform, &grant).await
        }
        Platform::Threads => complete_threads(ctx, &grant).await,
        Platform::Tiktok => complete_tiktok(ctx, &grant).await,
        Platform::Youtube => complete_youtube(ctx, &grant).await,
        Platform::X => complete_x(ctx, &grant).await,
    }
}

/// threads: code → short-lived token → long-lived token (`th_exchange_token`) → the profile.
async fn complete_threads(
    ctx: &OAuthContext<'_>,
    grant: &CodeGrant<'_>,
) -> Result<Vec<Identity>, OAuthError> {
    let http = ctx.http;
    let p = ctx.platforms;
    let base = p.threads_url.trim_end_matches('/');
    let short = call(
        ctx,
        "threads",
        http.post(&ctx.oauth.threads_token_url).form(&[
            ("client_id", grant.client),
            ("client_secret", grant.secret),
            ("code", grant.code),
            ("grant_type", "authorization_code"),
            ("redirect_uri", grant.redirect_uri),
        ]),
    )
    .await?;
    let short = access_token(&short);
    let long = call(
        ctx,
        "threads",
        http.get(&ctx.oauth.threads_exchange_url).query(&[
            ("grant_type", "th_exchange_token"),
            ("client_secret", grant.secret),
            ("access_token", short.as_str()),
        ]),
    )
    .await?;
    let token = access_token(&long);
    let me = call(
        ctx,
        "threads",
        http.get(format!("{base}/{}/me", p.threads_version.trim_matches('/')))
            .query(&[("fields", "id,username,name,threads_profile_picture_url")])
            .bearer_auth(&token),
    )
    .await?;
    let username = me["username"].as_str().map(str::to_string);
    Ok(vec![Identity {
        platform: Platform::Threads,
        external_id: text(&me["id"])
            .ok_or_else(|| OAuthError::Refused("threads gave no user id".into()))?,
        display_name: username.clone().unwrap_or_default(),
        username,
        account_type: None,
        profile_picture_url: me["threads_profile_picture_url"]
            .as_str()
            .map(str::to_string),
        access_token: token,
        refresh_token: None,
        token_expires_at: expiry(ctx.now, &long, "expires_in"),
        data_access_expires_at: None,
    }])
}

/// tiktok: code (with PKCE) → tokens, every scope asked for granted → the user's info.
async fn complete_tiktok(
    ctx: &OAuthContext<'_>,
    grant: &CodeGrant<'_>,
) -> Result<Vec<Identity>, OAuthError> {
    let http = ctx.http;
    let base = ctx.platforms.tiktok_url.trim_end_matches('/');
    let tokens = call(
        ctx,
        "tiktok",
        http.post(&ctx.oauth.tiktok_token_url).form(&[
            ("client_key", grant.client),
            ("client_secret", grant.secret),
            ("code", grant.code),
            ("grant_type", "authorization_code"),
            ("redirect_uri", grant.redirect_uri),
            ("code_verifier", grant.code_verifier),
        ]),
    )
    .await?;
    require_granted("tiktok", crate::platforms::tiktok::SCOPES, &tokens)?;
    let token = access_token(&tokens);
    let info = call(
        ctx,
        "tiktok",
        http.request(Method::GET, format!("{base}/v2/user/info/"))
            .query(&[("fields", "open_id,display_name,username,avatar_url")])
            .bearer_auth(&token),
    )
    .await?;
    let user = &info["data"]["user"];
    let profile = Profile {
        external_id: text(&tokens["open_id"])
            .or_else(|| text(&user["open_id"]))
            .ok_or_else(|| OAuthError::Refused("tiktok gave no open_id".into()))?,
        display_name: user["display_name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        username: user["username"].as_str().map(str::to_string),
        picture: user["avatar_url"].as_str().map(str::to_string),
    };
    Ok(vec![profile.with_tokens(
        Platform::Tiktok,
        token,
        &tokens,
        ctx.now,
    )])
}

/// youtube: code (with PKCE) → Google tokens, every scope asked for granted → the channel.
async fn complete_youtube(
    ctx: &OAuthContext<'_>,
    grant: &CodeGrant<'_>,
) -> Result<Vec<Identity>, OAuthError> {
    let http = ctx.http;
    let tokens = call(
        ctx,
        "youtube",
        http.post(&ctx.oauth.google_token_url).form(&[
            ("client_id", grant.client),
            ("client_secret", grant.secret),
            ("code", grant.code),
            ("grant_type", "authorization_code"),
            ("redirect_uri", grant.redirect_uri),
            ("code_verifier", grant.code_verifier),
        ]),
    )
    .await?;
    require_granted("youtube", GOOGLE_SCOPES, &tokens)?;
    let token = access_token(&tokens);
    let channels = call(
        ctx,
        "youtube",
        http.get(format!(
            "{}/youtube/v3/channels",
            ctx.platforms.youtube_url.trim_end_matches('/')
        ))
        .query(&[("part", "snippet"), ("mine", "true")])
        .bearer_auth(&token),
    )
    .await?;
    let channel = &channels["items"][0];
    let snippet = &channel["snippet"];
    let profile = Profile {
        external_id: text(&channel["id"]).ok_or_else(|| {
            OAuthError::Refused("the Google account has no youtube channel".into())
        })?,
        display_name: snippet["title"].as_str().unwrap_or_default().to_string(),
        username: snippet["customUrl"].as_str().map(str::to_string),
        picture: snippet["thumbnails"]["default"]["url"]
            .as_str()
            .map(str::to_string),
    };
    Ok(vec![profile.with_tokens(
        Platform::Youtube,
        token,
        &tokens,
        ctx.now,
    )])
}

/// x: code (with PKCE, the app in basic auth) → tokens, every scope asked for granted → the user.
async fn complete_x(
    ctx: &OAuthContext<'_>,
    grant: &CodeGrant<'_>,
) -> Result<Vec<Identity>, OAuthError> {
    let http = ctx.http;
    let base = ctx.platforms.x_url.trim_end_matches('/');
    let tokens = call(
        ctx,
        "x",
        http.post(&ctx.oauth.x_token_url)
            .basic_auth(grant.client, Some(grant.secret))
            .form(&[
                ("code", grant.code),
                ("grant_type", "authorization_code"),
                ("redirect_uri", grant.redirect_uri),
                ("code_verifier", grant.code_verifier),
            ]),
    )
    .await?;
    require_granted("x", X_SCOPES, &tokens)?;
    let token = access_token(&tokens);
    let me = call(
        ctx,
        "x",
        http.get(format!("{base}/2/users/me")).bearer_auth(&token),
    )
    .await?;
    let user = &me["data"];
    let profile = Profile {
        external_id: text(&user["id"])
            .ok_or_else(|| OAuthError::Refused("x gave no user id".into()))?,
        display_name: user["name"].as_str().unwrap_or_default().to_string(),
        username: user["username"].as_str().map(str::to_string),
        picture: None,
    };
    Ok(vec![profile.with_tokens(
        Platform::X,
        token,
        &tokens,
        ctx.now,
    )])
}
