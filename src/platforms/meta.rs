//! The Meta layer shared by the facebook, instagram and threads adapters
//! (`../shared/design/platform-apis.md` §1): one request helper, the Graph error object's
//! classification into [`PlatformError`], rate-limit header reading, and container polling.

use std::time::Duration;

use reqwest::{Method, header::HeaderMap};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

use entity::account::LoginRoute;

use super::{
    AccountCredentials, PlatformContext, PlatformError,
    ids::{ApiPath, FacebookPostId, GraphId, InvalidId},
    poll_pause, processing_deadline,
};
use crate::config::PlatformsConfig;

/// Retry-after when a rate-limited answer does not say how long to wait (Meta sends no
/// `Retry-After`; the usage headers are optional).
pub const DEFAULT_RETRY_AFTER_SECS: u64 = 60;

/// A client for one Meta host and account: `{base}/{version}/…` with the account's token.
pub struct Graph<'a> {
    http: &'a reqwest::Client,
    base: String,
    token: &'a SecretString,
    timeout: Duration,
    pub config: &'a PlatformsConfig,
}

impl<'a> Graph<'a> {
    /// `graph.facebook.com` (facebook pages).
    pub fn facebook(ctx: &'a PlatformContext<'a>) -> Self {
        Self::new(ctx, &ctx.config.graph_url, &ctx.config.graph_version)
    }

    /// The host of an instagram account, by how it was connected: graph.facebook.com with
    /// Facebook Login, graph.instagram.com with Instagram Login (`platform-apis.md` §3 "Hosts";
    /// paths, parameters and answers are the same on both). Publishing and insights both build
    /// their client here, so the route is decided in one place.
    pub fn instagram(ctx: &'a PlatformContext<'a>) -> Self {
        Self::instagram_for(ctx.http, ctx.config, ctx.account)
    }

    /// [`Self::instagram`] from its parts (the insights readers have no publish context).
    pub fn instagram_for(
        http: &'a reqwest::Client,
        config: &'a PlatformsConfig,
        account: &'a AccountCredentials,
    ) -> Self {
        let url = match account.login_route {
            LoginRoute::FacebookLogin => &config.graph_url,
            LoginRoute::InstagramLogin => &config.instagram_login_graph_url,
        };
        Self::with_parts(
            http,
            config,
            &account.access_token,
            url,
            &config.graph_version,
        )
    }

    /// `graph-video.facebook.com`: where Meta takes video uploads (facebook page videos).
    pub fn facebook_video(ctx: &'a PlatformContext<'a>) -> Self {
        Self::new(ctx, &ctx.config.graph_video_url, &ctx.config.graph_version)
    }

    /// `graph.threads.net`.
    pub fn threads(ctx: &'a PlatformContext<'a>) -> Self {
        Self::new(ctx, &ctx.config.threads_url, &ctx.config.threads_version)
    }

    fn new(ctx: &'a PlatformContext<'a>, url: &str, version: &str) -> Self {
        Self::with_parts(
            ctx.http,
            ctx.config,
            &ctx.account.access_token,
            url,
            version,
        )
    }

    /// A client from its parts (the insights readers have no publish context).
    pub fn with_parts(
        http: &'a reqwest::Client,
        config: &'a PlatformsConfig,
        token: &'a SecretString,
        url: &str,
        version: &str,
    ) -> Self {
        let base = match version.trim_matches('/') {
            "" => url.trim_end_matches('/').to_string(),
            version => format!("{}/{version}", url.trim_end_matches('/')),
        };
        Self {
            http,
            base,
            token,
            timeout: Duration::from_secs(config.call_timeout_secs.max(1)),
            config,
        }
    }

    /// `POST {base}/{path}` with form parameters.
    pub async fn post(
        &self,
        path: &ApiPath,
        params: &[(&str, &str)],
    ) -> Result<Value, PlatformError> {
        self.call(Method::POST, path, params).await
    }

    /// `GET {base}/{path}?params`.
    pub async fn get(
        &self,
        path: &ApiPath,
        params: &[(&str, &str)],
    ) -> Result<Value, PlatformError> {
        self.call(Method::GET, path, params).await
    }

    async fn call(
        &self,
        method: Method,
        path: &ApiPath,
        params: &[(&str, &str)],
    ) -> Result<Value, PlatformError> {
        let url = path.on(&self.base)?;
        let request = self
            .http
            .request(method.clone(), url)
            .bearer_auth(self.token.expose_secret())
            .timeout(self.timeout);
        let request = if method == Method::GET {
            request.query(params)
        } else {
            request.form(params)
        };
        let mut response = super::traced_send("meta", request)
            .await
            .map_err(PlatformError::from_reqwest)?;
        let status = response.status().as_u16();
        // Taken, not copied: only a refusal reads them (the usage headers), and the body is
        // read as bytes, which needs no header (Graph answers JSON, which is UTF-8).
        let headers = std::mem::take(response.headers_mut());
        let bytes = response
            .bytes()
            .await
            .map_err(PlatformError::from_reqwest)?;
        let body: Option<Value> = serde_json::from_slice(&bytes).ok();
        match body {
            Some(body) if (200..300).contains(&status) && body.get("error").is_none() => Ok(body),
            Some(body) if body.get("error").is_some() => {
                Err(classify_call(&method, status, &body, &headers))
            }
            _ => Err(non_json_failure(status, &String::from_utf8_lossy(&bytes))),
        }
    }
}

/// A failure whose body is not Meta's error object (a proxy page, an empty body…).
fn non_json_failure(status: u16, text: &str) -> PlatformError {
    let snippet: String = text.chars().take(200).collect();
    let message = format!("HTTP {status}: {snippet}");
    if status >= 500 || status == 429 {
        PlatformError::Transient(message)
    } else {
        PlatformError::Rejected(message)
    }
}

/// The `id` of a Graph answer.
pub fn id_of(body: &Value) -> Result<String, PlatformError> {
    match &body["id"] {
        Value::String(id) if !id.is_empty() => Ok(id.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(PlatformError::Rejected(format!(
            "the platform answered without an id: {body}"
        ))),
    }
}

/// The id of a Graph answer that we go on to use in a path (a container, a photo, a video).
pub fn graph_id_of(body: &Value) -> Result<GraphId, PlatformError> {
    GraphId::parse(&id_of(body)?).map_err(InvalidId::unexpected)
}

/// [`classify`] for a call made with `method`: on a read, code 100 with subcode 33 ("Unsupported
/// get request. Object with ID '…' does not exist, cannot be loaded due to missing permissions,
/// or does not support this operation", the same on graph.facebook.com, for instagram and on
/// graph.threads.net) is the platform saying there is no such object. On a write the same code
/// is a refusal of the operation, classified as [`classify`] does.
pub fn classify_call(
    method: &Method,
    status: u16,
    body: &Value,
    headers: &HeaderMap,
) -> PlatformError {
    let error = &body["error"];
    let no_such_object =
        error["code"].as_i64() == Some(100) && error["error_subcode"].as_i64() == Some(33);
    match classify(status, body, headers) {
        PlatformError::Rejected(message) if *method == Method::GET && no_such_object => {
            PlatformError::NotFound(message)
        }
        other => other,
    }
}

/// Classifies Meta's error object (`{"error":{"message","code","error_subcode","is_transient"}}`)
/// on `code`/`error_subcode` (spec §1.2), the HTTP status only as a fallback.
pub fn classify(status: u16, body: &Value, headers: &HeaderMap) -> PlatformError {
    let error = &body["error"];
    let code = error["code"].as_i64().unwrap_or(0);
    let subcode = error["error_subcode"].as_i64();
    let transient = error["is_transient"].as_bool().unwrap_or(false);
    let message = error["error_user_msg"]
        .as_str()
        .filter(|m| !m.is_empty())
        .or(error["message"].as_str())
        .unwrap_or("unknown platform error")
        .to_string();
    let lower = message.to_ascii_lowercase();

    if code == 190 || code == 102 {
        return if subcode == Some(463) || lower.contains("expired") {
            PlatformError::TokenExpired(message)
        } else {
            PlatformError::TokenInvalid(message)
        };
    }
    let rate_limited = matches!(code, 4 | 17 | 32 | 613 | 80001..=80009)
        || (code == 9 && subcode == Some(2_207_042))
        || (code == 368 && subcode == Some(1_390_008));
    if rate_limited {
        return PlatformError::RateLimited {
            retry_after: retry_after(headers),
            message,
        };
    }
    if code == 10 || (200..=299).contains(&code) {
        return PlatformError::Permission(message);
    }
    if matches!(code, 9004 | 324 | 389) || subcode == Some(2_207_052) {
        return PlatformError::MediaFetch(message);
    }
    // IG's retryable subcodes (server error, create failed, upload error, download timeout).
    let transient_subcode = matches!(subcode, Some(2_207_001 | 2_207_032 | 2_207_053 | 2_207_003));
    if status >= 500 || matches!(code, 1 | 2) || transient || transient_subcode {
        return PlatformError::Transient(message);
    }
    PlatformError::Rejected(message)
}

/// Seconds until a rate-limited account may call again: the largest
/// `estimated_time_to_regain_access` (minutes) in `X-Business-Use-Case-Usage`, else
/// [`DEFAULT_RETRY_AFTER_SECS`].
pub fn retry_after(headers: &HeaderMap) -> u64 {
    let minutes = headers
        .get_all("x-business-use-case-usage")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| serde_json::from_str::<Value>(v).ok())
        .flat_map(|usage| match usage {
            // `{"<object-id>":[{"type":..,"estimated_time_to_regain_access":N},..],..}`
            Value::Object(map) => map
                .into_iter()
                .flat_map(|(_, entries)| match entries {
                    Value::Array(entries) => entries,
                    other => vec![other],
                })
                .filter_map(|e| e["estimated_time_to_regain_access"].as_u64())
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        })
        .max()
        .unwrap_or(0);
    if minutes == 0 {
        DEFAULT_RETRY_AFTER_SECS
    } else {
        minutes.saturating_mul(60)
    }
}

/// How waiting on a container ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerEnd {
    Finished,
    /// ERROR or EXPIRED, with what the platform said.
    Failed(String),
    /// Still not finished at the processing deadline.
    TimedOut,
}

/// Polls `GET /{id}?fields=id,{status_field}[,extra]` until the container is FINISHED, failed
/// or the deadline passes. Transient failures of a poll are tolerated until the deadline (a
/// status read changes nothing); any other error ends the wait.
///
/// `status_field` is `status_code` on instagram and `status` on threads; `detail_field` is
/// where the failure reason is (`status` / `error_message`).
pub async fn wait_container(
    graph: &Graph<'_>,
    id: &GraphId,
    status_field: &str,
    detail_field: &str,
) -> Result<ContainerEnd, PlatformError> {
    let deadline = processing_deadline(graph.config);
    loop {
        match read_container(graph, id, status_field, detail_field).await {
            Ok(Some(end)) => return Ok(end),
            Ok(None) => {}
            Err(PlatformError::Transient(message)) => {
                if tokio::time::Instant::now() >= deadline {
                    return Err(PlatformError::Transient(message));
                }
            }
            Err(other) => return Err(other),
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(ContainerEnd::TimedOut);
        }
        poll_pause(graph.config).await;
    }
}

/// One status read of a container: `None` while it is in progress.
pub async fn read_container(
    graph: &Graph<'_>,
    id: &GraphId,
    status_field: &str,
    detail_field: &str,
) -> Result<Option<ContainerEnd>, PlatformError> {
    let fields = format!("id,{status_field},{detail_field}");
    let body = graph
        .get(&ApiPath::id(id), &[("fields", fields.as_str())])
        .await?;
    Ok(match body[status_field].as_str().unwrap_or_default() {
        "FINISHED" => Some(ContainerEnd::Finished),
        state @ ("ERROR" | "EXPIRED") => {
            let detail = body[detail_field].as_str().unwrap_or(state);
            Some(ContainerEnd::Failed(format!(
                "container {id} is {state}: {detail}"
            )))
        }
        "PUBLISHED" => Some(ContainerEnd::Failed(format!(
            "container {id} was already published"
        ))),
        _ => None,
    })
}

/// A container we stop waiting for where no continuation could finish the post (carousel
/// children, the posts of a thread): nothing was published from it and nothing will be, so the
/// wait ends as a plain processing failure rather than [`PlatformError::StillProcessing`].
pub fn abandon(err: PlatformError, timeout_secs: u64) -> PlatformError {
    match err {
        PlatformError::StillProcessing(pending) => PlatformError::ProcessingFailed(format!(
            "container {} did not finish processing within {timeout_secs} s; it was not published",
            pending.object_id()
        )),
        other => other,
    }
}

/// The error for a container that did not finish: a download failure is the media URL's fault
/// (`MediaFetch`), anything else processing's.
pub fn container_failure(end: ContainerEnd, id: &str, timeout_secs: u64) -> PlatformError {
    match end {
        ContainerEnd::Failed(detail)
            if detail.contains("2207052") || detail.contains("FAILED_DOWNLOADING") =>
        {
            PlatformError::MediaFetch(detail)
        }
        ContainerEnd::Failed(detail) => PlatformError::ProcessingFailed(detail),
        ContainerEnd::TimedOut => PlatformError::ProcessingFailed(format!(
            "container {id} did not finish processing within {timeout_secs} s"
        )),
        ContainerEnd::Finished => {
            PlatformError::ProcessingFailed(format!("container {id} finished"))
        }
    }
}

/// For carousels: a failure to create or process a child or the parent container is a
/// carousel failure, while account-level errors (token, rate limit, permission, outage) keep
/// their own class.
pub fn carousel_error(err: PlatformError) -> PlatformError {
    match err {
        PlatformError::Rejected(m)
        | PlatformError::MediaFetch(m)
        | PlatformError::ProcessingFailed(m) => PlatformError::CarouselFailed(m),
        other => other,
    }
}

/// Posts read by [`find_post`]: the final call it looks for was made a takeover time ago, so
/// its post is among the newest.
const LOOKUP_POSTS: &str = "50";

/// ★ Looks for the post a cut-off final call would have made: among the account's newest posts
/// (facebook `/{page}/posts`, instagram `/{ig-user}/media`, threads `/{user}/threads`, newest
/// first), one whose text is `text` and that was created no earlier than `since` (less the
/// clocks' skew). `None`: the platform shows no such post.
pub async fn find_post(
    ctx: &PlatformContext<'_>,
    platform: entity::platform::Platform,
    text: &str,
    since: chrono::DateTime<chrono::Utc>,
) -> Result<Option<String>, PlatformError> {
    use entity::platform::Platform;
    let (graph, edge, text_field, time_field) = match platform {
        Platform::Facebook => (Graph::facebook(ctx), "posts", "message", "created_time"),
        Platform::Instagram => (Graph::instagram(ctx), "media", "caption", "timestamp"),
        Platform::Threads => (Graph::threads(ctx), "threads", "text", "timestamp"),
        other => {
            return Err(PlatformError::Rejected(format!(
                "{other} posts are not looked up"
            )));
        }
    };
    let fields = format!("id,{text_field},{time_field}");
    let path = ApiPath::id(&ctx.account.graph_id()?).then(edge);
    let body = graph
        .get(
            &path,
            &[("fields", fields.as_str()), ("limit", LOOKUP_POSTS)],
        )
        .await?;
    let earliest = since - chrono::Duration::seconds(super::LOOKUP_SKEW_SECS);
    let found = body["data"].as_array().into_iter().flatten().find(|post| {
        let created = post[time_field].as_str().and_then(parse_graph_time);
        post[text_field].as_str().map(str::trim) == Some(text.trim())
            && created.is_none_or(|created| created >= earliest)
    });
    let Some(post) = found else {
        return Ok(None);
    };
    // Checked like every id the platform answers: it goes into URLs later.
    let id = id_of(post)?;
    let id = match platform {
        Platform::Facebook => FacebookPostId::parse(&id).map(String::from),
        _ => GraphId::parse(&id).map(String::from),
    };
    id.map(Some).map_err(InvalidId::unexpected)
}

/// A Graph API time: `2026-11-29T21:04:35+0000` (RFC 3339 accepted too).
fn parse_graph_time(raw: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M:%S%z")
        .or_else(|_| chrono::DateTime::parse_from_rfc3339(raw))
        .ok()
        .map(|time| time.with_timezone(&chrono::Utc))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use reqwest::header::HeaderValue;
    use serde_json::json;

    use super::*;

    fn err(code: i64, subcode: Option<i64>, message: &str) -> Value {
        let mut error = json!({"message": message, "type": "OAuthException", "code": code});
        if let Some(s) = subcode {
            error["error_subcode"] = json!(s);
        }
        json!({ "error": error })
    }

    fn kind(e: &PlatformError) -> &'static str {
        match e {
            PlatformError::TokenExpired(_) => "expired",
            PlatformError::TokenInvalid(_) => "invalid",
            PlatformError::RateLimited { .. } => "rate",
            PlatformError::Permission(_) => "permission",
            PlatformError::ProcessingFailed(_) => "processing",
            PlatformError::CarouselFailed(_) => "carousel",
            PlatformError::MediaFetch(_) => "media",
            PlatformError::Transient(_) => "transient",
            PlatformError::Rejected(_) => "rejected",
            PlatformError::NotFound(_) => "not found",
            PlatformError::StillProcessing(_) => "still processing",
        }
    }

    #[test]
    fn classification_table() {
        let none = HeaderMap::new();
        let table: &[(u16, i64, Option<i64>, &str, &str)] = &[
            (
                400,
                190,
                Some(463),
                "Error validating access token: Session has expired",
                "expired",
            ),
            (
                400,
                190,
                None,
                "Error validating access token: session has expired on …",
                "expired",
            ),
            (
                400,
                190,
                Some(460),
                "Error validating access token: password changed",
                "invalid",
            ),
            (
                400,
                190,
                Some(467),
                "Error validating access token",
                "invalid",
            ),
            (401, 190, None, "Invalid OAuth access token", "invalid"),
            (400, 102, None, "Session key invalid", "invalid"),
            (
                400,
                4,
                None,
                "(#4) Application request limit reached",
                "rate",
            ),
            (400, 17, None, "(#17) User request limit reached", "rate"),
            (400, 32, None, "(#32) Page request limit reached", "rate"),
            (
                400,
                613,
                None,
                "(#613) Calls to this api have exceeded the rate limit",
                "rate",
            ),
            (
                400,
                80001,
                Some(2_494_055),
                "There have been too many calls",
                "rate",
            ),
            (
                400,
                80002,
                None,
                "There have been too many calls to this Instagram account",
                "rate",
            ),
            (400, 9, Some(2_207_042), "publishing limit reached", "rate"),
            (
                400,
                368,
                Some(1_390_008),
                "You are posting too fast",
                "rate",
            ),
            (
                403,
                10,
                None,
                "(#10) Application does not have permission",
                "permission",
            ),
            (
                403,
                200,
                None,
                "(#200) requires pages_manage_posts",
                "permission",
            ),
            (403, 299, None, "(#299) permission", "permission"),
            (500, 1, None, "An unknown error has occurred.", "transient"),
            (500, 2, None, "Service temporarily unavailable", "transient"),
            (503, 100, None, "odd", "transient"),
            (400, -1, Some(2_207_001), "server error", "transient"),
            (
                400,
                9004,
                Some(2_207_052),
                "Media download has failed",
                "media",
            ),
            (
                400,
                324,
                None,
                "(#324) Missing or invalid image file",
                "media",
            ),
            (
                400,
                389,
                None,
                "(#389) Unable to fetch video file from URL.",
                "media",
            ),
            (
                400,
                9007,
                Some(2_207_027),
                "The media is not ready",
                "rejected",
            ),
            (400, 100, Some(33), "Unsupported post request.", "rejected"),
            (400, 506, None, "Duplicate status message", "rejected"),
        ];
        for (status, code, subcode, message, expected) in table {
            let got = classify(*status, &err(*code, *subcode, message), &none);
            assert_eq!(
                kind(&got),
                *expected,
                "code {code} subcode {subcode:?}: {got:?}"
            );
        }
    }

    #[test]
    fn no_such_object_is_not_found_on_reads_only() {
        let none = HeaderMap::new();
        let facebook = err(
            100,
            Some(33),
            "Unsupported get request. Object with ID '1_2' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api",
        );
        let mut threads = err(
            100,
            Some(33),
            "Unsupported get request. Object with ID '1234567' does not exist, cannot be loaded due to missing permissions, or does not support this operation",
        );
        threads["error"]["type"] = json!("THApiException");
        for body in [&facebook, &threads] {
            assert_eq!(
                kind(&classify_call(&Method::GET, 400, body, &none)),
                "not found"
            );
            // A write to an object that does not exist is a refusal of the write.
            assert_eq!(
                kind(&classify_call(&Method::POST, 400, body, &none)),
                "rejected"
            );
        }
        // Other code-100 errors (an invalid metric) stay refusals, so the per-metric fallback
        // still runs; other classes keep theirs.
        let metric = err(
            100,
            None,
            "(#100) The value must be a valid insights metric",
        );
        assert_eq!(
            kind(&classify_call(&Method::GET, 400, &metric, &none)),
            "rejected"
        );
        let token = err(190, Some(33), "Error validating access token");
        assert_eq!(
            kind(&classify_call(&Method::GET, 400, &token, &none)),
            "invalid"
        );
        assert_eq!(
            kind(&classify_call(&Method::GET, 500, &facebook, &none)),
            "transient"
        );
    }

    #[test]
    fn is_transient_flag_and_message_kept() {
        let body = json!({"error": {"message": "try later", "code": 999, "is_transient": true}});
        assert_eq!(
            classify(400, &body, &HeaderMap::new()),
            PlatformError::Transient("try later".into())
        );
        let body =
            json!({"error": {"message": "text must be at most 500 characters", "code": 100}});
        assert_eq!(
            classify(400, &body, &HeaderMap::new()),
            PlatformError::Rejected("text must be at most 500 characters".into())
        );
    }

    #[test]
    fn retry_after_from_buc_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), DEFAULT_RETRY_AFTER_SECS);
        headers.insert(
            "x-business-use-case-usage",
            HeaderValue::from_static(
                r#"{"123":[{"type":"pages","call_count":100,"estimated_time_to_regain_access":7},{"type":"x","estimated_time_to_regain_access":2}]}"#,
            ),
        );
        assert_eq!(retry_after(&headers), 420);
        headers.insert(
            "x-business-use-case-usage",
            HeaderValue::from_static(r#"{"123":[{"estimated_time_to_regain_access":0}]}"#),
        );
        assert_eq!(retry_after(&headers), DEFAULT_RETRY_AFTER_SECS);
        headers.insert(
            "x-business-use-case-usage",
            HeaderValue::from_static("garbage"),
        );
        assert_eq!(retry_after(&headers), DEFAULT_RETRY_AFTER_SECS);

        let body = json!({"error": {"message": "(#32) Page request limit reached", "code": 32}});
        headers.insert(
            "x-business-use-case-usage",
            HeaderValue::from_static(r#"{"1":[{"estimated_time_to_regain_access":5}]}"#),
        );
        assert_eq!(
            classify(400, &body, &headers),
            PlatformError::RateLimited {
                retry_after: 300,
                message: "(#32) Page request limit reached".into()
            }
        );
    }

    #[test]
    fn container_failures() {
        let fetch = container_failure(
            ContainerEnd::Failed("ERROR: Media download has failed. Error code 2207052.".into()),
            "1",
            5,
        );
        assert!(matches!(fetch, PlatformError::MediaFetch(_)));
        let threads = container_failure(
            ContainerEnd::Failed("container 1 is ERROR: FAILED_DOWNLOADING_VIDEO".into()),
            "1",
            5,
        );
        assert!(matches!(threads, PlatformError::MediaFetch(_)));
        let failed = container_failure(
            ContainerEnd::Failed("FAILED_PROCESSING_VIDEO".into()),
            "1",
            5,
        );
        assert!(matches!(failed, PlatformError::ProcessingFailed(_)));
        let timeout = container_failure(ContainerEnd::TimedOut, "1", 5);
        assert!(
            matches!(timeout, PlatformError::ProcessingFailed(m) if m.contains("did not finish"))
        );
        assert!(matches!(
            carousel_error(PlatformError::Rejected("x".into())),
            PlatformError::CarouselFailed(_)
        ));
        assert!(matches!(
            carousel_error(PlatformError::TokenExpired("x".into())),
            PlatformError::TokenExpired(_)
        ));
    }
}
