//! Simulator: X API v2 (`../shared/design/platform-apis.md` §7, the xdk OpenAPI specs), mounted
//! at `/x`:
//!
//! - `POST /2/tweets` (JSON) → **201** `{"data":{"id","text","edit_history_tweet_ids"}}`;
//!   `GET /2/tweets/{id}`, `DELETE /2/tweets/{id}`, `GET /2/users/{id}/tweets` (see [`timeline`]);
//! - media upload v2: `POST /2/media/upload/initialize` (JSON), `POST /2/media/upload/{id}/append`
//!   (multipart `media` + `segment_index`, or JSON with base64 `media`),
//!   `POST /2/media/upload/{id}/finalize`, `GET /2/media/upload?command=STATUS&media_id=`;
//! - `POST /2/media/upload`: the one-shot image upload (`media` + `media_category`) and the
//!   command-style form of the docs quickstart (`command=INIT|APPEND|FINALIZE|STATUS`), as
//!   multipart, urlencoded form or JSON.
//!
//! Errors are RFC 7807 problems as X sends them. Every response carries `x-rate-limit-*`
//! headers with the documented per-endpoint 15-minute limits. The counters are reported but not
//! enforced: a 429 only comes from an injected `rate_limit` fault, so benchmarks can post freely.
//!
//! Upload sessions keep byte counts only (never the bytes), so a 512 MB video costs nothing.

use std::{collections::HashMap, time::Instant};

use actix_web::{
    HttpRequest, HttpResponse, HttpResponseBuilder,
    http::{StatusCode, header},
    web,
};
use base64::{Engine, engine::general_purpose::STANDARD};
use bytes::Bytes;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    spec::{
        params::{Param, ParamError, check_query},
        x::{self as spec, COMMAND_UPLOAD_FIELDS},
    },
    state::{FaultKind, PublishedItem, Refusal, SimAccount, SimObject, SimState, bearer_token},
};

mod timeline;

const PLATFORM: &str = "x";
/// Object kinds kept in [`SimState::objects`].
const MEDIA_KIND: &str = "x_media";
const RATE_KIND: &str = "x_rate_window";
const DELETED_KIND: &str = "x_deleted_tweet";

/// Rate-limit window (X counts per 15 minutes).
const WINDOW_SECS: i64 = 15 * 60;
/// How long an upload session lives (`expires_after_secs` in the docs' examples).
const EXPIRES_AFTER_SECS: i64 = 86_400;
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
const MAX_GIF_BYTES: u64 = 15 * 1024 * 1024;
const MAX_VIDEO_BYTES: u64 = 512 * 1024 * 1024;
/// Weighted-character limit of a post (counted here as plain characters).
const MAX_TEXT_CHARS: usize = 280;

/// The problem type of the production spec (2.167); X answered `api.twitter.com` before.
const INVALID_REQUEST: &str = "https://api.x.com/2/problems/invalid-request";
const NOT_FOUND: &str = "https://api.twitter.com/2/problems/resource-not-found";

const IMAGE_TYPES: [&str; 7] = [
    "image/jpeg",
    "image/bmp",
    "image/png",
    "image/webp",
    "image/pjpeg",
    "image/tiff",
    "image/gif",
];
const VIDEO_TYPES: [&str; 4] = ["video/mp4", "video/webm", "video/mp2t", "video/quicktime"];

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/2/tweets", web::post().to(create_tweet))
        .route("/2/tweets/{id}", web::get().to(get_tweet))
        .route("/2/tweets/{id}", web::delete().to(delete_tweet))
        .route("/2/users/{id}/tweets", web::get().to(timeline::user_tweets))
        .route("/2/media/upload/initialize", web::post().to(initialize))
        .route("/2/media/upload/{id}/append", web::post().to(append))
        .route("/2/media/upload/{id}/finalize", web::post().to(finalize))
        .route("/2/media/upload", web::get().to(status))
        .route("/2/media/upload", web::post().to(upload));
}

// ---------------------------------------------------------------------------------------------
// Admission, rate-limit headers and problem bodies

/// Endpoints with their documented per-user 15-minute limits (§7.5).
#[derive(Debug, Clone, Copy)]
enum Endpoint {
    CreateTweet,
    GetTweet,
    DeleteTweet,
    UserTweets,
    Initialize,
    Append,
    Finalize,
    Upload,
    Status,
}

impl Endpoint {
    fn limit(self) -> u64 {
        match self {
            Endpoint::CreateTweet => 100,
            Endpoint::GetTweet | Endpoint::UserTweets => 900,
            Endpoint::DeleteTweet => 50,
            Endpoint::Initialize | Endpoint::Append | Endpoint::Finalize => 1_875,
            Endpoint::Upload => 500,
            Endpoint::Status => 1_000,
        }
    }

    /// The operation in the OpenAPI documents: method and path template.
    fn operation(self) -> (&'static str, &'static str) {
        match self {
            Endpoint::CreateTweet => ("POST", "/2/tweets"),
            Endpoint::GetTweet => ("GET", "/2/tweets/{id}"),
            Endpoint::DeleteTweet => ("DELETE", "/2/tweets/{id}"),
            Endpoint::UserTweets => ("GET", "/2/users/{id}/tweets"),
            Endpoint::Initialize => ("POST", "/2/media/upload/initialize"),
            Endpoint::Append => ("POST", "/2/media/upload/{id}/append"),
            Endpoint::Finalize => ("POST", "/2/media/upload/{id}/finalize"),
            Endpoint::Upload => ("POST", "/2/media/upload"),
            Endpoint::Status => ("GET", "/2/media/upload"),
        }
    }

    fn key(self) -> &'static str {
        match self {
            Endpoint::CreateTweet => "create_tweet",
            Endpoint::GetTweet => "get_tweet",
            Endpoint::DeleteTweet => "delete_tweet",
            Endpoint::UserTweets => "user_tweets",
            Endpoint::Initialize => "initialize",
            Endpoint::Append => "append",
            Endpoint::Finalize => "finalize",
            Endpoint::Upload => "upload",
            Endpoint::Status => "status",
        }
    }
}

/// The `x-rate-limit-*` values of one response.
#[derive(Debug, Clone, Copy)]
struct RateInfo {
    limit: u64,
    remaining: u64,
    reset: i64,
}

/// An admitted call: who made it and the rate-limit headers to answer with.
struct Call {
    account: std::sync::Arc<SimAccount>,
    rate: RateInfo,
}

impl Call {
    fn respond(&self, status: StatusCode) -> HttpResponseBuilder {
        with_rate(HttpResponse::build(status), self.rate)
    }

    fn problem(&self, status: StatusCode, body: Value) -> HttpResponse {
        self.respond(status)
            .content_type("application/problem+json")
            .json(body)
    }

    fn invalid(&self, parameter: &str, value: &str, message: &str) -> Problem {
        Problem {
            status: StatusCode::BAD_REQUEST,
            body: invalid_request_body(parameter, value, message),
            violation: Some(format!("{parameter}: {message}")),
            rule: "invalid_request",
        }
    }

    /// An invalid-request response, for handlers.
    fn bad(&self, parameter: &str, value: &str, message: &str) -> HttpResponse {
        self.fail(self.invalid(parameter, value, message))
    }

    fn fail(&self, problem: Problem) -> HttpResponse {
        let response = self.problem(problem.status, problem.body);
        match problem.violation {
            Some(detail) => super::state::violation(response, PLATFORM, problem.rule, detail),
            None => response,
        }
    }
}

/// A refusal decided in a helper, rendered with the call's rate-limit headers by the handler.
pub(super) struct Problem {
    status: StatusCode,
    body: Value,
    /// What the client got wrong, when this refuses a protocol violation (see
    /// [`super::state::Violation`]); `None` for business answers.
    violation: Option<String>,
    /// The violated rule recorded with it (`invalid_request` unless said otherwise).
    rule: &'static str,
}

impl Problem {
    /// The response, with no rate-limit headers (for routes outside this module).
    pub(super) fn into_response(self) -> HttpResponse {
        let response = HttpResponse::build(self.status)
            .content_type("application/problem+json")
            .json(self.body);
        match self.violation {
            Some(detail) => super::state::violation(response, PLATFORM, self.rule, detail),
            None => response,
        }
    }

    /// Unmarks a refusal: a business answer (unknown or expired object, content over a
    /// limit), not a protocol violation.
    fn legitimate(mut self) -> Self {
        self.violation = None;
        self
    }
}

fn with_rate(mut builder: HttpResponseBuilder, rate: RateInfo) -> HttpResponseBuilder {
    builder
        .insert_header(("x-rate-limit-limit", rate.limit.to_string()))
        .insert_header(("x-rate-limit-remaining", rate.remaining.to_string()))
        .insert_header(("x-rate-limit-reset", rate.reset.to_string()));
    builder
}

/// `errors` items follow the spec's `InvalidRequestProblem`: `{message, parameters:{name:[values]}}`.
fn invalid_request_body(parameter: &str, value: &str, message: &str) -> Value {
    json!({
        "errors": [{"parameters": {parameter: [value]}, "message": message}],
        "title": "Invalid Request",
        "detail": "One or more parameters to your request was invalid.",
        "type": INVALID_REQUEST,
        "status": 400,
    })
}

fn generic_problem(status: u16, title: &str, detail: &str) -> Value {
    json!({"title": title, "detail": detail, "type": "about:blank", "status": status})
}

/// Authenticates the call, counts it against its endpoint's window, and renders refusals the
/// way X does.
async fn admit(
    state: &SimState,
    req: &HttpRequest,
    endpoint: Endpoint,
) -> Result<Call, HttpResponse> {
    let token = bearer_token(req);
    match state.admit(&[PLATFORM], token.as_deref(), req.path()).await {
        Ok(account) => {
            let rate = count_call(state, &account.external_id, endpoint);
            let call = Call { account, rate };
            let (method, path) = endpoint.operation();
            // The command form of the upload may carry its fields in the query (docs only).
            let extra: &[&str] = match endpoint {
                Endpoint::Upload => &COMMAND_UPLOAD_FIELDS,
                _ => &[],
            };
            match spec_check(state, req, method, path, extra) {
                Ok(()) => Ok(call),
                Err(problem) => Err(call.fail(problem)),
            }
        }
        Err(refusal) => Err(refusal_response(refusal, endpoint)),
    }
}

/// The one check every X call the simulator serves passes after authentication, from the
/// OpenAPI documents (`super::spec::x`): the token has every OAuth 2.0 scope of the operation's
/// `security`, and the query fits its parameters (names, types, enums item by item, bounds,
/// required ones). `extra` names query fields the documentation adds to the spec.
pub(super) fn spec_check(
    state: &SimState,
    req: &HttpRequest,
    method: &str,
    path: &str,
    extra: &[&str],
) -> Result<(), Problem> {
    let Some(operation) = spec::operation(method, path) else {
        // A handler naming an operation the documents lack is a simulator bug.
        return Err(Problem {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            body: generic_problem(
                500,
                "Internal Error",
                &format!("no spec for {method} {path}"),
            ),
            violation: None,
            rule: "invalid_request",
        });
    };
    let token = bearer_token(req).unwrap_or_default();
    if let Some(missing) = operation
        .scopes
        .iter()
        .find(|s| !state.has_scope(&token, s))
    {
        return Err(Problem {
            status: StatusCode::FORBIDDEN,
            body: generic_problem(403, "Forbidden", "Forbidden"),
            violation: Some(format!("the token lacks the scope {missing}")),
            rule: "missing_scope",
        });
    }
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(req.query_string().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .filter(|(k, _)| !extra.contains(&k.as_str()))
        .collect();
    check_query(&operation.params, &pairs).map_err(|e| query_problem(&operation.params, e))
}

/// X's answer to a query that does not fit the operation's parameters (the messages X sends).
fn query_problem(params: &std::collections::BTreeMap<String, Param>, error: ParamError) -> Problem {
    let message = match &error {
        ParamError::Unknown { name, .. } => {
            let known: Vec<&str> = params.keys().map(String::as_str).collect();
            format!(
                "The query parameter [{name}] is not one of [{}]",
                known.join(",")
            )
        }
        ParamError::Missing { name } => format!("The `{name}` query parameter can not be empty"),
        ParamError::BadType { name, value, kind } => format!(
            "The `{name}` query parameter value [{value}] is not a valid {}",
            kind.name()
        ),
        ParamError::BadEnum {
            name,
            value,
            allowed,
        } => format!(
            "The `{name}` query parameter value [{value}] is not one of [{}]",
            allowed.join(",")
        ),
        ParamError::OutOfRange {
            name,
            value,
            minimum,
            maximum,
        } => format!(
            "The `{name}` query parameter value [{value}] is not between {} and {}",
            minimum.map(|n| n.to_string()).unwrap_or_default(),
            maximum.map(|n| n.to_string()).unwrap_or_default()
        ),
        ParamError::Repeated { name } => {
            format!("The `{name}` query parameter may only be given once")
        }
    };
    Problem {
        status: StatusCode::BAD_REQUEST,
        body: invalid_request_body(error.name(), error.value(), &message),
        violation: Some(message.clone()),
        rule: error.rule(),
    }
}

/// X's answer to a body property the operation's schema does not have.
fn unknown_field_problem(path: &str) -> Problem {
    let message = format!(
        "$.{path}: is not defined in the schema and the schema does not allow additional properties"
    );
    Problem {
        status: StatusCode::BAD_REQUEST,
        body: json!({
            "errors": [{"message": message}],
            "title": "Invalid Request",
            "detail": "One or more parameters to your request was invalid.",
            "type": INVALID_REQUEST,
            "status": 400,
        }),
        violation: Some(message.clone()),
        rule: "unknown_field",
    }
}

/// Checks the top-level names of a request body (JSON, form or multipart) against the
/// operation's body schema, plus `extra` names the documentation adds.
fn check_body_names<'a>(
    endpoint: Endpoint,
    names: impl IntoIterator<Item = &'a str>,
    extra: &[&str],
) -> Result<(), Problem> {
    let (method, path) = endpoint.operation();
    let Some(shape) = spec::operation(method, path).and_then(|o| o.body.as_ref()) else {
        return Ok(());
    };
    let Some(allowed) = shape.objects.get("") else {
        return Ok(());
    };
    match names
        .into_iter()
        .find(|n| !allowed.contains(*n) && !extra.contains(n))
    {
        Some(unknown) => Err(unknown_field_problem(unknown)),
        None => Ok(()),
    }
}

fn count_call(state: &SimState, account_id: &str, endpoint: Endpoint) -> RateInfo {
    let now = Utc::now().timestamp();
    let key = format!("x-rate:{account_id}:{}", endpoint.key());
    let mut window = state.objects.entry(key).or_insert_with(|| SimObject {
        platform: PLATFORM.into(),
        owner: account_id.into(),
        kind: RATE_KIND.into(),
        data: json!({"count": 0, "reset": now + WINDOW_SECS}),
        created: Instant::now(),
    });
    let mut reset = window.data["reset"].as_i64().unwrap_or(now + WINDOW_SECS);
    let mut count = window.data["count"].as_u64().unwrap_or(0);
    if now >= reset {
        reset = now + WINDOW_SECS;
        count = 0;
    }
    count += 1;
    window.data = json!({"count": count, "reset": reset});
    RateInfo {
        limit: endpoint.limit(),
        remaining: endpoint.limit().saturating_sub(count),
        reset,
    }
}

fn refusal_response(refusal: Refusal, endpoint: Endpoint) -> HttpResponse {
    let now = Utc::now().timestamp();
    let rate = RateInfo {
        limit: endpoint.limit(),
        remaining: endpoint.limit().saturating_sub(1),
        reset: now + WINDOW_SECS,
    };
    let problem = |status: StatusCode, body: Value, rate: RateInfo| {
        with_rate(HttpResponse::build(status), rate)
            .content_type("application/problem+json")
            .json(body)
    };
    let unauthorized = generic_problem(401, "Unauthorized", "Unauthorized");
    match refusal {
        // Calling without a token is the client's mistake; an unknown one may be revoked.
        Refusal::NoToken => super::state::violation(
            problem(StatusCode::UNAUTHORIZED, unauthorized, rate),
            PLATFORM,
            "missing_token",
            "no bearer token",
        ),
        Refusal::UnknownToken => problem(StatusCode::UNAUTHORIZED, unauthorized, rate),
        // X answers the same body whether a token expired or was revoked; the RFC 6750
        // `WWW-Authenticate` challenge is where a client can tell them apart.
        Refusal::Fault(FaultKind::TokenExpired) => with_rate(
            HttpResponse::build(StatusCode::UNAUTHORIZED),
            rate,
        )
        .insert_header((
            header::WWW_AUTHENTICATE,
            "Bearer error=\"invalid_token\", error_description=\"The access token expired\"",
        ))
        .content_type("application/problem+json")
        .json(unauthorized),
        Refusal::Fault(FaultKind::TokenRevoked) => with_rate(
            HttpResponse::build(StatusCode::UNAUTHORIZED),
            rate,
        )
        .insert_header((
            header::WWW_AUTHENTICATE,
            "Bearer error=\"invalid_token\", error_description=\"The access token is invalid\"",
        ))
        .content_type("application/problem+json")
        .json(unauthorized),
        Refusal::Fault(FaultKind::Permission) => problem(
            StatusCode::FORBIDDEN,
            generic_problem(
                403,
                "Forbidden",
                "You are not permitted to perform this action.",
            ),
            rate,
        ),
        Refusal::Fault(FaultKind::RateLimit) => problem(
            StatusCode::TOO_MANY_REQUESTS,
            generic_problem(429, "Too Many Requests", "Too Many Requests"),
            RateInfo {
                remaining: 0,
                ..rate
            },
        ),
        Refusal::Fault(FaultKind::ServerError) => problem(
            StatusCode::SERVICE_UNAVAILABLE,
            generic_problem(503, "Service Unavailable", "Service Unavailable"),
            rate,
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Request fields: JSON, urlencoded form or multipart

/// The fields of a request body, plus the query string as a fallback (command-style clients put
/// `command` and `media_id` in either place).
#[derive(Default)]
struct Fields {
    map: HashMap<String, Bytes>,
    /// Whether `media` holds raw bytes (multipart) rather than base64 text.
    binary_media: bool,
    /// The names the body itself carried (not the query), for the schema check.
    body_names: Vec<String>,
}

impl Fields {
    fn parse(req: &HttpRequest, body: &Bytes) -> Result<Self, String> {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let mut fields = Fields::default();
        if essence == "multipart/form-data" {
            fields.map = parse_multipart(&content_type, body)?;
            fields.binary_media = true;
        } else if essence == "application/json" {
            let value: Value = serde_json::from_slice(body)
                .map_err(|e| format!("The request body is not valid JSON: {e}"))?;
            let Value::Object(object) = value else {
                return Err("The request body must be a JSON object".into());
            };
            for (k, v) in object {
                let text = match v {
                    Value::String(s) => s,
                    Value::Null => continue,
                    other => other.to_string(),
                };
                fields.map.insert(k, Bytes::from(text));
            }
        } else if !body.is_empty() {
            for (k, v) in url::form_urlencoded::parse(body) {
                fields
                    .map
                    .insert(k.into_owned(), Bytes::from(v.into_owned()));
            }
        }
        fields.body_names = fields.map.keys().cloned().collect();
        fields.body_names.sort();
        for (k, v) in url::form_urlencoded::parse(req.query_string().as_bytes()) {
            fields
                .map
                .entry(k.into_owned())
                .or_insert_with(|| Bytes::from(v.into_owned()));
        }
        Ok(fields)
    }

    /// The names the body carried.
    fn names(&self) -> impl Iterator<Item = &str> {
        self.body_names.iter().map(String::as_str)
    }

    fn text(&self, name: &str) -> Option<String> {
        self.map
            .get(name)
            .map(|v| String::from_utf8_lossy(v).trim().to_string())
    }

    /// The uploaded bytes: raw in multipart, base64 in JSON or forms (`media_data` is the v1.1
    /// spelling).
    fn media(&self) -> Result<Option<Bytes>, String> {
        if self.binary_media
            && let Some(raw) = self.map.get("media")
        {
            return Ok(Some(raw.clone()));
        }
        let Some(encoded) = self.map.get("media").or_else(|| self.map.get("media_data")) else {
            return Ok(None);
        };
        let cleaned: Vec<u8> = encoded
            .iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        STANDARD
            .decode(cleaned)
            .map(|b| Some(Bytes::from(b)))
            .map_err(|_| "media must be base64-encoded bytes".to_string())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A minimal `multipart/form-data` parser: the parts' names and bodies (slices of `body`).
fn parse_multipart(content_type: &str, body: &Bytes) -> Result<HashMap<String, Bytes>, String> {
    let boundary = content_type
        .split(';')
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
        .filter(|b| !b.is_empty())
        .ok_or("multipart body without a boundary")?;
    let delimiter = format!("--{boundary}").into_bytes();
    let next_delimiter = format!("\r\n--{boundary}").into_bytes();
    let malformed = || "malformed multipart body".to_string();
    let mut parts = HashMap::new();
    let mut pos = find(body, &delimiter).ok_or_else(malformed)? + delimiter.len();
    loop {
        let rest = &body[pos..];
        if rest.starts_with(b"--") {
            break;
        }
        let rest = rest.strip_prefix(b"\r\n").ok_or_else(malformed)?;
        let start = body.len() - rest.len();
        let header_len = find(rest, b"\r\n\r\n").ok_or_else(malformed)?;
        let headers = String::from_utf8_lossy(&rest[..header_len]).to_string();
        let content_start = start + header_len + 4;
        let content_len = find(&body[content_start..], &next_delimiter).ok_or_else(malformed)?;
        let name = headers
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))
            .and_then(|l| {
                l.split(';')
                    .filter_map(|p| p.trim().split_once('='))
                    .find(|(k, _)| k.trim() == "name")
                    .map(|(_, v)| v.trim().trim_matches('"').to_string())
            })
            .ok_or_else(malformed)?;
        parts.insert(name, body.slice(content_start..content_start + content_len));
        pos = content_start + content_len + next_delimiter.len();
    }
    Ok(parts)
}

// ---------------------------------------------------------------------------------------------
// Media

/// An upload session, kept as JSON in [`SimState::objects`].
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Media {
    id: String,
    media_key: String,
    media_type: String,
    category: String,
    total_bytes: u64,
    /// Bytes per segment index (an index appended again replaces its bytes).
    segments: HashMap<u32, u64>,
    finalized: bool,
    /// Whether processing follows FINALIZE (videos and GIFs).
    async_processing: bool,
    expires_at: i64,
}

impl Media {
    fn received(&self) -> u64 {
        self.segments.values().sum()
    }

    fn is_video(&self) -> bool {
        self.media_type.starts_with("video/")
    }
}

fn load_media(state: &SimState, owner: &str, id: &str) -> Option<(Media, Instant)> {
    let object = state.object(id)?;
    if object.kind != MEDIA_KIND || object.owner != owner {
        return None;
    }
    let media = serde_json::from_value(object.data).ok()?;
    Some((media, object.created))
}

fn store_media(state: &SimState, owner: &str, media: &Media, created: Instant) {
    state.put_object(
        &media.id,
        SimObject {
            platform: PLATFORM.into(),
            owner: owner.into(),
            kind: MEDIA_KIND.into(),
            data: serde_json::to_value(media).unwrap_or(Value::Null),
            created,
        },
    );
}

/// The category X infers when the client names none.
fn default_category(media_type: &str) -> &'static str {
    if media_type.starts_with("video/") {
        "tweet_video"
    } else if media_type == "image/gif" {
        "tweet_gif"
    } else {
        "tweet_image"
    }
}

/// Validates an INIT request and opens the session.
fn open_session(
    call: &Call,
    state: &SimState,
    media_type: Option<String>,
    total_bytes: Option<String>,
    category: Option<String>,
) -> Result<Media, Problem> {
    let media_type = media_type
        .filter(|t| !t.is_empty())
        .ok_or_else(|| call.invalid("media_type", "", "media_type is required"))?
        .to_ascii_lowercase();
    let is_image = IMAGE_TYPES.contains(&media_type.as_str());
    let is_video = VIDEO_TYPES.contains(&media_type.as_str());
    if !is_image && !is_video {
        return Err(call.invalid(
            "media_type",
            &media_type,
            "media_type is not a supported media type",
        ));
    }
    let raw_total = total_bytes.unwrap_or_default();
    let total_bytes: u64 = raw_total.parse().map_err(|_| {
        call.invalid(
            "total_bytes",
            &raw_total,
            "total_bytes must be a non-negative integer",
        )
    })?;
    let category = category
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| default_category(&media_type).to_string())
        .to_ascii_lowercase();
    let gif = media_type == "image/gif";
    let (fits, limit) = match category.as_str() {
        "tweet_image" | "dm_image" => (is_image && !gif, MAX_IMAGE_BYTES),
        "tweet_gif" | "dm_gif" => (gif, MAX_GIF_BYTES),
        "tweet_video" | "dm_video" | "amplify_video" => (is_video, MAX_VIDEO_BYTES),
        _ => {
            return Err(call.invalid(
                "media_category",
                &category,
                "media_category is not a supported media category",
            ));
        }
    };
    if !fits {
        return Err(call.invalid(
            "media_category",
            &category,
            &format!("media_category {category} does not accept {media_type}"),
        ));
    }
    if total_bytes == 0 || total_bytes > limit {
        return Err(call
            .invalid(
                "total_bytes",
                &total_bytes.to_string(),
                &format!("total_bytes must be between 1 and {limit} for {category}"),
            )
            // The file's size is the user's content.
            .legitimate());
    }
    let id = state.next_id().to_string();
    let prefix = if is_video {
        "13"
    } else if gif {
        "16"
    } else {
        "3"
    };
    let media = Media {
        media_key: format!("{prefix}_{id}"),
        id,
        media_type,
        category,
        total_bytes,
        segments: HashMap::new(),
        finalized: false,
        async_processing: is_video || gif,
        expires_at: Utc::now().timestamp() + EXPIRES_AFTER_SECS,
    };
    store_media(state, &call.account.external_id, &media, Instant::now());
    Ok(media)
}

/// Finds an open (not yet finalized, not expired) session of the caller.
fn open_media(call: &Call, state: &SimState, id: &str) -> Result<(Media, Instant), Problem> {
    let (media, created) = load_media(state, &call.account.external_id, id).ok_or_else(|| {
        call.invalid("media_id", id, "The media_id is not a valid upload session")
            .legitimate()
    })?;
    if media.expires_at < Utc::now().timestamp() {
        return Err(call
            .invalid("media_id", id, "The upload session has expired")
            .legitimate());
    }
    Ok((media, created))
}

fn append_segment(
    call: &Call,
    state: &SimState,
    id: &str,
    fields: &Fields,
) -> Result<Media, Problem> {
    let (mut media, created) = open_media(call, state, id)?;
    if media.finalized {
        return Err(call.invalid("media_id", id, "The upload was already finalized"));
    }
    let raw_index = fields.text("segment_index").unwrap_or_default();
    let index: u32 = raw_index
        .parse()
        .ok()
        .filter(|i| *i <= 999)
        .ok_or_else(|| {
            call.invalid(
                "segment_index",
                &raw_index,
                "segment_index must be an integer from 0 to 999",
            )
        })?;
    let bytes = fields
        .media()
        .map_err(|e| call.invalid("media", "", &e))?
        .ok_or_else(|| call.invalid("media", "", "media is required"))?;
    let previous = media.segments.get(&index).copied().unwrap_or(0);
    let received = media.received() - previous + bytes.len() as u64;
    if received > media.total_bytes {
        return Err(call.invalid(
            "media",
            &index.to_string(),
            &format!(
                "Appended bytes ({received}) exceed total_bytes ({})",
                media.total_bytes
            ),
        ));
    }
    media.segments.insert(index, bytes.len() as u64);
    store_media(state, &call.account.external_id, &media, created);
    Ok(media)
}

fn finalize_session(call: &Call, state: &SimState, id: &str) -> Result<Value, Problem> {
    let (mut media, _) = open_media(call, state, id)?;
    if media.finalized {
        return Err(call.invalid("media_id", id, "The upload was already finalized"));
    }
    let received = media.received();
    if received != media.total_bytes {
        return Err(call.invalid(
            "media_id",
            id,
            &format!(
                "File size mismatch: received {received} bytes, total_bytes is {}",
                media.total_bytes
            ),
        ));
    }
    media.finalized = true;
    // Processing starts now: the object's `created` becomes the processing clock.
    store_media(state, &call.account.external_id, &media, Instant::now());
    let mut data = media_data(&media);
    if media.async_processing {
        data["processing_info"] = json!({"state": "pending", "check_after_secs": 1});
    }
    Ok(data)
}

fn media_data(media: &Media) -> Value {
    let expires_after = (media.expires_at - Utc::now().timestamp()).max(0);
    json!({
        "id": media.id,
        "media_key": media.media_key,
        "size": media.received(),
        "expires_after_secs": expires_after,
    })
}

/// Where processing of a finalized upload stands: `(state, progress, error)`.
fn processing_state(
    state: &SimState,
    owner: &str,
    media: &Media,
    started: Instant,
) -> (&'static str, u64, Option<Value>) {
    if !media.finalized {
        return ("pending", 0, None);
    }
    if !media.async_processing {
        return ("succeeded", 100, None);
    }
    let delay = state.processing_delay.as_millis().max(1);
    let progress = (started.elapsed().as_millis() * 100 / delay).min(99) as u64;
    match state.processing_outcome(PLATFORM, owner, started) {
        Some(true) => ("succeeded", 100, None),
        Some(false) => (
            "failed",
            progress,
            Some(json!({"code": 1, "name": "InvalidMedia", "message": "Unsupported video format"})),
        ),
        None if started.elapsed() < state.processing_delay / 3 => ("pending", 0, None),
        None => ("in_progress", progress, None),
    }
}

fn status_data(state: &SimState, call: &Call, id: &str) -> Result<Value, Problem> {
    let (media, started) = load_media(state, &call.account.external_id, id).ok_or_else(|| {
        call.invalid("media_id", id, "The media_id is not a valid upload")
            .legitimate()
    })?;
    let (stage, progress, error) =
        processing_state(state, &call.account.external_id, &media, started);
    let mut info = json!({"state": stage, "progress_percent": progress});
    if matches!(stage, "pending" | "in_progress") {
        info["check_after_secs"] = json!(1);
    }
    if let Some(error) = error {
        info["error"] = error;
    }
    let mut data = media_data(&media);
    data["processing_info"] = info;
    Ok(data)
}

async fn initialize(req: HttpRequest, state: web::Data<SimState>, body: Bytes) -> HttpResponse {
    let call = match admit(&state, &req, Endpoint::Initialize).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let fields = match Fields::parse(&req, &body) {
        Ok(f) => f,
        Err(e) => return call.bad("body", "", &e),
    };
    if let Err(p) = check_body_names(Endpoint::Initialize, fields.names(), &[]) {
        return call.fail(p);
    }
    match open_session(
        &call,
        &state,
        fields.text("media_type"),
        fields.text("total_bytes"),
        fields.text("media_category"),
    ) {
        Ok(media) => call.respond(StatusCode::OK).json(json!({"data": {
            "id": media.id,
            "media_key": media.media_key,
            "expires_after_secs": EXPIRES_AFTER_SECS,
        }})),
        Err(p) => call.fail(p),
    }
}

async fn append(
    req: HttpRequest,
    state: web::Data<SimState>,
    id: web::Path<String>,
    body: Bytes,
) -> HttpResponse {
    let call = match admit(&state, &req, Endpoint::Append).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let fields = match Fields::parse(&req, &body) {
        Ok(f) => f,
        Err(e) => return call.bad("body", "", &e),
    };
    if let Err(p) = check_body_names(Endpoint::Append, fields.names(), &[]) {
        return call.fail(p);
    }
    match append_segment(&call, &state, &id, &fields) {
        Ok(media) => call
            .respond(StatusCode::OK)
            .json(json!({"data": {"expires_at": media.expires_at}})),
        Err(p) => call.fail(p),
    }
}

async fn finalize(
    req: HttpRequest,
    state: web::Data<SimState>,
    id: web::Path<String>,
) -> HttpResponse {
    let call = match admit(&state, &req, Endpoint::Finalize).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    match finalize_session(&call, &state, &id) {
        Ok(data) => call.respond(StatusCode::OK).json(json!({"data": data})),
        Err(p) => call.fail(p),
    }
}

async fn status(req: HttpRequest, state: web::Data<SimState>) -> HttpResponse {
    let call = match admit(&state, &req, Endpoint::Status).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let fields = match Fields::parse(&req, &Bytes::new()) {
        Ok(f) => f,
        Err(e) => return call.bad("query", "", &e),
    };
    if let Some(command) = fields.text("command")
        && !command.eq_ignore_ascii_case("STATUS")
    {
        return call.bad("command", &command, "command must be STATUS");
    }
    let Some(id) = fields.text("media_id") else {
        return call.bad("media_id", "", "media_id is required");
    };
    match status_data(&state, &call, &id) {
        Ok(data) => call.respond(StatusCode::OK).json(json!({"data": data})),
        Err(p) => call.fail(p),
    }
}

/// `POST /2/media/upload`: command-style (INIT/APPEND/FINALIZE/STATUS) or one-shot.
async fn upload(req: HttpRequest, state: web::Data<SimState>, body: Bytes) -> HttpResponse {
    let call = match admit(&state, &req, Endpoint::Upload).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let fields = match Fields::parse(&req, &body) {
        Ok(f) => f,
        Err(e) => return call.bad("body", "", &e),
    };
    // The command form (docs quickstart, v1.1 heritage: `media_data` is its base64 spelling)
    // adds its fields to the one-shot schema's.
    let command_fields: Vec<&str> = COMMAND_UPLOAD_FIELDS
        .iter()
        .copied()
        .chain(["media_data"])
        .collect();
    if let Err(p) = check_body_names(Endpoint::Upload, fields.names(), &command_fields) {
        return call.fail(p);
    }
    let command = fields.text("command").map(|c| c.to_ascii_uppercase());
    let media_id = fields.text("media_id").unwrap_or_default();
    let result = match command.as_deref() {
        Some("INIT") => open_session(
            &call,
            &state,
            fields.text("media_type"),
            fields.text("total_bytes"),
            fields.text("media_category"),
        )
        .map(|media| {
            json!({"data": {
                "id": media.id,
                "media_key": media.media_key,
                "expires_after_secs": EXPIRES_AFTER_SECS,
            }})
        }),
        Some("APPEND") => append_segment(&call, &state, &media_id, &fields)
            .map(|media| json!({"data": {"expires_at": media.expires_at}})),
        Some("FINALIZE") => finalize_session(&call, &state, &media_id).map(|d| json!({"data": d})),
        Some("STATUS") => status_data(&state, &call, &media_id).map(|d| json!({"data": d})),
        Some(other) => Err(call.invalid(
            "command",
            other,
            "command must be INIT, APPEND, FINALIZE or STATUS",
        )),
        None => one_shot(&call, &state, &fields),
    };
    match result {
        Ok(body) => call.respond(StatusCode::OK).json(body),
        Err(p) => call.fail(p),
    }
}

/// The one-shot upload: the whole image in one request (`MediaUploadRequestOneShot`).
fn one_shot(call: &Call, state: &SimState, fields: &Fields) -> Result<Value, Problem> {
    let category = fields
        .text("media_category")
        .ok_or_else(|| call.invalid("media_category", "", "media_category is required"))?;
    if !matches!(category.as_str(), "tweet_image" | "dm_image" | "subtitles") {
        return Err(call.invalid(
            "media_category",
            &category,
            "media_category must be tweet_image, dm_image or subtitles",
        ));
    }
    let bytes = fields
        .media()
        .map_err(|e| call.invalid("media", "", &e))?
        .ok_or_else(|| call.invalid("media", "", "media is required"))?;
    let media_type = fields
        .text("media_type")
        .unwrap_or_else(|| sniff_image_type(&bytes).to_string());
    let media = open_session(
        call,
        state,
        Some(media_type),
        Some(bytes.len().to_string()),
        Some(category),
    )?;
    let _ = append_segment_bytes(call, state, &media.id, bytes.len() as u64);
    finalize_session(call, state, &media.id).map(|d| json!({"data": d}))
}

/// Records segment 0 of a one-shot upload.
fn append_segment_bytes(call: &Call, state: &SimState, id: &str, len: u64) -> Option<()> {
    let (mut media, created) = load_media(state, &call.account.external_id, id)?;
    media.segments.insert(0, len);
    store_media(state, &call.account.external_id, &media, created);
    Some(())
}

fn sniff_image_type(bytes: &[u8]) -> &'static str {
    if bytes.starts_with(b"\x89PNG") {
        "image/png"
    } else if bytes.starts_with(b"GIF8") {
        "image/gif"
    } else if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        "image/webp"
    } else {
        "image/jpeg"
    }
}

// ---------------------------------------------------------------------------------------------
// Tweets

#[derive(Deserialize)]
struct TweetRequest {
    text: Option<String>,
    media: Option<TweetMedia>,
    reply: Option<TweetReply>,
}

#[derive(Deserialize)]
struct TweetMedia {
    media_ids: Vec<String>,
}

#[derive(Deserialize)]
struct TweetReply {
    in_reply_to_tweet_id: String,
}

fn is_deleted(state: &SimState, id: &str) -> bool {
    state.object(&format!("x-deleted:{id}")).is_some()
}

/// A live (published, not deleted) tweet by id.
fn live_tweet(state: &SimState, id: &str) -> Option<PublishedItem> {
    state
        .published_item(id)
        .filter(|t| t.platform == PLATFORM && !is_deleted(state, id))
}

async fn create_tweet(req: HttpRequest, state: web::Data<SimState>, body: Bytes) -> HttpResponse {
    let call = match admit(&state, &req, Endpoint::CreateTweet).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let raw: Value = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return call.bad("body", "", &format!("The request body is invalid: {e}")),
    };
    if let Some(unknown) = spec::operation("POST", "/2/tweets")
        .and_then(|o| o.body.as_ref())
        .and_then(|shape| shape.unknown_field(&raw))
    {
        return call.fail(unknown_field_problem(&unknown));
    }
    let request: TweetRequest = match serde_json::from_value(raw) {
        Ok(r) => r,
        Err(e) => return call.bad("body", "", &format!("The request body is invalid: {e}")),
    };
    let owner = call.account.external_id.clone();
    let text = request.text.unwrap_or_default();
    if text.chars().count() > MAX_TEXT_CHARS {
        // Content over a limit is the user's, not a protocol error.
        return call.fail(
            call.invalid(
                "text",
                &text,
                &format!("text must be at most {MAX_TEXT_CHARS} characters"),
            )
            .legitimate(),
        );
    }
    let media_ids = request.media.map(|m| m.media_ids).unwrap_or_default();
    let mut media = Vec::new();
    if let Err(p) = check_media(&call, &state, &media_ids, &mut media) {
        return call.fail(p);
    }
    if text.trim().is_empty() && media_ids.is_empty() {
        return call.bad("text", &text, "A post needs text or media");
    }
    let reply_to = request.reply.map(|r| r.in_reply_to_tweet_id);
    if let Some(parent) = &reply_to
        && live_tweet(&state, parent).is_none()
    {
        // An unknown or deleted post: a business answer.
        return call.fail(
            call.invalid(
                "reply.in_reply_to_tweet_id",
                parent,
                "The post you are replying to does not exist or was deleted",
            )
            .legitimate(),
        );
    }
    if !text.is_empty()
        && state
            .published(Some(PLATFORM), Some(&owner))
            .iter()
            .any(|t| t.text.as_deref() == Some(text.as_str()) && !is_deleted(&state, &t.id))
    {
        return call.problem(
            StatusCode::FORBIDDEN,
            generic_problem(
                403,
                "Forbidden",
                "You are not allowed to create a Tweet with duplicate content.",
            ),
        );
    }
    let id = state.next_id().to_string();
    state.record_published(PublishedItem {
        platform: PLATFORM.into(),
        account_id: owner,
        id: id.clone(),
        kind: "tweet".into(),
        text: Some(text.clone()),
        media: media_ids,
        reply_to,
        extra: json!({"media": media}),
        published_at: Utc::now(),
    });
    call.respond(StatusCode::CREATED).json(json!({"data": {
        "id": id,
        "text": text,
        "edit_history_tweet_ids": [id],
    }}))
}

/// Checks `media.media_ids`: 1–4 uploads of the caller, finalized and processed; 4 images or one
/// video or GIF. Fills `described` with what the simulator knows of each.
fn check_media(
    call: &Call,
    state: &SimState,
    ids: &[String],
    described: &mut Vec<Value>,
) -> Result<(), Problem> {
    if ids.is_empty() {
        return Ok(());
    }
    let joined = ids.join(",");
    if ids.len() > 4 {
        return Err(call
            .invalid(
                "media.media_ids",
                &joined,
                "media.media_ids must hold 1 to 4 ids",
            )
            // How many media a post has is the user's content.
            .legitimate());
    }
    let mut single_only = false;
    for id in ids {
        let ready = load_media(state, &call.account.external_id, id).filter(|(media, started)| {
            processing_state(state, &call.account.external_id, media, *started).0 == "succeeded"
        });
        let Some((media, _)) = ready else {
            // Unknown or unfinished media: a business answer.
            return Err(call
                .invalid("media.media_ids", id, "Your media IDs are invalid.")
                .legitimate());
        };
        single_only |= media.async_processing;
        described.push(json!({
            "id": media.id,
            "media_key": media.media_key,
            "media_type": media.media_type,
            "category": media.category,
            "size": media.received(),
            "segments": media.segments.len(),
            "video": media.is_video(),
        }));
    }
    if single_only && ids.len() > 1 {
        return Err(call
            .invalid(
                "media.media_ids",
                &joined,
                "A post may carry 4 images or 1 video or 1 GIF",
            )
            .legitimate());
    }
    Ok(())
}

async fn get_tweet(
    req: HttpRequest,
    state: web::Data<SimState>,
    id: web::Path<String>,
) -> HttpResponse {
    let call = match admit(&state, &req, Endpoint::GetTweet).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    match live_tweet(&state, &id) {
        Some(tweet) => {
            let mut data = json!({
                "id": tweet.id,
                "text": tweet.text,
                "edit_history_tweet_ids": [tweet.id],
                "author_id": tweet.account_id,
                "created_at": tweet.published_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            });
            if !tweet.media.is_empty() {
                let keys: Vec<Value> = tweet.extra["media"]
                    .as_array()
                    .map(|m| m.iter().map(|m| m["media_key"].clone()).collect())
                    .unwrap_or_default();
                data["attachments"] = json!({"media_keys": keys});
            }
            if let Some(parent) = &tweet.reply_to {
                data["referenced_tweets"] = json!([{"type": "replied_to", "id": parent}]);
            }
            call.respond(StatusCode::OK).json(json!({"data": data}))
        }
        // A missing post is a 200 with a partial error, as X answers lookups.
        None => call.respond(StatusCode::OK).json(json!({"errors": [{
            "value": id.as_str(),
            "detail": format!("Could not find tweet with id: [{}].", id.as_str()),
            "title": "Not Found Error",
            "resource_type": "tweet",
            "parameter": "id",
            "resource_id": id.as_str(),
            "type": NOT_FOUND,
        }]})),
    }
}

async fn delete_tweet(
    req: HttpRequest,
    state: web::Data<SimState>,
    id: web::Path<String>,
) -> HttpResponse {
    let call = match admit(&state, &req, Endpoint::DeleteTweet).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let Some(tweet) = live_tweet(&state, &id) else {
        return call
            .respond(StatusCode::OK)
            .json(json!({"data": {"deleted": false}}));
    };
    if tweet.account_id != call.account.external_id {
        return call.problem(
            StatusCode::FORBIDDEN,
            generic_problem(
                403,
                "Forbidden",
                "You are not allowed to delete a Tweet you did not create.",
            ),
        );
    }
    state.put_object(
        &format!("x-deleted:{}", id.as_str()),
        SimObject {
            platform: PLATFORM.into(),
            owner: call.account.external_id.clone(),
            kind: DELETED_KIND.into(),
            data: Value::Null,
            created: Instant::now(),
        },
    );
    call.respond(StatusCode::OK)
        .json(json!({"data": {"deleted": true}}))
}
