//! `POST /v2/posts` (API key; spec §4.1): publish now or schedule. The work is in
//! [`crate::services::publishing`].

use actix_web::{HttpResponse, middleware::from_fn, web};
use serde_json::Value;

use crate::web::auth::{ApiCaller, require_api_key};
use crate::{AppState, error::ApiError, services::publishing::Publisher};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/v2/posts")
            .wrap(from_fn(require_api_key))
            .route(web::post().to(create_post)),
    );
}

/// Publishes a post now, or schedules it with `content.scheduledAt` (§4.1).
#[utoipa::path(post, path = "/v2/posts", tag = "posts", security(("api_key" = [])),
    request_body = super::dto::requests::CreatePostRequest,
    responses(
        (status = 200, description = "Published (`data`) or scheduled (`scheduled: true`)",
            body = super::dto::responses::PostOutcome),
        (status = 202, description = "`PublishUnconfirmed`: still processing on the platform; the outcome lands in the history. Do not retry.",
            body = super::dto::schema::ErrorBody),
        (status = 400, description = "A refused request: `InvalidRequest`, `MissingParameter`, `InvalidAccountId`, `AccountDisabled`, `InvalidPlatform`, `TextRequired`, `TextTooLong`, `InvalidTextFormat`, `MediaRequired`, `InvalidMediaUrl`, `InvalidMediaType`, `MediaTooLarge`, `MediaDownloadFailed`, `InvalidCarouselSize`",
            body = super::dto::schema::ErrorBody),
        (status = 401, description = "`InvalidApiKey`; or the account's token: `TokenExpired`, `InvalidToken`", body = super::dto::schema::ErrorBody),
        (status = 403, description = "`InsufficientPermissions` on the platform", body = super::dto::schema::ErrorBody),
        (status = 413, description = "Body too large", body = super::dto::schema::ErrorBody),
        (status = 429, description = "`RateLimitExceeded` (catalogue body), or the Free plan's `UsageLimitExceeded` (its own body)",
            body = super::dto::responses::TooManyRequests),
        (status = 500, description = "`PublishingFailed`, `VideoProcessingFailed`, `CarouselCreationFailed`, `InternalServerError`", body = super::dto::schema::ErrorBody),
        (status = 503, description = "`ServiceUnavailable`", body = super::dto::schema::ErrorBody),
        (status = 504, description = "`Timeout`", body = super::dto::schema::ErrorBody),
    ))]
pub async fn create_post(
    state: web::Data<AppState>,
    caller: ApiCaller,
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let publisher = Publisher {
        user: &caller.user,
        plan: caller.plan,
    };
    let outcome = state.publishing.handle_post(publisher, &body).await?;
    Ok(HttpResponse::Ok().json(outcome))
}
