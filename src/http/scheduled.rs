//! `GET /api/scheduled-posts` and `DELETE /api/scheduled-posts/{id}` (API key; spec §4.2, §4.3).

use actix_web::{HttpResponse, middleware::from_fn, web};
use entity::scheduled_post::ScheduledStatus;
use serde::Deserialize;
use serde_json::json;

use super::{
    auth::{ApiCaller, require_api_key},
    parse_uuid,
};
use crate::{
    AppState,
    error::{ApiError, ErrorCode},
    publish::plan::Platform,
    store::CancelOutcome,
    views,
};

const DEFAULT_LIMIT: i64 = 50;
const MAX_LIMIT: i64 = 100;

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

#[derive(Deserialize)]
struct ListQuery {
    status: Option<String>,
    platform: Option<String>,
    limit: Option<i64>,
}

async fn list(
    state: web::Data<AppState>,
    caller: ApiCaller,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let status = match query.status.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(raw) => Some(ScheduledStatus::parse(raw).ok_or_else(|| {
            let all: Vec<&str> = ScheduledStatus::ALL.iter().map(|s| s.as_str()).collect();
            ApiError::invalid_request(format!("status must be one of {}", all.join(", ")))
        })?),
    };
    let platform = match query.platform.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(raw) => Some(Platform::parse(raw).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidPlatform,
                format!("Invalid platform '{raw}'"),
            )
        })?),
    };
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if limit < 1 {
        return Err(ApiError::invalid_request("limit must be at least 1"));
    }
    let rows = state
        .store
        .list_scheduled_posts(
            caller.user.id,
            status,
            platform,
            limit.min(MAX_LIMIT) as u64,
        )
        .await?;
    let posts: Vec<_> = rows.iter().map(views::scheduled_post).collect();
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "count": posts.len(),
        "posts": posts,
    })))
}

async fn cancel(
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
        CancelOutcome::Cancelled => Ok(HttpResponse::Ok().json(json!({
            "success": true,
            "message": "Scheduled post cancelled",
            "scheduledPostId": post_id,
        }))),
        CancelOutcome::NotFound => Err(not_found()),
        CancelOutcome::NotCancellable(status) => Err(ApiError::new(
            ErrorCode::ScheduledPostNotCancellable,
            format!("Only scheduled posts can be cancelled; this post is {status}"),
        )),
    }
}
