//! What the scheduler decides, apart from the actor that runs it: one attempt of a due post
//! (the same checks as an immediate publish, then the account actor), what its result leads to
//! ([`decide`]: no I/O, table-tested), and settling posts whose claimant died
//! ([`settle_expired_claims`]).

use std::{collections::HashMap, sync::Arc};

use chrono::{DateTime, Utc};
use entity::post_submission::SubmissionStatus;
use uuid::Uuid;

use crate::{
    clock::SharedClock,
    config::SchedulerConfig,
    error::{ApiError, ErrorCode},
    metrics::Metrics,
    publish::{reconcile, run::PublishReceipt, steps::ClaimFence, validate},
    services::publishing::PublishingService,
    store::{AttemptEnd, EndedAttempt, IDS_PER_STATEMENT, Store},
};

/// The longest a retry waits, whatever a platform's `retry_after` says.
pub const MAX_RETRY_WAIT_SECS: u64 = 31 * 86_400;

/// Message of a post whose irreversible publish call may or may not have happened.
pub const UNCONFIRMED_MESSAGE: &str = "The service stopped while this post's final publish call was in progress, so whether it was published is unconfirmed: check the platform before posting it again";

/// What the scheduler works with: the table of scheduled posts, the publishing use cases (a
/// due post is checked and queued exactly as an immediate one), and its own settings. Built
/// before the actor, so tests can settle expired claims without one.
pub struct SchedulingService {
    pub(crate) store: Store,
    pub(crate) clock: SharedClock,
    pub(crate) publishing: Arc<PublishingService>,
    pub(crate) config: SchedulerConfig,
    pub(crate) metrics: Arc<Metrics>,
    /// This process's id as a claimant of scheduled posts: `host:pid:random`.
    pub(crate) instance: String,
    /// When an instance is dead and how often its work is looked for (see
    /// `ClusterConfig::silence` and `look_every`).
    pub(crate) cluster: crate::config::ClusterConfig,
}

impl SchedulingService {
    pub fn new(
        store: Store,
        clock: SharedClock,
        publishing: Arc<PublishingService>,
        config: SchedulerConfig,
        metrics: Arc<Metrics>,
        instance: String,
        cluster: &crate::config::ClusterConfig,
    ) -> Self {
        Self {
            store,
            clock,
            publishing,
            config,
            metrics,
            instance,
            cluster: cluster.clone(),
        }
    }

    /// The scheduler's settings.
    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// This process's claimant id.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    pub(crate) fn lease(&self) -> chrono::Duration {
        chrono::Duration::seconds(self.config.lease_secs.max(1) as i64)
    }
}

/// How a dispatch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Published,
    Failed,
    Retried,
    /// The platform was still processing it at our deadline: the post stays `publishing` and
    /// ends with its attempt, which the reconciler checks until the platform says.
    Checking,
    /// Someone else settled it (lost the claim); nothing to count.
    Lost,
}

/// What an attempt leaves to write.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// End the attempt (if the claim is still ours); counted as the `Ended` once written.
    Write(AttemptEnd, Ended),
    /// Write nothing: the post stays `publishing` and its claim is let go (its lease lapses and
    /// settlement, or the reconciler, ends it).
    LetGo(Ended),
}

/// Why an attempt did not publish.
pub struct AttemptFailure {
    pub error: ApiError,
    pub retryable: bool,
    /// Write nothing: the outcome is not known here (the worker died) or the post is no longer
    /// ours; the lease runs out and settlement decides from the recorded steps.
    pub abandon: bool,
}

impl From<ApiError> for AttemptFailure {
    fn from(error: ApiError) -> Self {
        // Refusals before the platform is called: only "try later" ones are worth retrying.
        // (A late job of a timed-out hand-over cannot publish: rescheduling ends its claim, and
        // its fence checks the claim before the irreversible call.)
        let retryable = matches!(
            error.code,
            ErrorCode::RateLimitExceeded
                | ErrorCode::ServiceUnavailable
                | ErrorCode::InternalServerError
                | ErrorCode::Timeout
        );
        Self {
            error,
            retryable,
            abandon: false,
        }
    }
}

impl SchedulingService {
    /// One attempt: the same checks as an immediate publish, then the account actor.
    async fn attempt(
        &self,
        row: &entity::scheduled_post::Model,
    ) -> Result<PublishReceipt, AttemptFailure> {
        let instance = self.instance.as_str();
        let user = self
            .store
            .find_user(row.user_id)
            .await
            .map_err(ApiError::from)?
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::InvalidAccountId,
                    "The post's owner no longer exists",
                )
            })?;
        let tier = user.plan;
        let request = validate::parse_request(&row.request).map_err(|error| AttemptFailure {
            error,
            retryable: false,
            abandon: false,
        })?;
        let prepared = self
            .publishing
            .prepare(&user, tier, request)
            .await
            .map_err(|error| AttemptFailure {
                retryable: matches!(error.code, ErrorCode::InternalServerError),
                error,
                abandon: false,
            })?;
        let submission_id = crate::store::new_row_id();
        // No write here: the claim is checked (by claimant and attempt number), renewed and
        // linked to the history row in the publish's one write before its final call.
        let claim = ClaimFence {
            scheduled_post_id: row.id,
            claimant: instance.to_string(),
            attempt: row.attempts,
            lease: self.lease(),
            clock: self.clock.clone(),
        };
        let receiver = self
            .publishing
            .enqueue(&user, prepared, submission_id, Some(claim))
            .await?;
        match receiver.await {
            Ok(Ok(receipt)) => Ok(receipt),
            Ok(Err(failure)) => Err(AttemptFailure {
                error: failure.error,
                retryable: failure.retryable,
                abandon: false,
            }),
            // The actor died during the publish: the steps tell what happened; let the lease run
            // out and settlement decide rather than guessing here.
            Err(_) => Err(AttemptFailure {
                error: ApiError::internal("the account worker stopped during the publish"),
                retryable: false,
                abandon: true,
            }),
        }
    }

    /// Runs one claimed post's attempt and decides its next state (written by the caller, in
    /// a batch with other ends).
    pub async fn dispatch_post(&self, row: entity::scheduled_post::Model) -> Decision {
        let result = self.attempt(&row).await;
        decide(&row, result, self.clock.now(), &self.config)
    }
}

/// What an attempt's result leads to: published, left to the reconciler or to settlement,
/// retried with backoff (honouring `retry_after`) while attempts remain, or failed.
pub fn decide(
    row: &entity::scheduled_post::Model,
    result: Result<PublishReceipt, AttemptFailure>,
    now: DateTime<Utc>,
    config: &SchedulerConfig,
) -> Decision {
    match result {
        Ok(receipt) => Decision::Write(
            AttemptEnd::Published {
                post_id: receipt.post_id,
            },
            Ended::Published,
        ),
        // Neither retried nor failed: it may yet be published. Its lease lapses, and settlement
        // leaves it to the reconciler while the attempt is being checked.
        Err(failure) if failure.error.code == ErrorCode::PublishUnconfirmed => {
            tracing::info!(scheduled_post = %row.id, "scheduled post still processing on the platform; checked in the background");
            Decision::LetGo(Ended::Checking)
        }
        Err(failure) if failure.abandon => {
            tracing::warn!(scheduled_post = %row.id, error = %describe(&failure.error), "scheduled post left for settlement");
            Decision::LetGo(Ended::Lost)
        }
        Err(failure) if failure.retryable && row.attempts < config.max_attempts => {
            let backoff = config
                .retry_base_secs
                .max(1)
                .saturating_mul(1 << (row.attempts.clamp(1, 10) - 1))
                .min(3_600);
            let wait = backoff
                .max(failure.error.retry_after.unwrap_or(0))
                .min(MAX_RETRY_WAIT_SECS);
            let next = now + chrono::Duration::seconds(wait as i64);
            let reason = describe(&failure.error);
            tracing::warn!(scheduled_post = %row.id, attempt = row.attempts, retry_in_s = wait, error = %reason, "scheduled post will be retried");
            Decision::Write(
                AttemptEnd::Rescheduled {
                    next_attempt_at: next,
                    error: reason,
                },
                Ended::Retried,
            )
        }
        Err(failure) => {
            let reason = describe(&failure.error);
            tracing::warn!(scheduled_post = %row.id, error = %reason, "scheduled post failed");
            Decision::Write(
                AttemptEnd::Failed {
                    code: failure.error.code.as_str().to_string(),
                    error: reason,
                },
                Ended::Failed,
            )
        }
    }
}

fn describe(error: &ApiError) -> String {
    match &error.details {
        Some(details) => format!("{}: {} ({details})", error.code.as_str(), error.message),
        None => format!("{}: {}", error.code.as_str(), error.message),
    }
}

/// Settles posts whose claim outlived its lease (the claimant died), from the steps of their
/// last attempt. Returns how many were settled. The attempts' history rows are read
/// [`IDS_PER_STATEMENT`] at a time and the posts' ends written `settle_batch` per transaction
/// (a dead instance may leave thousands of claims).
pub async fn settle_expired_claims(service: &SchedulingService) -> Result<u64, sea_orm::DbErr> {
    let now = service.clock.now();
    let store = &service.store;
    let mut settled = 0;
    let expired = store.expired_claims(now).await?;
    let mut submissions = HashMap::new();
    let attempt_ids: Vec<Uuid> = expired.iter().filter_map(|row| row.submission_id).collect();
    for chunk in attempt_ids.chunks(IDS_PER_STATEMENT) {
        for submission in store.attempt_submissions(chunk).await? {
            submissions.insert(submission.id, submission);
        }
    }
    let mut ends = Vec::new();
    for row in &expired {
        let claimant = row.claimed_by.clone().unwrap_or_default();
        // The attempt's own history row (written before its first platform call); none if the
        // attempt died before that.
        let submission = row
            .submission_id
            .and_then(|id| submissions.get(&id))
            .filter(|s| s.scheduled_post_id == Some(row.id));
        let final_started = submission
            .and_then(|s| s.steps.as_ref())
            .is_some_and(|steps| steps.final_started);
        let end = match submission {
            // Its attempt is being checked by the reconciler, which ends the post too.
            Some(s) if reconcile::is_being_checked(s) => continue,
            // The reconciler resolved the attempt but did not get to the post.
            Some(s) if s.reconcile.is_some() && s.status != SubmissionStatus::Published => {
                let (code, error) = if s.status == SubmissionStatus::Failed {
                    (
                        s.error_code.clone().unwrap_or_default(),
                        s.error_message.clone().unwrap_or_default(),
                    )
                } else {
                    (
                        ErrorCode::PublishingUnconfirmed.as_str().to_string(),
                        s.error_message
                            .clone()
                            .unwrap_or_else(|| UNCONFIRMED_MESSAGE.to_string()),
                    )
                };
                AttemptEnd::Failed { code, error }
            }
            Some(s) if s.status == SubmissionStatus::Published => AttemptEnd::Published {
                post_id: s.post_id.clone().unwrap_or_default(),
            },
            // The platform is asked whether it went out; the reconciler ends the post.
            Some(s)
                if final_started
                    && reconcile::look_up_cut_off(store, service.publishing.config(), s, now)
                        .await? =>
            {
                tracing::warn!(scheduled_post = %row.id, %claimant, "a stopped instance's final call is looked for on the platform");
                settled += 1;
                continue;
            }
            Some(s) if final_started => {
                store
                    .finish_submission_failed(
                        s.id,
                        SubmissionStatus::Unconfirmed,
                        ErrorCode::PublishingFailed.as_str(),
                        UNCONFIRMED_MESSAGE,
                        now,
                    )
                    .await?;
                AttemptEnd::Failed {
                    code: ErrorCode::PublishingUnconfirmed.as_str().to_string(),
                    error: UNCONFIRMED_MESSAGE.to_string(),
                }
            }
            other => {
                if let Some(s) = other
                    && s.status == SubmissionStatus::Publishing
                    && !store
                        .finish_submission_failed(
                            s.id,
                            SubmissionStatus::Failed,
                            ErrorCode::ServiceUnavailable.as_str(),
                            "Interrupted before the final publish call; the post is retried",
                            now,
                        )
                        .await?
                {
                    // The attempt moved on since it was read (it finished, or became a pending
                    // check that may yet publish): retrying now could publish twice. The next
                    // pass sees where it went.
                    continue;
                }
                // The irreversible call was never made: publishing it again is safe.
                AttemptEnd::Rescheduled {
                    next_attempt_at: now,
                    error: "Interrupted before publishing; retried".to_string(),
                }
            }
        };
        ends.push((
            EndedAttempt {
                id: row.id,
                claimant,
                lease_expired_at: Some(now),
                end,
            },
            final_started,
        ));
    }
    for chunk in ends.chunks(service.config.settle_batch.max(1)) {
        let batch: Vec<EndedAttempt> = chunk.iter().map(|(end, _)| end.clone()).collect();
        let written = store.end_attempts(&batch, now).await?;
        for ((end, final_started), done) in chunk.iter().zip(written) {
            if done {
                tracing::warn!(scheduled_post = %end.id, claimant = %end.claimant, final_started, "settled a post left by a stopped instance");
                settled += 1;
            }
        }
    }
    Ok(settled + settle_stale_publishes(service, now).await?)
}

/// Immediate publishes cut off by a stopped process (a dead instance's, or started before
/// `stale_publish_secs` when the row does not name its instance): their callers are gone; the
/// history says what happened, or the platform is asked. Answers how many were settled.
async fn settle_stale_publishes(
    service: &SchedulingService,
    now: DateTime<Utc>,
) -> Result<u64, sea_orm::DbErr> {
    let store = &service.store;
    let mut settled = 0;
    let before = now - chrono::Duration::seconds(service.config.stale_publish_secs as i64);
    let silence_ms = i64::try_from(service.cluster.silence().as_millis()).unwrap_or(i64::MAX);
    for submission in store
        .stale_publishing_submissions(before, silence_ms)
        .await?
    {
        let final_started = submission
            .steps
            .as_ref()
            .is_some_and(|steps| steps.final_started);
        if final_started
            && reconcile::look_up_cut_off(store, service.publishing.config(), &submission, now)
                .await?
        {
            tracing::warn!(submission = %submission.id, "a stopped instance's final call is looked for on the platform");
            settled += 1;
            continue;
        }
        let (status, code, message) = if final_started {
            (
                SubmissionStatus::Unconfirmed,
                ErrorCode::PublishingFailed.as_str(),
                UNCONFIRMED_MESSAGE,
            )
        } else {
            (
                SubmissionStatus::Failed,
                ErrorCode::ServiceUnavailable.as_str(),
                "The service stopped before the final publish call; nothing was published",
            )
        };
        store
            .finish_submission_failed(submission.id, status, code, message, now)
            .await?;
        tracing::warn!(submission = %submission.id, %status, "settled an immediate publish left by a stopped instance");
        settled += 1;
    }
    Ok(settled)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use chrono::TimeZone;
    use entity::{platform::Platform, post_submission::PostType, scheduled_post::ScheduledStatus};
    use serde_json::json;

    use super::*;
    use crate::publish::run::ResultFields;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap()
    }

    fn post(attempts: i32) -> entity::scheduled_post::Model {
        entity::scheduled_post::Model {
            id: Uuid::nil(),
            user_id: Uuid::nil(),
            account_id: Uuid::nil(),
            platform: Platform::Threads,
            page_name: "page".into(),
            request: json!({}),
            content: json!({}),
            scheduled_at: now(),
            status: ScheduledStatus::Publishing,
            attempts,
            next_attempt_at: now(),
            claimed_by: Some("me".into()),
            claimed_at: Some(now()),
            lease_until: Some(now()),
            submission_id: None,
            post_id: None,
            error_code: None,
            error: None,
            published_at: None,
            created_at: now(),
            updated_at: now(),
        }
    }

    fn receipt() -> PublishReceipt {
        PublishReceipt {
            post_submission_id: Uuid::nil(),
            post_id: "123".into(),
            post_type: PostType::Text,
            platform: Platform::Threads,
            page_name: "page".into(),
            published_at: now(),
            fields: ResultFields::default(),
        }
    }

    fn failure(code: ErrorCode, retry_after: Option<u64>, abandon: bool) -> AttemptFailure {
        let mut error = ApiError::new(code, "the platform said no");
        error.retry_after = retry_after;
        let mut failure = AttemptFailure::from(error);
        failure.abandon = abandon;
        failure
    }

    fn config() -> SchedulerConfig {
        SchedulerConfig {
            max_attempts: 3,
            retry_base_secs: 30,
            ..SchedulerConfig::default()
        }
    }

    fn rescheduled_in(secs: i64) -> Decision {
        Decision::Write(
            AttemptEnd::Rescheduled {
                next_attempt_at: now() + chrono::Duration::seconds(secs),
                error: "RateLimitExceeded: the platform said no".into(),
            },
            Ended::Retried,
        )
    }

    #[test]
    fn an_attempts_result_decides_the_posts_next_state() {
        let failed = |code: ErrorCode| {
            Decision::Write(
                AttemptEnd::Failed {
                    code: code.as_str().into(),
                    error: format!("{}: the platform said no", code.as_str()),
                },
                Ended::Failed,
            )
        };
        let rate_limited = ErrorCode::RateLimitExceeded;
        let cases: Vec<(&str, i32, Result<PublishReceipt, AttemptFailure>, Decision)> = vec![
            (
                "published",
                1,
                Ok(receipt()),
                Decision::Write(
                    AttemptEnd::Published {
                        post_id: "123".into(),
                    },
                    Ended::Published,
                ),
            ),
            (
                "still processing: left to the reconciler, never retried",
                1,
                Err(failure(ErrorCode::PublishUnconfirmed, None, false)),
                Decision::LetGo(Ended::Checking),
            ),
            (
                "outcome unknown: left to settlement, never guessed",
                1,
                Err(failure(rate_limited, None, true)),
                Decision::LetGo(Ended::Lost),
            ),
            (
                "first retry waits the base",
                1,
                Err(failure(rate_limited, None, false)),
                rescheduled_in(30),
            ),
            (
                "the second waits twice the base",
                2,
                Err(failure(rate_limited, None, false)),
                rescheduled_in(60),
            ),
            (
                "a longer retry_after is honoured",
                1,
                Err(failure(rate_limited, Some(900), false)),
                rescheduled_in(900),
            ),
            (
                "retry_after is capped",
                1,
                Err(failure(rate_limited, Some(u64::MAX / 2), false)),
                rescheduled_in(MAX_RETRY_WAIT_SECS as i64),
            ),
            (
                "no attempts left: failed",
                3,
                Err(failure(rate_limited, None, false)),
                failed(rate_limited),
            ),
            (
                "a refusal that retrying cannot fix: failed at once",
                1,
                Err(failure(ErrorCode::TextTooLong, None, false)),
                failed(ErrorCode::TextTooLong),
            ),
        ];
        for (name, attempts, result, expected) in cases {
            assert_eq!(
                decide(&post(attempts), result, now(), &config()),
                expected,
                "{name}"
            );
        }
    }
}
