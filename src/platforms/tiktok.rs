//! tiktok adapter: the Content Posting API v2 (platform-apis.md §5).
//!
//! - Direct video: `creator_info/query` (privacy options) → `video/init` → (FILE_UPLOAD: `PUT`
//!   the chunks to `upload_url`) → `status/fetch` until `PUBLISH_COMPLETE`.
//! - Draft video: `inbox/video/init` → (chunks) → `status/fetch` until `SEND_TO_USER_INBOX`.
//! - Photos: (`creator_info/query` for a direct post) → `content/init` with `photo_images`
//!   (`DIRECT_POST`, or `MEDIA_UPLOAD` for a draft) → `status/fetch`.
//!
//! The final call is the init for PULL_FROM_URL and photos (TikTok posts on its own from then
//! on), and the last chunk for FILE_UPLOAD.

use std::time::Duration;

use bytes::Bytes;
use reqwest::{StatusCode, header};
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use super::{
    Pending, PlatformContext, PlatformError, Published, SendTraced, StepKind, ids::ApiPath,
    poll_pause, processing_deadline,
};
use crate::{
    domain::plan::{MediaRef, TiktokContent, TiktokPost},
    media::ChunkReader,
};

/// Chunk bounds of the media transfer guide. The guide says "5 MB" and "64 MB" without saying
/// which megabyte; these values satisfy both readings.
const MIN_CHUNK: u64 = 5 * 1024 * 1024;
const MAX_CHUNK: u64 = 64_000_000;
const MAX_CHUNKS: u64 = 1000;
/// TikTok asks for this exact content type on its JSON endpoints.
const JSON_UTF8: &str = "application/json; charset=UTF-8";
/// Photo post titles are capped at 90 characters; the full caption goes in the description.
const PHOTO_TITLE_MAX: usize = 90;
/// What TikTok's rate limits (per minute) suggest waiting.
const RATE_LIMIT_RETRY_SECS: u64 = 60;

/// The scope each `/v2/user/info/` field needs (TikTok's scope documentation): TikTok refuses
/// the whole call with `scope_not_authorized` when one field's scope was not granted.
pub const USER_FIELD_SCOPES: [(&str, &str); 12] = [
    ("open_id", "user.info.basic"),
    ("union_id", "user.info.basic"),
    ("avatar_url", "user.info.basic"),
    ("display_name", "user.info.basic"),
    ("username", "user.info.profile"),
    ("bio_description", "user.info.profile"),
    ("profile_deep_link", "user.info.profile"),
    ("is_verified", "user.info.profile"),
    ("follower_count", "user.info.stats"),
    ("following_count", "user.info.stats"),
    ("likes_count", "user.info.stats"),
    ("video_count", "user.info.stats"),
];

/// What the connect flow asks for: every scope of the user fields we read (connect, account
/// insights, the daily collection), `video.list` for `/v2/video/list/` and `/v2/video/query/`,
/// and the two posting scopes.
pub const SCOPES: &str =
    "user.info.basic,user.info.profile,user.info.stats,video.publish,video.upload,video.list";

/// The scopes `fields` of `/v2/user/info/` need, in order, each once: named in a refusal so
/// the user knows what to grant.
pub fn scopes_for_user_fields(fields: &str) -> Vec<&'static str> {
    let mut scopes = Vec::new();
    for field in fields.split(',') {
        if let Some((_, scope)) = USER_FIELD_SCOPES.iter().find(|(f, _)| *f == field)
            && !scopes.contains(scope)
        {
            scopes.push(*scope);
        }
    }
    scopes
}

pub async fn publish(
    ctx: &PlatformContext<'_>,
    post: &TiktokPost,
) -> Result<Published, PlatformError> {
    let api = Api { ctx };
    // Direct posts must use one of the creator's privacy options; drafts pick it in the app.
    let privacy = if post.draft {
        None
    } else {
        Some(api.privacy_level().await?)
    };
    let publish_id = match &post.content {
        TiktokContent::Video(video) => post_video(&api, post, video, privacy.as_deref()).await?,
        TiktokContent::Photos(images) => {
            post_photos(&api, post, images, privacy.as_deref()).await?
        }
    };
    let outcome = api.wait_for_outcome(&publish_id).await;
    ctx.steps.processed(&publish_id, &outcome).await;
    outcome
}

/// How a file of `size` bytes is cut for FILE_UPLOAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPlan {
    pub chunk_size: u64,
    pub count: u64,
}

impl ChunkPlan {
    /// TikTok's rules: files under 5 MB go whole; otherwise `chunk_size` is the configured size
    /// clamped to 5–64 MB, `count = floor(size / chunk_size)` and the last chunk carries the
    /// remainder (so it is at most twice a chunk, within the 128 MB final-chunk limit).
    pub fn new(size: u64, configured_chunk: u64) -> Self {
        if size < MIN_CHUNK {
            return Self {
                chunk_size: size,
                count: 1,
            };
        }
        let chunk_size = configured_chunk.clamp(MIN_CHUNK, MAX_CHUNK).min(size);
        Self {
            chunk_size,
            count: size / chunk_size,
        }
    }

    /// Bytes in chunk `index` (0-based) of a file of `size` bytes.
    pub fn len_of(&self, index: u64, size: u64) -> u64 {
        if index + 1 >= self.count {
            size - self.chunk_size * (self.count - 1)
        } else {
            self.chunk_size
        }
    }
}

async fn post_video(
    api: &Api<'_, '_>,
    post: &TiktokPost,
    video: &MediaRef,
    privacy: Option<&str>,
) -> Result<String, PlatformError> {
    let path = if post.draft {
        "/v2/post/publish/inbox/video/init/"
    } else {
        "/v2/post/publish/video/init/"
    };
    let mut body = json!({});
    if let Some(privacy) = privacy {
        body["post_info"] = json!({
            "title": post.caption,
            "privacy_level": privacy,
            "disable_duet": false,
            "disable_comment": false,
            "disable_stitch": false,
            "video_cover_timestamp_ms": 1000,
        });
    }
    let ctx = api.ctx;
    if ctx
        .config
        .tiktok_video_source
        .eq_ignore_ascii_case("PULL_FROM_URL")
    {
        body["source_info"] = json!({"source": "PULL_FROM_URL", "video_url": video.url});
        // TikTok fetches and posts on its own once the init is accepted.
        ctx.steps.before_final().await?;
        let data = api.call(path, Some(&body)).await?;
        let publish_id = publish_id_of(&data)?;
        ctx.steps.record(StepKind::PublishId, &publish_id).await?;
        return Ok(publish_id);
    }

    let download = ctx.media.open_for_upload(&video.url).await?;
    let size = download.content_length.filter(|s| *s > 0).ok_or_else(|| {
        PlatformError::MediaFetch(format!(
            "{} did not send a Content-Length; TikTok's FILE_UPLOAD needs the file size up front \
             (platforms.tiktok_video_source = PULL_FROM_URL avoids it)",
            video.url
        ))
    })?;
    let plan = ChunkPlan::new(size, ctx.config.upload_chunk_bytes);
    if plan.count > MAX_CHUNKS {
        return Err(PlatformError::Rejected(format!(
            "a video of {size} bytes needs more than {MAX_CHUNKS} chunks"
        )));
    }
    let content_type = if download.content_type.is_empty() {
        video.content_type.clone()
    } else {
        download.content_type.clone()
    };
    body["source_info"] = json!({
        "source": "FILE_UPLOAD",
        "video_size": size,
        "chunk_size": plan.chunk_size,
        "total_chunk_count": plan.count,
    });
    let data = api.call(path, Some(&body)).await?;
    let publish_id = publish_id_of(&data)?;
    ctx.steps.record(StepKind::PublishId, &publish_id).await?;
    let upload_url = data["upload_url"]
        .as_str()
        .ok_or_else(|| PlatformError::Rejected("TikTok sent no upload_url".into()))?
        .to_string();

    // Pieces are chunk_size long; the final chunk is the last piece plus the remainder.
    let mut reader = download.into_chunks(plan.chunk_size as usize);
    let mut sent = 0u64;
    for index in 0..plan.count {
        let len = plan.len_of(index, size);
        let bytes = read_exact(&mut reader, len, sent, size).await?;
        if index + 1 == plan.count {
            ctx.steps.before_final().await?;
        }
        api.put_chunk(&upload_url, bytes, sent, size, &content_type)
            .await?;
        sent += len;
    }
    Ok(publish_id)
}

/// Reads exactly `len` bytes from the media download.
async fn read_exact(
    reader: &mut ChunkReader,
    len: u64,
    offset: u64,
    size: u64,
) -> Result<Bytes, PlatformError> {
    let short = |got: u64| {
        PlatformError::MediaFetch(format!("the media ended after {got} of its {size} bytes"))
    };
    let first = reader.next_chunk().await?.ok_or_else(|| short(offset))?;
    if first.len() as u64 == len {
        return Ok(first);
    }
    let mut buffer = first.to_vec();
    while (buffer.len() as u64) < len {
        let piece = reader
            .next_chunk()
            .await?
            .ok_or_else(|| short(offset + buffer.len() as u64))?;
        buffer.extend_from_slice(&piece);
    }
    if buffer.len() as u64 != len {
        return Err(PlatformError::MediaFetch(format!(
            "the media is longer than the {size} bytes it announced"
        )));
    }
    Ok(Bytes::from(buffer))
}

async fn post_photos(
    api: &Api<'_, '_>,
    post: &TiktokPost,
    images: &[MediaRef],
    privacy: Option<&str>,
) -> Result<String, PlatformError> {
    let mut post_info = json!({
        "title": photo_title(&post.caption),
        "description": post.caption,
        "disable_comment": false,
        "auto_add_music": true,
    });
    if let Some(privacy) = privacy {
        post_info["privacy_level"] = json!(privacy);
    }
    let body = json!({
        "media_type": "PHOTO",
        "post_mode": if post.draft { "MEDIA_UPLOAD" } else { "DIRECT_POST" },
        "post_info": post_info,
        "source_info": {
            "source": "PULL_FROM_URL",
            "photo_images": images.iter().map(|i| i.url.as_str()).collect::<Vec<_>>(),
            "photo_cover_index": 0,
        },
    });
    api.ctx.steps.before_final().await?;
    let data = api
        .call("/v2/post/publish/content/init/", Some(&body))
        .await?;
    let publish_id = publish_id_of(&data)?;
    api.ctx
        .steps
        .record(StepKind::PublishId, &publish_id)
        .await?;
    Ok(publish_id)
}

/// The caption's first line, cut to 90 UTF-16 units (TikTok counts like JavaScript).
fn photo_title(caption: &str) -> String {
    let first_line = caption.lines().next().unwrap_or_default().trim();
    let mut units = 0;
    first_line
        .chars()
        .take_while(|c| {
            units += c.len_utf16();
            units <= PHOTO_TITLE_MAX
        })
        .collect()
}

fn publish_id_of(data: &Value) -> Result<String, PlatformError> {
    data["publish_id"]
        .as_str()
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .ok_or_else(|| PlatformError::Rejected("TikTok sent no publish_id".into()))
}

/// Calls of one publish.
struct Api<'c, 'a> {
    ctx: &'c PlatformContext<'a>,
}

impl Api<'_, '_> {
    /// `PUBLIC_TO_EVERYONE` when the creator offers it, else the first option.
    async fn privacy_level(&self) -> Result<String, PlatformError> {
        let data = self
            .call("/v2/post/publish/creator_info/query/", None)
            .await?;
        let options: Vec<&str> = data["privacy_level_options"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        options
            .iter()
            .find(|o| **o == "PUBLIC_TO_EVERYONE")
            .or(options.first())
            .map(|o| o.to_string())
            .ok_or_else(|| {
                PlatformError::Rejected("TikTok offers this creator no privacy level".into())
            })
    }

    /// A POST to a v2 endpoint; the `data` of a response whose `error.code` is `ok`.
    async fn call(&self, path: &'static str, body: Option<&Value>) -> Result<Value, PlatformError> {
        let ctx = self.ctx;
        let mut request = ctx
            .http
            .post(ApiPath::fixed(path).on(&ctx.config.tiktok_url)?)
            .bearer_auth(ctx.account.access_token.expose_secret())
            .timeout(Duration::from_secs(ctx.config.call_timeout_secs));
        if let Some(body) = body {
            request = request
                .header(header::CONTENT_TYPE, JSON_UTF8)
                .body(body.to_string());
        }
        let response = super::traced_send("tiktok", request)
            .await
            .map_err(PlatformError::from_reqwest)?;
        let status = response.status();
        let text = response.text().await.map_err(PlatformError::from_reqwest)?;
        let envelope: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        match envelope["error"]["code"].as_str() {
            Some("ok") if status.is_success() => Ok(envelope["data"].clone()),
            Some(code) => Err(
                match classify(
                    status,
                    code,
                    envelope["error"]["message"].as_str().unwrap_or_default(),
                ) {
                    // TikTok does not say which scope is missing: name the one this call needs.
                    PlatformError::Permission(detail) => PlatformError::Permission(format!(
                        "{detail} (this call needs the scope {})",
                        posting_scope(path, body)
                    )),
                    other => other,
                },
            ),
            None => Err(unexpected(status, &text)),
        }
    }

    /// `PUT` one chunk to the upload URL (which is its own credential: no `Authorization`).
    async fn put_chunk(
        &self,
        upload_url: &str,
        bytes: Bytes,
        first: u64,
        total: u64,
        content_type: &str,
    ) -> Result<(), PlatformError> {
        let last = first + bytes.len() as u64 - 1;
        let response = self
            .ctx
            .http
            .put(upload_url)
            .header(header::CONTENT_TYPE, content_type)
            .header(
                header::CONTENT_RANGE,
                format!("bytes {first}-{last}/{total}"),
            )
            .body(bytes)
            .send_traced("tiktok")
            .await
            .map_err(PlatformError::from_reqwest)?;
        let status = response.status();
        if matches!(
            status,
            StatusCode::PARTIAL_CONTENT | StatusCode::CREATED | StatusCode::OK
        ) {
            return Ok(());
        }
        let text = response.text().await.unwrap_or_default();
        let envelope: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        Err(match envelope["error"]["code"].as_str() {
            Some(code) => classify(
                status,
                code,
                envelope["error"]["message"].as_str().unwrap_or_default(),
            ),
            None => unexpected(status, &text),
        })
    }

    /// Polls `status/fetch` until the publish settles. Still processing at the deadline is
    /// [`PlatformError::StillProcessing`]: TikTok has the post and may yet publish it.
    async fn wait_for_outcome(&self, publish_id: &str) -> Result<Published, PlatformError> {
        let config = self.ctx.config;
        let deadline = processing_deadline(config);
        loop {
            match self.read_status(publish_id).await {
                Ok(Some(published)) => return Ok(published),
                Ok(None) => {}
                // The post is already on its way: a hiccup while asking is not its failure.
                Err(e) if e.is_transient() => {}
                Err(e) => return Err(e),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(PlatformError::StillProcessing(Box::new(
                    Pending::TiktokPublish {
                        publish_id: publish_id.to_string(),
                    },
                )));
            }
            poll_pause(config).await;
        }
    }

    /// One `status/fetch`: `Some` once the publish settled, `None` while TikTok processes it.
    async fn read_status(&self, publish_id: &str) -> Result<Option<Published>, PlatformError> {
        let body = json!({"publish_id": publish_id});
        let data = self
            .call("/v2/post/publish/status/fetch/", Some(&body))
            .await?;
        match data["status"].as_str().unwrap_or_default() {
            "PUBLISH_COMPLETE" => {
                // The public id can lag behind, and SELF_ONLY posts never get one.
                let post_id = data["publicaly_available_post_id"]
                    .as_array()
                    .and_then(|ids| ids.first())
                    .and_then(|id| match id {
                        Value::String(s) => Some(s.clone()),
                        Value::Number(n) => Some(n.to_string()),
                        _ => None,
                    })
                    .unwrap_or_else(|| publish_id.to_string());
                Ok(Some(Published::single(post_id)))
            }
            "SEND_TO_USER_INBOX" => Ok(Some(Published::single(publish_id))),
            "FAILED" => {
                let reason = data["fail_reason"]
                    .as_str()
                    .filter(|r| !r.is_empty())
                    .unwrap_or("unknown")
                    .to_string();
                Err(if reason.ends_with("_pull_failed") {
                    PlatformError::MediaFetch(format!(
                        "TikTok could not download the media ({reason})"
                    ))
                } else {
                    PlatformError::ProcessingFailed(format!("TikTok failed the post: {reason}"))
                })
            }
            _ => Ok(None),
        }
    }
}

/// One look at a publish TikTok was still processing at our deadline.
pub async fn resume(
    ctx: &PlatformContext<'_>,
    publish_id: &str,
) -> Result<Option<Published>, PlatformError> {
    Api { ctx }.read_status(publish_id).await
}

/// TikTok's error codes, classified.
/// The scope a Content Posting call needs, per TikTok's reference for each endpoint: direct
/// posts and creator info `video.publish`, inbox uploads `video.upload`, a photo post by its
/// `post_mode`, the status either.
fn posting_scope(path: &str, body: Option<&Value>) -> &'static str {
    match path {
        "/v2/post/publish/inbox/video/init/" => "video.upload",
        "/v2/post/publish/content/init/"
            if body.is_some_and(|b| b["post_mode"] == "MEDIA_UPLOAD") =>
        {
            "video.upload"
        }
        "/v2/post/publish/status/fetch/" => "video.publish or video.upload",
        _ => "video.publish",
    }
}

pub(crate) fn classify(status: StatusCode, code: &str, message: &str) -> PlatformError {
    let detail = format!("{code}: {message}");
    match code {
        "access_token_invalid" if message.to_ascii_lowercase().contains("expired") => {
            PlatformError::TokenExpired(detail)
        }
        "access_token_invalid" => PlatformError::TokenInvalid(detail),
        c if c.starts_with("scope_") => PlatformError::Permission(detail),
        "rate_limit_exceeded" | "spam_risk_too_many_posts" => PlatformError::RateLimited {
            retry_after: RATE_LIMIT_RETRY_SECS,
            message: detail,
        },
        "internal_error" => PlatformError::Transient(detail),
        _ if status.is_server_error() => PlatformError::Transient(detail),
        _ => PlatformError::Rejected(detail),
    }
}

/// A response without TikTok's envelope (a proxy, an outage page).
pub(crate) fn unexpected(status: StatusCode, text: &str) -> PlatformError {
    let snippet: String = text.chars().take(200).collect();
    let detail = format!("TikTok answered HTTP {}: {snippet}", status.as_u16());
    if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        PlatformError::Transient(detail)
    } else {
        PlatformError::Rejected(detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1024 * 1024;

    #[test]
    fn chunk_plans_follow_tiktoks_rules() {
        // (name, size, configured chunk, chunk_size, count, last chunk)
        let cases = [
            (
                "small file goes whole",
                512 * 1024,
                8 * MB,
                512 * 1024,
                1,
                512 * 1024,
            ),
            (
                "just under 5 MiB goes whole",
                5 * MB - 1,
                8 * MB,
                5 * MB - 1,
                1,
                5 * MB - 1,
            ),
            ("exact multiple", 16 * MB, 8 * MB, 8 * MB, 2, 8 * MB),
            (
                "remainder joins the last chunk",
                12_000_000,
                5_000_000,
                5 * MB,
                2,
                12_000_000 - 5 * MB,
            ),
            (
                "size below the chunk size",
                6 * MB,
                8 * MB,
                6 * MB,
                1,
                6 * MB,
            ),
            (
                "configured chunk clamped up",
                20 * MB,
                MB,
                5 * MB,
                4,
                5 * MB,
            ),
            (
                "configured chunk clamped down",
                200 * MB,
                100 * MB,
                MAX_CHUNK,
                3,
                200 * MB - 2 * MAX_CHUNK,
            ),
        ];
        for (name, size, configured, chunk, count, last) in cases {
            let plan = ChunkPlan::new(size, configured);
            assert_eq!(plan.chunk_size, chunk, "{name}: chunk_size");
            assert_eq!(plan.count, count, "{name}: count");
            assert_eq!(plan.len_of(count - 1, size), last, "{name}: last chunk");
            let total: u64 = (0..count).map(|i| plan.len_of(i, size)).sum();
            assert_eq!(total, size, "{name}: chunks cover the file");
        }
    }

    #[test]
    fn errors_are_classified() {
        let cases = [
            (
                "access_token_invalid",
                "The access token has expired.",
                "TokenExpired",
            ),
            (
                "access_token_invalid",
                "The access token has been revoked.",
                "TokenInvalid",
            ),
            ("scope_not_authorized", "", "Permission"),
            ("scope_permission_missed", "", "Permission"),
            ("rate_limit_exceeded", "", "RateLimited"),
            ("spam_risk_too_many_posts", "", "RateLimited"),
            ("internal_error", "", "Transient"),
            ("invalid_params", "bad", "Rejected"),
        ];
        for (code, message, expected) in cases {
            let got = format!("{:?}", classify(StatusCode::BAD_REQUEST, code, message));
            assert!(got.starts_with(expected), "{code}/{message}: {got}");
        }
    }

    #[test]
    fn photo_titles_are_cut_to_90_units() {
        assert_eq!(photo_title("short\nsecond line"), "short");
        assert_eq!(photo_title(&"a".repeat(120)).len(), 90);
        // Emoji take two UTF-16 units each.
        assert_eq!(photo_title(&"😀".repeat(60)).chars().count(), 45);
    }
}
