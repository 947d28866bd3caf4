//! `POST /v2/posts` (API key; spec §4.1): publish now or schedule. The work is in
//! [`crate::publish::service`].

use actix_web::{HttpResponse, middleware::from_fn, web};
use serde_json::Value;

use super::auth::{ApiCaller, require_api_key};
use crate::{AppState, error::ApiError, publish::service::Publisher};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/v2/posts")
            .wrap(from_fn(require_api_key))
            .route(web::post().to(create_post)),
    );
}

async fn create_post(
    state: web::Data<AppState>,
    caller: ApiCaller,
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let publisher = Publisher {
        user: &caller.user,
        plan: caller.plan,
    };
    let response = state.publishing.handle_post(publisher, &body).await?;
    Ok(HttpResponse::Ok().json(response))
}
