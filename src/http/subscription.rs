//! `GET /api/subscription/status` (session; spec §2.6, §4.12).

use actix_web::{HttpResponse, middleware::from_fn, web};

use super::{
    auth::{SessionUser, require_session},
    dto::{
        iso,
        responses::{ApiUsage, Subscription, SubscriptionStatus},
        schema::ErrorBody,
    },
};
use crate::{AppState, error::ApiError, usage};

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
    } = usage_now(&state, user).await?;
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

/// A user's usage of the current period, as `GET /api/subscription/status` and the dashboard
/// show it.
pub struct UsageNow {
    pub period: usage::UsagePeriod,
    /// Calls counted this period.
    pub used: i64,
    /// The plan's allowance; -1 for unlimited.
    pub limit: i64,
    /// What is left; -1 for unlimited.
    pub remaining: i64,
}

impl UsageNow {
    fn new(state: &AppState, plan: usage::Plan, period: usage::UsagePeriod, used: i64) -> Self {
        let (limit, remaining) = match plan.monthly_limit(state.config.usage.free_monthly_limit) {
            Some(limit) => (limit, (limit - used).max(0)),
            None => (-1, -1),
        };
        Self {
            period,
            used,
            limit,
            remaining,
        }
    }
}

/// Reads the current period's usage of `user`.
pub async fn usage_now(state: &AppState, user: &entity::user::Model) -> Result<UsageNow, ApiError> {
    let period = usage::usage_period(user.created_at, state.clock.now());
    // Written counts plus this instance's counts not yet written (unlimited plans), read
    // while no flush is moving counts from one to the other.
    let used = {
        let _reading = state.last_used.reading_usage().await;
        state.store.period_usage(user.id, &period.key()).await?
            + state.last_used.pending_calls(user.id, &period.key())
    };
    Ok(UsageNow::new(state, user.plan, period, used))
}

/// [`usage_now`] for many users with one query (the operator's usage table, which refreshes
/// itself: a query per user would be hundreds every few seconds).
pub async fn usage_of_users(
    state: &AppState,
    users: &[entity::user::Model],
) -> Result<Vec<UsageNow>, ApiError> {
    let now = state.clock.now();
    let periods: Vec<_> = users
        .iter()
        .map(|user| usage::usage_period(user.created_at, now))
        .collect();
    let keys: Vec<_> = users
        .iter()
        .zip(&periods)
        .map(|(user, period)| (user.id, period.key()))
        .collect();
    let _reading = state.last_used.reading_usage().await;
    let written = state.store.periods_usage(&keys).await?;
    Ok(users
        .iter()
        .zip(periods)
        .zip(keys)
        .map(|((user, period), key)| {
            let used = written.get(&key).copied().unwrap_or(0)
                + state.last_used.pending_calls(user.id, &key.1);
            UsageNow::new(state, user.plan, period, used)
        })
        .collect())
}
