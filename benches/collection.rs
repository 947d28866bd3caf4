//! Daily collection benchmark: one date collected for N accounts (facebook, instagram, threads,
//! youtube and tiktok in turn) through their account actors, against the in-process simulator
//! with a fixed latency on every platform call.
//!
//! ```sh
//! cargo bench --bench collection                      # SQLite, 10,000 accounts, 100 ms per call
//! BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench collection
//! BENCH_ACCOUNTS=2000 BENCH_LATENCY_MS=100 BENCH_CONCURRENCY=16,64,256 cargo bench --bench collection
//! ```
//!
//! For each concurrency setting it collects a different date (so nothing is skipped) and reports
//! accounts/s, the total time, the platform calls made per account, and the ratio of the
//! measured rate to the bound the latency sets (concurrency / (calls per account × latency)).
//! Bounded: a setting that has not finished after `BENCH_TIMEOUT_SECS` (900) is reported as such.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use chrono::Utc;
use service_sim::state::FaultSpec;
use social_service::{
    services::collection::{self, CollectionRun, Trigger},
    services::operator::{self, ManualAccount},
};

use common::{BenchDatabase, env_usize};

#[actix_web::main]
async fn main() {
    let accounts_n = env_usize("BENCH_ACCOUNTS", 10_000).max(1);
    let latency_ms = env_usize("BENCH_LATENCY_MS", 100) as u64;
    let timeout = Duration::from_secs(env_usize("BENCH_TIMEOUT_SECS", 900) as u64);
    let settings: Vec<usize> = std::env::var("BENCH_CONCURRENCY")
        .unwrap_or_else(|_| "16,64".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let sim = common::start_simulator();

    let database = BenchDatabase::from_env().await;
    let backend = database.backend();
    let mut config = common::config(&sim, &database);
    config.database.max_connections = env_usize("BENCH_DB_POOL", 20) as u32;
    config.scheduler.enabled = false;
    config.collector.enabled = false; // driven directly below
    // Actors stay up for the whole run (the benchmark is about the collection, not restarts).
    config.publishing.actor_idle_secs = 3_600;

    let app = common::build(config, &database).await;
    let state = app.state();
    let now = Utc::now();
    let user = common::bench_user(&state.store, now).await;
    let platforms = ["facebook", "instagram", "threads", "youtube", "tiktok"];
    let mut accounts = Vec::with_capacity(accounts_n);
    for i in 0..accounts_n {
        let platform = platforms[i % platforms.len()];
        let sim_account = sim
            .state()
            .create_account(platform, &format!("bench {i}"), None);
        sim.state().set_faults(
            platform,
            &sim_account.external_id,
            FaultSpec {
                latency_ms,
                ..FaultSpec::default()
            },
        );
        let account = operator::add_account(
            &state.store,
            &state.cipher,
            now,
            ManualAccount {
                username: Some(sim_account.username.clone()),
                account_type: (platform == "instagram").then(|| "BUSINESS".into()),
                ..common::manual_account(user.id, &sim_account)
            },
        )
        .await
        .unwrap();
        accounts.push((account, sim_account));
    }
    let total_requests = || {
        accounts
            .iter()
            .map(|(_, sim_account)| {
                sim.state()
                    .request_count(&sim_account.platform, &sim_account.external_id)
            })
            .sum::<u64>()
    };
    println!(
        "{backend}: daily collection of {accounts_n} accounts, {latency_ms} ms per platform call"
    );
    println!(
        "| concurrency | accounts/s | total | calls/account | bound (accounts/s) | measured / bound | failed |"
    );
    println!("|---|---|---|---|---|---|---|");
    let models: Vec<_> = accounts
        .iter()
        .map(|(account, _)| account.clone())
        .collect();
    for (index, concurrency) in settings.iter().enumerate() {
        let date = (now - chrono::Duration::days(index as i64 + 1)).date_naive();
        let calls_before = total_requests();
        let started = Instant::now();
        let run = state.collection.collect_with(
            CollectionRun {
                date,
                accounts: collection::collectable(models.clone()),
                recollect: false,
                trigger: Trigger::Manual,
            },
            *concurrency,
        );
        let Ok(report) = tokio::time::timeout(timeout, run).await else {
            println!(
                "| {concurrency} | timed out after {} s | | | | | |",
                timeout.as_secs()
            );
            continue;
        };
        let elapsed = started.elapsed().as_secs_f64();
        let calls = (total_requests() - calls_before) as f64 / accounts_n as f64;
        let rate = accounts_n as f64 / elapsed;
        let bound = *concurrency as f64 / (calls.max(1.0) * latency_ms.max(1) as f64 / 1000.0);
        println!(
            "| {concurrency} | {rate:.0} | {elapsed:.1} s | {calls:.2} | {bound:.0} | {:.2} | {} |",
            rate / bound,
            report.failed_count
        );
    }
}
