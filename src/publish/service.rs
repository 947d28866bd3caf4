//! `POST /v2/posts`, immediate publishing: validation (pure, `validate.rs`), the media probe,
//! the x plan rules, then the account actor. The handler in `http/posts.rs` only calls
//! [`publish_now`].

use std::time::Duration;

use serde_json::{Value, json};
use uuid::Uuid;

use super::{
    plan::{MediaRef, Platform, PublishPlan},
    run::JobSpec,
    validate::{self, AccountFacts, PostRequest},
};
use crate::{
    AppState,
    error::{ApiError, ErrorCode},
    http::auth::ApiCaller,
    usage::{self, Plan},
};

/// Validates, probes and publishes; returns the §4.1 success body.
pub async fn publish_now(
    state: &AppState,
    caller: &ApiCaller,
    body: &Value,
) -> Result<Value, ApiError> {
    let request = validate::parse_request(body)?;
    if request.scheduled_at.is_some() {
        return Err(ApiError::invalid_request(
            "scheduledAt: scheduling is not available in this version yet; omit it to publish now",
        ));
    }
    let now = state.clock.now();
    let account = state
        .store
        .find_owned_account(caller.user.id, request.account_id)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidAccountId,
                format!("Account {} not found", request.account_id),
            )
        })?;
    validate::check_account(
        &request,
        &AccountFacts {
            platform: &account.platform,
            disabled: account.disabled,
            is_valid: account.is_valid,
            token_expires_at: account.token_expires_at,
            invalid_reason: account.last_error.as_deref(),
        },
        now,
    )?;
    let slots = validate::media_slots(&request)?;
    if request.platform == Platform::X && caller.plan != Plan::Ultra {
        return Err(ApiError::new(
            ErrorCode::InsufficientPermissions,
            "Publishing to x requires the Ultra plan",
        ));
    }
    let (media, cover) = probe_media(state, &request, &slots).await?;
    let plan = validate::build_plan(&request, media, cover)?;

    let reserved_counter = if request.platform == Platform::X {
        Some(reserve_x_post(state, caller).await?)
    } else {
        None
    };
    let submission_id = Uuid::new_v4();
    let time_limit = time_limit(state, &plan);
    let spec = JobSpec {
        submission_id,
        user_id: caller.user.id,
        account_id: account.id,
        page_name: account.display_name.clone(),
        plan,
        content: request.content_json(),
        reserved_counter: reserved_counter.clone(),
    };
    let receiver = match state.supervisor.publish(&account, spec).await {
        Ok(receiver) => receiver,
        Err(refused) => {
            // Refused before anything started: give the x post count back.
            if let Some((user_id, key)) = &reserved_counter {
                state.store.release_call(*user_id, key).await?;
            }
            return Err(refused);
        }
    };
    let data = match tokio::time::timeout(time_limit, receiver).await {
        Ok(Ok(outcome)) => outcome?,
        Ok(Err(_)) => {
            return Err(ApiError::internal(format!(
                "the account worker dropped submission {submission_id}"
            )));
        }
        Err(_) => {
            return Err(ApiError::new(
                ErrorCode::Timeout,
                format!(
                    "Publishing did not finish within {} s and goes on in the background; check the publishing history for post_submission_id {submission_id} before retrying",
                    time_limit.as_secs()
                ),
            ));
        }
    };
    Ok(json!({
        "success": true,
        "message": format!("Post published successfully to {}", request.platform.as_str()),
        "data": data,
    }))
}

/// Probes every media URL (concurrently) and the reel cover; the first failure in `mediaUrls`
/// order is reported.
async fn probe_media(
    state: &AppState,
    request: &PostRequest,
    slots: &[super::media::Accept],
) -> Result<(Vec<MediaRef>, Option<MediaRef>), ApiError> {
    let fetcher = &state.supervisor.deps().media;
    let probes = request
        .media_urls
        .iter()
        .zip(slots)
        .map(|(url, accept)| fetcher.probe(url, *accept));
    let results = futures_util::future::join_all(probes).await;
    let mut media = Vec::with_capacity(results.len());
    for result in results {
        media.push(result.map_err(|e| e.into_api_error())?);
    }
    let cover = match &request.cover_url {
        Some(url) => Some(
            fetcher
                .probe(url, validate::cover_accept())
                .await
                .map_err(|e| e.into_api_error())?,
        ),
        None => None,
    };
    Ok((media, cover))
}

/// Counts one x post against the user's monthly allowance (spec §8: 60 across all x accounts),
/// refusing with 429 when it is used up. Returns the counter to give back if nothing goes out.
async fn reserve_x_post(state: &AppState, caller: &ApiCaller) -> Result<(Uuid, String), ApiError> {
    let now = state.clock.now();
    let period = usage::usage_period(caller.user.created_at, now);
    let key = format!("x-posts:{}", period.key());
    let limit = state.config.publishing.x_monthly_posts;
    let reservation = state
        .store
        .reserve_call(caller.user.id, &key, Some(limit), now)
        .await?;
    if !reservation.admitted {
        let retry_after = (period.end - now).num_seconds().max(1) as u64;
        return Err(
            ApiError::rate_limited(retry_after, None).with_details(format!(
                "The monthly allowance of {limit} x posts is used up; it renews on {}",
                crate::views::iso(period.end)
            )),
        );
    }
    Ok((caller.user.id, key))
}

/// The request time limit of §8 for a plan.
fn time_limit(state: &AppState, plan: &PublishPlan) -> Duration {
    let config = &state.config.publishing;
    let secs = if plan.thread_len() > 1 {
        config.thread_timeout_secs
    } else if plan.has_video() {
        config.video_timeout_secs
    } else {
        config.request_timeout_secs
    };
    Duration::from_secs(secs)
}
