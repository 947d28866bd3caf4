//! Connecting facebook pages and instagram business accounts through the Meta app (Facebook
//! Login): a user token, made long-lived, lists the pages the user granted with their page
//! tokens and the instagram account linked to each.

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::{
    CodeGrant, DATA_ACCESS_DAYS, Identity, OAuthContext, OAuthError,
    call::{access_token, call, expiry, graph_base, text},
};
use crate::{
    domain::plan::Platform,
    platforms::ids::{ApiPath, GraphId, InvalidId},
};

/// Facebook Login for `platform` (facebook or instagram): one identity per page granted, or per
/// instagram account linked to one.
pub(super) async fn facebook_login(
    ctx: &OAuthContext<'_>,
    platform: Platform,
    grant: &CodeGrant<'_>,
) -> Result<Vec<Identity>, OAuthError> {
    let (user_token, user_expires) = long_lived_user_token(ctx, grant).await?;
    let pages = call(
        ctx,
        "meta",
        ctx.http
            .get(format!("{}/me/accounts", graph_base(ctx.platforms)))
            .query(&[
                ("fields", "id,name,access_token,instagram_business_account"),
                ("limit", "100"),
            ])
            .bearer_auth(&user_token),
    )
    .await?;
    let pages = pages["data"].as_array().cloned().unwrap_or_default();
    let mut identities = Vec::new();
    for page in &pages {
        if platform == Platform::Facebook {
            identities.extend(page_identity(page, ctx.now));
        } else if let Some(ig) = text(&page["instagram_business_account"]["id"]) {
            identities.push(linked_instagram(ctx, ig, &user_token, user_expires).await?);
        }
    }
    if identities.is_empty() {
        return Err(OAuthError::Refused(match platform {
            Platform::Facebook => "the user granted no page".into(),
            _ => "no instagram business or creator account is linked to the pages granted".into(),
        }));
    }
    Ok(identities)
}

/// Code → short-lived user token → long-lived one (`fb_exchange_token`), with its expiry.
async fn long_lived_user_token(
    ctx: &OAuthContext<'_>,
    grant: &CodeGrant<'_>,
) -> Result<(String, Option<DateTime<Utc>>), OAuthError> {
    let http = ctx.http;
    let url = &ctx.oauth.meta_token_url;
    let short = call(
        ctx,
        "meta",
        http.get(url).query(&[
            ("client_id", grant.client),
            ("client_secret", grant.secret),
            ("redirect_uri", grant.redirect_uri),
            ("code", grant.code),
        ]),
    )
    .await?;
    let short = access_token(&short);
    let long = call(
        ctx,
        "meta",
        http.get(url).query(&[
            ("grant_type", "fb_exchange_token"),
            ("client_id", grant.client),
            ("client_secret", grant.secret),
            ("fb_exchange_token", short.as_str()),
        ]),
    )
    .await?;
    let user_token = access_token(&long);
    Ok((user_token, expiry(ctx.now, &long, "expires_in")))
}

/// A facebook page with its page token; `None` for a page listed without an id or a token.
fn page_identity(page: &Value, now: DateTime<Utc>) -> Option<Identity> {
    let (Some(id), Some(token)) = (text(&page["id"]), page["access_token"].as_str()) else {
        return None;
    };
    Some(Identity {
        platform: Platform::Facebook,
        external_id: id,
        display_name: page["name"].as_str().unwrap_or_default().to_string(),
        username: None,
        account_type: None,
        profile_picture_url: None,
        access_token: token.to_string(),
        refresh_token: None,
        // Page tokens from a long-lived user token do not expire.
        token_expires_at: None,
        data_access_expires_at: Some(now + Duration::days(DATA_ACCESS_DAYS)),
    })
}

/// The instagram business account `ig` linked to a page, used with the long-lived user token.
async fn linked_instagram(
    ctx: &OAuthContext<'_>,
    ig: String,
    user_token: &str,
    user_expires: Option<DateTime<Utc>>,
) -> Result<Identity, OAuthError> {
    // The id Meta handed back becomes a path: checked, and one segment.
    let ig_id = GraphId::parse(&ig).map_err(InvalidId::unexpected)?;
    let user = call(
        ctx,
        "meta",
        ctx.http
            .get(ApiPath::id(&ig_id).on(&graph_base(ctx.platforms))?)
            .query(&[("fields", "id,username,name")])
            .bearer_auth(user_token),
    )
    .await?;
    let username = user["username"].as_str().map(str::to_string);
    Ok(Identity {
        platform: Platform::Instagram,
        external_id: ig,
        display_name: username
            .clone()
            .or_else(|| user["name"].as_str().map(str::to_string))
            .unwrap_or_default(),
        username,
        // Only business (or creator) accounts link to a page and can publish.
        account_type: Some("BUSINESS".into()),
        profile_picture_url: None,
        access_token: user_token.to_string(),
        refresh_token: None,
        token_expires_at: user_expires,
        data_access_expires_at: None,
    })
}
