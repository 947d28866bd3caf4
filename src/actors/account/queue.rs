//! An account actor's publish queue: queuing a publish, running one at a time in arrival order,
//! cancelling one still waiting, and stopping once idle.

use std::time::Instant;

use actix::prelude::*;
use futures_util::FutureExt;
use tokio::sync::oneshot;

use super::{
    AccountActor, IDLE_CHECK, InFlight, JobFailure, JobOutcome, QueuedJob, in_runtime, reply_after,
};
use crate::{
    error::{ApiError, ErrorCode},
    publish::{
        leased::run_leased_job,
        run::{JobResult, JobSpec},
    },
};

impl AccountActor {
    /// Starts the next queued publish unless one is running or a refresh is; whether it did.
    pub(super) fn start_next(&mut self, ctx: &mut Context<Self>) -> bool {
        // A publish waits for a refresh in progress: it would go out with the old token.
        if self.in_flight().is_some() || self.refreshing {
            return false;
        }
        let Some(busy) = self.busy.as_deref_mut() else {
            return false;
        };
        let Some(job) = busy.queue.pop_front() else {
            return false;
        };
        tracing::debug!(
            submission = %job.spec.submission_id,
            waited_ms = job.enqueued_at.elapsed().as_millis() as u64,
            "publish starts"
        );
        busy.in_flight = Some(InFlight {
            submission_id: job.spec.submission_id,
            started: Instant::now(),
            platform: job.spec.plan.platform().as_str(),
            post_type: job.spec.plan.post_type().as_str(),
        });
        let metrics = &self.deps().metrics;
        metrics.gauge_add("publish_queue_depth", &[], -1);
        metrics.gauge_add("publishes_in_flight", &[], 1);
        self.post_health();
        let deps = self.deps().clone();
        let credentials = self.token.credentials.clone();
        let expires_at = self.token.expires_at;
        let submission_id = job.spec.submission_id;
        // A panic inside an adapter must not take the actor (and its queue) down with it.
        let work =
            std::panic::AssertUnwindSafe(run_leased_job(deps, credentials, expires_at, job.spec))
                .catch_unwind()
                .map(move |result| {
                    result.unwrap_or_else(|_| {
                        tracing::error!(submission = %submission_id, "publish panicked");
                        JobResult {
                            outcome: Err(ApiError::internal("publish panicked")),
                            token_failure: None,
                            retryable: false,
                        }
                    })
                });
        let reply = job.reply;
        ctx.spawn(
            in_runtime(work)
                .into_actor(self)
                .map(move |result, actor, ctx| {
                    actor.finish(result, reply);
                    actor.start_next(ctx);
                }),
        );
        true
    }

    fn finish(&mut self, result: JobResult, reply: oneshot::Sender<JobOutcome>) {
        let finished = self.busy.as_mut().and_then(|busy| busy.in_flight.take());
        self.touch();
        let now = self.deps().clock.now();
        let mut last_error = None;
        let mut backoff = None;
        let (outcome, code) = match &result.outcome {
            Ok(_) => ("published", ""),
            // Not a failure: the reconciler checks it until the platform says.
            Err(error) if error.code == ErrorCode::PublishUnconfirmed => {
                ("unconfirmed", error.code.as_str())
            }
            Err(error) => {
                last_error = Some(format!("{}: {}", error.code.as_str(), error.message));
                if error.code == ErrorCode::RateLimitExceeded {
                    backoff = error.retry_after;
                }
                ("failed", error.code.as_str())
            }
        };
        let metrics = &self.deps().metrics;
        metrics.gauge_add("publishes_in_flight", &[], -1);
        if let Some(job) = &finished {
            metrics.inc(
                "publishes_total",
                &[
                    ("platform", job.platform),
                    ("post_type", job.post_type),
                    ("outcome", outcome),
                    ("code", code),
                ],
            );
            metrics.observe(
                "publish_duration_seconds",
                &[("platform", job.platform)],
                job.started.elapsed().as_secs_f64(),
            );
        }
        let recorded = result
            .token_failure
            .map(|(code, reason)| self.token_dead(code, reason));
        self.tidy();
        // The health record first: whoever gets the reply may look at the actor view next.
        self.back_off(backoff);
        let published = result.outcome.is_ok();
        self.update_health(|activity| {
            if published {
                activity.published += 1;
            }
            // Set exactly when the publish failed (an unconfirmed one is neither).
            if let Some(error) = last_error {
                activity.failed += 1;
                activity.last_error = Some((error, now));
            }
        });
        // The caller may have timed out and gone; the outcome is in the history either way.
        let retryable = result.retryable;
        let outcome = result
            .outcome
            .map_err(|error| JobFailure { error, retryable });
        reply_after(recorded, move || {
            let _ = reply.send(outcome);
        });
    }
}

/// Queue a publish. Answers at once: `Ok` with the receiver of the outcome, or the refusal
/// (token known dead, queue full, rate limit).
pub struct Publish {
    pub spec: JobSpec,
}

impl Message for Publish {
    type Result = Result<oneshot::Receiver<JobOutcome>, ApiError>;
}

impl Handler<Publish> for AccountActor {
    type Result = Result<oneshot::Receiver<JobOutcome>, ApiError>;

    fn handle(&mut self, msg: Publish, ctx: &mut Self::Context) -> Self::Result {
        let _span = tracing::debug_span!("account_actor", account = %self.seat.account_id, message = "publish").entered();
        self.touch();
        self.refuse_dead_token()?;
        let queued = self.queue_len();
        if queued >= self.deps().publishing.queue_capacity {
            return Err(ApiError::service_unavailable(format!(
                "This account already has {queued} posts waiting to publish; retry later"
            )));
        }
        if let Err(refused) = self.limiter.admit(&msg.spec.plan) {
            self.back_off(refused.retry_after);
            self.deps().metrics.inc(
                "limiter_rejections_total",
                &[("platform", msg.spec.plan.platform().as_str())],
            );
            return Err(refused);
        }
        if self.refresh_is_due() {
            self.start_refresh(ctx);
        }
        let (reply, receiver) = oneshot::channel();
        self.busy_mut().queue.push_back(QueuedJob {
            spec: msg.spec,
            reply,
            enqueued_at: Instant::now(),
        });
        self.deps().metrics.gauge_add("publish_queue_depth", &[], 1);
        // A job that starts at once is in the health record already; one that waits is not.
        if !self.start_next(ctx) {
            self.post_health();
        }
        Ok(receiver)
    }
}

/// Stop if idle long enough (see [`AccountActor::idle_long_enough`]). The supervisor's sweep
/// sends it to every live actor every few seconds; the actor decides, so nothing in flight is
/// dropped.
pub struct StopIfIdle;

impl Message for StopIfIdle {
    type Result = ();
}

impl Handler<StopIfIdle> for AccountActor {
    type Result = ();

    fn handle(&mut self, _msg: StopIfIdle, ctx: &mut Self::Context) {
        if self.idle_long_enough() {
            ctx.stop();
        }
    }
}

/// The supervisor forgot this actor (its account's tokens changed; the next request starts a
/// fresh one), so its sweep no longer reaches it: it stops by itself once idle long enough,
/// after finishing what it was given.
pub struct Retire;

impl Message for Retire {
    type Result = ();
}

impl Handler<Retire> for AccountActor {
    type Result = ();

    fn handle(&mut self, _msg: Retire, ctx: &mut Self::Context) {
        // A timer for this actor alone: retired actors are few and short-lived.
        ctx.run_interval(IDLE_CHECK.min(self.idle_after()), |actor, ctx| {
            if actor.idle_long_enough() {
                ctx.stop();
            }
        });
    }
}
