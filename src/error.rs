//! The one error catalogue (spec §7) and its mapping to HTTP.
//!
//! Every failure a client can see is an [`ApiError`]: a catalogue [`ErrorCode`] (which fixes the
//! HTTP status), a human message, and the optional extras §7 names (`retry_after`, `details`).
//! Two bodies differ from the usual `{success:false, error, message}`:
//! - the Free-plan quota refusal (`UsageLimitExceeded`): `{error, error_en, current_usage, limit,
//!   plan}` with no `success`;
//! - the performance endpoints: `{success:false, error:<message text>}`
//!   (see [`ApiError::in_performance_form`]).
//!
//! Internal errors are logged with their whole cause chain and answered with a generic message.

use std::fmt;

use actix_web::{
    HttpResponse, ResponseError,
    http::{StatusCode, header},
};
use serde::Serialize;
use serde_json::json;

/// Every error code the service answers with. The spec's codes come first; the rest are our
/// additions for cases the spec does not show (documented in docs/api-notes.md).
/// (Its schema lists the codes as clients see them: each variant's name is its code.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, utoipa::ToSchema)]
pub enum ErrorCode {
    InvalidApiKey,
    Unauthorized,
    InvalidAccountId,
    AccountDisabled,
    TokenExpired,
    InvalidToken,
    InvalidRequest,
    MissingParameter,
    InvalidPlatform,
    MediaDownloadFailed,
    InvalidMediaType,
    InvalidMediaUrl,
    MediaTooLarge,
    TextRequired,
    MediaRequired,
    InvalidCarouselSize,
    TextTooLong,
    InvalidTextFormat,
    PublishingFailed,
    VideoProcessingFailed,
    CarouselCreationFailed,
    RateLimitExceeded,
    InsufficientPermissions,
    InternalServerError,
    ServiceUnavailable,
    Timeout,
    AccountNotFound,
    // --- additions (not in the spec's table) ---
    /// Unknown route, or an unknown id on an endpoint without a more specific code.
    NotFound,
    /// The route exists but not with this HTTP method.
    MethodNotAllowed,
    /// `DELETE /api/keys/{id}` for an unknown, foreign or already deleted key.
    KeyNotFound,
    /// Request body over the size limit.
    PayloadTooLarge,
    /// `DELETE /api/scheduled-posts/{id}` for an unknown or another user's post.
    ScheduledPostNotFound,
    /// `DELETE /api/scheduled-posts/{id}` for a post no longer `scheduled`.
    ScheduledPostNotCancellable,
    /// The Free plan's monthly allowance is used up (its own body form, see module docs).
    UsageLimitExceeded,
    /// An OAuth callback whose `state` is unknown, expired, used or another session's.
    InvalidOAuthState,
    /// The platform refused the connection (denied, bad code, no eligible account).
    ConnectionFailed,
    /// A state-changing request carrying a cookie came from another site (`Origin` or
    /// `Sec-Fetch-Site`): refused as a possible cross-site request forgery.
    CrossSiteRequest,
    /// The client did not send its request body within `server.request_body_timeout_secs`
    /// (`Timeout` is 504: a deadline of ours, not the client's).
    RequestTimeout,
    /// `POST /v2/posts`: the platform was still processing the post at our deadline; the service
    /// keeps checking and records `published` or `failed` in the history (202, not a failure).
    PublishUnconfirmed,
    /// A scheduled post whose final publish call may or may not have happened: its settlement
    /// code (the post's `error_code`), never the code of an HTTP answer. `serde(skip)` is read
    /// by the schema derive only (this enum is not serialized): it keeps the code out of the
    /// error bodies' schema.
    #[serde(skip)]
    PublishingUnconfirmed,
    /// `POST /v2/posts`: the `Idempotency-Key` was first sent with a different request body.
    IdempotencyKeyReused,
    /// `POST /v2/posts`: the first request with this `Idempotency-Key` is still running.
    IdempotencyKeyInUse,
    /// An upload would take the user's media past `media.quota_bytes_per_user`.
    MediaQuotaExceeded,
}

impl ErrorCode {
    /// The code string clients see in `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidApiKey => "InvalidApiKey",
            Self::Unauthorized => "Unauthorized",
            Self::InvalidAccountId => "InvalidAccountId",
            Self::AccountDisabled => "AccountDisabled",
            Self::TokenExpired => "TokenExpired",
            Self::InvalidToken => "InvalidToken",
            Self::InvalidRequest => "InvalidRequest",
            Self::MissingParameter => "MissingParameter",
            Self::InvalidPlatform => "InvalidPlatform",
            Self::MediaDownloadFailed => "MediaDownloadFailed",
            Self::InvalidMediaType => "InvalidMediaType",
            Self::InvalidMediaUrl => "InvalidMediaUrl",
            Self::MediaTooLarge => "MediaTooLarge",
            Self::TextRequired => "TextRequired",
            Self::MediaRequired => "MediaRequired",
            Self::InvalidCarouselSize => "InvalidCarouselSize",
            Self::TextTooLong => "TextTooLong",
            Self::InvalidTextFormat => "InvalidTextFormat",
            Self::PublishingFailed => "PublishingFailed",
            Self::VideoProcessingFailed => "VideoProcessingFailed",
            Self::CarouselCreationFailed => "CarouselCreationFailed",
            Self::RateLimitExceeded => "RateLimitExceeded",
            Self::InsufficientPermissions => "InsufficientPermissions",
            Self::InternalServerError => "InternalServerError",
            Self::ServiceUnavailable => "ServiceUnavailable",
            Self::Timeout => "Timeout",
            Self::AccountNotFound => "AccountNotFound",
            Self::NotFound => "NotFound",
            Self::MethodNotAllowed => "MethodNotAllowed",
            Self::KeyNotFound => "KeyNotFound",
            Self::ScheduledPostNotFound => "ScheduledPostNotFound",
            Self::ScheduledPostNotCancellable => "ScheduledPostNotCancellable",
            Self::PayloadTooLarge => "PayloadTooLarge",
            Self::UsageLimitExceeded => "UsageLimitExceeded",
            Self::InvalidOAuthState => "InvalidOAuthState",
            Self::ConnectionFailed => "ConnectionFailed",
            Self::CrossSiteRequest => "CrossSiteRequest",
            Self::RequestTimeout => "RequestTimeout",
            Self::PublishUnconfirmed => "PublishUnconfirmed",
            Self::PublishingUnconfirmed => "PublishingUnconfirmed",
            Self::IdempotencyKeyReused => "IdempotencyKeyReused",
            Self::IdempotencyKeyInUse => "IdempotencyKeyInUse",
            Self::MediaQuotaExceeded => "MediaQuotaExceeded",
        }
    }

    /// The HTTP status of the code (spec §7; our decisions for the rest).
    pub fn status(self) -> StatusCode {
        match self {
            Self::InvalidApiKey | Self::Unauthorized | Self::TokenExpired | Self::InvalidToken => {
                StatusCode::UNAUTHORIZED
            }
            Self::InvalidAccountId
            | Self::AccountDisabled
            | Self::InvalidRequest
            | Self::MissingParameter
            | Self::InvalidPlatform
            | Self::MediaDownloadFailed
            | Self::InvalidMediaType
            | Self::InvalidMediaUrl
            | Self::MediaTooLarge
            | Self::MediaQuotaExceeded
            | Self::TextRequired
            | Self::MediaRequired
            | Self::InvalidCarouselSize
            | Self::TextTooLong
            | Self::InvalidTextFormat => StatusCode::BAD_REQUEST,
            Self::PublishingFailed
            | Self::VideoProcessingFailed
            | Self::CarouselCreationFailed
            | Self::InternalServerError => StatusCode::INTERNAL_SERVER_ERROR,
            Self::RateLimitExceeded | Self::UsageLimitExceeded => StatusCode::TOO_MANY_REQUESTS,
            Self::InsufficientPermissions | Self::CrossSiteRequest => StatusCode::FORBIDDEN,
            Self::ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Timeout => StatusCode::GATEWAY_TIMEOUT,
            Self::AccountNotFound
            | Self::NotFound
            | Self::KeyNotFound
            | Self::ScheduledPostNotFound => StatusCode::NOT_FOUND,
            Self::ScheduledPostNotCancellable => StatusCode::CONFLICT,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::InvalidOAuthState | Self::ConnectionFailed => StatusCode::BAD_REQUEST,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            // Accepted: the post is on its way and its outcome lands in the history. Not a 5xx
            // (nothing failed) and not a 200 (nothing is confirmed).
            Self::PublishUnconfirmed => StatusCode::ACCEPTED,
            // Never answered over HTTP; were it, it would mean what `PublishUnconfirmed` means.
            Self::PublishingUnconfirmed => StatusCode::ACCEPTED,
            // The draft's answers: a key is not for another request (422), and a retry must
            // wait for the first to end (409).
            Self::IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            Self::IdempotencyKeyInUse => StatusCode::CONFLICT,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a client (and the history) is told about a publish still processing on the platform.
pub const PUBLISH_UNCONFIRMED_MESSAGE: &str = "The post is still processing on the platform; the service keeps checking and records published or failed in the publishing history; do not retry";

/// `PublishingFailed`'s message; the platform's words follow in `details`.
pub const PUBLISHING_FAILED_MESSAGE: &str = "Failed to publish the post";

/// Values for the `X-RateLimit-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RateLimitHeaders {
    pub limit: i64,
    pub remaining: i64,
    /// Unix timestamp (seconds) when the window resets.
    pub reset: i64,
}

impl RateLimitHeaders {
    /// Writes the three headers onto a response.
    pub fn apply(&self, headers: &mut actix_web::http::header::HeaderMap) {
        for (name, value) in [
            ("x-ratelimit-limit", self.limit),
            ("x-ratelimit-remaining", self.remaining),
            ("x-ratelimit-reset", self.reset),
        ] {
            headers.insert(
                header::HeaderName::from_static(name),
                header::HeaderValue::from(value),
            );
        }
    }
}

/// The body of the Free-plan quota refusal (spec §7; 429 `UsageLimitExceeded` on
/// `POST /v2/posts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(as = QuotaExceededBody)]
pub struct QuotaExceeded {
    /// Localized message (English or Traditional Chinese, by `Accept-Language`).
    pub error: String,
    pub error_en: String,
    pub current_usage: i64,
    pub limit: i64,
    pub plan: String,
}

/// The catalogue's error body (spec §7): the answer of every failed request except the
/// Free-plan quota refusal ([`QuotaExceeded`]) and the performance endpoints
/// ([`PerformanceErrorBody`]).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// Always `false`.
    pub success: bool,
    /// The catalogue code.
    #[schema(value_type = ErrorCode)]
    pub error: &'static str,
    /// A human message.
    pub message: String,
    /// Seconds to wait before retrying (409 `IdempotencyKeyInUse`, 429, 503).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = u64)]
    pub retry_after: Option<u64>,
    /// Extra detail, when there is some (e.g. the platform's own error).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = String)]
    pub details: Option<String>,
    /// The history row to look at (`POST /v2/posts`): the answer of a publish that started.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = uuid::Uuid)]
    pub post_submission_id: Option<uuid::Uuid>,
    /// Where that row's post resource is (`/v2/posts/{post_submission_id}`, relative to the
    /// service): poll it for the outcome. Sent with `post_submission_id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = String)]
    pub post_url: Option<String>,
}

/// The path of the post resource of history row `id` (`GET /v2/posts/{id}`).
pub fn post_path(id: uuid::Uuid) -> String {
    format!("/v2/posts/{id}")
}

/// The performance endpoints' error body: `error` is the message text.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PerformanceErrorBody {
    /// Always `false`.
    pub success: bool,
    pub error: String,
    /// Seconds to wait before retrying (429, 503).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = u64)]
    pub retry_after: Option<u64>,
}

/// Which body shape an error is rendered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyForm {
    Standard,
    Performance,
}

/// An error as the client sees it. Build with the constructors; render via `ResponseError`.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<String>,
    pub retry_after: Option<u64>,
    pub rate_limit: Option<RateLimitHeaders>,
    /// Boxed: rare, and keeps every `Result<_, ApiError>` small.
    pub quota: Option<Box<QuotaExceeded>>,
    /// The history row a client should look at (`post_submission_id` in the body). Boxed like
    /// `quota`: rare, and it keeps `ApiError` small.
    pub submission_id: Option<Box<uuid::Uuid>>,
    form: BodyForm,
}

impl ApiError {
    /// An error with a code and a message for the client.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
            retry_after: None,
            rate_limit: None,
            quota: None,
            submission_id: None,
            form: BodyForm::Standard,
        }
    }

    /// The platform was still processing the post at our deadline: it may yet go out, so the
    /// client must not retry; the outcome lands in the history under `submission_id`.
    pub fn publish_unconfirmed(submission_id: uuid::Uuid) -> Self {
        Self::new(ErrorCode::PublishUnconfirmed, PUBLISH_UNCONFIRMED_MESSAGE)
            .for_submission(submission_id)
    }

    /// Names the history row this failure was recorded in (`post_submission_id` and
    /// `post_url` in the body), so the client can look at it instead of retrying blind.
    pub fn for_submission(mut self, submission_id: uuid::Uuid) -> Self {
        self.submission_id = Some(Box::new(submission_id));
        self
    }

    /// An unexpected failure: the cause is logged, the client gets a generic message.
    pub fn internal(cause: impl fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(
            ErrorCode::InternalServerError,
            "An unexpected error occurred. Please try again later.",
        )
    }

    pub fn invalid_api_key() -> Self {
        Self::new(ErrorCode::InvalidApiKey, "Invalid or missing API key")
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthorized, message)
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }

    /// `MissingParameter`, naming the parameter.
    pub fn missing_parameter(name: &str) -> Self {
        Self::new(
            ErrorCode::MissingParameter,
            format!("Missing required parameter: {name}"),
        )
    }

    pub fn account_not_found() -> Self {
        Self::new(
            ErrorCode::AccountNotFound,
            "Account not found or does not belong to you",
        )
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ServiceUnavailable, message)
    }

    /// `CrossSiteRequest` (403): one message whatever the header that gave the request away.
    pub fn cross_site_request() -> Self {
        Self::new(
            ErrorCode::CrossSiteRequest,
            "Cross-site request refused: state-changing requests must come from this site",
        )
    }

    /// `RateLimitExceeded` with `retry_after` (seconds) and optionally the limiter's headers.
    pub fn rate_limited(retry_after: u64, headers: Option<RateLimitHeaders>) -> Self {
        // Platforms' reset headers are taken as given; keep them sane (1 s to 31 days).
        let retry_after = retry_after.clamp(1, 31 * 86_400);
        let mut error = Self::new(
            ErrorCode::RateLimitExceeded,
            format!("Rate limit exceeded. Retry after {retry_after} seconds."),
        );
        error.retry_after = Some(retry_after);
        error.rate_limit = headers;
        error
    }

    /// `PublishingFailed` carrying the platform's message in `details`.
    pub fn publishing_failed(details: impl Into<String>) -> Self {
        let mut error = Self::new(ErrorCode::PublishingFailed, PUBLISHING_FAILED_MESSAGE);
        error.details = Some(details.into());
        error
    }

    /// Adds the underlying (platform) message as `details`.
    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = Some(details.into());
        self
    }

    /// The Free-plan quota refusal.
    pub fn quota_exceeded(quota: QuotaExceeded, headers: RateLimitHeaders) -> Self {
        let mut error = Self::new(ErrorCode::UsageLimitExceeded, quota.error_en.clone());
        error.quota = Some(Box::new(quota));
        error.rate_limit = Some(headers);
        error
    }

    /// Re-shapes the error into the performance endpoints' form `{success:false, error:<text>}`
    /// with the messages §7 gives for them.
    pub fn in_performance_form(mut self) -> Self {
        let text = match self.code {
            ErrorCode::InvalidApiKey | ErrorCode::Unauthorized => Some("Invalid API key"),
            ErrorCode::MissingParameter if self.message.contains("account_id") => {
                Some("Missing account_id parameter")
            }
            ErrorCode::AccountNotFound | ErrorCode::InvalidAccountId => Some("Account not found"),
            // The platform has no such post, or the id cannot name one (the one object a
            // performance read names besides the account).
            ErrorCode::NotFound => Some("Post not found"),
            ErrorCode::InternalServerError
            | ErrorCode::PublishingFailed
            | ErrorCode::VideoProcessingFailed
            | ErrorCode::CarouselCreationFailed => Some("Failed to fetch performance data"),
            _ => None,
        };
        if let Some(text) = text {
            self.message = text.to_string();
        }
        // This form has no `details`: a missing permission names itself in the text, or the
        // user cannot tell what to grant on reconnecting.
        if self.code == ErrorCode::InsufficientPermissions
            && let Some(details) = &self.details
        {
            self.message = format!("Missing platform permission: {details}");
        }
        if self.code == ErrorCode::InvalidAccountId {
            // §7 answers an unknown account on these endpoints with 404.
            self.code = ErrorCode::AccountNotFound;
        }
        self.form = BodyForm::Performance;
        self
    }

    /// The JSON body as it goes on the wire.
    pub fn body(&self) -> serde_json::Value {
        if let Some(quota) = &self.quota {
            return serde_json::to_value(quota).unwrap_or_else(|_| json!({}));
        }
        let body = match self.form {
            BodyForm::Performance => serde_json::to_value(PerformanceErrorBody {
                success: false,
                error: self.message.clone(),
                retry_after: self.retry_after,
            }),
            BodyForm::Standard => serde_json::to_value(ErrorBody {
                success: false,
                error: self.code.as_str(),
                message: self.message.clone(),
                retry_after: self.retry_after,
                details: self.details.clone(),
                post_submission_id: self.submission_id.as_deref().copied(),
                post_url: self.submission_id.as_deref().copied().map(post_path),
            }),
        };
        // Strings, numbers and booleans: serializing cannot fail.
        body.unwrap_or_else(|_| json!({}))
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.code.status()
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        if let Some(retry_after) = self.retry_after {
            response.insert_header((header::RETRY_AFTER, retry_after.to_string()));
        }
        let mut response = response.json(self.body());
        if let Some(headers) = &self.rate_limit {
            headers.apply(response.headers_mut());
        }
        response
    }
}

impl From<sea_orm::DbErr> for ApiError {
    fn from(err: sea_orm::DbErr) -> Self {
        Self::internal(format!("database: {err}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_of_a_code_is_its_wire_text() {
        let schema = serde_json::to_value(<ErrorCode as utoipa::PartialSchema>::schema()).unwrap();
        let listed: Vec<&str> = schema["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for code in [
            ErrorCode::InvalidApiKey,
            ErrorCode::InvalidOAuthState,
            ErrorCode::PublishUnconfirmed,
            ErrorCode::UsageLimitExceeded,
            ErrorCode::IdempotencyKeyReused,
            ErrorCode::IdempotencyKeyInUse,
            ErrorCode::MediaQuotaExceeded,
        ] {
            assert!(listed.contains(&code.as_str()), "{code}");
        }
        assert_eq!(listed.len(), 42);
    }

    #[test]
    fn standard_body_has_success_error_and_message() {
        let body = ApiError::missing_parameter("accountId").body();
        assert_eq!(
            body,
            json!({"success": false, "error": "MissingParameter",
                   "message": "Missing required parameter: accountId"})
        );
    }

    #[test]
    fn rate_limit_body_carries_retry_after_and_status_429() {
        let error = ApiError::rate_limited(42, None);
        assert_eq!(error.body()["retry_after"], json!(42));
        assert_eq!(error.status_code(), StatusCode::TOO_MANY_REQUESTS);
    }

    #[test]
    fn publishing_failed_carries_details() {
        let error = ApiError::publishing_failed("(#100) Invalid parameter");
        assert_eq!(error.body()["details"], json!("(#100) Invalid parameter"));
        assert_eq!(error.status_code(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[test]
    fn quota_body_has_no_success_field() {
        let quota = QuotaExceeded {
            error: "x".into(),
            error_en: "y".into(),
            current_usage: 10,
            limit: 10,
            plan: "free".into(),
        };
        let headers = RateLimitHeaders {
            limit: 10,
            remaining: 0,
            reset: 1,
        };
        let body = ApiError::quota_exceeded(quota, headers).body();
        assert_eq!(
            body,
            json!({"error": "x", "error_en": "y", "current_usage": 10, "limit": 10, "plan": "free"})
        );
    }

    #[test]
    fn performance_form_uses_the_spec_messages_and_statuses() {
        let cases = [
            (ApiError::invalid_api_key(), 401, "Invalid API key"),
            (
                ApiError::missing_parameter("account_id"),
                400,
                "Missing account_id parameter",
            ),
            (ApiError::account_not_found(), 404, "Account not found"),
            (
                ApiError::new(ErrorCode::InvalidAccountId, "nope"),
                404,
                "Account not found",
            ),
            (
                ApiError::internal("boom"),
                500,
                "Failed to fetch performance data",
            ),
            (
                ApiError::not_found("The platform has no such object").with_details("x"),
                404,
                "Post not found",
            ),
        ];
        for (error, status, text) in cases {
            let error = error.in_performance_form();
            assert_eq!(error.status_code().as_u16(), status, "{text}");
            assert_eq!(error.body(), json!({"success": false, "error": text}));
        }
    }

    #[test]
    fn publish_unconfirmed_is_accepted_and_names_the_submission() {
        let id = uuid::Uuid::new_v4();
        let error = ApiError::publish_unconfirmed(id);
        assert_eq!(error.status_code(), StatusCode::ACCEPTED);
        assert_eq!(
            error.body(),
            json!({"success": false, "error": "PublishUnconfirmed",
                   "message": PUBLISH_UNCONFIRMED_MESSAGE, "post_submission_id": id,
                   "post_url": format!("/v2/posts/{id}")})
        );
    }

    #[test]
    fn internal_errors_do_not_leak_their_cause() {
        let error = ApiError::internal("password=hunter2 at db.internal:5432");
        assert!(!error.body().to_string().contains("hunter2"));
        assert_eq!(error.body()["error"], json!("InternalServerError"));
    }
}
