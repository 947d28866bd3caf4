//! `GET /api/published-posts` (session; spec §2.5, §4.10): the publishing history, newest first.

use actix_web::{HttpResponse, middleware::from_fn, web};

use super::dto::{
    requests::HistoryQuery, resources::Submission, responses::PublishedPosts, schema::ErrorBody,
};
use crate::web::auth::{SessionUser, require_session};
use crate::{AppState, error::ApiError, store::Page};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/published-posts")
            .wrap(from_fn(require_session))
            .route(web::get().to(published_posts)),
    );
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
    let page = Page::try_from(query.into_inner())?;
    let (rows, total) = state.store.history_listing(session.user.id, page).await?;
    Ok(HttpResponse::Ok().json(PublishedPosts {
        posts: rows.iter().map(Submission::from).collect(),
        total,
        limit: page.limit,
        offset: page.offset,
    }))
}
