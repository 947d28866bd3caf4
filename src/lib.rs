//! A self-hostable social publishing service.
//!
//! Layout (see the README for the whole picture):
//! - [`config`]: layered configuration; [`error`]: the one error catalogue (spec §7).
//! - [`http`]: routes, the three authentication modes, thin handlers; [`views`]: response shapes.
//! - [`store`]: every SQL query (SeaORM over the `entity` and `migration` crates).
//! - [`usage`]: plans and usage-period arithmetic (pure); [`crypto`]: keys, sessions, encryption.
//! - [`oidc`]: dashboard sign-in client; [`operator`]: operator actions (CLI and `/admin`).
//! - [`actors`]: long-lived actors; [`demo`]: `serve --demo` (with the `service-sim` crate).
//! - [`state`]: what handlers share; request tracing is [`http::trace`].
//! - [`media`]: fetching media URLs (SSRF guard, streaming); [`platforms`]: the adapters, which
//!   report their steps through [`platforms::StepSink`] and know no store.
//!
//! [`Application::build`] assembles everything; `main`, the tests and the benchmarks all use it.

pub mod actors;
pub mod clock;
pub mod collection;
pub mod config;
pub mod crypto;
pub mod dashboard;
/// `serve --demo`: needs the simulator, so only in builds with the `demo` feature (default).
#[cfg(feature = "demo")]
pub mod demo;
pub mod error;
pub mod http;
pub mod insights;
pub mod logging;
pub mod media;
pub mod metrics;
pub mod oauth;
pub mod oidc;
pub mod operator;
pub mod platforms;
pub mod publish;
/// What the handlers share ([`AppState`]).
pub mod state;
pub mod store;
pub mod usage;
pub mod views;

use std::{
    net::TcpListener,
    sync::{Arc, OnceLock},
    time::Duration,
};

use actix::Actor;
use actix_web::{
    App, HttpServer,
    dev::{Server, ServerHandle},
    http::KeepAlive,
    middleware::from_fn,
    web,
};
use secrecy::{ExposeSecret, SecretString};

pub use state::AppState;

use crate::{
    actors::{
        collector::CollectorActor,
        last_used::{LastUsedRecorder, LastUsedWriter},
        scheduler::{Drain, SchedulerActor},
        supervisor::Supervisor,
        token_keeper::TokenKeeper,
    },
    clock::{SharedClock, SystemClock},
    collection::schedule::DailySchedule,
    config::{Config, ConfigError},
    crypto::{SessionSigner, TokenCipher},
    media::MediaFetcher,
    oidc::OidcClient,
    publish::run::PublishDeps,
    store::Store,
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
}

/// A built service, bound to its port but not yet serving.
pub struct Application {
    port: u16,
    server: Server,
    state: web::Data<AppState>,
    /// Whether the background actors were started (they start once).
    background_started: Arc<std::sync::Once>,
    /// Closes connections idle between requests (kept alive with the server).
    _idle_watch: Arc<http::idle_watch::IdleWatch>,
}

/// Starts the actors that work on their own and call platforms: the scheduler (due posts), the
/// reconciler (publishes still processing), the token keeper (refreshes) and the collector
/// (daily snapshots, with a catch-up at start).
fn start_background(state: &web::Data<AppState>, once: &std::sync::Once) {
    once.call_once(|| {
        let config = &state.config;
        if config.scheduler.enabled {
            let scheduler = SchedulerActor::new(state.clone(), state.instance_id.clone()).start();
            let _ = state.scheduler.set(scheduler);
        }
        // Publishes the platform was still processing at our deadline are checked until they
        // end, on every instance (immediate ones too, so not tied to `scheduler.enabled`).
        let reconciler = actors::reconciler::ReconcilerActor::new(state.clone()).start();
        let _ = state.reconciler.set(reconciler);
        let token_keeper = TokenKeeper::new(state.clone()).start();
        let _ = state.token_keeper.set(token_keeper);
        if config.collector.enabled {
            let collector = CollectorActor::new(state.clone(), state.collection_schedule).start();
            let _ = state.collector.set(collector);
        }
    });
}

impl Application {
    /// Checks secrets, connects and migrates the database, starts the actors and binds the
    /// listener (`server.bind`; port 0 picks a free port).
    pub async fn build(config: Config, options: BuildOptions) -> Result<Self, StartupError> {
        config.check_secrets()?;
        let limits = config.server.limits()?;
        // Refused here, naming the key, before anything starts (`Supervisor::new` reads it).
        config.publishing.actor_arbiters()?;
        let configured_public_url = config.server.checked_public_url()?;
        let clock = options.clock.unwrap_or_else(|| Arc::new(SystemClock));
        // Migrations run on a connection of their own, closed before the service's pool opens:
        // a pooled SQLite connection that prepared a statement before a migration altered its
        // table keeps the old column list and fails with "Missing value for column" (seen when
        // `users.is_operator` was added).
        let migrator =
            Store::connect(&config.database.url, 1, options.pg_schema.as_deref()).await?;
        migrator.migrate().await?;
        migrator.close().await?;
        let store = Store::connect(
            &config.database.url,
            config.database.max_connections,
            options.pg_schema.as_deref(),
        )
        .await?;

        let listener = TcpListener::bind(&config.server.bind)
            .map_err(|e| StartupError::Bind(config.server.bind.clone(), e))?;
        let address = listener
            .local_addr()
            .map_err(|e| StartupError::Bind(config.server.bind.clone(), e))?;
        let public_url = configured_public_url.unwrap_or_else(|| format!("http://{address}"));
        tracing::info!(%address, %public_url, "listening");

        let secret = |s: &Option<SecretString>| {
            s.as_ref()
                .map(|s| s.expose_secret().to_string())
                .unwrap_or_default()
        };
        let cipher = TokenCipher::from_config_value(&secret(&config.secrets.token_encryption_key))
            .and_then(|c| c.with_previous(&secret(&config.secrets.previous_token_encryption_keys)))
            .map_err(|e| ConfigError::Invalid("secrets.token_encryption_key", e.to_string()))?;
        let http_client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ConfigError::Invalid("http client", e.to_string()))?;
        if config.auth.issuer.is_empty() {
            tracing::warn!("auth.issuer is not set: dashboard sign-in is disabled");
        }
        let platform_client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(
                config.platforms.call_timeout_secs.max(1),
            ))
            .build()
            .map_err(|e| ConfigError::Invalid("http client", e.to_string()))?;
        let media = MediaFetcher::new(
            &config.publishing.media_allow_hosts,
            config.publishing.max_media_bytes,
        )
        .map_err(|e| ConfigError::Invalid("media client", e.to_string()))?;
        let metrics = Arc::new(metrics::Metrics::default());
        let supervisor = Arc::new(Supervisor::new(Arc::new(PublishDeps {
            store: store.clone(),
            clock: clock.clone(),
            cipher: cipher.clone(),
            http: platform_client,
            media,
            platforms: config.platforms.clone(),
            publishing: config.publishing.clone(),
            oauth: config.oauth.clone(),
            metrics: metrics.clone(),
        })));
        let collection_schedule =
            DailySchedule::parse(&config.collector.time_zone, &config.collector.run_at)
                .map_err(|e| ConfigError::Invalid("collector.time_zone / collector.run_at", e))?;
        let last_used = LastUsedRecorder::default();
        let state = web::Data::new(AppState {
            signer: SessionSigner::new(&secret(&config.secrets.session_key)),
            cipher,
            operator_token: SecretString::from(secret(&config.secrets.operator_token)),
            oidc: OidcClient::new(config.auth.clone(), http_client),
            last_used: last_used.clone(),
            cookie_secure: public_url.starts_with("https://"),
            supervisor,
            metrics,
            scheduler: Arc::new(OnceLock::new()),
            collector: Arc::new(OnceLock::new()),
            reconciler: Arc::new(OnceLock::new()),
            token_keeper: Arc::new(OnceLock::new()),
            collection_schedule,
            instance_id: instance_id(),
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

        let background_started = Arc::new(std::sync::Once::new());
        if !options.defer_background {
            start_background(&state, &background_started);
        }

        // Between requests a client may idle for keep-alive, then has the head deadline to send
        // a whole head; actix-http times only the first request's head (see `idle_watch`).
        let idle_watch = http::idle_watch::IdleWatch::new(
            limits.request_head + limits.keep_alive.unwrap_or_default(),
        );
        idle_watch.spawn_sweeper();
        let connection_watch = idle_watch.clone();
        let server_state = state.clone();
        let mut server = HttpServer::new(move || {
            App::new()
                .app_data(server_state.clone())
                .configure(http::configure)
                .default_service(web::to(http::not_found))
                .wrap(http::json_error_handlers())
                // Inside `trace_request`, so a 408 carries the request id and is counted.
                .wrap(from_fn(http::body_deadline::body_deadline))
                .wrap(from_fn(http::trace::trace_request))
                .wrap(from_fn(http::idle_watch::watch_requests))
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
            background_started,
            _idle_watch: idle_watch,
        })
    }

    /// Starts the background actors that call platforms (scheduler, token keeper, collector)
    /// when the build deferred them ([`BuildOptions::defer_background`]). Idempotent.
    pub fn start_background(&self) {
        start_background(&self.state, &self.background_started);
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

    /// Graceful shutdown, first half: the scheduler stops claiming posts, and in-flight
    /// scheduled publishes get up to `scheduler.shutdown_grace_secs` to finish. Posts not yet
    /// claimed stay `scheduled`; one still running when the grace ends is settled by the next
    /// start from its recorded steps. Then stop the HTTP server with [`Application::handle`].
    pub async fn drain(state: &AppState) {
        let Some(scheduler) = state.scheduler.get() else {
            return;
        };
        let deadline = tokio::time::Instant::now()
            + Duration::from_secs(state.config.scheduler.shutdown_grace_secs);
        loop {
            match scheduler.send(Drain).await {
                Ok(0) | Err(_) => return,
                Ok(in_flight) if tokio::time::Instant::now() >= deadline => {
                    tracing::warn!(
                        in_flight,
                        "shutdown: grace period over with publishes in flight"
                    );
                    return;
                }
                Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// Serves until stopped, then writes what is still buffered.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.await;
        self.state.last_used.flush(&self.state.store).await;
        result
    }
}

/// On SIGTERM or Ctrl-C: drain the scheduler (bounded), then stop the HTTP server gracefully.
pub fn stop_on_signal(app: &Application) {
    let handle = app.handle();
    let state = app.state();
    actix_rt::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutting down");
        Application::drain(&state).await;
        handle.stop(true).await;
    });
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A claimant id unique to this process.
fn instance_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "host".into());
    format!("{host}:{}:{}", std::process::id(), crypto::random_token(6))
}
