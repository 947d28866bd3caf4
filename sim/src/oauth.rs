//! The platforms' OAuth, as the simulator plays it (`platform-apis.md` §1.4, §3.7, §4.5, §5.9,
//! §6.8, §7.4): an authorize page per app that signs in as a simulated person and redirects back
//! with a code, and each platform's token endpoint (code exchange with client authentication and
//! PKCE where the platform has it, long-lived exchange, refresh, rotation).
//!
//! `GET /oauth/{app}/authorize` takes test parameters besides the platform's own:
//! `login_hint` (the person's name: the same name finds the same accounts again), `deny=1`
//! (the person refuses: `error=access_denied`) and `grant` (the scopes the person grants, in the
//! platform's `scope` syntax, when not all that were asked: Google and TikTok let them untick).
//! Apps: `meta` (facebook pages and instagram via Facebook Login), `instagram` (instagram via
//! Instagram Login; its token endpoints are in [`super::instagram_login`]), `threads`, `tiktok`,
//! `google` (youtube), `x`.

use std::time::Instant;

use actix_web::{
    HttpRequest, HttpResponse,
    http::{StatusCode, header},
    web,
};
use base64::{Engine, engine::general_purpose::STANDARD};
use serde_json::{Value, json};

use super::{
    idp::IdpState,
    state::{Refusal, SimObject, SimState, bearer_token, violation},
};
use crate::util::{pkce_challenge, random_token};

/// Lifetimes the platforms give (seconds).
const META_SHORT: u64 = 3_600;
const META_LONG: u64 = 5_183_944;
const THREADS_LONG: u64 = 5_184_000;
const TIKTOK_ACCESS: u64 = 86_400;
const TIKTOK_REFRESH: u64 = 31_536_000;
/// What a tiktok token made without an authorize request (a refresh token of an account
/// created directly) is granted.
const TIKTOK_ALL_SCOPES: &str =
    "user.info.basic,user.info.profile,user.info.stats,video.publish,video.upload,video.list";
const GOOGLE_ACCESS: u64 = 3_599;
const X_ACCESS: u64 = 7_200;
/// What a Google token made without a scope list (a refresh token of an account created
/// directly) is granted: every scope the YouTube and Analytics methods the simulator serves list.
const GOOGLE_ALL_SCOPES: &str = "https://www.googleapis.com/auth/youtube \
    https://www.googleapis.com/auth/youtube.upload https://www.googleapis.com/auth/youtube.readonly \
    https://www.googleapis.com/auth/youtube.force-ssl https://www.googleapis.com/auth/yt-analytics.readonly";
/// The same for X (the scopes of the operations the simulator serves, and refresh).
const X_ALL_SCOPES: &str = "tweet.read tweet.write users.read media.write offline.access";

/// The scope an authorization code was granted with (what its authorize request asked for: the
/// simulated person accepts all), read before the code is redeemed.
fn code_scope(state: &SimState, code: &str) -> Option<String> {
    state
        .object(&format!("oauth-code:{code}"))
        .and_then(|o| o.data["scope"].as_str().map(str::to_string))
}

/// The scope a refresh token carries (kept from the authorization it came from).
fn refresh_scope(state: &SimState, refresh_token: &str) -> Option<String> {
    state
        .object(&format!("refresh:{refresh_token}"))
        .and_then(|o| o.data["scope"].as_str().map(str::to_string))
}

/// Grants `scope` (space-separated, as Google and X write it) to an access token and to the
/// refresh token it came with, so a refresh keeps it.
fn grant_spaced(state: &SimState, access: &str, refresh: &str, scope: &str) {
    state.grant_scopes(
        access,
        scope.split_whitespace().map(str::to_string).collect(),
    );
    if let Some(mut object) = state.objects.get_mut(&format!("refresh:{refresh}")) {
        object.data = json!({ "scope": scope });
    }
}

/// Routes at the app level (before the platform scopes, whose catch-alls would take them).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/oauth/{app}/authorize", web::get().to(authorize))
        .route("/oauth/google/token", web::post().to(google_token))
        .route("/graph/{ver}/oauth/access_token", web::get().to(meta_token))
        .route("/graph/{ver}/me/accounts", web::get().to(meta_pages))
        .route("/threads/oauth/access_token", web::post().to(threads_code))
        .route("/threads/access_token", web::get().to(threads_exchange))
        .route(
            "/threads/refresh_access_token",
            web::get().to(threads_refresh),
        )
        .route("/tiktok/v2/oauth/token/", web::post().to(tiktok_token))
        .route("/x/2/oauth2/token", web::post().to(x_token))
        .route("/x/2/users/me", web::get().to(x_me));
}

fn params(raw: &str) -> Vec<(String, String)> {
    url::form_urlencoded::parse(raw.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn param<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, v)| k == name && !v.is_empty())
        .map(|(_, v)| v.as_str())
}

/// Marks `response` as refusing a protocol violation of `rule` on `app`'s platform (see
/// [`super::state::Violation`]); `None` leaves a business answer (unknown code, revoked token,
/// wrong secret) unmarked.
fn flagged(response: HttpResponse, app: &str, rule: Option<&str>, detail: &str) -> HttpResponse {
    let platform = match app {
        "meta" => "facebook",
        "google" => "youtube",
        other => other,
    };
    match rule {
        Some(rule) => violation(response, platform, rule, detail),
        None => response,
    }
}

fn oauth_error(status: u16, error: &str, description: &str) -> HttpResponse {
    HttpResponse::build(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST))
        .json(json!({"error": error, "error_description": description}))
}

/// Meta's error object, for the Graph token endpoints.
fn meta_error(message: &str) -> HttpResponse {
    HttpResponse::BadRequest().json(json!({"error": {
        "message": message, "type": "OAuthException", "code": 100, "fbtrace_id": random_token(8),
    }}))
}

/// Remembers that `token` was granted `scope` (Meta and Threads separate scopes with commas;
/// spaces are tolerated), beside the token so an exchange or refresh carries it to the next one.
fn grant_meta_scope(state: &SimState, token: &str, scope: Option<&str>) {
    let Some(scope) = scope else {
        return;
    };
    state.grant_scopes(
        token,
        scope
            .split([',', ' '])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    );
    state.put_object(
        &format!("granted:{token}"),
        SimObject {
            platform: "meta".into(),
            owner: String::new(),
            kind: "granted_scope".into(),
            data: json!({ "scope": scope }),
            created: Instant::now(),
        },
    );
}

/// The scope [`grant_meta_scope`] remembered for `token`.
fn granted_meta_scope(state: &SimState, token: &str) -> Option<String> {
    state
        .object(&format!("granted:{token}"))
        .and_then(|o| o.data["scope"].as_str().map(str::to_string))
}

/// The accounts a person has on an app's platforms, created on their first sign-in.
fn accounts_for(state: &SimState, app: &str, person: &str) -> Vec<(String, String)> {
    let ensure = |platform: &str, name: &str, username: &str| {
        let account = state
            .account_named(platform, name)
            .unwrap_or_else(|| state.create_account(platform, name, Some(username)));
        (platform.to_string(), account.external_id)
    };
    let username = person.to_ascii_lowercase().replace(' ', "_");
    match app {
        // A page and the instagram business account linked to it.
        "meta" => vec![
            ensure("facebook", &format!("{person} Page"), &username),
            ensure("instagram", person, &username),
        ],
        // The professional account itself (the same one the meta app reaches through a page).
        "instagram" => vec![ensure("instagram", person, &username)],
        "threads" => vec![ensure("threads", person, &username)],
        "tiktok" => vec![ensure("tiktok", person, &username)],
        "google" => vec![ensure("youtube", &format!("{person} Channel"), &username)],
        _ => vec![ensure("x", person, &username)],
    }
}

async fn authorize(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<SimState>,
    idp: web::Data<IdpState>,
) -> HttpResponse {
    let app = path.into_inner();
    if !["meta", "instagram", "threads", "tiktok", "google", "x"].contains(&app.as_str()) {
        return HttpResponse::NotFound().finish();
    }
    let q = params(req.query_string());
    let client = if app == "tiktok" {
        param(&q, "client_key")
    } else {
        param(&q, "client_id")
    };
    let (Some(client), Some(redirect_uri)) = (client, param(&q, "redirect_uri")) else {
        let detail = "client_id and redirect_uri are required";
        return flagged(
            oauth_error(400, "invalid_request", detail),
            &app,
            Some("missing_parameter"),
            detail,
        );
    };
    if !idp.knows_client(client) {
        return oauth_error(400, "invalid_client", "unknown client");
    }
    let challenge = param(&q, "code_challenge").map(str::to_string);
    // X and TikTok (as we use it) require PKCE.
    if (app == "x" || app == "tiktok") && challenge.is_none() {
        let detail = "code_challenge is required";
        return flagged(
            oauth_error(400, "invalid_request", detail),
            &app,
            Some("pkce_required"),
            detail,
        );
    }
    if app == "instagram"
        && let Err(detail) = super::instagram_login::check_scopes(param(&q, "scope"))
    {
        return flagged(
            oauth_error(400, "invalid_scope", &detail),
            &app,
            Some("invalid_scope"),
            &detail,
        );
    }
    let Ok(mut back) = url::Url::parse(redirect_uri) else {
        let detail = "redirect_uri is not a URL";
        return flagged(
            oauth_error(400, "invalid_request", detail),
            &app,
            Some("invalid_redirect_uri"),
            detail,
        );
    };
    {
        let mut query = back.query_pairs_mut();
        if param(&q, "deny") == Some("1") {
            query.append_pair("error", "access_denied");
            query.append_pair("error_description", "The user denied the request");
        } else {
            let person = param(&q, "login_hint").unwrap_or("Sim User");
            let code = random_token(24);
            state.put_object(
                &format!("oauth-code:{code}"),
                SimObject {
                    platform: app.clone(),
                    owner: person.to_string(),
                    kind: "oauth_code".into(),
                    data: json!({
                        "client": client,
                        "redirect_uri": redirect_uri,
                        "challenge": challenge,
                        "method": param(&q, "code_challenge_method").unwrap_or("plain"),
                        // `grant` (a test parameter): the scopes the person leaves ticked on
                        // a consent screen that lets them untick some (Google, TikTok).
                        "scope": param(&q, "grant").or(param(&q, "scope")),
                        "accounts": accounts_for(&state, &app, person),
                    }),
                    created: Instant::now(),
                },
            );
            query.append_pair("code", &code);
        }
        if let Some(s) = param(&q, "state") {
            query.append_pair("state", s);
        }
    }
    HttpResponse::Found()
        .insert_header((header::LOCATION, back.to_string()))
        .finish()
}

/// Why a code was not redeemed: the message, and the violated rule (`None` for a business
/// answer).
type CodeRefusal = (&'static str, Option<&'static str>);

/// Takes a code once: for this app, client and redirect URI, with the PKCE verifier if the
/// authorize request had a challenge. Returns its accounts, or why not with the violated rule
/// (`None` for an unknown or spent code: the client cannot tell a forged code from a good one).
fn redeem(
    state: &SimState,
    app: &str,
    code: &str,
    client: &str,
    redirect_uri: Option<&str>,
    verifier: Option<&str>,
) -> Result<Vec<(String, String)>, CodeRefusal> {
    let (_, object) = state.objects.remove(&format!("oauth-code:{code}")).ok_or((
        "the authorization code is invalid or was already used",
        None,
    ))?;
    let data = &object.data;
    if object.platform != app || data["client"] != client {
        return Err((
            "the authorization code was issued to another client",
            Some("code_binding"),
        ));
    }
    if redirect_uri.is_some_and(|uri| data["redirect_uri"] != uri) {
        return Err((
            "redirect_uri does not match the authorization request",
            Some("redirect_uri_mismatch"),
        ));
    }
    if let Some(challenge) = data["challenge"].as_str() {
        let verifier =
            verifier.ok_or(("code_verifier is required", Some("pkce_verifier_missing")))?;
        let computed = if data["method"] == "S256" {
            pkce_challenge(verifier)
        } else {
            verifier.to_string()
        };
        if computed != challenge {
            return Err((
                "code_verifier does not match the code_challenge",
                Some("pkce_mismatch"),
            ));
        }
    }
    Ok(data["accounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| Some((pair[0].as_str()?.to_string(), pair[1].as_str()?.to_string())))
        .collect())
}

/// [`redeem`] for the `instagram` app (Instagram Login, whose code exchange is in
/// [`super::instagram_login`]).
pub(crate) fn redeem_instagram(
    state: &SimState,
    code: &str,
    client: &str,
    redirect_uri: Option<&str>,
) -> Result<Vec<(String, String)>, CodeRefusal> {
    redeem(state, "instagram", code, client, redirect_uri, None)
}

/// A refresh token for an account, remembered until used (rotation) or forever.
fn new_refresh_token(state: &SimState, platform: &str, external_id: &str) -> String {
    let token = format!("{platform}-rt-{}", random_token(24));
    state.put_object(
        &format!("refresh:{token}"),
        SimObject {
            platform: platform.into(),
            owner: external_id.into(),
            kind: "refresh_token".into(),
            data: json!({}),
            created: Instant::now(),
        },
    );
    token
}

/// The account a refresh token belongs to; with `rotate`, the token is used up.
fn refresh_owner(state: &SimState, platform: &str, token: &str, rotate: bool) -> Option<String> {
    let key = format!("refresh:{token}");
    let object = if rotate {
        state.objects.remove(&key).map(|(_, o)| o)
    } else {
        state.object(&key)
    }?;
    (object.platform == platform).then_some(object.owner)
}

fn client_auth(
    req: &HttpRequest,
    form: &[(String, String)],
    id_field: &str,
) -> Option<(String, String)> {
    if let Some(basic) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
    {
        let decoded = String::from_utf8(STANDARD.decode(basic).ok()?).ok()?;
        let (id, secret) = decoded.split_once(':')?;
        return Some((id.to_string(), secret.to_string()));
    }
    Some((
        param(form, id_field)?.to_string(),
        param(form, "client_secret")?.to_string(),
    ))
}

// --- Meta (Facebook Login) -------------------------------------------------------------------

/// `GET /graph/{ver}/oauth/access_token`: code → short-lived user token, or
/// `grant_type=fb_exchange_token` → long-lived user token.
async fn meta_token(
    req: HttpRequest,
    state: web::Data<SimState>,
    idp: web::Data<IdpState>,
) -> HttpResponse {
    let q = params(req.query_string());
    let (Some(client), Some(secret)) = (param(&q, "client_id"), param(&q, "client_secret")) else {
        let detail = "Missing client_id or client_secret parameter.";
        return flagged(
            meta_error(detail),
            "meta",
            Some("missing_client_auth"),
            detail,
        );
    };
    if !idp.client_secret_matches(client, secret) {
        return meta_error("Error validating client secret.");
    }
    if param(&q, "grant_type") == Some("fb_exchange_token") {
        let Some(short) = param(&q, "fb_exchange_token") else {
            let detail = "Missing fb_exchange_token parameter.";
            return flagged(
                meta_error(detail),
                "meta",
                Some("missing_parameter"),
                detail,
            );
        };
        let Some(login) = state.object(&format!("meta-user:{short}")) else {
            return meta_error("Error validating access token: Session has expired or is invalid.");
        };
        // The long-lived user token works for the instagram account (IG with Facebook Login).
        let accounts: Vec<(String, String)> =
            serde_json::from_value(login.data["accounts"].clone()).unwrap_or_default();
        let token = accounts
            .iter()
            .find(|(platform, _)| platform == "instagram")
            .and_then(|(_, ext)| state.issue_token("instagram", ext))
            .unwrap_or_else(|| random_token(24));
        // The long-lived token keeps the permissions the person granted at login.
        grant_meta_scope(&state, &token, granted_meta_scope(&state, short).as_deref());
        state.put_object(
            &format!("meta-user:{token}"),
            SimObject {
                created: Instant::now(),
                ..login
            },
        );
        return HttpResponse::Ok()
            .json(json!({"access_token": token, "token_type": "bearer", "expires_in": META_LONG}));
    }
    let Some(code) = param(&q, "code") else {
        let detail = "Missing code parameter.";
        return flagged(
            meta_error(detail),
            "meta",
            Some("missing_parameter"),
            detail,
        );
    };
    // The code exchange needs the redirect_uri the code was issued for (hand-written: codegen
    // has no OAuth; <https://developers.facebook.com/docs/facebook-login/guides/advanced/manual-flow#exchangecode>).
    if param(&q, "redirect_uri").is_none() {
        let detail = "Missing redirect_uri parameter.";
        return flagged(
            meta_error(detail),
            "meta",
            Some("missing_parameter"),
            detail,
        );
    }
    let scope = code_scope(&state, code);
    let accounts = match redeem(
        &state,
        "meta",
        code,
        client,
        param(&q, "redirect_uri"),
        None,
    ) {
        Ok(accounts) => accounts,
        Err((message, rule)) => return flagged(meta_error(message), "meta", rule, message),
    };
    let token = format!("EAAshort{}", random_token(24));
    grant_meta_scope(&state, &token, scope.as_deref());
    state.put_object(
        &format!("meta-user:{token}"),
        SimObject {
            platform: "meta".into(),
            owner: String::new(),
            kind: "meta_user".into(),
            data: json!({"accounts": accounts}),
            created: Instant::now(),
        },
    );
    HttpResponse::Ok()
        .json(json!({"access_token": token, "token_type": "bearer", "expires_in": META_SHORT}))
}

/// `GET /graph/{ver}/me/accounts`: the pages the user token may manage, each with its page
/// token (which does not expire) and its linked instagram business account.
async fn meta_pages(req: HttpRequest, state: web::Data<SimState>) -> HttpResponse {
    let q = params(req.query_string());
    let token = param(&q, "access_token")
        .map(str::to_string)
        .or_else(|| bearer_token(&req));
    let Some(login) = token
        .as_deref()
        .and_then(|t| state.object(&format!("meta-user:{t}")))
    else {
        let response = HttpResponse::Unauthorized().json(json!({"error": {
            "message": "Invalid OAuth access token - Cannot parse access token", "type": "OAuthException", "code": 190,
        }}));
        // Calling without a token is the client's mistake; an unknown one may be revoked.
        let rule = token.is_none().then_some("missing_token");
        return flagged(response, "meta", rule, "no user access token");
    };
    let user_token = token.unwrap_or_default();
    // The same checks as every Graph call: the User node's `accounts` edge of the codegen spec
    // (fields of the Page it returns), then `pages_show_list`
    // (<https://developers.facebook.com/docs/graph-api/reference/user/accounts/>).
    if let Err(problem) = crate::spec::meta::check("User", "GET", Some("accounts"), &q) {
        return super::graph::spec_error(&problem, "OAuthException").response("facebook");
    }
    if let Err(error) = super::graph::require_permission(
        &state,
        &user_token,
        &actix_web::http::Method::GET,
        &["pages_show_list"],
        "OAuthException",
    ) {
        return error.response("facebook");
    }
    let scope = granted_meta_scope(&state, &user_token);
    let accounts: Vec<(String, String)> =
        serde_json::from_value(login.data["accounts"].clone()).unwrap_or_default();
    let instagram = accounts
        .iter()
        .find(|(p, _)| p == "instagram")
        .map(|(_, ext)| ext.clone());
    let pages: Vec<Value> = accounts
        .iter()
        .filter(|(platform, _)| platform == "facebook")
        .filter_map(|(_, ext)| {
            let page = state.account("facebook", ext)?;
            let page_token = state.issue_token("facebook", ext)?;
            // A page token carries the permissions the person granted the app.
            grant_meta_scope(&state, &page_token, scope.as_deref());
            let mut item = json!({
                "access_token": page_token,
                "category": "Media",
                "category_list": [{"id": "2211", "name": "Media"}],
                "name": page.name,
                "id": page.external_id,
                "tasks": ["ANALYZE", "ADVERTISE", "MODERATE", "CREATE_CONTENT", "MANAGE"],
            });
            if let Some(ig) = &instagram {
                item["instagram_business_account"] = json!({"id": ig});
            }
            Some(item)
        })
        .collect();
    HttpResponse::Ok().json(json!({"data": pages, "paging": {"cursors": {"before": "0", "after": pages.len().to_string()}}}))
}

// --- Threads ---------------------------------------------------------------------------------

/// The Threads Postman collection's check of a token route (`oauth/access_token`,
/// `access_token`, `refresh_access_token`): its required parameters, and on the POST only its
/// parameters. `None` when the request passes.
fn threads_token_spec(
    method: &str,
    route: &str,
    pairs: &[(String, String)],
) -> Option<HttpResponse> {
    let problem = crate::spec::threads::check(method, route, "Application", pairs).err()?;
    let detail = format!("(#100) {}", problem.message());
    Some(flagged(
        meta_error(&detail),
        "threads",
        Some(problem.rule()),
        &detail,
    ))
}

async fn threads_code(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<SimState>,
    idp: web::Data<IdpState>,
) -> HttpResponse {
    // The collection sends these in the query string, our adapter in a form body: both count.
    let mut form = params(std::str::from_utf8(&body).unwrap_or_default());
    form.extend(params(req.query_string()));
    let Some((client, secret)) = client_auth(&req, &form, "client_id") else {
        let detail = "Missing client_id or client_secret parameter.";
        return flagged(
            meta_error(detail),
            "threads",
            Some("missing_client_auth"),
            detail,
        );
    };
    if !idp.client_secret_matches(&client, &secret) {
        return meta_error("Error validating client secret.");
    }
    let Some(code) = param(&form, "code") else {
        let detail = "Missing code parameter.";
        return flagged(
            meta_error(detail),
            "threads",
            Some("missing_parameter"),
            detail,
        );
    };
    if let Some(refused) = threads_token_spec("POST", "oauth/access_token", &form) {
        return refused;
    }
    let scope = code_scope(&state, code);
    let accounts = match redeem(
        &state,
        "threads",
        code,
        &client,
        param(&form, "redirect_uri"),
        None,
    ) {
        Ok(accounts) => accounts,
        Err((message, rule)) => return flagged(meta_error(message), "threads", rule, message),
    };
    let Some((_, ext)) = accounts.first() else {
        return meta_error("no account");
    };
    // Short-lived (an hour): good only for the exchange below.
    let token = state.issue_token("threads", ext).unwrap_or_default();
    grant_meta_scope(&state, &token, scope.as_deref());
    HttpResponse::Ok().json(json!({"access_token": token, "user_id": ext}))
}

fn threads_account(state: &SimState, token: Option<&str>) -> Option<String> {
    let account = state.account_for_token(token?)?;
    (account.platform == "threads").then_some(account.external_id)
}

/// `th_exchange_token`: short-lived → long-lived (60 days).
async fn threads_exchange(
    req: HttpRequest,
    state: web::Data<SimState>,
    idp: web::Data<IdpState>,
) -> HttpResponse {
    let q = params(req.query_string());
    if param(&q, "grant_type") != Some("th_exchange_token") {
        let detail = "grant_type must be th_exchange_token";
        return flagged(
            meta_error(detail),
            "threads",
            Some("wrong_grant_type"),
            detail,
        );
    }
    let secret_ok = param(&q, "client_secret")
        .is_some_and(|s| param(&q, "client_id").is_none_or(|id| idp.client_secret_matches(id, s)));
    if !secret_ok {
        // No secret at all is the client's mistake; a wrong one is configuration.
        let rule = param(&q, "client_secret")
            .is_none()
            .then_some("missing_client_auth");
        let detail = "Error validating client secret.";
        return flagged(meta_error(detail), "threads", rule, detail);
    }
    if let Some(refused) = threads_token_spec("GET", "access_token", &q) {
        return refused;
    }
    let Some(ext) = threads_account(&state, param(&q, "access_token")) else {
        return meta_error("Error validating access token.");
    };
    let token = state.issue_token("threads", &ext).unwrap_or_default();
    let scope = param(&q, "access_token").and_then(|old| granted_meta_scope(&state, old));
    grant_meta_scope(&state, &token, scope.as_deref());
    HttpResponse::Ok()
        .json(json!({"access_token": token, "token_type": "bearer", "expires_in": THREADS_LONG}))
}

/// `th_refresh_token`: a long-lived token → a new long-lived token (another 60 days).
async fn threads_refresh(req: HttpRequest, state: web::Data<SimState>) -> HttpResponse {
    let q = params(req.query_string());
    if param(&q, "grant_type") != Some("th_refresh_token") {
        let detail = "grant_type must be th_refresh_token";
        return flagged(
            meta_error(detail),
            "threads",
            Some("wrong_grant_type"),
            detail,
        );
    }
    if let Some(refused) = threads_token_spec("GET", "refresh_access_token", &q) {
        return refused;
    }
    let old = param(&q, "access_token");
    let Some(ext) = threads_account(&state, old) else {
        return HttpResponse::BadRequest().json(json!({"error": {
            "message": "Error validating access token: The session has been invalidated.", "type": "OAuthException", "code": 190,
        }}));
    };
    let token = state.issue_token("threads", &ext).unwrap_or_default();
    let scope = old.and_then(|old| granted_meta_scope(&state, old));
    grant_meta_scope(&state, &token, scope.as_deref());
    HttpResponse::Ok()
        .json(json!({"access_token": token, "token_type": "bearer", "expires_in": THREADS_LONG}))
}

// --- TikTok ----------------------------------------------------------------------------------

fn tiktok_error(description: &str) -> HttpResponse {
    HttpResponse::BadRequest().json(json!({
        "error": "invalid_grant", "error_description": description, "log_id": random_token(12),
    }))
}

async fn tiktok_token(
    body: web::Bytes,
    state: web::Data<SimState>,
    idp: web::Data<IdpState>,
) -> HttpResponse {
    let form = params(std::str::from_utf8(&body).unwrap_or_default());
    let (Some(client), Some(secret)) = (param(&form, "client_key"), param(&form, "client_secret"))
    else {
        let detail = "client_key and client_secret are required";
        return flagged(
            tiktok_error(detail),
            "tiktok",
            Some("missing_client_auth"),
            detail,
        );
    };
    if !idp.client_secret_matches(client, secret) {
        return HttpResponse::Unauthorized().json(json!({"error": "invalid_client", "error_description": "Client key or secret is incorrect.", "log_id": random_token(12)}));
    }
    // The scopes granted: those the authorize request asked for (TikTok grants the user's
    // choice of the app's scopes; the simulated user accepts all), kept by a refresh.
    let mut scope: Option<String> = None;
    let ext = match param(&form, "grant_type") {
        Some("authorization_code") => {
            let Some(code) = param(&form, "code") else {
                let detail = "code is required";
                return flagged(
                    tiktok_error(detail),
                    "tiktok",
                    Some("missing_parameter"),
                    detail,
                );
            };
            scope = state
                .object(&format!("oauth-code:{code}"))
                .and_then(|o| o.data["scope"].as_str().map(str::to_string));
            match redeem(
                &state,
                "tiktok",
                code,
                client,
                param(&form, "redirect_uri"),
                param(&form, "code_verifier"),
            ) {
                Ok(accounts) => accounts.into_iter().next().map(|(_, ext)| ext),
                Err((message, rule)) => {
                    return flagged(tiktok_error(message), "tiktok", rule, message);
                }
            }
        }
        // Refresh tokens rotate: the one used is spent, a new one comes back.
        Some("refresh_token") => param(&form, "refresh_token").and_then(|rt| {
            scope = state
                .object(&format!("refresh:{rt}"))
                .and_then(|o| o.data["scope"].as_str().map(str::to_string));
            refresh_owner(&state, "tiktok", rt, true)
        }),
        _ => {
            let detail = "unsupported grant_type";
            return flagged(
                tiktok_error(detail),
                "tiktok",
                Some("wrong_grant_type"),
                detail,
            );
        }
    };
    let Some(ext) = ext else {
        return tiktok_error("Refresh token is invalid or expired.");
    };
    let access = state.issue_token("tiktok", &ext).unwrap_or_default();
    let granted = scope.unwrap_or_else(|| TIKTOK_ALL_SCOPES.to_string());
    state.grant_scopes(
        &access,
        granted.split(',').map(|s| s.trim().to_string()).collect(),
    );
    let refresh = new_refresh_token(&state, "tiktok", &ext);
    if let Some(mut object) = state.objects.get_mut(&format!("refresh:{refresh}")) {
        object.data = json!({ "scope": granted });
    }
    HttpResponse::Ok().json(json!({
        "access_token": access,
        "expires_in": TIKTOK_ACCESS,
        "open_id": ext,
        "refresh_expires_in": TIKTOK_REFRESH,
        "refresh_token": refresh,
        "scope": granted,
        "token_type": "Bearer",
    }))
}

// --- Google ----------------------------------------------------------------------------------

async fn google_token(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<SimState>,
    idp: web::Data<IdpState>,
) -> HttpResponse {
    let form = params(std::str::from_utf8(&body).unwrap_or_default());
    let Some((client, secret)) = client_auth(&req, &form, "client_id") else {
        let detail = "The OAuth client was not found.";
        let response = oauth_error(401, "invalid_client", detail);
        return flagged(response, "google", Some("missing_client_auth"), detail);
    };
    if !idp.client_secret_matches(&client, &secret) {
        return oauth_error(401, "invalid_client", "Unauthorized");
    }
    match param(&form, "grant_type") {
        Some("authorization_code") => {
            let Some(code) = param(&form, "code") else {
                let detail = "Missing required parameter: code";
                let response = oauth_error(400, "invalid_request", detail);
                return flagged(response, "google", Some("missing_parameter"), detail);
            };
            let granted = code_scope(&state, code).unwrap_or_else(|| GOOGLE_ALL_SCOPES.into());
            let accounts = match redeem(
                &state,
                "google",
                code,
                &client,
                param(&form, "redirect_uri"),
                param(&form, "code_verifier"),
            ) {
                Ok(accounts) => accounts,
                Err((message, rule)) => {
                    let response = oauth_error(400, "invalid_grant", message);
                    return flagged(response, "google", rule, message);
                }
            };
            let Some((_, ext)) = accounts.first() else {
                return oauth_error(400, "invalid_grant", "no account");
            };
            let access = state.issue_token("youtube", ext).unwrap_or_default();
            let refresh = new_refresh_token(&state, "youtube", ext);
            grant_spaced(&state, &access, &refresh, &granted);
            HttpResponse::Ok().json(json!({
                "access_token": access,
                "expires_in": GOOGLE_ACCESS,
                "refresh_token": refresh,
                "scope": granted,
                "token_type": "Bearer",
            }))
        }
        // Google keeps the refresh token: the answer has a new access token only, with the
        // scopes the refresh token was granted.
        Some("refresh_token") => {
            let refresh = param(&form, "refresh_token").unwrap_or_default();
            let Some(ext) = refresh_owner(&state, "youtube", refresh, false) else {
                return oauth_error(400, "invalid_grant", "Token has been expired or revoked.");
            };
            let granted =
                refresh_scope(&state, refresh).unwrap_or_else(|| GOOGLE_ALL_SCOPES.into());
            let access = state.issue_token("youtube", &ext).unwrap_or_default();
            grant_spaced(&state, &access, refresh, &granted);
            HttpResponse::Ok().json(json!({
                "access_token": access, "expires_in": GOOGLE_ACCESS,
                "scope": granted, "token_type": "Bearer",
            }))
        }
        _ => flagged(
            oauth_error(400, "unsupported_grant_type", "Invalid grant_type"),
            "google",
            Some("wrong_grant_type"),
            "Invalid grant_type",
        ),
    }
}

// --- X ---------------------------------------------------------------------------------------

async fn x_token(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<SimState>,
    idp: web::Data<IdpState>,
) -> HttpResponse {
    let form = params(std::str::from_utf8(&body).unwrap_or_default());
    // Confidential clients authenticate with Basic; public ones send client_id only.
    let client = match client_auth(&req, &form, "client_id") {
        Some((id, secret)) if idp.client_secret_matches(&id, &secret) => id,
        Some(_) => {
            return oauth_error(
                401,
                "unauthorized_client",
                "Missing valid authorization header",
            );
        }
        None => match param(&form, "client_id") {
            Some(id) if idp.knows_client(id) => id.to_string(),
            // An unknown client id is configuration; none at all is the client's mistake.
            other => {
                let detail = "Missing valid authorization header";
                let response = oauth_error(401, "unauthorized_client", detail);
                let rule = other.is_none().then_some("missing_client_auth");
                return flagged(response, "x", rule, detail);
            }
        },
    };
    // The scopes granted: the authorize request's, kept by a refresh (the token rotates).
    let mut granted: Option<String> = None;
    let ext = match param(&form, "grant_type") {
        Some("authorization_code") => {
            let Some(code) = param(&form, "code") else {
                let detail = "Missing required parameter [code].";
                let response = oauth_error(400, "invalid_request", detail);
                return flagged(response, "x", Some("missing_parameter"), detail);
            };
            granted = code_scope(&state, code);
            match redeem(
                &state,
                "x",
                code,
                &client,
                param(&form, "redirect_uri"),
                param(&form, "code_verifier"),
            ) {
                Ok(accounts) => accounts.into_iter().next().map(|(_, ext)| ext),
                Err((message, rule)) => {
                    let response = oauth_error(400, "invalid_request", message);
                    return flagged(response, "x", rule, message);
                }
            }
        }
        Some("refresh_token") => param(&form, "refresh_token").and_then(|rt| {
            granted = refresh_scope(&state, rt);
            refresh_owner(&state, "x", rt, true)
        }),
        _ => {
            let detail = "Value passed for the grant type was invalid.";
            let response = oauth_error(400, "invalid_request", detail);
            return flagged(response, "x", Some("wrong_grant_type"), detail);
        }
    };
    let Some(ext) = ext else {
        return oauth_error(
            400,
            "invalid_request",
            "Value passed for the token was invalid.",
        );
    };
    let access = state.issue_token("x", &ext).unwrap_or_default();
    let granted = granted.unwrap_or_else(|| X_ALL_SCOPES.into());
    let mut body = json!({
        "token_type": "bearer",
        "expires_in": X_ACCESS,
        "access_token": access,
        "scope": granted,
    });
    // X issues a refresh token only to an authorization that asked for `offline.access`
    // (<https://docs.x.com/fundamentals/authentication/oauth-2-0/authorization-code>).
    if granted.split_whitespace().any(|s| s == "offline.access") {
        let refresh = new_refresh_token(&state, "x", &ext);
        grant_spaced(&state, &access, &refresh, &granted);
        body["refresh_token"] = json!(refresh);
    } else {
        grant_spaced(&state, &access, "", &granted);
    }
    HttpResponse::Ok().json(body)
}

/// `GET /2/users/me`.
async fn x_me(req: HttpRequest, state: web::Data<SimState>) -> HttpResponse {
    let token = bearer_token(&req);
    match state.admit(&["x"], token.as_deref(), req.path()).await {
        Ok(account) => match super::x::spec_check(&state, &req, "GET", "/2/users/me", &[]) {
            Ok(()) => HttpResponse::Ok().json(json!({"data": {
                "id": account.external_id, "name": account.name, "username": account.username,
            }})),
            Err(problem) => problem.into_response(),
        },
        Err(refusal) => {
            let response = HttpResponse::Unauthorized().json(json!({
                "title": "Unauthorized", "type": "about:blank", "status": 401, "detail": "Unauthorized",
            }));
            // Calling without a token is the client's mistake; an unknown one may be revoked.
            let rule = (refusal == Refusal::NoToken).then_some("missing_token");
            flagged(response, "x", rule, "no bearer token")
        }
    }
}
