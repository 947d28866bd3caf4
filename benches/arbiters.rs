//! Account actors on several arbiters (`publishing.actor_arbiters`): how long an idle account's
//! actor takes to answer a health message (`Supervisor::health`, a round trip through its
//! mailbox on its arbiter thread) while 50 other accounts each publish a 50 MB youtube video at
//! once through the in-process simulator (the service streams each video from the simulator's
//! media host into a resumable upload). Measured with 1 arbiter and with the default (one per
//! core) in the same run, alternating over `BENCH_ROUNDS` rounds (each a fresh service) whose
//! samples are pooled, and reported as ratios (default ÷ 1).
//!
//! ```sh
//! cargo bench --bench arbiters
//! # knobs: BENCH_UPLOADERS (50), BENCH_VIDEO_MB (50), BENCH_PROBES (8 idle accounts),
//! #        BENCH_ARBITERS (the "many" case; default: one per core), BENCH_ROUNDS (5),
//! #        BENCH_MAX_SECONDS (180 per case)
//! ```
//!
//! Every case is bounded: probing stops when the uploads end or at `BENCH_MAX_SECONDS`. The
//! simulator is plain http on loopback, so the per-byte work on the arbiters is lighter than
//! with TLS to a real platform; the latency under load is a lower bound of production's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use chrono::Utc;
use serde_json::json;
use service_sim::Simulator;
use social_service::services::operator;

use common::{BenchDatabase, env_usize};

struct Case {
    arbiters: usize,
    /// Health round trips while the uploads ran, in ms, sorted.
    latencies: Vec<f64>,
    /// The same on the idle service, before the uploads (for scale).
    idle: Vec<f64>,
    uploads_ok: usize,
    uploads_failed: usize,
    upload_seconds: f64,
}

impl Case {
    fn pct(values: &[f64], p: f64) -> f64 {
        values
            .get(((values.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    }
    fn p50(&self) -> f64 {
        Self::pct(&self.latencies, 0.5)
    }
    fn p99(&self) -> f64 {
        Self::pct(&self.latencies, 0.99)
    }
}

async fn run_case(
    sim: &Simulator,
    arbiters: usize,
    uploaders: usize,
    probes: usize,
    video_bytes: u64,
    max_seconds: u64,
) -> Case {
    let database = BenchDatabase::sqlite();
    let mut config = common::config(sim, &database);
    config.server.workers = 2;
    config.platforms.poll_interval_ms = 20;
    config.publishing.actor_arbiters = Some(arbiters);
    // The uploads are published through the API; this bench measures the arbiters, so their
    // actors must run there, not on the HTTP worker that took the publish.
    config.publishing.actors_on_http_workers = false;
    config.publishing.media_allow_hosts = vec![format!("127.0.0.1:{}", sim.port)];
    config.publishing.youtube_daily_units = 1_000_000;
    config.scheduler.enabled = false;
    config.collector.enabled = false;

    let app = common::build(config, &database).await;
    let base = format!("http://127.0.0.1:{}", app.port());
    let state = app.state();
    let server = app.handle();
    actix_rt::spawn(app.run_until_stopped());

    let now = Utc::now();
    let user = common::bench_user(&state.store, now).await;
    let key = common::pro_key(&state.store, user.id, now).await;
    let add = |platform: &'static str, name: String| {
        let s = sim.state().create_account(platform, &name, None);
        operator::add_account(
            &state.store,
            &state.cipher,
            now,
            common::manual_account(user.id, &s),
        )
    };
    let mut uploading = Vec::new();
    for i in 0..uploaders {
        uploading.push(add("youtube", format!("Channel {i}")).await.unwrap());
    }
    let mut idle = Vec::new();
    for i in 0..probes {
        idle.push(add("threads", format!("idle{i}")).await.unwrap());
    }

    // The idle accounts' actors start here; their round trips on the quiet service for scale.
    let supervisor = state.supervisor.clone();
    let mut quiet = Vec::new();
    for _ in 0..20 {
        for account in &idle {
            let t = Instant::now();
            supervisor.health(account).await.unwrap();
            quiet.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }

    // Every uploader publishes one video at once.
    let video = format!("{}/media/sized/{video_bytes}.mp4", sim.base_url);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(max_seconds + 60))
        .build()
        .unwrap();
    let running = Arc::new(AtomicUsize::new(uploaders));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for account in &uploading {
        let request = client
            .post(format!("{base}/v2/posts"))
            .header("service-api-key", &key.full)
            .json(&json!({"post": {
                "accountId": account.id,
                "content": {"text": "Bench video\n\nFifty megabytes", "mediaUrls": [video], "platform": "youtube"},
                "target": {"targetType": "youtube"},
            }}));
        let running = running.clone();
        tasks.push(actix_rt::spawn(async move {
            let ok = match request.send().await {
                Ok(response) if response.status().is_success() => true,
                Ok(response) => {
                    let status = response.status();
                    let body = response.text().await.unwrap_or_default();
                    eprintln!("upload failed: {status} {body}");
                    false
                }
                Err(error) => {
                    eprintln!("upload failed: {error}");
                    false
                }
            };
            running.fetch_sub(1, Ordering::Relaxed);
            ok
        }));
    }

    // Probe the idle actors, one after another, until the uploads are over.
    let deadline = started + Duration::from_secs(max_seconds);
    let mut latencies = Vec::new();
    let mut i = 0;
    while running.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
        let account = &idle[i % idle.len()];
        i += 1;
        let t = Instant::now();
        if supervisor.health(account).await.is_ok() {
            latencies.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        // A pause so the probe is a light, steady sample rather than load of its own.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let upload_seconds = started.elapsed().as_secs_f64();
    let (mut uploads_ok, mut uploads_failed) = (0, 0);
    for task in tasks {
        if running.load(Ordering::Relaxed) > 0 && Instant::now() >= deadline {
            // Over time: the rest count as failed; the server stops under them below.
            task.abort();
            uploads_failed += 1;
            continue;
        }
        match task.await {
            Ok(true) => uploads_ok += 1,
            _ => uploads_failed += 1,
        }
    }
    server.stop(false).await;
    latencies.sort_by(f64::total_cmp);
    quiet.sort_by(f64::total_cmp);
    Case {
        arbiters,
        latencies,
        idle: quiet,
        uploads_ok,
        uploads_failed,
        upload_seconds,
    }
}

#[actix_web::main]
async fn main() {
    let uploaders = env_usize("BENCH_UPLOADERS", 50);
    let video_mb = env_usize("BENCH_VIDEO_MB", 50) as u64;
    let probes = env_usize("BENCH_PROBES", 8).max(1);
    let max_seconds = env_usize("BENCH_MAX_SECONDS", 180) as u64;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let many = env_usize("BENCH_ARBITERS", cores);
    let rounds = env_usize("BENCH_ROUNDS", 5).max(1);

    let sim = common::start_simulator();
    println!(
        "health round trip of {probes} idle account actors while {uploaders} accounts each publish a \
         {video_mb} MB youtube video (simulator); {cores} cores\n"
    );
    let mut cases: Vec<Case> = Vec::new();
    for arbiters in std::iter::repeat_n([1, many], rounds).flatten() {
        let case = run_case(
            &sim,
            arbiters,
            uploaders,
            probes,
            video_mb * 1024 * 1024,
            max_seconds,
        )
        .await;
        println!(
            "actor_arbiters = {:<3}  quiet p50 {:>7.3} ms | under uploads p50 {:>8.3} ms  p99 {:>8.3} ms  max {:>8.3} ms  ({} samples; uploads {} ok, {} failed, {:.1} s)",
            case.arbiters,
            Case::pct(&case.idle, 0.5),
            case.p50(),
            case.p99(),
            case.latencies.last().copied().unwrap_or(f64::NAN),
            case.latencies.len(),
            case.uploads_ok,
            case.uploads_failed,
            case.upload_seconds,
        );
        cases.push(case);
    }
    // All rounds of a setting pooled into one case.
    let pooled = |arbiters: usize| {
        let of = || cases.iter().filter(move |c| c.arbiters == arbiters);
        let mut latencies: Vec<f64> = of().flat_map(|c| c.latencies.clone()).collect();
        latencies.sort_by(f64::total_cmp);
        let mut idle: Vec<f64> = of().flat_map(|c| c.idle.clone()).collect();
        idle.sort_by(f64::total_cmp);
        Case {
            arbiters,
            latencies,
            idle,
            uploads_ok: of().map(|c| c.uploads_ok).sum(),
            uploads_failed: of().map(|c| c.uploads_failed).sum(),
            upload_seconds: of().map(|c| c.upload_seconds).sum(),
        }
    };
    let (one, many) = (pooled(1), pooled(many));
    println!("\n{rounds} rounds pooled:");
    for case in [&one, &many] {
        println!(
            "actor_arbiters = {:<3}  p50 {:>8.3} ms  p99 {:>8.3} ms  ({} samples; uploads {} ok, {} failed)",
            case.arbiters,
            case.p50(),
            case.p99(),
            case.latencies.len(),
            case.uploads_ok,
            case.uploads_failed,
        );
    }
    println!(
        "actor_arbiters = {} vs 1: p50 {:.3} ×, p99 {:.3} × (below 1 = faster answers with more arbiters)",
        many.arbiters,
        many.p50() / one.p50(),
        many.p99() / one.p99(),
    );
    // Both services are still live (pools, actors on their arbiters); tearing them down as the
    // runtime drops has nothing to measure and once panicked in sqlx's clean-up, so leave now.
    std::process::exit(0);
}
