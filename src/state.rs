//! What the HTTP handlers share: one [`AppState`] per process, built by
//! [`crate::Application::build`] before the workers start.

use std::sync::{Arc, OnceLock};

use actix::Addr;
use secrecy::SecretString;

use crate::{
    actors::{
        self,
        collector::CollectorActor,
        last_used::LastUsedRecorder,
        scheduler::{SchedulerActor, Wake},
        supervisor::Supervisor,
        token_keeper::TokenKeeper,
    },
    clock::SharedClock,
    collection::schedule::DailySchedule,
    config::Config,
    crypto::{SessionSigner, TokenCipher},
    metrics,
    oidc::OidcClient,
    store::Store,
};

/// Everything handlers share. Built once, before the HTTP workers start (one copy per process,
/// not per worker).
pub struct AppState {
    pub config: Arc<Config>,
    pub store: Store,
    pub clock: SharedClock,
    pub signer: SessionSigner,
    pub cipher: TokenCipher,
    pub operator_token: SecretString,
    pub oidc: OidcClient,
    pub last_used: LastUsedRecorder,
    /// Base URL users reach us at, without a trailing slash.
    pub public_url: String,
    /// Whether cookies carry `Secure` (public URL is https).
    pub cookie_secure: bool,
    /// Routes publishing (and later performance calls) to the account actors.
    pub supervisor: Arc<Supervisor>,
    pub metrics: Arc<metrics::Metrics>,
    /// The scheduler actor, once started (absent when `scheduler.enabled` is false).
    pub scheduler: Arc<OnceLock<Addr<SchedulerActor>>>,
    /// The collector actor, once started (absent when `collector.enabled` is false).
    pub collector: Arc<OnceLock<Addr<CollectorActor>>>,
    /// The reconciler actor (publishes still processing at our deadline), once started.
    pub reconciler: Arc<OnceLock<Addr<actors::reconciler::ReconcilerActor>>>,
    /// The token keeper, once started (its status is in the operator's actor view).
    pub token_keeper: Arc<OnceLock<Addr<TokenKeeper>>>,
    /// When the daily collection runs (`collector.run_at` in `collector.time_zone`).
    pub collection_schedule: DailySchedule,
    /// This process's id as a claimant of scheduled posts: `host:pid:random`.
    pub instance_id: String,
}

impl AppState {
    /// Tells the scheduler to look at the table now (a post was scheduled).
    pub fn wake_scheduler(&self) {
        if let Some(scheduler) = self.scheduler.get() {
            // A full mailbox means it is about to look anyway.
            let _ = scheduler.try_send(Wake);
        }
    }
}
