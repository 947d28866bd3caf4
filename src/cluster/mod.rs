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
    store::{BudgetGrant, LeaseGrant, SilentClaims, Store},
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

/// Why a lease could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("instance {holder} is still publishing to this account")]
    Busy { holder: String },
    #[error("this instance cannot reach the database to renew its membership")]
    NotMember,
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

    /// Takes `units` of the account's budget (`capacity` units per `period`), shared by every
    /// instance; on refusal, the seconds until they are back. Always admitted when the cluster
    /// does not coordinate (the actor's own limiter decides).
    pub async fn take_budget(
        &self,
        account_id: Uuid,
        units: u32,
        capacity: u32,
        period: Duration,
    ) -> Result<Result<(), u64>, DbErr> {
        if !self.coordinates {
            return Ok(Ok(()));
        }
        let capacity = capacity.max(1);
        let units = units.clamp(1, capacity);
        let period_ms = i64::try_from(period.as_millis()).unwrap_or(i64::MAX);
        // One unit's interval, rounded up: the shared limiter is never the looser one.
        let interval_ms = (period_ms + i64::from(capacity) - 1) / i64::from(capacity);
        let cost_ms = interval_ms * i64::from(units);
        match self
            .store
            .take_account_budget(account_id, cost_ms, interval_ms * i64::from(capacity))
            .await?
        {
            BudgetGrant::Admitted => Ok(Ok(())),
            BudgetGrant::Refused { retry_after_ms } => {
                self.metrics.inc("cluster_budget_rejections_total", &[]);
                Ok(Err((retry_after_ms as u64).div_ceil(1_000).max(1)))
            }
        }
    }

    /// Takes the account's publish lease, waiting up to `wait` while another live instance
    /// holds it (a dead one loses it: see [`ClusterConfig::silence`]).
    pub async fn hold(
        self: &Arc<Self>,
        account_id: Uuid,
        wait: Duration,
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
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(5);
        let mut waited = false;
        loop {
            let refusal = match self.trusted() {
                None => LeaseError::NotMember,
                Some(generation) => match self
                    .store
                    .take_account_lease(account_id, &self.instance, self.silence_ms())
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
        tokio::spawn(async move {
            if let Err(error) = cluster
                .store
                .release_account_lease(account_id, &cluster.instance, epoch)
                .await
            {
                tracing::warn!(%error, %account_id, "cannot release the publish lease; it passes on when this instance stops");
            }
        });
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
