//! YouTube Data API v3, mounted at `/youtube` (platform-apis.md §6 and the discovery document):
//!
//! - `POST /upload/youtube/v3/videos?uploadType=resumable&part=snippet,status` with the Video
//!   metadata → 200 and a `Location` session URI on the simulator;
//! - `PUT <session URI>`: the whole file, or chunks with `Content-Range` (308 + `Range` until the
//!   last one), or a `bytes */total` status probe; the completed upload answers the Video;
//! - `GET /youtube/v3/videos?part=..&id=..`: `status.uploadStatus` uploaded → processed (or
//!   failed), following the account's processing mode, with `processingDetails`;
//! - `POST /upload/youtube/v3/thumbnails/set?videoId=..` with image bytes.
//!
//! Errors use Google's JSON error shape. Quota is counted per account per Pacific day
//! (videos.insert 1600, thumbnails.set 50, videos.list 1; 10,000 a day).

use std::time::Instant;

use actix_web::{
    HttpRequest, HttpResponse,
    http::{StatusCode, header},
    web,
};
use bytes::Bytes;
use chrono::Utc;
use serde_json::{Value, json};

use super::{
    insights::{self, SimPost},
    spec::{
        params::{ParamError, check_query},
        youtube::{Api, Method, analytics_api, data_api},
    },
    state::{FaultKind, PublishedItem, Refusal, SimAccount, SimObject, SimState, bearer_token},
};
use crate::util::random_token;

const PLATFORM: &str = "youtube";
const DAILY_UNITS: u64 = 10_000;
const INSERT_COST: u64 = 1_600;
const THUMBNAIL_COST: u64 = 50;
const LIST_COST: u64 = 1;
/// thumbnails.set `maxSize` in the discovery document.
const MAX_THUMBNAIL_BYTES: usize = 2_097_152;
const MAX_TITLE_CHARS: usize = 100;
const MAX_DESCRIPTION_BYTES: usize = 5_000;
const VIDEOS_PATH: &str = "/upload/youtube/v3/videos";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(VIDEOS_PATH, web::post().to(insert_init))
        .route(VIDEOS_PATH, web::put().to(upload_put))
        .route("/youtube/v3/videos", web::get().to(list_videos))
        .route("/youtube/v3/channels", web::get().to(list_channels))
        .route(
            "/youtube/v3/playlistItems",
            web::get().to(list_playlist_items),
        )
        .route(
            "/upload/youtube/v3/thumbnails/set",
            web::post().to(set_thumbnail),
        );
}

/// A `Content-Range` request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentRange {
    /// `bytes first-last/total` (`total` is `None` for `*`).
    Bytes {
        first: u64,
        last: u64,
        total: Option<u64>,
    },
    /// `bytes */total`: asks how much the server has.
    Probe { total: Option<u64> },
}

/// Parses `bytes a-b/total`, `bytes a-b/*` and `bytes */total`.
pub fn parse_content_range(value: &str) -> Option<ContentRange> {
    let rest = value.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    if range.trim() == "*" {
        return Some(ContentRange::Probe { total });
    }
    let (first, last) = range.trim().split_once('-')?;
    Some(ContentRange::Bytes {
        first: first.trim().parse().ok()?,
        last: last.trim().parse().ok()?,
        total,
    })
}

/// A Google JSON error.
struct GError {
    status: StatusCode,
    reason: &'static str,
    domain: &'static str,
    message: String,
    /// The protocol rule the client broke, when this refuses a violation (see
    /// [`super::state::Violation`]); `None` for business answers and injected faults.
    violation: Option<&'static str>,
    /// The parameter at fault (Google's `location`, with `locationType: parameter`).
    location: Option<String>,
}

impl GError {
    fn new(status: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            reason,
            domain: if status == StatusCode::FORBIDDEN && reason == "quotaExceeded" {
                "youtube.quota"
            } else if status.is_client_error() && status != StatusCode::UNAUTHORIZED {
                "youtube.api"
            } else {
                "global"
            },
            message: message.into(),
            violation: None,
            location: None,
        }
    }

    /// A 400: a protocol violation named by its reason unless the site says
    /// [`Self::legitimate`].
    fn bad_request(reason: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, reason, message).violation(reason)
    }

    /// Marks the error as the refusal of a protocol violation of `rule`.
    fn violation(mut self, rule: &'static str) -> Self {
        self.violation = Some(rule);
        self
    }

    /// Unmarks an error: a business answer (content over a limit), not a protocol violation.
    fn legitimate(mut self) -> Self {
        self.violation = None;
        self
    }

    /// A refused YouTube Analytics query: 400 `badRequest`/`required` in the `global` domain
    /// (Analytics errors carry no `youtube.*` domain).
    fn analytics(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            domain: "global",
            ..Self::bad_request(reason, message)
        }
        .violation("report_query")
    }

    fn quota_exceeded() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "quotaExceeded",
            "The request cannot be completed because you have exceeded your \
             <a href=\"/youtube/v3/getting-started#quota\">quota</a>.",
        )
    }

    fn from_refusal(refusal: Refusal) -> Self {
        const INVALID: &str = "Request had invalid authentication credentials. Expected OAuth 2 \
            access token, login cookie or other valid authentication credential. See \
            https://developers.google.com/identity/sign-in/web/devconsole-project.";
        match refusal {
            Refusal::NoToken => Self {
                status: StatusCode::UNAUTHORIZED,
                reason: "required",
                domain: "global",
                message: "Request is missing required authentication credential. Expected \
                    OAuth 2 access token, login cookie or other valid authentication credential."
                    .into(),
                // Calling without a token is the client's mistake; an unknown one may be revoked.
                violation: Some("missing_token"),
                location: None,
            },
            Refusal::UnknownToken => Self::new(StatusCode::UNAUTHORIZED, "authError", INVALID),
            Refusal::Fault(FaultKind::TokenExpired) => Self::new(
                StatusCode::UNAUTHORIZED,
                "authError",
                format!("{INVALID} The access token expired."),
            ),
            Refusal::Fault(FaultKind::TokenRevoked) => Self::new(
                StatusCode::UNAUTHORIZED,
                "authError",
                "Token has been expired or revoked.",
            ),
            Refusal::Fault(FaultKind::Permission) => Self {
                status: StatusCode::FORBIDDEN,
                reason: "insufficientPermissions",
                domain: "global",
                message: "Request had insufficient authentication scopes.".into(),
                violation: None,
                location: None,
            },
            Refusal::Fault(FaultKind::RateLimit) => Self::quota_exceeded(),
            Refusal::Fault(FaultKind::ServerError) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "backendError",
                "Backend Error",
            ),
        }
    }

    fn status_text(&self) -> &'static str {
        match self.status.as_u16() {
            400 => "INVALID_ARGUMENT",
            401 => "UNAUTHENTICATED",
            403 => "PERMISSION_DENIED",
            404 => "NOT_FOUND",
            429 => "RESOURCE_EXHAUSTED",
            503 => "UNAVAILABLE",
            _ => "INTERNAL",
        }
    }

    fn into_response(self) -> HttpResponse {
        let mut item =
            json!({"message": self.message, "domain": self.domain, "reason": self.reason});
        if let Some(location) = &self.location {
            item["location"] = json!(location);
            item["locationType"] = json!("parameter");
        }
        let response = HttpResponse::build(self.status).json(json!({
            "error": {
                "code": self.status.as_u16(),
                "message": self.message,
                "errors": [item],
                "status": self.status_text(),
            }
        }));
        match self.violation {
            Some(rule) => super::state::violation(response, PLATFORM, rule, self.message),
            None => response,
        }
    }
}

fn query_param(req: &HttpRequest, name: &str) -> Option<String> {
    url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn header_str<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

async fn admit(state: &SimState, req: &HttpRequest) -> Result<std::sync::Arc<SimAccount>, GError> {
    state
        .admit(&[PLATFORM], bearer_token(req).as_deref(), req.path())
        .await
        .map_err(GError::from_refusal)
}

/// The one check every YouTube Data API and Analytics call passes after authentication, all of
/// it from the discovery documents (`super::spec::youtube`): the token was granted one of the
/// method's `scopes`; every query parameter is the method's or a global one, of its type, in its
/// enum and bounds, given once unless `repeated`, and every required one is there; each `part`
/// is a top-level property of the method's resource. Returns the account.
async fn admit_checked(
    state: &SimState,
    req: &HttpRequest,
    api: &'static Api,
    method_id: &str,
) -> Result<std::sync::Arc<SimAccount>, GError> {
    let account = admit(state, req).await?;
    let Some(method) = api.method(method_id) else {
        // A handler naming a method the document lacks is a simulator bug, not the client's.
        return Err(GError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "backendError",
            format!("no discovery entry for {method_id}"),
        ));
    };
    require_scope(state, req, method)?;
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(req.query_string().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let analytics = method.id.starts_with("youtubeAnalytics.");
    check_query(&method.params, &pairs).map_err(|e| param_error(e, analytics))?;
    if method.params.contains_key("part") {
        // Insert takes the parts of the resource it sends; a list, those of what it answers.
        let resource = method
            .request
            .as_deref()
            .or(method.response.as_deref())
            .unwrap_or_default();
        let parts = api.parts(resource);
        let given = pairs
            .iter()
            .filter(|(k, _)| k == "part")
            .flat_map(|(_, v)| v.split(','))
            .map(str::trim);
        for part in given {
            if !parts.iter().any(|p| p == part) {
                return Err(GError {
                    status: StatusCode::BAD_REQUEST,
                    reason: "unknownPart",
                    domain: "youtube.part",
                    message: format!("'{part}'"),
                    violation: Some("invalid_enum"),
                    location: Some("part".into()),
                });
            }
        }
    }
    Ok(account)
}

/// Refuses a token granted none of the method's scopes (Google: any one of them suffices) the
/// way Google does: 403 `insufficientPermissions`.
fn require_scope(state: &SimState, req: &HttpRequest, method: &Method) -> Result<(), GError> {
    let token = bearer_token(req).unwrap_or_default();
    if method.scopes.is_empty() || method.scopes.iter().any(|s| state.has_scope(&token, s)) {
        return Ok(());
    }
    Err(GError {
        status: StatusCode::FORBIDDEN,
        reason: "insufficientPermissions",
        domain: "global",
        message: "Request had insufficient authentication scopes.".into(),
        violation: Some("missing_scope"),
        location: None,
    })
}

/// Google's answer to a query that does not fit the method's parameters.
fn param_error(error: ParamError, analytics: bool) -> GError {
    let (reason, message) = match &error {
        ParamError::Unknown { name, .. } => (
            "badRequest",
            format!(
                "Invalid JSON payload received. Unknown name \"{name}\": Cannot bind query \
                 parameter. Field '{name}' could not be found in request message."
            ),
        ),
        // The Data API and Analytics word it differently.
        ParamError::Missing { name } if analytics => (
            "required",
            format!("Required value for parameter {name} is missing."),
        ),
        ParamError::Missing { name } => ("required", format!("Required parameter: {name}")),
        ParamError::BadType { name, value, kind } => (
            "invalidParameter",
            format!(
                "Invalid value '{value}' for parameter {name}: expected {}.",
                kind.name()
            ),
        ),
        ParamError::BadEnum {
            name,
            value,
            allowed,
        } => (
            "invalidParameter",
            format!(
                "Invalid value '{value}' for parameter {name}. Allowed values: [{}]",
                allowed.join(", ")
            ),
        ),
        ParamError::OutOfRange {
            value,
            minimum,
            maximum,
            ..
        } => (
            "invalidParameter",
            format!(
                "Invalid value '{value}'. Values must be within the range: [{}, {}]",
                minimum.map(|n| n.to_string()).unwrap_or_default(),
                maximum.map(|n| n.to_string()).unwrap_or_default()
            ),
        ),
        ParamError::Repeated { name } => (
            "badRequest",
            format!("Parameter {name} takes one value, but several were given."),
        ),
    };
    GError {
        status: StatusCode::BAD_REQUEST,
        reason,
        domain: "global",
        message,
        violation: Some(error.rule()),
        location: Some(error.name().to_string()),
    }
}

/// Google's answer to a request body with a property its schema does not have.
fn unknown_field_error(path: &str) -> GError {
    let (parent, name) = match path.rsplit_once('.') {
        Some((parent, name)) => (format!("resource.{parent}"), name),
        None => ("resource".to_string(), path),
    };
    GError {
        status: StatusCode::BAD_REQUEST,
        reason: "badRequest",
        domain: "global",
        message: format!(
            "Invalid JSON payload received. Unknown name \"{name}\" at '{parent}': Cannot find field."
        ),
        violation: Some("unknown_field"),
        location: None,
    }
}

/// Charges `cost` units to the account's quota of the current Pacific day (YouTube resets at
/// midnight Pacific time); refuses when the day's units would go over.
fn charge(state: &SimState, owner: &str, cost: u64) -> Result<(), GError> {
    let day = Utc::now()
        .with_timezone(&chrono_tz::America::Los_Angeles)
        .date_naive();
    let key = format!("youtube-quota:{owner}:{day}");
    let mut entry = state.objects.entry(key).or_insert_with(|| SimObject {
        platform: PLATFORM.into(),
        owner: owner.into(),
        kind: "quota".into(),
        data: json!({"units": 0}),
        created: Instant::now(),
    });
    let used = entry.data["units"].as_u64().unwrap_or(0);
    if used + cost > DAILY_UNITS {
        return Err(GError::quota_exceeded());
    }
    entry.data["units"] = json!(used + cost);
    Ok(())
}

fn session_key(upload_id: &str) -> String {
    format!("youtube-upload:{upload_id}")
}

fn video_key(video_id: &str) -> String {
    format!("youtube-video:{video_id}")
}

async fn insert_init(req: HttpRequest, state: web::Data<SimState>, body: Bytes) -> HttpResponse {
    match init_session(&req, &state, &body).await {
        Ok(location) => HttpResponse::Ok()
            .insert_header((header::LOCATION, location))
            .finish(),
        Err(e) => e.into_response(),
    }
}

async fn init_session(req: &HttpRequest, state: &SimState, body: &[u8]) -> Result<String, GError> {
    let account = admit_checked(state, req, data_api(), "youtube.videos.insert").await?;
    if query_param(req, "uploadType").as_deref() != Some("resumable") {
        return Err(GError::bad_request(
            "badRequest",
            "This simulator takes videos.insert as a resumable upload (uploadType=resumable).",
        ));
    }
    let Some(part) = query_param(req, "part").filter(|p| !p.is_empty()) else {
        return Err(GError::bad_request(
            "missingRequiredParameter",
            "No filter selected. Expected one of: part",
        ));
    };
    // Invalid calls still cost quota; charge before judging the metadata.
    charge(state, &account.external_id, INSERT_COST)?;
    let metadata: Value = if body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(body).map_err(|e| {
            GError::bad_request("parseError", format!("Failed to parse the metadata: {e}"))
        })?
    };
    if let Some(unknown) = data_api().body("Video").unknown_field(&metadata) {
        return Err(unknown_field_error(&unknown));
    }
    let title = metadata["snippet"]["title"].as_str().unwrap_or_default();
    if title.trim().is_empty() || title.chars().count() > MAX_TITLE_CHARS {
        return Err(GError::bad_request(
            "invalidTitle",
            "The request metadata specifies an invalid or empty video title.",
        )
        // The title is the user's content.
        .legitimate());
    }
    let description = metadata["snippet"]["description"]
        .as_str()
        .unwrap_or_default();
    if description.len() > MAX_DESCRIPTION_BYTES {
        return Err(GError::bad_request(
            "invalidDescription",
            "The request metadata specifies an invalid video description.",
        )
        .legitimate());
    }
    let privacy = metadata["status"]["privacyStatus"]
        .as_str()
        .unwrap_or("public");
    if !matches!(privacy, "public" | "private" | "unlisted") {
        return Err(GError::bad_request(
            "invalidVideoMetadata",
            format!("privacyStatus {privacy} is not private, public or unlisted."),
        ));
    }
    let declared = match header_str(req, "x-upload-content-length") {
        Some(v) => Some(v.trim().parse::<u64>().map_err(|_| {
            GError::bad_request("badRequest", "X-Upload-Content-Length is not a number.")
        })?),
        None => None,
    };
    let content_type = header_str(req, "x-upload-content-type").unwrap_or("video/*");
    if !(content_type.starts_with("video/") || content_type == "application/octet-stream") {
        return Err(GError::bad_request(
            "badContent",
            format!(
                "Media type '{content_type}' is not supported. Valid media types: [video/*, application/octet-stream]"
            ),
        ));
    }
    let upload_id = format!("AUC{}", random_token(36));
    let info = req.connection_info();
    let prefix = req.path().strip_suffix(VIDEOS_PATH).unwrap_or("/youtube");
    let location = format!(
        "{}://{}{prefix}{VIDEOS_PATH}?uploadType=resumable&part={part}&upload_id={upload_id}",
        info.scheme(),
        info.host()
    );
    state.put_object(
        &session_key(&upload_id),
        SimObject {
            platform: PLATFORM.into(),
            owner: account.external_id.clone(),
            kind: "upload_session".into(),
            data: json!({
                "title": title,
                "description": description,
                "tags": metadata["snippet"]["tags"],
                "category_id": metadata["snippet"]["categoryId"].as_str().unwrap_or("22"),
                "privacy_status": privacy,
                "declared_length": declared,
                "content_type": content_type,
                "received": 0,
                "video_id": null,
                "channel_title": account.name,
            }),
            created: Instant::now(),
        },
    );
    Ok(location)
}

/// What a session PUT leads to.
enum PutOutcome {
    /// 308 Resume Incomplete with the bytes received so far.
    Incomplete(u64),
    /// The upload completed (now or earlier): the video.
    Complete { video_id: String, created: bool },
}

async fn upload_put(req: HttpRequest, state: web::Data<SimState>, body: Bytes) -> HttpResponse {
    match put_bytes(&req, &state, &body).await {
        Ok(PutOutcome::Incomplete(received)) => {
            let mut response = HttpResponse::build(StatusCode::PERMANENT_REDIRECT);
            if received > 0 {
                response.insert_header((header::RANGE, format!("bytes=0-{}", received - 1)));
            }
            response.finish()
        }
        Ok(PutOutcome::Complete { video_id, created }) => {
            match state.object(&video_key(&video_id)) {
                Some(video) => {
                    let resource = video_resource(&state, &video_id, &video, "snippet,status");
                    if created {
                        HttpResponse::Created().json(resource)
                    } else {
                        HttpResponse::Ok().json(resource)
                    }
                }
                None => GError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "backendError",
                    "Backend Error",
                )
                .into_response(),
            }
        }
        Err(e) => e.into_response(),
    }
}

async fn put_bytes(req: &HttpRequest, state: &SimState, body: &[u8]) -> Result<PutOutcome, GError> {
    let not_found = || {
        GError::new(
            StatusCode::NOT_FOUND,
            "notFound",
            "The upload session does not exist or has expired.",
        )
    };
    let upload_id = query_param(req, "upload_id").ok_or_else(not_found)?;
    let key = session_key(&upload_id);
    let session = state
        .object(&key)
        .filter(|o| o.platform == PLATFORM)
        .ok_or_else(not_found)?;
    // The session URI is the credential; a token is optional, faults still apply to the owner.
    let token = bearer_token(req).or_else(|| {
        state
            .account(PLATFORM, &session.owner)
            .map(|a| a.access_token)
    });
    state
        .admit(&[PLATFORM], token.as_deref(), req.path())
        .await
        .map_err(GError::from_refusal)?;
    let range = match header_str(req, "content-range") {
        Some(v) => Some(parse_content_range(v).ok_or_else(|| {
            GError::bad_request("badRequest", format!("Malformed Content-Range '{v}'."))
        })?),
        None => None,
    };
    // A whole-file PUT must say its length up front (no chunked transfer encoding), which is
    // also how our adapter streams a video without buffering it.
    if range.is_none() && header_str(req, "content-length").is_none() {
        return Err(GError::new(
            StatusCode::LENGTH_REQUIRED,
            "required",
            "A Content-Length header is required to upload the file.",
        )
        .violation("content_length_required"));
    }
    let (completed, received) = {
        let Some(mut entry) = state.objects.get_mut(&key) else {
            return Err(not_found());
        };
        let data = &mut entry.data;
        if let Some(video_id) = data["video_id"].as_str() {
            return Ok(PutOutcome::Complete {
                video_id: video_id.to_string(),
                created: false,
            });
        }
        let received = data["received"].as_u64().unwrap_or(0);
        let declared = data["declared_length"].as_u64();
        let len = body.len() as u64;
        let (first, total) = match range {
            Some(ContentRange::Probe { total }) => {
                if let (Some(t), Some(d)) = (total, declared)
                    && t != d
                {
                    return Err(GError::bad_request(
                        "badRequest",
                        format!("Content-Range total {t} differs from the declared {d} bytes."),
                    ));
                }
                return Ok(PutOutcome::Incomplete(received));
            }
            Some(ContentRange::Bytes { first, last, total }) => {
                if last < first || last - first + 1 != len {
                    return Err(GError::bad_request(
                        "badRequest",
                        format!(
                            "Content-Range {first}-{last} does not match the {len} bytes sent."
                        ),
                    ));
                }
                (first, total.or(declared))
            }
            None => (0, Some(len).filter(|_| declared.is_none()).or(declared)),
        };
        if first != received {
            return Err(GError::bad_request(
                "badRequest",
                format!("Expected the upload to continue at byte {received}, got {first}."),
            ));
        }
        if let (Some(t), Some(d)) = (total, declared)
            && t != d
        {
            return Err(GError::bad_request(
                "badRequest",
                format!("The upload is {t} bytes, but {d} were declared."),
            ));
        }
        let now = received + len;
        if total.is_some_and(|t| now > t) {
            return Err(GError::bad_request(
                "badRequest",
                "More bytes were sent than the upload declared.",
            ));
        }
        let complete = total.is_some_and(|t| now == t);
        if range.is_none() && !complete {
            // A single-request upload must carry the whole file.
            return Err(GError::bad_request(
                "badRequest",
                format!(
                    "The body has {now} bytes but {} were declared.",
                    total.unwrap_or(0)
                ),
            ));
        }
        data["received"] = json!(now);
        if complete {
            let video_id = random_token(8);
            data["video_id"] = json!(video_id);
            (Some(video_id), now)
        } else {
            (None, now)
        }
    };
    let Some(video_id) = completed else {
        return Ok(PutOutcome::Incomplete(received));
    };
    create_video(state, &session, &video_id, received);
    Ok(PutOutcome::Complete {
        video_id,
        created: true,
    })
}

/// Makes the video of a completed upload and records it as published.
fn create_video(state: &SimState, session: &SimObject, video_id: &str, bytes: u64) {
    let data = &session.data;
    let published_at = Utc::now();
    state.put_object(
        &video_key(video_id),
        SimObject {
            platform: PLATFORM.into(),
            owner: session.owner.clone(),
            kind: "video".into(),
            data: json!({
                "title": data["title"],
                "description": data["description"],
                "tags": data["tags"],
                "category_id": data["category_id"],
                "privacy_status": data["privacy_status"],
                "channel_title": data["channel_title"],
                "published_at": published_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "bytes": bytes,
                "thumbnail": null,
            }),
            created: Instant::now(),
        },
    );
    state.record_published(PublishedItem {
        platform: PLATFORM.into(),
        account_id: session.owner.clone(),
        id: video_id.to_string(),
        kind: "video".into(),
        text: data["description"].as_str().map(str::to_string),
        media: Vec::new(),
        reply_to: None,
        extra: json!({
            "title": data["title"],
            "privacy_status": data["privacy_status"],
            "bytes": bytes,
            "content_type": data["content_type"],
            "thumbnail": null,
        }),
        published_at,
    });
}

/// The Video resource with the requested parts.
fn video_resource(state: &SimState, video_id: &str, video: &SimObject, parts: &str) -> Value {
    let data = &video.data;
    let wants = |p: &str| parts.split(',').any(|x| x.trim() == p);
    let outcome = state.processing_outcome(PLATFORM, &video.owner, video.created);
    let mut resource = json!({
        "kind": "youtube#video",
        "etag": random_token(12),
        "id": video_id,
    });
    if wants("snippet") {
        let thumb = |name: &str, w: u32, h: u32| json!({"url": format!("https://i.ytimg.com/vi/{video_id}/{name}.jpg"), "width": w, "height": h});
        resource["snippet"] = json!({
            "publishedAt": data["published_at"],
            "channelId": video.owner,
            "title": data["title"],
            "description": data["description"],
            "thumbnails": {
                "default": thumb("default", 120, 90),
                "medium": thumb("mqdefault", 320, 180),
                "high": thumb("hqdefault", 480, 360),
            },
            "channelTitle": data["channel_title"],
            "tags": data["tags"],
            "categoryId": data["category_id"],
            "liveBroadcastContent": "none",
        });
    }
    if wants("status") {
        let mut status = json!({
            "uploadStatus": match outcome {
                None => "uploaded",
                Some(true) => "processed",
                Some(false) => "failed",
            },
            "privacyStatus": data["privacy_status"],
            "license": "youtube",
            "embeddable": true,
            "publicStatsViewable": true,
        });
        if outcome == Some(false) {
            status["failureReason"] = json!("conversion");
        }
        resource["status"] = status;
    }
    if wants("statistics") {
        resource["statistics"] = video_statistics(state, &video.owner, video_id);
    }
    if wants("processingDetails") {
        resource["processingDetails"] = match outcome {
            None => json!({
                "processingStatus": "processing",
                "processingProgress": {"partsTotal": 1000, "partsProcessed": 0, "timeLeftMs": 1000},
            }),
            Some(true) => json!({"processingStatus": "succeeded"}),
            Some(false) => json!({
                "processingStatus": "failed",
                "processingFailureReason": "transcodeFailed",
            }),
        };
    }
    resource
}

async fn list_videos(req: HttpRequest, state: web::Data<SimState>) -> HttpResponse {
    let result = async {
        let account = admit_checked(&state, &req, data_api(), "youtube.videos.list").await?;
        let part = query_param(&req, "part")
            .filter(|p| !p.is_empty())
            .ok_or_else(|| {
                GError::bad_request(
                    "missingRequiredParameter",
                    "No filter selected. Expected one of: part",
                )
            })?;
        charge(&state, &account.external_id, LIST_COST)?;
        let ids = query_param(&req, "id").unwrap_or_default();
        let items: Vec<Value> = ids
            .split(',')
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .filter_map(|id| match state.object(&video_key(id)) {
                Some(video) => Some(video_resource(&state, id, &video, &part)),
                // Videos uploaded before the simulator started (seeded history).
                None => insights::post(&state, &account, id)
                    .map(|post| seeded_video_resource(&state, &account, &post, &part)),
            })
            .collect();
        Ok::<_, GError>(json!({
            "kind": "youtube#videoListResponse",
            "etag": random_token(12),
            "items": items,
            "pageInfo": {"totalResults": items.len(), "resultsPerPage": items.len()},
        }))
    }
    .await;
    match result {
        Ok(body) => HttpResponse::Ok().json(body),
        Err(e) => e.into_response(),
    }
}

async fn set_thumbnail(req: HttpRequest, state: web::Data<SimState>, body: Bytes) -> HttpResponse {
    let result = async {
        let account = admit_checked(&state, &req, data_api(), "youtube.thumbnails.set").await?;
        let video_id = query_param(&req, "videoId").ok_or_else(|| {
            GError::bad_request(
                "missingRequiredParameter",
                "No filter selected. Expected one of: videoId",
            )
        })?;
        charge(&state, &account.external_id, THUMBNAIL_COST)?;
        let Some(video) = state.object(&video_key(&video_id)) else {
            return Err(GError::new(
                StatusCode::NOT_FOUND,
                "videoNotFound",
                format!("The video identified by the videoId parameter {video_id} could not be found."),
            ));
        };
        if video.owner != account.external_id {
            return Err(GError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "The authenticated user doesn't have permissions to upload and set custom video thumbnails.",
            ));
        }
        if body.is_empty() {
            return Err(GError::bad_request(
                "mediaBodyRequired",
                "The request does not include the image content.",
            ));
        }
        if body.len() > MAX_THUMBNAIL_BYTES {
            return Err(GError::bad_request(
                "invalidImage",
                format!(
                    "The thumbnail is {} bytes; the maximum is {MAX_THUMBNAIL_BYTES}.",
                    body.len()
                ),
            )
            // The image is the user's content.
            .legitimate());
        }
        let content_type = header_str(&req, "content-type")
            .unwrap_or_default()
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if !matches!(
            content_type.as_str(),
            "image/jpeg" | "image/png" | "application/octet-stream"
        ) {
            return Err(GError::bad_request(
                "invalidImage",
                format!("The provided image content is invalid: media type '{content_type}' is not image/jpeg or image/png."),
            )
            // The image is the user's content.
            .legitimate());
        }
        let thumbnail = json!({"content_type": content_type, "bytes": body.len()});
        if let Some(mut entry) = state.objects.get_mut(&video_key(&video_id)) {
            entry.data["thumbnail"] = thumbnail.clone();
        }
        state.update_published(&video_id, |item| item.extra["thumbnail"] = thumbnail);
        let thumb = |name: &str, w: u32, h: u32| {
            json!({"url": format!("https://i.ytimg.com/vi/{video_id}/{name}.jpg"), "width": w, "height": h})
        };
        Ok(json!({
            "kind": "youtube#thumbnailSetResponse",
            "etag": random_token(12),
            "items": [{
                "default": thumb("default", 120, 90),
                "medium": thumb("mqdefault", 320, 180),
                "high": thumb("hqdefault", 480, 360),
                "standard": thumb("sddefault", 640, 480),
                "maxres": thumb("maxresdefault", 1280, 720),
            }],
        }))
    }
    .await;
    match result {
        Ok(body) => HttpResponse::Ok().json(body),
        Err(e) => e.into_response(),
    }
}

// ---------------------------------------------------------------------------------------------
// Channel, uploads and statistics (platform-apis.md §6.5), and YouTube Analytics reports (§6.6).

/// `statistics` of a video: counts as strings, as the Data API sends uint64 values.
fn video_statistics(state: &SimState, owner: &str, video_id: &str) -> Value {
    let Some(account) = state.account(PLATFORM, owner) else {
        return json!({});
    };
    let count = |metric: &str| insights::lifetime(&account, metric, video_id).to_string();
    json!({
        "viewCount": count("views"),
        "likeCount": count("likes"),
        "dislikeCount": "0",
        "favoriteCount": "0",
        "commentCount": count("comments"),
    })
}

fn thumbnails(video_id: &str) -> Value {
    let thumb = |name: &str, w: u32, h: u32| json!({"url": format!("https://i.ytimg.com/vi/{video_id}/{name}.jpg"), "width": w, "height": h});
    json!({
        "default": thumb("default", 120, 90),
        "medium": thumb("mqdefault", 320, 180),
        "high": thumb("hqdefault", 480, 360),
    })
}

fn seeded_video_resource(
    state: &SimState,
    account: &SimAccount,
    post: &SimPost,
    parts: &str,
) -> Value {
    let wants = |p: &str| parts.split(',').any(|x| x.trim() == p);
    let mut resource = json!({"kind": "youtube#video", "etag": random_token(12), "id": post.id});
    if wants("snippet") {
        resource["snippet"] = json!({
            "publishedAt": post.created.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "channelId": account.external_id,
            "title": post.text,
            "description": "",
            "thumbnails": thumbnails(&post.id),
            "channelTitle": account.name,
            "liveBroadcastContent": "none",
        });
    }
    if wants("status") {
        resource["status"] = json!({"uploadStatus": "processed", "privacyStatus": "public", "license": "youtube", "embeddable": true, "publicStatsViewable": true});
    }
    if wants("statistics") {
        resource["statistics"] = video_statistics(state, &account.external_id, &post.id);
    }
    resource
}

fn uploads_playlist(account: &SimAccount) -> String {
    format!("UU{}", account.external_id)
}

/// Keeps only the parts a list asked for (Google answers no others): `kind`, `etag` and `id`
/// always come.
fn only_parts(mut resource: Value, part: &str) -> Value {
    if let Some(object) = resource.as_object_mut() {
        object.retain(|name, _| {
            matches!(name.as_str(), "kind" | "etag" | "id")
                || part.split(',').any(|p| p.trim() == name)
        });
    }
    resource
}

async fn list_channels(req: HttpRequest, state: web::Data<SimState>) -> HttpResponse {
    let result = async {
        let account = admit_checked(&state, &req, data_api(), "youtube.channels.list").await?;
        if query_param(&req, "mine").as_deref() != Some("true") && query_param(&req, "id").is_none() {
            return Err(GError::bad_request(
                "missingRequiredParameter",
                "No filter selected. Expected one of: mine, id, forHandle, forUsername, managedByMe, categoryId",
            ));
        }
        charge(&state, &account.external_id, LIST_COST)?;
        let part = query_param(&req, "part").unwrap_or_default();
        let videos = insights::posts(&state, &account).len();
        let views: u64 = insights::posts(&state, &account)
            .iter()
            .map(|p| insights::lifetime(&account, "views", &p.id))
            .sum();
        Ok::<_, GError>(json!({
            "kind": "youtube#channelListResponse",
            "etag": random_token(12),
            "pageInfo": {"totalResults": 1, "resultsPerPage": 5},
            "items": [only_parts(json!({
                "kind": "youtube#channel",
                "etag": random_token(12),
                "id": account.external_id,
                "snippet": {"title": account.name, "description": "", "customUrl": format!("@{}", account.username), "thumbnails": thumbnails(&account.external_id)},
                "contentDetails": {"relatedPlaylists": {"likes": "", "uploads": uploads_playlist(&account)}},
                "statistics": {
                    "viewCount": views.to_string(),
                    "subscriberCount": insights::lifetime(&account, "subscribers", "").to_string(),
                    "hiddenSubscriberCount": false,
                    "videoCount": videos.to_string(),
                },
            }), &part)],
        }))
    }
    .await;
    match result {
        Ok(body) => HttpResponse::Ok().json(body),
        Err(e) => e.into_response(),
    }
}

async fn list_playlist_items(req: HttpRequest, state: web::Data<SimState>) -> HttpResponse {
    let result = async {
        let account =
            admit_checked(&state, &req, data_api(), "youtube.playlistItems.list").await?;
        let playlist = query_param(&req, "playlistId").ok_or_else(|| {
            GError::bad_request("missingRequiredParameter", "No filter selected. Expected one of: id, playlistId")
        })?;
        charge(&state, &account.external_id, LIST_COST)?;
        if playlist != uploads_playlist(&account) {
            return Err(GError::new(
                StatusCode::NOT_FOUND,
                "playlistNotFound",
                "The playlist identified with the request's <code>playlistId</code> parameter cannot be found.",
            ));
        }
        let max = query_param(&req, "maxResults")
            .and_then(|m| m.parse::<usize>().ok())
            .unwrap_or(5)
            .min(50);
        let start = query_param(&req, "pageToken")
            .and_then(|t| t.strip_prefix("CA").and_then(|n| n.parse::<usize>().ok()))
            .unwrap_or(0);
        let part = query_param(&req, "part").unwrap_or_default();
        let posts = insights::posts(&state, &account);
        let items: Vec<Value> = posts
            .iter()
            .enumerate()
            .skip(start)
            .take(max)
            .map(|(position, post)| {
                let published = post.created.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                let item = json!({
                    "kind": "youtube#playlistItem",
                    "etag": random_token(12),
                    "id": random_token(16),
                    "snippet": {
                        "publishedAt": published,
                        "channelId": account.external_id,
                        "title": post.text,
                        "description": "",
                        "thumbnails": thumbnails(&post.id),
                        "channelTitle": account.name,
                        "playlistId": playlist,
                        "position": position,
                        "resourceId": {"kind": "youtube#video", "videoId": post.id},
                    },
                    "contentDetails": {"videoId": post.id, "videoPublishedAt": published},
                });
                only_parts(item, &part)
            })
            .collect();
        let mut body = json!({
            "kind": "youtube#playlistItemListResponse",
            "etag": random_token(12),
            "items": items,
            "pageInfo": {"totalResults": posts.len(), "resultsPerPage": max},
        });
        if start + max < posts.len() {
            body["nextPageToken"] = json!(format!("CA{}", start + max));
        }
        Ok::<_, GError>(body)
    }
    .await;
    match result {
        Ok(body) => HttpResponse::Ok().json(body),
        Err(e) => e.into_response(),
    }
}

/// The most rows the "top videos" report (`dimensions=video`) answers in one call.
const TOP_VIDEOS_MAX_RESULTS: u32 = 200;
/// What Google answers for a combination of dimensions, metrics, filters and sort that is not
/// one of the documented reports.
const UNSUPPORTED_QUERY: &str = "The query is not supported. Check the documentation at \
    https://developers.google.com/youtube/analytics/v2/available_reports for a list of \
    supported queries.";

/// A `reports.query` request that passed [`report_query`].
struct ReportQuery {
    start: chrono::NaiveDate,
    end: chrono::NaiveDate,
    metrics: Vec<String>,
    dimension: Option<String>,
    /// The ids of a `video==a,b` filter (empty: the whole channel).
    videos: Vec<String>,
    /// A descending sort on this metric (the only sort the top-videos report allows).
    sort_desc: Option<String>,
    max_results: Option<u32>,
}

/// The rules the simulator applies to a `reports.query` request beyond the discovery document's
/// (checked by [`admit_checked`] before): the date and id grammar, the metrics this channel has, and the "top videos" report's own requirements
/// (`dimensions=video` only with `maxResults` ≤ 200 and a descending `sort` on a requested
/// metric, per the Analytics "channel reports" and sample-requests guides).
fn report_query(
    req: &HttpRequest,
    state: &SimState,
    account: &SimAccount,
) -> Result<ReportQuery, GError> {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(req.query_string().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let param = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    let ids = param("ids").unwrap_or_default();
    if ids != "channel==MINE" && ids != format!("channel=={}", account.external_id) {
        return Err(GError::new(StatusCode::FORBIDDEN, "forbidden", "Forbidden").violation("ids"));
    }
    let date = |name: &str| -> Result<chrono::NaiveDate, GError> {
        let raw = param(name).unwrap_or_default();
        chrono::NaiveDate::parse_from_str(&raw, "%Y-%m-%d").map_err(|_| {
            GError::analytics(
                "badRequest",
                format!(
                    "Invalid value '{raw}'. Values must match the following regular \
                     expression: '[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}'"
                ),
            )
        })
    };
    let (start, end) = (date("startDate")?, date("endDate")?);
    if start > end {
        return Err(GError::analytics(
            "badRequest",
            "The query is not supported. startDate must be before endDate.",
        ));
    }
    let metrics = insights::metric_list(param("metrics").as_deref());
    if let Some(bad) = insights::refused(state, account, &metrics, &insights::YOUTUBE_METRICS) {
        let error = GError::analytics(
            "badRequest",
            format!("Unknown identifier ({bad}) given in field parameters.metrics."),
        );
        // An injected failure (`fail_metrics`) is a fault, not the client's violation.
        let injected = state
            .failing_metrics(&account.platform, &account.external_id)
            .iter()
            .any(|m| m == bad);
        return Err(if injected { error.legitimate() } else { error });
    }
    let positive = |name: &str| -> Result<Option<u32>, GError> {
        param(name)
            .map(|raw| {
                raw.parse::<u32>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    GError::analytics(
                        "badRequest",
                        format!("Invalid value '{raw}' for parameter {name}: must be at least 1."),
                    )
                })
            })
            .transpose()
    };
    let max_results = positive("maxResults")?;
    positive("startIndex")?;
    let dimension = param("dimensions");
    // Only descending sorts on a requested metric are modelled (what the top-videos report
    // takes); anything else in `sort` is not a report this simulator serves.
    let sort_desc = match param("sort").as_deref() {
        None => None,
        // Ascending by day is the order daily rows come in anyway.
        Some("day") if dimension.as_deref() == Some("day") => None,
        Some(raw) => match raw.strip_prefix('-') {
            Some(metric) if metrics.iter().any(|m| m == metric) => Some(metric.to_string()),
            _ => return Err(GError::analytics("badRequest", UNSUPPORTED_QUERY)),
        },
    };
    match dimension.as_deref() {
        None | Some("day") => {}
        Some("video") => {
            let top_videos = matches!(max_results, Some(n) if n <= TOP_VIDEOS_MAX_RESULTS)
                && sort_desc.is_some();
            if !top_videos {
                return Err(GError::analytics("badRequest", UNSUPPORTED_QUERY));
            }
        }
        Some(_) => return Err(GError::analytics("badRequest", UNSUPPORTED_QUERY)),
    }
    // `filters=video==a,b`: the numbers of those videos rather than the channel's.
    let videos = param("filters")
        .and_then(|f| f.strip_prefix("video==").map(str::to_string))
        .map(|ids| {
            ids.split(',')
                .filter(|id| !id.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok(ReportQuery {
        start,
        end,
        metrics,
        dimension,
        videos,
        sort_desc,
        max_results,
    })
}

/// `GET /youtubeanalytics/v2/reports` (mounted by the simulator beside the Data API).
pub async fn analytics_reports(req: HttpRequest, state: web::Data<SimState>) -> HttpResponse {
    let result = async {
        let account = admit_checked(
            &state,
            &req,
            analytics_api(),
            "youtubeAnalytics.reports.query",
        )
        .await?;
        let query = report_query(&req, &state, &account)?;
        let days: Vec<chrono::NaiveDate> = query
            .start
            .iter_days()
            .take_while(|d| *d <= query.end)
            .collect();
        // A metric of `object` (a video id, or "" for the channel) over the range; an average
        // stays an average.
        let over_range = |metric: &str, object: &str| -> u64 {
            let sum: u64 = days
                .iter()
                .map(|d| {
                    insights::value(
                        &account.external_id,
                        metric,
                        object,
                        Some(*d),
                        insights::scale(metric),
                    )
                })
                .sum();
            if metric == "averageViewDuration" {
                sum / days.len().max(1) as u64
            } else {
                sum
            }
        };
        let object = query.videos.join(",");
        let mut headers = Vec::new();
        let mut rows: Vec<Vec<Value>> = match query.dimension.as_deref() {
            Some("day") => {
                headers
                    .push(json!({"name": "day", "columnType": "DIMENSION", "dataType": "STRING"}));
                days.iter()
                    .map(|d| {
                        let mut row = vec![json!(d.to_string())];
                        row.extend(query.metrics.iter().map(|m| {
                            json!(insights::value(
                                &account.external_id,
                                m,
                                &object,
                                Some(*d),
                                insights::scale(m)
                            ))
                        }));
                        row
                    })
                    .collect()
            }
            // One row per video: those of the filter, or the channel's own.
            Some("video") => {
                headers.push(
                    json!({"name": "video", "columnType": "DIMENSION", "dataType": "STRING"}),
                );
                let ids = if query.videos.is_empty() {
                    insights::posts(&state, &account)
                        .into_iter()
                        .map(|p| p.id)
                        .collect()
                } else {
                    query.videos.clone()
                };
                ids.iter()
                    .map(|id| {
                        let mut row = vec![json!(id)];
                        row.extend(query.metrics.iter().map(|m| json!(over_range(m, id))));
                        row
                    })
                    .collect()
            }
            _ => vec![
                query
                    .metrics
                    .iter()
                    .map(|m| json!(over_range(m, &object)))
                    .collect(),
            ],
        };
        if let Some(metric) = &query.sort_desc {
            let column =
                headers.len() + query.metrics.iter().position(|m| m == metric).unwrap_or(0);
            rows.sort_by_key(|row| std::cmp::Reverse(row.get(column).and_then(Value::as_u64)));
        }
        if let Some(max) = query.max_results {
            rows.truncate(max as usize);
        }
        headers.extend(
            query
                .metrics
                .iter()
                .map(|m| json!({"name": m, "columnType": "METRIC", "dataType": "INTEGER"})),
        );
        let mut body = json!({"kind": "youtubeAnalytics#resultTable", "columnHeaders": headers});
        if !rows.is_empty() {
            body["rows"] = rows.into_iter().map(Value::Array).collect();
        }
        Ok::<_, GError>(body)
    }
    .await;
    match result {
        Ok(body) => HttpResponse::Ok().json(body),
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_parse() {
        let cases = [
            (
                "bytes 0-99/200",
                Some(ContentRange::Bytes {
                    first: 0,
                    last: 99,
                    total: Some(200),
                }),
            ),
            (
                "bytes 100-199/*",
                Some(ContentRange::Bytes {
                    first: 100,
                    last: 199,
                    total: None,
                }),
            ),
            (
                "bytes */200",
                Some(ContentRange::Probe { total: Some(200) }),
            ),
            ("bytes */*", Some(ContentRange::Probe { total: None })),
            ("items 0-1/2", None),
            ("bytes 0-x/2", None),
            ("bytes 0-1", None),
        ];
        for (input, expected) in cases {
            assert_eq!(parse_content_range(input), expected, "{input}");
        }
    }
}
