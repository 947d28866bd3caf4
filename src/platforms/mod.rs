//! Platform adapters: each speaks one platform's documented wire API (see
//! `../shared/design/platform-apis.md`) against a configurable base URL.
//!
//! An adapter is a plain async function `publish(ctx, plan)`: it makes the platform calls in
//! order, records every remote id it gets with [`StepSink::record`] before making the next call,
//! and marks the irreversible final call with [`StepSink::before_final`]. It never retries a
//! final call. Adapters know neither the database nor the scheduler's claims: the sink they are
//! given (`publish::steps::StepRecorder`) does. Media reads go through [`crate::media`], whose
//! errors become [`PlatformError::MediaFetch`] here. Errors are classified into
//! [`PlatformError`], which maps to the catalogue in exactly one place
//! ([`PlatformError::into_api_error`]).

pub mod facebook;
pub mod ids;
pub mod instagram;
pub mod meta;
pub mod threads;
pub mod tiktok;
pub mod x;
pub mod youtube;

use futures_util::future::BoxFuture;
use secrecy::SecretString;

use crate::{
    config::PlatformsConfig,
    domain::plan::PublishPlan,
    error::{ApiError, ErrorCode},
    media::{MediaError, MediaFetcher},
};

/// What an adapter needs to make calls for one account.
pub struct PlatformContext<'a> {
    /// Client for platform API calls (base URLs come from configuration, so no SSRF guard).
    pub http: &'a reqwest::Client,
    /// Guarded client for reading media bytes where we upload them ourselves.
    pub media: &'a MediaFetcher,
    pub config: &'a PlatformsConfig,
    pub account: &'a AccountCredentials,
    pub steps: &'a dyn StepSink,
}

/// The account's identity on the platform and its current access token.
#[derive(Debug, Clone)]
pub struct AccountCredentials {
    /// Page id (facebook), IG user id, Threads user id, TikTok open_id, YouTube channel id, X user id.
    pub external_id: String,
    /// Shared with the operator view (one copy per live actor, not one per reader).
    pub display_name: std::sync::Arc<str>,
    pub access_token: SecretString,
    /// How the account was connected: for instagram, which host and token it uses
    /// (graph.facebook.com with Facebook Login, graph.instagram.com with Instagram Login).
    pub login_route: entity::account::LoginRoute,
}

impl AccountCredentials {
    /// The credentials of a stored account row, its access token opened for that row.
    pub fn open(
        cipher: &crate::crypto::TokenCipher,
        account: &entity::account::Model,
    ) -> Result<Self, crate::crypto::CipherError> {
        Ok(Self {
            external_id: account.external_id.clone(),
            display_name: account.display_name.as_str().into(),
            access_token: SecretString::from(crate::tokens::open_access(cipher, account)?),
            login_route: account.login_route,
        })
    }

    /// The account's Graph id (facebook page, instagram user, threads user), checked before it
    /// goes into a path: a stored id that is not one names no platform object.
    pub fn graph_id(&self) -> Result<ids::GraphId, PlatformError> {
        ids::GraphId::parse(&self.external_id).map_err(ids::InvalidId::not_found)
    }
}

/// What a successful publish produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The platform's id of the post (the first one of a thread).
    pub post_id: String,
    /// Every post id, in order, for threads and x threads; empty otherwise.
    pub post_ids: Vec<String>,
    /// Things that went wrong after the post was out (e.g. a youtube thumbnail refused); the
    /// publish still counts as done.
    pub warnings: Vec<String>,
}

impl Published {
    pub fn single(post_id: impl Into<String>) -> Self {
        Self {
            post_id: post_id.into(),
            post_ids: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// A platform failure, classified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlatformError {
    /// The access token has expired (the account is marked invalid).
    #[error("access token expired: {0}")]
    TokenExpired(String),
    /// The token is invalid or was revoked (the account is marked invalid).
    #[error("access token invalid or revoked: {0}")]
    TokenInvalid(String),
    /// The platform refused because of its rate limit.
    #[error("platform rate limit: {message}")]
    RateLimited { retry_after: u64, message: String },
    /// A permission (scope) the call needs was not granted.
    #[error("missing permission: {0}")]
    Permission(String),
    /// Video/media processing failed on the platform (or, for an object we abandon before any
    /// final call, did not finish in time: nothing was published).
    #[error("processing failed: {0}")]
    ProcessingFailed(String),
    /// A carousel (or album) container could not be created.
    #[error("carousel creation failed: {0}")]
    CarouselFailed(String),
    /// The platform could not fetch a media URL we gave it.
    #[error("platform could not fetch media: {0}")]
    MediaFetch(String),
    /// A 5xx, a timeout or a network error: worth retrying before the final step.
    #[error("platform unavailable: {0}")]
    Transient(String),
    /// Any other refusal; the platform's message goes to `details`.
    #[error("platform refused: {0}")]
    Rejected(String),
    /// The platform has no such object (Graph code 100 subcode 33 on a read, an empty
    /// `videos.list` or `video/query`), or the id cannot name one (see [`ids`]).
    #[error("no such object on the platform: {0}")]
    NotFound(String),
    /// The platform still reported the object in progress at our processing deadline: the post
    /// may yet go out (or, before the final call, may yet be published by us), so this is not a
    /// failure. What is left to do is in the [`Pending`].
    #[error("still processing on the platform: {}", .0.object_id())]
    StillProcessing(Box<Pending>),
}

/// A publish whose platform-side processing had not finished at our deadline, and what is left
/// to do once it has. Stored with the history row, so any instance can carry it on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pending {
    /// facebook: the video exists (the irreversible call was made); it goes out when processed.
    FacebookVideo { video_id: String },
    /// tiktok: the post was handed over (init or last chunk; or an upload cut off at its last
    /// chunk, which its status settles); TikTok posts it when processed.
    TiktokPublish { publish_id: String },
    /// youtube: the upload is complete; the thumbnail (if any) is set once processed.
    YoutubeVideo {
        video_id: String,
        thumbnail: Option<PendingMedia>,
    },
    /// instagram: the container to `media_publish` once FINISHED (nothing published yet).
    InstagramContainer { container_id: String },
    /// threads: the container to `threads_publish` once FINISHED (nothing published yet).
    ThreadsContainer { container_id: String },
    /// x: the media still processing (the last one uploaded), every media id of the post, and
    /// the tweets to create once it is ready (nothing published yet).
    XMedia {
        media_id: String,
        media_ids: Vec<String>,
        tweets: Vec<String>,
    },
    /// youtube: the upload (the final call) started but its instance stopped before the answer.
    /// The session says whether it completed: the video exists, or nothing was published.
    YoutubeUpload { session: String },
    /// facebook, instagram, threads, x: the final call started but its instance stopped before
    /// the answer. Whether it published is asked of the platform: the account's newest posts
    /// are searched for `text`, created since `since` (see [`can_look_up`]).
    Lookup {
        platform: entity::platform::Platform,
        text: String,
        since: chrono::DateTime<chrono::Utc>,
    },
}

/// A media file by URL and type (what a continuation needs to fetch it again).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PendingMedia {
    pub url: String,
    pub content_type: String,
}

impl Pending {
    /// The platform object still processing.
    pub fn object_id(&self) -> &str {
        match self {
            Pending::FacebookVideo { video_id } | Pending::YoutubeVideo { video_id, .. } => {
                video_id
            }
            Pending::TiktokPublish { publish_id } => publish_id,
            Pending::InstagramContainer { container_id }
            | Pending::ThreadsContainer { container_id } => container_id,
            Pending::XMedia { media_id, .. } => media_id,
            Pending::YoutubeUpload { .. } => "the upload of a cut-off final call",
            Pending::Lookup { .. } => "the post of a cut-off final call",
        }
    }

    /// Whether this asks about a final call cut off by its instance's death (a lookup of the
    /// post, or of its upload session): `None` from it means nothing went out.
    pub fn cut_off(&self) -> bool {
        matches!(self, Pending::Lookup { .. } | Pending::YoutubeUpload { .. })
    }

    /// Whether the irreversible call was made before processing (facebook video, tiktok,
    /// youtube: the platform publishes on its own); otherwise the continuation makes it.
    pub fn final_call_made(&self) -> bool {
        match self {
            Pending::FacebookVideo { .. }
            | Pending::TiktokPublish { .. }
            | Pending::YoutubeVideo { .. }
            | Pending::YoutubeUpload { .. }
            | Pending::Lookup { .. } => true,
            Pending::InstagramContainer { .. }
            | Pending::ThreadsContainer { .. }
            | Pending::XMedia { .. } => false,
        }
    }
}

impl PlatformError {
    /// Whether retrying the same step later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            PlatformError::Transient(_) | PlatformError::RateLimited { .. }
        )
    }

    /// Whether a failure of the irreversible call leaves it unknown if the post went out: the
    /// platform gave no definite answer (5xx, timeout, network). Every other error is the
    /// platform saying no.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, PlatformError::Transient(_))
    }

    /// Whether the account's token is no longer usable.
    pub fn invalidates_token(&self) -> bool {
        matches!(
            self,
            PlatformError::TokenExpired(_) | PlatformError::TokenInvalid(_)
        )
    }

    /// A network-level failure of a platform call.
    pub fn from_reqwest(err: reqwest::Error) -> Self {
        if err.is_timeout() {
            PlatformError::Transient(format!("timed out: {err}"))
        } else {
            PlatformError::Transient(err.to_string())
        }
    }

    /// The one mapping from platform failures to the error catalogue (spec §7).
    pub fn into_api_error(self) -> ApiError {
        match self {
            PlatformError::TokenExpired(msg) => reported(ErrorCode::TokenExpired, msg),
            PlatformError::TokenInvalid(msg) => reported(ErrorCode::InvalidToken, msg),
            PlatformError::RateLimited {
                retry_after,
                message,
            } => ApiError::rate_limited(retry_after, None).with_details(message),
            PlatformError::Permission(msg) => reported(ErrorCode::InsufficientPermissions, msg),
            PlatformError::ProcessingFailed(msg) => reported(ErrorCode::VideoProcessingFailed, msg),
            PlatformError::CarouselFailed(msg) => reported(ErrorCode::CarouselCreationFailed, msg),
            PlatformError::MediaFetch(msg) => reported(ErrorCode::MediaDownloadFailed, msg),
            PlatformError::Transient(msg) | PlatformError::Rejected(msg) => {
                ApiError::publishing_failed(msg)
            }
            PlatformError::NotFound(msg) => {
                ApiError::not_found("The platform has no such object").with_details(msg)
            }
            // The caller maps a pending publish itself (it knows the submission); without one
            // this is what the client is told.
            PlatformError::StillProcessing(pending) => ApiError::new(
                ErrorCode::PublishUnconfirmed,
                crate::error::PUBLISH_UNCONFIRMED_MESSAGE,
            )
            .with_details(format!(
                "{} is still processing on the platform",
                pending.object_id()
            )),
        }
    }
}

/// The catalogue codes a platform failure is reported with and the message of each; the
/// platform's own words follow as `details` (in the history, after `": "`).
const REPORTED: [(ErrorCode, &str); 7] = [
    (
        ErrorCode::TokenExpired,
        "The platform access token has expired; reconnect the account",
    ),
    (
        ErrorCode::InvalidToken,
        "The platform access token is invalid or was revoked; reconnect the account",
    ),
    (
        ErrorCode::InsufficientPermissions,
        "The account has not granted a permission this post needs",
    ),
    (
        ErrorCode::VideoProcessingFailed,
        "Media processing failed or timed out on the platform",
    ),
    (
        ErrorCode::CarouselCreationFailed,
        "The carousel could not be created on the platform",
    ),
    (
        ErrorCode::MediaDownloadFailed,
        "The platform could not download a media URL",
    ),
    (
        ErrorCode::PublishingFailed,
        crate::error::PUBLISHING_FAILED_MESSAGE,
    ),
];

/// The message a platform failure recorded with the catalogue code `code` starts with, when
/// the code is one a platform failure is reported with.
pub fn reported_message(code: &str) -> Option<&'static str> {
    REPORTED
        .iter()
        .find(|(known, _)| known.as_str() == code)
        .map(|(_, message)| *message)
}

fn reported(code: ErrorCode, details: String) -> ApiError {
    let message = reported_message(code.as_str()).unwrap_or_default();
    ApiError::new(code, message).with_details(details)
}

/// How the platform's processing of an object ended, as a step records it: part of the stored
/// steps document, so defined with it.
pub use entity::post_submission::{ProcessingOutcome, StepKind};

/// Where an adapter reports its steps: every remote id before its next call, how a wait for
/// processing ended, and the irreversible call about to be made. Adapters see only this; the
/// implementation that writes the history and renews claims is `publish::steps::StepRecorder`
/// (the history and the claims are publishing's, not the adapters').
///
/// Boxed futures rather than `async fn`: adapters hold it as `&dyn StepSink`, and an `async fn`
/// in a trait is not dyn-compatible.
pub trait StepSink: Send + Sync {
    /// Records a remote id (container, upload session, media id, published segment id…). An
    /// error stops the adapter before its next call (the step could not be kept, or the claim
    /// it runs under was lost).
    fn record<'a>(
        &'a self,
        kind: StepKind,
        id: &'a str,
    ) -> BoxFuture<'a, Result<(), PlatformError>>;

    /// Records how the processing of `id` ended. Best effort: the wait's own result decides the
    /// publish, so a step that cannot be written is only logged by the implementation.
    fn processing<'a>(&'a self, id: &'a str, outcome: ProcessingOutcome) -> BoxFuture<'a, ()>;

    /// Marks that the irreversible call is about to be made; an error means it must not be.
    fn before_final(&self) -> BoxFuture<'_, Result<(), PlatformError>>;
}

impl dyn StepSink + '_ {
    /// Records how a wait for the processing of `id` ended, from the wait's result: one step for
    /// the whole wait, not one per poll. Any error other than processing failed (or media the
    /// platform could not fetch) or still processing ended the wait without an answer about
    /// processing and records nothing.
    pub fn processed<'a, T>(
        &'a self,
        id: &'a str,
        result: &Result<T, PlatformError>,
    ) -> BoxFuture<'a, ()> {
        let outcome = match result {
            Ok(_) => ProcessingOutcome::Finished,
            Err(PlatformError::StillProcessing(_)) => ProcessingOutcome::StillProcessing,
            Err(PlatformError::ProcessingFailed(_) | PlatformError::MediaFetch(_)) => {
                ProcessingOutcome::Failed
            }
            Err(_) => return Box::pin(std::future::ready(())),
        };
        self.processing(id, outcome)
    }
}

/// A media URL that could not be read for an upload is media the platform side of the publish
/// could not fetch; the message is the media module's, unchanged.
impl From<MediaError> for PlatformError {
    fn from(error: MediaError) -> Self {
        PlatformError::MediaFetch(error.to_string())
    }
}

/// Runs the adapter for a plan.
pub async fn publish(
    ctx: &PlatformContext<'_>,
    plan: &PublishPlan,
) -> Result<Published, PlatformError> {
    // Each platform's future boxed: unboxed, this future (and the job's around it) would be as
    // large as the largest of the six, 7 KB, copied whole each time it moved into the next
    // wrapper on its way to the actor's context.
    let result = match plan {
        PublishPlan::Facebook(post) => Box::pin(facebook::publish(ctx, post)).await,
        PublishPlan::Instagram(post) => Box::pin(instagram::publish(ctx, post)).await,
        PublishPlan::Threads(post) => Box::pin(threads::publish(ctx, post)).await,
        PublishPlan::Tiktok(post) => Box::pin(tiktok::publish(ctx, post)).await,
        PublishPlan::Youtube(post) => Box::pin(youtube::publish(ctx, post)).await,
        PublishPlan::X(post) => Box::pin(x::publish(ctx, post)).await,
    };
    // A publish names no object the client could have got wrong: "no such object" here (a
    // container the platform lost, a stored account id that names nothing) is the publish
    // failing, as any other refusal is, not a 404 for the request.
    result.map_err(|error| match error {
        PlatformError::NotFound(message) => PlatformError::Rejected(message),
        other => other,
    })
}

/// Looks once at a publish left [`PlatformError::StillProcessing`]: `Ok(None)` while the
/// platform still processes it; once it has finished, the rest of the publish (the final call
/// where it had not been made) and `Ok(Some(published))`; an error when processing failed or the
/// rest of the publish did.
pub async fn resume(
    ctx: &PlatformContext<'_>,
    pending: &Pending,
) -> Result<Option<Published>, PlatformError> {
    match pending {
        Pending::FacebookVideo { video_id } => facebook::resume(ctx, video_id).await,
        Pending::InstagramContainer { container_id } => instagram::resume(ctx, container_id).await,
        Pending::ThreadsContainer { container_id } => threads::resume(ctx, container_id).await,
        Pending::TiktokPublish { publish_id } => tiktok::resume(ctx, publish_id).await,
        Pending::YoutubeVideo {
            video_id,
            thumbnail,
        } => youtube::resume(ctx, video_id, thumbnail.as_ref()).await,
        Pending::XMedia {
            media_id,
            media_ids,
            tweets,
        } => x::resume(ctx, media_id, media_ids, tweets).await,
        // `None`: the upload never completed (nothing was published).
        Pending::YoutubeUpload { session } => youtube::resume_upload(ctx, session).await,
        Pending::Lookup {
            platform,
            text,
            since,
        } => {
            // `None`: the platform shows no such post (the caller decides what that means).
            let found = match platform {
                entity::platform::Platform::X => x::find_post(ctx, text, *since).await?,
                _ => meta::find_post(ctx, *platform, text, *since).await?,
            };
            Ok(found.map(Published::single))
        }
    }
}

/// How far before the final call's start a post looked up for it may have been created: the
/// platform's clock and ours disagree by this much at most.
const LOOKUP_SKEW_SECS: i64 = 3_600;

/// Whether a final call cut off by a stopped instance can be confirmed with the platform: its
/// newest posts can be listed with their text (facebook `/{page}/posts`, instagram
/// `/{ig-user}/media`, threads `/{user}/threads`, x `/2/users/{id}/tweets`), and the text a post
/// is listed with is the text it was sent with. X rewrites links (to `t.co`), appends one for
/// attached media and escapes `&`, `<` and `>`: an x post is looked up only when it has none of
/// these ([`x::lists_as_sent`]). tiktok and youtube are asked otherwise (their upload's status
/// or session), and other x posts stay `unconfirmed`.
pub fn can_look_up(platform: entity::platform::Platform, text: &str, has_media: bool) -> bool {
    use entity::platform::Platform;
    match platform {
        Platform::Facebook | Platform::Instagram | Platform::Threads => true,
        Platform::X => !has_media && x::lists_as_sent(text),
        Platform::Tiktok | Platform::Youtube => false,
    }
}

/// The client for platform API calls: connections are kept alive, and each read must make
/// progress within `platforms.call_timeout_secs`.
pub fn client(config: &PlatformsConfig) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        // A platform API answers; it does not redirect. A 3xx is reported like any other
        // unexpected status instead of being followed to wherever its `Location` points
        // (with the call's token).
        .redirect(reqwest::redirect::Policy::none())
        // Never replayed by a retry policy behind the adapter's back: a publish call sent twice
        // may publish twice, and what went out is recorded by the caller (the steps). No
        // retries also means no copy of every request kept for one. (hyper still resends a
        // request it never wrote, on a pooled connection it found closed: nothing went out.)
        .retry(reqwest::retry::never().max_retries_per_request(0))
        .connect_timeout(std::time::Duration::from_secs(10))
        .read_timeout(std::time::Duration::from_secs(
            config.call_timeout_secs.max(1),
        ))
        .build()
}

/// Sends a platform call in a `platform_call` span (platform, method, path — never the query,
/// which may carry a token) and logs its status and duration at debug level.
pub async fn traced_send(
    platform: &'static str,
    request: reqwest::RequestBuilder,
) -> Result<reqwest::Response, reqwest::Error> {
    let (client, built) = request.build_split();
    let request = built?;
    let span = tracing::debug_span!(
        "platform_call",
        platform,
        method = %request.method(),
        path = %request.url().path()
    );
    let started = std::time::Instant::now();
    let result = tracing::Instrument::instrument(client.execute(request), span.clone()).await;
    let elapsed_ms = started.elapsed().as_millis() as u64;
    span.in_scope(|| match &result {
        Ok(response) => tracing::debug!(
            status = response.status().as_u16(),
            elapsed_ms,
            "platform call"
        ),
        Err(error) => tracing::debug!(%error, elapsed_ms, "platform call failed"),
    });
    result
}

/// `request.send_traced("youtube")`: [`traced_send`] as a method.
pub trait SendTraced {
    fn send_traced(
        self,
        platform: &'static str,
    ) -> impl std::future::Future<Output = Result<reqwest::Response, reqwest::Error>>;
}

impl SendTraced for reqwest::RequestBuilder {
    fn send_traced(
        self,
        platform: &'static str,
    ) -> impl std::future::Future<Output = Result<reqwest::Response, reqwest::Error>> {
        traced_send(platform, self)
    }
}

/// Sleeps for the configured poll interval.
pub async fn poll_pause(config: &PlatformsConfig) {
    tokio::time::sleep(std::time::Duration::from_millis(config.poll_interval_ms)).await;
}

/// The deadline for asynchronous processing that starts now.
pub fn processing_deadline(config: &PlatformsConfig) -> tokio::time::Instant {
    tokio::time::Instant::now() + std::time::Duration::from_secs(config.processing_timeout_secs)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A server whose `/start` redirects to `/elsewhere`; answers how many requests reached
    /// `/elsewhere` through the returned counter.
    async fn redirecting_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let followed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = followed.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let answer: &[u8] = if head.starts_with(b"POST /start ") {
                    b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /elsewhere\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                } else {
                    seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
                };
                let _ = socket.write_all(answer).await;
            }
        });
        (base, followed)
    }

    /// A platform call that is answered with a redirect reports the redirect: the call (here a
    /// publish-like POST, which a 307 would have repeated) is not sent again elsewhere.
    #[actix_web::test]
    async fn platform_calls_do_not_follow_redirects() {
        let (base, followed) = redirecting_server().await;
        let client = client(&PlatformsConfig::default()).unwrap();
        let response = client
            .post(format!("{base}/start"))
            .body("text=hello")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 307);
        assert_eq!(followed.load(std::sync::atomic::Ordering::SeqCst), 0);
    }
}
