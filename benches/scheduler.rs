//! Scheduler dispatch benchmark: N posts due at the same instant across M accounts, published
//! through the account actors to an in-process simulator with zero latency.
//!
//! ```sh
//! cargo bench --bench scheduler                                   # SQLite, 10,000 posts, 1,000 accounts
//! BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench scheduler
//! BENCH_POSTS=2000 BENCH_ACCOUNTS=200 BENCH_DB_POOL=30 cargo bench --bench scheduler
//! ```
//!
//! Reports the dispatch lag (claim time − due time) and the publish lag (published − due) as
//! p50/p99, and posts published per second. Bounded: gives up after `BENCH_TIMEOUT_SECS` (600).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use chrono::Utc;
use secrecy::SecretString;
use serde_json::json;
use service_sim::{SimConfig, Simulator};
use social_service::{
    Application, BuildOptions,
    config::{Config, PlatformsConfig},
    crypto::TokenCipher,
    operator::{self, ManualAccount},
    store::NewScheduledPost,
};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

#[actix_web::main]
async fn main() {
    let posts = env_usize("BENCH_POSTS", 10_000);
    let accounts_n = env_usize("BENCH_ACCOUNTS", 1_000).max(1);
    let timeout = Duration::from_secs(env_usize("BENCH_TIMEOUT_SECS", 600) as u64);
    let sim = Simulator::start(SimConfig {
        processing_delay: Duration::ZERO,
        ..SimConfig::default()
    })
    .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    let (database, schema) = match std::env::var("BENCH_DATABASE_URL") {
        Ok(url) if !url.is_empty() => {
            let schema = format!("bench_{}", uuid::Uuid::new_v4().simple());
            let admin = sea_orm::Database::connect(&url).await.unwrap();
            use sea_orm::ConnectionTrait;
            admin
                .execute_unprepared(&format!("CREATE SCHEMA {schema}"))
                .await
                .unwrap();
            (url, Some(schema))
        }
        _ => (
            format!("sqlite://{}/bench.db?mode=rwc", dir.path().display()),
            None,
        ),
    };
    config.database.url = database.clone();
    config.database.max_connections = env_usize("BENCH_DB_POOL", 10) as u32;
    config.server.bind = "127.0.0.1:0".into();
    config.secrets.session_key = Some(SecretString::from("b".repeat(40)));
    config.secrets.token_encryption_key = Some(SecretString::from(TokenCipher::generate_key()));
    config.secrets.operator_token = Some(SecretString::from("bench-operator-token"));
    config.platforms = PlatformsConfig::simulator(&sim.base_url);
    config.platforms.poll_interval_ms = 10;
    config.scheduler.enabled = false; // started below, once the posts are in
    let backend = if schema.is_some() {
        "postgres"
    } else {
        "sqlite"
    };

    let app = Application::build(
        config.clone(),
        BuildOptions {
            clock: None,
            pg_schema: schema.clone(),
            ..BuildOptions::default()
        },
    )
    .await
    .unwrap();
    let state = app.state();
    let now = Utc::now();
    let user = state
        .store
        .upsert_oidc_user("bench", "bench", Some("bench@example.com"), None, now)
        .await
        .unwrap();
    let mut accounts = Vec::with_capacity(accounts_n);
    for i in 0..accounts_n {
        let sim_account = sim
            .state()
            .create_account("threads", &format!("bench{i}"), None);
        let account = operator::add_account(
            &state.store,
            &state.cipher,
            now,
            ManualAccount {
                user_id: user.id,
                platform: "threads".into(),
                external_id: sim_account.external_id,
                name: sim_account.name,
                username: None,
                account_type: None,
                profile_picture_url: None,
                access_token: sim_account.access_token,
                refresh_token: None,
                token_expires_at: None,
                data_access_expires_at: None,
            },
        )
        .await
        .unwrap();
        accounts.push(account);
    }
    let due = Utc::now() + chrono::Duration::seconds(2);
    let mut ids = Vec::with_capacity(posts);
    for i in 0..posts {
        let account = &accounts[i % accounts_n];
        let text = format!("bench post {i}");
        let row = state
            .store
            .insert_scheduled_post(
                NewScheduledPost {
                    user_id: user.id,
                    account_id: account.id,
                    platform: social_service::publish::plan::Platform::Threads,
                    page_name: account.display_name.clone(),
                    request: json!({"post": {
                        "accountId": account.id,
                        "content": {"text": text, "platform": "threads"},
                        "target": {"targetType": "threads"},
                    }}),
                    content: json!({"text": text, "media_urls": []}),
                    scheduled_at: due,
                },
                now,
            )
            .await
            .unwrap();
        ids.push(row.id);
    }
    println!(
        "{backend}: {posts} posts due at one instant across {accounts_n} accounts, pool of {} connections",
        config.database.max_connections
    );

    // Start the scheduler and wait for the due instant to pass and every post to end.
    // Its service is built whatever `scheduler.enabled` says; only the actor was left out. The
    // address is held to the end: an actor whose addresses are all gone stops.
    let scheduler =
        social_service::actors::scheduler::SchedulerActor::new(state.scheduling.clone());
    let _scheduler = actix::Actor::start(scheduler);
    let started = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let published = sim.state().published(Some("threads"), None).len();
        if published >= posts {
            break;
        }
        if started.elapsed() > timeout {
            println!("timed out with {published}/{posts} published");
            break;
        }
    }
    let mut publish_lag = Vec::with_capacity(posts);
    let mut dispatch_lag = Vec::with_capacity(posts);
    let mut last = due;
    let mut failed = 0;
    for id in &ids {
        let row = state.store.find_scheduled_post(*id).await.unwrap().unwrap();
        if let Some(at) = row.claimed_at {
            dispatch_lag.push((at - due).num_milliseconds());
        }
        match row.published_at {
            Some(at) => {
                publish_lag.push((at - due).num_milliseconds());
                last = last.max(at);
            }
            None => failed += 1,
        }
    }
    publish_lag.sort_unstable();
    dispatch_lag.sort_unstable();
    let span = (last - due).num_milliseconds().max(1) as f64 / 1000.0;
    println!(
        "published {}/{posts} ({failed} not published) in {span:.2} s after the due time: {:.0} posts/s",
        publish_lag.len(),
        publish_lag.len() as f64 / span
    );
    println!(
        "dispatch lag (due → claimed):   p50 {} ms, p99 {} ms, max {} ms",
        percentile(&dispatch_lag, 0.50),
        percentile(&dispatch_lag, 0.99),
        dispatch_lag.last().copied().unwrap_or(0)
    );
    println!(
        "publish lag (due → published): p50 {} ms, p99 {} ms, max {} ms",
        percentile(&publish_lag, 0.50),
        percentile(&publish_lag, 0.99),
        publish_lag.last().copied().unwrap_or(0)
    );
    if let Some(schema) = schema {
        let admin = sea_orm::Database::connect(&database).await.unwrap();
        use sea_orm::ConnectionTrait;
        let _ = admin
            .execute_unprepared(&format!("DROP SCHEMA {schema} CASCADE"))
            .await;
    }
    let _ = Arc::strong_count(&state.supervisor);
}
