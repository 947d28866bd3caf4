//! Operator endpoints (`Authorization: Bearer <operator token>`): find users, set a user's plan,
//! record a connected account by hand.

use actix_web::{HttpResponse, middleware::from_fn, web};

use super::dto::{
    requests::UsersQuery,
    resources::{Account, User},
    responses::{AccountCreated, UserList, UserResponse},
    schema::ErrorBody,
};
use crate::domain::text::parse_uuid;
use crate::web::auth::{Operator, require_operator};
use crate::{
    AppState, error::ApiError, services::operator, services::operator::CheckedAccount,
    services::operator::ManualAccount, services::operator::PlanChange,
    services::operator::PlanSetting, store::UserSearch,
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

/// Users whose email contains `email`.
#[utoipa::path(get, path = "/admin/users", tag = "operator", security(("operator_token" = [])),
    params(UsersQuery),
    responses(
        (status = 200, description = "The matching users", body = UserList),
        (status = 400, description = "`MissingParameter`: no `email`", body = ErrorBody),
        (status = 401, description = "Missing or wrong operator token", body = ErrorBody),
    ))]
pub async fn find_users(
    state: web::Data<AppState>,
    _operator: Operator,
    query: web::Query<UsersQuery>,
) -> Result<HttpResponse, ApiError> {
    let search = UserSearch::try_from(query.into_inner())?;
    let users = state.store.find_users(&search).await?;
    Ok(HttpResponse::Ok().json(UserList {
        success: true,
        users: users.iter().map(User::from).collect(),
    }))
}

/// Sets a user's plan.
#[utoipa::path(put, path = "/admin/users/{user_id}/plan", tag = "operator", security(("operator_token" = [])),
    params(("user_id" = String, Path, description = "The user's id (a UUID)")),
    request_body = PlanChange,
    responses(
        (status = 200, description = "The user, changed", body = UserResponse),
        (status = 400, description = "Unknown plan or plan type; malformed body", body = ErrorBody),
        (status = 401, description = "Missing or wrong operator token", body = ErrorBody),
        (status = 404, description = "`NotFound`: no such user", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
    ))]
pub async fn set_plan(
    state: web::Data<AppState>,
    _operator: Operator,
    path: web::Path<String>,
    body: web::Json<PlanChange>,
) -> Result<HttpResponse, ApiError> {
    let user_id = parse_uuid(&path).ok_or_else(|| ApiError::not_found("User not found"))?;
    let setting = PlanSetting::try_from(body.into_inner())?;
    let user = operator::apply_plan(&state.store, state.clock.now(), user_id, setting).await?;
    tracing::info!(user_id = %user.id, plan = %user.plan, "operator set plan");
    Ok(HttpResponse::Ok().json(UserResponse {
        success: true,
        user: User::from(&user),
    }))
}

/// Records a connected account by hand (demos, and until a platform's OAuth lands).
#[utoipa::path(post, path = "/admin/accounts", tag = "operator", security(("operator_token" = [])),
    request_body = ManualAccount,
    responses(
        (status = 200, description = "The account", body = AccountCreated),
        (status = 400, description = "Unknown platform or user; malformed body", body = ErrorBody),
        (status = 401, description = "Missing or wrong operator token", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
    ))]
pub async fn add_account(
    state: web::Data<AppState>,
    _operator: Operator,
    body: web::Json<ManualAccount>,
) -> Result<HttpResponse, ApiError> {
    let account = CheckedAccount::try_from(body.into_inner())?;
    let account =
        operator::record_account(&state.store, &state.cipher, state.clock.now(), account).await?;
    Ok(HttpResponse::Ok().json(AccountCreated {
        success: true,
        account: Account::from(&account),
    }))
}
