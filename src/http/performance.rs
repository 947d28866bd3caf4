//! `GET /api/performance/{metrics,account,posts,post/{post_id}}` (API key; spec §4.4–4.7).
//!
//! Errors use these endpoints' own body form `{success:false, error:<text>}` (spec §7). The
//! platform calls go through the account's actor, so they share its rate limiter (and its
//! knowledge of a dead token) with publishing.

use actix_web::{HttpResponse, middleware::from_fn, web};
use chrono::{Duration, NaiveDate};

use crate::web::auth::{ApiCaller, require_api_key};
use crate::{
    AppState,
    error::ApiError,
    insights::{AccountSummary, InsightsQuery, PostId, catalogue},
    platforms::PlatformError,
    services::performance::{self, AccountRef},
};

/// Days in the default `since..until` window of the account endpoint.
pub const DEFAULT_RANGE_DAYS: i64 = 30;
/// The longest `since..until` window (the Graph insights limit).
pub const MAX_RANGE_DAYS: i64 = 90;
pub const DEFAULT_POSTS_LIMIT: u32 = 25;
pub const MAX_POSTS_LIMIT: u32 = 100;
const PERIODS: [&str; 3] = ["day", "week", "days_28"];

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/performance")
            .wrap(from_fn(require_api_key))
            .route("/metrics", web::get().to(metrics))
            .route("/account", web::get().to(account))
            .route("/posts", web::get().to(posts))
            .route("/post/{post_id}", web::get().to(post)),
    );
}

pub use super::dto::requests::PerformanceQuery;

/// The account a performance request names.
fn target(query: &PerformanceQuery) -> AccountRef<'_> {
    AccountRef {
        account_id: query.account_id.as_deref(),
        platform: query.platform.as_deref(),
    }
}

/// The metrics the account's platform offers.
#[utoipa::path(get, path = "/api/performance/metrics", tag = "performance", security(("api_key" = [])),
    params(PerformanceQuery),
    responses(
        (status = 200, description = "The platform's metric identifiers", body = super::dto::responses::MetricsBody),
        super::dto::responses::PerformanceErrors,
    ))]
pub async fn metrics(
    state: web::Data<AppState>,
    caller: ApiCaller,
    query: web::Query<PerformanceQuery>,
) -> Result<HttpResponse, ApiError> {
    let (_, summary) = performance::find_account(&state.supervisor, caller.user.id, target(&query))
        .await
        .map_err(ApiError::in_performance_form)?;
    let body = catalogue::metrics_body(&summary)
        .ok_or_else(|| performance::not_available(&summary).in_performance_form())?;
    Ok(HttpResponse::Ok().json(body))
}

/// The account's figures over a date range.
#[utoipa::path(get, path = "/api/performance/account", tag = "performance", security(("api_key" = [])),
    params(PerformanceQuery),
    responses(
        (status = 200, description = "The platform's figures", body = super::dto::responses::AccountBody),
        super::dto::responses::PerformanceErrors,
    ))]
pub async fn account(
    state: web::Data<AppState>,
    caller: ApiCaller,
    query: web::Query<PerformanceQuery>,
) -> Result<HttpResponse, ApiError> {
    run(&state, &caller, &query, |_| {
        let today = state.clock.now().date_naive();
        account_query(&query, today)
    })
    .await
}

/// The account's recent posts with their figures.
#[utoipa::path(get, path = "/api/performance/posts", tag = "performance", security(("api_key" = [])),
    params(PerformanceQuery),
    responses(
        (status = 200, description = "The platform's figures", body = super::dto::responses::PostsBody),
        super::dto::responses::PerformanceErrors,
    ))]
pub async fn posts(
    state: web::Data<AppState>,
    caller: ApiCaller,
    query: web::Query<PerformanceQuery>,
) -> Result<HttpResponse, ApiError> {
    run(&state, &caller, &query, |_| {
        Ok(InsightsQuery::Posts {
            limit: posts_limit(query.limit.as_deref())?,
        })
    })
    .await
}

/// One post's figures.
#[utoipa::path(get, path = "/api/performance/post/{post_id}", tag = "performance", security(("api_key" = [])),
    params(("post_id" = String, Path, description = "The platform's post id"), PerformanceQuery),
    responses(
        (status = 200, description = "The platform's figures", body = super::dto::responses::PostBody),
        super::dto::responses::PerformanceErrors,
    ))]
pub async fn post(
    state: web::Data<AppState>,
    caller: ApiCaller,
    path: web::Path<String>,
    query: web::Query<PerformanceQuery>,
) -> Result<HttpResponse, ApiError> {
    let post_id = path.into_inner();
    // Checked against the platform's id grammar here, before the limiter or the platform sees
    // it: a value that names no post (`..%2F..`, `1?x`, an overlong one) is refused untouched.
    run(&state, &caller, &query, |summary| {
        let post_id =
            PostId::parse(summary.platform, &post_id).map_err(PlatformError::into_api_error)?;
        Ok(InsightsQuery::Post { post_id })
    })
    .await
}

/// Finds the account, builds the query, and reads it through the account's actor.
async fn run(
    state: &AppState,
    caller: &ApiCaller,
    params: &PerformanceQuery,
    build: impl FnOnce(&AccountSummary) -> Result<InsightsQuery, ApiError>,
) -> Result<HttpResponse, ApiError> {
    match performance::read(&state.supervisor, caller.user.id, target(params), build).await {
        Ok(body) => Ok(HttpResponse::Ok().json(body)),
        Err(error) => Err(error.in_performance_form()),
    }
}

/// `period`, `since` and `until` with their defaults: `day`, and the 30 days ending yesterday.
fn account_query(params: &PerformanceQuery, today: NaiveDate) -> Result<InsightsQuery, ApiError> {
    let period = params
        .period
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or("day");
    if !PERIODS.contains(&period) {
        return Err(ApiError::invalid_request(format!(
            "period must be one of {}",
            PERIODS.join(", ")
        )));
    }
    let until = match date_param("until", params.until.as_deref())? {
        Some(until) => until,
        None => today - Duration::days(1),
    };
    let since = match date_param("since", params.since.as_deref())? {
        Some(since) => since,
        None => until - Duration::days(DEFAULT_RANGE_DAYS - 1),
    };
    if since > until {
        return Err(ApiError::invalid_request("since must not be after until"));
    }
    if (until - since).num_days() + 1 > MAX_RANGE_DAYS {
        return Err(ApiError::invalid_request(format!(
            "since..until may span at most {MAX_RANGE_DAYS} days"
        )));
    }
    Ok(InsightsQuery::Account {
        period: period.to_string(),
        since,
        until,
    })
}

fn date_param(name: &str, raw: Option<&str>) -> Result<Option<NaiveDate>, ApiError> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(text) => NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .map(Some)
            .map_err(|_| ApiError::invalid_request(format!("{name} must be a date YYYY-MM-DD"))),
    }
}

fn posts_limit(raw: Option<&str>) -> Result<u32, ApiError> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(DEFAULT_POSTS_LIMIT),
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_POSTS_LIMIT).contains(n))
            .ok_or_else(|| {
                ApiError::invalid_request(format!(
                    "limit must be an integer from 1 to {MAX_POSTS_LIMIT}"
                ))
            }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::error::ErrorCode;

    fn params(period: Option<&str>, since: Option<&str>, until: Option<&str>) -> PerformanceQuery {
        PerformanceQuery {
            account_id: None,
            platform: None,
            period: period.map(str::to_string),
            since: since.map(str::to_string),
            until: until.map(str::to_string),
            limit: None,
        }
    }

    fn date(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn account_query_defaults_and_bounds() {
        let today = date("2026-11-23");
        let expect = |period: &str, since: &str, until: &str| InsightsQuery::Account {
            period: period.into(),
            since: date(since),
            until: date(until),
        };
        let ok = [
            (
                params(None, None, None),
                expect("day", "2026-10-24", "2026-11-22"),
            ),
            (
                params(Some("week"), None, Some("2026-03-31")),
                expect("week", "2026-03-02", "2026-03-31"),
            ),
            (
                params(None, Some("2026-11-01"), Some("2026-11-01")),
                expect("day", "2026-11-01", "2026-11-01"),
            ),
            (
                params(None, Some("2026-08-25"), Some("2026-11-22")),
                expect("day", "2026-08-25", "2026-11-22"),
            ),
        ];
        for (input, expected) in ok {
            assert_eq!(account_query(&input, today).unwrap(), expected);
        }
        let refused = [
            (params(Some("year"), None, None), "period must be one of"),
            (
                params(None, Some("2026-13-01"), None),
                "since must be a date",
            ),
            (
                params(None, None, Some("yesterday")),
                "until must be a date",
            ),
            (
                params(None, Some("2026-11-10"), Some("2026-11-09")),
                "must not be after",
            ),
            (
                params(None, Some("2026-08-24"), Some("2026-11-22")),
                "at most 90 days",
            ),
        ];
        for (input, message) in refused {
            let error = account_query(&input, today).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidRequest);
            assert!(error.message.contains(message), "{}", error.message);
        }
    }

    #[test]
    fn posts_limit_defaults_to_25_and_allows_1_to_100() {
        assert_eq!(posts_limit(None).unwrap(), 25);
        assert_eq!(posts_limit(Some("1")).unwrap(), 1);
        assert_eq!(posts_limit(Some("100")).unwrap(), 100);
        for bad in ["0", "101", "-1", "ten", "2.5"] {
            assert!(posts_limit(Some(bad)).is_err(), "{bad}");
        }
    }
}
