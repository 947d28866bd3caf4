//! The account actor: one per connected account. It owns the account's token state, its rate
//! limiter and its publish queue, and runs one publish at a time, in arrival order.
//!
//! A publish runs in a future spawned on the actor's context (`ctx.spawn`), not inside the
//! message handler, so health and cancel messages are answered at once while a long video upload
//! is in flight. The queue is bounded; the supervisor answers 503 when it is full.

mod health;
mod queries;
mod queue;
mod refresh;
pub mod roster;

pub use health::{ActorHealth, ActorState, GetHealth, HealthRecord};
pub use queries::{
    CheckUnconfirmed, InsightsOutput, InsightsResult, InsightsWork, ReadInsights, check_units,
};
pub use queue::{Publish, Retire, StopIfIdle};
pub use refresh::RefreshToken;

use std::{
    collections::VecDeque,
    sync::Arc,
    time::{Duration, Instant},
};

use actix::prelude::*;
use chrono::{DateTime, Utc};
use tokio::sync::oneshot;
use uuid::Uuid;

use super::limiter::AccountLimiter;
use crate::{
    domain::plan::Platform,
    error::{ApiError, ErrorCode},
    platforms::{AccountCredentials, PlatformError},
    publish::run::{JobSpec, PublishDeps, PublishReceipt},
    store::in_runtime::in_runtime,
};
use roster::Roster;

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every live actor is one tokio task holding the actor and its actix context (the budget
    /// is ≤ 2 KB per idle actor). Tokio aligns a task to 128 bytes and adds 104 of its own, so a
    /// future of at most 408 bytes makes a 512-byte task; the actor's fields decide it (at
    /// 184 bytes it made a 640-byte task).
    #[test]
    fn an_actor_task_fits_in_512_bytes() {
        let future =
            std::mem::size_of::<actix::dev::ContextFut<AccountActor, Context<AccountActor>>>();
        assert!(future <= 408, "actor future {future} bytes");
        assert!(std::mem::size_of::<AccountActor>() <= 72);
        // The roster's entry: one per live actor too, with the health record.
        let entry = std::mem::size_of::<roster::ActorEntry>();
        assert!(entry <= 88, "roster entry {entry} bytes");
        // And the limiter, one per account that had an actor.
        assert!(std::mem::size_of::<AccountLimiter>() <= 96);
    }
}
