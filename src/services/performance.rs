//! Reading an account's performance through its actor (so reads share the account's rate
//! limiter and its knowledge of a dead token with publishing): the API's performance endpoints
//! and the dashboard's recent posts.

use std::sync::Arc;

use uuid::Uuid;

use crate::{
    actors::{
        account::{InsightsOutput, InsightsWork},
        supervisor::Supervisor,
    },
    domain::{plan::Platform, text::parse_uuid},
    error::{ApiError, ErrorCode},
    insights::{
        self, AccountSummary, InsightsQuery,
        bodies::{InsightsBody, PostsBody},
    },
};

/// The account a request names: its id, and optionally the platform the caller expects.
#[derive(Debug, Clone, Copy)]
pub struct AccountRef<'a> {
    pub account_id: Option<&'a str>,
    pub platform: Option<&'a str>,
}

/// The error for an account whose platform has no performance reads.
pub fn not_available(summary: &AccountSummary) -> ApiError {
    ApiError::invalid_request(format!(
        "Performance metrics are not available for {} accounts",
        summary.platform.as_str()
    ))
}

/// The recent posts of `user_id`'s account `account_id` with their metrics: the body of
/// `GET /api/performance/posts` (the dashboard's Performance page shows the same).
pub async fn recent_posts(
    supervisor: &Supervisor,
    user_id: Uuid,
    account_id: &str,
    limit: u32,
) -> Result<PostsBody, ApiError> {
    let target = AccountRef {
        account_id: Some(account_id),
        platform: None,
    };
    match read(supervisor, user_id, target, |_| {
        Ok(InsightsQuery::Posts { limit })
    })
    .await?
    {
        InsightsBody::Posts(posts) => Ok(posts),
        _ => Err(ApiError::internal(
            "the account actor answered a posts query with another body",
        )),
    }
}

/// Finds `user_id`'s account, builds the query, and reads it through the account's actor.
pub async fn read(
    supervisor: &Supervisor,
    user_id: Uuid,
    target: AccountRef<'_>,
    build: impl FnOnce(&AccountSummary) -> Result<InsightsQuery, ApiError>,
) -> Result<InsightsBody, ApiError> {
    let (account, summary) = find_account(supervisor, user_id, target).await?;
    if !insights::supported(summary.platform) {
        return Err(not_available(&summary));
    }
    let query = build(&summary)?;
    let names_a_post = matches!(query, InsightsQuery::Post { .. });
    let output = supervisor
        .read_insights(&account, &summary, InsightsWork::Query(query))
        .await
        .map_err(|error| match error.code {
            // Only a post read names an object besides the account: the platform not
            // knowing the account's own page/user/channel means the account is gone there.
            ErrorCode::NotFound if !names_a_post => ApiError::account_not_found(),
            _ => error,
        })?;
    match output {
        InsightsOutput::Body(body) => Ok(body),
        InsightsOutput::Daily(_) => Err(ApiError::internal(
            "the account actor answered a query with daily metrics",
        )),
    }
}

/// The user's connected account named by `account_id`, checked against `platform`.
pub async fn find_account(
    supervisor: &Supervisor,
    user_id: Uuid,
    target: AccountRef<'_>,
) -> Result<(Arc<entity::account::Model>, AccountSummary), ApiError> {
    let raw = target
        .account_id
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| ApiError::missing_parameter("account_id"))?;
    let account_id = parse_uuid(raw).ok_or_else(ApiError::account_not_found)?;
    // From the supervisor's rows: a warm call makes no round trip.
    let account = supervisor
        .find_owned_account(user_id, account_id)
        .await?
        .filter(|account| !account.disabled)
        .ok_or_else(ApiError::account_not_found)?;
    let summary = AccountSummary::of(&account);
    if let Some(asked) = target.platform.filter(|p| !p.is_empty()) {
        let asked = Platform::parse(asked).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidPlatform,
                format!("Invalid platform {asked:?}"),
            )
        })?;
        if asked != summary.platform {
            return Err(ApiError::invalid_request(format!(
                "platform {} does not match the account, which is a {} account",
                asked.as_str(),
                summary.platform.as_str()
            )));
        }
    }
    Ok((account, summary))
}
