//! `GET /api/scheduled-posts` and `DELETE /api/scheduled-posts/{id}` (API key; spec §4.2, §4.3).

use actix_web::{HttpResponse, http::header::ContentType, middleware::from_fn, web};

use super::dto::{
    requests::ScheduledListQuery,
    resources::ScheduledPost,
    responses::{ScheduledPostCancelled, ScheduledPosts},
    schema::ErrorBody,
};
use crate::domain::text::parse_uuid;
use crate::web::auth::{ApiCaller, require_api_key};
use crate::{
    AppState,
    error::{ApiError, ErrorCode},
    store::{CancelOutcome, ScheduledFilter},
};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/scheduled-posts")
            .wrap(from_fn(require_api_key))
            .route(web::get().to(list)),
    )
    .service(
        web::resource("/api/scheduled-posts/{id}")
            .wrap(from_fn(require_api_key))
            .route(web::delete().to(cancel)),
    );
}

/// The key owner's scheduled posts (§4.2).
#[utoipa::path(get, path = "/api/scheduled-posts", tag = "scheduled", security(("api_key" = [])),
    params(ScheduledListQuery),
    responses(
        (status = 200, description = "The scheduled posts", body = ScheduledPosts),
        (status = 400, description = "Unknown `status` or `platform` (`InvalidPlatform`), `limit` below 1", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody),
    ))]
pub async fn list(
    state: web::Data<AppState>,
    caller: ApiCaller,
    query: web::Query<ScheduledListQuery>,
) -> Result<HttpResponse, ApiError> {
    let filter = ScheduledFilter::try_from(query.into_inner())?;
    // Rendered once per change (see `crate::store::access`): the metering above still ran.
    let body = state
        .store
        .scheduled_listing_body(caller.user.id, filter, |rows| {
            let posts: Vec<_> = rows.iter().map(ScheduledPost::from).collect();
            serde_json::to_vec(&ScheduledPosts {
                success: true,
                count: posts.len(),
                posts,
            })
            .map(web::Bytes::from)
            .map_err(ApiError::internal)
        })
        .await?;
    // What `HttpResponse::json` would have answered.
    Ok(HttpResponse::Ok()
        .content_type(ContentType::json())
        .body(body))
}

/// Cancels a scheduled post still `scheduled` (§4.3).
#[utoipa::path(delete, path = "/api/scheduled-posts/{id}", tag = "scheduled", security(("api_key" = [])),
    params(("id" = String, Path, description = "The scheduled post's id (a UUID)")),
    responses(
        (status = 200, description = "Cancelled", body = ScheduledPostCancelled),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 404, description = "`ScheduledPostNotFound`", body = ErrorBody),
        (status = 409, description = "`ScheduledPostNotCancellable`: no longer `scheduled`", body = ErrorBody),
        (status = 429, description = "Rate limited", body = ErrorBody),
    ))]
pub async fn cancel(
    state: web::Data<AppState>,
    caller: ApiCaller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let not_found = || {
        ApiError::new(
            ErrorCode::ScheduledPostNotFound,
            format!("Scheduled post {id} not found"),
        )
    };
    let post_id = parse_uuid(&id).ok_or_else(not_found)?;
    match state
        .publishing
        .cancel_scheduled(caller.user.id, post_id)
        .await?
    {
        CancelOutcome::Cancelled => Ok(HttpResponse::Ok().json(ScheduledPostCancelled {
            success: true,
            message: "Scheduled post cancelled".to_string(),
            scheduled_post_id: post_id,
        })),
        CancelOutcome::NotFound => Err(not_found()),
        CancelOutcome::NotCancellable(status) => Err(ApiError::new(
            ErrorCode::ScheduledPostNotCancellable,
            format!("Only scheduled posts can be cancelled; this post is {status}"),
        )),
    }
}
