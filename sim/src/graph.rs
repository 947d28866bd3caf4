//! Meta Graph API simulator under `/graph/{ver}/…`: facebook Pages and instagram (Instagram API
//! with Facebook Login), per `../shared/design/platform-apis.md` §1–3 and the codegen specs
//! (`Page.json`, `IGUser.json`, `ShadowIGMediaBuilder.json`, `AdVideo.json`).
//!
//! A node id says what is addressed: a facebook page or instagram user (the account's external
//! id, or `me`), or an object the account owns (photo, video, IG container, published post).
//! The token must belong to the node's account; anything else answers Meta's code 100
//! "Unsupported get/post request", as the real Graph does for objects the token cannot see.
//!
//! Parameters are read from the query string, a form body or a JSON body (Meta accepts all
//! three); the token from `access_token` or `Authorization: Bearer|OAuth`.
//!
//! Before a request is served, `check_graph_request` checks it against the codegen specs
//! ([`super::spec::meta`]: the node's or edge's fields, POST parameters, required parameters,
//! enums, types) and the permission its token was granted (`graph_permission`, hand-written
//! from the docs). It runs in `serve`, the entry point every host reusing these handlers goes
//! through.
//!
//! The Meta error object, the parameter reader and the container state machine are shared with
//! the Threads simulator ([`super::threads`]).

use std::time::Duration;

use actix_web::{
    HttpMessage, HttpRequest, HttpResponse,
    http::{Method, StatusCode, header::HeaderName},
    web,
};
use chrono::Utc;
use serde_json::{Value, json};

use super::state::{
    FaultKind, Processing, PublishedItem, Refusal, SimAccount, SimObject, SimState, bearer_token,
};
use crate::util::random_token;

/// IG publishing limit per 24 h (`content_publishing_limit.config.quota_total`; the documented
/// number varies, 100 is the current one).
const IG_QUOTA_TOTAL: usize = 100;
const QUOTA_DURATION_SECS: u64 = 86_400;
/// Containers not published within 24 h expire (IG and Threads).
const CONTAINER_TTL: Duration = Duration::from_secs(86_400);
/// Minutes a rate-limited account is told to wait (`estimated_time_to_regain_access`).
const REGAIN_ACCESS_MINUTES: u64 = 5;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/{tail:.*}", web::get().to(handle))
        .route("/{tail:.*}", web::post().to(handle));
}

// ---------------------------------------------------------------------------------------------
// Shared Meta layer (also used by the Threads simulator)

/// Meta's error object: `{"error":{"message","type","code","error_subcode","fbtrace_id","is_transient"}}`.
#[derive(Debug, Clone)]
pub(crate) struct MetaError {
    status: StatusCode,
    code: i64,
    subcode: Option<i64>,
    message: String,
    kind: &'static str,
    transient: bool,
    // A literal and a boxed header keep the error small enough to return by value.
    user_title: Option<&'static str>,
    /// `X-Business-Use-Case-Usage` for rate-limit answers.
    usage_header: Option<Box<str>>,
    /// The protocol rule the client broke, when this refuses a violation (see
    /// [`super::state::Violation`]); `None` for business answers and injected faults.
    violation: Option<&'static str>,
}

impl MetaError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code,
            subcode: None,
            message: message.into(),
            kind: "OAuthException",
            transient: false,
            user_title: None,
            usage_header: None,
            violation: None,
        }
    }

    /// Marks the error as the refusal of a protocol violation of `rule`.
    pub(crate) fn violation(mut self, rule: &'static str) -> Self {
        self.violation = Some(rule);
        self
    }

    /// Unmarks an error built by [`Self::param`]: a business answer (unknown object, content
    /// over a limit, a container in the wrong state), not a protocol violation.
    pub(crate) fn legitimate(mut self) -> Self {
        self.violation = None;
        self
    }

    pub(crate) fn subcode(mut self, subcode: i64) -> Self {
        self.subcode = Some(subcode);
        self
    }

    pub(crate) fn status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    pub(crate) fn kind(mut self, kind: &'static str) -> Self {
        self.kind = kind;
        self
    }

    pub(crate) fn user_title(mut self, title: &'static str) -> Self {
        self.user_title = Some(title);
        self
    }

    /// `(#100) …` invalid parameter: a protocol violation (`invalid_parameter`) unless the site
    /// says otherwise with [`Self::violation`] or [`Self::legitimate`].
    pub(crate) fn param(message: impl std::fmt::Display) -> Self {
        Self::new(100, format!("(#100) {message}")).violation("invalid_parameter")
    }

    /// What each Meta host answers for ids the token cannot see or that do not exist: code 100,
    /// subcode 33, HTTP 400. graph.facebook.com says `GraphMethodException` and points to the
    /// docs; instagram media and users say `IGApiException`, graph.threads.net
    /// `THApiException`, both without the pointer (as reported by client libraries, e.g.
    /// restfb, github.com/restfb/restfb/issues/1502).
    pub(crate) fn unsupported(platform: &str, method: &Method, id: &str) -> Self {
        let verb = if method == Method::GET { "get" } else { "post" };
        let message = format!(
            "Unsupported {verb} request. Object with ID '{id}' does not exist, cannot be loaded \
             due to missing permissions, or does not support this operation"
        );
        let (message, kind) = match platform {
            "threads" => (message, "THApiException"),
            "instagram" => (message, "IGApiException"),
            _ => (
                format!(
                    "{message}. Please read the Graph API documentation at \
                     https://developers.facebook.com/docs/graph-api"
                ),
                "GraphMethodException",
            ),
        };
        Self::new(100, message).subcode(33).kind(kind)
    }

    pub(crate) fn unknown_path(path: &str) -> Self {
        Self::new(2500, format!("Unknown path components: {path}")).violation("unknown_path")
    }

    /// IG/Threads media download failure (code 9004, subcode 2207052).
    pub(crate) fn media_download(reason: &str) -> Self {
        Self::new(
            9004,
            format!(
                "Media download has failed. The media URI doesn't meet our requirements. ({reason})"
            ),
        )
        .subcode(2_207_052)
        .user_title("Media download has failed")
    }

    /// Publishing a container that is not FINISHED (code 9007, subcode 2207027).
    pub(crate) fn not_ready() -> Self {
        Self::new(
            9007,
            "The media is not ready for publishing, please wait for a moment",
        )
        .subcode(2_207_027)
        .user_title("Media ID is not available")
    }

    /// The error response; a violation is marked for the log under `platform`.
    pub(crate) fn response(self, platform: &str) -> HttpResponse {
        let violation = self.violation.map(|rule| (rule, self.message.clone()));
        let mut error = json!({
            "message": self.message,
            "type": self.kind,
            "code": self.code,
            "is_transient": self.transient,
            "fbtrace_id": random_token(9),
        });
        if let Some(subcode) = self.subcode {
            error["error_subcode"] = json!(subcode);
        }
        if let Some(title) = self.user_title {
            error["error_user_title"] = json!(title);
            error["error_user_msg"] = error["message"].clone();
        }
        let mut response = HttpResponse::build(self.status);
        // Meta sends the error object with a JSON content type and a WWW-Authenticate header
        // on OAuth failures; the header carries nothing clients rely on, so only the body here.
        if let Some(usage) = self.usage_header {
            response.insert_header(("X-Business-Use-Case-Usage", usage.into_string()));
        }
        let response = response.json(json!({ "error": error }));
        match violation {
            Some((rule, detail)) => super::state::violation(response, platform, rule, detail),
            None => response,
        }
    }
}

/// The request's parameters from the query string and the body (form or JSON), in that order.
#[derive(Debug, Default)]
pub(crate) struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    pub(crate) fn parse(req: &HttpRequest, body: &[u8]) -> Result<Self, MetaError> {
        let mut pairs: Vec<(String, String)> =
            url::form_urlencoded::parse(req.query_string().as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
        let content_type = req.content_type().to_ascii_lowercase();
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self { pairs });
        }
        if content_type.contains("json") {
            let value: Value = serde_json::from_slice(body)
                .map_err(|e| MetaError::param(format!("Could not parse the JSON body: {e}")))?;
            let Value::Object(map) = value else {
                return Err(MetaError::param("The JSON body must be an object"));
            };
            for (key, value) in map {
                let text = match value {
                    Value::String(s) => s,
                    Value::Null => continue,
                    // Arrays and objects (attached_media, children…) keep their JSON text, as
                    // Graph parses such parameters from JSON strings too.
                    other => other.to_string(),
                };
                pairs.push((key, text));
            }
        } else if content_type.starts_with("multipart/") {
            return Err(MetaError::param(
                "Multipart uploads are not supported here; pass a public URL",
            ));
        } else {
            pairs.extend(
                url::form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), v.into_owned())),
            );
        }
        Ok(Self { pairs })
    }

    /// Every parameter as sent (name, value), query string first.
    pub(crate) fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The first non-empty value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, v)| k == key && !v.trim().is_empty())
            .map(|(_, v)| v.trim())
    }

    /// A boolean parameter (`true`/`false`/`1`/`0`); `None` when absent or unreadable.
    pub(crate) fn flag(&self, key: &str) -> Option<bool> {
        match self.get(key)?.to_ascii_lowercase().as_str() {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        }
    }

    /// Values of `key[0]`, `key[1]`… (form encoding of arrays), in index order.
    pub(crate) fn indexed(&self, key: &str) -> Vec<String> {
        let prefix = format!("{key}[");
        let mut items: Vec<(u32, String)> = self
            .pairs
            .iter()
            .filter_map(|(k, v)| {
                let index = k.strip_prefix(&prefix)?.strip_suffix(']')?.parse().ok()?;
                Some((index, v.clone()))
            })
            .collect();
        items.sort_by_key(|(i, _)| *i);
        items.into_iter().map(|(_, v)| v).collect()
    }

    /// The access token: `access_token` parameter or the Authorization header.
    pub(crate) fn token(&self, req: &HttpRequest) -> Option<String> {
        self.get("access_token")
            .map(str::to_string)
            .or_else(|| bearer_token(req))
    }

    /// The requested `fields`, split at the top-level commas (nested lists keep theirs).
    pub(crate) fn fields(&self) -> Vec<String> {
        self.get("fields")
            .map(super::spec::meta::top_level_fields)
            .unwrap_or_default()
    }
}

/// Splits the path after the mount into segments, dropping a leading `vNN.N` version (the
/// Threads Postman collection calls without one, so it is optional everywhere).
pub(crate) fn segments(tail: &str) -> Vec<String> {
    let mut parts: Vec<String> = tail
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if parts.first().is_some_and(|p| is_version(p)) {
        parts.remove(0);
    }
    parts
}

fn is_version(segment: &str) -> bool {
    segment.strip_prefix('v').is_some_and(|rest| {
        rest.split_once('.').is_some_and(|(major, minor)| {
            !major.is_empty()
                && !minor.is_empty()
                && major.bytes().all(|b| b.is_ascii_digit())
                && minor.bytes().all(|b| b.is_ascii_digit())
        })
    })
}

/// `X-Business-Use-Case-Usage` as Meta sends it, for `usage` percent of the limit.
pub(crate) fn usage_header(account: &SimAccount, usage: u64, regain_minutes: u64) -> String {
    let kind = match account.platform.as_str() {
        "facebook" => "pages",
        other => other,
    };
    // Written out rather than built as a `Value` (it goes on every answer); the keys in the
    // order a `Value` would write them. Strings are JSON-escaped.
    let cputime = usage.min(100) / 2;
    format!(
        r#"{{{id}:[{{"call_count":{usage},"estimated_time_to_regain_access":{regain_minutes},"total_cputime":{cputime},"total_time":{cputime},"type":{kind}}}]}}"#,
        id = Value::from(account.external_id.as_str()),
        kind = Value::from(kind),
    )
}

/// A 200 answer with the usage header a Page/IG/Threads token gets on every call.
pub(crate) fn ok(account: &SimAccount, body: Value) -> HttpResponse {
    // Names as `HeaderName`s: from a `&str`, a name that is not a standard header's is copied
    // into a new one on every answer.
    const BUSINESS_USAGE: HeaderName = HeaderName::from_static("x-business-use-case-usage");
    const APP_USAGE: HeaderName = HeaderName::from_static("x-app-usage");
    HttpResponse::Ok()
        .insert_header((BUSINESS_USAGE, usage_header(account, 1, 0)))
        .insert_header((
            APP_USAGE,
            r#"{"call_count":1,"total_time":1,"total_cputime":1}"#,
        ))
        .json(body)
}

/// Renders a refused admission in Meta's error format.
pub(crate) fn refusal(state: &SimState, refusal: Refusal, token: Option<&str>) -> MetaError {
    match refusal {
        Refusal::NoToken => MetaError::new(
            190,
            "An active access token must be used to query information about the current user.",
        )
        .status(StatusCode::UNAUTHORIZED)
        // Calling without a token is the client's mistake; an unknown one may be revoked.
        .violation("missing_token"),
        Refusal::UnknownToken => MetaError::new(
            190,
            "Invalid OAuth access token - Cannot parse access token",
        )
        .status(StatusCode::UNAUTHORIZED),
        Refusal::Fault(kind) => {
            let account = token.and_then(|t| state.account_for_token(t));
            fault(kind, account.as_ref())
        }
    }
}

fn fault(kind: FaultKind, account: Option<&SimAccount>) -> MetaError {
    let platform = account.map(|a| a.platform.as_str()).unwrap_or("facebook");
    match kind {
        FaultKind::TokenExpired => {
            let now = Utc::now();
            MetaError::new(
                190,
                format!(
                    "Error validating access token: Session has expired on {}. The current time is {}.",
                    (now - chrono::Duration::hours(1)).format("%A, %d-%b-%y %H:%M:%S PST"),
                    now.format("%A, %d-%b-%y %H:%M:%S PST"),
                ),
            )
            .subcode(463)
        }
        FaultKind::TokenRevoked => MetaError::new(
            190,
            "Error validating access token: The session has been invalidated because the user \
             changed their password or Facebook has changed the session for security reasons.",
        )
        .subcode(460),
        FaultKind::Permission => {
            let permission = match platform {
                "instagram" => "instagram_content_publish",
                "threads" => "threads_content_publish",
                _ => "pages_manage_posts",
            };
            MetaError::new(
                200,
                format!(
                    "(#200) The user hasn't authorized the application to perform this action: \
                     requires the {permission} permission"
                ),
            )
            .status(StatusCode::FORBIDDEN)
        }
        FaultKind::RateLimit => {
            let (code, message) = match platform {
                "facebook" => (32, "(#32) Page request limit reached"),
                _ => (4, "(#4) Application request limit reached"),
            };
            let mut error = MetaError::new(code, message).status(StatusCode::FORBIDDEN);
            error.usage_header =
                account.map(|a| usage_header(a, 100, REGAIN_ACCESS_MINUTES).into());
            error.transient = true;
            error
        }
        FaultKind::ServerError => {
            let mut error = MetaError::new(
                2,
                "An unexpected error has occurred. Please retry your request later.",
            )
            .status(StatusCode::INTERNAL_SERVER_ERROR);
            error.transient = true;
            error
        }
    }
}

/// Where an asynchronous container (IG, Threads) or video (facebook) stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    InProgress,
    Finished,
    /// Processing failed; the text is what the platform reports.
    Error(String),
    Expired,
    Published(String),
}

/// The phase of object `id`, settling it: a terminal outcome is stored in the object so that it
/// stays what the client saw even if the account's processing mode changes later.
///
/// Object data keys: `video` (processing takes the simulator's delay; other media finish at
/// once), `failure` (set at creation, e.g. a failed download), `fail_text` (what a processing
/// failure reports), `settled` (`FINISHED`/`ERROR` once reached), `published_id`.
pub(crate) fn phase(state: &SimState, id: &str) -> Option<Phase> {
    let mut object = state.objects.get_mut(id)?;
    let data = &object.data;
    if let Some(published) = data["published_id"].as_str() {
        return Some(Phase::Published(published.to_string()));
    }
    if let Some(failure) = data["failure"].as_str() {
        return Some(Phase::Error(failure.to_string()));
    }
    match data["settled"].as_str() {
        Some("FINISHED") => return Some(Phase::Finished),
        Some("ERROR") => {
            return Some(Phase::Error(
                data["fail_text"].as_str().unwrap_or("ERROR").to_string(),
            ));
        }
        _ => {}
    }
    if object.created.elapsed() > CONTAINER_TTL {
        return Some(Phase::Expired);
    }
    let outcome = if data["video"].as_bool().unwrap_or(false) {
        state.processing_outcome(&object.platform, &object.owner, object.created)
    } else {
        match state.processing(&object.platform, &object.owner) {
            Processing::Finish => Some(true),
            Processing::Never => None,
            Processing::Fail => Some(false),
        }
    };
    match outcome {
        None => Some(Phase::InProgress),
        Some(true) => {
            object.data["settled"] = json!("FINISHED");
            Some(Phase::Finished)
        }
        Some(false) => {
            object.data["settled"] = json!("ERROR");
            Some(Phase::Error(
                object.data["fail_text"]
                    .as_str()
                    .unwrap_or("ERROR")
                    .to_string(),
            ))
        }
    }
}

/// Marks a FINISHED object published under `published_id`, atomically: `Err` with the phase
/// it is in when that is not FINISHED (so a container is never published twice).
pub(crate) fn claim_for_publish(
    state: &SimState,
    id: &str,
    published_id: &str,
) -> Result<SimObject, Option<Phase>> {
    match phase(state, id) {
        Some(Phase::Finished) => {}
        other => return Err(other),
    }
    let mut object = state.objects.get_mut(id).ok_or(None)?;
    if let Some(existing) = object.data["published_id"].as_str() {
        return Err(Some(Phase::Published(existing.to_string())));
    }
    object.data["published_id"] = json!(published_id);
    Ok(object.clone())
}

/// Fetches a media URL as the platform does; `Ok(content_type)` or why it failed.
pub(crate) async fn fetch(state: &SimState, url: &str) -> Result<String, String> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!("{url} is not an http(s) URL"));
    }
    state
        .fetch_media(url)
        .await
        .map(|(content_type, _)| content_type)
}

/// A new object owned by `account`.
pub(crate) fn new_object(account: &SimAccount, kind: &str, data: Value) -> SimObject {
    SimObject {
        platform: account.platform.clone(),
        owner: account.external_id.clone(),
        kind: kind.to_string(),
        data,
        created: std::time::Instant::now(),
    }
}

/// Meta's timestamp format (`2026-01-02T08:00:00+0000`).
pub(crate) fn meta_time(at: chrono::DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%z").to_string()
}

/// Published items of an account within the quota window (`reply` selects replies or posts).
pub(crate) fn quota_usage(state: &SimState, account: &SimAccount, reply: Option<bool>) -> usize {
    let since = Utc::now() - chrono::Duration::seconds(QUOTA_DURATION_SECS as i64);
    state.published_since(&account.platform, &account.external_id, since, reply)
}

pub(crate) fn quota_config(total: usize) -> Value {
    json!({"quota_total": total, "quota_duration": QUOTA_DURATION_SECS})
}

/// Keeps only the requested `fields` of `all` (plus `id`). Whether a field exists on the node
/// was checked against the spec at the entry point (`check_graph_request`); a field the node has but
/// the simulator does not model, or one without a value, is left out, as Graph leaves out
/// fields without a value.
pub(crate) fn select_fields(all: Value, fields: &[String], default: &[&str]) -> Value {
    let Value::Object(all) = all else {
        return all;
    };
    let wanted: Vec<String> = if fields.is_empty() {
        default.iter().map(|s| s.to_string()).collect()
    } else {
        fields
            .iter()
            .flat_map(|f| super::spec::meta::field_names(f))
            .collect()
    };
    let mut out = serde_json::Map::new();
    for field in &wanted {
        match all.get(field) {
            Some(Value::Null) | None => {}
            Some(value) => {
                out.insert(field.clone(), value.clone());
            }
        }
    }
    if let Some(id) = all.get("id") {
        out.insert("id".into(), id.clone());
    }
    Value::Object(out)
}

/// The codegen node type (`data/meta/*.json`) of `node` as `account` sees it: its own page or
/// IG user, an object it created (photo, video, IG container) or one of its posts; `None` for ids
/// it cannot see (those get Meta's "Unsupported request" further on).
pub(crate) fn graph_node_type(
    state: &SimState,
    account: &SimAccount,
    node: &str,
) -> Option<&'static str> {
    let facebook = account.platform == "facebook";
    if node == account.external_id {
        return Some(if facebook { "Page" } else { "IGUser" });
    }
    if let Some(object) = state
        .object(node)
        .filter(|o| o.owner == account.external_id && o.platform == account.platform)
    {
        return match object.kind.as_str() {
            "fb_video" => Some("AdVideo"),
            "fb_photo" => Some("Photo"),
            "ig_container" => Some("ShadowIGMediaBuilder"),
            _ => None,
        };
    }
    super::insights::post(state, account, node)
        .map(|_| if facebook { "PagePost" } else { "IGMedia" })
}

/// The spec's verdict as Meta's error: code 100, and a recorded violation of the problem's rule.
pub(crate) fn spec_error(problem: &super::spec::meta::Problem, kind: &'static str) -> MetaError {
    MetaError::param(problem.message())
        .kind(kind)
        .violation(problem.rule())
}

/// The permission a Graph call needs, hand-written (codegen carries no permissions) from each
/// endpoint's reference page: Page reads need `pages_read_engagement`, Page and post insights
/// `read_insights`, publishing `pages_manage_posts`
/// (<https://developers.facebook.com/docs/pages-api/overview#permissions>,
/// <https://developers.facebook.com/docs/graph-api/reference/page/insights/>); the IG user and
/// media need `instagram_basic`, publishing and its limit `instagram_content_publish`, insights
/// `instagram_manage_insights`
/// (<https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user/media>,
/// <https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user/insights>).
/// Each entry lists alternatives: the Instagram-Login scope (`instagram_business_*`,
/// <https://developers.facebook.com/docs/instagram-platform/instagram-api-with-instagram-login>)
/// does on graph.instagram.com what the Facebook-Login one does here.
pub(crate) fn graph_permission(
    node_type: &str,
    method: &Method,
    edge: Option<&str>,
) -> Option<&'static [&'static str]> {
    const IG_BASIC: &[&str] = &["instagram_basic", "instagram_business_basic"];
    const IG_PUBLISH: &[&str] = &[
        "instagram_content_publish",
        "instagram_business_content_publish",
    ];
    const IG_INSIGHTS: &[&str] = &[
        "instagram_manage_insights",
        "instagram_business_manage_insights",
    ];
    let get = method == Method::GET;
    Some(match (node_type, edge) {
        ("Page" | "PagePost" | "Photo" | "AdVideo", Some("insights" | "video_insights")) => {
            &["read_insights"]
        }
        ("Page", Some("feed" | "photos" | "videos")) if !get => &["pages_manage_posts"],
        ("Page" | "PagePost" | "Photo" | "AdVideo", _) => &["pages_read_engagement"],
        ("IGUser" | "IGMedia", Some("insights")) => IG_INSIGHTS,
        ("IGUser", Some("media" | "media_publish")) if !get => IG_PUBLISH,
        ("IGUser", Some("content_publishing_limit")) | ("ShadowIGMediaBuilder", _) => IG_PUBLISH,
        ("IGUser" | "IGMedia", _) => IG_BASIC,
        _ => return None,
    })
}

/// Refuses a token not granted any of `scopes` with Meta's permission error (code 10 for reads,
/// 200 for writes, HTTP 403), naming the first: a recorded `missing_scope` violation, since our
/// connect flows decide what they ask for.
pub(crate) fn require_permission(
    state: &SimState,
    token: &str,
    method: &Method,
    scopes: &[&str],
    kind: &'static str,
) -> Result<(), MetaError> {
    if scopes.iter().any(|s| state.has_scope(token, s)) {
        return Ok(());
    }
    let scope = scopes.first().copied().unwrap_or_default();
    let error = if method == Method::GET {
        MetaError::new(
            10,
            format!("(#10) This endpoint requires the '{scope}' permission."),
        )
    } else {
        MetaError::new(
            200,
            format!("(#200) Requires {scope} permission to manage the object"),
        )
    };
    Err(error
        .kind(kind)
        .status(StatusCode::FORBIDDEN)
        .violation("missing_scope"))
}

/// The checks every Graph request goes through before it is served, whichever host serves it
/// (graph.facebook.com here, graph.instagram.com through the same [`serve`]): the spec's fields,
/// parameters, required parameters and enums for the node and edge, then the permission.
pub(crate) fn check_graph_request(
    state: &SimState,
    account: &SimAccount,
    token: &str,
    node: &str,
    method: &Method,
    edge: Option<&str>,
    params: &Params,
) -> Result<(), MetaError> {
    let Some(node_type) = graph_node_type(state, account, node) else {
        return Ok(());
    };
    let kind = if account.platform == "instagram" {
        "IGApiException"
    } else {
        "OAuthException"
    };
    super::spec::meta::check(node_type, method.as_str(), edge, params.pairs())
        .map_err(|p| spec_error(&p, "OAuthException"))?;
    if let Some(scopes) = graph_permission(node_type, method, edge) {
        require_permission(state, token, method, scopes, kind)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Graph host

async fn handle(req: HttpRequest, body: web::Bytes, state: web::Data<SimState>) -> HttpResponse {
    handle_on(Host::Facebook, &req, &body, &state).await
}

/// The Meta host a request came in on: graph.facebook.com, or graph.instagram.com (Instagram
/// API with Instagram Login, [`super::instagram_login`]), which serves the same IG handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Host {
    Facebook,
    Instagram,
}

/// The Graph entry point for `host`: the same checks and handlers on both hosts, after the
/// token is found to belong to the host.
pub(crate) async fn handle_on(
    host: Host,
    req: &HttpRequest,
    body: &[u8],
    state: &web::Data<SimState>,
) -> HttpResponse {
    match serve(host, req, body, state).await {
        Ok(response) => response,
        Err(error) => {
            // The mount serves two platforms: the token says whose protocol was broken.
            let platform = Params::parse(req, body)
                .ok()
                .and_then(|p| p.token(req))
                .and_then(|t| state.account_for_token(&t))
                .map_or_else(|| "facebook".to_string(), |a| a.platform);
            error.response(&platform)
        }
    }
}

async fn serve(
    host: Host,
    req: &HttpRequest,
    body: &[u8],
    state: &web::Data<SimState>,
) -> Result<HttpResponse, MetaError> {
    let params = Params::parse(req, body)?;
    let token = params.token(req);
    let account = state
        .admit(&["facebook", "instagram"], token.as_deref(), req.path())
        .await
        .map_err(|r| refusal(state, r, token.as_deref()))?;
    super::instagram_login::check_host(state, host, token.as_deref())?;
    let parts = segments(req.match_info().query("tail"));
    let method = req.method().clone();
    let Some(node) = parts.first() else {
        return Err(MetaError::unknown_path("/"));
    };
    let node = if node == "me" {
        account.external_id.clone()
    } else {
        node.clone()
    };
    let edge = parts.get(1).map(String::as_str);
    if parts.len() > 2 {
        return Err(MetaError::unknown_path(&format!(
            "/{}",
            parts[1..].join("/")
        )));
    }

    check_graph_request(
        state,
        &account,
        token.as_deref().unwrap_or_default(),
        &node,
        &method,
        edge,
        &params,
    )?;
    if method == Method::GET
        && let Some(response) = super::meta_insights::answer(state, &account, &node, edge, &params)?
    {
        return Ok(response);
    }
    if node == account.external_id {
        return match (account.platform.as_str(), &method, edge) {
            (_, &Method::GET, None) => Ok(ok(
                &account,
                select_fields(
                    json!({"id": account.external_id, "name": account.name, "username": account.username}),
                    &params.fields(),
                    &["name"],
                ),
            )),
            ("facebook", &Method::POST, Some("feed")) => page_feed(state, &account, &params),
            ("facebook", &Method::POST, Some("photos")) => {
                page_photos(state, &account, &params).await
            }
            ("facebook", &Method::POST, Some("videos")) => {
                page_videos(state, &account, &params).await
            }
            ("instagram", &Method::POST, Some("media")) => {
                ig_create_container(state, &account, &params).await
            }
            ("instagram", &Method::POST, Some("media_publish")) => {
                ig_publish(state, &account, &params)
            }
            ("instagram", &Method::GET, Some("content_publishing_limit")) => Ok(ok(
                &account,
                json!({"data": [{
                    "quota_usage": quota_usage(state, &account, None),
                    "config": quota_config(IG_QUOTA_TOTAL),
                }]}),
            )),
            (_, _, Some(edge)) => Err(MetaError::unknown_path(&format!("/{edge}"))),
            _ => Err(MetaError::unsupported(&account.platform, &method, &node)),
        };
    }

    if method != Method::GET || edge.is_some() {
        return Err(MetaError::unsupported(&account.platform, &method, &node));
    }
    if let Some(object) = state
        .object(&node)
        .filter(|o| o.owner == account.external_id && o.platform == account.platform)
    {
        return get_object(state, &account, &node, &object, &params);
    }
    if let Some(item) = state
        .published_item(&node)
        .filter(|i| i.account_id == account.external_id && i.platform == account.platform)
    {
        return Ok(ok(&account, published_fields(&item, &params)?));
    }
    Err(MetaError::unsupported(&account.platform, &method, &node))
}

fn get_object(
    state: &SimState,
    account: &SimAccount,
    id: &str,
    object: &SimObject,
    params: &Params,
) -> Result<HttpResponse, MetaError> {
    match object.kind.as_str() {
        "fb_video" => {
            settle_video(state, id);
            Ok(ok(account, video_fields(state, id, object, params)?))
        }
        "ig_container" => {
            let (code, status) = match phase(state, id) {
                Some(Phase::InProgress) | None => (
                    "IN_PROGRESS",
                    "In Progress: Media is still being processed.".to_string(),
                ),
                Some(Phase::Finished) => (
                    "FINISHED",
                    "Finished: Media container is ready to be published.".to_string(),
                ),
                Some(Phase::Error(text)) => ("ERROR", text),
                Some(Phase::Expired) => (
                    "EXPIRED",
                    "Expired: The media container was not published within 24 hours.".to_string(),
                ),
                Some(Phase::Published(_)) => (
                    "PUBLISHED",
                    "Published: The media has been published.".to_string(),
                ),
            };
            let all = json!({
                "id": id,
                "status_code": code,
                "status": status,
                "video_status": Value::Null,
                "copyright_check_status": Value::Null,
            });
            Ok(ok(account, select_fields(all, &params.fields(), &[])))
        }
        _ => {
            // Photos: id, the image and whether it went out.
            let all = json!({
                "id": id,
                "images": [{"source": object.data["url"]}],
                "name": object.data["message"],
                "published": object.data["published"],
                "created_time": object.data["created_time"],
            });
            Ok(ok(account, select_fields(all, &params.fields(), &[])))
        }
    }
}

fn published_fields(item: &PublishedItem, params: &Params) -> Result<Value, MetaError> {
    let all = if item.platform == "facebook" {
        json!({
                "id": item.id,
                "message": item.text,
                "created_time": meta_time(item.published_at),
                "permalink_url": format!("https://www.facebook.com/{}", item.id),
        })
    } else {
        let media_type = match item.kind.as_str() {
            "carousel" => "CAROUSEL_ALBUM",
            "reels" => "VIDEO",
            _ => "IMAGE",
        };
        json!({
            "id": item.id,
            "caption": item.text,
            "media_type": media_type,
            "media_product_type": if item.kind == "reels" { "REELS" } else { "FEED" },
            "media_url": item.media.first(),
            "timestamp": meta_time(item.published_at),
            "permalink": format!("https://www.instagram.com/p/{}/", item.id),
        })
    };
    Ok(select_fields(all, &params.fields(), &[]))
}

// ---------------------------------------------------------------------------------------------
// Facebook Pages

fn page_post_id(state: &SimState, account: &SimAccount) -> String {
    format!("{}_{}", account.external_id, state.next_id())
}

fn record(
    state: &SimState,
    (platform, owner): (&str, &str),
    id: &str,
    kind: &str,
    text: Option<&str>,
    media: Vec<String>,
    extra: Value,
) {
    state.record_published(PublishedItem {
        platform: platform.to_string(),
        account_id: owner.to_string(),
        id: id.to_string(),
        kind: kind.to_string(),
        text: text.map(str::to_string),
        media,
        reply_to: None,
        extra,
        published_at: Utc::now(),
    });
}

/// `POST /{page}/feed`: text/link post, or an album from unpublished photos in `attached_media`.
fn page_feed(
    state: &SimState,
    account: &SimAccount,
    params: &Params,
) -> Result<HttpResponse, MetaError> {
    let message = params.get("message");
    let link = params.get("link");
    let attached = attached_media(params)?;
    if message.is_none() && link.is_none() && attached.is_empty() {
        return Err(MetaError::param("Missing message or attachment"));
    }
    // Each attached photo must be an unpublished photo of this page not used by another post.
    let mut urls = Vec::new();
    for (i, fbid) in attached.iter().enumerate() {
        let photo = state
            .object(fbid)
            .filter(|o| o.kind == "fb_photo" && o.owner == account.external_id);
        match photo {
            Some(p) if p.data["published"] == json!(false) && p.data["attached_to"].is_null() => {
                urls.push(p.data["url"].as_str().unwrap_or_default().to_string());
            }
            _ => {
                // An id that is not (or no longer) an unused photo of the page: a business
                // answer like any unknown object.
                return Err(MetaError::param(format!(
                    "param attached_media[{i}] has an invalid media_fbid: {fbid}"
                ))
                .legitimate());
            }
        }
    }
    let id = page_post_id(state, account);
    for fbid in &attached {
        if let Some(mut photo) = state.objects.get_mut(fbid) {
            photo.data["attached_to"] = json!(id);
        }
    }
    // published=false without a schedule makes an unpublished (dark) post: not on the Page.
    if params.flag("published") != Some(false) {
        let kind = if attached.is_empty() { "feed" } else { "album" };
        record(
            state,
            (&account.platform, &account.external_id),
            &id,
            kind,
            message,
            urls,
            json!({"link": link, "photo_ids": attached, "photo_count": attached.len()}),
        );
    }
    Ok(ok(account, json!({ "id": id })))
}

/// `attached_media` as a JSON array, or form items `attached_media[N]={"media_fbid":".."}`.
fn attached_media(params: &Params) -> Result<Vec<String>, MetaError> {
    let items: Vec<Value> = match params.get("attached_media") {
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => items,
            _ => return Err(MetaError::param("param attached_media must be an array.")),
        },
        None => params
            .indexed("attached_media")
            .iter()
            .map(|text| serde_json::from_str(text).unwrap_or(Value::String(text.clone())))
            .collect(),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let id = match &item["media_fbid"] {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            };
            id.ok_or_else(|| {
                MetaError::param(format!(
                    "param attached_media[{i}] must be an object with media_fbid"
                ))
            })
        })
        .collect()
}

/// `POST /{page}/photos` with `url`: fetches the image; published (default) makes a post.
async fn page_photos(
    state: &SimState,
    account: &SimAccount,
    params: &Params,
) -> Result<HttpResponse, MetaError> {
    let url = params
        .get("url")
        .ok_or_else(|| MetaError::new(324, "(#324) Requires upload file"))?
        .to_string();
    match fetch(state, &url).await {
        Ok(content_type) if content_type.starts_with("image/") => {}
        Ok(content_type) => {
            return Err(MetaError::new(
                324,
                format!("(#324) Missing or invalid image file (content type {content_type})"),
            ));
        }
        Err(reason) => {
            return Err(MetaError::new(
                324,
                format!("(#324) Missing or invalid image file ({reason})"),
            ));
        }
    }
    let message = params.get("message").or_else(|| params.get("caption"));
    let published = params.flag("published") != Some(false);
    let photo_id = state.next_id().to_string();
    state.put_object(
        &photo_id,
        new_object(
            account,
            "fb_photo",
            json!({
                "url": url,
                "message": message,
                "published": published,
                "attached_to": Value::Null,
                "created_time": meta_time(Utc::now()),
            }),
        ),
    );
    if !published {
        return Ok(ok(account, json!({ "id": photo_id })));
    }
    let post_id = page_post_id(state, account);
    record(
        state,
        (&account.platform, &account.external_id),
        &post_id,
        "photo",
        message,
        vec![url],
        json!({"photo_id": photo_id}),
    );
    Ok(ok(account, json!({ "id": photo_id, "post_id": post_id })))
}

/// `POST /{page}/videos` with `file_url`: the video is downloaded now, processed for the
/// simulator's delay, and appears on the Page when processing completes.
async fn page_videos(
    state: &web::Data<SimState>,
    account: &SimAccount,
    params: &Params,
) -> Result<HttpResponse, MetaError> {
    let url = params
        .get("file_url")
        .ok_or_else(|| {
            MetaError::param("The parameter file_url or source is required")
                .violation("missing_parameter")
        })?
        .to_string();
    match fetch(state, &url).await {
        Ok(content_type) if content_type.starts_with("video/") => {}
        Ok(content_type) => {
            return Err(MetaError::new(
                352,
                format!(
                    "(#352) Sorry, the video file you selected is in a format that we don't \
                     support. ({content_type})"
                ),
            ));
        }
        Err(reason) => {
            return Err(MetaError::new(
                389,
                format!("(#389) Unable to fetch video file from URL. ({reason})"),
            ));
        }
    }
    let id = state.next_id().to_string();
    let published = params.flag("published") != Some(false);
    state.put_object(
        &id,
        new_object(
            account,
            "fb_video",
            json!({
                "video": true,
                "url": url,
                "description": params.get("description"),
                "title": params.get("title"),
                "published": published,
                "fail_text": "The video could not be processed: the file is corrupt or in an unsupported format.",
            }),
        ),
    );
    // The video goes out when processing completes, whether or not anyone polls.
    let state = state.clone();
    let video_id = id.clone();
    actix_web::rt::spawn(async move {
        let pause = state.processing_delay.max(Duration::from_millis(50));
        for _ in 0..600 {
            tokio::time::sleep(pause).await;
            match phase(&state, &video_id) {
                Some(Phase::InProgress) => {}
                _ => {
                    settle_video(&state, &video_id);
                    return;
                }
            }
        }
    });
    Ok(ok(account, json!({ "id": id })))
}

/// Records a facebook video as published once its processing finished (idempotent).
fn settle_video(state: &SimState, id: &str) {
    let Some(object) = state.object(id) else {
        return;
    };
    if object.data["published"] == json!(false) {
        return;
    }
    if let Ok(video) = claim_for_publish(state, id, id) {
        record(
            state,
            (&video.platform, &video.owner),
            id,
            "video",
            video.data["description"].as_str(),
            video.data["url"]
                .as_str()
                .map(str::to_string)
                .into_iter()
                .collect(),
            json!({"title": video.data["title"]}),
        );
    }
}

/// `GET /{video-id}?fields=status`: video_status and the upload/processing/publishing phases.
fn video_fields(
    state: &SimState,
    id: &str,
    object: &SimObject,
    params: &Params,
) -> Result<Value, MetaError> {
    let complete = json!({"status": "complete"});
    let status = match phase(state, id) {
        Some(Phase::Finished) | Some(Phase::Published(_)) => json!({
            "video_status": "ready",
            "uploading_phase": complete,
            "processing_phase": complete,
            "publishing_phase": {"status": "complete", "publish_status": "published",
                                 "publish_time": Utc::now().timestamp()},
        }),
        Some(Phase::Error(text)) => json!({
            "video_status": "error",
            "uploading_phase": complete,
            "processing_phase": {"status": "error", "errors": [{"code": 1_363_008, "message": text}]},
            "publishing_phase": {"status": "not_started"},
        }),
        Some(Phase::Expired) => json!({"video_status": "expired"}),
        Some(Phase::InProgress) | None => json!({
            "video_status": "processing",
            "uploading_phase": complete,
            "processing_phase": {"status": "in_progress"},
            "publishing_phase": {"status": "not_started"},
        }),
    };
    let all = json!({
        "id": id,
        "status": status,
        "description": object.data["description"],
        "title": object.data["title"],
        "permalink_url": format!("/{}/videos/{id}/", object.owner),
    });
    Ok(select_fields(all, &params.fields(), &[]))
}

// ---------------------------------------------------------------------------------------------
// Instagram

/// `POST /{ig-user}/media`: an image, reel, carousel item or carousel container.
async fn ig_create_container(
    state: &SimState,
    account: &SimAccount,
    params: &Params,
) -> Result<HttpResponse, MetaError> {
    let media_type = params
        .get("media_type")
        .unwrap_or("IMAGE")
        .to_ascii_uppercase();
    let is_item = params.flag("is_carousel_item").unwrap_or(false);
    let caption = params.get("caption");
    if caption.is_some_and(|c| c.chars().count() > 2200) {
        return Err(
            // Content over a limit is the user's, not a protocol error.
            MetaError::param("The caption is too long (at most 2200 characters).")
                .legitimate()
                .subcode(2_207_010),
        );
    }
    let mut data = json!({
        "media_type": media_type,
        "caption": caption,
        "is_carousel_item": is_item,
        "video": false,
        "fail_text": "Error: Media upload has failed with error code 2207001. An unknown error occurred while processing the media.",
    });
    match media_type.as_str() {
        "IMAGE" => {
            let url = params.get("image_url").ok_or_else(|| {
                MetaError::param("The parameter image_url is required.")
                    .violation("missing_parameter")
            })?;
            match fetch(state, url).await {
                Ok(ct) if ct == "image/jpeg" || ct == "image/png" => {}
                Ok(ct) if ct.starts_with("image/") => {
                    return Err(MetaError::new(
                        36_001,
                        format!(
                            "The image format is not supported ({ct}). Only JPEG is supported."
                        ),
                    )
                    .subcode(2_207_005));
                }
                Ok(ct) => {
                    return Err(MetaError::media_download(&format!("content type {ct}")));
                }
                Err(reason) => return Err(MetaError::media_download(&reason)),
            }
            // Feed images and carousel items: from 4:5 to 1.91:1.
            if let Some((width, height)) = state.image_size(url).await {
                let (w, h) = (u64::from(width), u64::from(height));
                if h == 0 || 4 * h > 5 * w || 100 * w > 191 * h {
                    return Err(MetaError::new(
                        36_003,
                        format!("The aspect ratio is not supported. ({width}x{height})"),
                    )
                    .subcode(2_207_009)
                    .violation("unsupported_aspect_ratio"));
                }
            }
            data["image_url"] = json!(url);
        }
        "VIDEO" | "REELS" => {
            if media_type == "VIDEO" && !is_item {
                return Err(MetaError::param(
                    "The media type VIDEO is no longer supported for feed posts; use REELS.",
                )
                .subcode(2_207_023));
            }
            let url = params.get("video_url").ok_or_else(|| {
                MetaError::param("The parameter video_url is required.")
                    .violation("missing_parameter")
            })?;
            data["video_url"] = json!(url);
            data["video"] = json!(true);
            data["cover_url"] = json!(params.get("cover_url"));
            data["share_to_feed"] = json!(params.flag("share_to_feed"));
            // Videos are downloaded during processing: a failure shows in the status, not here.
            match fetch(state, url).await {
                Ok(ct) if ct == "video/mp4" || ct == "video/quicktime" => {}
                Ok(ct) => {
                    data["failure"] = json!(format!(
                        "Error: The video format is not supported ({ct}). Error code 2207026."
                    ));
                }
                Err(reason) => {
                    data["failure"] = json!(format!(
                        "Error: Media download has failed. The media URI doesn't meet our \
                         requirements ({reason}). Error code 2207052."
                    ));
                }
            }
            if let Some(cover) = params.get("cover_url")
                && let Err(reason) = fetch(state, cover).await
            {
                data["failure"] = json!(format!(
                    "Error: Media download has failed for the cover ({reason}). Error code 2207052."
                ));
            }
        }
        "CAROUSEL" => {
            let children = carousel_children(state, account, params, 2, 10, "ig_container")?;
            data["children"] = json!(children);
        }
        other => {
            return Err(
                MetaError::param(format!("The media type {other} is not supported here."))
                    .subcode(2_207_023),
            );
        }
    }
    let id = state.next_id().to_string();
    state.put_object(&id, new_object(account, "ig_container", data));
    Ok(ok(account, json!({ "id": id })))
}

/// Checks `children` of a carousel container: `min..=max` ids of FINISHED carousel items of
/// this account, each used once; marks them used.
pub(crate) fn carousel_children(
    state: &SimState,
    account: &SimAccount,
    params: &Params,
    min: usize,
    max: usize,
    kind: &str,
) -> Result<Vec<String>, MetaError> {
    let raw = params.get("children").ok_or_else(|| {
        MetaError::param("The parameter children is required.").violation("missing_parameter")
    })?;
    // Comma-separated ids; a JSON array is tolerated as well.
    let children: Vec<String> = match serde_json::from_str::<Vec<Value>>(raw) {
        Ok(items) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect(),
        Err(_) => raw
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
    };
    let invalid = |message: String| MetaError::param(message).subcode(2_207_028);
    if children.len() < min || children.len() > max {
        return Err(invalid(format!(
            "A carousel needs {min} to {max} children, got {}.",
            children.len()
        )));
    }
    for child in &children {
        let object = state
            .object(child)
            .filter(|o| o.kind == kind && o.owner == account.external_id);
        let Some(object) = object else {
            // An unknown id: a business answer, as for any object.
            return Err(
                invalid(format!("The child {child} is not a valid media container.")).legitimate(),
            );
        };
        if object.data["is_carousel_item"] != json!(true) || !object.data["used_by"].is_null() {
            return Err(invalid(format!(
                "The child {child} is not an unused carousel item container."
            )));
        }
        match phase(state, child) {
            Some(Phase::Finished) => {}
            Some(Phase::InProgress) => return Err(MetaError::not_ready()),
            _ => {
                // The platform's processing outcome, not the client's doing.
                return Err(
                    invalid(format!("The child {child} failed processing or expired."))
                        .legitimate(),
                );
            }
        }
    }
    for child in &children {
        if let Some(mut object) = state.objects.get_mut(child) {
            object.data["used_by"] = json!("carousel");
        }
    }
    Ok(children)
}

/// `POST /{ig-user}/media_publish?creation_id=`.
fn ig_publish(
    state: &SimState,
    account: &SimAccount,
    params: &Params,
) -> Result<HttpResponse, MetaError> {
    let creation_id = params.get("creation_id").ok_or_else(|| {
        MetaError::param("The parameter creation_id is required.").violation("missing_parameter")
    })?;
    let container = state
        .object(creation_id)
        .filter(|o| o.kind == "ig_container" && o.owner == account.external_id)
        .ok_or_else(|| MetaError::unsupported(&account.platform, &Method::POST, creation_id))?;
    if container.data["is_carousel_item"] == json!(true) {
        return Err(MetaError::param(
            "A carousel item container cannot be published on its own.",
        ));
    }
    if quota_usage(state, account, None) >= IG_QUOTA_TOTAL {
        return Err(MetaError::new(
            9,
            "Application request limit reached: the maximum number of posts that were published \
             in 24 hours has been reached.",
        )
        .subcode(2_207_042)
        .user_title("Publishing limit reached"));
    }
    let media_id = state.next_id().to_string();
    let container = claim_for_publish(state, creation_id, &media_id).map_err(publish_refusal)?;
    let data = &container.data;
    let (kind, media) = match data["media_type"].as_str().unwrap_or("IMAGE") {
        "CAROUSEL" => {
            let urls = data["children"]
                .as_array()
                .map(|children| {
                    children
                        .iter()
                        .filter_map(|c| state.object(c.as_str().unwrap_or_default()))
                        .filter_map(|c| {
                            c.data["image_url"]
                                .as_str()
                                .or(c.data["video_url"].as_str())
                                .map(str::to_string)
                        })
                        .collect()
                })
                .unwrap_or_default();
            ("carousel", urls)
        }
        "REELS" => (
            "reels",
            data["video_url"]
                .as_str()
                .map(str::to_string)
                .into_iter()
                .collect(),
        ),
        _ => (
            "image",
            data["image_url"]
                .as_str()
                .map(str::to_string)
                .into_iter()
                .collect(),
        ),
    };
    record(
        state,
        (&account.platform, &account.external_id),
        &media_id,
        kind,
        data["caption"].as_str(),
        media,
        json!({
            "container_id": creation_id,
            "children": data["children"],
            "cover_url": data["cover_url"],
            "share_to_feed": data["share_to_feed"],
        }),
    );
    Ok(ok(account, json!({ "id": media_id })))
}

/// Why a container cannot be published, in Meta's words. All business answers (a retried
/// publish, a failed or unknown container), never protocol violations.
pub(crate) fn publish_refusal(phase: Option<Phase>) -> MetaError {
    let error = match phase {
        Some(Phase::InProgress) => MetaError::not_ready(),
        Some(Phase::Published(_)) => MetaError::param("The media has already been published."),
        Some(Phase::Expired) => {
            MetaError::new(-2, "The media container has expired; create a new one.")
                .subcode(2_207_020)
        }
        Some(Phase::Error(text)) => MetaError::param(format!(
            "The media container failed processing and cannot be published: {text}"
        ))
        .subcode(2_207_032),
        Some(Phase::Finished) | None => MetaError::param("The media container was not found."),
    };
    error.legitimate()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The usage header written out by hand is the JSON a `Value` would write, escaping
    /// included.
    #[test]
    fn the_usage_header_is_the_json_meta_sends() {
        for (platform, id, kind) in [
            ("facebook", "1020", "pages"),
            ("threads", "77\"\\x", "threads"),
        ] {
            let account = SimAccount {
                platform: platform.into(),
                external_id: id.into(),
                name: String::new(),
                username: String::new(),
                access_token: String::new(),
                refresh_token: String::new(),
                expires_in: 0,
            };
            let expected = json!({ id: [{
                "type": kind,
                "call_count": 250,
                "total_cputime": 50,
                "total_time": 50,
                "estimated_time_to_regain_access": 7,
            }]})
            .to_string();
            assert_eq!(usage_header(&account, 250, 7), expected);
        }
    }
}
