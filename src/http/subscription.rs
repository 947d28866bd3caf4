//! `GET /api/subscription/status` (session; spec §2.6, §4.12).

use actix_web::{HttpResponse, middleware::from_fn, web};

use super::dto::{
    iso,
    responses::{ApiUsage, Subscription, SubscriptionStatus},
    schema::ErrorBody,
};
use crate::web::auth::{SessionUser, require_session};
use crate::{AppState, error::ApiError, services::usage::UsageNow};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/subscription/status")
            .wrap(from_fn(require_session))
            .route(web::get().to(subscription_status)),
    );
}

/// The caller's plan and this period's usage (§4.12).
#[utoipa::path(get, path = "/api/subscription/status", tag = "account", security(("session" = [])),
    responses(
        (status = 200, description = "Plan and usage", body = SubscriptionStatus),
        (status = 401, description = "No valid session", body = ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
pub async fn subscription_status(
    state: web::Data<AppState>,
    session: SessionUser,
) -> Result<HttpResponse, ApiError> {
    let user = &session.user;
    let plan = user.plan;
    let UsageNow {
        period,
        used,
        limit,
        remaining,
    } = state.usage.now(user).await?;
    let paid = plan.is_paid();
    let subscription = Subscription {
        status: plan.subscription_status().to_string(),
        plan: plan.as_str(),
        plan_type: paid.then(|| user.plan_type.as_deref().unwrap_or("monthly").to_string()),
        current_period_end: paid.then(|| user.current_period_end.map(iso)),
    };
    Ok(HttpResponse::Ok().json(SubscriptionStatus {
        success: true,
        subscription,
        api_usage: ApiUsage {
            current_usage: used,
            limit,
            remaining,
            current_month: period.month_label(),
            period_start: iso(period.start),
            period_end: iso(period.end),
        },
    }))
}
