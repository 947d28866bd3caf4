//! The scheduler actor: publishes due scheduled posts through the account actors, at most once.
//!
//! - It sleeps until the earliest due post (capped at `scheduler.max_sleep_ms`, so posts added by
//!   other instances are seen), and is woken at once when this instance schedules a post.
//! - A due post is claimed by one conditional update (`scheduled → publishing` with this
//!   instance's id and a lease), so two instances never both publish it. Leases are renewed
//!   while publishing.
//! - Transient failures before the irreversible call go back to `scheduled` with backoff
//!   (honouring `retry_after`), up to `scheduler.max_attempts`; other failures are final.
//! - A claim whose lease has passed belongs to a process that died: the post is settled from the
//!   steps its attempt recorded — retried if the irreversible call was never made, otherwise
//!   `failed` with an error saying the outcome is unconfirmed.
//! - An attempt the platform was still processing at our deadline is neither retried nor failed:
//!   the post stays `publishing` while the reconciler checks the attempt, and ends with it.
//! - On shutdown it stops claiming and lets in-flight publishes finish (bounded by the caller).
//!
//! All database work runs in futures spawned on the actor's context, never in a handler. What
//! the actor works with is its [`SchedulingService`] (the table, the publishing use cases, its
//! settings), built before it; the publishing service wakes it through a [`SchedulerWaker`].

use std::{
    collections::{HashMap, HashSet, VecDeque},
    time::Duration,
};

use std::sync::Arc;

use actix::prelude::*;
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::in_runtime::in_runtime;
use entity::post_submission::SubmissionStatus;

use crate::store::{AttemptEnd, EndedAttempt, IDS_PER_STATEMENT};
use crate::{
    clock::SharedClock,
    config::SchedulerConfig,
    error::{ApiError, ErrorCode},
    metrics::Metrics,
    publish::{
        reconcile, run::PublishReceipt, service::PublishingService, steps::ClaimFence, validate,
    },
    store::Store,
};

/// The longest a retry waits, whatever a platform's `retry_after` says.
const MAX_RETRY_WAIT_SECS: u64 = 31 * 86_400;

/// Message of a post whose irreversible publish call may or may not have happened.
pub const UNCONFIRMED_MESSAGE: &str = "The service stopped while this post's final publish call was in progress, so whether it was published is unconfirmed: check the platform before posting it again";

/// What the operator view shows of the scheduler.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct SchedulerStatus {
    pub instance: String,
    pub running: bool,
    pub draining: bool,
    pub in_flight: usize,
    #[schema(required = true)]
    pub next_due: Option<DateTime<Utc>>,
    /// How late the latest dispatched post started, in milliseconds.
    #[schema(required = true)]
    pub last_lag_ms: Option<i64>,
    pub published: u64,
    pub failed: u64,
    pub retried: u64,
    pub settled: u64,
    #[schema(required = true)]
    pub last_error: Option<String>,
    /// Completed looks at the table (claims and the next due time read, or the read failed):
    /// a waiter that sees it advance twice knows a whole look started after it read this.
    pub passes: u64,
    /// A look at the table is running.
    pub looking: bool,
}

/// What the scheduler works with: the table of scheduled posts, the publishing use cases (a
/// due post is checked and queued exactly as an immediate one), and its own settings. Built
/// before the actor, so tests can settle expired claims without one.
pub struct SchedulingService {
    store: Store,
    clock: SharedClock,
    publishing: Arc<PublishingService>,
    config: SchedulerConfig,
    metrics: Arc<Metrics>,
    /// This process's id as a claimant of scheduled posts: `host:pid:random`.
    instance: String,
}

impl SchedulingService {
    pub fn new(
        store: Store,
        clock: SharedClock,
        publishing: Arc<PublishingService>,
        config: SchedulerConfig,
        metrics: Arc<Metrics>,
        instance: String,
    ) -> Self {
        Self {
            store,
            clock,
            publishing,
            config,
            metrics,
            instance,
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

    fn lease(&self) -> chrono::Duration {
        chrono::Duration::seconds(self.config.lease_secs.max(1) as i64)
    }
}

/// Wakes the scheduler (a post was scheduled) without knowing the actor: the publishing use
/// cases hold one. Its address is known before the actor runs (the builder makes the context
/// first), so nothing needs filling in later; without a scheduler (`scheduler.enabled =
/// false`) waking does nothing.
#[derive(Clone, Default)]
pub struct SchedulerWaker(Option<Addr<SchedulerActor>>);

impl SchedulerWaker {
    pub fn new(scheduler: Option<Addr<SchedulerActor>>) -> Self {
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

pub struct SchedulerActor {
    service: Arc<SchedulingService>,
    config: SchedulerConfig,
    status: SchedulerStatus,
    /// Every post this instance holds a claim on and has not ended in the table yet: queued,
    /// publishing, or ended and not yet written. Their leases are renewed together, so a post
    /// waiting in a queue keeps its claim.
    claimed: HashSet<Uuid>,
    /// Claimed posts waiting for their account's turn, per account, in due order.
    lanes: HashMap<Uuid, VecDeque<entity::scheduled_post::Model>>,
    /// Accounts with posts waiting and none publishing, in the order they became ready.
    ready: VecDeque<Uuid>,
    /// Accounts with an attempt running. One at a time per account keeps an account's posts in
    /// due order: an attempt's checks before the hand-over to the account actor are async, so
    /// two attempts of one account could reach its queue swapped. (The account actor runs one
    /// publish at a time anyway: this costs an account only its checks, not its throughput.)
    running: HashSet<Uuid>,
    /// Attempts that ended and wait to be written, with what each counts as once written.
    unwritten: Vec<(EndedAttempt, Ended)>,
    /// A batch of ends is being written.
    writing: bool,
    /// Queued posts being given back at a drain (they count as in flight until they are).
    releasing: usize,
    /// The last look was cut short by `max_claimed`: look again as soon as ends free room.
    full: bool,
    timer: Option<SpawnHandle>,
    ticking: bool,
    tick_again: bool,
}

/// How a dispatch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
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
enum Decision {
    /// End the attempt (if the claim is still ours); counted as the `Ended` once written.
    Write(AttemptEnd, Ended),
    /// Write nothing: the post stays `publishing` and its claim is let go (its lease lapses and
    /// settlement, or the reconciler, ends it).
    LetGo(Ended),
}

impl SchedulerActor {
    pub fn new(service: Arc<SchedulingService>) -> Self {
        let config = service.config.clone();
        let instance = service.instance.clone();
        Self {
            service,
            config,
            status: SchedulerStatus {
                instance,
                running: true,
                ..SchedulerStatus::default()
            },
            claimed: HashSet::new(),
            lanes: HashMap::new(),
            ready: VecDeque::new(),
            running: HashSet::new(),
            unwritten: Vec::new(),
            writing: false,
            releasing: 0,
            full: false,
            timer: None,
            ticking: false,
            tick_again: false,
        }
    }

    fn lease(&self) -> chrono::Duration {
        chrono::Duration::seconds(self.config.lease_secs.max(1) as i64)
    }

    /// Looks for due posts and claims a batch of them, again and again while more are due and
    /// `max_claimed` allows, then sleeps until the next one. Claiming does not wait for
    /// publishes: claimed posts wait in their account's queue.
    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.status.draining {
            return;
        }
        if self.ticking {
            self.tick_again = true;
            return;
        }
        self.ticking = true;
        let room = self
            .config
            .max_claimed
            .max(1)
            .saturating_sub(self.claimed.len());
        let batch = room.min(self.config.claim_batch.max(1));
        let service = self.service.clone();
        let instance = self.status.instance.clone();
        let lease = self.lease();
        let work = async move {
            let now = service.clock.now();
            let claimed = if batch > 0 {
                service
                    .store
                    .claim_due_posts(&instance, now, now + lease, batch as u64)
                    .await?
            } else {
                Vec::new()
            };
            // A full batch: more may be due, look again at once (the next due time is read
            // when the due posts are all claimed).
            let next_due = if batch > 0 && claimed.len() == batch {
                None
            } else {
                service.store.next_due_at().await?
            };
            Ok::<_, sea_orm::DbErr>((claimed, next_due, now))
        };
        ctx.spawn(
            in_runtime(work)
                .into_actor(self)
                .map(move |result, actor, ctx| {
                    actor.ticking = false;
                    actor.status.passes += 1;
                    match result {
                        Ok((claimed, next_due, now)) => {
                            let more = batch > 0 && claimed.len() == batch;
                            for row in claimed {
                                actor.take(row, now);
                            }
                            actor.pump(ctx);
                            if actor.status.draining {
                                // Claimed as the drain began: the ones that could start have
                                // (they are `publishing` to whoever watches the table); the rest
                                // go back.
                                actor.release_queued(ctx);
                            }
                            actor.full = batch == 0
                                || (more && actor.claimed.len() >= actor.config.max_claimed);
                            if more && !actor.full {
                                actor.tick_again = true;
                            } else {
                                if !more {
                                    actor.status.next_due = next_due;
                                }
                                // When full, ends free room and look again; otherwise sleep
                                // until the next due post.
                                actor.arm_timer(if actor.full { None } else { next_due }, ctx);
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "scheduler: cannot read due posts");
                            actor.status.last_error = Some(format!("database: {e}"));
                            actor.arm_timer(None, ctx);
                        }
                    }
                    if actor.tick_again {
                        actor.tick_again = false;
                        actor.tick(ctx);
                    }
                }),
        );
    }

    fn arm_timer(&mut self, next_due: Option<DateTime<Utc>>, ctx: &mut Context<Self>) {
        if let Some(handle) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        let max = Duration::from_millis(self.config.max_sleep_ms.max(10));
        let wait = match next_due {
            Some(at) => (at - self.service.clock.now())
                .to_std()
                .unwrap_or(Duration::ZERO)
                .clamp(Duration::from_millis(5), max),
            None => max,
        };
        self.timer = Some(ctx.run_later(wait, |actor, ctx| {
            actor.timer = None;
            actor.tick(ctx);
        }));
    }

    /// Queues a claimed post behind its account's earlier ones.
    fn take(&mut self, row: entity::scheduled_post::Model, now: DateTime<Utc>) {
        let lag = (now - row.next_attempt_at).num_milliseconds();
        self.status.last_lag_ms = Some(lag);
        self.service
            .metrics
            .observe("scheduler_lag_seconds", &[], lag.max(0) as f64 / 1000.0);
        self.claimed.insert(row.id);
        let account = row.account_id;
        let lane = self.lanes.entry(account).or_default();
        lane.push_back(row);
        if lane.len() == 1 && !self.running.contains(&account) {
            self.ready.push_back(account);
        }
    }

    /// Starts the next post of ready accounts while fewer than `max_in_flight` publish.
    fn pump(&mut self, ctx: &mut Context<Self>) {
        while self.running.len() < self.config.max_in_flight.max(1) {
            let Some(account) = self.ready.pop_front() else {
                return;
            };
            let Some(row) = self
                .lanes
                .get_mut(&account)
                .and_then(|lane| lane.pop_front())
            else {
                self.lanes.remove(&account);
                continue;
            };
            self.running.insert(account);
            self.dispatch(row, ctx);
        }
    }

    fn dispatch(&mut self, row: entity::scheduled_post::Model, ctx: &mut Context<Self>) {
        tracing::info!(scheduled_post = %row.id, attempt = row.attempts, "publishing a scheduled post");
        let id = row.id;
        let account = row.account_id;
        let service = self.service.clone();
        ctx.spawn(
            in_runtime(async move { service.dispatch_post(row).await })
                .into_actor(self)
                .map(move |decision, actor, ctx| {
                    actor.running.remove(&account);
                    match actor.lanes.get(&account) {
                        Some(lane) if !lane.is_empty() => actor.ready.push_back(account),
                        _ => {
                            actor.lanes.remove(&account);
                        }
                    }
                    match decision {
                        Decision::Write(end, ended) => {
                            let claimant = actor.status.instance.clone();
                            actor.unwritten.push((
                                EndedAttempt {
                                    id,
                                    claimant,
                                    lease_expired_at: None,
                                    end,
                                },
                                ended,
                            ));
                            actor.write_ends(ctx);
                        }
                        Decision::LetGo(ended) => {
                            // No longer ours to renew: its lease lapses. (Ends that are
                            // written free room when written, below.)
                            actor.claimed.remove(&id);
                            if actor.full {
                                actor.tick(ctx);
                            }
                            if ended == Ended::Checking {
                                actor.service.metrics.inc(
                                    "scheduler_dispatches_total",
                                    &[("result", "unconfirmed")],
                                );
                            }
                        }
                    }
                    actor.pump(ctx);
                }),
        );
    }

    /// Writes the ends waiting to be written, `settle_batch` per transaction; ends that come
    /// in meanwhile make the next batch.
    fn write_ends(&mut self, ctx: &mut Context<Self>) {
        if self.writing || self.unwritten.is_empty() {
            return;
        }
        self.writing = true;
        let take = self.unwritten.len().min(self.config.settle_batch.max(1));
        let batch: Vec<(EndedAttempt, Ended)> = self.unwritten.drain(..take).collect();
        let service = self.service.clone();
        let ends: Vec<EndedAttempt> = batch.iter().map(|(end, _)| end.clone()).collect();
        ctx.spawn(
            in_runtime(async move {
                let now = service.clock.now();
                service.store.end_attempts(&ends, now).await
            })
            .into_actor(self)
            .map(move |result, actor, ctx| {
                actor.writing = false;
                let mut rescheduled = false;
                match result {
                    Ok(written) => {
                        for ((end, ended), written) in batch.iter().zip(written) {
                            actor.claimed.remove(&end.id);
                            actor.count(if written { *ended } else { Ended::Lost });
                            rescheduled |= written && *ended == Ended::Retried;
                        }
                    }
                    Err(e) => {
                        // The outcomes could not be written; the leases run out and the posts
                        // are settled from their recorded steps.
                        tracing::error!(posts = batch.len(), error = %e, "scheduler: cannot record outcomes");
                        actor.status.last_error = Some(format!("database: {e}"));
                        for (end, _) in &batch {
                            actor.claimed.remove(&end.id);
                        }
                    }
                }
                actor.write_ends(ctx);
                // A retry may be due before the timer; room freed may let a cut-short look go on.
                if rescheduled || actor.full {
                    actor.tick(ctx);
                }
            }),
        );
    }

    fn count(&mut self, ended: Ended) {
        let metrics = &self.service.metrics;
        let count = |result: &str| metrics.inc("scheduler_dispatches_total", &[("result", result)]);
        match ended {
            Ended::Published => {
                self.status.published += 1;
                count("published");
            }
            Ended::Failed => {
                self.status.failed += 1;
                count("failed");
            }
            Ended::Retried => {
                self.status.retried += 1;
                count("retried");
            }
            Ended::Checking => count("unconfirmed"),
            Ended::Lost => {}
        }
    }

    /// Gives every queued (never started) post back to the table, unclaimed (drain).
    fn release_queued(&mut self, ctx: &mut Context<Self>) {
        let queued: Vec<Uuid> = self
            .lanes
            .drain()
            .flat_map(|(_, lane)| lane.into_iter().map(|row| row.id))
            .collect();
        self.ready.clear();
        self.release(queued, ctx);
    }

    fn release(&mut self, ids: Vec<Uuid>, ctx: &mut Context<Self>) {
        if ids.is_empty() {
            return;
        }
        for id in &ids {
            self.claimed.remove(id);
        }
        self.releasing += ids.len();
        let count = ids.len();
        let service = self.service.clone();
        ctx.spawn(
            in_runtime(async move {
                let now = service.clock.now();
                service
                    .store
                    .release_claims(&service.instance, &ids, now)
                    .await
            })
            .into_actor(self)
            .map(move |result, actor, _| {
                actor.releasing -= count;
                if let Err(e) = result {
                    // Their leases run out and settlement retries them (nothing started).
                    tracing::warn!(error = %e, "scheduler: cannot give back queued posts");
                    actor.status.last_error = Some(format!("database: {e}"));
                }
            }),
        );
    }

    fn renew_leases(&mut self, ctx: &mut Context<Self>) {
        if self.claimed.is_empty() {
            return;
        }
        let service = self.service.clone();
        let until = service.clock.now() + self.lease();
        let ids: Vec<Uuid> = self.claimed.iter().copied().collect();
        ctx.spawn(
            in_runtime(async move {
                service
                    .store
                    .extend_leases(&service.instance, ids, until)
                    .await
            })
            .into_actor(self)
            .map(|result, actor, _| {
                if let Err(e) = result {
                    actor.status.last_error = Some(format!("database: {e}"));
                }
            }),
        );
    }

    fn settle(&mut self, ctx: &mut Context<Self>) {
        let service = self.service.clone();
        ctx.spawn(
            in_runtime(async move { settle_expired_claims(&service).await })
                .into_actor(self)
                .map(|result, actor, ctx| match result {
                    Ok(0) => {}
                    Ok(n) => {
                        actor.status.settled += n;
                        for _ in 0..n {
                            actor.service.metrics.inc("scheduler_settled_total", &[]);
                        }
                        actor.tick(ctx);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "scheduler: cannot settle expired claims");
                        actor.status.last_error = Some(format!("database: {e}"));
                    }
                }),
        );
    }

    /// Posts held: claimed and not yet ended in the table, or being given back.
    fn held(&self) -> usize {
        self.claimed.len() + self.releasing
    }
}

impl Actor for SchedulerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        tracing::info!(instance = %self.status.instance, "scheduler started");
        self.settle(ctx);
        self.tick(ctx);
        let lease = Duration::from_secs(self.config.lease_secs.max(1));
        ctx.run_interval(lease / 3, |actor, ctx| actor.renew_leases(ctx));
        ctx.run_interval(lease / 2, |actor, ctx| actor.settle(ctx));
    }
}

/// Look now: a post was scheduled (or something changed).
pub struct Wake;

impl Message for Wake {
    type Result = ();
}

impl Handler<Wake> for SchedulerActor {
    type Result = ();

    fn handle(&mut self, _msg: Wake, ctx: &mut Self::Context) {
        self.tick(ctx);
    }
}

/// Stop claiming posts (shutdown): queued posts not yet started go back to `scheduled`, the
/// ones publishing finish. Answers how many posts are still held (publishing, ended and not
/// yet written, or being given back).
pub struct Drain;

impl Message for Drain {
    type Result = usize;
}

impl Handler<Drain> for SchedulerActor {
    type Result = usize;

    fn handle(&mut self, _msg: Drain, ctx: &mut Self::Context) -> usize {
        if !self.status.draining {
            tracing::info!(
                publishing = self.running.len(),
                held = self.claimed.len(),
                "scheduler: draining"
            );
        }
        self.status.draining = true;
        if let Some(handle) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        self.release_queued(ctx);
        // A look at the table still running may be claiming posts: count it as in flight.
        self.held() + usize::from(self.ticking)
    }
}

/// The scheduler's status (operator view).
pub struct GetStatus;

impl Message for GetStatus {
    type Result = SchedulerStatus;
}

impl Handler<GetStatus> for SchedulerActor {
    type Result = MessageResult<GetStatus>;

    fn handle(&mut self, _msg: GetStatus, _ctx: &mut Self::Context) -> Self::Result {
        let mut status = self.status.clone();
        status.in_flight = self.held();
        status.looking = self.ticking;
        MessageResult(status)
    }
}

/// Why an attempt did not publish.
struct AttemptFailure {
    error: ApiError,
    retryable: bool,
    /// Write nothing: the outcome is not known here (the worker died) or the post is no longer
    /// ours; the lease runs out and settlement decides from the recorded steps.
    abandon: bool,
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
    async fn dispatch_post(&self, row: entity::scheduled_post::Model) -> Decision {
        let result = self.attempt(&row).await;
        let now = self.clock.now();
        let config = &self.config;
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
                        "PublishingUnconfirmed".to_string(),
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
                    code: "PublishingUnconfirmed".to_string(),
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
    // Immediate publishes cut off by a stopped process: their callers are long gone; say in
    // the history what happened.
    let before = now - chrono::Duration::seconds(service.config.stale_publish_secs as i64);
    for submission in store.stale_publishing_submissions(before).await? {
        let final_started = submission
            .steps
            .as_ref()
            .is_some_and(|steps| steps.final_started);
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
