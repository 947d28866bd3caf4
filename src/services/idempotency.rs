//! `Idempotency-Key` on `POST /v2/posts`: a retry of a request with the same key gets the
//! first request's answer, not a second post (IETF httpapi draft "The Idempotency-Key HTTP
//! Header Field"). The request claims its key before it is metered or does anything, so a
//! retry neither publishes nor counts against the plan again.
//!
//! - Key free: the request claims it (a lease), is metered, runs, and its answer is kept for
//!   24 hours. A quota refusal, or a 429/503 of a request that started no publish, gives the key
//!   back instead: nothing was done, and a retry after the wait must be able to run.
//! - Same key, same body (SHA-256 of the body's bytes), answered: that answer again.
//! - Same key, another body: 422 `IdempotencyKeyReused`.
//! - Same key, first request still running: 409 `IdempotencyKeyInUse` with `retry_after`.
//! - Same key, its claim's lease over and no answer (the instance running it died): the
//!   history row the claim names says whether a publish started. If it did, the retry is
//!   pointed at the post resource (202 `PublishUnconfirmed`), never published again; if the
//!   request scheduled its post, the retry gets the scheduled answer; otherwise nothing reached
//!   a platform's irreversible call and the retry takes the claim over and runs.

use std::{future::Future, sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{
    clock::SharedClock,
    config::PublishingConfig,
    crypto,
    domain::{idempotency::IdempotencyKey, post_status::PostStatus},
    error::{ApiError, ErrorCode, RateLimitHeaders},
    services::{
        publishing::{PostOutcome, PostScheduled},
        usage::UsageService,
    },
    store::{KeyClaim, NewIdempotencyKey, Store},
    usage::Plan,
};

/// How long a key is kept after its first request (Stripe's choice, which the draft cites).
pub const KEY_TTL: chrono::Duration = chrono::Duration::hours(24);

/// What a claim's lease adds to the longest publish time limit: the checks and media probes
/// before the limit starts, the wait for the history row after it, and writing the answer.
const LEASE_MARGIN: Duration = Duration::from_secs(120);

/// The most a 409's `retry_after` asks a client to wait: the first request usually ends well
/// before its lease does.
const MAX_RETRY_AFTER_SECS: i64 = 5;

/// An answer as kept for a key: its HTTP status and JSON body, as first sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptAnswer {
    pub status: u16,
    pub body: String,
}

/// What a request with an `Idempotency-Key` gets.
#[derive(Debug)]
pub enum Answer {
    /// The request ran under the key: its outcome (also kept for the key), and the plan's
    /// allowance after it was metered.
    Ran {
        outcome: Result<PostOutcome, ApiError>,
        allowance: RateLimitHeaders,
    },
    /// The first request's answer, again: nothing ran and nothing was metered.
    Replayed(KeptAnswer),
}

/// The request with a claimed key, as the work under it sees it.
#[derive(Debug, Clone, Copy)]
pub struct Claimed {
    /// The plan metering read.
    pub plan: Plan,
    /// The history row a publish under this key must write (`post_submission_id`).
    pub submission_id: Uuid,
}

/// Claiming keys, keeping answers and replaying them.
pub struct IdempotencyService {
    store: Store,
    clock: SharedClock,
    usage: Arc<UsageService>,
    /// How long a claim holds without an answer.
    lease: chrono::Duration,
}

impl IdempotencyService {
    pub fn new(
        store: Store,
        clock: SharedClock,
        usage: Arc<UsageService>,
        publishing: &PublishingConfig,
    ) -> Self {
        Self {
            store,
            clock,
            usage,
            lease: lease_for(publishing),
        }
    }

    /// Runs `work` once for `key` of `user` and `body` (the request's bytes), or answers as the
    /// key's first request decided (see the module's comment). Errors are answers that are not
    /// kept: the key's refusals (409, 422), a lapsed claim's pointer at its post (202), the plan's
    /// quota refusal, and database failures.
    pub async fn run<F, Fut>(
        &self,
        user: &entity::user::Model,
        accept_language: Option<&str>,
        key: &IdempotencyKey,
        body: &[u8],
        work: F,
    ) -> Result<Answer, ApiError>
    where
        F: FnOnce(Claimed) -> Fut,
        Fut: Future<Output = Result<PostOutcome, ApiError>>,
    {
        let fingerprint = crypto::sha256_hex_bytes(body);
        let (row_id, submission_id) = match self.claim(user.id, key, &fingerprint).await? {
            Claim::Mine {
                row_id,
                submission_id,
            } => (row_id, submission_id),
            Claim::Answered(kept) => return Ok(Answer::Replayed(kept)),
        };
        let (plan, allowance) = match self.usage.meter(user, accept_language).await {
            Ok(admitted) => admitted,
            Err(refused) => {
                self.store.release_idempotency_key(row_id).await?;
                return Err(refused);
            }
        };
        let outcome = work(Claimed {
            plan,
            submission_id,
        })
        .await;
        // The client gets this outcome even when keeping it fails: a publish may be out, and a
        // 500 instead would invite a retry under a new key. The claim then lapses, and a retry
        // with this key is answered as after a request that never answered.
        let kept = match &outcome {
            Err(error) if is_nothing_done(error) => {
                self.store.release_idempotency_key(row_id).await
            }
            _ => {
                let kept = kept_answer(&outcome);
                self.store
                    .record_idempotent_response(row_id, kept.status, kept.body)
                    .await
            }
        };
        if let Err(error) = kept {
            tracing::warn!(%error, key = %row_id, "the answer for an idempotency key could not be kept; the key's claim lapses with its lease");
        }
        Ok(Answer::Ran { outcome, allowance })
    }

    /// Claims the key, or says what its earlier request decided.
    async fn claim(
        &self,
        user_id: Uuid,
        key: &IdempotencyKey,
        fingerprint: &str,
    ) -> Result<Claim, ApiError> {
        let now = self.clock.now();
        let new = NewIdempotencyKey {
            user_id,
            key: key.as_str().to_string(),
            fingerprint: fingerprint.to_string(),
            post_submission_id: crate::store::new_row_id(),
            locked_until: now + self.lease,
            created_at: now,
            expires_at: now + KEY_TTL,
        };
        let held = match self.store.claim_idempotency_key(new).await? {
            KeyClaim::Claimed(row) => {
                return Ok(Claim::Mine {
                    row_id: row.id,
                    submission_id: row.post_submission_id,
                });
            }
            KeyClaim::Taken(held) => held,
        };
        if held.fingerprint != fingerprint {
            return Err(ApiError::new(
                ErrorCode::IdempotencyKeyReused,
                "This Idempotency-Key was first sent with a different request body; use a new key for a different request",
            ));
        }
        if let (Some(status), Some(body)) = (held.response_status, held.response_body) {
            return Ok(Claim::Answered(KeptAnswer {
                status: u16::try_from(status).unwrap_or(500),
                body,
            }));
        }
        match held.locked_until {
            Some(until) if until > now => Err(in_use(until, now)),
            _ => {
                self.after_lapsed_claim(held.id, held.post_submission_id, user_id, now)
                    .await
            }
        }
    }

    /// The key's request never answered and its lease is over: its process died. A publish that
    /// started wrote its history row before any irreversible call, so without that row nothing
    /// is out and the retry may run; with it, the retry is pointed at the post. A request that
    /// scheduled its post left the scheduled post under the claim's id: its answer is that one.
    async fn after_lapsed_claim(
        &self,
        row_id: Uuid,
        submission_id: Uuid,
        user_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Claim, ApiError> {
        if let Some(post) = self.store.find_user_post(user_id, submission_id).await? {
            let status = PostStatus::from(post.status);
            return Err(ApiError::new(
                ErrorCode::PublishUnconfirmed,
                format!(
                    "The first request with this Idempotency-Key did not answer; its publish started and is {} now: read post_url for the outcome, and do not publish again before you have",
                    status.as_str()
                ),
            )
            .for_submission(submission_id));
        }
        if let Some(scheduled) = self.store.find_scheduled_post(submission_id).await?
            && scheduled.user_id == user_id
        {
            // What the first request scheduled: its answer, kept now.
            let outcome = Ok(PostOutcome::Scheduled(PostScheduled::of(
                scheduled.id,
                scheduled.platform,
                scheduled.scheduled_at,
            )));
            let kept = kept_answer(&outcome);
            self.store
                .record_idempotent_response(row_id, kept.status, kept.body.clone())
                .await?;
            return Ok(Claim::Answered(kept));
        }
        let until = now + self.lease;
        if self
            .store
            .take_over_idempotency_key(row_id, now, until)
            .await?
        {
            return Ok(Claim::Mine {
                row_id,
                submission_id,
            });
        }
        // Another retry took it over first (or the first request answered after all).
        Err(in_use(until, now))
    }
}

/// What claiming found.
enum Claim {
    /// The key is this request's to run under.
    Mine { row_id: Uuid, submission_id: Uuid },
    /// The first request's answer.
    Answered(KeptAnswer),
}

/// The longest publish time limit plus [`LEASE_MARGIN`].
fn lease_for(config: &PublishingConfig) -> chrono::Duration {
    let longest = config
        .request_timeout_secs
        .max(config.video_timeout_secs)
        .max(config.thread_timeout_secs);
    let lease = Duration::from_secs(longest) + LEASE_MARGIN;
    chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::hours(1))
}

/// 409 `IdempotencyKeyInUse`: the key's first request holds it until `until`.
fn in_use(until: DateTime<Utc>, now: DateTime<Utc>) -> ApiError {
    let wait = (until - now).num_seconds().clamp(1, MAX_RETRY_AFTER_SECS);
    let mut error = ApiError::new(
        ErrorCode::IdempotencyKeyInUse,
        format!(
            "A request with this Idempotency-Key is still running; retry after {wait} seconds to get its answer"
        ),
    );
    error.retry_after = Some(wait.unsigned_abs());
    error
}

/// A "try again later" that started no publish (the x posts' monthly allowance, a full
/// account queue, a platform's limit before anything was sent): nothing to keep, and a retry
/// after the wait must run.
fn is_nothing_done(error: &ApiError) -> bool {
    matches!(
        error.code,
        ErrorCode::RateLimitExceeded
            | ErrorCode::UsageLimitExceeded
            | ErrorCode::ServiceUnavailable
    ) && error.submission_id.is_none()
}

/// The answer as it goes on the wire, to keep.
fn kept_answer(outcome: &Result<PostOutcome, ApiError>) -> KeptAnswer {
    match outcome {
        Ok(outcome) => KeptAnswer {
            status: 200,
            // Strings, numbers and booleans: serializing cannot fail.
            body: serde_json::to_string(outcome).unwrap_or_default(),
        },
        Err(error) => KeptAnswer {
            status: error.code.status().as_u16(),
            body: error.body().to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_claim_outlasts_the_longest_publish_time_limit() {
        let config = PublishingConfig {
            request_timeout_secs: 60,
            video_timeout_secs: 300,
            thread_timeout_secs: 360,
            ..PublishingConfig::default()
        };
        assert_eq!(lease_for(&config), chrono::Duration::seconds(360 + 120));
    }

    #[test]
    fn only_a_wait_that_started_no_publish_gives_the_key_back() {
        let id = Uuid::now_v7();
        assert!(is_nothing_done(&ApiError::rate_limited(30, None)));
        assert!(is_nothing_done(&ApiError::service_unavailable(
            "queue full"
        )));
        assert!(!is_nothing_done(
            &ApiError::rate_limited(30, None).for_submission(id)
        ));
        assert!(!is_nothing_done(&ApiError::publishing_failed("no")));
        assert!(!is_nothing_done(&ApiError::publish_unconfirmed(id)));
    }

    #[test]
    fn a_kept_error_is_its_status_and_its_body_as_sent() {
        let error = ApiError::invalid_request("bad");
        let kept = kept_answer(&Err(error.clone()));
        assert_eq!(kept.status, 400);
        assert_eq!(kept.body, serde_json::to_string(&error.body()).unwrap());
    }
}
