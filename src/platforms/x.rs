//! X API v2 adapter (`../shared/design/platform-apis.md` §7).
//!
//! Media first: each image or video is streamed from its URL into a media upload v2 session
//! (`initialize` → `append` per chunk → `finalize`, then `STATUS` polls while `processing_info`
//! says so). Then the tweets: the first carries the media ids, each next one replies to the one
//! before. Tweet creation is the irreversible step and is never retried.

use std::time::Duration;

use bytes::Bytes;
use reqwest::{Method, RequestBuilder, StatusCode, header::HeaderMap};
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use super::{
    Pending, PlatformContext, PlatformError, Published, StepKind,
    ids::{ApiPath, InvalidId, XId},
    processing_deadline,
};
use crate::domain::plan::{MediaRef, XMedia, XPost};

/// Largest append we send: X documents chunks of at most 5 MB (v1.1), and one chunk is held in
/// memory at a time.
const MAX_CHUNK_BYTES: u64 = 4 * 1024 * 1024;
/// `segment_index` runs 0..=999.
const MAX_SEGMENTS: u64 = 1_000;
/// Used when a 429 has no usable `x-rate-limit-reset` (X's window is 15 minutes).
const DEFAULT_RETRY_AFTER: u64 = 900;
/// The OAuth 2.0 scopes `POST /2/tweets` needs (its `security` in the OpenAPI spec).
const POST_SCOPES: &str = "tweet.read, tweet.write, users.read";
/// The OAuth 2.0 scopes `GET /2/users/{id}/tweets` needs.
const READ_SCOPES: &str = "tweet.read, users.read";
/// The scope of every media upload endpoint.
const MEDIA_SCOPES: &str = "media.write";

/// Names the scopes a call needs in a refusal for want of permission: X's 403 says only
/// "Forbidden", and the user must know what to grant on reconnecting.
fn needs_scopes(error: PlatformError, scopes: &str) -> PlatformError {
    match error {
        PlatformError::Permission(detail) => {
            PlatformError::Permission(format!("{detail} (this call needs the scopes {scopes})"))
        }
        other => other,
    }
}

pub async fn publish(ctx: &PlatformContext<'_>, post: &XPost) -> Result<Published, PlatformError> {
    if post.tweets.is_empty() {
        return Err(PlatformError::Rejected(
            "an x post needs at least one tweet".into(),
        ));
    }
    let x = Client::new(ctx);
    let uploads: Vec<(&MediaRef, &str)> = match &post.media {
        XMedia::None => Vec::new(),
        XMedia::Images(images) => images.iter().map(|i| (i, "tweet_image")).collect(),
        XMedia::Video(video) => vec![(video, "tweet_video")],
    };
    let mut media_ids = Vec::with_capacity(uploads.len());
    for (index, (media, category)) in uploads.iter().enumerate() {
        match x.upload(media, category).await {
            Ok(id) => media_ids.push(id),
            // The last media still processing: everything else is ready, so a continuation
            // can create the tweets once it is (nothing is published until then).
            Err(PlatformError::StillProcessing(pending)) if index + 1 == uploads.len() => {
                let media_id = pending.object_id().to_string();
                media_ids.push(media_id.clone());
                return Err(PlatformError::StillProcessing(Box::new(Pending::XMedia {
                    media_id,
                    media_ids,
                    tweets: post.tweets.clone(),
                })));
            }
            // An earlier one: the rest was never uploaded; nothing was published.
            Err(PlatformError::StillProcessing(pending)) => {
                return Err(PlatformError::ProcessingFailed(format!(
                    "x did not finish processing media {} within {} s; nothing was published",
                    pending.object_id(),
                    ctx.config.processing_timeout_secs
                )));
            }
            Err(other) => return Err(other),
        }
    }
    post_tweets(ctx, &x, &post.tweets, &media_ids).await
}

/// ★ The tweets: the first carries the media, each next one replies to the one before.
async fn post_tweets(
    ctx: &PlatformContext<'_>,
    x: &Client<'_>,
    tweets: &[String],
    media_ids: &[String],
) -> Result<Published, PlatformError> {
    ctx.steps.before_final().await?;
    let mut ids: Vec<String> = Vec::with_capacity(tweets.len());
    for (i, text) in tweets.iter().enumerate() {
        let mut body = json!({ "text": text });
        if i == 0 && !media_ids.is_empty() {
            body["media"] = json!({ "media_ids": media_ids });
        }
        if let Some(previous) = ids.last() {
            body["reply"] = json!({ "in_reply_to_tweet_id": previous });
        }
        // A failure after the first tweet leaves the thread partly out; the ids recorded so far
        // tell what was published, so the error is returned as is.
        let id = x.create_tweet(&body).await?;
        ctx.steps.record(StepKind::Post, &id).await?;
        ids.push(id);
    }
    let first = ids.first().cloned().unwrap_or_default();
    Ok(Published {
        post_id: first,
        post_ids: if ids.len() > 1 { ids } else { Vec::new() },
        warnings: Vec::new(),
    })
}

/// One look at the media X was still processing at our deadline; once it is ready, the tweets.
pub async fn resume(
    ctx: &PlatformContext<'_>,
    media_id: &str,
    media_ids: &[String],
    tweets: &[String],
) -> Result<Option<Published>, PlatformError> {
    if tweets.is_empty() {
        return Err(PlatformError::Rejected(
            "an x post needs at least one tweet".into(),
        ));
    }
    let x = Client::new(ctx);
    let info = x.processing_info(media_id).await?;
    if !processing_done(media_id, &info)? {
        return Ok(None);
    }
    post_tweets(ctx, &x, tweets, media_ids).await.map(Some)
}

/// Whether X lists a post with the text it was sent with, so that a listing can tell whether
/// it went out: X rewrites links (anything with `://`, and bare domains such as `example.com`)
/// to `t.co`, escapes `&`, `<` and `>`, and may normalize line ends and combining marks. Text
/// with any of those is not looked for.
pub fn lists_as_sent(text: &str) -> bool {
    let combining = |c: char| {
        matches!(c, '\u{0300}'..='\u{036F}' | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}'
            | '\u{20D0}'..='\u{20FF}' | '\u{FE20}'..='\u{FE2F}')
    };
    let link = |word: &str| {
        word.contains("://")
            || word.as_bytes().windows(3).any(|w| {
                w[1] == b'.' && w[0].is_ascii_alphanumeric() && w[2].is_ascii_alphanumeric()
            })
    };
    !text.contains(['&', '<', '>', '\r'])
        && !text.chars().any(combining)
        && !text.split_whitespace().any(link)
}

/// ★ Looks for the post a cut-off final call would have made: among the account's posts
/// created since `since` (less the clocks' skew), newest first, replies and reposts left out
/// (`GET /2/users/{id}/tweets`), one whose text is `text` (see [`lists_as_sent`]). `None`: the
/// listing holds every such post and none is it. More than one page of them cannot be told
/// apart, and is an error.
pub async fn find_post(
    ctx: &PlatformContext<'_>,
    text: &str,
    since: chrono::DateTime<chrono::Utc>,
) -> Result<Option<String>, PlatformError> {
    let user = XId::parse(&ctx.account.external_id).map_err(InvalidId::not_found)?;
    let earliest = since - chrono::Duration::seconds(super::LOOKUP_SKEW_SECS);
    let start = earliest.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let x = Client::new(ctx);
    let path = ApiPath::fixed("2/users").then_id(&user).then("tweets");
    let request = x.request(Method::GET, &path)?.query(&[
        ("max_results", "100"),
        ("exclude", "replies,retweets"),
        ("tweet.fields", "created_at"),
        ("start_time", start.as_str()),
    ]);
    let (_, body) = x
        .send(request)
        .await
        .map_err(|e| needs_scopes(e, READ_SCOPES))?;
    let found = body["data"].as_array().into_iter().flatten().find(|post| {
        let created = post["created_at"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
        post["text"].as_str().map(str::trim) == Some(text.trim())
            && created.is_none_or(|created| created >= earliest)
    });
    if let Some(post) = found {
        // Checked like every id the platform answers: it goes into URLs later.
        let id = post["id"].as_str().unwrap_or_default();
        return XId::parse(id)
            .map(|id| Some(id.into()))
            .map_err(InvalidId::unexpected);
    }
    if body["meta"]["next_token"].is_string() {
        return Err(PlatformError::Rejected(
            "x lists more posts since the final call than one page holds".into(),
        ));
    }
    if body.get("meta").is_none() {
        return Err(PlatformError::Rejected(format!(
            "x did not list the account's posts: {}",
            problem_message(&body).unwrap_or_else(|| body.to_string())
        )));
    }
    Ok(None)
}

/// Whether media processing is over: `true` when ready (no `processing_info` means ready),
/// `false` while pending or in progress; its failure, with X's words, as an error.
fn processing_done(id: &str, info: &Value) -> Result<bool, PlatformError> {
    match info["state"].as_str() {
        None | Some("succeeded") => Ok(true),
        Some("failed") => {
            let error = &info["error"];
            let message = error["message"]
                .as_str()
                .or_else(|| error["name"].as_str())
                .unwrap_or("media processing failed");
            Err(PlatformError::ProcessingFailed(format!(
                "x could not process media {id}: {message}"
            )))
        }
        Some(_) => Ok(false),
    }
}

struct Client<'a> {
    ctx: &'a PlatformContext<'a>,
    base: String,
}

impl<'a> Client<'a> {
    fn new(ctx: &'a PlatformContext<'a>) -> Self {
        Self {
            ctx,
            base: ctx.config.x_url.trim_end_matches('/').to_string(),
        }
    }

    fn request(&self, method: Method, path: &ApiPath) -> Result<RequestBuilder, PlatformError> {
        Ok(self
            .ctx
            .http
            .request(method, path.on(&self.base)?)
            .bearer_auth(self.ctx.account.access_token.expose_secret())
            .timeout(Duration::from_secs(
                self.ctx.config.call_timeout_secs.max(1),
            )))
    }

    /// Sends a call; a 2xx gives its JSON body, anything else a classified error.
    async fn send(&self, request: RequestBuilder) -> Result<(StatusCode, Value), PlatformError> {
        let response = super::traced_send("x", request)
            .await
            .map_err(PlatformError::from_reqwest)?;
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.map_err(PlatformError::from_reqwest)?;
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(classify(status, &headers, &body, &text));
        }
        // A 200 can carry a legacy rate-limit error instead of data.
        if body.get("data").is_none() && legacy_code(&body) == Some(88) {
            return Err(classify(
                StatusCode::TOO_MANY_REQUESTS,
                &headers,
                &body,
                &text,
            ));
        }
        Ok((status, body))
    }

    async fn create_tweet(&self, body: &Value) -> Result<String, PlatformError> {
        let (_, response) = self
            .send(
                self.request(Method::POST, &ApiPath::fixed("2/tweets"))?
                    .json(body),
            )
            .await
            .map_err(|e| needs_scopes(e, POST_SCOPES))?;
        response["data"]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| {
                PlatformError::Rejected(format!(
                    "x answered without a post id: {}",
                    problem_message(&response).unwrap_or_else(|| response.to_string())
                ))
            })
    }

    /// Uploads one media file and waits until X has processed it; returns the media id.
    async fn upload(&self, media: &MediaRef, category: &str) -> Result<String, PlatformError> {
        let ctx = self.ctx;
        let download = ctx.media.open_for_upload(&media.url).await?;
        let total = download.content_length.ok_or_else(|| {
            PlatformError::MediaFetch(format!(
                "{} sent no Content-Length; x needs the size before the upload starts",
                media.url
            ))
        })?;
        let media_type = if download.content_type.is_empty() {
            media.content_type.clone()
        } else {
            download.content_type.clone()
        };

        let (_, init) = self
            .send(
                self.request(Method::POST, &ApiPath::fixed("2/media/upload/initialize"))?
                    .json(&json!({
                        "media_type": media_type,
                        "total_bytes": total,
                        "media_category": category,
                    })),
            )
            .await
            .map_err(|e| needs_scopes(e, MEDIA_SCOPES))?;
        let id = init["data"]["id"].as_str().ok_or_else(|| {
            PlatformError::Rejected(format!("x initialize gave no media id: {init}"))
        })?;
        // The media id goes into the append and finalize paths.
        let id = XId::parse(id).map_err(InvalidId::unexpected)?;
        ctx.steps.record(StepKind::Media, id.as_str()).await?;

        // Large files need bigger chunks to stay within 1000 segments.
        let chunk = ctx
            .config
            .upload_chunk_bytes
            .clamp(1, MAX_CHUNK_BYTES)
            .max(total.div_ceil(MAX_SEGMENTS));
        let mut reader = download.into_chunks(usize::try_from(chunk).unwrap_or(usize::MAX));
        let mut segment: u64 = 0;
        while let Some(bytes) = reader.next_chunk().await? {
            let (content_type, body) = multipart_segment(segment, &bytes);
            self.send(
                self.request(
                    Method::POST,
                    &ApiPath::fixed("2/media/upload").then_id(&id).then("append"),
                )?
                .header(reqwest::header::CONTENT_TYPE, content_type)
                .body(body),
            )
            .await
            .map_err(|e| needs_scopes(e, MEDIA_SCOPES))?;
            segment += 1;
        }

        let (_, finalized) = self
            .send(
                self.request(
                    Method::POST,
                    &ApiPath::fixed("2/media/upload")
                        .then_id(&id)
                        .then("finalize"),
                )?,
            )
            .await
            .map_err(|e| needs_scopes(e, MEDIA_SCOPES))?;
        self.await_processing(id.as_str(), &finalized["data"])
            .await?;
        Ok(id.into())
    }

    /// Polls `STATUS` while `processing_info` is pending or in progress, waiting what X asks
    /// (`check_after_secs`) but never less than our poll interval. Still processing at the
    /// deadline is [`PlatformError::StillProcessing`] (the caller says what is left to do).
    async fn await_processing(&self, id: &str, data: &Value) -> Result<(), PlatformError> {
        let config = self.ctx.config;
        let deadline = processing_deadline(config);
        let mut info = data["processing_info"].clone();
        loop {
            if processing_done(id, &info)? {
                return Ok(());
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Err(PlatformError::StillProcessing(Box::new(Pending::XMedia {
                    media_id: id.to_string(),
                    media_ids: Vec::new(),
                    tweets: Vec::new(),
                })));
            }
            let asked = Duration::from_secs(info["check_after_secs"].as_u64().unwrap_or(1));
            let pause = asked.max(Duration::from_millis(config.poll_interval_ms));
            tokio::time::sleep_until((now + pause).min(deadline)).await;
            info = self.processing_info(id).await?;
        }
    }

    /// `STATUS` of an upload: its `processing_info`.
    async fn processing_info(&self, id: &str) -> Result<Value, PlatformError> {
        // A stored media id goes into the query only once it is checked as an X id.
        let id = XId::parse(id).map_err(InvalidId::not_found)?;
        let (_, status) = self
            .send(
                self.request(Method::GET, &ApiPath::fixed("2/media/upload"))?
                    .query(&[("command", "STATUS"), ("media_id", id.as_str())]),
            )
            .await
            .map_err(|e| needs_scopes(e, MEDIA_SCOPES))?;
        Ok(status["data"]["processing_info"].clone())
    }
}

/// A `multipart/form-data` body with `segment_index` and the `media` bytes. Built by hand: it
/// is two fields, and reqwest's `multipart` feature would add dependencies for that alone.
fn multipart_segment(segment: u64, bytes: &Bytes) -> (String, Vec<u8>) {
    let boundary = format!("x-upload-{}", uuid::Uuid::new_v4().simple());
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"segment_index\"\r\n\r\n{segment}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"media\"; filename=\"blob\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    let mut body = Vec::with_capacity(head.len() + bytes.len() + tail.len());
    body.extend_from_slice(head.as_bytes());
    body.extend_from_slice(bytes);
    body.extend_from_slice(tail.as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The code of a legacy `{"errors":[{"code":..,"message":..}]}` body.
fn legacy_code(body: &Value) -> Option<i64> {
    body["errors"]
        .as_array()?
        .iter()
        .find_map(|e| e["code"].as_i64())
}

/// A readable message from a problem, a legacy error list, or both.
fn problem_message(body: &Value) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(detail) = body["detail"].as_str().or_else(|| body["title"].as_str()) {
        parts.push(detail.to_string());
    }
    if let Some(errors) = body["errors"].as_array() {
        for e in errors {
            let message = e["message"].as_str().or_else(|| e["detail"].as_str());
            if let Some(message) = message {
                let parameters = e["parameters"]
                    .as_object()
                    .map(|p| p.keys().cloned().collect::<Vec<_>>().join(","))
                    .or_else(|| e["parameter"].as_str().map(str::to_string));
                parts.push(match parameters {
                    Some(p) if !p.is_empty() => format!("{p}: {message}"),
                    _ => message.to_string(),
                });
            }
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Seconds until `x-rate-limit-reset` (unix seconds), at least 1.
fn retry_after(headers: &HeaderMap) -> u64 {
    headers
        .get("x-rate-limit-reset")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok())
        .map(|reset| (reset - chrono::Utc::now().timestamp()).max(1) as u64)
        .unwrap_or(DEFAULT_RETRY_AFTER)
}

/// Classifies a failed call. X's bodies vary (RFC 7807 problems, the legacy error list), so this
/// reads the status first and the body's words second.
fn classify(status: StatusCode, headers: &HeaderMap, body: &Value, raw: &str) -> PlatformError {
    let message = problem_message(body).unwrap_or_else(|| {
        let trimmed: String = raw.trim().chars().take(300).collect();
        if trimmed.is_empty() {
            format!("HTTP {}", status.as_u16())
        } else {
            trimmed
        }
    });
    let kind = body["type"].as_str().unwrap_or_default();
    let lower = message.to_ascii_lowercase();
    if status == StatusCode::TOO_MANY_REQUESTS
        || legacy_code(body) == Some(88)
        || kind.ends_with("/usage-capped")
    {
        return PlatformError::RateLimited {
            retry_after: retry_after(headers),
            message,
        };
    }
    match status.as_u16() {
        401 => {
            // X sends the same problem for expired and revoked tokens; an RFC 6750 challenge
            // or the legacy "Invalid or expired token" may still say which.
            let challenge = headers
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_ascii_lowercase();
            if lower.contains("expired") || challenge.contains("expired") {
                PlatformError::TokenExpired(message)
            } else {
                PlatformError::TokenInvalid(message)
            }
        }
        403 if lower.contains("duplicate") => PlatformError::Rejected(message),
        403 => PlatformError::Permission(message),
        500..=599 => PlatformError::Transient(message),
        _ => PlatformError::Rejected(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn legacy_rate_limit_and_problem_rate_limit_both_classify() {
        let mut headers = HeaderMap::new();
        let reset = chrono::Utc::now().timestamp() + 120;
        headers.insert(
            "x-rate-limit-reset",
            HeaderValue::from_str(&reset.to_string()).unwrap(),
        );
        let legacy = json!({"errors":[{"code":88,"message":"Rate limit exceeded"}]});
        match classify(StatusCode::TOO_MANY_REQUESTS, &headers, &legacy, "") {
            PlatformError::RateLimited { retry_after, .. } => {
                assert!((115..=121).contains(&retry_after))
            }
            other => panic!("{other:?}"),
        }
        let capped = json!({"title":"Usage capped","type":"https://api.twitter.com/2/problems/usage-capped","period":"Monthly"});
        assert!(matches!(
            classify(StatusCode::FORBIDDEN, &HeaderMap::new(), &capped, ""),
            PlatformError::RateLimited {
                retry_after: 900,
                ..
            }
        ));
    }

    #[test]
    fn forbidden_kinds() {
        let dup = json!({"detail":"You are not allowed to create a Tweet with duplicate content.","type":"about:blank","title":"Forbidden","status":403});
        assert!(matches!(
            classify(StatusCode::FORBIDDEN, &HeaderMap::new(), &dup, ""),
            PlatformError::Rejected(m) if m.contains("duplicate content")
        ));
        let forbidden = json!({"title":"Client Forbidden","type":"https://api.twitter.com/2/problems/client-forbidden","reason":"client-not-enrolled","detail":"When authenticating requests to the Twitter API v2 endpoints, you must use keys and tokens from a Twitter developer App that is attached to a Project."});
        assert!(matches!(
            classify(StatusCode::FORBIDDEN, &HeaderMap::new(), &forbidden, ""),
            PlatformError::Permission(_)
        ));
        let legacy_expired = json!({"errors":[{"code":89,"message":"Invalid or expired token."}]});
        assert!(matches!(
            classify(
                StatusCode::UNAUTHORIZED,
                &HeaderMap::new(),
                &legacy_expired,
                ""
            ),
            PlatformError::TokenExpired(_)
        ));
        let invalid = json!({"errors":[{"parameters":{"media.media_ids":["1"]},"message":"Your media IDs are invalid."}],"title":"Invalid Request","detail":"One or more parameters to your request was invalid.","type":"https://api.twitter.com/2/problems/invalid-request"});
        assert!(matches!(
            classify(StatusCode::BAD_REQUEST, &HeaderMap::new(), &invalid, ""),
            PlatformError::Rejected(m) if m.contains("media.media_ids: Your media IDs are invalid.")
        ));
    }

    #[test]
    fn only_text_x_lists_as_sent_is_looked_up() {
        for plain in [
            "cut off",
            "@someone #launch 100% done!",
            "line one\nline two",
            "é 👍🏽",
        ] {
            assert!(lists_as_sent(plain), "{plain:?}");
        }
        for rewritten in [
            "see https://example.com/a",
            "see example.com",
            "fish & chips",
            "a <b> c",
            "windows\r\nline",
            "cafe\u{0301}",
        ] {
            assert!(!lists_as_sent(rewritten), "{rewritten:?}");
        }
    }

    #[test]
    fn multipart_body_shape() {
        let (content_type, body) = multipart_segment(3, &Bytes::from_static(b"abc"));
        let boundary = content_type.split("boundary=").nth(1).unwrap();
        let text = String::from_utf8(body).unwrap();
        assert!(text.starts_with(&format!("--{boundary}\r\n")));
        assert!(text.contains("name=\"segment_index\"\r\n\r\n3\r\n"));
        assert!(text.ends_with(&format!("\r\n\r\nabc\r\n--{boundary}--\r\n")));
    }
}
