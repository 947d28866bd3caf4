//! Instagram API with Instagram Login, as the simulator plays it (`platform-apis.md` §1.2, §3,
//! §3.7): the hosts professional instagram accounts without a facebook page use.
//!
//! - `POST /instagram-api/oauth/access_token` (api.instagram.com): code → short-lived (1 h)
//!   token, answered in the documented `{"data":[{"access_token","user_id","permissions"}]}`
//!   form;
//! - `GET /instagram/access_token` (graph.instagram.com): `ig_exchange_token`, short-lived →
//!   60-day token;
//! - `GET /instagram/refresh_access_token`: `ig_refresh_token`, a 60-day token at least 24 h old
//!   and not expired → a new 60-day token;
//! - `/instagram/{ver}/…`: the Graph API of graph.instagram.com. The IG handlers of
//!   [`super::graph`] (containers, `media_publish`, `content_publishing_limit`, insights, media
//!   lists) serve it through [`graph::handle_on`] with [`Host::Instagram`], so the same checks
//!   apply; this module adds what the host itself enforces first.
//!
//! Strict like Meta: a token from Instagram Login works only here and a Facebook Login token
//! only on graph.facebook.com (`OAuthException` code 190 either way); Page nodes and
//! `/me/accounts` do not exist here; each token carries the scopes granted at authorization
//! (`SimState::grant_scopes`) and a call without its scope is refused with Meta's permission
//! error (code 10); the FB-Login-only media metrics (`total_likes`, `total_comments`,
//! `total_views`) are refused. Refusals of a client's mistake are recorded as violations.
//!
//! Token ages are read on this module's clock ([`now`]): the wall clock, moved by tests with
//! [`set_clock`] alongside the service's clock, so a refresh "24 h later" is 24 h later here too.

use std::time::Instant;

use actix_web::{HttpRequest, HttpResponse, http::StatusCode, web};
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};

use super::{
    graph::{self, Host, MetaError, Params},
    idp::IdpState,
    state::{SimObject, SimState, violation},
};

/// Lifetimes Meta gives Instagram Login tokens (seconds).
const SHORT_LIVED: i64 = 3_600;
const LONG_LIVED: i64 = 5_183_944;
/// Meta refreshes only tokens at least this old.
const MIN_REFRESH_AGE_HOURS: i64 = 24;

/// The Instagram Login scopes (the older `business_*` names are dead since 2025-01-27).
pub const BASIC: &str = "instagram_business_basic";
pub const CONTENT_PUBLISH: &str = "instagram_business_content_publish";
pub const MANAGE_INSIGHTS: &str = "instagram_business_manage_insights";
const KNOWN_SCOPES: [&str; 5] = [
    BASIC,
    CONTENT_PUBLISH,
    MANAGE_INSIGHTS,
    "instagram_business_manage_messages",
    "instagram_business_manage_comments",
];

/// Fields of the IG user node on graph.instagram.com (`id` is app-scoped, `user_id` the
/// professional account's id; both are the account's id here).
const USER_FIELDS: [&str; 11] = [
    "id",
    "user_id",
    "username",
    "name",
    "account_type",
    "profile_picture_url",
    "followers_count",
    "follows_count",
    "media_count",
    "biography",
    "website",
];

/// Media metrics only Facebook Login serves (`platform-apis.md` §3.6).
const FACEBOOK_LOGIN_ONLY_METRICS: [&str; 3] = ["total_likes", "total_comments", "total_views"];

const CLOCK_KEY: &str = "instagram-login:clock";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(
        "/instagram-api/oauth/access_token",
        web::post().to(code_exchange),
    )
    .route(
        "/instagram/access_token",
        web::get().to(long_lived_exchange),
    )
    .route("/instagram/refresh_access_token", web::get().to(refresh))
    .service(
        web::scope("/instagram")
            .route("/{tail:.*}", web::get().to(handle))
            .route("/{tail:.*}", web::post().to(handle)),
    );
}

// --- Clock and token records -------------------------------------------------------------------

/// The simulator's time for Instagram Login token ages.
pub fn now(state: &SimState) -> DateTime<Utc> {
    let offset = state
        .object(CLOCK_KEY)
        .and_then(|o| o.data["offset_ms"].as_i64())
        .unwrap_or(0);
    Utc::now() + Duration::milliseconds(offset)
}

/// Moves this module's clock to `at` (tests move it with the service's clock).
pub fn set_clock(state: &SimState, at: DateTime<Utc>) {
    let offset = (at - Utc::now()).num_milliseconds();
    state.put_object(
        CLOCK_KEY,
        SimObject {
            platform: "instagram".into(),
            owner: String::new(),
            kind: "clock".into(),
            data: json!({ "offset_ms": offset }),
            created: Instant::now(),
        },
    );
}

/// What the simulator knows of an Instagram Login token.
#[derive(Debug, Clone)]
pub struct TokenRecord {
    pub external_id: String,
    /// The app (client id) the token was issued to.
    pub client: String,
    pub issued_at: DateTime<Utc>,
    pub expires_in: i64,
    pub long_lived: bool,
}

impl TokenRecord {
    fn expires_at(&self) -> DateTime<Utc> {
        self.issued_at + Duration::seconds(self.expires_in)
    }
}

fn token_key(token: &str) -> String {
    format!("instagram-login-token:{token}")
}

/// The record of `token` if Instagram Login issued it.
pub fn token_record(state: &SimState, token: &str) -> Option<TokenRecord> {
    let object = state.object(&token_key(token))?;
    Some(TokenRecord {
        external_id: object.owner,
        client: object.data["client"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        issued_at: object.data["issued_at"]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())?
            .with_timezone(&Utc),
        expires_in: object.data["expires_in"].as_i64()?,
        long_lived: object.data["long_lived"].as_bool()?,
    })
}

/// Issues an Instagram Login token for the instagram account `external_id`, with `scopes`.
fn issue(
    state: &SimState,
    client: &str,
    external_id: &str,
    scopes: Vec<String>,
    long_lived: bool,
) -> Option<(String, i64)> {
    let token = state.issue_token("instagram", external_id)?;
    let expires_in = if long_lived { LONG_LIVED } else { SHORT_LIVED };
    state.grant_scopes(&token, scopes);
    state.put_object(
        &token_key(&token),
        SimObject {
            platform: "instagram".into(),
            owner: external_id.to_string(),
            kind: "instagram_login_token".into(),
            data: json!({
                "client": client,
                "issued_at": now(state).to_rfc3339(),
                "expires_in": expires_in,
                "long_lived": long_lived,
            }),
            created: Instant::now(),
        },
    );
    Some((token, expires_in))
}

/// Takes a 60-day Instagram Login token issued elsewhere (the demo introduces its stored
/// accounts to a fresh simulator on every start), issued to `client` at `issued_at`. Its
/// account must be registered already; with no scopes recorded it has them all.
pub fn adopt_token(state: &SimState, client: &str, token: &str, issued_at: DateTime<Utc>) {
    let Some(account) = state.account_for_token(token) else {
        return;
    };
    state.put_object(
        &token_key(token),
        SimObject {
            platform: "instagram".into(),
            owner: account.external_id,
            kind: "instagram_login_token".into(),
            data: json!({
                "client": client,
                "issued_at": issued_at.to_rfc3339(),
                "expires_in": LONG_LIVED,
                "long_lived": true,
            }),
            created: Instant::now(),
        },
    );
}

/// The scopes granted with `token` (for carrying them to its exchange or refresh).
fn scopes_of(state: &SimState, token: &str) -> Vec<String> {
    [BASIC, CONTENT_PUBLISH, MANAGE_INSIGHTS]
        .into_iter()
        .chain(KNOWN_SCOPES[3..].iter().copied())
        .filter(|scope| state.has_scope(token, scope))
        .map(str::to_string)
        .collect()
}

/// Refuses a token on the wrong host: an Instagram Login token on graph.facebook.com, or any
/// other token on graph.instagram.com (Meta: code 190, "Invalid OAuth access token").
pub(crate) fn check_host(
    state: &SimState,
    host: Host,
    token: Option<&str>,
) -> Result<(), MetaError> {
    let from_instagram_login = token.is_some_and(|t| token_record(state, t).is_some());
    match (host, from_instagram_login) {
        (Host::Facebook, true) => Err(wrong_host(
            "an Instagram Login token was sent to graph.facebook.com",
        )),
        (Host::Instagram, false) => Err(wrong_host(
            "a token not from Instagram Login was sent to graph.instagram.com",
        )),
        _ => Ok(()),
    }
}

fn wrong_host(detail: &str) -> MetaError {
    tracing::debug!(detail, "simulator: token on the wrong Meta host");
    MetaError::new(
        190,
        "Invalid OAuth access token - Cannot parse access token",
    )
    .violation("wrong_host_token")
}

// --- Token endpoints -------------------------------------------------------------------------

fn pairs(raw: &str) -> Vec<(String, String)> {
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

/// Meta's error object for the token endpoints (`type` OAuthException), marked as a violation
/// of `rule` when the client broke the protocol.
fn token_error(code: i64, message: &str, rule: Option<&str>) -> HttpResponse {
    let response = HttpResponse::BadRequest().json(json!({"error": {
        "message": message, "type": "OAuthException", "code": code,
        "fbtrace_id": crate::util::random_token(8),
    }}));
    match rule {
        Some(rule) => violation(response, "instagram", rule, message),
        None => response,
    }
}

/// The scopes an authorize request may ask for: only Instagram Login ones, comma separated.
/// `Err` names the first unknown one (the authorize page then refuses, as Meta's does with
/// "Invalid Scopes").
pub(crate) fn check_scopes(scope: Option<&str>) -> Result<Vec<String>, String> {
    let scopes: Vec<String> = scope
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if scopes.is_empty() {
        return Err("no scope was asked for".into());
    }
    match scopes.iter().find(|s| !KNOWN_SCOPES.contains(&s.as_str())) {
        Some(unknown) => Err(format!("Invalid Scopes: {unknown}")),
        None => Ok(scopes),
    }
}

/// `POST https://api.instagram.com/oauth/access_token` (form): `client_id`, `client_secret`,
/// `grant_type=authorization_code`, `redirect_uri`, `code` → a short-lived token.
async fn code_exchange(
    body: web::Bytes,
    state: web::Data<SimState>,
    idp: web::Data<IdpState>,
) -> HttpResponse {
    let form = pairs(std::str::from_utf8(&body).unwrap_or_default());
    let (Some(client), Some(secret)) = (param(&form, "client_id"), param(&form, "client_secret"))
    else {
        return token_error(
            101,
            "Missing client_id or client_secret parameter.",
            Some("missing_client_auth"),
        );
    };
    if !idp.client_secret_matches(client, secret) {
        return token_error(101, "Error validating client secret.", None);
    }
    if param(&form, "grant_type") != Some("authorization_code") {
        return token_error(
            100,
            "Invalid grant_type: authorization_code is required",
            Some("wrong_grant_type"),
        );
    }
    let Some(code) = param(&form, "code") else {
        return token_error(100, "Missing code parameter.", Some("missing_parameter"));
    };
    if param(&form, "redirect_uri").is_none() {
        return token_error(
            100,
            "Missing redirect_uri parameter.",
            Some("missing_parameter"),
        );
    }
    // The scopes the person granted: those the authorize page asked for.
    let scopes = state
        .object(&format!("oauth-code:{code}"))
        .and_then(|o| o.data["scope"].as_str().map(str::to_string));
    let accounts =
        match super::oauth::redeem_instagram(&state, code, client, param(&form, "redirect_uri")) {
            Ok(accounts) => accounts,
            Err((message, rule)) => return token_error(100, message, rule),
        };
    let Some((_, ext)) = accounts.into_iter().find(|(p, _)| p == "instagram") else {
        return token_error(100, "no instagram account", None);
    };
    let scopes = check_scopes(scopes.as_deref()).unwrap_or_default();
    let permissions = scopes.join(",");
    let Some((token, _)) = issue(&state, client, &ext, scopes, false) else {
        return token_error(100, "no instagram account", None);
    };
    HttpResponse::Ok().json(json!({"data": [{
        "access_token": token,
        "user_id": ext,
        "permissions": permissions,
    }]}))
}

/// `GET https://graph.instagram.com/access_token?grant_type=ig_exchange_token&client_secret=
/// &access_token=<short-lived>` → a 60-day token.
async fn long_lived_exchange(
    req: HttpRequest,
    state: web::Data<SimState>,
    idp: web::Data<IdpState>,
) -> HttpResponse {
    let q = pairs(req.query_string());
    if param(&q, "grant_type") != Some("ig_exchange_token") {
        return token_error(
            100,
            "grant_type must be ig_exchange_token",
            Some("wrong_grant_type"),
        );
    }
    let Some(secret) = param(&q, "client_secret") else {
        return token_error(
            101,
            "Missing client_secret parameter.",
            Some("missing_client_auth"),
        );
    };
    let Some(short) = param(&q, "access_token") else {
        return token_error(
            190,
            "An active access token must be used.",
            Some("missing_token"),
        );
    };
    let Some(record) = token_record(&state, short) else {
        return token_error(
            190,
            "Invalid OAuth access token - Cannot parse access token",
            None,
        );
    };
    // The secret is that of the app the token was issued to.
    if !idp.client_secret_matches(&record.client, secret) {
        return token_error(101, "Error validating client secret.", None);
    }
    if record.long_lived {
        return token_error(
            100,
            "(#100) The access token is already long-lived; use refresh_access_token",
            Some("exchange_long_lived_token"),
        );
    }
    if record.expires_at() <= now(&state) {
        return expired(&record);
    }
    let scopes = scopes_of(&state, short);
    match issue(&state, &record.client, &record.external_id, scopes, true) {
        Some((token, expires_in)) => HttpResponse::Ok()
            .json(json!({"access_token": token, "token_type": "bearer", "expires_in": expires_in})),
        None => token_error(
            190,
            "Invalid OAuth access token - Cannot parse access token",
            None,
        ),
    }
}

/// Meta's answer for an expired token (code 190, subcode 463): a business answer.
fn expired(record: &TokenRecord) -> HttpResponse {
    HttpResponse::BadRequest().json(json!({"error": {
        "message": format!(
            "Error validating access token: Session has expired on {}.",
            record.expires_at().to_rfc2822()
        ),
        "type": "OAuthException", "code": 190, "error_subcode": 463,
        "fbtrace_id": crate::util::random_token(8),
    }}))
}

/// `GET https://graph.instagram.com/refresh_access_token?grant_type=ig_refresh_token
/// &access_token=<60-day token>`: "Refresh a long-lived Instagram User Access Token that is at
/// least 24 hours old but has not expired" → a new 60-day token.
async fn refresh(req: HttpRequest, state: web::Data<SimState>) -> HttpResponse {
    let q = pairs(req.query_string());
    if param(&q, "grant_type") != Some("ig_refresh_token") {
        return token_error(
            100,
            "grant_type must be ig_refresh_token",
            Some("wrong_grant_type"),
        );
    }
    let Some(old) = param(&q, "access_token") else {
        return token_error(
            190,
            "An active access token must be used.",
            Some("missing_token"),
        );
    };
    // A revoked token is unknown to the account table; the record alone does not keep it alive.
    let Some(record) = token_record(&state, old).filter(|_| state.account_for_token(old).is_some())
    else {
        return token_error(
            190,
            "Error validating access token: The session has been invalidated.",
            None,
        );
    };
    if !record.long_lived {
        return token_error(
            100,
            "(#100) Only long-lived tokens can be refreshed",
            Some("refresh_short_lived_token"),
        );
    }
    let now = now(&state);
    if record.expires_at() <= now {
        return expired(&record);
    }
    if now - record.issued_at < Duration::hours(MIN_REFRESH_AGE_HOURS) {
        // Meta's wording is not documented; the rule is (UNVERIFIED text, documented rule).
        return token_error(
            100,
            "(#100) The access token must be at least 24 hours old to be refreshed",
            Some("refresh_too_early"),
        );
    }
    let scopes = scopes_of(&state, old);
    match issue(&state, &record.client, &record.external_id, scopes, true) {
        Some((token, expires_in)) => HttpResponse::Ok()
            .json(json!({"access_token": token, "token_type": "bearer", "expires_in": expires_in})),
        None => token_error(
            190,
            "Invalid OAuth access token - Cannot parse access token",
            None,
        ),
    }
}

// --- graph.instagram.com ---------------------------------------------------------------------

/// The scope a call on graph.instagram.com needs besides `instagram_business_basic`.
fn scope_for(method: &actix_web::http::Method, edge: Option<&str>) -> Option<&'static str> {
    match (method.as_str(), edge) {
        ("POST", Some("media" | "media_publish")) => Some(CONTENT_PUBLISH),
        ("GET", Some("content_publishing_limit")) => Some(CONTENT_PUBLISH),
        ("GET", Some("insights")) => Some(MANAGE_INSIGHTS),
        _ => None,
    }
}

fn missing_permission(scope: &str) -> MetaError {
    MetaError::new(
        10,
        format!("(#10) Application does not have permission for this action ({scope})"),
    )
    .status(StatusCode::FORBIDDEN)
    .violation("missing_scope")
}

/// Calls graph.instagram.com answered successfully for the account `external_id` (tests read
/// it to see where an account's publishing and reads went).
pub fn calls_on_host(state: &SimState, external_id: &str) -> u64 {
    state
        .object(&calls_key(external_id))
        .and_then(|o| o.data["count"].as_u64())
        .unwrap_or(0)
}

fn calls_key(external_id: &str) -> String {
    format!("instagram-login:calls:{external_id}")
}

fn count_call(state: &SimState, token: Option<&str>) {
    let Some(account) = token.and_then(|t| state.account_for_token(t)) else {
        return;
    };
    state
        .objects
        .entry(calls_key(&account.external_id))
        .and_modify(|o| o.data["count"] = json!(o.data["count"].as_u64().unwrap_or(0) + 1))
        .or_insert_with(|| SimObject {
            platform: "instagram".into(),
            owner: account.external_id.clone(),
            kind: "call_count".into(),
            data: json!({ "count": 1 }),
            created: Instant::now(),
        });
}

async fn handle(req: HttpRequest, body: web::Bytes, state: web::Data<SimState>) -> HttpResponse {
    let response = answer(&req, &body, &state).await;
    if response.status().is_success() {
        let token = Params::parse(&req, &body).ok().and_then(|p| p.token(&req));
        count_call(&state, token.as_deref());
    }
    response
}

async fn answer(req: &HttpRequest, body: &[u8], state: &web::Data<SimState>) -> HttpResponse {
    match precheck(req, body, state) {
        Ok(Some(response)) => response,
        Ok(None) => graph::handle_on(Host::Instagram, req, body, state).await,
        Err(error) => error.response("instagram"),
    }
}

/// What graph.instagram.com checks before the shared Graph handlers: the token is an
/// unexpired Instagram Login token with the call's scope; the user node answers with this
/// host's fields; Page things do not exist. `Ok(None)` hands the call to [`graph::handle_on`].
fn precheck(
    req: &HttpRequest,
    body: &[u8],
    state: &SimState,
) -> Result<Option<HttpResponse>, MetaError> {
    let params = Params::parse(req, body)?;
    let Some(token) = params.token(req) else {
        // The shared handler renders the missing token as Meta does.
        return Ok(None);
    };
    let Some(record) = token_record(state, &token) else {
        // Unknown tokens: the shared handler's answer (a revoked one is a business answer);
        // known ones from Facebook Login are refused there by `check_host`.
        return Ok(None);
    };
    if record.expires_at() <= now(state) {
        return Ok(Some(expired(&record)));
    }
    let parts = graph::segments(req.match_info().query("tail"));
    let node = parts.first().map(String::as_str);
    let edge = parts.get(1).map(String::as_str);
    let Some(account) = state.account_for_token(&token) else {
        return Ok(None);
    };
    // Page nodes and their edges are graph.facebook.com's; `/me/accounts` lists pages.
    if edge == Some("accounts") {
        return Err(MetaError::unknown_path("/accounts"));
    }
    if !state.has_scope(&token, BASIC) {
        return Err(missing_permission(BASIC));
    }
    if let Some(scope) = scope_for(req.method(), edge)
        && !state.has_scope(&token, scope)
    {
        return Err(missing_permission(scope));
    }
    if edge == Some("insights")
        && let Some(metric) = params.get("metric").and_then(|m| {
            m.split(',')
                .map(str::trim)
                .find(|m| FACEBOOK_LOGIN_ONLY_METRICS.contains(m))
                .map(str::to_string)
        })
    {
        return Err(MetaError::param(format!(
            "metric[0] must be one of the following values: reach, views, likes, comments, \
             shares, saved, total_interactions (metric {metric} is available with Facebook \
             Login only)"
        ))
        .violation("facebook_login_only_metric"));
    }
    let is_self = node.is_some_and(|n| n == "me" || n == account.external_id);
    if req.method() == actix_web::http::Method::GET && is_self && edge.is_none() {
        let user = json!({
            "id": account.external_id,
            "user_id": account.external_id,
            "username": account.username,
            "name": account.name,
            // The IG user reference's spelling on this host (`Business`, `Media_Creator`).
            "account_type": "Business",
            "profile_picture_url": format!("https://scontent.cdninstagram.com/{}.jpg", account.external_id),
            "followers_count": 1_200,
            "follows_count": 80,
            "media_count": state.published(Some("instagram"), Some(&account.external_id)).len(),
            "biography": Value::Null,
            "website": Value::Null,
        });
        debug_assert!(USER_FIELDS.iter().all(|f| user.get(f).is_some()));
        // This host's user node is not codegen's `IGUser` (it has `user_id` and
        // `account_type`), so its fields are the reference's list, checked here.
        let fields = params.fields();
        let names: Vec<String> = fields
            .iter()
            .flat_map(|f| super::spec::meta::field_names(f))
            .collect();
        if let Some(unknown) = names.iter().find(|f| !USER_FIELDS.contains(&f.as_str())) {
            return Err(graph::spec_error(
                &super::spec::meta::Problem::UnknownField {
                    field: unknown.clone(),
                    node: "User".into(),
                },
                "OAuthException",
            ));
        }
        let body = graph::select_fields(user, &fields, &["id"]);
        return Ok(Some(graph::ok(&account, body)));
    }
    Ok(None)
}
