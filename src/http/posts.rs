//! `POST /v2/posts` (API key; spec §4.1): publish now or schedule. The work is in
//! [`crate::services::publishing`]; with an `Idempotency-Key` header, through
//! [`crate::services::idempotency`]. `GET /v2/posts/{post_submission_id}` and `GET /v2/posts`
//! (API key, not metered): the post resource, where a client reads how a publish ended
//! ([`crate::services::posts`]).

use actix_web::{
    HttpRequest, HttpResponse,
    dev::{JsonBody, Payload},
    error::PayloadError,
    guard,
    http::{StatusCode, header},
    middleware::from_fn,
    web,
};
use serde_json::Value;

use super::dto::{
    requests::{IDEMPOTENCY_KEY_HEADER, PostListQuery, idempotency_key},
    resources::PostResource,
    responses::{PostFound, PostList},
    schema::ErrorBody,
};
use crate::web::auth::{ApiCaller, require_api_key, require_api_key_unmetered};
use crate::{
    AppState,
    error::{ApiError, ErrorCode},
    services::{
        idempotency::{Answer, Claimed},
        posts::{self, PostSelection},
        publishing::Publisher,
    },
};

/// The response header that marks a kept answer sent again.
const REPLAYED_HEADER: header::HeaderName = header::HeaderName::from_static("idempotent-replayed");

pub fn configure(cfg: &mut web::ServiceConfig) {
    // Metering is per route: publishing counts against the plan, reading an outcome does not
    // (a Free plan must be able to poll for the outcome of its last allowed post). A publish
    // with an `Idempotency-Key` is metered by its use case once the key is claimed, so a
    // replayed answer is not counted again; one without the header takes the plain route.
    cfg.service(
        web::resource("/v2/posts")
            .route(
                web::post()
                    .guard(guard::fn_guard(|ctx| {
                        ctx.head().headers().contains_key(&IDEMPOTENCY_KEY_HEADER)
                    }))
                    .to(create_post_once)
                    .wrap(from_fn(require_api_key_unmetered)),
            )
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

/// Publishes a post now, or schedules it with `content.scheduledAt` (§4.1). With an
/// `Idempotency-Key`, a retry gets the first request's answer instead of a second post.
#[utoipa::path(post, path = "/v2/posts", tag = "posts", security(("api_key" = [])),
    params(("Idempotency-Key" = Option<String>, Header,
        description = "Optional. 1 to 255 printable ASCII characters, bare (`abc`) or as a structured-field string (`\"abc\"`, escapes `\\\"` and `\\\\`); both name the same key. Scoped to the API key's user and kept 24 hours: a retry with the same key and the same body bytes gets the first answer again (`Idempotent-Replayed: true`), neither published nor counted again. See docs/api-notes.md.",
        nullable = false, min_length = 1, max_length = 255,
        pattern = r#"^(?:[!#-~](?:[ -~]*[!-~])?|"(?:[ !#-\[\]-~]|\\["\\])+")$"#)),
    request_body = super::dto::requests::CreatePostRequest,
    responses(
        (status = 200, description = "Published (`data`) or scheduled (`scheduled: true`)",
            body = super::dto::responses::PostOutcome,
            headers(("Idempotent-Replayed" = String,
                description = "`true` on an answer replayed for an `Idempotency-Key` (any status): the first request's status and body again; absent otherwise"))),
        (status = 202, description = "`PublishUnconfirmed`: still processing on the platform; the outcome lands in the history and on the post resource (`post_url`). Do not retry. Also the answer to a retry whose `Idempotency-Key`'s first request never answered but started a publish.",
            body = ErrorBody),
        (status = 409, description = "`IdempotencyKeyInUse`: the first request with this `Idempotency-Key` is still running; retry after `retry_after` seconds (also `Retry-After`)",
            body = ErrorBody),
        (status = 422, description = "`IdempotencyKeyReused`: this `Idempotency-Key` was first sent with a different body",
            body = ErrorBody),
        (status = 400, description = "A refused request: `InvalidRequest` (also a malformed `Idempotency-Key`), `MissingParameter`, `InvalidAccountId`, `AccountDisabled`, `InvalidPlatform`, `TextRequired`, `TextTooLong`, `InvalidTextFormat`, `MediaRequired`, `InvalidMediaUrl`, `InvalidMediaType`, `MediaTooLarge`, `MediaDownloadFailed`, `InvalidCarouselSize`",
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

/// `POST /v2/posts` with an `Idempotency-Key` (documented on [`create_post`]): the key is
/// checked before anything else, then the body's bytes are read (they are the request's
/// fingerprint) and the idempotency use case claims the key, meters and publishes, or answers
/// as the key's first request did.
async fn create_post_once(
    state: web::Data<AppState>,
    caller: ApiCaller,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let Some(key) = idempotency_key(req.headers())? else {
        return Err(ApiError::internal(
            "the Idempotency-Key route was taken without the header",
        ));
    };
    let body = read_body(payload).await?;
    let accept_language = req
        .headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    let (req, body_for_work, state_ref, user) = (&req, body.clone(), &state, &caller.user);
    let work = move |claimed: Claimed| async move {
        let json = parse_json(req, body_for_work).await?;
        let publisher = Publisher {
            user,
            plan: claimed.plan,
        };
        state_ref
            .publishing
            .handle_post_as(publisher, &json, claimed.submission_id)
            .await
    };
    let answer = state
        .idempotency
        .run(&caller.user, accept_language, &key, &body, work)
        .await?;
    Ok(match answer {
        Answer::Ran { outcome, allowance } => {
            let mut response = match outcome {
                Ok(outcome) => HttpResponse::Ok().json(outcome),
                // Carrying the error along, as a handler's `Err` would for the middlewares.
                Err(error) => HttpResponse::from_error(error),
            };
            // The call's own allowance (metered after the claim), unless the answer carries
            // a limiter's headers of its own.
            if !response.headers().contains_key("x-ratelimit-limit") {
                allowance.apply(response.headers_mut());
            }
            response
        }
        Answer::Replayed(kept) => {
            let status =
                StatusCode::from_u16(kept.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            HttpResponse::build(status)
                .content_type(header::ContentType::json())
                .insert_header((REPLAYED_HEADER, "true"))
                .body(kept.body)
        }
    })
}

/// The request body's bytes, within the JSON limit; read failures answer as the JSON
/// extractor's do.
async fn read_body(payload: web::Payload) -> Result<web::Bytes, ApiError> {
    match payload.to_bytes_limited(super::JSON_LIMIT).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(error)) => Err(match error.as_error::<PayloadError>() {
            Some(cause) if crate::web::body_deadline::is_deadline_error(cause) => {
                crate::web::body_deadline::body_timeout_error()
            }
            _ => ApiError::invalid_request(format!("Invalid request body: {error}")),
        }),
        Err(_) => Err(ApiError::new(
            ErrorCode::PayloadTooLarge,
            "Request body is too large",
        )),
    }
}

/// `bytes` read as the JSON extractor reads a body (content type, decoding, its messages).
async fn parse_json(req: &HttpRequest, bytes: web::Bytes) -> Result<Value, ApiError> {
    JsonBody::<Value>::new(req, &mut Payload::from(bytes), None, true)
        .limit(super::JSON_LIMIT)
        .await
        .map_err(super::json_error)
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
