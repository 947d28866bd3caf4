//! The account actor: one per connected account. It owns the account's token state, its rate
//! limiter and its publish queue, and runs one publish at a time, in arrival order.
//!
//! A publish runs in a future spawned on the actor's context (`ctx.spawn`), not inside the
//! message handler, so health and cancel messages are answered at once while a long video upload
//! is in flight. The queue is bounded; the supervisor answers 503 when it is full.

use std::{
    collections::VecDeque,
    sync::Arc,
    time::{Duration, Instant},
};

use actix::prelude::*;
use chrono::{DateTime, NaiveDate, Utc};
use futures_util::FutureExt;
use serde::Serialize;
use tokio::sync::oneshot;
use uuid::Uuid;

use super::{
    in_runtime::in_runtime,
    limiter::{AccountLimiter, LimiterState},
    supervisor::Roster,
};
use crate::{
    crypto::CipherError,
    error::{ApiError, ErrorCode},
    insights::{self, AccountSummary, DailyMetrics, InsightsContext, InsightsQuery},
    oauth,
    platforms::{AccountCredentials, PlatformError},
    publish::{
        plan::Platform,
        reconcile::{CheckOutcome, CheckReport, CheckSpec, run_check},
        run::{JobResult, JobSpec, PublishDeps, PublishReceipt, run_job},
    },
    tokens,
};

/// How often the supervisor asks its actors whether they have been idle long enough to stop.
pub(super) const IDLE_CHECK: Duration = Duration::from_secs(5);
/// Messages waiting in an actor's mailbox before senders are refused.
const MAILBOX_CAPACITY: usize = 64;

/// What the caller of a publish gets back.
pub type JobOutcome = Result<PublishReceipt, JobFailure>;

/// A failed publish: the error for the caller, and whether another attempt is safe and may help.
#[derive(Debug)]
pub struct JobFailure {
    pub error: ApiError,
    pub retryable: bool,
}

struct QueuedJob {
    spec: JobSpec,
    reply: oneshot::Sender<JobOutcome>,
    enqueued_at: Instant,
}

struct InFlight {
    submission_id: Uuid,
    started: Instant,
    platform: &'static str,
    post_type: &'static str,
}

/// The operator view's copy of an actor's health. It lives in the actor's entry of the
/// supervisor's [`Roster`] (one map for addresses and health, not two), and the actor keeps it
/// current at every change, so the view reads it without messaging thousands of actors.
///
/// One per live actor, so it is kept small (issue 16: ≤ 2 KB per idle actor): the token (with
/// the name and the token's expiry) and the limiter are the actor's own shared pointers; the
/// state, the limiter's figures and the durations are computed on read; and what an actor that
/// has done nothing yet has at its defaults (queue, publish in flight, back-off, counters, last
/// error) sits in a box that idle actors do not allocate. The counters, the last error and the
/// back-off are kept here only: the actor itself needs none of them to decide anything.
pub struct HealthRecord {
    limiter: Arc<AccountLimiter>,
    token: Arc<AccountToken>,
    started_at: DateTime<Utc>,
    platform: Platform,
    token_valid: bool,
    activity: Option<Box<Activity>>,
}

/// The part of a [`HealthRecord`] that is at its defaults for an actor that has done nothing.
#[derive(Default, PartialEq)]
struct Activity {
    queue_depth: usize,
    in_flight: Option<(Uuid, Instant)>,
    backoff_until: Option<Instant>,
    last_error: Option<(String, DateTime<Utc>)>,
    published: u32,
    failed: u32,
}

impl HealthRecord {
    /// The record of an actor that has just started, with a usable token.
    pub fn starting(
        platform: Platform,
        token: Arc<AccountToken>,
        limiter: Arc<AccountLimiter>,
        started_at: DateTime<Utc>,
    ) -> Self {
        Self {
            limiter,
            token,
            started_at,
            platform,
            token_valid: true,
            activity: None,
        }
    }

    /// The health as of now (state, durations and the limiter read at call time).
    pub fn health(&self, account_id: Uuid) -> ActorHealth {
        let activity = self.activity.as_deref();
        let in_flight = activity.and_then(|a| a.in_flight);
        let backoff_until = activity.and_then(|a| a.backoff_until);
        let last_error = activity.and_then(|a| a.last_error.as_ref());
        ActorHealth {
            account_id,
            platform: self.platform,
            name: self.token.credentials.display_name.clone(),
            state: actor_state(self.token_valid, in_flight.is_some(), backoff_until),
            queue_depth: activity.map_or(0, |a| a.queue_depth),
            in_flight_submission: in_flight.map(|(id, _)| id),
            in_flight_ms: in_flight.map(|(_, at)| at.elapsed().as_millis() as u64),
            limiter: self.limiter.state(),
            token_valid: self.token_valid,
            token_expires_at: self.token.expires_at,
            last_error: last_error.map(|(e, _)| e.clone()),
            last_error_at: last_error.map(|(_, at)| *at),
            published: activity.map_or(0, |a| a.published.into()),
            failed: activity.map_or(0, |a| a.failed.into()),
            started_at: self.started_at,
        }
    }
}

/// An actor's state from what it holds.
fn actor_state(token_valid: bool, publishing: bool, backoff_until: Option<Instant>) -> ActorState {
    if !token_valid {
        ActorState::TokenInvalid
    } else if publishing {
        ActorState::Publishing
    } else if backoff_until.is_some_and(|until| until > Instant::now()) {
        ActorState::BackingOff
    } else {
        ActorState::Idle
    }
}

/// The actor's identity and the roster that holds its entry.
pub struct ActorSeat {
    pub account_id: Uuid,
    pub generation: u64,
    pub roster: Arc<Roster>,
}

/// Tenths of a second since this process first asked: the actor's last activity in 4 bytes
/// where an `Instant` takes 16 (a `u32` of them lasts 13 years).
fn ticks_now() -> u32 {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u32::try_from(epoch.elapsed().as_millis() / 100).unwrap_or(u32::MAX)
}

/// What an idle actor with a usable token does not have: its queue, the publish it runs, and
/// why its token is unusable. Boxed, and dropped again once all are empty.
#[derive(Default)]
struct Busy {
    queue: VecDeque<QueuedJob>,
    in_flight: Option<InFlight>,
    /// The code and reason the token is unusable (kept for the actor's life).
    token_failure: Option<(ErrorCode, String)>,
}

/// The actor. It lives inside its tokio task (with its actix context), so every byte here is
/// paid by every live actor. Tokio rounds a task up to 128 bytes: at 72 bytes or less the actor
/// makes a 512-byte task, where 184 made a 640-byte one (a test holds it there). So what is
/// rare is boxed ([`Busy`]), what is shared (dependencies, credentials, limiter) is behind an
/// `Arc`, what only the operator view needs is in the [`HealthRecord`] alone, and what the
/// configuration says is read from it, not copied.
pub struct AccountActor {
    seat: ActorSeat,
    /// The credentials and their token's dates (the health record holds the same `Arc`).
    token: Arc<AccountToken>,
    limiter: Arc<AccountLimiter>,
    busy: Option<Box<Busy>>,
    /// When a message last asked something of it, in [`ticks_now`] ticks.
    last_activity: u32,
    /// Checks of unconfirmed publishes running (spawned futures the idle stop must not drop).
    checks_in_flight: u32,
    /// Insights reads running now (they run beside publishes; at most `MAX_READS_IN_FLIGHT`).
    reads_in_flight: u16,
    platform: Platform,
    /// A token refresh is running: publishes wait for it.
    refreshing: bool,
}

/// What the actor is doing (the operator view's `state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActorState {
    Idle,
    Publishing,
    /// Waiting out a rate limit: its limiter is empty or the platform said "too many".
    BackingOff,
    TokenInvalid,
}

impl ActorState {
    pub fn as_str(self) -> &'static str {
        match self {
            ActorState::Idle => "idle",
            ActorState::Publishing => "publishing",
            ActorState::BackingOff => "backing_off",
            ActorState::TokenInvalid => "token_invalid",
        }
    }
}

/// The answer to [`GetHealth`].
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(description = "One account actor in the operator's view.")]
pub struct ActorHealth {
    pub account_id: Uuid,
    pub platform: Platform,
    // Shared with the actor: the view copies a pointer, not the text.
    /// The account's name.
    #[schema(value_type = String)]
    pub name: Arc<str>,
    pub state: ActorState,
    pub queue_depth: usize,
    /// The submission being published and for how long (absent when idle: the view of
    /// 10,000 actors stays small).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight_submission: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight_ms: Option<u64>,
    pub limiter: LimiterState,
    pub token_valid: bool,
    #[schema(required = true)]
    pub token_expires_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error_at: Option<DateTime<Utc>>,
    pub published: u64,
    pub failed: u64,
    pub started_at: DateTime<Utc>,
}

/// What a token refresh replaces: the credentials (with the access token) and the token's dates.
#[derive(Clone)]
pub struct AccountToken {
    credentials: AccountCredentials,
    expires_at: Option<DateTime<Utc>>,
    /// When the token was issued (Instagram Login refreshes only tokens at least 24 h old).
    issued_at: Option<DateTime<Utc>>,
}

impl AccountToken {
    pub fn shared(
        credentials: AccountCredentials,
        expires_at: Option<DateTime<Utc>>,
        issued_at: Option<DateTime<Utc>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            credentials,
            expires_at,
            issued_at,
        })
    }
}

pub struct AccountActorInit {
    pub seat: ActorSeat,
    pub platform: Platform,
    pub token: Arc<AccountToken>,
    pub limiter: Arc<AccountLimiter>,
}

impl AccountActor {
    pub fn new(init: AccountActorInit) -> Self {
        Self {
            seat: init.seat,
            platform: init.platform,
            token: init.token,
            limiter: init.limiter,
            busy: None,
            last_activity: ticks_now(),
            checks_in_flight: 0,
            reads_in_flight: 0,
            refreshing: false,
        }
    }

    fn deps(&self) -> &Arc<PublishDeps> {
        &self.seat.roster.deps
    }

    fn queue_len(&self) -> usize {
        self.busy.as_ref().map_or(0, |busy| busy.queue.len())
    }

    fn in_flight(&self) -> Option<&InFlight> {
        self.busy.as_ref().and_then(|busy| busy.in_flight.as_ref())
    }

    fn token_failure(&self) -> Option<&(ErrorCode, String)> {
        self.busy
            .as_ref()
            .and_then(|busy| busy.token_failure.as_ref())
    }

    fn busy_mut(&mut self) -> &mut Busy {
        self.busy.get_or_insert_with(Box::default)
    }

    /// Frees the box once nothing is queued or running and the token is usable.
    fn tidy(&mut self) {
        if self.busy.as_ref().is_some_and(|busy| {
            busy.queue.is_empty() && busy.in_flight.is_none() && busy.token_failure.is_none()
        }) {
            self.busy = None;
        }
    }

    /// The refusal of work for an account whose token is unusable.
    fn refuse_dead_token(&self) -> Result<(), ApiError> {
        match self.token_failure() {
            Some((code, reason)) => Err(ApiError::new(
                *code,
                "The platform access token of this account is no longer valid; reconnect the account",
            )
            .with_details(reason.clone())),
            None => Ok(()),
        }
    }

    fn touch(&mut self) {
        self.last_activity = ticks_now();
    }

    /// How long the actor stays up with nothing to do.
    fn idle_after(&self) -> Duration {
        Duration::from_secs(self.deps().publishing.actor_idle_secs.max(1))
    }

    /// Whether stopping now loses nothing: no publish queued or running, no read or check
    /// running (stopping drops the actor's spawned futures: perhaps a continuation's final
    /// call), and nothing asked of it for `actor_idle_secs`.
    fn idle_long_enough(&self) -> bool {
        // Both readings are rounded down: one tick less, so the idle time is never overstated.
        let ticks = ticks_now()
            .saturating_sub(self.last_activity)
            .saturating_sub(1);
        let idle = Duration::from_millis(u64::from(ticks) * 100);
        self.in_flight().is_none()
            && self.queue_len() == 0
            && self.reads_in_flight == 0
            && self.checks_in_flight == 0
            && idle >= self.idle_after()
    }

    /// Copies the current health to the actor's record in the roster.
    fn post_health(&self) {
        self.update_health(|_| {});
    }

    /// Copies the current health to the actor's record, with `change` made to the part only
    /// the record keeps (counters, last error, back-off). Nothing when the roster no longer
    /// holds this actor: a retired actor finishing what it was given is no longer in the
    /// operator view (its publishes' outcomes are in the history), and a replaced one's record
    /// belongs to its successor.
    fn update_health(&self, change: impl FnOnce(&mut Activity)) {
        let Some(mut entry) = self.seat.roster.actors.get_mut(&self.seat.account_id) else {
            return;
        };
        if entry.generation != self.seat.generation {
            return;
        }
        let record = &mut entry.health;
        record.token_valid = self.token_failure().is_none();
        if !Arc::ptr_eq(&record.token, &self.token) {
            record.token = self.token.clone();
        }
        let activity = record.activity.get_or_insert_with(Box::default);
        activity.queue_depth = self.queue_len();
        activity.in_flight = self.in_flight().map(|f| (f.submission_id, f.started));
        change(activity);
        if **activity == Activity::default() {
            record.activity = None;
        }
    }

    fn back_off(&self, retry_after: Option<u64>) {
        if let Some(secs) = retry_after {
            let until = Instant::now().checked_add(Duration::from_secs(secs.min(31 * 86_400)));
            self.update_health(|activity| activity.backoff_until = until);
        }
    }

    /// Records the latest error in the health record.
    fn note_error(&self, error: String) {
        let at = self.deps().clock.now();
        self.update_health(|activity| activity.last_error = Some((error, at)));
    }

    /// Starts the next queued publish unless one is running or a refresh is; whether it did.
    fn start_next(&mut self, ctx: &mut Context<Self>) -> bool {
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
        let submission_id = job.spec.submission_id;
        // A panic inside an adapter must not take the actor (and its queue) down with it.
        let work = std::panic::AssertUnwindSafe(run_job(deps, credentials, job.spec))
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

    /// Whether the token is in its refresh window (spec §5.8: threads 5 days before expiry;
    /// tiktok, youtube and x shortly before their access token expires).
    fn refresh_is_due(&self) -> bool {
        oauth::refresh_due(
            &self.deps().oauth,
            self.platform,
            self.token.credentials.login_route,
            self.token.expires_at,
            self.token.issued_at,
        )
        .is_some_and(|due| due <= self.deps().clock.now())
    }

    /// Refreshes the token in a spawned future, once at a time. Across instances the account's
    /// refresh lease in the database decides who refreshes; the others adopt the stored result.
    fn start_refresh(&mut self, ctx: &mut Context<Self>) {
        if self.refreshing || self.token_failure().is_some() {
            return;
        }
        let platform = self.platform;
        self.refreshing = true;
        let deps = self.deps().clone();
        let account_id = self.seat.account_id;
        let route = self.token.credentials.login_route;
        let work = async move { refresh_account(&deps, account_id, platform, route).await };
        ctx.spawn(in_runtime(work).into_actor(self).map(|outcome, actor, ctx| {
            actor.refreshing = false;
            match outcome {
                RefreshOutcome::Refreshed { access_token, expires_at, issued_at } => {
                    let token = Arc::make_mut(&mut actor.token);
                    token.credentials.access_token = access_token;
                    token.expires_at = expires_at;
                    token.issued_at = issued_at;
                    actor.deps().metrics.inc("token_refreshes_total", &[("platform", actor.platform.as_str()), ("outcome", "refreshed")]);
                }
                RefreshOutcome::Dead(reason) => {
                    actor.deps().metrics.inc("token_refreshes_total", &[("platform", actor.platform.as_str()), ("outcome", "revoked")]);
                    actix::spawn(actor.token_dead(ErrorCode::InvalidToken, reason));
                }
                RefreshOutcome::Failed(reason) => {
                    tracing::warn!(account = %actor.seat.account_id, %reason, "token refresh failed; retried at the next sweep");
                    actor.deps().metrics.inc("token_refreshes_total", &[("platform", actor.platform.as_str()), ("outcome", "failed")]);
                    actor.note_error(format!("token refresh: {reason}"));
                }
                RefreshOutcome::Busy => {}
            }
            actor.post_health();
            // Publishes that waited for the refresh go now (with a dead token they fail fast).
            actor.start_next(ctx);
        }));
    }

    /// The platform said the token is dead: refuse further work at once. Returns the write that
    /// records it, which runs off the actor's thread of control; whoever answers a client with
    /// the dead token awaits it first (see [`reply_after`]), so a client told `InvalidToken`
    /// that lists its accounts next sees the account invalid.
    fn token_dead(&mut self, code: ErrorCode, reason: String) -> RecordWrite {
        let stored = format!("{}: {reason}", code.as_str());
        self.busy_mut().token_failure = Some((code, reason));
        let store = self.deps().store.clone();
        let account_id = self.seat.account_id;
        let now = self.deps().clock.now();
        Box::pin(in_runtime(async move {
            if let Err(e) = store.mark_account_invalid(account_id, &stored, now).await {
                tracing::error!(error = %e, %account_id, "cannot mark the account invalid");
            }
        }))
    }

    /// Takes what a failed read says about the account (dead token, platform rate limit) and
    /// turns it into the caller's error.
    /// Also returns the write recording a dead token, to await before answering.
    fn absorb_platform_error(&mut self, error: PlatformError) -> (ApiError, Option<RecordWrite>) {
        let dead_token = error.invalidates_token().then(|| error.to_string());
        let error = error.into_api_error();
        let recorded = dead_token.map(|reason| self.token_dead(error.code, reason));
        if error.code == ErrorCode::RateLimitExceeded {
            self.back_off(error.retry_after);
        }
        self.note_error(format!("{}: {}", error.code.as_str(), error.message));
        (error, recorded)
    }

    /// The actor's health, from its record in the roster; `None` once the roster no longer
    /// holds this actor (retired or replaced: the caller asks the current one).
    fn health(&self) -> Option<ActorHealth> {
        let entry = self.seat.roster.actors.get(&self.seat.account_id)?;
        (entry.generation == self.seat.generation)
            .then(|| entry.health.health(self.seat.account_id))
    }
}

impl Actor for AccountActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(MAILBOX_CAPACITY);
        self.deps().metrics.gauge_add("account_actors", &[], 1);
        // No timer of its own: the supervisor's sweep sends [`StopIfIdle`] (a timer per actor
        // cost a boxed interval and a tokio timer entry for each of them). Nothing to record
        // either: the supervisor puts the health record in the roster with the address.
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        let generation = self.seat.generation;
        let metrics = &self.deps().metrics;
        metrics.gauge_add("account_actors", &[], -1);
        metrics.gauge_add("publish_queue_depth", &[], -(self.queue_len() as i64));
        self.seat
            .roster
            .actors
            .remove_if(&self.seat.account_id, |_, entry| {
                entry.generation == generation
            });
        // Jobs still queued (only possible if the actor is stopped from outside) get an answer.
        if let Some(busy) = self.busy.as_mut() {
            for job in busy.queue.drain(..) {
                let _ = job.reply.send(Err(JobFailure {
                    error: ApiError::service_unavailable(
                        "The account worker stopped; check the publishing history and retry",
                    ),
                    retryable: true,
                }));
            }
        }
    }
}

/// A database write the actor started and does not wait for itself.
type RecordWrite = std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;

/// Sends a reply once `recorded` (if any) is written, without holding the actor: a client's
/// next request must see what its answer said (read-your-writes).
fn reply_after(recorded: Option<RecordWrite>, send: impl FnOnce() + 'static) {
    match recorded {
        Some(write) => {
            actix::spawn(async move {
                write.await;
                send();
            });
        }
        None => send(),
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

/// The actor's health, answered at once even while a publish is in flight; `None` from an
/// actor the roster no longer holds (retired or replaced: ask the current one).
pub struct GetHealth;

impl Message for GetHealth {
    type Result = Option<ActorHealth>;
}

impl Handler<GetHealth> for AccountActor {
    type Result = MessageResult<GetHealth>;

    fn handle(&mut self, _msg: GetHealth, _ctx: &mut Self::Context) -> Self::Result {
        let _span = tracing::trace_span!("account_actor", account = %self.seat.account_id, message = "health").entered();
        MessageResult(self.health())
    }
}

/// Removes a queued (not yet started) publish. Answers whether it was removed; an in-flight
/// publish cannot be cancelled.
pub struct CancelQueued {
    pub submission_id: Uuid,
}

impl Message for CancelQueued {
    type Result = bool;
}

impl Handler<CancelQueued> for AccountActor {
    type Result = bool;

    fn handle(&mut self, msg: CancelQueued, _ctx: &mut Self::Context) -> bool {
        let _span = tracing::debug_span!("account_actor", account = %self.seat.account_id, message = "cancel").entered();
        let Some(queue) = self.busy.as_mut().map(|busy| &mut busy.queue) else {
            return false;
        };
        let Some(index) = queue
            .iter()
            .position(|job| job.spec.submission_id == msg.submission_id)
        else {
            return false;
        };
        let removed = queue.remove(index);
        self.deps()
            .metrics
            .gauge_add("publish_queue_depth", &[], -1);
        if let Some(job) = removed {
            let _ = job.reply.send(Err(JobFailure {
                error: ApiError::new(
                    ErrorCode::InvalidRequest,
                    "The post was cancelled before it was published",
                ),
                retryable: false,
            }));
        }
        self.tidy();
        self.post_health();
        true
    }
}

/// Test hook: makes the actor's handler panic (to check the supervisor restarts it).
#[cfg(test)]
pub struct Crash;

#[cfg(test)]
impl Message for Crash {
    type Result = ();
}

#[cfg(test)]
impl Handler<Crash> for AccountActor {
    type Result = ();

    #[allow(clippy::panic)]
    fn handle(&mut self, _msg: Crash, _ctx: &mut Self::Context) {
        panic!("crash requested");
    }
}

/// Test-only: which thread the actor runs on.
#[cfg(test)]
pub struct WhichThread;

#[cfg(test)]
impl Message for WhichThread {
    type Result = std::thread::ThreadId;
}

#[cfg(test)]
impl Handler<WhichThread> for AccountActor {
    type Result = MessageResult<WhichThread>;

    fn handle(&mut self, _msg: WhichThread, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(std::thread::current().id())
    }
}

/// What an insights read asks for.
#[derive(Debug, Clone)]
pub enum InsightsWork {
    /// A `GET /api/performance/*` query.
    Query(InsightsQuery),
    /// The numbers of one date, for a daily snapshot.
    Daily(NaiveDate),
}

/// What an insights read returns.
#[derive(Debug, Clone)]
pub enum InsightsOutput {
    /// The whole response body of a query.
    Body(crate::insights::bodies::InsightsBody),
    Daily(DailyMetrics),
}

/// Reads insights through the account's limiter. Answers at once with the receiver of the
/// result (or the refusal: token dead, limiter empty, too many reads in flight); the platform
/// calls run in a spawned future, beside any publish in flight (reads need no ordering).
pub struct ReadInsights {
    pub work: InsightsWork,
    pub account: AccountSummary,
}

/// The result of an insights read.
pub type InsightsResult = Result<InsightsOutput, ApiError>;

impl Message for ReadInsights {
    type Result = Result<oneshot::Receiver<InsightsResult>, ApiError>;
}

/// Reads one actor runs at the same time; more are refused with 503 (the collector and
/// dashboards retry).
const MAX_READS_IN_FLIGHT: u16 = 8;

impl Handler<ReadInsights> for AccountActor {
    type Result = Result<oneshot::Receiver<InsightsResult>, ApiError>;

    fn handle(&mut self, msg: ReadInsights, ctx: &mut Self::Context) -> Self::Result {
        let _span = tracing::debug_span!("account_actor", account = %self.seat.account_id, message = "insights").entered();
        self.touch();
        self.refuse_dead_token()?;
        if self.reads_in_flight >= MAX_READS_IN_FLIGHT {
            return Err(ApiError::service_unavailable(
                "This account is already answering other performance queries; retry in a moment",
            ));
        }
        let platform = msg.account.platform;
        let units = match &msg.work {
            InsightsWork::Query(query) => insights::estimated_calls(platform, query),
            InsightsWork::Daily(_) => insights::estimated_daily_calls(platform),
        };
        // A read that costs nothing of the limited budget (tiktok: its limit is on publish
        // inits) still goes through the actor for its token state.
        if units > 0
            && let Err(refused) = self.limiter.admit_units(units)
        {
            self.back_off(refused.retry_after);
            self.deps().metrics.inc(
                "limiter_rejections_total",
                &[("platform", platform.as_str())],
            );
            return Err(refused);
        }
        self.reads_in_flight += 1;
        let deps = self.deps().clone();
        let credentials = self.token.credentials.clone();
        let work = async move {
            let http = deps.http();
            let ctx = InsightsContext {
                http: &http,
                config: &deps.platforms,
                credentials: &credentials,
                account: &msg.account,
            };
            match &msg.work {
                InsightsWork::Query(query) => {
                    insights::query(&ctx, query).await.map(InsightsOutput::Body)
                }
                InsightsWork::Daily(date) => insights::daily(&ctx, *date)
                    .await
                    .map(InsightsOutput::Daily),
            }
        };
        let work = std::panic::AssertUnwindSafe(work)
            .catch_unwind()
            .map(|result| {
                result.unwrap_or_else(|_| {
                    Err(PlatformError::Rejected("the insights read panicked".into()))
                })
            });
        let (reply, receiver) = oneshot::channel();
        ctx.spawn(
            in_runtime(work)
                .into_actor(self)
                .map(move |result, actor, _ctx| {
                    actor.reads_in_flight = actor.reads_in_flight.saturating_sub(1);
                    actor.touch();
                    let (result, recorded) = match result {
                        Ok(output) => (Ok(output), None),
                        Err(error) => {
                            let (error, recorded) = actor.absorb_platform_error(error);
                            (Err(error), recorded)
                        }
                    };
                    actor.post_health();
                    reply_after(recorded, move || {
                        let _ = reply.send(result);
                    });
                }),
        );
        Ok(receiver)
    }
}

/// Checks once a publish the platform was still processing at our deadline (the reconciler
/// sends it, holding the submission's check claim). Answers at once with the receiver of the
/// report, or the refusal (token dead, limiter empty). The platform calls run in a spawned
/// future beside any publish in flight: a status read needs no ordering, and a continuation's
/// final call was admitted (and counted) with its publish.
pub struct CheckUnconfirmed {
    pub spec: CheckSpec,
}

impl Message for CheckUnconfirmed {
    type Result = Result<oneshot::Receiver<CheckReport>, ApiError>;
}

impl Handler<CheckUnconfirmed> for AccountActor {
    type Result = Result<oneshot::Receiver<CheckReport>, ApiError>;

    fn handle(&mut self, msg: CheckUnconfirmed, ctx: &mut Self::Context) -> Self::Result {
        let _span = tracing::debug_span!("account_actor", account = %self.seat.account_id, message = "check").entered();
        self.touch();
        self.refuse_dead_token()?;
        // One status read. TikTok's limiter models its limit on publish inits, which a status
        // read is not (as for insights reads).
        if self.platform != Platform::Tiktok
            && let Err(refused) = self.limiter.admit_units(1)
        {
            self.back_off(refused.retry_after);
            self.deps().metrics.inc(
                "limiter_rejections_total",
                &[("platform", self.platform.as_str())],
            );
            return Err(refused);
        }
        if self.refresh_is_due() {
            self.start_refresh(ctx);
        }
        let deps = self.deps().clone();
        let credentials = self.token.credentials.clone();
        let submission_id = msg.spec.submission.id;
        let work = std::panic::AssertUnwindSafe(run_check(deps, credentials, msg.spec))
            .catch_unwind()
            .map(move |result| {
                result.unwrap_or_else(|_| {
                    tracing::error!(submission = %submission_id, "publish check panicked");
                    // The claim lapses and another check is made.
                    CheckReport {
                        outcome: CheckOutcome::Lost,
                        error: None,
                    }
                })
            });
        let (reply, receiver) = oneshot::channel();
        self.checks_in_flight += 1;
        ctx.spawn(
            in_runtime(work)
                .into_actor(self)
                .map(move |mut report, actor, _ctx| {
                    actor.checks_in_flight = actor.checks_in_flight.saturating_sub(1);
                    actor.touch();
                    if let Some(error) = report.error.take()
                        && let (_, Some(recorded)) = actor.absorb_platform_error(error)
                    {
                        actix::spawn(recorded);
                    }
                    let outcome = report.outcome;
                    actor.update_health(|activity| match outcome {
                        CheckOutcome::Published => activity.published += 1,
                        CheckOutcome::Failed => activity.failed += 1,
                        _ => {}
                    });
                    let _ = reply.send(report);
                }),
        );
        Ok(receiver)
    }
}

/// Refresh the account's token now (the token keeper sends it when the refresh window opens).
pub struct RefreshToken;

impl Message for RefreshToken {
    type Result = ();
}

impl Handler<RefreshToken> for AccountActor {
    type Result = ();

    fn handle(&mut self, _msg: RefreshToken, ctx: &mut Self::Context) {
        let _span = tracing::debug_span!("account_actor", account = %self.seat.account_id, message = "refresh").entered();
        self.touch();
        self.start_refresh(ctx);
    }
}

/// How a refresh ended.
enum RefreshOutcome {
    /// New tokens, stored (by us, or by another instance whose result we adopt).
    Refreshed {
        access_token: secrecy::SecretString,
        expires_at: Option<DateTime<Utc>>,
        issued_at: Option<DateTime<Utc>>,
    },
    /// The platform refused the refresh for good (revoked, expired refresh token).
    Dead(String),
    /// A transient failure: the next sweep tries again.
    Failed(String),
    /// Another instance holds the refresh lease.
    Busy,
}

/// One refresh, from the stored row (the truth across instances) under its refresh lease.
async fn refresh_account(
    deps: &PublishDeps,
    account_id: Uuid,
    platform: Platform,
    route: oauth::LoginRoute,
) -> RefreshOutcome {
    let store = &deps.store;
    let now = deps.clock.now();
    match store
        .take_refresh_lease(account_id, now, now + chrono::Duration::seconds(120))
        .await
    {
        Ok(true) => {}
        Ok(false) => return RefreshOutcome::Busy,
        Err(e) => return RefreshOutcome::Failed(format!("database: {e}")),
    }
    let outcome = refresh_under_lease(deps, account_id, platform, route, now).await;
    if !matches!(outcome, RefreshOutcome::Refreshed { .. })
        && let Err(e) = store.release_refresh_lease(account_id).await
    {
        tracing::warn!(error = %e, %account_id, "cannot release a refresh lease; it lapses by itself");
    }
    outcome
}

async fn refresh_under_lease(
    deps: &PublishDeps,
    account_id: Uuid,
    platform: Platform,
    route: oauth::LoginRoute,
    now: DateTime<Utc>,
) -> RefreshOutcome {
    let row = match deps.store.find_account(account_id).await {
        Ok(Some(row)) => row,
        Ok(None) => return RefreshOutcome::Dead("the account is gone".into()),
        Err(e) => return RefreshOutcome::Failed(format!("database: {e}")),
    };
    // A token that does not open for this row is not sent to the platform. Failed, not Dead:
    // should a key be missing from the configuration, restoring it revives the account.
    let unreadable =
        |e: CipherError| RefreshOutcome::Failed(format!("cannot decrypt a stored token: {e}"));
    let access = match tokens::open_access(&deps.cipher, &row) {
        Ok(token) => token,
        Err(e) => return unreadable(e),
    };
    // Another instance refreshed since this actor loaded its token: adopt it.
    let still_due = oauth::refresh_due(
        &deps.oauth,
        platform,
        route,
        row.token_expires_at,
        row.token_issued_at,
    )
    .is_some_and(|due| due <= now);
    if !still_due {
        if let Err(e) = deps.store.release_refresh_lease(account_id).await {
            tracing::warn!(error = %e, %account_id, "cannot release a refresh lease");
        }
        return RefreshOutcome::Refreshed {
            access_token: secrecy::SecretString::from(access),
            expires_at: row.token_expires_at,
            issued_at: row.token_issued_at,
        };
    }
    let refresh_token = match tokens::open_refresh(&deps.cipher, &row) {
        Ok(token) => token,
        Err(e) => return unreadable(e),
    };
    let http = deps.http();
    let ctx = oauth::OAuthContext {
        http: &http,
        platforms: &deps.platforms,
        oauth: &deps.oauth,
        now,
    };
    let refreshed = match oauth::refresh(&ctx, platform, route, &access, refresh_token.as_deref())
        .await
    {
        Ok(refreshed) => refreshed,
        Err(error) if error.invalidates_token() => return RefreshOutcome::Dead(error.to_string()),
        Err(error) => return RefreshOutcome::Failed(error.to_string()),
    };
    let plain =
        tokens::PlainTokens::new(&refreshed.access_token, refreshed.refresh_token.as_deref());
    let Ok(sealed) = tokens::seal(&deps.cipher, account_id, &plain) else {
        return RefreshOutcome::Failed("cannot encrypt the new tokens".into());
    };
    let tokens = crate::store::NewTokens {
        sealed,
        token_expires_at: refreshed.expires_at,
    };
    // A rotated refresh token is only ours once stored; failing here loses it, so say so loudly.
    if let Err(e) = deps.store.store_refreshed_tokens(tokens, now).await {
        tracing::error!(error = %e, %account_id, "refreshed tokens could not be stored; the account may need reconnecting");
        return RefreshOutcome::Failed(format!("database: {e}"));
    }
    tracing::info!(%account_id, platform = platform.as_str(), "token refreshed");
    RefreshOutcome::Refreshed {
        access_token: secrecy::SecretString::from(refreshed.access_token),
        expires_at: refreshed.expires_at,
        issued_at: Some(now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every live actor is one tokio task holding the actor and its actix context (issue 16:
    /// ≤ 2 KB per idle actor). Tokio aligns a task to 128 bytes and adds 104 of its own, so a
    /// future of at most 408 bytes makes a 512-byte task; the actor's fields decide it (at
    /// 184 bytes it made a 640-byte task).
    #[test]
    fn an_actor_task_fits_in_512_bytes() {
        let future =
            std::mem::size_of::<actix::dev::ContextFut<AccountActor, Context<AccountActor>>>();
        assert!(future <= 408, "actor future {future} bytes");
        assert!(std::mem::size_of::<AccountActor>() <= 72);
        // The roster's entry: one per live actor too, with the health record.
        let entry = std::mem::size_of::<super::super::supervisor::ActorEntry>();
        assert!(entry <= 88, "roster entry {entry} bytes");
        // And the limiter, one per account that had an actor.
        assert!(std::mem::size_of::<AccountLimiter>() <= 96);
    }
}
