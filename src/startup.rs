//! Building and running the service: [`Application::build`] assembles everything, in this
//! order: the store and clients, the services, the background actors (their mailboxes first, so
//! the services can hold their addresses), then the HTTP state and the server; [`app`] is one
//! HTTP worker's application (routes and middleware stack); [`shutdown`] drains on a signal.
//! `main`, the tests and the benchmarks all start the service through it.

pub mod healthcheck;
pub mod shutdown;

use std::{cell::RefCell, net::TcpListener, sync::Arc, time::Duration};

use actix::Actor;
use actix_web::{
    App, HttpServer,
    body::MessageBody,
    dev::{Server, ServerHandle, ServiceFactory, ServiceRequest, ServiceResponse},
    http::KeepAlive,
    middleware::from_fn,
    web,
};
use secrecy::{ExposeSecret, SecretString};

use crate::{
    AppState,
    actors::supervisor::Supervisor,
    background::collector::CollectorActor,
    background::reconciler::ReconcilerActor,
    background::scheduler::SchedulerActor,
    background::sweeper::Sweeper,
    background::token_keeper::TokenKeeper,
    background::webhook_delivery::WebhookDeliveryActor,
    background::{BackgroundActors, Mailbox, PendingBackground},
    clock::{SharedClock, SystemClock},
    cluster::Cluster,
    config::{Config, ConfigError},
    crypto::{SessionSigner, TokenCipher},
    media::MediaFetcher,
    media::{objects::MediaObjects, own::OwnMedia},
    oidc::OidcClient,
    publish::run::PublishDeps,
    services::collection::CollectionService,
    services::collection::schedule::DailySchedule,
    services::connection::ConnectionService,
    services::media::MediaService,
    services::publishing::PublishingService,
    services::publishing::SchedulerWaker,
    services::reconciling::ReconcileService,
    services::scheduling::SchedulingService,
    services::webhooks::WebhookService,
    services::{idempotency::IdempotencyService, usage::UsageService},
    store::Store,
    store::access::{AccessCache, AccessCacheSettings},
    store::last_used::LastUsedRecorder,
    store::last_used::LastUsedWriter,
    web::{
        body_deadline, idle_watch, middleware,
        signin_limit::{SigninLimiter, TrustedProxies},
        trace,
    },
    webhook_sender::WebhookSender,
};

/// Options that tests and embedders set; `main` uses the defaults.
#[derive(Clone, Default)]
pub struct BuildOptions {
    /// Time source; the system clock by default.
    pub clock: Option<SharedClock>,
    /// PostgreSQL schema to use (tests give each test its own).
    pub pg_schema: Option<String>,
    /// Leave the background actors that call platforms (scheduler, token keeper, collector)
    /// stopped until [`Application::start_background`]: the demo first introduces its accounts
    /// to the in-process simulator, or the collector's catch-up could call it for an account it
    /// does not know yet and mark that account invalid.
    pub defer_background: bool,
}

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("database: {0}")]
    Database(#[from] sea_orm::DbErr),
    #[error("cannot listen on {0}: {1}")]
    Bind(String, std::io::Error),
    #[error("upgrading stored tokens: {0}")]
    Tokens(#[from] crate::store::ReEncryptError),
}

/// The use cases that meter API calls: metering itself, and `Idempotency-Key`s (which meter
/// once a key is claimed).
fn metered_use_cases(
    config: &Config,
    store: &Store,
    clock: &SharedClock,
    last_used: &LastUsedRecorder,
) -> (Arc<UsageService>, Arc<IdempotencyService>) {
    let usage = Arc::new(UsageService::new(
        store.clone(),
        clock.clone(),
        last_used.clone(),
        config.usage.free_monthly_limit,
    ));
    let idempotency = Arc::new(IdempotencyService::new(
        store.clone(),
        clock.clone(),
        usage.clone(),
        &config.publishing,
    ));
    (usage, idempotency)
}

/// Seals tokens still stored in the unbound `v1:` form to their rows, before anything reads
/// them: normal reads accept only the bound form. Runs at every start; once every row is bound
/// it is one query that finds nothing.
async fn upgrade_unbound_tokens(store: &Store, cipher: &TokenCipher) -> Result<(), StartupError> {
    let report = store
        .reseal_tokens(cipher, crate::store::ResealScope::UnboundOnly)
        .await?;
    if report.resealed > 0 {
        tracing::info!(
            accounts = report.resealed,
            "sealed stored tokens to their rows"
        );
    }
    if !report.unreadable.is_empty() {
        tracing::warn!(
            accounts = report.unreadable.len(),
            "stored tokens in the unbound form open with no configured key; those accounts show as invalid until reconnected"
        );
    }
    Ok(())
}

/// A built service, bound to its port but not yet serving.
pub struct Application {
    port: u16,
    server: Server,
    state: web::Data<AppState>,
    /// The background actors until they start (they start once; see
    /// [`BuildOptions::defer_background`]).
    background: RefCell<Option<PendingBackground>>,
    /// Closes connections idle between requests (kept alive with the server).
    _idle_watch: Arc<idle_watch::IdleWatch>,
}

impl Application {
    /// Checks secrets, connects and migrates the database, binds the listener (`server.bind`;
    /// port 0 picks a free port), builds the services and actors (`Core`), then the HTTP
    /// state, and starts the actors (unless [`BuildOptions::defer_background`]).
    pub async fn build(config: Config, options: BuildOptions) -> Result<Self, StartupError> {
        let limits = checked_limits(&config)?;
        let configured_public_url = config.server.checked_public_url()?;
        let clock = options.clock.unwrap_or_else(|| Arc::new(SystemClock));
        // Checked before anything starts: a bad entry names its key.
        let signin_limiter = Arc::new(SigninLimiter::new(
            config.auth.signin_rate_per_minute,
            config.auth.signin_burst,
            TrustedProxies::parse(&config.server.trusted_proxies)?,
            clock.clone(),
        )?);
        // Migrations run on a connection of their own, closed before the service's pool opens:
        // a pooled SQLite connection that prepared a statement before a migration altered its
        // table keeps the old column list and fails with "Missing value for column" once the
        // migration has added a column to it.
        let migrator =
            Store::connect(&config.database.url, 1, options.pg_schema.as_deref()).await?;
        migrator.migrate().await?;
        migrator.close().await?;
        let store = Store::connect_with_cache(
            &config.database.url,
            config.database.max_connections,
            options.pg_schema.as_deref(),
            config.database.sqlite_cache_kib,
            config.database.sqlite_synchronous,
        )
        .await?
        .with_access_cache(Arc::new(AccessCache::new(
            clock.clone(),
            AccessCacheSettings {
                capacity: config.auth.cache_capacity,
                list_capacity: config.auth.list_cache_capacity,
                ttl: Duration::from_millis(config.auth.cache_ttl_ms),
            },
        )));
        store.listen_for_invalidations(Duration::from_secs(1));
        store.set_group_commit_max(config.database.group_commit_max);

        let listener = TcpListener::bind(&config.server.bind)
            .map_err(|e| StartupError::Bind(config.server.bind.clone(), e))?;
        let address = listener
            .local_addr()
            .map_err(|e| StartupError::Bind(config.server.bind.clone(), e))?;
        let public_url = configured_public_url.unwrap_or_else(|| healthcheck::local_url(address));
        tracing::info!(%address, %public_url, "listening");

        let secret = |s: &Option<SecretString>| {
            s.as_ref()
                .map(|s| s.expose_secret().to_string())
                .unwrap_or_default()
        };
        let cipher = TokenCipher::from_config_value(&secret(&config.secrets.token_encryption_key))
            .and_then(|c| c.with_previous(&secret(&config.secrets.previous_token_encryption_keys)))
            .map_err(|e| ConfigError::Invalid("secrets.token_encryption_key", e.to_string()))?;
        upgrade_unbound_tokens(&store, &cipher).await?;
        let http_client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ConfigError::Invalid("http client", e.to_string()))?;
        if config.auth.issuer.is_empty() {
            tracing::warn!("auth.issuer is not set: dashboard sign-in is disabled");
        }
        let core = Core::build(&config, &store, &clock, &cipher, &public_url)?;
        join_cluster(&store, &core.cluster, &config).await;
        core.cluster.spawn_heartbeat();

        // The HTTP state, last.
        let last_used = LastUsedRecorder::default();
        let (usage, idempotency) = metered_use_cases(&config, &store, &clock, &last_used);
        let state = web::Data::new(AppState {
            signer: SessionSigner::new(&secret(&config.secrets.session_key)),
            cipher,
            operator_token: SecretString::from(secret(&config.secrets.operator_token)),
            oidc: OidcClient::new(config.auth.clone(), http_client),
            last_used: last_used.clone(),
            cookie_secure: public_url.starts_with("https://"),
            supervisor: core.supervisor,
            cluster: core.cluster.clone(),
            metrics: core.metrics,
            publishing: core.publishing,
            scheduling: core.scheduling,
            collection: core.collection,
            connection: core.connection,
            webhooks: core.webhooks,
            media: core.media,
            background: core.background,
            signin_limiter: signin_limiter.clone(),
            usage,
            idempotency,
            public_url,
            store: store.clone(),
            clock,
            config: Arc::new(config.clone()),
        });
        LastUsedWriter::new(
            last_used,
            store,
            Duration::from_millis(config.usage.last_used_flush_ms.max(10)),
        )
        .start();

        let background = if options.defer_background {
            Some(core.pending)
        } else {
            core.pending.start();
            None
        };

        // Between requests a client may idle for keep-alive, then has the head deadline to send
        // a whole head; actix-http times only the first request's head (see `idle_watch`).
        let idle_watch =
            idle_watch::IdleWatch::new(limits.request_head + limits.keep_alive.unwrap_or_default());
        idle_watch.spawn_sweeper();
        signin_limiter.spawn_housekeeping();
        let connection_watch = idle_watch.clone();
        let server_state = state.clone();
        let mut server = HttpServer::new(move || {
            // Runs once on each worker's thread, as it starts.
            if server_state.config.publishing.actors_on_http_workers {
                crate::actors::supervisor::host_actors_here(&server_state.config.platforms);
            }
            app(server_state.clone())
        })
        .on_connect(move |io, extensions| connection_watch.on_connect(io, extensions))
        // What a slow or idle client may hold (the body deadline is `body_deadline`'s).
        .client_request_timeout(limits.request_head)
        .client_disconnect_timeout(limits.client_disconnect)
        .keep_alive(
            limits
                .keep_alive
                .map_or(KeepAlive::Disabled, KeepAlive::Timeout),
        )
        .max_connections(limits.max_connections)
        .listen(listener)
        .map_err(|e| StartupError::Bind(config.server.bind.clone(), e))?
        .disable_signals();
        if config.server.workers > 0 {
            server = server.workers(config.server.workers);
        }
        Ok(Self {
            port: address.port(),
            server: server.run(),
            state,
            background: RefCell::new(background),
            _idle_watch: idle_watch,
        })
    }

    /// Starts the background actors that call platforms (scheduler, reconciler, token keeper,
    /// collector) when the build deferred them ([`BuildOptions::defer_background`]). Idempotent.
    pub fn start_background(&self) {
        if let Some(pending) = self.background.borrow_mut().take() {
            pending.start();
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Shared state (tests use its store to arrange data).
    pub fn state(&self) -> web::Data<AppState> {
        self.state.clone()
    }

    /// A handle to stop the server.
    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// Graceful shutdown, first half (see [`shutdown::drain`]); then stop the HTTP server with
    /// [`Application::handle`].
    pub async fn drain(state: &AppState) {
        shutdown::drain(state).await;
    }

    /// Serves until stopped, then writes what is still buffered.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.await;
        self.state.last_used.flush(&self.state.store).await;
        self.state.cluster.leave().await;
        result
    }
}

/// What [`Application::build`] makes below HTTP: the supervisor, the services and the
/// background actors (built, not yet running).
struct Core {
    supervisor: Arc<Supervisor>,
    cluster: Arc<Cluster>,
    metrics: Arc<crate::metrics::Metrics>,
    publishing: Arc<PublishingService>,
    scheduling: Arc<SchedulingService>,
    collection: Arc<CollectionService>,
    connection: Arc<ConnectionService>,
    webhooks: Arc<WebhookService>,
    media: Arc<MediaService>,
    pending: PendingBackground,
    background: BackgroundActors,
}

impl Core {
    /// The platform clients, the supervisor, then the services (the scheduler's mailbox first:
    /// publishing wakes it), then the background actors, each given the services it uses.
    fn build(
        config: &Config,
        store: &Store,
        clock: &SharedClock,
        cipher: &TokenCipher,
        public_url: &str,
    ) -> Result<Self, StartupError> {
        let platform_client = crate::platforms::client(&config.platforms)
            .map_err(|e| ConfigError::Invalid("http client", e.to_string()))?;
        // Uploaded files: served at our public URL, and read from the store when a post uses one.
        let own_media = Arc::new(OwnMedia::new(
            store.clone(),
            MediaObjects::open(&config.media)?,
            public_url,
            clock.clone(),
            config.media.retention(),
        ));
        let media = MediaFetcher::new(
            &config.publishing.media_allow_hosts,
            config.publishing.max_media_bytes,
        )
        .map_err(|e| ConfigError::Invalid("media client", e.to_string()))?
        .with_own(own_media.clone());
        let metrics = Arc::new(crate::metrics::Metrics::default());
        let instance_id = instance_id();
        let cluster = Cluster::new(
            store.clone(),
            &config.cluster,
            if config.cluster.address.is_empty() {
                public_url.to_string()
            } else {
                config.cluster.address.clone()
            },
            instance_id.clone(),
            clock.clone(),
            metrics.clone(),
        );
        let deps = Arc::new(PublishDeps {
            store: store.clone(),
            clock: clock.clone(),
            cipher: cipher.clone(),
            http: platform_client.clone(),
            media: media.clone(),
            platforms: config.platforms.clone(),
            publishing: config.publishing.clone(),
            oauth: config.oauth.clone(),
            metrics: metrics.clone(),
            cluster: cluster.clone(),
        });
        let supervisor = Arc::new(Supervisor::new(deps.clone()));
        let collection_schedule =
            DailySchedule::parse(&config.collector.time_zone, &config.collector.run_at)
                .map_err(|e| ConfigError::Invalid("collector.time_zone / collector.run_at", e))?;

        // The services. The scheduler's mailbox comes first: publishing wakes it.
        let scheduler_mailbox = config
            .scheduler
            .enabled
            .then(Mailbox::<SchedulerActor>::new);
        let publishing = Arc::new(PublishingService::new(
            store.clone(),
            clock.clone(),
            supervisor.clone(),
            media,
            config.publishing.clone(),
            SchedulerWaker::new(scheduler_mailbox.as_ref().map(|m| m.address().recipient())),
        ));
        let scheduling = Arc::new(SchedulingService::new(
            store.clone(),
            clock.clone(),
            publishing.clone(),
            config.scheduler.clone(),
            metrics.clone(),
            instance_id.clone(),
            &config.cluster,
        ));
        let collection = Arc::new(CollectionService::new(
            store.clone(),
            clock.clone(),
            supervisor.clone(),
            config.collector.clone(),
            collection_schedule,
            metrics.clone(),
            instance_id.clone(),
        ));
        let connection = Arc::new(ConnectionService::new(
            store.clone(),
            cipher.clone(),
            clock.clone(),
            platform_client,
            config.platforms.clone(),
            config.oauth.clone(),
            public_url.to_string(),
            supervisor.clone(),
        ));
        // A check's claim must outlive one check; the scheduler's lease is the service's
        // measure of "this instance died".
        let reconciling = Arc::new(ReconcileService::new(
            deps,
            supervisor.clone(),
            instance_id.clone(),
            chrono::Duration::seconds(config.scheduler.lease_secs.max(1) as i64),
        ));

        let webhooks = webhook_service(config, store, clock, cipher, &metrics, &instance_id)?;
        let uploads = Arc::new(MediaService::new(
            store.clone(),
            own_media,
            metrics.clone(),
            clock.clone(),
            config.media.clone(),
            public_url.to_string(),
        ));

        // The background actors, each with the services it uses; `Application::build` runs
        // them, or `Application::start_background` later.
        let (pending, background) = crate::background::prepare(
            scheduler_mailbox.map(|mailbox| (mailbox, SchedulerActor::new(scheduling.clone()))),
            config
                .collector
                .enabled
                .then(|| CollectorActor::new(collection.clone())),
            ReconcilerActor::new(reconciling),
            TokenKeeper::new(connection.clone()),
            WebhookDeliveryActor::new(webhooks.clone()),
            Sweeper::new(
                store.clone(),
                clock.clone(),
                Duration::from_secs(config.auth.sweep_interval_secs),
            )
            .with_media(uploads.clone()),
        );
        Ok(Self {
            supervisor,
            cluster,
            metrics,
            publishing,
            scheduling,
            collection,
            connection,
            webhooks,
            media: uploads,
            pending,
            background,
        })
    }
}

/// The webhook use cases and their sender (its own HTTP client, with the private-address
/// guard and no redirects).
fn webhook_service(
    config: &Config,
    store: &Store,
    clock: &SharedClock,
    cipher: &TokenCipher,
    metrics: &Arc<crate::metrics::Metrics>,
    instance: &str,
) -> Result<Arc<WebhookService>, StartupError> {
    let sender = WebhookSender::new(
        &config.webhooks.allow_hosts,
        Duration::from_secs(config.webhooks.timeout_secs),
    )
    .map_err(|e| ConfigError::Invalid("webhooks client", e.to_string()))?;
    Ok(Arc::new(WebhookService::new(
        store.clone(),
        sender,
        cipher.clone(),
        config.webhooks.clone(),
        clock.clone(),
        metrics.clone(),
        instance.to_string(),
    )))
}

/// Makes this instance a member of the instances sharing its database before it serves, so
/// that its leases and claims are trusted from the first request.
async fn join_cluster(store: &Store, cluster: &Cluster, config: &Config) {
    // Named before it is a member: the others wait for its acknowledgement of their cache
    // invalidations from the moment they see it live.
    store.identify(cluster.instance(), config.cluster.silence());
    if let Err(error) = cluster.renew().await {
        tracing::warn!(%error, "cannot write this instance's membership yet");
    }
}

/// Refuses a configuration that cannot work, naming the key, before anything starts; the
/// server's limits once checked.
fn checked_limits(config: &Config) -> Result<crate::config::ConnectionLimits, StartupError> {
    config.check_secrets()?;
    let limits = config.server.limits()?;
    // `Supervisor::new` reads it.
    config.publishing.actor_arbiters()?;
    config.webhooks.check()?;
    config.media.check()?;
    config.cluster.check()?;
    Ok(limits)
}

/// A claimant id unique to this process.
fn instance_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "host".into());
    format!(
        "{host}:{}:{}",
        std::process::id(),
        crate::crypto::random_token(6)
    )
}

/// One worker's application: the shared state (cloned, never rebuilt per worker), every route,
/// the catalogue's answer for unknown routes, and the middleware stack.
pub fn app(
    state: web::Data<AppState>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .app_data(state)
        .configure(crate::http::configure)
        .configure(crate::dashboard::configure)
        .default_service(web::to(crate::http::not_found))
        .wrap(middleware::json_error_handlers())
        // Inside `trace_request`, so a 408 carries the request id and is counted.
        .wrap(from_fn(body_deadline::body_deadline))
        .wrap(from_fn(trace::trace_request))
        .wrap(from_fn(idle_watch::watch_requests))
}

/// Every problem of `config` that `Application::build` would stop at one by one, without
/// connecting or binding anything (`service config check`).
pub fn configuration_problems(config: &Config) -> Vec<ConfigError> {
    let mut problems = crate::services::config_check::problems(config);
    let trusted = TrustedProxies::parse(&config.server.trusted_proxies).unwrap_or_else(|problem| {
        problems.push(problem);
        TrustedProxies::default()
    });
    if let Err(problem) = SigninLimiter::new(
        config.auth.signin_rate_per_minute,
        config.auth.signin_burst,
        trusted,
        Arc::new(SystemClock),
    ) {
        problems.push(problem);
    }
    problems
}
