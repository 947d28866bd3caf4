//! `GET /api/published-posts` (session; spec §2.5, §4.10): the publishing history, newest first.

use actix_web::{HttpResponse, middleware::from_fn, web};
use serde::Deserialize;
use serde_json::json;

use super::auth::{SessionUser, require_session};
use crate::{AppState, error::ApiError, views};

const DEFAULT_LIMIT: i64 = 20;
const MAX_LIMIT: i64 = 100;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/published-posts")
            .wrap(from_fn(require_session))
            .route(web::get().to(published_posts)),
    );
}

#[derive(Deserialize)]
struct HistoryQuery {
    limit: Option<i64>,
    offset: Option<i64>,
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

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn published_posts(
    state: web::Data<AppState>,
    session: SessionUser,
    query: web::Query<HistoryQuery>,
) -> Result<HttpResponse, ApiError> {
    let (limit, offset) = page_bounds(&query)?;
    let (rows, total) = state
        .store
        .list_submissions(session.user.id, limit, offset)
        .await?;
    let posts: Vec<_> = rows.iter().map(views::submission).collect();
    Ok(HttpResponse::Ok().json(json!({
        "posts": posts,
        "total": total,
        "limit": limit,
        "offset": offset,
    })))
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
