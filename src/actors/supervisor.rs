//! The supervisor: routes requests from HTTP handlers to account actors.
//!
//! It is built once per process (in `Application::build`, before the HTTP workers start). An
//! actor starts on first use from the account row, stops itself when idle, and is started
//! again if it died (a panic closes its mailbox; the next message finds that and replaces it).
//!
//! Where an actor runs ([`Placement`]):
//! - Started by a publish that a request asks for (`POST /v2/posts`, the dashboard's compose
//!   form), on the thread of the HTTP worker serving it (the workers are actix arbiters;
//!   [`host_actors_here`] marks them). That worker's later requests for the account reach the
//!   actor, and get its answer, without a thread hand-over: on a busy machine each hand-over is
//!   a wait for a core (avoiding it gave about a tenth more publishes per second on a busy
//!   2-core machine). Requests arriving on another worker are handed over to the actor's
//!   thread. actix gives each connection to one worker, so a client that publishes over a
//!   single connection (or a proxy with a single upstream connection) puts
//!   every account it publishes to on that one worker (`actors_on_http_workers = false` avoids
//!   it). A worker that stops (the server's shutdown, once its own connections are done) stops
//!   the actors it hosts and what they were running in the background; the next request for one
//!   of their accounts starts a new actor.
//! - Started any other way, on the supervisor's own `publishing.actor_arbiters` arbiters
//!   (default: one per core), chosen by `hash(account_id) % N`: by the scheduler, the
//!   collector, the reconciler, and by requests other than a publish. One of those, an
//!   operator's `POST /api/cron/collect-performance`, reads every account from one request;
//!   placed on its worker, all their actors would have shared that one thread.
//!
//! Either way an account has one live actor, whose mailbox keeps its messages in order; the
//! work it spawns (`ctx.spawn`: publishes with their media download and upload, insights
//! reads, checks, token refreshes) runs on its thread. A restarted actor is placed by the same
//! rules as a new one, by whatever needed it.
//!
//! Each of these threads has a platform client of its own (see `PublishDeps::http`): reqwest
//! drives a connection's I/O on the runtime that opened it, so a shared pool would have calls
//! ride connections driven by another thread.

use std::{
    cell::Cell,
    hash::{DefaultHasher, Hash, Hasher},
    num::NonZeroUsize,
    sync::{
        Arc, Weak,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use actix::{Actor, MailboxError};
use actix_rt::{Arbiter, ArbiterHandle};
use dashmap::{DashMap, mapref::entry::Entry};
use tokio::sync::oneshot;
use uuid::Uuid;

use super::{
    account::{
        AccountActor, AccountActorInit, AccountToken, ActorHealth, ActorSeat, CheckUnconfirmed,
        GetHealth, HealthRecord, IDLE_CHECK, InsightsOutput, InsightsWork, JobOutcome, Publish,
        ReadInsights, RefreshToken, Retire, StopIfIdle, check_units,
        roster::{ActorEntry, LiveActor, Placement, Roster},
    },
    limiter::AccountLimiter,
};
use crate::domain::plan::Platform;
use crate::{
    config::PlatformsConfig,
    error::{ApiError, ErrorCode},
    insights::AccountSummary,
    platforms::AccountCredentials,
    publish::{
        reconcile::{CheckReport, CheckSpec},
        run::{JobSpec, PublishDeps},
    },
    tokens,
};

/// How long a message may wait for room in an actor's mailbox.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

thread_local! {
    /// Whether this thread hosts the actors its publish requests start (set on the HTTP
    /// workers).
    static HOSTS_ACTORS: Cell<bool> = const { Cell::new(false) };
}

/// Called on each HTTP worker's thread as it starts: the actors its publish requests start run
/// here, calling out with a platform client of this thread's own.
pub fn host_actors_here(platforms: &PlatformsConfig) {
    HOSTS_ACTORS.set(true);
    crate::publish::run::use_own_client(platforms);
}

pub struct Supervisor {
    /// The live actors, and the dependencies (`roster.deps`) they and the supervisor share.
    roster: Arc<Roster>,
    limiters: DashMap<Uuid, Arc<AccountLimiter>>,
    /// Where actors are started; never empty.
    arbiters: Vec<ArbiterHandle>,
    /// Owned so the threads live as long as the supervisor.
    _arbiters: Vec<Arbiter>,
    generation: AtomicU64,
}

impl Supervisor {
    /// Starts the supervisor's arbiter threads, as many as `publishing.actor_arbiters` says
    /// (one per core when unset or invalid; `Application::build` refuses an invalid value
    /// before this). Needs a running actix system.
    pub fn new(deps: Arc<PublishDeps>) -> Self {
        let count = deps.publishing.actor_arbiters().unwrap_or_else(|error| {
            tracing::warn!(%error, "using one actor arbiter per core");
            std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN)
        });
        let arbiters: Vec<Arbiter> = (0..count.get()).map(|_| Arbiter::new()).collect();
        for arbiter in &arbiters {
            let platforms = deps.platforms.clone();
            arbiter.spawn_fn(move || crate::publish::run::use_own_client(&platforms));
        }
        let idle_after = Duration::from_secs(deps.publishing.actor_idle_secs.max(1));
        let roster = Arc::new(Roster {
            actors: DashMap::new(),
            deps,
        });
        arbiters[0].spawn(idle_sweep(
            Arc::downgrade(&roster),
            IDLE_CHECK.min(idle_after),
        ));
        Self {
            roster,
            limiters: DashMap::new(),
            arbiters: arbiters.iter().map(Arbiter::handle).collect(),
            _arbiters: arbiters,
            generation: AtomicU64::new(0),
        }
    }

    /// Tests reach the store and cipher through it; nothing else asks the supervisor for
    /// dependencies (services are given theirs).
    #[cfg(test)]
    pub(crate) fn deps(&self) -> &Arc<PublishDeps> {
        &self.roster.deps
    }

    /// Whether every arbiter thread is running (one that stopped would strand its accounts).
    /// HTTP workers are watched by the server, which restarts a worker that died.
    pub fn is_running(&self) -> bool {
        self.arbiters.iter().all(|arbiter| arbiter.spawn(async {}))
    }

    /// The arbiter an account's actors run on: the same for the account's whole life in this
    /// process (restarts included), so its messages are handled in order on one thread.
    fn arbiter_index(&self, account_id: Uuid) -> usize {
        // `DefaultHasher::new()` has fixed keys: stable for the process, unlike `RandomState`.
        let mut hasher = DefaultHasher::new();
        account_id.hash(&mut hasher);
        (hasher.finish() % self.arbiters.len() as u64) as usize
    }

    /// Live account actors.
    pub fn live_actors(&self) -> usize {
        self.roster.actors.len()
    }

    fn limiter(&self, account_id: Uuid, platform: Platform) -> Arc<AccountLimiter> {
        self.limiters
            .entry(account_id)
            .or_insert_with(|| {
                Arc::new(AccountLimiter::for_platform(
                    platform,
                    &self.roster.deps.publishing,
                ))
            })
            .clone()
    }

    /// One of the user's accounts, connected or not; `None` when unknown or another user's.
    /// The hot paths' ownership check (`/api/performance/*`, publishing's checks): the row comes
    /// from the account rows this process keeps in memory (the store's access cache, which
    /// every write to an account row evicts in the same operation, and other instances' writes
    /// by notification; see [`crate::store::access`]), and is read once on a miss. One shared copy
    /// per account, nothing per actor. A copy whose tokens do not open for its row shows as
    /// invalid ([`tokens::flag_unreadable`]); it is checked here rather than left to the
    /// actor, which holds the token it opened when it started.
    pub async fn find_owned_account(
        &self,
        user_id: Uuid,
        account_id: Uuid,
    ) -> Result<Option<Arc<entity::account::Model>>, sea_orm::DbErr> {
        let store = &self.roster.deps.store;
        let rows = store.access();
        let row = match rows.account(account_id) {
            Some(row) => row,
            None => {
                // Read before the query: a write that commits meanwhile keeps this row out.
                let seen = rows.generation();
                let Some(mut row) = store.find_account(account_id).await? else {
                    return Ok(None);
                };
                // Once per read of the row, not per use of the copy: a token that does not open
                // for its row shows the account as invalid to every reader of this copy.
                tokens::flag_unreadable(&self.roster.deps.cipher, &mut row);
                let row = Arc::new(row);
                rows.insert_account(seen, row.clone());
                row
            }
        };
        Ok((row.user_id == user_id).then_some(row))
    }

    /// Asks the account's actor (started if needed) to refresh its token; does not wait.
    pub async fn refresh_token(&self, account: &entity::account::Model) -> Result<(), ApiError> {
        self.ask(account, || RefreshToken).await
    }

    /// Forgets the account's actor so the next request starts a fresh one from the row (its
    /// tokens changed). A publish in flight finishes on the old actor, which then stops idle.
    pub fn reload(&self, account_id: Uuid) {
        if let Some((_, entry)) = self.roster.actors.remove(&account_id) {
            // Out of the map, the sweep no longer reaches it: it stops by itself once idle.
            entry.addr.do_send(Retire);
        }
    }

    /// The account's actor, started from its row if it is not running: on this thread when
    /// `here_if_worker` and this thread is an HTTP worker hosting actors, else on the arbiters.
    fn actor_for(
        &self,
        account: &entity::account::Model,
        here_if_worker: bool,
    ) -> Result<LiveActor, ApiError> {
        if let Some(entry) = self.roster.actors.get(&account.id)
            && entry.addr.connected()
        {
            return Ok(entry.live());
        }
        let platform = account.platform;
        // A token that does not open for this row (moved from another row, or sealed by a key
        // no longer configured) is refused like a revoked one, and never reaches the platform.
        let credentials = AccountCredentials::open(&self.roster.deps.cipher, account).map_err(|e| {
            tracing::warn!(account = %account.id, error = %e, "the account's stored token does not open");
            ApiError::new(
                ErrorCode::InvalidToken,
                "The platform access token of this account is no longer valid; reconnect the account",
            )
        })?;
        let limiter = self.limiter(account.id, platform);
        // An HTTP worker is an arbiter; should it not be one after all, the pool serves.
        let here = (here_if_worker && HOSTS_ACTORS.get())
            .then(Arbiter::try_current)
            .flatten();
        let (placement, arbiter) = match here {
            Some(here) => (Placement::RequestWorker, here),
            None => {
                let index = self.arbiter_index(account.id);
                (Placement::Arbiter(index), self.arbiters[index].clone())
            }
        };
        let start = || {
            let generation = self.generation.fetch_add(1, Ordering::Relaxed);
            let token = AccountToken::shared(
                credentials,
                account.token_expires_at,
                account.token_issued_at,
            );
            let health = HealthRecord::starting(
                platform,
                token.clone(),
                limiter.clone(),
                self.roster.deps.clock.now(),
            );
            let init = AccountActorInit {
                seat: ActorSeat {
                    account_id: account.id,
                    generation,
                    roster: self.roster.clone(),
                },
                platform,
                token,
                limiter,
            };
            let addr = AccountActor::start_in_arbiter(&arbiter, move |_| AccountActor::new(init));
            tracing::debug!(account = %account.id, generation, ?placement, "account actor started");
            ActorEntry {
                generation,
                addr,
                placement,
                health,
            }
        };
        // Under the map's entry lock, so two requests racing here start one actor, not two.
        let live = match self.roster.actors.entry(account.id) {
            Entry::Occupied(mut slot) => {
                if !slot.get().addr.connected() {
                    slot.insert(start());
                }
                slot.get().live()
            }
            Entry::Vacant(slot) => slot.insert(start()).live(),
        };
        Ok(live)
    }

    /// Forgets a dead actor so the next call starts a new one.
    fn forget(&self, account_id: Uuid, generation: u64) {
        self.roster
            .actors
            .remove_if(&account_id, |_, entry| entry.generation == generation);
    }

    /// Sends a message to the account's actor, restarting the actor once if it died.
    async fn ask<M>(
        &self,
        account: &entity::account::Model,
        make: impl Fn() -> M,
    ) -> Result<M::Result, ApiError>
    where
        M: actix::Message + Send + 'static,
        M::Result: Send,
        AccountActor: actix::Handler<M>,
    {
        for _ in 0..2 {
            let entry = self.actor_for(account, false)?;
            match entry.addr.send(make()).timeout(SEND_TIMEOUT).await {
                Ok(result) => return Ok(result),
                Err(MailboxError::Closed) => {
                    tracing::warn!(account = %account.id, "account actor was gone; restarting it");
                    self.forget(account.id, entry.generation);
                }
                Err(MailboxError::Timeout) => {
                    return Err(ApiError::service_unavailable(
                        "The account is busy; retry in a moment",
                    ));
                }
            }
        }
        Err(ApiError::service_unavailable(
            "The account worker could not be started; retry in a moment",
        ))
    }

    /// Takes `units` of the account's platform budget that every instance shares, or refuses
    /// as an empty limiter does. The actor's own limiter admits them again: it counts this
    /// instance's calls alone, so it never refuses what the shared budget admitted.
    async fn take_shared_budget(
        &self,
        account: &entity::account::Model,
        units: u32,
    ) -> Result<(), ApiError> {
        let deps = &self.roster.deps;
        if units == 0 || !deps.cluster.coordinates() {
            return Ok(());
        }
        let limiter = self.limiter(account.id, account.platform);
        match deps
            .cluster
            .take_budget(account.id, limiter.budget(units))
            .await?
        {
            Ok(()) => Ok(()),
            Err(retry_after) => {
                deps.metrics.inc(
                    "limiter_rejections_total",
                    &[("platform", account.platform.as_str())],
                );
                Err(limiter.refusal(retry_after))
            }
        }
    }

    /// Queues a publish on the account's actor. Returns the receiver of its outcome once
    /// queued, or the refusal (token dead, queue full, rate limited).
    pub async fn publish(
        &self,
        account: &entity::account::Model,
        mut spec: JobSpec,
    ) -> Result<oneshot::Receiver<JobOutcome>, ApiError> {
        // The shared budget is taken with the publish lease, in one statement, when the job
        // starts (see `publish::leased`).
        let limiter = self.limiter(account.id, account.platform);
        spec.budget = Some(limiter.budget(limiter.cost(&spec.plan)));
        let entry = self.actor_for(account, true)?;
        match entry
            .addr
            .send(Publish { spec })
            .timeout(SEND_TIMEOUT)
            .await
        {
            Ok(result) => result,
            Err(MailboxError::Closed) => {
                // The actor died between the liveness check and the send; the job went with
                // it before starting. Forget the actor; the caller may retry.
                self.forget(account.id, entry.generation);
                Err(ApiError::service_unavailable(
                    "The account worker restarted; retry the request",
                ))
            }
            // The message may still be delivered and the post published: not a plain "retry".
            Err(MailboxError::Timeout) => Err(ApiError::new(
                ErrorCode::Timeout,
                "The account did not acknowledge the post in time; it may still be published: check the publishing history before retrying",
            )),
        }
    }

    /// The account actor's health (starting it if needed).
    pub async fn health(&self, account: &entity::account::Model) -> Result<ActorHealth, ApiError> {
        // An actor replaced between finding it and its answer has no record: ask the new one.
        for _ in 0..2 {
            if let Some(health) = self.ask(account, || GetHealth).await? {
                return Ok(health);
            }
        }
        Err(ApiError::service_unavailable(
            "The account worker was being replaced; retry in a moment",
        ))
    }

    /// Health of every live actor, from the records the actors keep current (no messages, so
    /// it answers at once however many actors there are and however busy they are).
    pub fn all_health(&self) -> Vec<ActorHealth> {
        self.roster
            .actors
            .iter()
            .map(|entry| entry.value().health.health(*entry.key()))
            .collect()
    }

    /// Reads insights through the account's actor (its limiter, its token state) and waits
    /// for the result.
    pub async fn read_insights(
        &self,
        account: &entity::account::Model,
        summary: &AccountSummary,
        work: InsightsWork,
    ) -> Result<InsightsOutput, ApiError> {
        self.take_shared_budget(account, work.units(account.platform))
            .await?;
        let receiver = self
            .ask(account, || ReadInsights {
                work: work.clone(),
                account: summary.clone(),
            })
            .await??;
        receiver.await.map_err(|_| {
            ApiError::service_unavailable("The account worker stopped during the read; retry")
        })?
    }

    /// Runs one check of an unconfirmed publish on the account's actor (its limiter, its token
    /// state) and waits for its report.
    pub async fn check_unconfirmed(
        &self,
        account: &entity::account::Model,
        spec: CheckSpec,
    ) -> Result<CheckReport, ApiError> {
        self.take_shared_budget(account, check_units(account.platform))
            .await?;
        let receiver = self
            .ask(account, || CheckUnconfirmed { spec: spec.clone() })
            .await??;
        receiver.await.map_err(|_| {
            ApiError::service_unavailable("The account worker stopped during the check")
        })
    }
}

/// Asks every live actor, every `every`, to stop if it has been idle long enough (one timer for
/// all actors instead of one each, for the memory budget per idle actor). The actor decides, so
/// a publish, read or check in flight is never dropped. A full mailbox means a busy actor:
/// skipped. Ends once the supervisor and all its actors are gone.
async fn idle_sweep(roster: Weak<Roster>, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let Some(roster) = roster.upgrade() else {
            return;
        };
        for entry in roster.actors.iter() {
            let _ = entry.addr.try_send(StopIfIdle);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use chrono::Utc;

    use super::*;
    use crate::{
        actors::account::{ActorState, Crash, WhichThread},
        clock::SystemClock,
        config::PublishingConfig,
        crypto::TokenCipher,
        media::MediaFetcher,
        store::{NewAccount, Store},
    };

    async fn setup(idle_secs: u64) -> (tempfile::TempDir, Supervisor, entity::account::Model) {
        setup_with(idle_secs, None).await
    }

    async fn setup_with(
        idle_secs: u64,
        actor_arbiters: Option<usize>,
    ) -> (tempfile::TempDir, Supervisor, entity::account::Model) {
        let (dir, store) = crate::store::temp_sqlite_store(2).await;
        let now = Utc::now();
        let user = store
            .upsert_oidc_user("iss", "sub", Some("a@example.com"), None, now)
            .await
            .unwrap();
        let cipher = TokenCipher::from_config_value(&TokenCipher::generate_key()).unwrap();
        let account = insert_account(&store, &cipher, user.id, "1").await;
        let publishing = PublishingConfig {
            actor_idle_secs: idle_secs,
            actor_arbiters,
            ..PublishingConfig::default()
        };
        let cluster = crate::cluster::Cluster::new(
            store.clone(),
            &Default::default(),
            String::new(),
            "test".into(),
            Arc::new(SystemClock),
            Default::default(),
        );
        let supervisor = Supervisor::new(Arc::new(PublishDeps {
            store,
            clock: Arc::new(SystemClock),
            cipher,
            http: reqwest::Client::new(),
            media: MediaFetcher::new(&[], 1024).unwrap(),
            platforms: PlatformsConfig::default(),
            publishing,
            oauth: Default::default(),
            metrics: Default::default(),
            cluster,
        }));
        (dir, supervisor, account)
    }

    async fn insert_account(
        store: &Store,
        cipher: &TokenCipher,
        user_id: Uuid,
        external_id: &str,
    ) -> entity::account::Model {
        store
            .insert_account(
                NewAccount {
                    user_id,
                    platform: Platform::Threads,
                    external_id: external_id.into(),
                    display_name: "t".into(),
                    username: None,
                    account_type: None,
                    profile_picture_url: None,
                    tokens: crate::tokens::PlainTokens::new("token", None),
                    token_expires_at: None,
                    data_access_expires_at: None,
                    login_route: Default::default(),
                    token_issued_at: None,
                },
                cipher,
                Utc::now(),
            )
            .await
            .unwrap()
    }

    /// The arbiter the account's live actor runs on, from the supervisor's map.
    fn arbiter_of(supervisor: &Supervisor, account_id: Uuid) -> usize {
        match supervisor.roster.actors.get(&account_id).unwrap().placement {
            Placement::Arbiter(index) => index,
            Placement::RequestWorker => panic!("the actor runs on the caller's thread"),
        }
    }

    #[actix_web::test]
    async fn accounts_spread_over_the_arbiters_and_each_keeps_its_own() {
        let (_dir, supervisor, first) = setup_with(600, Some(3)).await;
        assert_eq!(supervisor.arbiters.len(), 3);
        assert!(supervisor.is_running());
        // Three threads, none of them the caller's.
        let mut threads = Vec::new();
        for arbiter in &supervisor.arbiters {
            let (tx, rx) = oneshot::channel();
            assert!(arbiter.spawn(async move {
                let _ = tx.send(std::thread::current().id());
            }));
            threads.push(rx.await.unwrap());
        }
        threads.push(std::thread::current().id());
        threads.sort_by_key(|id| format!("{id:?}"));
        threads.dedup();
        assert_eq!(threads.len(), 4, "one thread per arbiter");

        // 24 accounts: all on one of 3 arbiters would take odds of 3^-23.
        let deps = supervisor.deps().clone();
        let mut accounts = vec![first];
        for i in 0..23 {
            let id = format!("a{i}");
            accounts
                .push(insert_account(&deps.store, &deps.cipher, accounts[0].user_id, &id).await);
        }
        for account in &accounts {
            supervisor.health(account).await.unwrap();
        }
        let placed: Vec<usize> = accounts
            .iter()
            .map(|a| arbiter_of(&supervisor, a.id))
            .collect();
        let mut used = placed.clone();
        used.sort_unstable();
        used.dedup();
        assert!(used.len() >= 2, "accounts on arbiters {placed:?}");

        // The same account stays on its arbiter: asked again, and restarted after a crash.
        for (account, arbiter) in accounts.iter().zip(&placed) {
            supervisor.health(account).await.unwrap();
            assert_eq!(arbiter_of(&supervisor, account.id), *arbiter);
        }
        let before = supervisor
            .roster
            .actors
            .get(&accounts[0].id)
            .unwrap()
            .live();
        assert!(before.addr.send(Crash).await.is_err());
        supervisor.health(&accounts[0]).await.unwrap();
        let after = supervisor
            .roster
            .actors
            .get(&accounts[0].id)
            .unwrap()
            .live();
        assert_ne!(before.generation, after.generation);
        assert_eq!(after.placement, Placement::Arbiter(placed[0]));

        // An actor really runs on its own arbiter's thread: with another account's arbiter
        // blocked, it still answers (`health` gives up with an error after SEND_TIMEOUT if it
        // shared the blocked thread).
        let busy = &accounts[0];
        let free = accounts
            .iter()
            .zip(&placed)
            .find(|(_, arbiter)| **arbiter != placed[0])
            .map(|(account, _)| account)
            .unwrap();
        let (started_tx, started_rx) = oneshot::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        assert!(supervisor.arbiters[placed[0]].spawn(async move {
            let _ = started_tx.send(());
            // Blocks the whole thread, as a long synchronous step of an upload would.
            let _ = release_rx.recv();
        }));
        started_rx.await.unwrap();
        let health = supervisor.health(free).await.unwrap();
        assert_eq!(health.account_id, free.id);
        release_tx.send(()).unwrap();
        let health = supervisor.health(busy).await.unwrap();
        assert_eq!(health.account_id, busy.id);
    }

    /// An HTTP worker hosts the actors its publishes start: the actor runs on the worker's
    /// thread, not on one of the supervisor's arbiters. Anything else a worker asks for (here
    /// a health read) starts its actor on the arbiters, as does a thread that is not a worker.
    #[actix_web::test]
    async fn an_actor_a_worker_starts_to_publish_runs_on_that_worker() {
        let (_dir, supervisor, first) = setup(600).await;
        let supervisor = Arc::new(supervisor);
        let deps = supervisor.deps().clone();
        let second = insert_account(&deps.store, &deps.cipher, first.user_id, "2").await;
        let third = insert_account(&deps.store, &deps.cipher, first.user_id, "3").await;
        // A thread that stands for a worker: an arbiter of the test's, marked as the server
        // marks its workers.
        let worker = Arbiter::new();
        let (tx, rx) = oneshot::channel();
        let (on_worker, account, other) = (supervisor.clone(), first.clone(), third.clone());
        assert!(worker.spawn(async move {
            host_actors_here(&PlatformsConfig::default());
            // The publish path's start (`Supervisor::publish`), without a job to run.
            let started = on_worker.actor_for(&account, true).is_ok();
            let read = on_worker.health(&other).await.is_ok();
            let _ = tx.send((started && read, std::thread::current().id()));
        }));
        let (started, worker_thread) = rx.await.unwrap();
        assert!(started);
        let entry = supervisor.roster.actors.get(&first.id).unwrap().live();
        assert_eq!(entry.placement, Placement::RequestWorker);
        assert_eq!(entry.addr.send(WhichThread).await.unwrap(), worker_thread);
        let read = supervisor.roster.actors.get(&third.id).unwrap().live();
        assert!(matches!(read.placement, Placement::Arbiter(_)));
        assert_ne!(read.addr.send(WhichThread).await.unwrap(), worker_thread);
        // Asked from here (not a worker), even for a publish, the actor goes to the pool.
        supervisor.actor_for(&second, true).unwrap();
        let entry = supervisor.roster.actors.get(&second.id).unwrap().live();
        let Placement::Arbiter(index) = entry.placement else {
            panic!("started on the caller's thread");
        };
        let (tx, rx) = oneshot::channel();
        assert!(supervisor.arbiters[index].spawn(async move {
            let _ = tx.send(std::thread::current().id());
        }));
        let pool_thread = rx.await.unwrap();
        assert_eq!(entry.addr.send(WhichThread).await.unwrap(), pool_thread);
        assert_ne!(pool_thread, worker_thread);
        worker.stop();
    }

    #[actix_web::test]
    async fn a_crashed_actor_is_replaced_on_the_next_message() {
        let (_dir, supervisor, account) = setup(600).await;
        let health = supervisor.health(&account).await.unwrap();
        assert_eq!(health.state, ActorState::Idle);
        let first = supervisor.roster.actors.get(&account.id).unwrap().live();
        // The handler panics: the actor dies and its mailbox closes.
        assert!(first.addr.send(Crash).await.is_err());
        let health = supervisor.health(&account).await.unwrap();
        assert_eq!(health.account_id, account.id);
        let second = supervisor.roster.actors.get(&account.id).unwrap().live();
        assert_ne!(first.generation, second.generation);
        assert_eq!(supervisor.live_actors(), 1);
        // One health record: the new actor's replaced the dead one's with its entry.
        assert_eq!(supervisor.all_health().len(), 1);
    }

    #[actix_web::test]
    async fn an_idle_actor_stops_and_starts_again_on_use() {
        let (_dir, supervisor, account) = setup(1).await;
        supervisor.health(&account).await.unwrap();
        assert_eq!(supervisor.live_actors(), 1);
        let mut stopped = false;
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if supervisor.live_actors() == 0 {
                stopped = true;
                break;
            }
        }
        assert!(stopped, "idle actor stopped");
        supervisor.health(&account).await.unwrap();
        assert_eq!(supervisor.live_actors(), 1);
    }

    /// A reloaded account's old actor is out of the map the sweep walks: it stops by itself
    /// once idle (and the next request starts a fresh one).
    #[actix_web::test]
    async fn a_reloaded_actor_stops_by_itself_once_idle() {
        let (_dir, supervisor, account) = setup(1).await;
        supervisor.health(&account).await.unwrap();
        let old = supervisor.roster.actors.get(&account.id).unwrap().live();
        supervisor.reload(account.id);
        assert_eq!(supervisor.live_actors(), 0);
        // Its health record left the roster with its entry: the operator view no longer lists
        // it, and the actor itself, asked directly, has no record to answer from.
        assert!(supervisor.all_health().is_empty());
        assert!(old.addr.send(GetHealth).await.unwrap().is_none());
        let mut stopped = false;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if !old.addr.connected() {
                stopped = true;
                break;
            }
        }
        assert!(stopped, "the reloaded actor stopped");
        let health = supervisor.health(&account).await.unwrap();
        assert_eq!(health.account_id, account.id);
        let new = supervisor.roster.actors.get(&account.id).unwrap().live();
        assert_ne!(new.generation, old.generation);
    }

    #[actix_web::test]
    async fn concurrent_first_uses_start_one_actor() {
        let (_dir, supervisor, account) = setup(600).await;
        let asks = (0..20).map(|_| supervisor.health(&account));
        let results = futures_util::future::join_all(asks).await;
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(supervisor.live_actors(), 1);
        assert_eq!(supervisor.generation.load(Ordering::Relaxed), 1);
    }
}
