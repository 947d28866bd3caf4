//! `POST /v2/posts` (API key; spec §4.1): publish now or schedule. The work is in
//! [`crate::services::publishing`]. `GET /v2/posts/{post_submission_id}` and `GET /v2/posts`
//! (API key, not metered): the post resource, where a client reads how a publish ended
//! ([`crate::services::posts`]).

use actix_web::{HttpResponse, middleware::from_fn, web};
use serde_json::Value;

use super::dto::{
    requests::PostListQuery,
    resources::PostResource,
    responses::{PostFound, PostList},
    schema::ErrorBody,
};
use crate::web::auth::{ApiCaller, require_api_key, require_api_key_unmetered};
use crate::{
    AppState,
    error::ApiError,
    services::{
        posts::{self, PostSelection},
        publishing::Publisher,
    },
};

pub fn configure(cfg: &mut web::ServiceConfig) {
    // Metering is per route: publishing counts against the plan, reading an outcome does not
    // (a Free plan must be able to poll for the outcome of its last allowed post).
    cfg.service(
        web::resource("/v2/posts")
            .route(web::post().to(create_post).wrap(from_fn(require_api_key)))
            .route(
                web::get()
                    .to(list_posts)
                    .wrap(from_fn(require_api_key_unmetered)),
            ),
    )
    .service(
        web::resource("/v2/posts/{post_submission_id}")
            .wrap(from_fn(require_api_key_unmetered))
            .route(web::get().to(get_post)),
    );
}

/// Publishes a post now, or schedules it with `content.scheduledAt` (§4.1).
#[utoipa::path(post, path = "/v2/posts", tag = "posts", security(("api_key" = [])),
    request_body = super::dto::requests::CreatePostRequest,
    responses(
        (status = 200, description = "Published (`data`) or scheduled (`scheduled: true`)",
            body = super::dto::responses::PostOutcome),
        (status = 202, description = "`PublishUnconfirmed`: still processing on the platform; the outcome lands in the history and on the post resource (`post_url`). Do not retry.",
            body = ErrorBody),
        (status = 400, description = "A refused request: `InvalidRequest`, `MissingParameter`, `InvalidAccountId`, `AccountDisabled`, `InvalidPlatform`, `TextRequired`, `TextTooLong`, `InvalidTextFormat`, `MediaRequired`, `InvalidMediaUrl`, `InvalidMediaType`, `MediaTooLarge`, `MediaDownloadFailed`, `InvalidCarouselSize`",
            body = ErrorBody),
        (status = 401, description = "`InvalidApiKey`; or the account's token: `TokenExpired`, `InvalidToken`", body = ErrorBody),
        (status = 403, description = "`InsufficientPermissions` on the platform", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 429, description = "`RateLimitExceeded` (catalogue body), or the Free plan's `UsageLimitExceeded` (its own body)",
            body = super::dto::responses::TooManyRequests),
        (status = 500, description = "`PublishingFailed`, `VideoProcessingFailed`, `CarouselCreationFailed`, `InternalServerError`", body = ErrorBody),
        (status = 503, description = "`ServiceUnavailable`", body = ErrorBody),
        (status = 504, description = "`Timeout`: the publish goes on; look at the post resource (`post_url`) before retrying", body = ErrorBody),
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

/// One of the caller's publishes and where it stands: poll it after a `202` or `504`. Not
/// counted against the plan's allowance.
#[utoipa::path(get, path = "/v2/posts/{post_submission_id}", tag = "posts", security(("api_key" = [])),
    params(("post_submission_id" = String, Path,
        description = "The `post_submission_id` a publish answered with (a UUID)")),
    responses(
        (status = 200, description = "The post", body = PostFound),
        (status = 401, description = "`InvalidApiKey`", body = ErrorBody),
        (status = 404, description = "`NotFound`: not one of the caller's posts (another user's id, an unknown id and one that is not an id answer alike)", body = ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %caller.user.id))]
pub async fn get_post(
    state: web::Data<AppState>,
    caller: ApiCaller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let post = posts::find(&state.store, caller.user.id, &id).await?;
    Ok(HttpResponse::Ok().json(PostFound {
        success: true,
        post: PostResource::from(post),
    }))
}

/// The caller's publishes, newest first (§2.5's list form). Not counted against the plan's
/// allowance.
#[utoipa::path(get, path = "/v2/posts", tag = "posts", security(("api_key" = [])),
    params(PostListQuery),
    responses(
        (status = 200, description = "A page of the posts", body = PostList),
        (status = 400, description = "Unknown `status` (`InvalidRequest`) or `platform` (`InvalidPlatform`), `limit` below 1, negative `offset`, or not a number", body = ErrorBody),
        (status = 401, description = "`InvalidApiKey`", body = ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %caller.user.id))]
pub async fn list_posts(
    state: web::Data<AppState>,
    caller: ApiCaller,
    query: web::Query<PostListQuery>,
) -> Result<HttpResponse, ApiError> {
    let selection = PostSelection::try_from(query.into_inner())?;
    let (posts, total) = posts::list(&state.store, caller.user.id, selection).await?;
    Ok(HttpResponse::Ok().json(PostList {
        success: true,
        posts: posts.into_iter().map(PostResource::from).collect(),
        total,
        limit: selection.page.limit,
        offset: selection.page.offset,
    }))
}
