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
//! settings), built before it; the publishing service wakes it through a
//! [`SchedulerWaker`](crate::services::publishing::SchedulerWaker).

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::Arc,
    time::Duration,
};

use actix::prelude::*;
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::{
    config::SchedulerConfig,
    services::{
        publishing::Wake,
        scheduling::{Decision, Ended, SchedulingService, settle_expired_claims},
    },
    store::EndedAttempt,
    store::in_runtime::in_runtime,
};

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
        // As often as dead instances' claims are handed back (see `ClusterConfig::look_every`).
        let settle_every = (lease / 2).min(self.service.cluster.look_every());
        ctx.run_interval(settle_every, |actor, ctx| actor.settle(ctx));
    }
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
