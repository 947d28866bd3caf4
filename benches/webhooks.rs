//! Webhook delivery under load, both parts in one process run:
//!
//! - **A, fan-out and latency.** Users publish threads text posts to the in-process simulator
//!   (zero latency) at a paced `BENCH_EVENTS_PER_SECOND` for `BENCH_SECONDS`; each published
//!   outcome is a `post.published` event the service writes to its outbox as in production,
//!   and each event goes to every endpoint of its user. The endpoints are on a receiver in this
//!   process (actix-web on loopback, answering 204) that keeps the first arrival of each
//!   `webhook-id`. Measured: event time (the body's `timestamp`) → first attempt's arrival,
//!   p50 / p99 / max, messages delivered a second, and that every event reached every endpoint
//!   of its user. Run once per shape of `BENCH_SHAPES` (`users x endpoints per user`).
//! - **B, publishing with and without webhooks.** The service bench's publish load (32
//!   connections, closed loop, one user's key over many threads profiles) in alternated rounds:
//!   with the user's one endpoint disabled (the outbox writes nothing) and active (each publish
//!   is one message to the receiver, delivered by the same process). Publishes a second each
//!   way and their ratio; the delivery queue drains between rounds.
//!
//! ```sh
//! cargo bench --bench webhooks                                                   # SQLite
//! BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench webhooks
//! # knobs: BENCH_EVENTS_PER_SECOND (1000), BENCH_SECONDS (10), BENCH_SHAPES ("10x10,100x1"),
//! #        BENCH_DRAIN_SECONDS (120), BENCH_PUBLISH_SECONDS (3), BENCH_ROUNDS (3),
//! #        BENCH_CONNECTIONS (32), BENCH_ONLY (fanout,publish; default both)
//! ```
//!
//! The service runs with its shipped `[webhooks]` settings (`max_in_flight` 256,
//! `poll_interval_ms` 500: the delivery actor is woken by the commits that write events, so the
//! poll interval does not pace these deliveries) and the service bench's publishing settings.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;
use service_sim::Simulator;
use social_service::{
    AppState,
    config::Config,
    services::{
        operator,
        webhooks::{EndpointInput, EndpointPatch},
    },
};
use uuid::Uuid;

use common::{BenchDatabase, env_usize};

/// The first arrival of one message at the receiver.
#[derive(Debug, Clone)]
struct Arrival {
    at: DateTime<Utc>,
    /// The event's time, from the body's `timestamp`.
    event_at: DateTime<Utc>,
    /// The endpoint's place in its URL: `/hook/{tag}/{user}/{endpoint}`.
    tag: String,
    user: usize,
    endpoint: usize,
    submission: Option<Uuid>,
}

#[derive(Deserialize)]
struct MessageBody {
    timestamp: DateTime<Utc>,
    data: MessageData,
}

#[derive(Deserialize)]
struct MessageData {
    post_submission_id: Option<Uuid>,
}

/// What the receiver has seen: each `webhook-id`'s first arrival, and every request.
#[derive(Default)]
struct Receiver {
    first: Mutex<HashMap<String, Arrival>>,
    requests: AtomicUsize,
}

impl Receiver {
    fn record(&self, id: String, path: &str, at: DateTime<Utc>, body: &[u8]) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let mut parts = path.trim_start_matches("/hook/").split('/');
        let (Some(tag), Some(user), Some(endpoint)) = (parts.next(), parts.next(), parts.next())
        else {
            return;
        };
        let Ok(body) = serde_json::from_slice::<MessageBody>(body) else {
            return;
        };
        let arrival = Arrival {
            at,
            event_at: body.timestamp,
            tag: tag.to_string(),
            user: user.parse().unwrap_or(usize::MAX),
            endpoint: endpoint.parse().unwrap_or(usize::MAX),
            submission: body.data.post_submission_id,
        };
        self.first.lock().unwrap().entry(id).or_insert(arrival);
    }

    /// The first arrivals at the endpoints tagged `tag`.
    fn arrivals(&self, tag: &str) -> Vec<Arrival> {
        self.first
            .lock()
            .unwrap()
            .values()
            .filter(|a| a.tag == tag)
            .cloned()
            .collect()
    }

    fn count(&self, tag: &str) -> usize {
        self.first
            .lock()
            .unwrap()
            .values()
            .filter(|a| a.tag == tag)
            .count()
    }
}

async fn hook(
    request: HttpRequest,
    body: web::Bytes,
    receiver: web::Data<Receiver>,
) -> HttpResponse {
    let at = Utc::now();
    let id = request
        .headers()
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    receiver.record(id, request.path(), at, &body);
    HttpResponse::NoContent().finish()
}

/// Starts the receiver (one worker: it is part of the load on the same cores); its address.
fn start_receiver(receiver: web::Data<Receiver>) -> String {
    let server = HttpServer::new(move || {
        App::new()
            .app_data(receiver.clone())
            .route("/hook/{tag}/{user}/{endpoint}", web::post().to(hook))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .unwrap();
    let address = server.addrs()[0];
    actix_rt::spawn(server.run());
    format!("127.0.0.1:{}", address.port())
}

/// The service's configuration: the service bench's publishing settings, and the receiver's
/// `host:port` allowed as a plain-http endpoint.
fn service_config(sim: &Simulator, database: &BenchDatabase, receiver: &str) -> Config {
    let mut config = common::config(sim, database);
    config.server.workers = 2;
    config.platforms.poll_interval_ms = 5;
    config.publishing.threads_calls_per_hour = 1_000_000_000;
    config.publishing.queue_capacity = 1_000;
    config.usage.last_used_flush_ms = 1_000;
    config.collector.enabled = false;
    config.webhooks.allow_hosts = vec![receiver.to_string()];
    config
}

/// A Pro user with a key, `profiles` threads accounts on the simulator, and `endpoints`
/// endpoints on the receiver under `/hook/{tag}/{index}/…`.
struct Publisher {
    user_id: Uuid,
    key: String,
    accounts: Vec<Uuid>,
    endpoints: Vec<Uuid>,
}

async fn publisher(
    sim: &Simulator,
    state: &AppState,
    receiver: &str,
    (tag, index): (&str, usize),
    profiles: usize,
    endpoints: usize,
) -> Publisher {
    let now = Utc::now();
    let subject = format!("{tag}-{index}");
    let user = state
        .store
        .upsert_oidc_user("bench", &subject, None, None, now)
        .await
        .unwrap();
    let key = common::pro_key(&state.store, user.id, now).await;
    let mut accounts = Vec::new();
    for p in 0..profiles {
        let s = sim
            .state()
            .create_account("threads", &format!("{subject}-{p}"), None);
        let account = operator::add_account(
            &state.store,
            &state.cipher,
            now,
            common::manual_account(user.id, &s),
        )
        .await
        .unwrap();
        accounts.push(account.id);
    }
    let mut ids = Vec::new();
    for e in 0..endpoints {
        let input = EndpointInput {
            url: format!("http://{receiver}/hook/{tag}/{index}/{e}"),
            ..EndpointInput::default()
        };
        let (endpoint, _secret) = state.webhooks.create(user.id, input).await.unwrap();
        ids.push(endpoint.id);
    }
    Publisher {
        user_id: user.id,
        key: key.full.clone(),
        accounts,
        endpoints: ids,
    }
}

/// One threads text post to `account` with `key`.
fn publish_request(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    account: Uuid,
    i: usize,
) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("service-api-key", key)
        .json(&json!({"post": {
            "accountId": account,
            "content": {"text": format!("bench {i} {}", Uuid::new_v4()), "platform": "threads"},
            "target": {"targetType": "threads"},
        }}))
}

/// The submission a publish answered, `None` for a failure.
async fn published(request: reqwest::RequestBuilder) -> Option<Uuid> {
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body: serde_json::Value = response.json().await.ok()?;
    body["data"]["post_submission_id"].as_str()?.parse().ok()
}

/// This process's CPU time so far (user + system), in seconds.
fn process_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 2..)) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime, at USER_HZ (100 a second on Linux).
    (ticks(11) + ticks(12)) / 100.0
}

/// The value at fraction `p` of sorted `values`.
fn percentile(values: &[f64], p: f64) -> f64 {
    values
        .get(((values.len().max(1) - 1) as f64 * p).round() as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

/// Pending messages and outbox events not yet fanned out.
async fn queue(state: &AppState) -> (u64, u64) {
    let stats = state.store.webhook_queue_stats().await.unwrap();
    (stats.queue_depth, stats.events_waiting)
}

/// Waits until the delivery queue and the outbox are empty, at most `limit`; whether they are.
async fn drain(state: &AppState, limit: Duration) -> bool {
    let started = Instant::now();
    loop {
        if queue(state).await == (0, 0) {
            return true;
        }
        if started.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The knobs of part A.
struct FanOut {
    rate: usize,
    seconds: u64,
    drain: Duration,
}

/// Publishes at `rate` a second for `seconds`, spread over `publishers` in turn (each over its
/// accounts in turn): the submissions published, and the publishes that failed.
async fn paced_publishes(
    base: &str,
    publishers: &[Publisher],
    rate: usize,
    seconds: u64,
) -> (Vec<(usize, Uuid)>, usize) {
    let client = reqwest::Client::new();
    let url = format!("{base}/v2/posts");
    // Ticks of 10 ms, each sending its share of the second at once.
    let ticks = seconds as usize * 100;
    let mut interval = tokio::time::interval(Duration::from_millis(10));
    let mut tasks = Vec::with_capacity(rate * seconds as usize);
    let mut i = 0;
    for tick in 0..ticks {
        interval.tick().await;
        let due = rate * (tick + 1) / 100;
        while i < due {
            let who = i % publishers.len();
            let p = &publishers[who];
            let account = p.accounts[(i / publishers.len()) % p.accounts.len()];
            let request = publish_request(&client, &url, &p.key, account, i);
            tasks.push(tokio::spawn(async move { (who, published(request).await) }));
            i += 1;
        }
    }
    let mut ok = Vec::with_capacity(tasks.len());
    let mut failed = 0;
    for task in tasks {
        match task.await.unwrap() {
            (who, Some(id)) => ok.push((who, id)),
            (_, None) => failed += 1,
        }
    }
    (ok, failed)
}

/// Part A for `users` users with `per_user` endpoints each.
async fn fan_out(
    sim: &Simulator,
    state: &AppState,
    base: &str,
    (receiver, received): (&str, &Receiver),
    knobs: &FanOut,
    (users, per_user): (usize, usize),
) {
    let tag = format!("{users}x{per_user}");
    // Threads allows 250 posts a day per profile: enough profiles for each user's share.
    let share = knobs.rate * knobs.seconds as usize / users;
    let profiles = (share / 200 + 1).max(2);
    let mut publishers = Vec::with_capacity(users);
    for u in 0..users {
        publishers.push(publisher(sim, state, receiver, (&tag, u), profiles, per_user).await);
    }
    let endpoints = users * per_user;
    println!(
        "\nA. {users} users × {per_user} endpoints = {endpoints} endpoints; {} events/s for {} s",
        knobs.rate, knobs.seconds
    );
    let cpu_before = process_cpu_seconds();
    let started = Utc::now();
    let clock = Instant::now();
    let (ok, failed) = paced_publishes(base, &publishers, knobs.rate, knobs.seconds).await;
    let window = clock.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds() - cpu_before;
    let (depth, waiting) = queue(state).await;
    let delivered_in_window = received.count(&tag);
    println!(
        "    events: {} published ({:.0}/s), {failed} publishes failed; window {window:.1} s",
        ok.len(),
        ok.len() as f64 / window
    );
    println!(
        "    at the window's end: {delivered_in_window} messages arrived, {depth} pending, {waiting} events not fanned out; process CPU {:.2} of 2 cores",
        cpu / window
    );
    let expected = ok.len() * per_user;
    let drained = Instant::now();
    while received.count(&tag) < expected && drained.elapsed() < knobs.drain {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    report_fan_out(&received.arrivals(&tag), &ok, per_user, started);
}

/// Part A's figures from the first arrivals at its endpoints.
fn report_fan_out(
    arrivals: &[Arrival],
    ok: &[(usize, Uuid)],
    per_user: usize,
    started: DateTime<Utc>,
) {
    let expected = ok.len() * per_user;
    // Every published event at every endpoint of its user, once.
    let mut reached: HashMap<Uuid, HashSet<(usize, usize)>> = HashMap::new();
    for a in arrivals {
        if let Some(id) = a.submission {
            reached.entry(id).or_default().insert((a.user, a.endpoint));
        }
    }
    let missing: usize = ok
        .iter()
        .map(|(who, id)| {
            let at = reached.get(id);
            (0..per_user)
                .filter(|e| !at.is_some_and(|s| s.contains(&(*who, *e))))
                .count()
        })
        .sum();
    let mut lags: Vec<f64> = arrivals
        .iter()
        .map(|a| (a.at - a.event_at).num_microseconds().unwrap_or(0) as f64 / 1e6)
        .collect();
    lags.sort_by(|a, b| a.total_cmp(b));
    let last = arrivals.iter().map(|a| a.at).max().unwrap_or(started);
    let span = (last - started).num_milliseconds().max(1) as f64 / 1e3;
    let p99 = percentile(&lags, 0.99);
    println!(
        "    messages: {} of {expected} arrived ({missing} (event, endpoint) pairs missing); {:.0} delivered/s (first event → last arrival, {span:.1} s)",
        arrivals.len(),
        arrivals.len() as f64 / span
    );
    println!(
        "    event → first attempt: p50 {:.3} s, p99 {p99:.3} s, max {:.3} s  (goal p99 ≤ 1 s: {})",
        percentile(&lags, 0.5),
        lags.last().copied().unwrap_or(f64::NAN),
        if p99 <= 1.0 && missing == 0 {
            "met"
        } else {
            "MISSED"
        }
    );
}

/// One closed-loop publish run: `connections` clients publish for `seconds`; publishes a
/// second.
async fn publish_load(
    base: &str,
    p: &Publisher,
    connections: usize,
    seconds: u64,
    offset: usize,
) -> (f64, usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let url = Arc::new(format!("{base}/v2/posts"));
    let key = Arc::new(p.key.clone());
    let accounts = Arc::new(p.accounts.clone());
    let clients: Vec<reqwest::Client> = (0..connections)
        .map(|_| reqwest::Client::builder().build().unwrap())
        .collect();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, client) in clients.into_iter().enumerate() {
        let (stop, url, key, accounts) = (stop.clone(), url.clone(), key.clone(), accounts.clone());
        tasks.push(tokio::spawn(async move {
            let (mut done, mut errors) = (0usize, 0usize);
            let mut i = offset + c;
            while !stop.load(Ordering::Relaxed) {
                let account = accounts[i % accounts.len()];
                match published(publish_request(&client, &url, &key, account, i)).await {
                    Some(_) => done += 1,
                    None => errors += 1,
                }
                i += connections;
            }
            (done, errors)
        }));
    }
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let (mut done, mut errors) = (0, 0);
    for task in tasks {
        let (d, e) = task.await.unwrap();
        done += d;
        errors += e;
    }
    (done as f64 / started.elapsed().as_secs_f64(), errors)
}

/// The knobs of part B.
struct PublishKnobs {
    connections: usize,
    seconds: u64,
    rounds: usize,
    drain: Duration,
}

/// Part B: publishing with the user's endpoint disabled and active, alternated.
async fn with_and_without(
    sim: &Simulator,
    state: &AppState,
    base: &str,
    (receiver, received): (&str, &Receiver),
    knobs: &PublishKnobs,
) {
    // Threads allows 250 posts a day per profile: enough for 30,000 publishes a second.
    let profiles = (knobs.seconds as usize * knobs.rounds * 2 * 30_000 / 250).clamp(512, 20_000);
    let p = publisher(sim, state, receiver, ("b", 0), profiles, 1).await;
    let endpoint = p.endpoints[0].to_string();
    println!(
        "\nB. publishing, {} connections, {} s a run, {} rounds; the user's one endpoint disabled (off) or active (on)",
        knobs.connections, knobs.seconds, knobs.rounds
    );
    let (mut off, mut on) = (Vec::new(), Vec::new());
    let mut offset = 0;
    for round in 0..knobs.rounds {
        // Off then on in even rounds, on then off in odd ones: drift cancels.
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for active in order {
            let patch = EndpointPatch {
                is_active: Some(active),
                ..EndpointPatch::default()
            };
            state
                .webhooks
                .change(p.user_id, &endpoint, patch)
                .await
                .unwrap();
            let before = received.count("b");
            let commits = state.store.group_commit_stats();
            let (rate, errors) =
                publish_load(base, &p, knobs.connections, knobs.seconds, offset).await;
            offset += 1_000_000;
            let commits = {
                let after = state.store.group_commit_stats();
                (
                    after.transactions - commits.transactions,
                    after.handed_to_pool - commits.handed_to_pool,
                )
            };
            let (depth, waiting) = queue(state).await;
            let arrived = received.count("b") - before;
            let drained = drain(state, knobs.drain).await;
            println!(
                "    round {} {:<3}: {rate:>7.0} publishes/s, {errors} errors; {arrived} messages arrived in the run, {depth} pending and {waiting} events waiting at its end; {} group commits, {} of them through the pool{}",
                round + 1,
                if active { "on" } else { "off" },
                commits.0,
                commits.1,
                if drained {
                    ""
                } else {
                    "; the queue did not drain"
                }
            );
            let runs = if active { &mut on } else { &mut off };
            runs.push(rate);
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let ratios: Vec<f64> = on.iter().zip(&off).map(|(a, b)| a / b).collect();
    let (low, high) = ratios
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), r| (l.min(*r), h.max(*r)));
    let ratio = mean(&on) / mean(&off);
    println!(
        "    off {:.0}/s, on {:.0}/s (means): on ÷ off = {ratio:.3} (rounds {low:.3}–{high:.3}); goal ≥ 0.95: {}",
        mean(&off),
        mean(&on),
        if ratio >= 0.95 { "met" } else { "MISSED" }
    );
}

/// Whether `BENCH_ONLY` (a comma list; unset: everything) asks for `part`.
fn wanted(part: &str) -> bool {
    match std::env::var("BENCH_ONLY") {
        Ok(list) if !list.trim().is_empty() => list.split(',').any(|p| p.trim() == part),
        _ => true,
    }
}

/// `BENCH_SHAPES`: `users x endpoints per user`, comma separated.
fn shapes() -> Vec<(usize, usize)> {
    std::env::var("BENCH_SHAPES")
        .unwrap_or_else(|_| "10x10,100x1".into())
        .split(',')
        .filter_map(|s| {
            let (u, e) = s.trim().split_once('x')?;
            Some((u.parse().ok()?, e.parse().ok()?))
        })
        .collect()
}

#[actix_web::main]
async fn main() {
    let drain_limit = Duration::from_secs(env_usize("BENCH_DRAIN_SECONDS", 120) as u64);
    let fan_out_knobs = FanOut {
        rate: env_usize("BENCH_EVENTS_PER_SECOND", 1_000),
        seconds: env_usize("BENCH_SECONDS", 10) as u64,
        drain: drain_limit,
    };
    let publish_knobs = PublishKnobs {
        connections: env_usize("BENCH_CONNECTIONS", 32),
        seconds: env_usize("BENCH_PUBLISH_SECONDS", 3) as u64,
        rounds: env_usize("BENCH_ROUNDS", 3).max(1),
        drain: drain_limit,
    };
    let sim = common::start_simulator();
    let received = web::Data::new(Receiver::default());
    let receiver = start_receiver(received.clone());
    let database = BenchDatabase::from_env().await;
    let config = service_config(&sim, &database, &receiver);
    println!(
        "webhook benchmarks on {}; receiver {receiver}",
        database.backend()
    );
    let app = common::build(config, &database).await;
    let base = format!("http://127.0.0.1:{}", app.port());
    let state = app.state();
    actix_rt::spawn(app.run_until_stopped());

    if wanted("fanout") {
        for shape in shapes() {
            fan_out(
                &sim,
                &state,
                &base,
                (&receiver, &received),
                &fan_out_knobs,
                shape,
            )
            .await;
            if !drain(&state, drain_limit).await {
                println!("    the delivery queue did not drain");
            }
        }
    }
    if wanted("publish") {
        with_and_without(&sim, &state, &base, (&receiver, &received), &publish_knobs).await;
    }
    println!(
        "\nreceiver: {} requests in all",
        received.requests.load(Ordering::Relaxed)
    );
    database.drop_schema().await;
}
