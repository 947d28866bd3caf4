//! youtube adapter: the YouTube Data API v3 (platform-apis.md §6).
//!
//! Resumable `videos.insert` (session `POST` → `PUT` of the streamed file), then `videos.list`
//! until `uploadStatus` is `processed`, then `thumbnails.set` when a thumbnail is given. The
//! `PUT` is the final call: once the bytes are in, the video exists. A thumbnail that fails after
//! that is a warning on the published result, not a failed publish.

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::America::Los_Angeles;
use reqwest::{StatusCode, header};
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use super::{
    Pending, PendingMedia, PlatformContext, PlatformError, Published, SendTraced, StepKind,
    ids::{ApiPath, InvalidId, YoutubeVideoId},
    poll_pause, processing_deadline,
};
use crate::domain::plan::{MediaKind, MediaRef, YoutubePost};

/// thumbnails.set `maxSize` in the discovery document.
const MAX_THUMBNAIL_BYTES: u64 = 2_097_152;
/// Where no better hint exists (e.g. per-minute rate limits).
const SHORT_RETRY_SECS: u64 = 60;
const FALLBACK_RETRY_SECS: u64 = 3600;
/// The scopes our authorization asks for (`oauth::authorize_url`), each the one a call below
/// relies on among those its discovery entry accepts.
pub(crate) const SCOPE_UPLOAD: &str = "https://www.googleapis.com/auth/youtube.upload";
pub(crate) const SCOPE_READONLY: &str = "https://www.googleapis.com/auth/youtube.readonly";
pub(crate) const SCOPE_ANALYTICS: &str = "https://www.googleapis.com/auth/yt-analytics.readonly";

/// Names the scope a call needs in a refusal for want of one: Google's 403
/// `insufficientPermissions` says only "insufficient authentication scopes".
pub(crate) fn needs_scope(error: PlatformError, scope: &str) -> PlatformError {
    match error {
        PlatformError::Permission(detail) if detail.starts_with("insufficientPermissions") => {
            PlatformError::Permission(format!("{detail} (this call needs the scope {scope})"))
        }
        other => other,
    }
}

pub async fn publish(
    ctx: &PlatformContext<'_>,
    post: &YoutubePost,
) -> Result<Published, PlatformError> {
    let api = Api { ctx };
    let download = ctx.media.open_for_upload(&post.video.url).await?;
    let length = download
        .content_length
        .or(post.video.size)
        .filter(|l| *l > 0)
        .ok_or_else(|| {
            PlatformError::MediaFetch(format!(
                "{} did not send a Content-Length; the upload needs the file size",
                post.video.url
            ))
        })?;
    let content_type = if download.content_type.is_empty() {
        post.video.content_type.clone()
    } else {
        download.content_type.clone()
    };

    let session = api.start_session(post, length, &content_type).await?;
    ctx.steps.record(StepKind::UploadSession, &session).await?;
    ctx.steps.before_final().await?;
    let video_id = api
        .upload(&session, download.into_body(), length, &content_type)
        .await?;
    ctx.steps.record(StepKind::Video, &video_id).await?;
    let waited = api.wait_processed(&video_id).await;
    ctx.steps.processed(&video_id, &waited).await;
    waited.map_err(|e| match e {
        // The continuation sets the thumbnail once the video is processed.
        PlatformError::StillProcessing(_) => {
            PlatformError::StillProcessing(Box::new(Pending::YoutubeVideo {
                video_id: video_id.clone(),
                thumbnail: post.thumbnail.as_ref().map(|t| PendingMedia {
                    url: t.url.clone(),
                    content_type: t.content_type.clone(),
                }),
            }))
        }
        other => other,
    })?;
    Ok(api.finish(&video_id, post.thumbnail.as_ref()).await)
}

/// One look at a video YouTube was still processing at our deadline; once processed, its
/// thumbnail is set (a refusal there is a warning, as in a publish).
pub async fn resume(
    ctx: &PlatformContext<'_>,
    video_id: &str,
    thumbnail: Option<&PendingMedia>,
) -> Result<Option<Published>, PlatformError> {
    let api = Api { ctx };
    if !api.read_processed(video_id).await? {
        return Ok(None);
    }
    let thumbnail = thumbnail.map(|t| MediaRef {
        url: t.url.clone(),
        kind: MediaKind::Image,
        content_type: t.content_type.clone(),
        size: None,
        dimensions: None,
    });
    Ok(Some(api.finish(video_id, thumbnail.as_ref()).await))
}

/// One look at an upload cut off mid-flight (its instance stopped): `None` when the session
/// holds only part of the file (YouTube made no video of it); the published video once the
/// completed upload is processed, [`PlatformError::StillProcessing`] until then.
pub async fn resume_upload(
    ctx: &PlatformContext<'_>,
    session: &str,
) -> Result<Option<Published>, PlatformError> {
    let api = Api { ctx };
    // The session was checked when YouTube gave it; it is checked again before it is called.
    let session = session_on_upload_host(&api.upload_url("/upload/youtube/v3/videos")?, session)?;
    let Some(video_id) = api.probe(&session, None).await? else {
        return Ok(None);
    };
    YoutubeVideoId::parse(&video_id).map_err(InvalidId::unexpected)?;
    match resume(ctx, &video_id, None).await? {
        Some(published) => Ok(Some(published)),
        None => Err(PlatformError::StillProcessing(Box::new(
            Pending::YoutubeVideo {
                video_id,
                thumbnail: None,
            },
        ))),
    }
}

struct Api<'c, 'a> {
    ctx: &'c PlatformContext<'a>,
}

impl Api<'_, '_> {
    fn url(&self, path: &'static str) -> Result<url::Url, PlatformError> {
        ApiPath::fixed(path).on(&self.ctx.config.youtube_url)
    }

    /// Media goes to the upload host, which Google keeps apart from the data host.
    fn upload_url(&self, path: &'static str) -> Result<url::Url, PlatformError> {
        ApiPath::fixed(path).on(&self.ctx.config.youtube_upload_url)
    }

    fn token(&self) -> &str {
        self.ctx.account.access_token.expose_secret()
    }

    fn call_timeout(&self) -> Duration {
        Duration::from_secs(self.ctx.config.call_timeout_secs)
    }

    /// Opens a resumable upload session; returns its URI.
    async fn start_session(
        &self,
        post: &YoutubePost,
        length: u64,
        content_type: &str,
    ) -> Result<String, PlatformError> {
        let metadata = json!({
            "snippet": {"title": post.title, "description": post.description, "categoryId": "22"},
            "status": {"privacyStatus": "public", "selfDeclaredMadeForKids": false},
        });
        let endpoint = self.upload_url("/upload/youtube/v3/videos")?;
        let response = self
            .ctx
            .http
            .post(endpoint.clone())
            .query(&[("uploadType", "resumable"), ("part", "snippet,status")])
            .bearer_auth(self.token())
            .header(header::CONTENT_TYPE, "application/json; charset=UTF-8")
            .header("X-Upload-Content-Length", length.to_string())
            .header("X-Upload-Content-Type", content_type)
            .timeout(self.call_timeout())
            .body(metadata.to_string())
            .send_traced("youtube")
            .await
            .map_err(PlatformError::from_reqwest)?;
        if !response.status().is_success() {
            return Err(needs_scope(google_error(response).await, SCOPE_UPLOAD));
        }
        let location = response
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                PlatformError::Rejected("YouTube opened no upload session (no Location)".into())
            })?;
        session_on_upload_host(&endpoint, location)
    }

    /// Streams the whole file into the session; returns the video id.
    async fn upload(
        &self,
        session: &str,
        body: reqwest::Body,
        length: u64,
        content_type: &str,
    ) -> Result<String, PlatformError> {
        // No call timeout: a large file takes as long as it takes.
        let sent = self
            .ctx
            .http
            .put(session)
            .bearer_auth(self.token())
            .header(header::CONTENT_TYPE, content_type)
            .header(header::CONTENT_LENGTH, length)
            .body(body)
            .send_traced("youtube")
            .await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                // The bytes may all be in and only the answer lost: ask the session.
                return match self.probe(session, Some(length)).await {
                    Ok(Some(video_id)) => Ok(video_id),
                    _ => Err(PlatformError::from_reqwest(e)),
                };
            }
        };
        match response.status() {
            StatusCode::OK | StatusCode::CREATED => video_id_of(response).await,
            StatusCode::PERMANENT_REDIRECT => Err(PlatformError::Transient(format!(
                "YouTube kept only part of the upload ({})",
                range_of(&response)
            ))),
            _ => Err(google_error(response).await),
        }
    }

    /// `PUT` with `Content-Range: bytes */total` (`bytes */*` when the length is not known):
    /// the video id if the upload is complete.
    async fn probe(
        &self,
        session: &str,
        length: Option<u64>,
    ) -> Result<Option<String>, PlatformError> {
        let total = length.map_or_else(|| "*".to_string(), |length| length.to_string());
        let response = self
            .ctx
            .http
            .put(session)
            .bearer_auth(self.token())
            .header(header::CONTENT_RANGE, format!("bytes */{total}"))
            .header(header::CONTENT_LENGTH, 0)
            .timeout(self.call_timeout())
            .send_traced("youtube")
            .await
            .map_err(PlatformError::from_reqwest)?;
        match response.status() {
            StatusCode::OK | StatusCode::CREATED => video_id_of(response).await.map(Some),
            StatusCode::PERMANENT_REDIRECT => Ok(None),
            _ => Err(google_error(response).await),
        }
    }

    /// Polls `videos.list` until the video is processed. Still processing at the deadline is
    /// [`PlatformError::StillProcessing`]: the upload is complete and the video may yet go out.
    async fn wait_processed(&self, video_id: &str) -> Result<(), PlatformError> {
        let config = self.ctx.config;
        let deadline = processing_deadline(config);
        loop {
            match self.read_processed(video_id).await {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) if e.is_transient() => {}
                Err(e) => return Err(e),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(PlatformError::StillProcessing(Box::new(
                    Pending::YoutubeVideo {
                        video_id: video_id.to_string(),
                        thumbnail: None,
                    },
                )));
            }
            poll_pause(config).await;
        }
    }

    /// One `videos.list` read: whether the video is processed (false while YouTube processes it,
    /// or has not listed it yet); its failure, with YouTube's reason, as an error.
    async fn read_processed(&self, video_id: &str) -> Result<bool, PlatformError> {
        // Freshly uploaded videos may take a moment to show up in lists.
        let Some(status) = self.video_status(video_id).await? else {
            return Ok(false);
        };
        match status["uploadStatus"].as_str().unwrap_or_default() {
            "processed" => Ok(true),
            "failed" => Err(PlatformError::ProcessingFailed(format!(
                "YouTube failed to process video {video_id}: {}",
                status["failureReason"].as_str().unwrap_or("unknown")
            ))),
            "rejected" => Err(PlatformError::ProcessingFailed(format!(
                "YouTube rejected video {video_id}: {}",
                status["rejectionReason"].as_str().unwrap_or("unknown")
            ))),
            "deleted" => Err(PlatformError::ProcessingFailed(format!(
                "video {video_id} was deleted during processing"
            ))),
            _ => Ok(false),
        }
    }

    /// The published video, with its thumbnail set when one is given.
    async fn finish(&self, video_id: &str, thumbnail: Option<&MediaRef>) -> Published {
        let mut published = Published::single(video_id);
        if let Some(thumbnail) = thumbnail
            && let Err(e) = self.set_thumbnail(video_id, thumbnail).await
        {
            published.warnings.push(format!(
                "The video was published but its thumbnail could not be set: {e}"
            ));
        }
        published
    }

    async fn video_status(&self, video_id: &str) -> Result<Option<Value>, PlatformError> {
        // The id YouTube handed back goes into `id=`, where a `,` would list other videos.
        let checked = YoutubeVideoId::parse(video_id).map_err(InvalidId::unexpected)?;
        let response = self
            .ctx
            .http
            .get(self.url("/youtube/v3/videos")?)
            .query(&[
                ("part", "status,processingDetails"),
                ("id", checked.as_str()),
            ])
            .bearer_auth(self.token())
            .timeout(self.call_timeout())
            .send_traced("youtube")
            .await
            .map_err(PlatformError::from_reqwest)?;
        if !response.status().is_success() {
            return Err(needs_scope(google_error(response).await, SCOPE_READONLY));
        }
        let body: Value = response.json().await.map_err(PlatformError::from_reqwest)?;
        Ok(body["items"]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["id"] == video_id))
            .map(|item| item["status"].clone()))
    }

    /// Uploads the thumbnail's bytes (at most 2 MiB, so reading them whole is fine).
    async fn set_thumbnail(
        &self,
        video_id: &str,
        thumbnail: &MediaRef,
    ) -> Result<(), PlatformError> {
        let video_id = YoutubeVideoId::parse(video_id).map_err(InvalidId::unexpected)?;
        let download = self.ctx.media.open_for_upload(&thumbnail.url).await?;
        if download
            .content_length
            .is_some_and(|l| l > MAX_THUMBNAIL_BYTES)
        {
            return Err(PlatformError::Rejected(format!(
                "the thumbnail is larger than YouTube's {MAX_THUMBNAIL_BYTES} bytes"
            )));
        }
        let content_type = if download.content_type.is_empty() {
            thumbnail.content_type.clone()
        } else {
            download.content_type.clone()
        };
        // One piece one byte over the limit tells "too large" without reading further.
        let mut reader = download.into_chunks(MAX_THUMBNAIL_BYTES as usize + 1);
        let bytes = reader.next_chunk().await?.unwrap_or_default();
        if bytes.len() as u64 > MAX_THUMBNAIL_BYTES {
            return Err(PlatformError::Rejected(format!(
                "the thumbnail is larger than YouTube's {MAX_THUMBNAIL_BYTES} bytes"
            )));
        }
        let response = self
            .ctx
            .http
            .post(self.upload_url("/upload/youtube/v3/thumbnails/set")?)
            .query(&[("videoId", video_id.as_str()), ("uploadType", "media")])
            .bearer_auth(self.token())
            .header(header::CONTENT_TYPE, content_type)
            .timeout(self.call_timeout())
            .body(bytes)
            .send_traced("youtube")
            .await
            .map_err(PlatformError::from_reqwest)?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(needs_scope(google_error(response).await, SCOPE_UPLOAD))
        }
    }
}

/// The upload session's URL, kept only on the upload host we asked: it gets our bearer token
/// with every chunk, so never wherever an answer points.
fn session_on_upload_host(endpoint: &url::Url, location: &str) -> Result<String, PlatformError> {
    match endpoint.join(location) {
        Ok(session) if session.origin() == endpoint.origin() => Ok(session.to_string()),
        _ => Err(PlatformError::Rejected(
            "YouTube's upload session is not on the upload host".into(),
        )),
    }
}

async fn video_id_of(response: reqwest::Response) -> Result<String, PlatformError> {
    let video: Value = response.json().await.map_err(PlatformError::from_reqwest)?;
    video["id"]
        .as_str()
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            PlatformError::Rejected("YouTube answered the upload without a video id".into())
        })
}

fn range_of(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(|r| format!("has {r}"))
        .unwrap_or_else(|| "has nothing".into())
}

/// Classifies a Google JSON error response.
async fn google_error(response: reqwest::Response) -> PlatformError {
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    classify(status, &text, Utc::now())
}

pub(crate) fn classify(status: StatusCode, text: &str, now: DateTime<Utc>) -> PlatformError {
    let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let message = body["error"]["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| {
            let snippet: String = text.chars().take(200).collect();
            format!("HTTP {}: {snippet}", status.as_u16())
        });
    let reason = body["error"]["errors"][0]["reason"]
        .as_str()
        .unwrap_or_default();
    let detail = if reason.is_empty() {
        message.clone()
    } else {
        format!("{reason}: {message}")
    };
    match (status.as_u16(), reason) {
        (401, _) => {
            let lower = message.to_ascii_lowercase();
            // "Token has been expired or revoked." cannot be told apart: treat as revoked.
            if lower.contains("expired") && !lower.contains("revoked") {
                PlatformError::TokenExpired(detail)
            } else {
                PlatformError::TokenInvalid(detail)
            }
        }
        (_, "quotaExceeded" | "dailyLimitExceeded" | "uploadLimitExceeded") => {
            PlatformError::RateLimited {
                retry_after: seconds_until_pacific_midnight(now),
                message: detail,
            }
        }
        (_, "rateLimitExceeded" | "userRateLimitExceeded") | (429, _) => {
            PlatformError::RateLimited {
                retry_after: SHORT_RETRY_SECS,
                message: detail,
            }
        }
        (403, "forbidden" | "insufficientPermissions") => PlatformError::Permission(detail),
        (s, _) if s >= 500 => PlatformError::Transient(detail),
        _ => PlatformError::Rejected(detail),
    }
}

/// YouTube's daily quota resets at midnight Pacific time.
fn seconds_until_pacific_midnight(now: DateTime<Utc>) -> u64 {
    let local = now.with_timezone(&Los_Angeles);
    local
        .date_naive()
        .succ_opt()
        .and_then(|day| day.and_hms_opt(0, 0, 0))
        .and_then(|midnight| Los_Angeles.from_local_datetime(&midnight).earliest())
        .map(|midnight| (midnight.with_timezone(&Utc) - now).num_seconds())
        .and_then(|s| u64::try_from(s).ok())
        .filter(|s| *s > 0)
        .unwrap_or(FALLBACK_RETRY_SECS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn the_upload_session_stays_on_the_upload_host() {
        let endpoint =
            url::Url::parse("https://www.googleapis.com/upload/youtube/v3/videos").unwrap();
        let kept = [
            "https://www.googleapis.com/upload/youtube/v3/videos?uploadType=resumable&upload_id=abc",
            "/upload/youtube/v3/videos?upload_id=abc",
        ];
        for location in kept {
            assert!(
                session_on_upload_host(&endpoint, location)
                    .unwrap()
                    .starts_with("https://www.googleapis.com/upload/"),
                "{location}"
            );
        }
        let refused = [
            "https://evil.example/upload?upload_id=abc",
            "//evil.example/upload",
            "http://www.googleapis.com/upload/youtube/v3/videos?upload_id=abc",
            "https://www.googleapis.com:8443/upload",
            "https://www.googleapis.com.evil.example/upload",
        ];
        for location in refused {
            assert!(
                session_on_upload_host(&endpoint, location).is_err(),
                "{location}"
            );
        }
    }

    #[test]
    fn quota_resets_at_pacific_midnight() {
        let cases = [
            // (name, now, seconds to wait)
            ("winter, PST is UTC-8", "2026-01-15T07:00:00Z", 3600),
            ("summer, PDT is UTC-7", "2026-07-15T06:30:00Z", 1800),
            ("just after midnight", "2026-01-15T08:00:01Z", 86_399),
            (
                "day before spring forward is 23h",
                "2026-03-08T08:00:00Z",
                23 * 3600,
            ),
            (
                "day before fall back is 25h",
                "2026-11-01T07:00:00Z",
                25 * 3600,
            ),
        ];
        for (name, now, expected) in cases {
            assert_eq!(seconds_until_pacific_midnight(at(now)), expected, "{name}");
        }
    }

    #[test]
    fn google_errors_are_classified() {
        let err = |code: u16, reason: &str, message: &str| {
            json!({"error": {"code": code, "message": message,
                "errors": [{"message": message, "domain": "global", "reason": reason}]}})
            .to_string()
        };
        let now = at("2026-01-15T07:00:00Z");
        let cases = [
            (
                401,
                "authError",
                "Request had invalid authentication credentials. The access token expired.",
                "TokenExpired",
            ),
            (
                401,
                "authError",
                "Token has been expired or revoked.",
                "TokenInvalid",
            ),
            (
                401,
                "required",
                "Request is missing required authentication credential.",
                "TokenInvalid",
            ),
            (
                403,
                "quotaExceeded",
                "quota",
                "RateLimited { retry_after: 3600",
            ),
            (
                400,
                "uploadLimitExceeded",
                "too many",
                "RateLimited { retry_after: 3600",
            ),
            (
                403,
                "rateLimitExceeded",
                "slow down",
                "RateLimited { retry_after: 60",
            ),
            (403, "forbidden", "no", "Permission"),
            (403, "insufficientPermissions", "scopes", "Permission"),
            (503, "backendError", "Backend Error", "Transient"),
            (400, "invalidTitle", "bad title", "Rejected"),
        ];
        for (code, reason, message, expected) in cases {
            let status = StatusCode::from_u16(code).unwrap();
            let got = format!("{:?}", classify(status, &err(code, reason, message), now));
            assert!(got.starts_with(expected), "{code} {reason}: {got}");
        }
        let got = format!("{:?}", classify(StatusCode::BAD_GATEWAY, "<html>", now));
        assert!(got.starts_with("Transient"), "{got}");
    }
}
