//! TikTok Content Posting API v2, mounted at `/tiktok` (platform-apis.md §5):
//!
//! - `POST /v2/post/publish/creator_info/query/` → the creator and its privacy level options;
//! - `POST /v2/post/publish/video/init/` (direct post) and `/v2/post/publish/inbox/video/init/`
//!   (draft) with `source_info` `PULL_FROM_URL` (the simulator fetches the URL, as TikTok does)
//!   or `FILE_UPLOAD` (chunk plan checked, an `upload_url` on the simulator returned);
//! - `PUT /upload/{publish_id}`: the file transfer, sequential chunks with `Content-Range`,
//!   206 per intermediate chunk and 201 when the file is complete;
//! - `POST /v2/post/publish/content/init/`: photo mode (`DIRECT_POST` or `MEDIA_UPLOAD`);
//! - `POST /v2/post/publish/status/fetch/` → `PROCESSING_*` → `PUBLISH_COMPLETE` /
//!   `SEND_TO_USER_INBOX` / `FAILED`, following the account's processing mode.
//!
//! Every answer uses TikTok's envelope `{"data":{..},"error":{"code","message","log_id"}}`.
//! A publish is recorded as published when its status first reaches a terminal success.

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
    state::{FaultKind, PublishedItem, Refusal, SimAccount, SimObject, SimState, bearer_token},
    youtube::{ContentRange, parse_content_range},
};
use crate::util::random_token;

const PLATFORM: &str = "tiktok";
/// Chunk bounds of the media transfer guide. "5 MB" is read tolerantly (decimal or binary),
/// since the guide does not say which.
const MIN_CHUNK: u64 = 5_000_000;
const MAX_CHUNK: u64 = 64 * 1024 * 1024;
const MAX_FINAL_CHUNK: u64 = 128 * 1024 * 1024;
/// Files below this go up as one chunk.
const SINGLE_CHUNK_BELOW: u64 = 5 * 1024 * 1024;
const MAX_CHUNKS: u64 = 1000;
const MAX_PHOTOS: usize = 35;
const PRIVACY_OPTIONS: [&str; 4] = [
    "PUBLIC_TO_EVERYONE",
    "MUTUAL_FOLLOW_FRIENDS",
    "FOLLOWER_OF_CREATOR",
    "SELF_ONLY",
];

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(
        "/v2/post/publish/creator_info/query/",
        web::post().to(creator_info),
    )
    .route("/v2/post/publish/video/init/", web::post().to(video_init))
    .route(
        "/v2/post/publish/inbox/video/init/",
        web::post().to(inbox_video_init),
    )
    .route(
        "/v2/post/publish/content/init/",
        web::post().to(content_init),
    )
    .route(
        "/v2/post/publish/status/fetch/",
        web::post().to(status_fetch),
    )
    .route("/upload/{publish_id}", web::put().to(upload_chunk))
    .route("/v2/user/info/", web::get().to(user_info))
    .route("/v2/video/list/", web::post().to(video_list))
    .route("/v2/video/query/", web::post().to(video_query));
}

/// A refusal in TikTok's terms.
struct TtError {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// The protocol rule the client broke, when this refuses a violation (see
    /// [`super::state::Violation`]); `None` for business answers and injected faults.
    violation: Option<&'static str>,
}

impl TtError {
    fn invalid_params(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "invalid_params",
            message: message.into(),
            violation: Some("invalid_params"),
        }
    }

    fn invalid_file_upload(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "invalid_file_upload",
            message: message.into(),
            violation: Some("invalid_file_upload"),
        }
    }

    /// Unmarks an error: a business answer, not a protocol violation.
    fn legitimate(mut self) -> Self {
        self.violation = None;
        self
    }

    fn from_refusal(refusal: Refusal) -> Self {
        let (status, code, message) = match refusal {
            Refusal::NoToken | Refusal::UnknownToken => (
                StatusCode::UNAUTHORIZED,
                "access_token_invalid",
                "The access token is invalid or not found in the request.",
            ),
            Refusal::Fault(FaultKind::TokenExpired) => (
                StatusCode::UNAUTHORIZED,
                "access_token_invalid",
                "The access token has expired. Refresh it and try again.",
            ),
            Refusal::Fault(FaultKind::TokenRevoked) => (
                StatusCode::UNAUTHORIZED,
                "access_token_invalid",
                "The access token has been revoked by the user.",
            ),
            Refusal::Fault(FaultKind::Permission) => (
                StatusCode::UNAUTHORIZED,
                "scope_not_authorized",
                "The user did not authorize the scope required for completing this request.",
            ),
            Refusal::Fault(FaultKind::RateLimit) => (
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_exceeded",
                "API rate limit exceeded, please retry later.",
            ),
            Refusal::Fault(FaultKind::ServerError) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "Something went wrong. Please try again later.",
            ),
        };
        Self {
            status,
            code,
            message: message.to_string(),
            // Calling without a token is the client's mistake; an unknown one may be revoked.
            violation: (refusal == Refusal::NoToken).then_some("missing_token"),
        }
    }

    fn into_response(self) -> HttpResponse {
        let response = HttpResponse::build(self.status).json(json!({
            "data": {},
            "error": {"code": self.code, "message": &self.message, "log_id": log_id()},
        }));
        match self.violation {
            Some(rule) => super::state::violation(response, "tiktok", rule, self.message),
            None => response,
        }
    }
}

/// TikTok log ids look like a timestamp followed by hex.
fn log_id() -> String {
    format!(
        "{}{}",
        Utc::now().format("%Y%m%d%H%M%S"),
        random_token(9).to_ascii_uppercase()
    )
}

fn ok(data: Value) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "data": data,
        "error": {"code": "ok", "message": "", "log_id": log_id()},
    }))
}

fn render(result: Result<Value, TtError>) -> HttpResponse {
    match result {
        Ok(data) => ok(data),
        Err(e) => e.into_response(),
    }
}

/// The scopes each endpoint needs, any one of which suffices, hand-written from TikTok's
/// documentation (there is no machine-readable spec; `platform-apis.md` §5):
/// - creator info: `video.publish`
///   (<https://developers.tiktok.com/doc/content-posting-api-reference-query-creator-info>);
/// - direct post: `video.publish`
///   (<https://developers.tiktok.com/doc/content-posting-api-reference-direct-post>);
/// - inbox upload: `video.upload`
///   (<https://developers.tiktok.com/doc/content-posting-api-reference-upload-video>);
/// - photo post: `video.publish` for `DIRECT_POST`, `video.upload` for `MEDIA_UPLOAD`
///   (<https://developers.tiktok.com/doc/content-posting-api-reference-photo-post>; the mode
///   is checked in [`init_photos`]);
/// - post status: `video.publish` or `video.upload`
///   (<https://developers.tiktok.com/doc/content-posting-api-reference-get-video-status>);
/// - video list and query: `video.list`
///   (<https://developers.tiktok.com/doc/tiktok-api-v2-video-list>,
///   <https://developers.tiktok.com/doc/tiktok-api-v2-video-query>);
/// - user info: per field, [`USER_FIELD_SCOPES`]
///   (<https://developers.tiktok.com/doc/tiktok-api-v2-get-user-info>).
const ENDPOINT_SCOPES: [(&str, &[&str]); 7] = [
    ("/v2/post/publish/creator_info/query/", &["video.publish"]),
    ("/v2/post/publish/video/init/", &["video.publish"]),
    ("/v2/post/publish/inbox/video/init/", &["video.upload"]),
    (
        "/v2/post/publish/content/init/",
        &["video.publish", "video.upload"],
    ),
    (
        "/v2/post/publish/status/fetch/",
        &["video.publish", "video.upload"],
    ),
    ("/v2/video/list/", &["video.list"]),
    ("/v2/video/query/", &["video.list"]),
];

/// Authenticates a call and checks its token has a scope the endpoint needs
/// ([`ENDPOINT_SCOPES`]); refusals in TikTok's terms.
async fn admit(state: &SimState, req: &HttpRequest) -> Result<std::sync::Arc<SimAccount>, TtError> {
    let account = state
        .admit(&[PLATFORM], bearer_token(req).as_deref(), req.path())
        .await
        .map_err(TtError::from_refusal)?;
    if let Some((_, scopes)) = ENDPOINT_SCOPES
        .iter()
        .find(|(path, _)| req.path().ends_with(path))
    {
        require_any_scope(state, req, scopes)?;
    }
    Ok(account)
}

fn parse_body(body: &[u8]) -> Result<Value, TtError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(body)
        .map_err(|e| TtError::invalid_params(format!("The request body is not valid JSON: {e}")))
}

/// `scheme://host` plus the mount prefix, from the request as it arrived, so that upload URLs
/// point back at this simulator whatever port or mount it runs on.
fn base_of(req: &HttpRequest, own_path: &str) -> String {
    let info = req.connection_info();
    let prefix = req.path().strip_suffix(own_path).unwrap_or("/tiktok");
    format!("{}://{}{}", info.scheme(), info.host(), prefix)
}

async fn creator_info(req: HttpRequest, state: web::Data<SimState>) -> HttpResponse {
    let account = match admit(&state, &req).await {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    ok(json!({
        "creator_avatar_url": format!("https://p16-sign.tiktokcdn.com/{}.jpeg", account.external_id),
        "creator_username": account.username,
        "creator_nickname": account.name,
        "privacy_level_options": PRIVACY_OPTIONS,
        "comment_disabled": false,
        "duet_disabled": false,
        "stitch_disabled": false,
        "max_video_post_duration_sec": 600,
    }))
}

async fn video_init(req: HttpRequest, state: web::Data<SimState>, body: Bytes) -> HttpResponse {
    let result = match admit(&state, &req).await {
        Ok(account) => init_video(&req, &state, &account, &body, false).await,
        Err(e) => Err(e),
    };
    render(result)
}

async fn inbox_video_init(
    req: HttpRequest,
    state: web::Data<SimState>,
    body: Bytes,
) -> HttpResponse {
    let result = match admit(&state, &req).await {
        Ok(account) => init_video(&req, &state, &account, &body, true).await,
        Err(e) => Err(e),
    };
    render(result)
}

/// Checks `post_info.privacy_level` against the creator's options (direct posts only).
fn privacy_level(post_info: &Value) -> Result<String, TtError> {
    let level = post_info["privacy_level"].as_str().ok_or_else(|| {
        TtError::invalid_params("post_info.privacy_level is required for a direct post")
    })?;
    if !PRIVACY_OPTIONS.contains(&level) {
        return Err(TtError {
            status: StatusCode::BAD_REQUEST,
            code: "privacy_level_option_mismatch",
            message: format!(
                "privacy_level {level} is not one of the creator's privacy_level_options"
            ),
            // The options come from creator_info: a client must pick one of them.
            violation: Some("privacy_level_option_mismatch"),
        });
    }
    Ok(level.to_string())
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Validates a FILE_UPLOAD chunk plan (media transfer guide): `(video_size, chunk_size, count)`.
fn chunk_plan(source_info: &Value) -> Result<(u64, u64, u64), TtError> {
    let field =
        |name: &str| {
            source_info[name].as_u64().filter(|v| *v > 0).ok_or_else(|| {
            TtError::invalid_params(format!(
                "source_info.{name} is required for FILE_UPLOAD and must be a positive integer"
            ))
        })
        };
    let size = field("video_size")?;
    let chunk = field("chunk_size")?;
    let count = field("total_chunk_count")?;
    if size < SINGLE_CHUNK_BELOW {
        // Small files go whole: the one chunk is the file.
        if count != 1 || chunk != size {
            return Err(TtError::invalid_params(format!(
                "a video of {size} bytes (under 5 MB) must be uploaded as a single chunk: \
                 chunk_size {size}, total_chunk_count 1"
            )));
        }
        return Ok((size, chunk, count));
    }
    let whole = count == 1 && chunk == size && size <= MAX_CHUNK;
    if !whole && !(MIN_CHUNK..=MAX_CHUNK).contains(&chunk) {
        return Err(TtError::invalid_params(format!(
            "chunk_size {chunk} is outside 5 MB to 64 MB"
        )));
    }
    if count != size / chunk {
        return Err(TtError::invalid_params(format!(
            "total_chunk_count must be floor(video_size / chunk_size) = {}, got {count}",
            size / chunk
        )));
    }
    if count > MAX_CHUNKS {
        return Err(TtError::invalid_params(format!(
            "total_chunk_count {count} is over {MAX_CHUNKS}"
        )));
    }
    let last = size - chunk * (count - 1);
    if last > MAX_FINAL_CHUNK {
        return Err(TtError::invalid_params(format!(
            "the final chunk would be {last} bytes; at most 128 MB"
        )));
    }
    Ok((size, chunk, count))
}

async fn init_video(
    req: &HttpRequest,
    state: &SimState,
    account: &SimAccount,
    body: &[u8],
    inbox: bool,
) -> Result<Value, TtError> {
    let body = parse_body(body)?;
    let source_info = &body["source_info"];
    let mut data = json!({
        "recorded": false,
        "fail_reason": null,
        "terminal": if inbox { "SEND_TO_USER_INBOX" } else { "PUBLISH_COMPLETE" },
        "media": [],
    });
    if !inbox {
        let post_info = &body["post_info"];
        let privacy = privacy_level(post_info)?;
        let title = post_info["title"].as_str().unwrap_or_default();
        if utf16_len(title) > 2200 {
            // Content over a limit is the user's, not a protocol error.
            return Err(
                TtError::invalid_params("post_info.title is over 2200 UTF-16 code units")
                    .legitimate(),
            );
        }
        data["privacy_level"] = json!(privacy);
        data["title"] = json!(title);
    }
    let publish_id = format!(
        "{}~v2.{}",
        if inbox { "v_inbox_file" } else { "v_pub_file" },
        state.next_id()
    );
    let mut response = json!({});
    match source_info["source"].as_str() {
        Some("PULL_FROM_URL") => {
            let url = source_info["video_url"].as_str().ok_or_else(|| {
                TtError::invalid_params("source_info.video_url is required for PULL_FROM_URL")
            })?;
            data["source"] = json!("PULL_FROM_URL");
            data["media"] = json!([url]);
            // TikTok downloads after answering; a failed pull shows up in the status.
            match state.fetch_media(url).await {
                Ok((content_type, length)) => {
                    if !is_video_type(&content_type) {
                        data["fail_reason"] = json!("file_format_check_failed");
                    }
                    data["downloaded_bytes"] = json!(length.unwrap_or(0));
                }
                Err(_) => data["fail_reason"] = json!("video_pull_failed"),
            }
        }
        Some("FILE_UPLOAD") => {
            let (size, chunk, count) = chunk_plan(source_info)?;
            let upload_url = format!(
                "{}/upload/{publish_id}",
                base_of(
                    req,
                    if inbox {
                        "/v2/post/publish/inbox/video/init/"
                    } else {
                        "/v2/post/publish/video/init/"
                    }
                )
            );
            data["source"] = json!("FILE_UPLOAD");
            data["video_size"] = json!(size);
            data["chunk_size"] = json!(chunk);
            data["total_chunk_count"] = json!(count);
            data["received"] = json!(0);
            data["upload_complete"] = json!(false);
            response["upload_url"] = json!(upload_url);
        }
        Some(other) => {
            return Err(TtError::invalid_params(format!(
                "source_info.source {other} is not FILE_UPLOAD or PULL_FROM_URL"
            )));
        }
        None => return Err(TtError::invalid_params("source_info.source is required")),
    }
    response["publish_id"] = json!(publish_id);
    state.put_object(
        &publish_id,
        SimObject {
            platform: PLATFORM.into(),
            owner: account.external_id.clone(),
            kind: if inbox { "inbox_video" } else { "video" }.into(),
            data,
            created: Instant::now(),
        },
    );
    Ok(response)
}

fn is_video_type(content_type: &str) -> bool {
    matches!(content_type, "video/mp4" | "video/quicktime" | "video/webm")
}

async fn content_init(req: HttpRequest, state: web::Data<SimState>, body: Bytes) -> HttpResponse {
    let result = match admit(&state, &req).await {
        Ok(account) => init_photos(&state, &req, &account, &body).await,
        Err(e) => Err(e),
    };
    render(result)
}

async fn init_photos(
    state: &SimState,
    req: &HttpRequest,
    account: &SimAccount,
    body: &[u8],
) -> Result<Value, TtError> {
    let body = parse_body(body)?;
    if body["media_type"].as_str() != Some("PHOTO") {
        return Err(TtError::invalid_params("media_type must be PHOTO"));
    }
    let inbox = match body["post_mode"].as_str() {
        Some("DIRECT_POST") => false,
        Some("MEDIA_UPLOAD") => true,
        _ => {
            return Err(TtError::invalid_params(
                "post_mode must be DIRECT_POST or MEDIA_UPLOAD",
            ));
        }
    };
    // A direct post publishes (`video.publish`); an upload to the inbox does not.
    require_scope(
        state,
        req,
        if inbox {
            "video.upload"
        } else {
            "video.publish"
        },
    )?;
    let post_info = &body["post_info"];
    let title = post_info["title"].as_str().unwrap_or_default();
    let description = post_info["description"].as_str().unwrap_or_default();
    if utf16_len(title) > 90 {
        // Content over a limit is the user's, not a protocol error.
        return Err(TtError::invalid_params("post_info.title is over 90 characters").legitimate());
    }
    if utf16_len(description) > 4000 {
        return Err(
            TtError::invalid_params("post_info.description is over 4000 characters").legitimate(),
        );
    }
    let privacy = if inbox {
        None
    } else {
        Some(privacy_level(post_info)?)
    };
    let source_info = &body["source_info"];
    if source_info["source"].as_str() != Some("PULL_FROM_URL") {
        return Err(TtError::invalid_params(
            "photo posts take source_info.source PULL_FROM_URL",
        ));
    }
    let images: Vec<String> = source_info["photo_images"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if images.is_empty() || images.len() > MAX_PHOTOS {
        // How many photos a post has is the user's content.
        return Err(TtError::invalid_params(format!(
            "source_info.photo_images must hold 1 to {MAX_PHOTOS} URLs"
        ))
        .legitimate());
    }
    let cover = source_info["photo_cover_index"].as_u64().unwrap_or(0);
    if cover >= images.len() as u64 {
        return Err(TtError::invalid_params(
            "source_info.photo_cover_index is outside photo_images",
        ));
    }
    // TikTok pulls every image; one bad image fails the whole post (in its status).
    let fetched =
        futures_util::future::join_all(images.iter().map(|url| state.fetch_media(url))).await;
    let mut fail_reason = None;
    for outcome in fetched {
        match outcome {
            Err(_) => {
                fail_reason = Some("photo_pull_failed");
                break;
            }
            Ok((content_type, _))
                if !matches!(content_type.as_str(), "image/jpeg" | "image/webp") =>
            {
                fail_reason.get_or_insert("file_format_check_failed");
            }
            Ok(_) => {}
        }
    }
    let publish_id = format!("p_pub_url~v2.{}", state.next_id());
    state.put_object(
        &publish_id,
        SimObject {
            platform: PLATFORM.into(),
            owner: account.external_id.clone(),
            kind: if inbox { "inbox_photo" } else { "photo_post" }.into(),
            data: json!({
                "source": "PULL_FROM_URL",
                "recorded": false,
                "fail_reason": fail_reason,
                "terminal": if inbox { "SEND_TO_USER_INBOX" } else { "PUBLISH_COMPLETE" },
                "media": images,
                "title": title,
                "description": description,
                "privacy_level": privacy,
                "photo_cover_index": cover,
            }),
            created: Instant::now(),
        },
    );
    Ok(json!({"publish_id": publish_id}))
}

/// `PUT {upload_url}`: one chunk of a FILE_UPLOAD. The upload URL itself is the credential (no
/// `Authorization` is documented for it), so the call is admitted with the owner's token.
async fn upload_chunk(
    req: HttpRequest,
    state: web::Data<SimState>,
    publish_id: web::Path<String>,
    body: Bytes,
) -> HttpResponse {
    let Some(object) = state
        .object(&publish_id)
        .filter(|o| o.platform == PLATFORM && o.data["source"] == "FILE_UPLOAD")
    else {
        return TtError {
            status: StatusCode::NOT_FOUND,
            code: "invalid_params",
            message: "The upload URL is unknown or has expired.".into(),
            // An expired upload is a business answer.
            violation: None,
        }
        .into_response();
    };
    let token = bearer_token(&req).or_else(|| {
        state
            .account(PLATFORM, &object.owner)
            .map(|a| a.access_token)
    });
    if let Err(refusal) = state.admit(&[PLATFORM], token.as_deref(), req.path()).await {
        return TtError::from_refusal(refusal).into_response();
    }
    if let Some(content_type) = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        && !is_video_type(content_type.split(';').next().unwrap_or_default().trim())
    {
        return TtError::invalid_file_upload(format!(
            "Content-Type {content_type} is not video/mp4, video/quicktime or video/webm"
        ))
        .into_response();
    }
    let range = req
        .headers()
        .get(header::CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_content_range);
    let Some(ContentRange::Bytes {
        first,
        last,
        total: Some(total),
    }) = range
    else {
        return TtError::invalid_file_upload(
            "Content-Range must be 'bytes {first}-{last}/{total}'",
        )
        .into_response();
    };
    // Check and apply under the object's lock so concurrent chunks cannot both land.
    let Some(mut entry) = state.objects.get_mut(publish_id.as_str()) else {
        // Gone since the check above (expired): a business answer.
        return TtError::invalid_file_upload("The upload URL is unknown or has expired.")
            .legitimate()
            .into_response();
    };
    let data = &mut entry.data;
    let size = data["video_size"].as_u64().unwrap_or(0);
    let chunk = data["chunk_size"].as_u64().unwrap_or(0).max(1);
    let count = data["total_chunk_count"].as_u64().unwrap_or(1);
    let received = data["received"].as_u64().unwrap_or(0);
    if data["upload_complete"] == true {
        return TtError::invalid_file_upload("The upload is already complete.").into_response();
    }
    let index = received / chunk;
    let expected_len = if index + 1 >= count {
        size - received
    } else {
        chunk
    };
    let problem = if total != size {
        Some(format!("total {total} differs from video_size {size}"))
    } else if first != received {
        Some(format!(
            "chunks must be sequential: expected the range to start at {received}, got {first}"
        ))
    } else if last < first || last - first + 1 != expected_len {
        Some(format!(
            "chunk {} must be {expected_len} bytes, the range says {}",
            index + 1,
            (last + 1).saturating_sub(first)
        ))
    } else if body.len() as u64 != expected_len {
        Some(format!(
            "the body has {} bytes, the range says {expected_len}",
            body.len()
        ))
    } else {
        None
    };
    if let Some(problem) = problem {
        return TtError::invalid_file_upload(problem).into_response();
    }
    let received = received + expected_len;
    data["received"] = json!(received);
    if received < size {
        return HttpResponse::PartialContent().finish();
    }
    // Processing starts once the whole file is in.
    data["upload_complete"] = json!(true);
    entry.created = Instant::now();
    HttpResponse::Created().finish()
}

async fn status_fetch(req: HttpRequest, state: web::Data<SimState>, body: Bytes) -> HttpResponse {
    let result = match admit(&state, &req).await {
        Ok(account) => status_of(&state, &account, &body),
        Err(e) => Err(e),
    };
    render(result)
}

fn status_of(state: &SimState, account: &SimAccount, body: &[u8]) -> Result<Value, TtError> {
    let body = parse_body(body)?;
    let publish_id = body["publish_id"]
        .as_str()
        .ok_or_else(|| TtError::invalid_params("publish_id is required"))?;
    let Some(object) = state
        .object(publish_id)
        .filter(|o| o.platform == PLATFORM && o.owner == account.external_id)
    else {
        // An unknown object id: a business answer.
        return Err(
            TtError::invalid_params(format!("publish_id {publish_id} was not found")).legitimate(),
        );
    };
    let data = &object.data;
    let pulled = data["source"] == "PULL_FROM_URL";
    let mut answer = json!({
        "uploaded_bytes": data["received"].as_u64().unwrap_or(0),
        "downloaded_bytes": if pulled { data["downloaded_bytes"].as_u64().unwrap_or(0) } else { 0 },
    });
    let processing = if pulled {
        "PROCESSING_DOWNLOAD"
    } else {
        "PROCESSING_UPLOAD"
    };
    if let Some(reason) = data["fail_reason"].as_str() {
        // A failed pull is noticed after a moment, as on TikTok.
        if object.created.elapsed() < state.processing_delay {
            answer["status"] = json!(processing);
        } else {
            answer["status"] = json!("FAILED");
            answer["fail_reason"] = json!(reason);
        }
        return Ok(answer);
    }
    if !pulled && data["upload_complete"] != true {
        answer["status"] = json!(processing);
        return Ok(answer);
    }
    match state.processing_outcome(PLATFORM, &object.owner, object.created) {
        None => answer["status"] = json!(processing),
        Some(false) => {
            answer["status"] = json!("FAILED");
            answer["fail_reason"] = json!(if object.kind.contains("photo") {
                "picture_size_check_failed"
            } else {
                "file_format_check_failed"
            });
        }
        Some(true) => {
            let terminal = data["terminal"].as_str().unwrap_or("PUBLISH_COMPLETE");
            answer["status"] = json!(terminal);
            if terminal == "PUBLISH_COMPLETE" {
                let post_id = complete(state, publish_id);
                // SELF_ONLY posts never get a public id.
                answer["publicaly_available_post_id"] = match post_id {
                    Some(id) if data["privacy_level"] != "SELF_ONLY" => json!([id]),
                    _ => json!([]),
                };
            } else {
                complete(state, publish_id);
            }
        }
    }
    Ok(answer)
}

/// Records the publish once and returns its public post id (direct posts only).
fn complete(state: &SimState, publish_id: &str) -> Option<u64> {
    let mut entry = state.objects.get_mut(publish_id)?;
    let direct = entry.data["terminal"] == "PUBLISH_COMPLETE";
    if entry.data["recorded"] == true {
        return entry.data["post_id"].as_u64();
    }
    let post_id = direct.then(|| 7_000_000_000_000_000_000 + state.next_id());
    entry.data["recorded"] = json!(true);
    entry.data["post_id"] = json!(post_id);
    let data = &entry.data;
    let public = direct && data["privacy_level"] != "SELF_ONLY";
    let id = match post_id {
        Some(id) if public => id.to_string(),
        _ => publish_id.to_string(),
    };
    let text = match data["description"].as_str().filter(|d| !d.is_empty()) {
        Some(description) => Some(description.to_string()),
        None => data["title"].as_str().map(str::to_string),
    };
    let item = PublishedItem {
        platform: PLATFORM.into(),
        account_id: entry.owner.clone(),
        id,
        kind: entry.kind.clone(),
        text,
        media: data["media"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        reply_to: None,
        extra: json!({
            "publish_id": publish_id,
            "title": data["title"],
            "privacy_level": data["privacy_level"],
            "source": data["source"],
            "uploaded_bytes": data["received"],
            "video_size": data["video_size"],
            "total_chunk_count": data["total_chunk_count"],
            "photo_cover_index": data["photo_cover_index"],
        }),
        published_at: Utc::now(),
    };
    drop(entry);
    state.record_published(item);
    post_id
}

// ---------------------------------------------------------------------------------------------
// Display API reads used for analytics (platform-apis.md §5.8).

/// The `fields` query parameter; an unknown field is TikTok's `invalid_params`.
fn display_fields(req: &HttpRequest, known: &[&str]) -> Result<Vec<String>, TtError> {
    let raw = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "fields")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let fields: Vec<String> = raw
        .split(',')
        .map(|f| f.trim().to_string())
        .filter(|f| !f.is_empty())
        .collect();
    if fields.is_empty() {
        return Err(TtError::invalid_params("The fields parameter is required."));
    }
    if let Some(unknown) = fields.iter().find(|f| !known.contains(&f.as_str())) {
        return Err(TtError::invalid_params(format!(
            "Field {unknown} is not supported."
        )));
    }
    Ok(fields)
}

/// The scope each `/v2/user/info/` field needs, per TikTok's scope documentation (the
/// platform's table, kept apart from the adapter's so that a wrong one there shows here).
const USER_FIELD_SCOPES: [(&str, &str); 12] = [
    ("open_id", "user.info.basic"),
    ("union_id", "user.info.basic"),
    ("avatar_url", "user.info.basic"),
    ("display_name", "user.info.basic"),
    ("bio_description", "user.info.profile"),
    ("profile_deep_link", "user.info.profile"),
    ("is_verified", "user.info.profile"),
    ("username", "user.info.profile"),
    ("follower_count", "user.info.stats"),
    ("following_count", "user.info.stats"),
    ("likes_count", "user.info.stats"),
    ("video_count", "user.info.stats"),
];

/// Refuses a call whose token was not granted `scope`: TikTok's `scope_not_authorized`, 401.
fn require_scope(state: &SimState, req: &HttpRequest, scope: &str) -> Result<(), TtError> {
    require_any_scope(state, req, &[scope])
}

/// Refuses a call whose token was granted none of `scopes`.
fn require_any_scope(state: &SimState, req: &HttpRequest, scopes: &[&str]) -> Result<(), TtError> {
    let token = bearer_token(req).unwrap_or_default();
    if scopes.iter().any(|scope| state.has_scope(&token, scope)) {
        return Ok(());
    }
    Err(TtError {
        status: StatusCode::UNAUTHORIZED,
        code: "scope_not_authorized",
        message: "The user did not authorize the scope required for completing this request."
            .into(),
        violation: Some("scope_not_authorized"),
    })
}

/// The asked `fields` of `all`, less those an injected `fail_metrics` fault makes TikTok leave
/// out (it answers the fields it can and omits the others).
fn pick(state: &SimState, account: &SimAccount, all: Value, fields: &[String]) -> Value {
    let failing = state.failing_metrics(&account.platform, &account.external_id);
    let mut out = serde_json::Map::new();
    for field in fields.iter().filter(|f| !failing.contains(f)) {
        if let Some(value) = all.get(field) {
            out.insert(field.clone(), value.clone());
        }
    }
    Value::Object(out)
}

const VIDEO_FIELDS: [&str; 13] = [
    "id",
    "create_time",
    "cover_image_url",
    "share_url",
    "video_description",
    "duration",
    "height",
    "width",
    "title",
    "embed_link",
    "like_count",
    "comment_count",
    "share_count",
];

fn video_object(account: &SimAccount, post: &SimPost) -> Value {
    let count = |metric: &str| insights::lifetime(account, metric, &post.id);
    json!({
        "id": post.id,
        "create_time": post.created.timestamp(),
        "cover_image_url": format!("https://p16-sign.tiktokcdn.com/{}.jpeg", post.id),
        "share_url": format!("https://www.tiktok.com/@{}/video/{}", account.username, post.id),
        "video_description": post.text,
        "duration": 15,
        "height": 1920,
        "width": 1080,
        "title": post.text,
        "embed_link": format!("https://www.tiktok.com/player/v1/{}", post.id),
        "like_count": count("likes"),
        "comment_count": count("comments"),
        "share_count": count("shares"),
        "view_count": count("views"),
    })
}

fn video_fields(req: &HttpRequest) -> Result<Vec<String>, TtError> {
    let mut known = VIDEO_FIELDS.to_vec();
    known.push("view_count");
    display_fields(req, &known)
}

async fn user_info(req: HttpRequest, state: web::Data<SimState>) -> HttpResponse {
    render(
        async {
            let account = admit(&state, &req).await?;
            let known: Vec<&str> = USER_FIELD_SCOPES.iter().map(|(f, _)| *f).collect();
            let fields = display_fields(&req, &known)?;
            for field in &fields {
                if let Some((_, scope)) = USER_FIELD_SCOPES.iter().find(|(f, _)| f == field) {
                    require_scope(&state, &req, scope)?;
                }
            }
            let stat = |metric: &str| insights::lifetime(&account, metric, "");
            let all = json!({
                "open_id": account.external_id,
                "union_id": format!("u{}", account.external_id),
                "avatar_url": format!("https://p16-sign.tiktokcdn.com/avatar/{}.jpeg", account.external_id),
                "display_name": account.name,
                "bio_description": "",
                "profile_deep_link": format!("https://www.tiktok.com/@{}", account.username),
                "is_verified": false,
                "username": account.username,
                "follower_count": stat("follower_count"),
                "following_count": stat("following_count"),
                "likes_count": stat("likes_count"),
                "video_count": insights::posts(&state, &account).len(),
            });
            Ok(json!({ "user": pick(&state, &account, all, &fields) }))
        }
        .await,
    )
}

async fn video_list(req: HttpRequest, state: web::Data<SimState>, body: Bytes) -> HttpResponse {
    render(
        async {
            let account = admit(&state, &req).await?;
            let fields = video_fields(&req)?;
            let body = parse_body(&body)?;
            // An integer (the documentation's type); a string or fraction is refused.
            let max = match &body["max_count"] {
                Value::Null => 10,
                value => value.as_u64().ok_or_else(|| {
                    TtError::invalid_params(format!("max_count must be an integer, not {value}."))
                })?,
            };
            if !(1..=20).contains(&max) {
                return Err(TtError::invalid_params("max_count must be between 1 and 20."));
            }
            // The cursor is a UTC unix time in milliseconds: videos created before it.
            let cursor = body["cursor"].as_i64();
            let posts: Vec<SimPost> = insights::posts(&state, &account)
                .into_iter()
                .filter(|p| cursor.is_none_or(|c| p.created.timestamp_millis() < c))
                .collect();
            let page: Vec<&SimPost> = posts.iter().take(max as usize).collect();
            let next = page.last().map(|p| p.created.timestamp_millis()).unwrap_or(0);
            Ok(json!({
                "videos": page.iter().map(|p| pick(&state, &account, video_object(&account, p), &fields)).collect::<Vec<_>>(),
                "cursor": next,
                "has_more": posts.len() > page.len(),
            }))
        }
        .await,
    )
}

async fn video_query(req: HttpRequest, state: web::Data<SimState>, body: Bytes) -> HttpResponse {
    render(
        async {
            let account = admit(&state, &req).await?;
            let fields = video_fields(&req)?;
            let body = parse_body(&body)?;
            let ids: Vec<String> = body["filters"]["video_ids"]
                .as_array()
                .map(|ids| {
                    ids.iter()
                        .filter_map(|i| i.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            if ids.is_empty() || ids.len() > 20 {
                return Err(TtError::invalid_params(
                    "filters.video_ids must hold 1 to 20 ids.",
                ));
            }
            let videos: Vec<Value> = ids
                .iter()
                .filter_map(|id| insights::post(&state, &account, id))
                .map(|p| pick(&state, &account, video_object(&account, &p), &fields))
                .collect();
            Ok(json!({ "videos": videos }))
        }
        .await,
    )
}
