//! The HTTP state: one [`AppState`] per process, built by [`crate::Application::build`] after
//! the services and the background actors, before the workers start. It holds the services the
//! handlers call and what only handlers use (session signing, sign-in, cookies, the public URL).
//! Nothing below the web floor sees it: the actors and use cases get their services instead.

use std::sync::Arc;

use secrecy::SecretString;

use crate::{
    actors::supervisor::Supervisor,
    background::BackgroundActors,
    clock::SharedClock,
    cluster::Cluster,
    config::Config,
    crypto::{SessionSigner, TokenCipher},
    metrics,
    oidc::OidcClient,
    services::collection::CollectionService,
    services::connection::ConnectionService,
    services::publishing::PublishingService,
    services::scheduling::SchedulingService,
    store::Store,
    store::last_used::LastUsedRecorder,
};

/// Everything handlers share. Built once, before the HTTP workers start (one copy per process,
/// not per worker).
pub struct AppState {
    pub config: Arc<Config>,
    /// Reads the pages and handlers make directly (lists, history, keys, usage).
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
    /// The account actors (their health view, and what the operator pages ask of them).
    pub supervisor: Arc<Supervisor>,
    pub metrics: Arc<metrics::Metrics>,
    /// Publishing now and scheduling (`POST /v2/posts`, the compose form).
    pub publishing: Arc<PublishingService>,
    /// What the scheduler works with (settling expired claims, its claimant id).
    pub scheduling: Arc<SchedulingService>,
    /// Performance collection (the manual `/api/cron/*` runs, the daily schedule).
    pub collection: Arc<CollectionService>,
    /// Metering calls and reading usage.
    pub usage: Arc<crate::services::usage::UsageService>,
    /// `Idempotency-Key`s of `POST /v2/posts`: claims, kept answers, replays.
    pub idempotency: Arc<crate::services::idempotency::IdempotencyService>,
    /// Connecting accounts over OAuth.
    pub connection: Arc<ConnectionService>,
    /// Webhook endpoints, their delivery log and replays.
    pub webhooks: Arc<crate::services::webhooks::WebhookService>,
    /// Uploaded media: uploads, the user's library, the public file URLs.
    pub media: Arc<crate::services::media::MediaService>,
    /// This instance among those sharing the database (membership, leases held).
    pub cluster: Arc<Cluster>,
    /// The background actors, once running (operator view, readiness, draining).
    pub background: BackgroundActors,
    /// The per-address limit on anonymous sign-in requests.
    pub signin_limiter: Arc<crate::web::signin_limit::SigninLimiter>,
}

impl AppState {
    /// Tells the scheduler to look at the table now (a post was scheduled).
    pub fn wake_scheduler(&self) {
        self.publishing.wake_scheduler();
    }
}
