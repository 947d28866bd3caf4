//! The daily-collection maintenance endpoints (spec §4.8):
//! `GET /api/cron/collection-status`, `GET /api/cron/check-missing`, `POST /api/cron/backfill`,
//! `POST /api/cron/collect-performance`.
//!
//! Authentication (the spec leaves it open): the operator token (`Authorization: Bearer`) sees
//! and collects every account; an API key (metered like any call) sees and collects only its
//! owner's accounts. Dates are days of the collector's zone (Asia/Taipei by default).

use std::collections::HashSet;

use actix_web::{HttpResponse, middleware::from_fn, web};
use chrono::{DateTime, Duration, Utc};

use super::dto::{
    requests::{BackfillBody, CollectQuery, CollectTarget, DaysQuery, LookBack, account_param},
    responses::{
        BackfillResults, BackfillRun, BackfilledDate, CollectResults, CollectRun, CollectionStatus,
        MissingDates, Snapshot,
    },
};
use crate::web::auth::{CronCaller, require_operator_or_api_key};
use crate::{
    AppState,
    error::ApiError,
    services::collection::{
        self, CollectionRun, Trigger,
        backfill::{BackfillDates, Yesterday, date_text},
    },
};

pub const DEFAULT_STATUS_DAYS: i64 = 7;
pub const DEFAULT_CHECK_DAYS: i64 = 30;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/cron")
            .wrap(from_fn(require_operator_or_api_key))
            .route("/collection-status", web::get().to(collection_status))
            .route("/check-missing", web::get().to(check_missing))
            .route("/backfill", web::post().to(backfill))
            .route("/collect-performance", web::post().to(collect_performance)),
    );
}

/// The collected snapshots of the last `days` days.
#[utoipa::path(get, path = "/api/cron/collection-status", tag = "cron", security(("operator_token" = []), ("api_key" = [])),
    params(DaysQuery), responses(
        (status = 200, description = "Done", body = super::dto::responses::CollectionStatus),
        (status = 400, description = "A bad parameter", body = super::dto::schema::ErrorBody),
        (status = 401, description = "Missing or wrong operator token or API key", body = super::dto::schema::ErrorBody),
        (status = 404, description = "`AccountNotFound`", body = super::dto::schema::ErrorBody),
        (status = 429, description = "Rate limited", body = super::dto::responses::TooManyRequests),
    ))]
pub async fn collection_status(
    state: web::Data<AppState>,
    caller: CronCaller,
    query: web::Query<DaysQuery>,
) -> Result<HttpResponse, ApiError> {
    let days = LookBack::try_from(query.into_inner())?.or(DEFAULT_STATUS_DAYS);
    let yesterday = state.collection.schedule().yesterday(state.clock.now());
    let from = yesterday - Duration::days(days - 1);
    let rows = state
        .store
        .snapshots_since(&date_text(from), caller.user_scope())
        .await?;
    let unique_dates: HashSet<&str> = rows.iter().map(|r| r.snapshot_date.as_str()).collect();
    let unique_accounts: HashSet<uuid::Uuid> = rows.iter().map(|r| r.account_id).collect();
    let history = rows
        .iter()
        .map(|row| Snapshot {
            snapshot_date_str: row.snapshot_date.clone(),
            account_id: row.account_id,
            platform: row.platform,
            page_name: row.page_name.clone(),
            posts_count: row.posts_count,
            page_metrics: row.page_metrics.clone(),
            failed_metrics: row.failed_metrics.clone(),
            collected_at: row.collected_at.map(http_date),
            status: row.status.clone(),
            error: row.error.clone(),
        })
        .collect();
    Ok(HttpResponse::Ok().json(CollectionStatus {
        success: true,
        days,
        total_snapshots: rows.len(),
        unique_dates: unique_dates.len(),
        unique_accounts: unique_accounts.len(),
        history,
    }))
}

/// The dates among the last `days` with no collected snapshot.
#[utoipa::path(get, path = "/api/cron/check-missing", tag = "cron", security(("operator_token" = []), ("api_key" = [])),
    params(DaysQuery), responses(
        (status = 200, description = "Done", body = super::dto::responses::MissingDates),
        (status = 400, description = "A bad parameter", body = super::dto::schema::ErrorBody),
        (status = 401, description = "Missing or wrong operator token or API key", body = super::dto::schema::ErrorBody),
        (status = 404, description = "`AccountNotFound`", body = super::dto::schema::ErrorBody),
        (status = 429, description = "Rate limited", body = super::dto::responses::TooManyRequests),
    ))]
pub async fn check_missing(
    state: web::Data<AppState>,
    caller: CronCaller,
    query: web::Query<DaysQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.into_inner();
    // The account is looked up before `days` is read: a bad `days` for an account the caller
    // cannot see stays a not-found.
    let account_id = account_param(query.account_id.as_deref())?;
    let account = find_account(&state, &caller, account_id).await?;
    let days = LookBack::try_from(query)?.or(DEFAULT_CHECK_DAYS);
    let missing = state.collection.missing_dates(&account, days).await?;
    Ok(HttpResponse::Ok().json(MissingDates {
        success: true,
        account_id: account.id,
        page_name: account.display_name.clone(),
        days_checked: days,
        missing_dates_count: missing.len(),
        missing_dates: missing,
    }))
}

/// Collects the given dates again for one account.
#[utoipa::path(post, path = "/api/cron/backfill", tag = "cron", security(("operator_token" = []), ("api_key" = [])),
    request_body = BackfillBody, responses(
        (status = 200, description = "Done", body = super::dto::responses::BackfillRun),
        (status = 400, description = "A bad parameter; malformed body", body = super::dto::schema::ErrorBody),
        (status = 401, description = "Missing or wrong operator token or API key", body = super::dto::schema::ErrorBody),
        (status = 404, description = "`AccountNotFound`", body = super::dto::schema::ErrorBody),
        (status = 429, description = "Rate limited", body = super::dto::responses::TooManyRequests),
    ))]
pub async fn backfill(
    state: web::Data<AppState>,
    caller: CronCaller,
    body: web::Json<BackfillBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    // The account is looked up before the dates are read: an unknown account is the answer
    // even when the dates are bad too.
    let account_id = account_param(body.account_id.as_deref())?;
    let account = find_account(&state, &caller, account_id).await?;
    let raw_dates = body
        .missing_dates
        .ok_or_else(|| ApiError::missing_parameter("missing_dates"))?;
    let yesterday = Yesterday(state.collection.schedule().yesterday(state.clock.now()));
    let dates = BackfillDates::try_from((raw_dates, yesterday))?;
    let dates = state.collection.backfill(account, &dates).await;
    let succeeded = dates.iter().filter(|date| date.succeeded()).count();
    let dates: Vec<BackfilledDate> = dates.into_iter().map(BackfilledDate::from).collect();
    Ok(HttpResponse::Ok().json(BackfillRun {
        success: true,
        message: format!("Backfilled {succeeded} of {} dates", dates.len()),
        results: BackfillResults {
            total_dates: dates.len(),
            success_count: succeeded,
            failed_count: dates.len() - succeeded,
            dates,
        },
    }))
}

/// Collects one day's figures (default yesterday) for every account in scope.
#[utoipa::path(post, path = "/api/cron/collect-performance", tag = "cron", security(("operator_token" = []), ("api_key" = [])),
    params(CollectQuery), responses(
        (status = 200, description = "Done", body = super::dto::responses::CollectRun),
        (status = 400, description = "A bad parameter", body = super::dto::schema::ErrorBody),
        (status = 401, description = "Missing or wrong operator token or API key", body = super::dto::schema::ErrorBody),
        (status = 404, description = "`AccountNotFound`", body = super::dto::schema::ErrorBody),
        (status = 429, description = "Rate limited", body = super::dto::responses::TooManyRequests),
    ))]
pub async fn collect_performance(
    state: web::Data<AppState>,
    caller: CronCaller,
    query: web::Query<CollectQuery>,
) -> Result<HttpResponse, ApiError> {
    let yesterday = Yesterday(state.collection.schedule().yesterday(state.clock.now()));
    let CollectTarget { date, account_id } =
        CollectTarget::try_from((query.into_inner(), yesterday))?;
    let accounts = match account_id {
        Some(id) => vec![find_account(&state, &caller, id).await?],
        None => {
            state
                .store
                .collectable_accounts(None, caller.user_scope())
                .await?
        }
    };
    let report = state
        .collection
        .collect(CollectionRun {
            date,
            accounts: collection::collectable(accounts),
            recollect: true,
            trigger: Trigger::Manual,
        })
        .await;
    Ok(HttpResponse::Ok().json(CollectRun {
        success: true,
        message: format!(
            "Collected {} of {} accounts for {}",
            report.success_count,
            report.total_accounts,
            date_text(date)
        ),
        results: CollectResults {
            target_date: date_text(date),
            total_accounts: report.total_accounts,
            success_count: report.success_count,
            failed_count: report.failed_count,
            // Each outcome goes out as it is: its members are the answer's.
            accounts: report.accounts,
        },
    }))
}

/// The account `id`, if the caller may see it (the operator sees every account).
async fn find_account(
    state: &AppState,
    caller: &CronCaller,
    id: uuid::Uuid,
) -> Result<entity::account::Model, ApiError> {
    let account = match caller.user_scope() {
        Some(user) => state.store.find_owned_account(user, id).await?,
        None => state.store.find_account(id).await?,
    };
    account
        .filter(|account| !account.disabled)
        .ok_or_else(ApiError::account_not_found)
}

/// RFC 9110 HTTP-date, e.g. `Sun, 22 Nov 2026 18:00:05 GMT` (spec §2.7 `collected_at`).
pub fn http_date(at: DateTime<Utc>) -> String {
    at.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use chrono::NaiveDate;

    use super::*;
    use crate::{
        domain::plan::Platform,
        insights::{DailyMetrics, MetricFailure},
        services::collection::AccountOutcome,
    };
    use crate::{http::dto::requests::look_back, services::collection::backfill::Backfilled};
    use serde_json::{Value, json};

    /// The typed results keep the members, nulls and number types the `json!` bodies had.
    #[test]
    fn run_results_keep_their_wire_shape() {
        let data = DailyMetrics {
            page_metrics: [
                ("views".to_string(), json!(12)),
                ("reach".to_string(), Value::Null),
            ]
            .into_iter()
            .collect(),
            posts_count: 2,
            total_post_views: None,
            failed_metrics: vec![MetricFailure {
                metric: "reach".into(),
                error: "retired".into(),
            }],
        };
        let id = uuid::Uuid::new_v4();
        let outcome = AccountOutcome {
            account_id: id,
            page_name: "Page".into(),
            platform: Platform::Facebook,
            status: "partial",
            data: Some(data.clone()),
            error: None,
        };
        assert_eq!(
            serde_json::to_value(&outcome).unwrap(),
            json!({
                "account_id": id,
                "page_name": "Page",
                "platform": "facebook",
                "status": "partial",
                "data": {
                    "page_metrics": {"views": 12, "reach": null},
                    "posts_count": 2,
                    "total_post_views": null,
                    "failed_metrics": [{"metric": "reach", "error": "retired"}],
                },
                "error": null,
            })
        );
        let partial = Backfilled {
            date: NaiveDate::from_ymd_opt(2026, 11, 20).unwrap(),
            outcome: Some(outcome),
        };
        assert!(partial.succeeded());
        let date = BackfilledDate::from(partial);
        assert_eq!(
            serde_json::to_value(&date).unwrap(),
            json!({
                "date": "2026-11-20",
                "status": "partial",
                "data": {
                    "page_metrics": {"views": 12, "reach": null},
                    "posts_count": 2,
                    "total_post_impressions": null,
                },
                "error": null,
            })
        );
        let failed = BackfilledDate {
            date: "2026-11-21".into(),
            status: "failed",
            data: None,
            error: Some("gone".into()),
        };
        let unavailable = Backfilled {
            date: NaiveDate::from_ymd_opt(2026, 11, 21).unwrap(),
            outcome: None,
        };
        assert!(!unavailable.succeeded());
        assert_eq!(
            serde_json::to_value(&failed).unwrap(),
            json!({"date": "2026-11-21", "status": "failed", "data": null, "error": "gone"})
        );
    }

    #[test]
    fn collected_at_is_an_http_date() {
        let at = DateTime::parse_from_rfc3339("2026-11-22T18:00:05Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(http_date(at), "Sun, 22 Nov 2026 18:00:05 GMT");
    }

    #[test]
    fn days_default_and_bounds() {
        assert_eq!(look_back(None).unwrap().or(7), 7);
        assert_eq!(look_back(Some(" ")).unwrap().or(7), 7);
        assert_eq!(look_back(Some("1")).unwrap().or(7), 1);
        assert_eq!(look_back(Some("366")).unwrap().or(7), 366);
        for bad in ["0", "367", "-3", "week"] {
            assert!(look_back(Some(bad)).is_err(), "{bad}");
        }
    }
}
