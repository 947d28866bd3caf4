//! Request bodies and query strings. Numbers and dates some endpoints read as text are declared
//! as strings here because that is what the handler accepts (its own check gives the precise
//! message); the document says which format is expected.
//!
//! Each DTO converts with `TryFrom` into the domain value its use case takes (a key name, a
//! page, a list filter, …): the conversion holds the checks, their order and their messages,
//! so a handler is `Typed::try_from(dto.into_inner())?` and then works with checked values.

use entity::scheduled_post::ScheduledStatus;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::domain::{idempotency::IdempotencyKey, post_status::PostStatus, text::parse_uuid};
use crate::services::collection::backfill::{self, BackfillDates, Yesterday};
use crate::services::keys::{KeyName, MAX_NAME_CHARS};
use crate::services::posts::PostSelection;
use crate::{
    domain::plan::Platform,
    error::{ApiError, ErrorCode},
    store::{Page, ScheduledFilter, UserSearch},
};

/// `POST /api/keys`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateKeyRequest {
    /// 1 to 100 characters (trimmed). Missing: `MissingParameter`.
    #[schema(required = true, min_length = 1, max_length = 100)]
    pub name: Option<String>,
}

// The document's bounds must follow the rule they describe.
const _: () = assert!(MAX_NAME_CHARS == 100);

impl TryFrom<CreateKeyRequest> for KeyName {
    type Error = ApiError;

    fn try_from(request: CreateKeyRequest) -> Result<Self, ApiError> {
        let name = request
            .name
            .ok_or_else(|| ApiError::missing_parameter("name"))?;
        Ok(KeyName::parse(&name)?)
    }
}

/// `POST /api/token/info`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TokenInfoRequest {
    /// The account's id. Missing: `MissingParameter`; unknown: `AccountNotFound`.
    #[schema(required = true, format = Uuid)]
    pub account_id: Option<String>,
}

/// The account's id. Not a UUID: the account is simply not found (as a path id would be).
impl TryFrom<TokenInfoRequest> for Uuid {
    type Error = ApiError;

    fn try_from(request: TokenInfoRequest) -> Result<Self, ApiError> {
        let raw = request
            .account_id
            .ok_or_else(|| ApiError::missing_parameter("account_id"))?;
        parse_uuid(&raw).ok_or_else(ApiError::account_not_found)
    }
}

/// `GET /api/published-posts`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// Page size, at least 1 (default 20; above 100 is clamped to 100).
    #[param(minimum = 1)]
    pub limit: Option<i64>,
    /// Items to skip, at least 0 (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

const HISTORY_DEFAULT_LIMIT: i64 = 20;
const HISTORY_MAX_LIMIT: i64 = 100;

/// `limit` above the maximum is clamped to it; a `limit` below 1 or a negative `offset` is refused.
impl TryFrom<HistoryQuery> for Page {
    type Error = ApiError;

    fn try_from(query: HistoryQuery) -> Result<Self, ApiError> {
        let limit = query.limit.unwrap_or(HISTORY_DEFAULT_LIMIT);
        if limit < 1 {
            return Err(ApiError::invalid_request("limit must be at least 1"));
        }
        let offset = query.offset.unwrap_or(0);
        if offset < 0 {
            return Err(ApiError::invalid_request("offset must not be negative"));
        }
        Ok(Page {
            limit: limit.min(HISTORY_MAX_LIMIT).unsigned_abs(),
            offset: offset.unsigned_abs(),
        })
    }
}

/// A list's `platform` filter: empty or absent is "any"; a name that is not a platform is
/// `InvalidPlatform`.
fn parse_platform_filter(raw: Option<&str>) -> Result<Option<Platform>, ApiError> {
    match raw.filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(raw) => Platform::parse(raw).map(Some).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidPlatform,
                format!("Invalid platform '{raw}'"),
            )
        }),
    }
}

/// `GET /api/scheduled-posts`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScheduledListQuery {
    /// `scheduled`, `publishing`, `published`, `failed` or `cancelled` (empty: all).
    pub status: Option<String>,
    /// A platform name (empty: all).
    pub platform: Option<String>,
    /// At least 1 (default 50; above 100 is clamped to 100).
    #[param(minimum = 1)]
    pub limit: Option<i64>,
}

const SCHEDULED_DEFAULT_LIMIT: i64 = 50;
const SCHEDULED_MAX_LIMIT: i64 = 100;

/// Checked in the order status, platform, limit; an empty `status` or `platform` means "any".
impl TryFrom<ScheduledListQuery> for ScheduledFilter {
    type Error = ApiError;

    fn try_from(query: ScheduledListQuery) -> Result<Self, ApiError> {
        let status = match query.status.as_deref().filter(|s| !s.is_empty()) {
            None => None,
            Some(raw) => Some(ScheduledStatus::parse(raw).ok_or_else(|| {
                let all: Vec<&str> = ScheduledStatus::ALL.iter().map(|s| s.as_str()).collect();
                ApiError::invalid_request(format!("status must be one of {}", all.join(", ")))
            })?),
        };
        let platform = parse_platform_filter(query.platform.as_deref())?;
        let limit = query.limit.unwrap_or(SCHEDULED_DEFAULT_LIMIT);
        if limit < 1 {
            return Err(ApiError::invalid_request("limit must be at least 1"));
        }
        Ok(ScheduledFilter {
            status,
            platform,
            limit: limit.min(SCHEDULED_MAX_LIMIT).unsigned_abs(),
        })
    }
}

/// `GET /v2/posts`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PostListQuery {
    /// `processing`, `published`, `failed` or `unconfirmed` (empty: all).
    pub status: Option<String>,
    /// A platform name (empty: all).
    pub platform: Option<String>,
    /// Page size, at least 1 (default 20; above 100 is clamped to 100).
    #[param(minimum = 1)]
    pub limit: Option<i64>,
    /// Items to skip, at least 0 (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// Checked in the order status, platform, limit, offset; an empty `status` or `platform` means
/// "any". The page is the history's ([`HistoryQuery`]).
impl TryFrom<PostListQuery> for PostSelection {
    type Error = ApiError;

    fn try_from(query: PostListQuery) -> Result<Self, ApiError> {
        let status = match query.status.as_deref().filter(|s| !s.is_empty()) {
            None => None,
            Some(raw) => Some(PostStatus::parse(raw).ok_or_else(|| {
                let all: Vec<&str> = PostStatus::ALL.iter().map(|s| s.as_str()).collect();
                ApiError::invalid_request(format!("status must be one of {}", all.join(", ")))
            })?),
        };
        let platform = parse_platform_filter(query.platform.as_deref())?;
        let page = Page::try_from(HistoryQuery {
            limit: query.limit,
            offset: query.offset,
        })?;
        Ok(PostSelection {
            status,
            platform,
            page,
        })
    }
}

/// `GET /admin/users`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsersQuery {
    /// Part of an email address.
    pub email: Option<String>,
}

impl TryFrom<UsersQuery> for UserSearch {
    type Error = ApiError;

    fn try_from(query: UsersQuery) -> Result<Self, ApiError> {
        let email = query
            .email
            .ok_or_else(|| ApiError::missing_parameter("email"))?;
        crate::domain::text::reject_nul("email", &email)?;
        Ok(UserSearch { email })
    }
}

/// The performance endpoints' query (`/api/performance/*`).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PerformanceQuery {
    /// The account (required unless `platform` picks the caller's only account of it).
    pub account_id: Option<String>,
    /// A platform name: the caller's account on it.
    pub platform: Option<String>,
    /// `/account` only: `day`, `week`, `days_28` or `lifetime` where the platform has them.
    pub period: Option<String>,
    /// `/account` only: first date, `YYYY-MM-DD`.
    pub since: Option<String>,
    /// `/account` only: last date, `YYYY-MM-DD`.
    pub until: Option<String>,
    /// `/posts` only: how many posts (a positive integer).
    pub limit: Option<String>,
}

/// `GET /api/cron/collection-status`, `GET /api/cron/check-missing`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DaysQuery {
    /// How many days back from yesterday (a positive integer).
    pub days: Option<String>,
    /// The account (check-missing: required).
    pub account_id: Option<String>,
}

/// `days` only: check-missing reads `account_id` first (with [`account_param`]) and looks
/// the account up before `days` is read, so a bad `days` never hides a not-found.
impl TryFrom<DaysQuery> for LookBack {
    type Error = ApiError;

    fn try_from(query: DaysQuery) -> Result<Self, ApiError> {
        look_back(query.days.as_deref())
    }
}

/// `POST /api/cron/backfill`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct BackfillBody {
    #[schema(required = true)]
    pub account_id: Option<String>,
    /// Dates (`YYYY-MM-DD`) to collect again: 1 to 90, each over already.
    #[schema(required = true, min_items = 1, max_items = 90)]
    pub missing_dates: Option<Vec<String>>,
}

// The document's bounds must follow the rule they describe.
const _: () = assert!(backfill::MAX_BACKFILL_DATES == 90);

/// `missing_dates` against the latest collectable day. The body's `account_id` is read and
/// looked up first, by the handler (the lookup sits between the two checks).
impl TryFrom<(Vec<String>, Yesterday)> for BackfillDates {
    type Error = ApiError;

    fn try_from((raw, yesterday): (Vec<String>, Yesterday)) -> Result<Self, ApiError> {
        BackfillDates::check(&raw, yesterday)
    }
}

/// `POST /api/cron/collect-performance`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CollectQuery {
    /// The day to collect, `YYYY-MM-DD` (default yesterday).
    pub date: Option<String>,
    /// Only this account (default: every account in scope).
    pub account_id: Option<String>,
}

/// The date first (readable, and over), then the account id; empty values mean the defaults.
impl TryFrom<(CollectQuery, Yesterday)> for CollectTarget {
    type Error = ApiError;

    fn try_from((query, yesterday): (CollectQuery, Yesterday)) -> Result<Self, ApiError> {
        let date = match query.date.as_deref().filter(|d| !d.is_empty()) {
            Some(raw) => {
                let date = backfill::parse_date("date", raw)?;
                backfill::check_not_future(date, yesterday.0)?;
                date
            }
            None => yesterday.0,
        };
        let account_id = match query.account_id.as_deref().filter(|a| !a.is_empty()) {
            Some(raw) => Some(account_param(Some(raw))?),
            None => None,
        };
        Ok(CollectTarget { date, account_id })
    }
}

// `POST /v2/posts`: its loose wire types live beside their conversion into the domain's
// `PostRequest` (the scheduler reads stored requests through the same path).
pub use crate::publish::validate::{
    CreatePost, CreatePostContent, CreatePostRequest, CreatePostTarget, TextOrTexts, TiktokOptions,
};

/// The longest look back of the cron reports, in days.
pub const MAX_DAYS: i64 = 366;

/// The `account_id` a cron call names: present (after trimming) and a UUID; anything else
/// than a UUID is simply not found.
pub fn account_param(raw: Option<&str>) -> Result<uuid::Uuid, ApiError> {
    let raw = raw
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| ApiError::missing_parameter("account_id"))?;
    parse_uuid(raw).ok_or_else(ApiError::account_not_found)
}

/// How many days back a report looks (1 to [`MAX_DAYS`]); `None`: the endpoint's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookBack(pub Option<i64>);

impl LookBack {
    pub fn or(self, default: i64) -> i64 {
        self.0.unwrap_or(default)
    }
}

/// What `POST /api/cron/collect-performance` collects: the day, and one account (`None`:
/// every account in scope).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectTarget {
    pub date: chrono::NaiveDate,
    pub account_id: Option<uuid::Uuid>,
}

/// `days`: empty or absent is the default; else an integer from 1 to [`MAX_DAYS`].
pub fn look_back(raw: Option<&str>) -> Result<LookBack, ApiError> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(LookBack(None)),
        Some(text) => text
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=MAX_DAYS).contains(n))
            .map(|n| LookBack(Some(n)))
            .ok_or_else(|| {
                ApiError::invalid_request(format!("days must be an integer from 1 to {MAX_DAYS}"))
            }),
    }
}

/// The `Idempotency-Key` request header of `POST /v2/posts`.
pub const IDEMPOTENCY_KEY_HEADER: actix_web::http::header::HeaderName =
    actix_web::http::header::HeaderName::from_static("idempotency-key");

/// The `Idempotency-Key` a request sent, checked: one header line holding a key in either
/// form; anything else is `InvalidRequest`. `None` when the header is absent.
pub fn idempotency_key(
    headers: &actix_web::http::header::HeaderMap,
) -> Result<Option<IdempotencyKey>, ApiError> {
    let mut lines = headers.get_all(&IDEMPOTENCY_KEY_HEADER);
    let Some(value) = lines.next() else {
        return Ok(None);
    };
    if lines.next().is_some() {
        return Err(ApiError::invalid_request(
            "Send one Idempotency-Key header, not several",
        ));
    }
    IdempotencyKey::parse(value.as_bytes())
        .map(Some)
        .map_err(|error| {
            ApiError::invalid_request(format!(
                "{error}: a key is 1 to 255 printable ASCII characters, bare or as a quoted string"
            ))
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use chrono::NaiveDate;

    use super::*;

    /// The refusal's code and message, or the converted value.
    fn outcome<T>(result: Result<T, ApiError>) -> Result<T, (ErrorCode, String)> {
        result.map_err(|e| (e.code, e.message))
    }

    /// A table row: the input and what it converts to.
    type Case<I, T> = (I, Result<T, (ErrorCode, String)>);

    fn invalid(message: &str) -> (ErrorCode, String) {
        (ErrorCode::InvalidRequest, message.to_string())
    }

    #[test]
    fn key_name_table() {
        let long = "k".repeat(101);
        let longest = "k".repeat(100);
        let cases: [Case<Option<&str>, &str>; 7] = [
            (
                None,
                Err((
                    ErrorCode::MissingParameter,
                    "Missing required parameter: name".into(),
                )),
            ),
            (Some("  ci  "), Ok("ci")),
            (Some(&longest), Ok(&longest)),
            (Some("   "), Err(invalid("name must not be empty"))),
            (
                Some(&long),
                Err(invalid("name must be at most 100 characters")),
            ),
            // NUL is checked before emptiness and length.
            (
                Some("\0"),
                Err(invalid("name must not contain NUL characters (\\u0000)")),
            ),
            (
                Some(&format!("{long}\0")),
                Err(invalid("name must not contain NUL characters (\\u0000)")),
            ),
        ];
        for (name, expected) in cases {
            let request = CreateKeyRequest {
                name: name.map(str::to_string),
            };
            let got = outcome(KeyName::try_from(request));
            assert_eq!(
                got.as_ref().map(KeyName::as_str),
                expected.as_ref().map(|s| *s),
                "{name:?}"
            );
        }
    }

    #[test]
    fn token_info_account_table() {
        let id = Uuid::new_v4();
        let not_found = (
            ErrorCode::AccountNotFound,
            "Account not found or does not belong to you".to_string(),
        );
        let cases = [
            (
                None,
                Err((
                    ErrorCode::MissingParameter,
                    "Missing required parameter: account_id".to_string(),
                )),
            ),
            (Some(id.to_string()), Ok(id)),
            (Some(format!(" {id} ")), Ok(id)),
            (Some("nope".to_string()), Err(not_found.clone())),
            (Some(String::new()), Err(not_found)),
        ];
        for (account_id, expected) in cases {
            let request = TokenInfoRequest {
                account_id: account_id.clone(),
            };
            assert_eq!(outcome(Uuid::try_from(request)), expected, "{account_id:?}");
        }
    }

    #[test]
    fn history_page_table() {
        let page = |limit, offset| Ok(Page { limit, offset });
        let cases = [
            (None, None, page(20, 0)),
            (Some(100), Some(5), page(100, 5)),
            (Some(500), None, page(100, 0)),
            (Some(1), Some(0), page(1, 0)),
            (Some(0), None, Err(invalid("limit must be at least 1"))),
            (
                Some(10),
                Some(-1),
                Err(invalid("offset must not be negative")),
            ),
            // limit is checked first.
            (Some(-1), Some(-1), Err(invalid("limit must be at least 1"))),
        ];
        for (limit, offset, expected) in cases {
            let got = outcome(Page::try_from(HistoryQuery { limit, offset }));
            assert_eq!(got, expected, "{limit:?} {offset:?}");
        }
    }

    #[test]
    fn scheduled_filter_table() {
        let filter = |status, platform, limit| {
            Ok(ScheduledFilter {
                status,
                platform,
                limit,
            })
        };
        let bad_status =
            invalid("status must be one of scheduled, publishing, published, failed, cancelled");
        let cases = [
            (None, None, None, filter(None, None, 50)),
            (Some(""), Some(""), Some(500), filter(None, None, 100)),
            (
                Some("failed"),
                Some("threads"),
                Some(3),
                filter(Some(ScheduledStatus::Failed), Some(Platform::Threads), 3),
            ),
            (Some("done"), None, None, Err(bad_status.clone())),
            (
                None,
                Some("myspace"),
                None,
                Err((
                    ErrorCode::InvalidPlatform,
                    "Invalid platform 'myspace'".to_string(),
                )),
            ),
            (
                None,
                None,
                Some(0),
                Err(invalid("limit must be at least 1")),
            ),
            // status, then platform, then limit.
            (Some("done"), Some("myspace"), Some(0), Err(bad_status)),
            (
                None,
                Some("myspace"),
                Some(0),
                Err((
                    ErrorCode::InvalidPlatform,
                    "Invalid platform 'myspace'".to_string(),
                )),
            ),
        ];
        for (status, platform, limit, expected) in cases {
            let query = ScheduledListQuery {
                status: status.map(str::to_string),
                platform: platform.map(str::to_string),
                limit,
            };
            let got = outcome(ScheduledFilter::try_from(query));
            assert_eq!(got, expected, "{status:?} {platform:?} {limit:?}");
        }
    }

    #[test]
    fn user_search_table() {
        let cases = [
            (
                None,
                Err((
                    ErrorCode::MissingParameter,
                    "Missing required parameter: email".to_string(),
                )),
            ),
            (
                Some("a@example.com"),
                Ok(UserSearch {
                    email: "a@example.com".into(),
                }),
            ),
            (
                Some("a\0b"),
                Err(invalid("email must not contain NUL characters (\\u0000)")),
            ),
        ];
        for (email, expected) in cases {
            let query = UsersQuery {
                email: email.map(str::to_string),
            };
            assert_eq!(outcome(UserSearch::try_from(query)), expected, "{email:?}");
        }
    }

    fn day(text: &str) -> NaiveDate {
        NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap()
    }

    const YESTERDAY: &str = "2026-11-23";

    #[test]
    fn look_back_table() {
        let bad = invalid("days must be an integer from 1 to 366");
        let cases = [
            (None, Ok(LookBack(None))),
            (Some(""), Ok(LookBack(None))),
            (Some(" 30 "), Ok(LookBack(Some(30)))),
            (Some("366"), Ok(LookBack(Some(366)))),
            (Some("0"), Err(bad.clone())),
            (Some("367"), Err(bad.clone())),
            (Some("week"), Err(bad)),
        ];
        for (days, expected) in cases {
            let query = DaysQuery {
                days: days.map(str::to_string),
                // Not read by this conversion (check-missing reads it first, by itself).
                account_id: Some("not-a-uuid".into()),
            };
            assert_eq!(outcome(LookBack::try_from(query)), expected, "{days:?}");
        }
    }

    #[test]
    fn collect_target_table() {
        let id = Uuid::new_v4();
        let yesterday = Yesterday(day(YESTERDAY));
        let not_over = invalid(
            "2026-11-24 is not over yet; the latest date that can be collected is 2026-11-23",
        );
        let not_found = (
            ErrorCode::AccountNotFound,
            "Account not found or does not belong to you".to_string(),
        );
        let target = |date: &str, account_id| {
            Ok(CollectTarget {
                date: day(date),
                account_id,
            })
        };
        let cases = [
            (None, None, target(YESTERDAY, None)),
            (Some(""), Some(String::new()), target(YESTERDAY, None)),
            (
                Some("2026-11-01"),
                Some(id.to_string()),
                target("2026-11-01", Some(id)),
            ),
            (Some("2026-11-24"), None, Err(not_over.clone())),
            (
                Some("24.11.2026"),
                None,
                Err(invalid(
                    "date must hold dates YYYY-MM-DD, got \"24.11.2026\"",
                )),
            ),
            (None, Some("x".into()), Err(not_found)),
            (
                None,
                Some("  ".into()),
                Err((
                    ErrorCode::MissingParameter,
                    "Missing required parameter: account_id".to_string(),
                )),
            ),
            // The date is checked before the account.
            (Some("2026-11-24"), Some("x".into()), Err(not_over)),
        ];
        for (date, account_id, expected) in cases {
            let query = CollectQuery {
                date: date.map(str::to_string),
                account_id: account_id.clone(),
            };
            let got = outcome(CollectTarget::try_from((query, yesterday)));
            assert_eq!(got, expected, "{date:?} {account_id:?}");
        }
    }

    #[test]
    fn backfill_dates_table() {
        let yesterday = Yesterday(day(YESTERDAY));
        let count = invalid("missing_dates must hold 1 to 90 dates");
        let unreadable = invalid("missing_dates must hold dates YYYY-MM-DD, got \"soon\"");
        let not_over = invalid(
            "2026-11-24 is not over yet; the latest date that can be collected is 2026-11-23",
        );
        let too_many = vec!["2026-11-01"; 91];
        let cases: [Case<Vec<&str>, Vec<&str>>; 7] = [
            (
                vec!["2026-11-02", "2026-11-01"],
                Ok(vec!["2026-11-02", "2026-11-01"]),
            ),
            // Repeats collect once, in the order first asked.
            (
                vec!["2026-11-02", " 2026-11-01 ", "2026-11-02"],
                Ok(vec!["2026-11-02", "2026-11-01"]),
            ),
            (vec![YESTERDAY], Ok(vec![YESTERDAY])),
            (vec![], Err(count.clone())),
            (too_many, Err(count)),
            // The first bad date in the order given is the one reported.
            (vec!["2026-11-24", "soon"], Err(not_over)),
            (vec!["soon", "2026-11-24"], Err(unreadable)),
        ];
        for (raw, expected) in cases {
            let label = format!("{raw:?}");
            let raw: Vec<String> = raw.into_iter().map(str::to_string).collect();
            let got = outcome(BackfillDates::try_from((raw, yesterday)));
            let expected =
                expected.map(|dates| BackfillDates(dates.into_iter().map(day).collect()));
            assert_eq!(got, expected, "{label}");
        }
    }
}
