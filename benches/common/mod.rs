//! What the benchmarks share: their numeric knobs from the environment, the in-process
//! simulator, the database of a run (SQLite, or a schema of its own on PostgreSQL), the service's
//! configuration and start against the simulator, and the user, key and accounts they publish
//! with.

// Every benchmark compiles this module into its own binary and uses only part of it.
#![allow(dead_code)]

use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, Set};
use secrecy::SecretString;
use service_sim::{SimConfig, Simulator, state::SimAccount};
use social_service::{
    Application, BuildOptions,
    config::{Config, PlatformsConfig},
    crypto::{self, Binding, NewApiKey, TokenCipher},
    domain::plan::Platform,
    services::operator::ManualAccount,
    store::Store,
    usage::Plan,
};
use uuid::Uuid;

/// The operator token of every benchmark's service.
pub const OPERATOR_TOKEN: &str = "bench-operator-token-123";

/// The number in the environment variable `name`, or `default` when unset or not a number.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The simulator, in this process, with no processing delay: the benchmarks measure the
/// service, not the platforms' waits.
pub fn start_simulator() -> Simulator {
    Simulator::start(SimConfig {
        processing_delay: Duration::ZERO,
        ..SimConfig::default()
    })
    .unwrap()
}

/// The database of one run.
pub struct BenchDatabase {
    pub url: String,
    /// The run's PostgreSQL schema; `None` on SQLite.
    pub schema: Option<String>,
    /// Holds the SQLite file (`bench.db`), removed with it.
    pub dir: tempfile::TempDir,
}

impl BenchDatabase {
    /// A fresh schema on `BENCH_DATABASE_URL` when it is set, else a SQLite file.
    pub async fn from_env() -> Self {
        match std::env::var("BENCH_DATABASE_URL") {
            Ok(url) if !url.is_empty() => {
                let schema = format!("bench_{}", Uuid::new_v4().simple());
                let admin = sea_orm::Database::connect(&url).await.unwrap();
                admin
                    .execute_unprepared(&format!("CREATE SCHEMA {schema}"))
                    .await
                    .unwrap();
                let _ = admin.close().await;
                Self {
                    url,
                    schema: Some(schema),
                    dir: tempfile::tempdir().unwrap(),
                }
            }
            _ => Self::sqlite(),
        }
    }

    /// A SQLite file in a temporary directory.
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self {
            url: format!("sqlite://{}/bench.db?mode=rwc", dir.path().display()),
            schema: None,
            dir,
        }
    }

    /// `postgres` or `sqlite`.
    pub fn backend(&self) -> &'static str {
        if self.schema.is_some() {
            "postgres"
        } else {
            "sqlite"
        }
    }

    /// Drops the run's PostgreSQL schema (nothing to do on SQLite: the file goes with the
    /// temporary directory).
    pub async fn drop_schema(&self) {
        if let Some(schema) = &self.schema {
            let admin = sea_orm::Database::connect(&self.url).await.unwrap();
            let _ = admin
                .execute_unprepared(&format!("DROP SCHEMA {schema} CASCADE"))
                .await;
            let _ = admin.close().await;
        }
    }
}

/// The service's configuration on `database`: a free port on loopback, fresh secrets, every
/// platform on the simulator. Each benchmark adjusts the rest.
pub fn config(sim: &Simulator, database: &BenchDatabase) -> Config {
    let mut config = Config::default();
    config.database.url = database.url.clone();
    config.server.bind = "127.0.0.1:0".into();
    config.secrets.session_key = Some(SecretString::from("b".repeat(40)));
    config.secrets.token_encryption_key = Some(SecretString::from(TokenCipher::generate_key()));
    config.secrets.operator_token = Some(SecretString::from(OPERATOR_TOKEN));
    config.platforms = PlatformsConfig::simulator(&sim.base_url);
    config
}

/// The service built on `database` (migrated, background actors started, not yet serving).
pub async fn build(config: Config, database: &BenchDatabase) -> Application {
    Application::build(
        config,
        BuildOptions {
            clock: None,
            pg_schema: database.schema.clone(),
            ..BuildOptions::default()
        },
    )
    .await
    .unwrap()
}

/// The user the benchmarks' accounts and posts belong to.
pub async fn bench_user(store: &Store, now: DateTime<Utc>) -> entity::user::Model {
    store
        .upsert_oidc_user("bench", "bench", Some("bench@example.com"), None, now)
        .await
        .unwrap()
}

/// Puts `user_id` on the Pro plan and gives it an API key to publish with.
pub async fn pro_key(store: &Store, user_id: Uuid, now: DateTime<Utc>) -> NewApiKey {
    store
        .set_plan(user_id, Plan::Pro, Some("monthly".into()), None, now)
        .await
        .unwrap();
    let key = crypto::generate_api_key();
    store
        .insert_api_key(user_id, "bench", &key, now)
        .await
        .unwrap();
    key
}

/// `account` of the simulator as an operator adds it for `user_id`: its token, which does not
/// expire, and nothing else.
pub fn manual_account(user_id: Uuid, account: &SimAccount) -> ManualAccount {
    ManualAccount {
        user_id,
        platform: account.platform.clone(),
        external_id: account.external_id.clone(),
        name: account.name.clone(),
        username: None,
        account_type: None,
        profile_picture_url: None,
        access_token: account.access_token.clone(),
        refresh_token: None,
        token_expires_at: None,
        data_access_expires_at: None,
    }
}

/// A new row of a valid account and its id, for inserting many at once (faster than connecting
/// each): `access_token` sealed for the row, no refresh token, no expiry.
pub fn account_row(
    cipher: &TokenCipher,
    user_id: Uuid,
    platform: Platform,
    external_id: String,
    display_name: String,
    access_token: &str,
    now: DateTime<Utc>,
) -> (Uuid, entity::account::ActiveModel) {
    let id = Uuid::new_v4();
    let row = entity::account::ActiveModel {
        id: Set(id),
        user_id: Set(user_id),
        platform: Set(platform),
        external_id: Set(external_id),
        display_name: Set(display_name),
        username: Set(None),
        account_type: Set(None),
        profile_picture_url: Set(None),
        access_token_enc: Set(cipher
            .encrypt(&Binding::account_access_token(id), access_token)
            .unwrap()),
        refresh_token_enc: Set(None),
        token_expires_at: Set(None),
        data_access_expires_at: Set(None),
        is_valid: Set(true),
        disabled: Set(false),
        disabled_at: Set(None),
        last_error: Set(None),
        refresh_lease_until: Set(None),
        login_route: Set(Default::default()),
        token_issued_at: Set(None),
        expiry_notice_for: Set(None),
        data_access_notice_for: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    };
    (id, row)
}
