//! This instance among the others sharing its PostgreSQL database.
//!
//! Membership: each instance renews a row every fifth of `cluster.takeover_secs` (T). One silent
//! for 3T/5 is dead; every T/10 the others look for what it held and take it over, so its work
//! goes on within T. An instance trusts itself only until T/2 after its latest renewal was sent:
//! one cut off from the database stops publishing before anyone can take over from it.
//!
//! Per account, PostgreSQL holds the publish lease (one instance publishes or refreshes the
//! token at a time, fenced by an epoch) and the platform limiter's state, so the budget holds
//! across instances and a handover never opens a fresh one. On SQLite there is one instance:
//! the account actor's own limiter and queue are the whole truth, and nothing is written.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use chrono::{DateTime, Utc};
use dashmap::DashMap;
use sea_orm::{DbBackend, DbErr};
use serde::Serialize;
use uuid::Uuid;

use crate::{
    clock::SharedClock,
    config::ClusterConfig,
    metrics::Metrics,
    store::{BudgetGrant, LeaseAsk, LeaseGrant, SilentClaims, Store},
};

/// Longest pause between two attempts at a lease another instance holds.
const MAX_LEASE_POLL: Duration = Duration::from_millis(100);

/// Membership rows silent this long are deleted (the operator view forgets the instance).
const FORGET_AFTER: Duration = Duration::from_secs(24 * 3_600);

/// How far this instance may trust its own membership.
#[derive(Debug, Default)]
struct Trust {
    /// Until when (the latest successful renewal's send time + half the takeover time); `None`
    /// before the first.
    until: Option<Instant>,
    /// Raised whenever trust lapsed before a renewal: leases taken under an earlier
    /// generation may have been taken over meanwhile and no longer fence anything.
    generation: u64,
    /// When the latest renewal succeeded (wall clock, for the operator view).
    renewed_at: Option<DateTime<Utc>>,
}

/// This instance's place in the cluster.
pub struct Cluster {
    instance: String,
    address: String,
    started_at: DateTime<Utc>,
    store: Store,
    config: ClusterConfig,
    /// Whether leases and budgets are kept in the database (PostgreSQL).
    coordinates: bool,
    trust: Mutex<Trust>,
    /// Accounts whose publish lease this instance holds, with the epoch.
    held: DashMap<Uuid, i64>,
    /// Leases given back and not yet written: one statement frees all those that gathered
    /// while the previous one ran.
    releases: Mutex<Releases>,
    /// Lease asks waiting for a statement: those that arrive while one runs go together in
    /// the next (one round trip and one commit for all).
    asks: Mutex<Asks>,
    /// The service's clock (claims' leases are in its time).
    clock: SharedClock,
    /// Set by a clean stop: renewals end, and trust with them.
    leaving: std::sync::atomic::AtomicBool,
    metrics: Arc<Metrics>,
}

/// An instance as the operator view shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Member {
    pub instance: String,
    pub address: String,
    #[schema(value_type = String, format = DateTime)]
    pub started_at: DateTime<Utc>,
    /// Seconds since its latest membership renewal.
    pub silent_secs: f64,
    /// Renewed within three fifths of the takeover time: its leases and claims are its own.
    pub live: bool,
    /// The instance that answered.
    pub this: bool,
    /// Accounts whose publish lease it holds (publishing or refreshing their token now).
    pub leases_held: u64,
}

/// The cluster as the operator view shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ClusterView {
    /// The instance that answered.
    pub instance: String,
    /// An instance silent this long is dead and its work taken over.
    pub takeover_secs: u64,
    /// Whether accounts' publish leases and budgets are shared through the database
    /// (PostgreSQL); on SQLite one instance holds everything.
    pub shared: bool,
    /// Every instance that renewed its membership in the last day, latest first.
    pub members: Vec<Member>,
}

/// Units of an account's platform budget, and the budget's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub units: u32,
    /// Units in one full period.
    pub capacity: u32,
    pub period: Duration,
    /// What a unit is: `calls` or `quota units`.
    pub unit: &'static str,
}

impl Budget {
    /// The 429 `RateLimitExceeded` of a budget used up, with `retry_after` (seconds) and the
    /// budget's headers.
    pub fn refusal(&self, retry_after: u64) -> crate::error::ApiError {
        let reset = chrono::Utc::now().timestamp() + retry_after as i64;
        crate::error::ApiError::rate_limited(
            retry_after,
            Some(crate::error::RateLimitHeaders {
                limit: i64::from(self.capacity),
                remaining: 0,
                reset,
            }),
        )
        .with_details(format!(
            "The account's platform limit ({} {} per {} s) is used up",
            self.capacity,
            self.unit,
            self.period.as_secs()
        ))
    }

    /// The GCRA cost and bucket, in milliseconds: units × one unit's interval (rounded up, so
    /// the shared limiter is never the looser one), and capacity × that interval.
    fn gcra(&self) -> (i64, i64) {
        let capacity = self.capacity.max(1);
        let units = self.units.min(capacity);
        let period_ms = i64::try_from(self.period.as_millis()).unwrap_or(i64::MAX);
        let interval_ms = (period_ms + i64::from(capacity) - 1) / i64::from(capacity);
        (
            interval_ms * i64::from(units),
            interval_ms * i64::from(capacity),
        )
    }
}

/// Leases waiting to be written free.
#[derive(Debug, Default)]
struct Releases {
    /// (account, epoch) pairs.
    waiting: Vec<(Uuid, i64)>,
    /// A task is writing them.
    writing: bool,
}

type AskReply = tokio::sync::oneshot::Sender<Result<LeaseGrant, DbErr>>;

/// Lease asks waiting for a statement.
#[derive(Debug, Default)]
struct Asks {
    waiting: std::collections::VecDeque<(LeaseAsk, AskReply)>,
    /// A task is running them.
    running: bool,
}

impl Asks {
    /// The next batch: the waiting asks, one per account (a second ask of an account waits
    /// for the next batch, in order); `None`, and marked idle, when none wait.
    fn next_batch(&mut self) -> Option<Vec<(LeaseAsk, AskReply)>> {
        if self.waiting.is_empty() {
            self.running = false;
            return None;
        }
        let mut seen = std::collections::HashSet::new();
        let mut batch = Vec::new();
        let mut later = std::collections::VecDeque::new();
        for (ask, reply) in self.waiting.drain(..) {
            if seen.insert(ask.account_id) {
                batch.push((ask, reply));
            } else {
                later.push_back((ask, reply));
            }
        }
        self.waiting = later;
        Some(batch)
    }
}

/// Why a lease could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("instance {holder} is still publishing to this account")]
    Busy { holder: String },
    #[error("this instance cannot reach the database to renew its membership")]
    NotMember,
    /// The account's shared platform budget is used up; enough is back in this many seconds.
    #[error("the account's platform budget is used up")]
    OverBudget { retry_after_secs: u64 },
    #[error("database: {0}")]
    Db(#[from] DbErr),
}

impl Cluster {
    pub fn new(
        store: Store,
        config: &ClusterConfig,
        address: String,
        instance: String,
        clock: SharedClock,
        metrics: Arc<Metrics>,
    ) -> Arc<Self> {
        let started_at = clock.now();
        let coordinates = store.backend() == DbBackend::Postgres;
        Arc::new(Self {
            instance,
            address,
            started_at,
            store,
            config: config.clone(),
            coordinates,
            trust: Mutex::new(Trust::default()),
            held: DashMap::new(),
            releases: Mutex::new(Releases::default()),
            asks: Mutex::new(Asks::default()),
            clock,
            leaving: Default::default(),
            metrics,
        })
    }

    pub fn instance(&self) -> &str {
        &self.instance
    }

    pub fn takeover(&self) -> Duration {
        self.config.takeover()
    }

    /// How often dead instances' work is looked for (see [`ClusterConfig::look_every`]).
    pub fn look_every(&self) -> Duration {
        self.config.look_every()
    }

    /// Whether leases and budgets are shared through the database (several instances may run).
    pub fn coordinates(&self) -> bool {
        self.coordinates
    }

    /// How long a dead instance has been silent, in milliseconds (see
    /// [`ClusterConfig::silence`]).
    fn silence_ms(&self) -> i64 {
        i64::try_from(self.config.silence().as_millis()).unwrap_or(i64::MAX)
    }

    /// Renews this instance's membership. Trust runs from when the renewal was sent, not
    /// answered: the database recorded it no earlier.
    pub async fn renew(&self) -> Result<(), DbErr> {
        if self.leaving.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(());
        }
        let sent = Instant::now();
        let result = self
            .store
            .renew_membership(&self.instance, &self.address, self.started_at)
            .await;
        let mut trust = self.trust.lock().unwrap_or_else(|p| p.into_inner());
        if trust.until.is_some_and(|until| Instant::now() >= until) {
            trust.generation += 1;
            trust.until = None;
        }
        result?;
        trust.until = Some(sent + self.config.trust());
        trust.renewed_at = Some(Utc::now());
        Ok(())
    }

    /// Leaves the cluster (a clean stop): what this instance held is free at once.
    pub async fn leave(&self) {
        self.leaving
            .store(true, std::sync::atomic::Ordering::Release);
        self.trust.lock().unwrap_or_else(|p| p.into_inner()).until = None;
        if let Err(error) = self.store.leave_cluster(&self.instance).await {
            tracing::warn!(%error, "cannot remove this instance's membership");
        }
    }

    /// Renews the membership (every fifth of the takeover time) and looks for dead instances'
    /// claims (every tenth) until a clean stop, or the last handle is gone. Each on its own
    /// task: a slow look never delays a renewal.
    pub fn spawn_heartbeat(self: &Arc<Self>) {
        let renewing = Arc::downgrade(self);
        every(self.config.renew_every(), move || {
            let cluster = renewing.clone();
            async move {
                let cluster = cluster.upgrade()?;
                if cluster.leaving.load(std::sync::atomic::Ordering::Acquire) {
                    return None;
                }
                if let Err(error) = cluster.renew().await {
                    tracing::warn!(%error, "cannot renew this instance's membership");
                }
                Some(())
            }
        });
        let looking = Arc::downgrade(self);
        every(self.config.look_every(), move || {
            let cluster = looking.clone();
            async move {
                let cluster = cluster.upgrade()?;
                if cluster.leaving.load(std::sync::atomic::Ordering::Acquire) {
                    return None;
                }
                // Only a member acts for the others: one cut off may not see them alive.
                if cluster.is_member() {
                    cluster.take_over_silent_claims().await;
                }
                Some(())
            }
        });
    }

    /// Hands back the claims of dead instances (silent for three fifths of the takeover time),
    /// so that their usual takers here or elsewhere take them over (see
    /// [`Store::expire_silent_claims`]).
    pub async fn take_over_silent_claims(&self) {
        match self
            .store
            .expire_silent_claims(self.clock.now(), self.silence_ms())
            .await
        {
            Ok(SilentClaims {
                scheduled,
                checks,
                webhooks,
            }) => {
                for (what, count) in [
                    ("scheduled", scheduled),
                    ("check", checks),
                    ("webhook", webhooks),
                ] {
                    if count > 0 {
                        tracing::warn!(what, count, "took over the claims of a silent instance");
                    }
                    for _ in 0..count {
                        self.metrics
                            .inc("cluster_takeovers_total", &[("what", what)]);
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "cannot look for the claims of silent instances"),
        }
    }

    /// The current trust generation, if this instance may act on its leases now.
    fn trusted(&self) -> Option<u64> {
        let mut trust = self.trust.lock().unwrap_or_else(|p| p.into_inner());
        match trust.until {
            Some(until) if Instant::now() < until => Some(trust.generation),
            Some(_) => {
                trust.generation += 1;
                trust.until = None;
                None
            }
            None => None,
        }
    }

    /// Whether this instance's membership is current (for `/readyz`).
    pub fn is_member(&self) -> bool {
        self.trusted().is_some()
    }

    /// When the latest membership renewal succeeded.
    pub fn renewed_at(&self) -> Option<DateTime<Utc>> {
        self.trust
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .renewed_at
    }

    /// Accounts whose publish lease this instance holds now.
    pub fn leases_held(&self) -> usize {
        self.held.len()
    }

    /// Every instance of the cluster, this one included.
    pub async fn members(&self) -> Result<Vec<Member>, DbErr> {
        let forget = i64::try_from(FORGET_AFTER.as_millis()).unwrap_or(i64::MAX);
        let silence = self.silence_ms();
        Ok(self
            .store
            .members(forget)
            .await?
            .into_iter()
            .map(|row| Member {
                this: row.instance == self.instance,
                live: row.silent_ms < silence,
                silent_secs: row.silent_ms.max(0) as f64 / 1_000.0,
                leases_held: row.leases.max(0) as u64,
                instance: row.instance,
                address: row.address,
                started_at: row.started_at,
            })
            .collect())
    }

    /// The operator view of the cluster.
    pub async fn view(&self) -> Result<ClusterView, DbErr> {
        Ok(ClusterView {
            instance: self.instance.clone(),
            takeover_secs: self.config.takeover_secs,
            shared: self.coordinates,
            members: self.members().await?,
        })
    }

    /// Takes `budget` of the account's platform budget that every instance shares: `Ok(Err(s))`
    /// is a refusal, with the seconds until enough is back. Without coordination (SQLite) it
    /// admits: the account actor's own limiter is the whole budget.
    pub async fn take_budget(
        &self,
        account_id: Uuid,
        budget: Budget,
    ) -> Result<Result<(), u64>, DbErr> {
        if !self.coordinates {
            return Ok(Ok(()));
        }
        let (cost_ms, period_ms) = budget.gcra();
        match self
            .store
            .take_account_budget(account_id, cost_ms, period_ms)
            .await?
        {
            BudgetGrant::Admitted => Ok(Ok(())),
            BudgetGrant::Refused { retry_after_ms } => Ok(Err(self.refused(retry_after_ms))),
        }
    }

    /// Counts a refusal of the shared budget; the whole seconds until enough is back.
    fn refused(&self, retry_after_ms: i64) -> u64 {
        self.metrics.inc("cluster_budget_rejections_total", &[]);
        (retry_after_ms.max(1) as u64).div_ceil(1_000)
    }

    /// Frees the lease `epoch` of `account_id` in the background. Releases that arrive while
    /// one statement runs go together in the next, so a busy instance frees many leases per
    /// round trip.
    fn queue_release(self: &Arc<Self>, account_id: Uuid, epoch: i64) {
        let start = {
            let mut releases = self.releases.lock().unwrap_or_else(|p| p.into_inner());
            releases.waiting.push((account_id, epoch));
            !std::mem::replace(&mut releases.writing, true)
        };
        if !start {
            return;
        }
        let cluster = self.clone();
        tokio::spawn(async move {
            loop {
                let batch = {
                    let mut releases = cluster.releases.lock().unwrap_or_else(|p| p.into_inner());
                    if releases.waiting.is_empty() {
                        releases.writing = false;
                        return;
                    }
                    std::mem::take(&mut releases.waiting)
                };
                if let Err(error) = cluster
                    .store
                    .release_account_leases(&cluster.instance, &batch)
                    .await
                {
                    tracing::warn!(%error, leases = batch.len(), "cannot release publish leases; they pass on when this instance stops");
                }
            }
        });
    }

    /// Asks for a lease (and budget) in the next batch of asks.
    async fn ask_lease(self: &Arc<Self>, ask: LeaseAsk) -> Result<LeaseGrant, DbErr> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let start = {
            let mut asks = self.asks.lock().unwrap_or_else(|p| p.into_inner());
            asks.waiting.push_back((ask, reply));
            !std::mem::replace(&mut asks.running, true)
        };
        if start {
            let cluster = self.clone();
            tokio::spawn(async move { cluster.run_asks().await });
        }
        answer
            .await
            .map_err(|_| DbErr::Custom("the lease asks stopped before this one ran".into()))?
    }

    /// Runs the waiting asks, batch after batch, until none wait.
    async fn run_asks(&self) {
        loop {
            let Some(batch) = self
                .asks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .next_batch()
            else {
                return;
            };
            let asks: Vec<LeaseAsk> = batch.iter().map(|(ask, _)| *ask).collect();
            match self
                .store
                .take_account_leases(&self.instance, self.silence_ms(), &asks)
                .await
            {
                Ok(grants) => {
                    for ((_, reply), grant) in batch.into_iter().zip(grants) {
                        let _ = reply.send(Ok(grant));
                    }
                }
                Err(error) => {
                    for (_, reply) in batch {
                        let _ = reply.send(Err(DbErr::Custom(error.to_string())));
                    }
                }
            }
        }
    }

    /// Takes the account's publish lease, waiting up to `wait` while another live instance
    /// holds it (a dead one loses it: see [`ClusterConfig::silence`]), and with it `budget`
    /// of the account's shared platform budget, if given: both or neither.
    pub async fn hold(
        self: &Arc<Self>,
        account_id: Uuid,
        wait: Duration,
        budget: Option<Budget>,
    ) -> Result<AccountLease, LeaseError> {
        if !self.coordinates {
            return Ok(AccountLease {
                cluster: None,
                account_id,
                epoch: 0,
                generation: 0,
                stored_token_expiry: None,
            });
        }
        let (cost_ms, period_ms) = budget.map_or((0, 1), |budget| budget.gcra());
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(5);
        let mut waited = false;
        loop {
            let refusal = match self.trusted() {
                None => LeaseError::NotMember,
                Some(generation) => match self
                    .ask_lease(LeaseAsk {
                        account_id,
                        cost_ms,
                        period_ms,
                    })
                    .await?
                {
                    LeaseGrant::Held {
                        epoch,
                        taken_over,
                        token_expires_at,
                    } => {
                        if let Some(from) = taken_over {
                            tracing::warn!(%account_id, %from, "took over the publish lease of a silent instance");
                            self.metrics
                                .inc("cluster_takeovers_total", &[("what", "lease")]);
                        }
                        if waited {
                            self.metrics.inc("cluster_lease_waits_total", &[]);
                        }
                        if self.held.insert(account_id, epoch).is_none() {
                            self.metrics.gauge_add("cluster_leases_held", &[], 1);
                        }
                        return Ok(AccountLease {
                            cluster: Some(self.clone()),
                            account_id,
                            epoch,
                            generation,
                            stored_token_expiry: Some(token_expires_at),
                        });
                    }
                    LeaseGrant::Busy { holder } => LeaseError::Busy { holder },
                    LeaseGrant::OverBudget { retry_after_ms } => {
                        return Err(LeaseError::OverBudget {
                            retry_after_secs: self.refused(retry_after_ms),
                        });
                    }
                },
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(refusal);
            }
            waited = true;
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(MAX_LEASE_POLL);
        }
    }
}

/// Runs `tick` every `period` (the first after one period) until it answers `None`.
fn every<F, Fut>(period: Duration, mut tick: F)
where
    F: FnMut() -> Fut + 'static,
    Fut: std::future::Future<Output = Option<()>> + 'static,
{
    actix_rt::spawn(async move {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            if tick().await.is_none() {
                return;
            }
        }
    });
}

/// An account's publish lease, held until released. While it is [`AccountLease::valid`], no
/// other instance can take it.
pub struct AccountLease {
    cluster: Option<Arc<Cluster>>,
    account_id: Uuid,
    epoch: i64,
    generation: u64,
    /// The account's stored token expiry when the lease was taken (`None`: not read).
    stored_token_expiry: Option<Option<DateTime<Utc>>>,
}

impl AccountLease {
    /// Whether the stored token is another than the one expiring at `expires_at` (another
    /// instance refreshed it): the caller must read it again before calling the platform.
    pub fn token_changed(&self, expires_at: Option<DateTime<Utc>>) -> bool {
        self.stored_token_expiry
            .is_some_and(|stored| stored != expires_at)
    }

    /// Whether this instance still holds the lease for sure: its membership has been current
    /// since the lease was taken. A lease outliving its owner's trust fences nothing and must
    /// not be acted on.
    pub fn valid(&self) -> bool {
        match &self.cluster {
            None => true,
            Some(cluster) => cluster.trusted() == Some(self.generation),
        }
    }

    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// Gives the lease back (in the background: nothing waits for it).
    pub fn release(mut self) {
        let Some(cluster) = self.cluster.take() else {
            return;
        };
        let (account_id, epoch) = (self.account_id, self.epoch);
        if cluster
            .held
            .remove_if(&account_id, |_, held| *held == epoch)
            .is_some()
        {
            cluster.metrics.gauge_add("cluster_leases_held", &[], -1);
        }
        cluster.queue_release(account_id, epoch);
    }
}

impl Drop for AccountLease {
    fn drop(&mut self) {
        if self.cluster.is_some() {
            let lease = AccountLease {
                cluster: self.cluster.take(),
                account_id: self.account_id,
                epoch: self.epoch,
                generation: self.generation,
                stored_token_expiry: None,
            };
            lease.release();
        }
    }
}
