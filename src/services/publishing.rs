//! `POST /v2/posts`: validation (pure, `validate.rs`), the media probe and the x plan rules, then
//! either the account actor (publish now) or the scheduled-posts table (`scheduledAt`). The
//! scheduler runs due posts through [`PublishingService::prepare`] and
//! [`PublishingService::enqueue`] again, so a scheduled post is checked exactly as an immediate
//! one, both when accepted and when due.

use std::{sync::Arc, time::Duration};

use actix::{Message, Recipient};
use chrono::{DateTime, FixedOffset, Utc};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::{
    actors::{account::JobOutcome, supervisor::Supervisor},
    clock::SharedClock,
    config::PublishingConfig,
    domain::plan::{MediaRef, Platform, PublishPlan},
    error::{ApiError, ErrorCode},
    media::MediaFetcher,
    publish::{
        run::{JobSpec, PublishReceipt, iso_millis},
        steps::ClaimFence,
        validate::{self, AccountFacts, PostRequest},
    },
    store::{CancelOutcome, NewScheduledPost, Store},
    usage::{self, Plan},
};

/// How long a timed-out `POST /v2/posts` waits for its job to write the history row it names.
const ANNOUNCE_WAIT: Duration = Duration::from_secs(5);

/// How far ahead `scheduledAt` must be (spec §8).
pub const MIN_SCHEDULE_LEAD_SECS: i64 = 60;

/// A request that passed every check and the plan it makes.
pub struct Prepared {
    pub request: PostRequest,
    pub account: entity::account::Model,
    pub plan: PublishPlan,
}

/// Who a post is published for: a user the layer above already authenticated and metered,
/// whichever way (the API key's middleware, or the dashboard's compose form), with the plan that
/// metering read. Defined here so the use case needs nothing from HTTP.
#[derive(Clone, Copy)]
pub struct Publisher<'a> {
    pub user: &'a entity::user::Model,
    pub plan: Plan,
}

// The answer the API serializes and the compose page reads. Defined beside the use case (not in
// `http::dto`, which re-exports it) so publishing needs nothing from HTTP.
/// `POST /v2/posts`, published now.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PostPublished {
    /// Always `true`.
    pub success: bool,
    pub message: String,
    pub data: PublishReceipt,
}

/// `POST /v2/posts` with `scheduledAt`: scheduled.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PostScheduled {
    /// Always `true`.
    pub success: bool,
    /// Always `true`.
    pub scheduled: bool,
    #[serde(rename = "scheduledPostId")]
    pub scheduled_post_id: Uuid,
    pub platform: Platform,
    /// Written as the API writes every time (milliseconds, `Z`).
    #[serde(rename = "scheduledAt", with = "iso_millis")]
    #[schema(value_type = String, format = DateTime)]
    pub scheduled_at: DateTime<Utc>,
    pub message: String,
}

impl PostScheduled {
    /// The answer for scheduled post `id`.
    pub fn of(id: Uuid, platform: Platform, scheduled_at: DateTime<Utc>) -> Self {
        Self {
            success: true,
            scheduled: true,
            scheduled_post_id: id,
            platform,
            scheduled_at,
            message: format!(
                "Post scheduled for {} on {}",
                crate::domain::time::iso(scheduled_at),
                platform.as_str()
            ),
        }
    }
}

/// `POST /v2/posts`: published now, or scheduled.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum PostOutcome {
    Published(PostPublished),
    Scheduled(PostScheduled),
}

/// The publishing use cases: publish now, schedule, and the checks and hand-over to the account
/// actor that the scheduler reuses for due posts. Holds only what they use.
pub struct PublishingService {
    store: Store,
    clock: SharedClock,
    /// Routes publishes to the account actors.
    supervisor: Arc<Supervisor>,
    /// Probes media URLs (SSRF guard, type, size) before anything is queued.
    media: MediaFetcher,
    config: PublishingConfig,
    /// Told when a post is scheduled, so it is seen before the scheduler's next look.
    scheduler: SchedulerWaker,
}

impl PublishingService {
    pub fn new(
        store: Store,
        clock: SharedClock,
        supervisor: Arc<Supervisor>,
        media: MediaFetcher,
        config: PublishingConfig,
        scheduler: SchedulerWaker,
    ) -> Self {
        Self {
            store,
            clock,
            supervisor,
            media,
            config,
            scheduler,
        }
    }

    /// Cancels a scheduled post of `user_id` that is still `scheduled` (not yet claimed).
    pub async fn cancel_scheduled(
        &self,
        user_id: Uuid,
        post_id: Uuid,
    ) -> Result<CancelOutcome, sea_orm::DbErr> {
        self.store
            .cancel_scheduled_post(user_id, post_id, self.clock.now())
            .await
    }

    /// The publishing settings (the reconciler's horizon, for settlement).
    pub fn config(&self) -> &PublishingConfig {
        &self.config
    }

    /// Tells the scheduler to look at the table now (something was scheduled).
    pub fn wake_scheduler(&self) {
        self.scheduler.wake();
    }

    /// `POST /v2/posts`: publishes now, or schedules when `scheduledAt` is given.
    pub async fn handle_post(
        &self,
        publisher: Publisher<'_>,
        body: &Value,
    ) -> Result<PostOutcome, ApiError> {
        self.handle_post_as(publisher, body, crate::store::new_row_id())
            .await
    }

    /// [`Self::handle_post`] with the id chosen beforehand (an idempotency key's claim names
    /// it): the history row a publish now writes, or the scheduled post's id.
    pub async fn handle_post_as(
        &self,
        publisher: Publisher<'_>,
        body: &Value,
        submission_id: Uuid,
    ) -> Result<PostOutcome, ApiError> {
        let request = validate::parse_request(body)?;
        match request.scheduled_at.clone() {
            Some(at) => self
                .schedule(publisher, body, request, &at, submission_id)
                .await
                .map(PostOutcome::Scheduled),
            None => self
                .publish_now(publisher, request, submission_id)
                .await
                .map(PostOutcome::Published),
        }
    }
}

/// Parses `scheduledAt`: ISO 8601 / RFC 3339 with a UTC offset (`Z`, `+08:00`, `+0800`).
pub fn parse_scheduled_at(value: &str) -> Result<DateTime<Utc>, ApiError> {
    let value = value.trim();
    DateTime::parse_from_rfc3339(value)
        .or_else(|_| DateTime::<FixedOffset>::parse_from_str(value, "%Y-%m-%dT%H:%M:%S%.f%z"))
        .or_else(|_| DateTime::<FixedOffset>::parse_from_str(value, "%Y-%m-%dT%H:%M%z"))
        .map(|at| at.with_timezone(&Utc))
        .map_err(|_| {
            ApiError::invalid_request(format!(
                "scheduledAt '{value}' is not an ISO 8601 date-time with a UTC offset, e.g. 2026-12-01T09:30:00+08:00 or 2026-12-01T01:30:00Z"
            ))
        })
}

impl PublishingService {
    async fn schedule(
        &self,
        publisher: Publisher<'_>,
        body: &Value,
        request: PostRequest,
        at: &str,
        id: Uuid,
    ) -> Result<PostScheduled, ApiError> {
        let Publisher { user, plan } = publisher;
        let scheduled_at = parse_scheduled_at(at)?;
        let now = self.clock.now();
        let lead = (scheduled_at - now).num_seconds();
        if scheduled_at < now + chrono::Duration::seconds(MIN_SCHEDULE_LEAD_SECS) {
            return Err(ApiError::invalid_request(format!(
                "scheduledAt must be at least 1 minute in the future: {} is {} (now is {})",
                crate::domain::time::iso(scheduled_at),
                if lead < 0 {
                    format!("{} s in the past", -lead)
                } else {
                    format!("only {lead} s ahead")
                },
                crate::domain::time::iso(now)
            )));
        }
        // Checked now exactly as an immediate publish would be, so a post that could never publish is
        // refused now rather than at its due time.
        let prepared = self.prepare(user, plan, request).await?;
        let platform = prepared.request.platform;
        let row = self
            .store
            .insert_scheduled_post_as(
                id,
                NewScheduledPost {
                    user_id: user.id,
                    account_id: prepared.account.id,
                    platform,
                    page_name: prepared.account.display_name.clone(),
                    request: body.clone(),
                    content: prepared.request.content_json(),
                    scheduled_at,
                },
                now,
            )
            .await?;
        self.wake_scheduler();
        Ok(PostScheduled::of(row.id, platform, scheduled_at))
    }

    async fn publish_now(
        &self,
        publisher: Publisher<'_>,
        request: PostRequest,
        submission_id: Uuid,
    ) -> Result<PostPublished, ApiError> {
        let Publisher { user, plan } = publisher;
        let prepared = self.prepare(user, plan, request).await?;
        let platform = prepared.request.platform;
        let time_limit = self.time_limit(&prepared.plan);
        let (ask_for_row, asked) = oneshot::channel();
        let receiver = self
            .enqueue_with(user, prepared, submission_id, None, Some(asked))
            .await?;
        let data = match tokio::time::timeout(time_limit, receiver).await {
            Ok(Ok(outcome)) => outcome.map_err(|failure| failure.error)?,
            Ok(Err(_)) => {
                return Err(ApiError::internal(format!(
                    "the account worker dropped submission {submission_id}"
                )));
            }
            Err(_) => {
                // The answer names the history row to check before retrying: have the job
                // write it now (it is otherwise written at the final call), and wait for that,
                // briefly — a job still queued behind others writes it when it starts.
                let (written, row_written) = oneshot::channel();
                if ask_for_row.send(written).is_ok() {
                    let _ = tokio::time::timeout(ANNOUNCE_WAIT, row_written).await;
                }
                return Err(ApiError::new(
                    ErrorCode::Timeout,
                    format!(
                        "Publishing did not finish within {} s and goes on in the background; check the publishing history for post_submission_id {submission_id} before retrying",
                        time_limit.as_secs()
                    ),
                )
                .for_submission(submission_id));
            }
        };
        Ok(PostPublished {
            success: true,
            message: format!("Post published successfully to {}", platform.as_str()),
            data,
        })
    }

    /// Every check of §4.1/§7 for `user` on plan `tier`: the account, the platform rules, the x plan,
    /// the media probe; then the plan.
    pub async fn prepare(
        &self,
        user: &entity::user::Model,
        tier: Plan,
        request: PostRequest,
    ) -> Result<Prepared, ApiError> {
        let now = self.clock.now();
        // The supervisor's copy of the row (no round trip when warm; writes evict it).
        let account = self
            .supervisor
            .find_owned_account(user.id, request.account_id)
            .await?
            .map(Arc::unwrap_or_clone)
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::InvalidAccountId,
                    format!("Account {} not found", request.account_id),
                )
            })?;
        validate::check_account(
            &request,
            &AccountFacts {
                platform: account.platform,
                disabled: account.disabled,
                is_valid: account.is_valid,
                token_expires_at: account.token_expires_at,
                invalid_reason: account.last_error.as_deref(),
            },
            now,
        )?;
        let slots = validate::media_slots(&request)?;
        if request.platform == Platform::X && tier != Plan::Ultra {
            return Err(ApiError::new(
                ErrorCode::InsufficientPermissions,
                "Publishing to x requires the Ultra plan",
            ));
        }
        let (media, cover) = self.probe_media(&request, &slots).await?;
        let plan = validate::build_plan(&request, media, cover)?;
        Ok(Prepared {
            request,
            account,
            plan,
        })
    }

    /// Counts an x post (if it is one) and queues the publish on the account's actor. Returns the
    /// receiver of the outcome once queued.
    pub async fn enqueue(
        &self,
        user: &entity::user::Model,
        prepared: Prepared,
        submission_id: Uuid,
        claim: Option<ClaimFence>,
    ) -> Result<oneshot::Receiver<JobOutcome>, ApiError> {
        self.enqueue_with(user, prepared, submission_id, claim, None)
            .await
    }

    /// [`Self::enqueue`], with a channel on which the caller may ask for the history row early
    /// (see `JobSpec::announce`).
    async fn enqueue_with(
        &self,
        user: &entity::user::Model,
        prepared: Prepared,
        submission_id: Uuid,
        claim: Option<ClaimFence>,
        announce: Option<oneshot::Receiver<oneshot::Sender<()>>>,
    ) -> Result<oneshot::Receiver<JobOutcome>, ApiError> {
        let reserved_counter = if prepared.request.platform == Platform::X {
            Some(self.reserve_x_post(user).await?)
        } else {
            None
        };
        let spec = JobSpec {
            submission_id,
            user_id: user.id,
            account_id: prepared.account.id,
            page_name: prepared.account.display_name.clone(),
            content: prepared.request.content_json(),
            plan: prepared.plan,
            reserved_counter: reserved_counter.clone(),
            claim,
            announce,
            lease: None,
            budget: None,
        };
        match self.supervisor.publish(&prepared.account, spec).await {
            Ok(receiver) => Ok(receiver),
            Err(refused) => {
                // Refused before anything started: give the x post count back. Not on a timeout:
                // the job may still run, and it gives the count back itself if it fails.
                if let Some((user_id, key)) = &reserved_counter
                    && refused.code != ErrorCode::Timeout
                {
                    self.store.release_call(*user_id, key).await?;
                }
                Err(refused)
            }
        }
    }

    /// Probes every media URL (concurrently) and the reel cover; the first failure in `mediaUrls`
    /// order is reported.
    async fn probe_media(
        &self,
        request: &PostRequest,
        slots: &[crate::media::Accept],
    ) -> Result<(Vec<MediaRef>, Option<MediaRef>), ApiError> {
        let fetcher = &self.media;
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
    async fn reserve_x_post(&self, user: &entity::user::Model) -> Result<(Uuid, String), ApiError> {
        let now = self.clock.now();
        let period = usage::usage_period(user.created_at, now);
        let key = format!("x-posts:{}", period.key());
        let limit = self.config.x_monthly_posts;
        let reservation = self
            .store
            .reserve_call(user.id, &key, Some(limit), now)
            .await?;
        if !reservation.admitted {
            let retry_after = (period.end - now).num_seconds().max(1) as u64;
            return Err(
                ApiError::rate_limited(retry_after, None).with_details(format!(
                    "The monthly allowance of {limit} x posts is used up; it renews on {}",
                    crate::domain::time::iso(period.end)
                )),
            );
        }
        Ok((user.id, key))
    }

    /// The request time limit of §8 for a plan.
    fn time_limit(&self, plan: &PublishPlan) -> Duration {
        let config = &self.config;
        let secs = if plan.thread_len() > 1 {
            config.thread_timeout_secs
        } else if plan.has_video() {
            config.video_timeout_secs
        } else {
            config.request_timeout_secs
        };
        Duration::from_secs(secs)
    }
}

/// Look now: a post was scheduled (or something changed).
pub struct Wake;

impl Message for Wake {
    type Result = ();
}

/// Wakes the scheduler (a post was scheduled) without knowing the actor: the publishing use
/// cases hold one. Its address is known before the actor runs (the builder makes the context
/// first), so nothing needs filling in later; without a scheduler (`scheduler.enabled =
/// false`) waking does nothing.
#[derive(Clone, Default)]
pub struct SchedulerWaker(Option<Recipient<Wake>>);

impl SchedulerWaker {
    pub fn new(scheduler: Option<Recipient<Wake>>) -> Self {
        Self(scheduler)
    }

    /// Tells the scheduler to look at the table now.
    pub fn wake(&self) {
        if let Some(scheduler) = &self.0 {
            // A full mailbox means it is about to look anyway (or has not started yet, and
            // looks when it does).
            let _ = scheduler.try_send(Wake);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn scheduled_at_takes_any_offset() {
        let cases = [
            ("2026-12-01T09:30:00+08:00", "2026-12-01T01:30:00Z"),
            ("2026-12-01T01:30:00Z", "2026-12-01T01:30:00Z"),
            ("2026-12-01T01:30:00.250Z", "2026-12-01T01:30:00.250Z"),
            ("2026-11-30T20:30:00-05:00", "2026-12-01T01:30:00Z"),
            ("2026-12-01T09:30:00+0800", "2026-12-01T01:30:00Z"),
            ("2026-12-01T09:30+08:00", "2026-12-01T01:30:00Z"),
        ];
        for (input, expected) in cases {
            let parsed = parse_scheduled_at(input).unwrap();
            assert_eq!(
                parsed,
                DateTime::parse_from_rfc3339(expected).unwrap(),
                "{input}"
            );
        }
        for bad in [
            "2026-12-01T09:30:00",
            "tomorrow",
            "2026-13-01T00:00:00Z",
            "",
        ] {
            assert!(parse_scheduled_at(bad).is_err(), "{bad}");
        }
    }

    /// The typed outcome serializes to the members the `json!` answers had, with the same
    /// values and types (the golden test pins them end to end; this pins each variant alone).
    #[test]
    fn outcomes_keep_their_wire_shape() {
        use chrono::TimeZone;
        use serde_json::json;

        let id = Uuid::new_v4();
        let at = Utc.with_ymd_and_hms(2026, 12, 1, 1, 30, 0).unwrap();
        let scheduled = PostOutcome::Scheduled(PostScheduled {
            success: true,
            scheduled: true,
            scheduled_post_id: id,
            platform: Platform::Threads,
            scheduled_at: at,
            message: "Post scheduled for 2026-12-01T01:30:00.000Z on threads".into(),
        });
        assert_eq!(
            serde_json::to_value(&scheduled).unwrap(),
            json!({
                "success": true,
                "scheduled": true,
                "scheduledPostId": id.to_string(),
                "platform": "threads",
                "scheduledAt": "2026-12-01T01:30:00.000Z",
                "message": "Post scheduled for 2026-12-01T01:30:00.000Z on threads",
            })
        );

        let receipt = PublishReceipt {
            post_submission_id: id,
            post_id: "p1".into(),
            post_type: crate::domain::plan::PostType::Text,
            platform: Platform::X,
            page_name: "Page".into(),
            published_at: at,
            fields: Default::default(),
        };
        let published = PostOutcome::Published(PostPublished {
            success: true,
            message: "Post published successfully to x".into(),
            data: receipt.clone(),
        });
        assert_eq!(
            serde_json::to_value(&published).unwrap(),
            json!({
                "success": true,
                "message": "Post published successfully to x",
                "data": serde_json::to_value(&receipt).unwrap(),
            })
        );
    }
}
