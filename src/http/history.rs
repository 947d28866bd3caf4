//! `GET /api/published-posts` (session; spec §2.5, §4.10): the publishing history, newest first.

use actix_web::{HttpResponse, middleware::from_fn, web};

use super::{
    auth::{SessionUser, require_session},
    dto::{
        requests::HistoryQuery, resources::Submission, responses::PublishedPosts, schema::ErrorBody,
    },
};
use crate::{AppState, error::ApiError};

const DEFAULT_LIMIT: i64 = 20;
const MAX_LIMIT: i64 = 100;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/published-posts")
            .wrap(from_fn(require_session))
            .route(web::get().to(published_posts)),
    );
}

/// `limit` above the maximum is clamped to it; a `limit` below 1 or a negative `offset` is refused.
fn page_bounds(query: &HistoryQuery) -> Result<(u64, u64), ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if limit < 1 {
        return Err(ApiError::invalid_request("limit must be at least 1"));
    }
    let offset = query.offset.unwrap_or(0);
    if offset < 0 {
        return Err(ApiError::invalid_request("offset must not be negative"));
    }
    Ok((limit.min(MAX_LIMIT) as u64, offset as u64))
}

/// The caller's publishing history, newest first (§4.10).
#[utoipa::path(get, path = "/api/published-posts", tag = "history", security(("session" = [])),
    params(HistoryQuery),
    responses(
        (status = 200, description = "A page of the history", body = PublishedPosts),
        (status = 400, description = "`limit` below 1, negative `offset`, or not a number", body = ErrorBody),
        (status = 401, description = "No valid session", body = ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
pub async fn published_posts(
    state: web::Data<AppState>,
    session: SessionUser,
    query: web::Query<HistoryQuery>,
) -> Result<HttpResponse, ApiError> {
    let (limit, offset) = page_bounds(&query)?;
    let (rows, total) = state
        .store
        .list_submissions(session.user.id, limit, offset)
        .await?;
    Ok(HttpResponse::Ok().json(PublishedPosts {
        posts: rows.iter().map(Submission::from).collect(),
        total,
        limit,
        offset,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_bounds_table() {
        let q = |limit, offset| HistoryQuery { limit, offset };
        assert_eq!(page_bounds(&q(None, None)).unwrap(), (20, 0));
        assert_eq!(page_bounds(&q(Some(100), Some(5))).unwrap(), (100, 5));
        assert_eq!(page_bounds(&q(Some(500), None)).unwrap(), (100, 0));
        assert!(page_bounds(&q(Some(0), None)).is_err());
        assert!(page_bounds(&q(Some(10), Some(-1))).is_err());
    }
}
