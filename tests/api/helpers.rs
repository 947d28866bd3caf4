//! `TestApp`: spawns the service and the simulator with a fresh database, and typed helpers.

use std::sync::Once;

use chrono::{DateTime, Utc};
use reqwest::{Client, Response, redirect::Policy};
use secrecy::SecretString;
use serde_json::{Value, json};
use service_sim::{
    SimConfig, Simulator,
    state::{FaultKind, FaultSpec, SimAccount},
};
use social_service::{
    AppState, Application, BuildOptions,
    clock::ManualClock,
    config::{Config, OAuthConfig, PlatformsConfig},
    crypto::TokenCipher,
    services::operator,
    services::operator::ManualAccount,
};
use uuid::Uuid;

pub const OPERATOR_TOKEN: &str = "test-operator-token-0123456789";
pub const CLIENT_ID: &str = "test-dashboard";
pub const CLIENT_SECRET: &str = "test-client-secret";

static TRACING: Once = Once::new();

fn init_tracing() {
    TRACING.call_once(|| {
        if std::env::var("TEST_LOG").is_ok() {
            tracing_subscriber::fmt()
                .with_env_filter("debug,sqlx=warn")
                .with_test_writer()
                .init();
        }
    });
}

/// Where a test's database lives; dropped at the end of the test.
enum TestDb {
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Postgres { url: String, schema: String },
}

/// Ends the server connections of the instances whose connections carry `schema` as their
/// application name (see `spawn_inner`), but not the connection that runs it.
fn end_connections_sql(schema: &str) -> String {
    format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = '{schema}' AND pid <> pg_backend_pid()"
    )
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let TestDb::Postgres { url, schema } = self {
            let (url, schema) = (url.clone(), schema.clone());
            // Drop runs inside the test's runtime: use a thread with its own runtime.
            let _ = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    use sea_orm::ConnectionTrait;
                    if let Ok(db) = sea_orm::Database::connect(&url).await {
                        // Connections checked out by futures that died with the test's runtime
                        // never return to their pool, so `close_pool` cannot close them: without
                        // this, every test would leave a few open until PostgreSQL runs out.
                        let _ = db.execute_unprepared(&end_connections_sql(&schema)).await;
                        let _ = db
                            .execute_unprepared(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                            .await;
                        let _ = db.close().await;
                    }
                });
            })
            .join();
        }
    }
}

pub struct TestApp {
    pub base: String,
    pub state: actix_web::web::Data<AppState>,
    pub clock: ManualClock,
    pub sim: Simulator,
    /// A client without cookies or redirects.
    pub http: Client,
    /// The SQLite file URL (None on PostgreSQL).
    pub sqlite_url: Option<String>,
    /// What the service was built with (a second instance reuses it).
    pub config: Config,
    pg_schema: Option<String>,
    /// The local media store's directory, removed with the test.
    _media_dir: tempfile::TempDir,
    _db: TestDb,
}

/// Closes a pool from outside the test's runtime (which is gone or going when this runs). The
/// service's threads outlive a test and keep its pool alive; without this, each test would leave
/// its connections open until PostgreSQL runs out of them.
fn close_pool(db: sea_orm::DatabaseConnection) {
    let _ = std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        // Close every idle connection. (`Pool::close` would also wait for connections still
        // checked out by futures that died with the test's runtime, which never come back.)
        runtime.block_on(async move {
            let close = async {
                match db.get_database_backend() {
                    sea_orm::DbBackend::Postgres => {
                        let pool = db.get_postgres_connection_pool();
                        while let Some(connection) = pool.try_acquire() {
                            let _ = connection.close().await;
                        }
                    }
                    _ => {
                        let pool = db.get_sqlite_connection_pool();
                        while let Some(connection) = pool.try_acquire() {
                            let _ = connection.close().await;
                        }
                    }
                }
            };
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), close).await;
        });
    })
    .join();
}

impl TestApp {
    /// The rules of the protocol violations the simulator saw, clearing its log: for tests
    /// that break the protocol on purpose and assert it (the log must end empty, see `Drop`).
    pub fn take_violation_rules(&self) -> Vec<String> {
        self.sim
            .state()
            .take_violations()
            .into_iter()
            .map(|v| v.rule)
            .collect()
    }

    /// On PostgreSQL, ends every server connection of the instances on this test's schema (this
    /// one and any second one), as a database restart or a failover would, and answers true;
    /// false on SQLite (there is no server to drop them).
    pub async fn end_database_connections(&self) -> bool {
        let (Some(schema), TestDb::Postgres { url, .. }) = (&self.pg_schema, &self._db) else {
            return false;
        };
        use sea_orm::ConnectionTrait;
        let admin = sea_orm::Database::connect(url).await.unwrap();
        let ended = admin
            .query_all_raw(sea_orm::Statement::from_string(
                sea_orm::DbBackend::Postgres,
                end_connections_sql(schema),
            ))
            .await
            .unwrap();
        assert!(!ended.is_empty(), "the instance had no connection to end");
        admin.close().await.unwrap();
        true
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        close_pool(self.state.store.connection().clone());
        assert_no_violations(&self.sim);
    }
}

/// Every black-box test ends with the simulator having seen no protocol violation: one means
/// an adapter would be refused by the real platform. Tests that break the protocol on purpose
/// take theirs (`take_violations`) and assert them. Called from `Drop`s; skipped while
/// panicking, where a second panic would abort and hide the first failure.
pub fn assert_no_violations(sim: &Simulator) {
    if std::thread::panicking() {
        return;
    }
    let violations = sim.state().violations();
    assert!(
        violations.is_empty(),
        "the simulator saw {} protocol violation(s): {violations:#?}",
        violations.len()
    );
}

impl Drop for SecondInstance {
    fn drop(&mut self) {
        close_pool(self.state.store.connection().clone());
    }
}

/// Another instance of the service on the same database, clock and simulator.
pub struct SecondInstance {
    #[allow(dead_code)]
    pub base: String,
    pub state: actix_web::web::Data<AppState>,
}

impl SecondInstance {
    /// The `collector` part of this instance's actor view.
    #[allow(dead_code)]
    pub async fn collector_status(&self) -> (u16, Value) {
        let response = Client::new()
            .get(format!("{}/api/admin/actors", self.base))
            .bearer_auth(OPERATOR_TOKEN)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        (status, body["collector"].clone())
    }
}

/// A signed-in dashboard user: a client with a cookie jar.
pub struct Dashboard {
    pub client: Client,
    /// The same cookie jar, without following redirects (to stop on a redirect and look).
    #[allow(dead_code)]
    pub no_redirect: Client,
    pub user_id: Uuid,
}

impl TestApp {
    pub async fn spawn() -> Self {
        Self::spawn_with(|_| {}).await
    }

    /// Spawns with a config adjusted by `adjust`.
    pub async fn spawn_with(adjust: impl FnOnce(&mut Config)) -> Self {
        Self::spawn_inner(adjust, false, false).await
    }

    /// Spawns on the system clock (for timing tests); `clock` is then not the service's.
    pub async fn spawn_on_system_clock(adjust: impl FnOnce(&mut Config)) -> Self {
        Self::spawn_inner(adjust, true, false).await
    }

    /// Spawns with the background actors (scheduler, reconciler, token keeper, collector) left
    /// stopped, so that the only statements the database sees are the requests' (tests that
    /// count them).
    #[allow(dead_code)]
    pub async fn spawn_without_background(adjust: impl FnOnce(&mut Config)) -> Self {
        Self::spawn_inner(adjust, false, true).await
    }

    async fn spawn_inner(
        adjust: impl FnOnce(&mut Config),
        system_clock: bool,
        defer_background: bool,
    ) -> Self {
        init_tracing();
        let sim = Simulator::start(SimConfig {
            bind: "127.0.0.1:0".into(),
            idp_clients: vec![(CLIENT_ID.into(), CLIENT_SECRET.into())],
            idp_issuer: None,
            processing_delay: std::time::Duration::from_millis(150),
        })
        .unwrap();

        let mut config = Config::default();
        config.server.bind = "127.0.0.1:0".into();
        config.server.workers = 2;
        config.database.max_connections = 3;
        config.secrets.session_key = Some(SecretString::from("s".repeat(40)));
        config.secrets.token_encryption_key = Some(SecretString::from(TokenCipher::generate_key()));
        config.secrets.operator_token = Some(SecretString::from(OPERATOR_TOKEN));
        config.auth.issuer = sim.idp_issuer();
        config.auth.client_id = CLIENT_ID.into();
        config.auth.client_secret = Some(SecretString::from(CLIENT_SECRET));
        config.usage.last_used_flush_ms = 50;
        config.platforms = PlatformsConfig::simulator(&sim.base_url);
        config.oauth = OAuthConfig::simulator(&sim.base_url, CLIENT_ID, CLIENT_SECRET);
        config.platforms.poll_interval_ms = 50;
        config.platforms.processing_timeout_secs = 5;
        config.publishing.media_allow_hosts = vec![format!("127.0.0.1:{}", sim.port)];

        let (db, pg_schema, sqlite_url) = match std::env::var("TEST_DATABASE_URL") {
            Ok(url) if !url.is_empty() => {
                let schema = format!("t_{}", Uuid::new_v4().simple());
                let admin = sea_orm::Database::connect(&url).await.unwrap();
                use sea_orm::ConnectionTrait;
                admin
                    .execute_unprepared(&format!("CREATE SCHEMA {schema}"))
                    .await
                    .unwrap();
                admin.close().await.unwrap();
                // The schema's name tags this instance's connections, so that the test's end can
                // end those its dead futures still hold (see `TestDb`'s `Drop`).
                let separator = if url.contains('?') { '&' } else { '?' };
                config.database.url = format!("{url}{separator}application_name={schema}");
                (
                    TestDb::Postgres {
                        url,
                        schema: schema.clone(),
                    },
                    Some(schema),
                    None,
                )
            }
            _ => {
                let dir = tempfile::tempdir().unwrap();
                let url = format!("sqlite://{}/test.db?mode=rwc", dir.path().display());
                config.database.url = url.clone();
                (TestDb::Sqlite(dir), None, Some(url))
            }
        };
        config.scheduler.max_sleep_ms = 100;
        config.scheduler.retry_base_secs = 1;
        // The daily collector would call the simulator whenever a test's clock crosses 02:00
        // Asia/Taipei; tests of it turn it on.
        config.collector.enabled = false;
        config.collector.max_sleep_ms = 100;
        // Every test signs in from 127.0.0.1 on a clock that barely moves: the sign-in limit's
        // own tests set it back.
        config.auth.signin_rate_per_minute = 1_000_000;
        config.auth.signin_burst = 100_000;
        // Each test's uploads in a directory of its own, gone with the test; or, with
        // `TEST_MEDIA_S3_ENDPOINT` set, in a bucket of its own on that S3-compatible server.
        let media_dir = tempfile::tempdir().unwrap();
        config.media.local_dir = media_dir.path().display().to_string();
        if let Ok(endpoint) = std::env::var("TEST_MEDIA_S3_ENDPOINT")
            && !endpoint.is_empty()
        {
            let bucket = format!("media-{}", Uuid::new_v4().simple());
            let created = Client::new()
                .put(format!("{}/{bucket}", endpoint.trim_end_matches('/')))
                .send()
                .await
                .unwrap();
            assert!(
                created.status().is_success(),
                "bucket: {}",
                created.status()
            );
            config.media.store = social_service::config::MediaStoreKind::S3;
            config.media.s3_endpoint = endpoint;
            config.media.s3_bucket = bucket;
        }
        adjust(&mut config);

        let clock = ManualClock::new(Utc::now());
        let app = Application::build(
            config.clone(),
            BuildOptions {
                clock: (!system_clock).then(|| {
                    std::sync::Arc::new(clock.clone()) as social_service::clock::SharedClock
                }),
                pg_schema: pg_schema.clone(),
                defer_background,
            },
        )
        .await
        .unwrap();
        let base = format!("http://127.0.0.1:{}", app.port());
        let state = app.state();
        actix_rt::spawn(app.run_until_stopped());
        if pg_schema.is_some() {
            // The invalidation listener clears every cache when it connects (what it missed
            // before is unknown). Wait for that first connection, so that it cannot land in the
            // middle of a test and empty a cache the test has just warmed (a loaded machine
            // connects it late).
            let started = std::time::Instant::now();
            while state.store.access().listens() == 0 {
                assert!(
                    started.elapsed() < std::time::Duration::from_secs(60),
                    "the invalidation listener never connected"
                );
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
        Self {
            base,
            state,
            clock,
            sim,
            http: Client::builder().redirect(Policy::none()).build().unwrap(),
            sqlite_url,
            config,
            pg_schema,
            _media_dir: media_dir,
            _db: db,
        }
    }

    /// Starts another instance of the service on the same database (and clock, simulator and
    /// secrets), as a second server of a deployment would be.
    pub async fn spawn_second(&self) -> SecondInstance {
        self.spawn_second_with(|_| {}).await
    }

    /// [`Self::spawn_second`] with its configuration adjusted.
    pub async fn spawn_second_with(&self, adjust: impl FnOnce(&mut Config)) -> SecondInstance {
        let mut config = self.config.clone();
        adjust(&mut config);
        let app = Application::build(
            config,
            BuildOptions {
                clock: Some(std::sync::Arc::new(self.clock.clone())),
                pg_schema: self.pg_schema.clone(),
                ..BuildOptions::default()
            },
        )
        .await
        .unwrap();
        let base = format!("http://127.0.0.1:{}", app.port());
        let state = app.state();
        actix_rt::spawn(app.run_until_stopped());
        SecondInstance { base, state }
    }

    /// A store on this test's database as a `service` command run beside the server opens it:
    /// its own pool and cache, as a separate process would have.
    #[allow(dead_code)]
    pub async fn cli_store(&self) -> social_service::store::Store {
        let store = social_service::store::Store::connect(
            &self.config.database.url,
            2,
            self.pg_schema.as_deref(),
        )
        .await
        .unwrap();
        store.migrate().await.unwrap();
        store
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Signs in through the identity provider by following redirects with a cookie jar.
    pub async fn sign_in(&self, email: &str) -> Dashboard {
        let jar = std::sync::Arc::new(reqwest::cookie::Jar::default());
        let client = Client::builder()
            .cookie_provider(jar.clone())
            .build()
            .unwrap();
        let no_redirect = Client::builder()
            .cookie_provider(jar)
            .redirect(Policy::none())
            .build()
            .unwrap();
        let response = client
            // `/auth/me` (JSON) rather than the default landing, the dashboard's overview page.
            .get(self.url(&format!(
                "/auth/login?login_hint={email}&return_to=/auth/me"
            )))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "sign-in should end on /auth/me");
        let me: Value = response.json().await.unwrap();
        let user_id = me["user"]["id"].as_str().unwrap().parse().unwrap();
        Dashboard {
            client,
            no_redirect,
            user_id,
        }
    }

    /// Creates an API key through the dashboard and returns its full value.
    pub async fn create_key(&self, dashboard: &Dashboard, name: &str) -> (String, String) {
        let body: Value = dashboard
            .client
            .post(self.url("/api/keys"))
            .json(&json!({ "name": name }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (
            body["api_key"].as_str().unwrap().to_string(),
            body["key"]["id"].as_str().unwrap().to_string(),
        )
    }

    /// Records a connected account directly through the operator layer (not a public route).
    pub async fn add_account(
        &self,
        user_id: Uuid,
        platform: &str,
        name: &str,
    ) -> entity::account::Model {
        let now = self.clock_now();
        let manual = ManualAccount {
            user_id,
            platform: platform.into(),
            external_id: format!("{platform}-{}", Uuid::new_v4().simple()),
            name: name.into(),
            username: Some(name.into()),
            account_type: (platform == "instagram").then(|| "CREATOR".into()),
            profile_picture_url: None,
            // A token has no spaces (the operator endpoint refuses one that does).
            access_token: format!("plaintext-token-{}", name.replace(' ', "-")),
            refresh_token: None,
            token_expires_at: (platform != "facebook").then(|| now + chrono::Duration::days(30)),
            data_access_expires_at: (platform == "facebook")
                .then(|| now + chrono::Duration::days(90)),
        };
        operator::add_account(&self.state.store, &self.state.cipher, now, manual)
            .await
            .unwrap()
    }

    /// Creates an account on the simulator and connects it for `user_id` with the simulator's
    /// tokens (as the OAuth flow would).
    pub async fn connect(&self, user_id: Uuid, platform: &str, name: &str) -> Connected {
        let sim = self.sim.state().create_account(platform, name, None);
        let now = self.clock_now();
        let manual = ManualAccount {
            user_id,
            platform: platform.into(),
            external_id: sim.external_id.clone(),
            name: name.into(),
            username: Some(sim.username.clone()),
            account_type: (platform == "instagram").then(|| "BUSINESS".into()),
            profile_picture_url: None,
            access_token: sim.access_token.clone(),
            refresh_token: Some(sim.refresh_token.clone()),
            token_expires_at: (sim.expires_in > 0)
                .then(|| now + chrono::Duration::seconds(sim.expires_in as i64)),
            data_access_expires_at: (platform == "facebook")
                .then(|| now + chrono::Duration::days(90)),
        };
        let account = operator::add_account(&self.state.store, &self.state.cipher, now, manual)
            .await
            .unwrap();
        Connected { account, sim }
    }

    /// A fresh user on `plan` with an API key and one connected account on `platform`.
    pub async fn publisher(&self, platform: &str, plan: &str) -> Publisher {
        let email = format!("{}@example.com", Uuid::new_v4().simple());
        let dashboard = self.sign_in(&email).await;
        assert_eq!(self.set_plan(dashboard.user_id, plan).await.status(), 200);
        let (key, _) = self.create_key(&dashboard, "publisher").await;
        let connected = self
            .connect(dashboard.user_id, platform, &format!("{platform} demo"))
            .await;
        Publisher {
            key,
            user_id: dashboard.user_id,
            dashboard,
            account: connected.account,
            sim: connected.sim,
        }
    }

    /// `POST /v2/posts` with an API key.
    pub async fn post(&self, key: &str, body: &Value) -> (u16, Value) {
        let response = self
            .http
            .post(self.url("/v2/posts"))
            .header("service-api-key", key)
            .json(body)
            .send()
            .await
            .unwrap();
        let (status, answer) = status_and_json(response).await;
        // Every answer a test gets published or scheduled is what the document says.
        if status == 200 {
            crate::openapi::assert_documented("post", "/v2/posts", 200, &answer);
        }
        (status, answer)
    }

    /// The media store the service writes uploads to (the local directory or the S3 bucket).
    #[allow(dead_code)]
    pub fn media_objects(&self) -> social_service::media::objects::MediaObjects {
        social_service::media::objects::MediaObjects::open(&self.config.media).unwrap()
    }

    /// A file on the simulator's media host.
    pub fn media_url(&self, name: &str) -> String {
        format!("{}/media/{name}", self.sim.base_url)
    }

    /// What the simulator holds as published for an account, in order.
    pub fn published(&self, sim: &SimAccount) -> Vec<service_sim::state::PublishedItem> {
        self.sim
            .state()
            .published(Some(&sim.platform), Some(&sim.external_id))
    }

    /// The dashboard user's publishing history (`GET /api/published-posts`, first page).
    #[allow(dead_code)]
    pub async fn history(&self, dashboard: &Dashboard) -> Value {
        dashboard
            .client
            .get(self.url("/api/published-posts"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub fn clock_now(&self) -> DateTime<Utc> {
        use social_service::clock::Clock;
        self.clock.now()
    }

    /// A programmatic call (API-key endpoint).
    pub async fn key_get(&self, key: &str) -> Response {
        self.http
            .get(self.url("/v2/accounts"))
            .header("service-api-key", key)
            .send()
            .await
            .unwrap()
    }

    /// An operator call.
    pub async fn set_plan(&self, user_id: Uuid, plan: &str) -> Response {
        self.http
            .put(self.url(&format!("/admin/users/{user_id}/plan")))
            .bearer_auth(OPERATOR_TOKEN)
            .json(&json!({ "plan": plan }))
            .send()
            .await
            .unwrap()
    }
}

/// A background actor whose progress tests wait on, as `/api/admin/actors` shows it.
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)]
pub enum Background {
    Scheduler,
    Collector,
    TokenKeeper,
}

impl Background {
    /// Its part of the actor view.
    fn field(self) -> &'static str {
        match self {
            Self::Scheduler => "scheduler",
            Self::Collector => "collector",
            Self::TokenKeeper => "token_keeper",
        }
    }

    /// Its progress counter: completed passes (the collector: looks free to start one).
    fn counter(self, status: &Value) -> u64 {
        let field = match self {
            Self::Collector => "looks",
            Self::Scheduler | Self::TokenKeeper => "passes",
        };
        status[field]
            .as_u64()
            .unwrap_or_else(|| panic!("{self:?} has no {field}: {status}"))
    }

    /// Whether work a pass started is still running, so that what it would do is not yet
    /// visible: publishes the scheduler claimed, the collector's pass.
    fn busy(self, status: &Value) -> bool {
        match self {
            Self::Scheduler => status["in_flight"] != 0,
            Self::Collector => status["running"] == true,
            Self::TokenKeeper => status["sweeping"] == true,
        }
    }
}

/// How long a background actor may take for two passes before the test fails.
const PASSES_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl TestApp {
    /// `actor`'s status in the operator's actor view.
    pub async fn background_status(&self, actor: Background) -> Value {
        let response = self
            .http
            .get(self.url("/api/admin/actors"))
            .bearer_auth(OPERATOR_TOKEN)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(status, 200, "{body}");
        let part = body[actor.field()].clone();
        assert!(part.is_object(), "{actor:?} is not running: {body}");
        part
    }

    /// Waits until `actor` has completed two more passes than when called, and what they
    /// started has ended: after it, whatever a pass would have done given the state at the
    /// call (the clock, the rows) is visible. Two, because a pass already running at the call
    /// may have read that state before the test changed it. Fails loudly after a generous
    /// timeout (the actor is stuck, or not running).
    pub async fn wait_two_passes(&self, actor: Background) {
        let first = self.background_status(actor).await;
        let target = actor.counter(&first) + 2;
        let started = std::time::Instant::now();
        loop {
            let status = self.background_status(actor).await;
            if actor.counter(&status) >= target && !actor.busy(&status) {
                return;
            }
            assert!(
                started.elapsed() < PASSES_TIMEOUT,
                "{actor:?} did not complete two passes in {PASSES_TIMEOUT:?}: from {first} to {status}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// The token refreshes the account actors of `platform` have ended, whatever their outcome
    /// (refreshed, revoked, failed): each actor counts its refresh as it ends.
    pub fn refresh_outcomes(&self, platform: &str) -> u64 {
        ["refreshed", "revoked", "failed"]
            .iter()
            .map(|outcome| {
                self.state.metrics.counter(
                    "token_refreshes_total",
                    &[("platform", platform), ("outcome", outcome)],
                )
            })
            .sum()
    }

    /// Publishes `body` with `key`, asserting it was published. The account's actor answers a
    /// publish only after deciding whether its token is due (it checks on every publish) and
    /// after any refresh in progress has ended, been stored and been counted: so once this
    /// returns, a refresh the token keeper asked for (a sweep ends once the actor has taken the
    /// request, not the refresh) shows in the stored token and in [`Self::refresh_outcomes`].
    pub async fn publish_after_any_refresh(&self, key: &str, body: &Value) {
        let (status, result) = self.post(key, body).await;
        assert_eq!(status, 200, "{result}");
    }

    /// Waits until the account's actor shows `what` on the health board (which the actor
    /// keeps current without being asked): e.g. a publish in flight, a queued one.
    #[allow(dead_code)]
    pub async fn wait_for_actor(
        &self,
        account: &entity::account::Model,
        what: &str,
        check: impl Fn(&social_service::actors::account::ActorHealth) -> bool,
    ) {
        let started = std::time::Instant::now();
        loop {
            let health = self
                .state
                .supervisor
                .all_health()
                .into_iter()
                .find(|h| h.account_id == account.id);
            if health.as_ref().is_some_and(&check) {
                return;
            }
            assert!(
                started.elapsed() < PASSES_TIMEOUT,
                "the actor never showed {what}: {health:?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
}

/// A connected account: our row and the simulator's side of it.
pub struct Connected {
    pub account: entity::account::Model,
    pub sim: SimAccount,
}

/// A user ready to publish: key, account (ours and the simulator's).
pub struct Publisher {
    pub key: String,
    pub user_id: Uuid,
    #[allow(dead_code)]
    pub dashboard: Dashboard,
    pub account: entity::account::Model,
    pub sim: SimAccount,
}

impl Publisher {
    /// A `POST /v2/posts` body for this publisher's account.
    pub fn body(&self, content: Value) -> Value {
        let platform = self.account.platform;
        let mut content = content;
        content["platform"] = json!(platform);
        json!({"post": {
            "accountId": self.account.id,
            "content": content,
            "target": {"targetType": platform},
        }})
    }
}

/// Status and JSON body of a response.
pub async fn status_and_json(response: Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// Waits until `check` holds, polling every 50 ms; fails the test after 10 s (the background
/// actors the tests wait on run every second or faster there).
pub async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..200 {
        if check().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

/// A fault that answers an account's calls with the error `kind`.
pub fn fault(kind: FaultKind) -> FaultSpec {
    FaultSpec {
        error: Some(kind),
        ..FaultSpec::default()
    }
}

/// Makes the simulator apply `spec` to `account`'s calls (replacing any fault set before).
pub fn set_fault(sim: &Simulator, account: &SimAccount, spec: FaultSpec) {
    sim.state()
        .set_faults(&account.platform, &account.external_id, spec);
}

/// The exact catalogue body of an error.
pub fn error_body(code: &str, message: &str) -> Value {
    json!({ "success": false, "error": code, "message": message })
}

/// `GET /_sim/violations` of a simulator running in another process (the demo binary's):
/// `{count, violations}`.
pub async fn sim_violations(simulator_url: &str) -> Value {
    reqwest::get(format!("{simulator_url}/_sim/violations"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// No `style=` attribute, no inline event handler, and every `<script>` is an empty element
/// loading a file of ours.
pub fn assert_nothing_inline(body: &str) {
    let lower = body.to_ascii_lowercase();
    assert!(!lower.contains("style="), "a style attribute:\n{body}");
    assert!(!lower.contains("<style"), "a style element:\n{body}");
    for (at, _) in lower.match_indices("<script") {
        let tag_end = at + lower[at..].find('>').unwrap() + 1;
        let tag = &lower[at..tag_end];
        assert!(tag.contains(" src=\"/static/"), "{tag}");
        assert!(
            lower[tag_end..].starts_with("</script>"),
            "an inline script body after {tag}"
        );
    }
    // An event-handler attribute: ` on<letters>=` inside a tag.
    for (at, _) in lower.match_indices(" on") {
        let name: String = lower[at + 3..]
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect();
        let after = &lower[at + 3 + name.len()..];
        assert!(
            name.is_empty() || !after.starts_with('='),
            "an inline event handler on{name}="
        );
    }
}
