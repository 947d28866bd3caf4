//! Operator endpoints (`Authorization: Bearer <operator token>`): find users, set a user's plan,
//! record a connected account by hand.

use actix_web::{HttpResponse, middleware::from_fn, web};
use serde::Deserialize;
use serde_json::json;

use super::{
    auth::{Operator, require_operator},
    parse_uuid,
};
use crate::{
    AppState,
    error::ApiError,
    operator::{self, ManualAccount, PlanChange},
    views,
};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/admin")
            .wrap(from_fn(require_operator))
            .service(web::resource("/users").route(web::get().to(find_users)))
            .service(web::resource("/users/{user_id}/plan").route(web::put().to(set_plan)))
            .service(web::resource("/accounts").route(web::post().to(add_account))),
    );
}

#[derive(Deserialize)]
struct UsersQuery {
    email: Option<String>,
}

async fn find_users(
    state: web::Data<AppState>,
    _operator: Operator,
    query: web::Query<UsersQuery>,
) -> Result<HttpResponse, ApiError> {
    let email = query
        .into_inner()
        .email
        .ok_or_else(|| ApiError::missing_parameter("email"))?;
    super::reject_nul("email", &email)?;
    let users = state.store.find_users_by_email(&email).await?;
    let users: Vec<_> = users.iter().map(views::user).collect();
    Ok(HttpResponse::Ok().json(json!({"success": true, "users": users})))
}

async fn set_plan(
    state: web::Data<AppState>,
    _operator: Operator,
    path: web::Path<String>,
    body: web::Json<PlanChange>,
) -> Result<HttpResponse, ApiError> {
    let user_id = parse_uuid(&path).ok_or_else(|| ApiError::not_found("User not found"))?;
    let user = operator::set_user_plan(&state.store, state.clock.now(), user_id, body.into_inner())
        .await?;
    tracing::info!(user_id = %user.id, plan = %user.plan, "operator set plan");
    Ok(HttpResponse::Ok().json(json!({"success": true, "user": views::user(&user)})))
}

async fn add_account(
    state: web::Data<AppState>,
    _operator: Operator,
    body: web::Json<ManualAccount>,
) -> Result<HttpResponse, ApiError> {
    let account = operator::add_account(
        &state.store,
        &state.cipher,
        state.clock.now(),
        body.into_inner(),
    )
    .await?;
    Ok(HttpResponse::Ok().json(json!({"success": true, "account": views::account(&account)})))
}
