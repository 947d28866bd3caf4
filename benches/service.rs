//! Service benchmarks, each reported as a ratio to a baseline measured in the same run (the
//! machines are noisy; ratios travel better than absolute figures):
//!
//! - baseline A: a bare actix-web handler returning a constant, in this process;
//! - baseline B: a bare handler running `SELECT 1` through the service's own database pool;
//! - key-authenticated, metered (Pro) `GET /api/scheduled-posts` returning 50 posts → ratio to B;
//! - key-authenticated, metered (Pro) `GET /api/performance/metrics` for one account → ratio to A;
//! - `POST /v2/posts`, a threads text post to the in-process simulator (zero latency) → ratio to A;
//! - the operator actor view with 10,000 live actors (latency);
//! - RSS idle, with 100,000 connected accounts, with 10,000 live actors (bytes per actor), and the
//!   time from start to ready with 100,000 accounts in the database.
//!
//! ```sh
//! cargo bench --bench service                                                  # SQLite
//! BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench service
//! # knobs: BENCH_SECONDS (5 per load run), BENCH_CONNECTIONS (32), BENCH_ACCOUNTS (100000), BENCH_ACTORS (10000)
//! #        BENCH_ONLY (comma list of bare,select1,list,metrics,publish,memory; default all)
//! #        BENCH_CLIENT (reqwest, the default; raw: a hand-written HTTP/1.1 client, see `load_raw`)
//! #        BENCH_SQLITE_SYNCHRONOUS (full, the default; normal: SQLite commits without a sync)
//! ```
//!
//! Each service path also prints its database statements per request (reads and writes, from
//! `Store::db_counts`), and every load run its CPU time per request, split by the threads'
//! owners (the service, the simulator, the load generator, the bare handlers of A and B).
//! `BENCH_ONLY` runs a subset, e.g. one path under a profiler:
//! `BENCH_ONLY=metrics BENCH_SECONDS=2 valgrind --tool=callgrind target/release/deps/service-…`.
//!
//! The load generator is a Rust HTTP client in this process, on loopback; every run is bounded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use actix_web::{App, HttpResponse, HttpServer, web};
use chrono::{DateTime, Utc};
use sea_orm::EntityTrait;
use serde_json::json;
use service_sim::Simulator;
use social_service::{
    AppState,
    config::Config,
    crypto::NewApiKey,
    services::operator,
    store::{DbCounts, NewScheduledPost, Store},
};
use uuid::Uuid;

use common::{BenchDatabase, env_usize};

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|kb| kb.parse::<u64>().ok())
            })
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// This process's threads: id → CPU time so far (user + system), in `/proc`'s clock ticks.
fn thread_ticks() -> HashMap<String, u64> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return HashMap::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            // The fields after the thread's name (which may hold spaces): utime is the 12th.
            let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split(' ').collect();
            let ticks =
                fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
            Some((task.file_name().to_string_lossy().into_owned(), ticks))
        })
        .collect()
}

/// `/proc` counts CPU time at USER_HZ, 100 ticks a second on Linux whatever the kernel's HZ.
const TICKS_PER_SECOND: f64 = 100.0;

/// Which part of the bench each thread works for, by when it started (see [`claim_new_threads`]).
static THREAD_GROUPS: Mutex<Vec<(&'static str, HashSet<String>)>> = Mutex::new(Vec::new());

/// Names the threads started since the last call as `group`'s. Called after each part starts,
/// so a load run's CPU time can be split by part: the load generator (this thread), the
/// simulator, the service, the bare handlers of A and B.
fn claim_new_threads(group: &'static str) {
    let mut groups = THREAD_GROUPS.lock().unwrap();
    let known: HashSet<String> = groups
        .iter()
        .flat_map(|(_, threads)| threads.iter().cloned())
        .collect();
    let new = thread_ticks()
        .into_keys()
        .filter(|t| !known.contains(t))
        .collect();
    groups.push((group, new));
}

/// CPU time per request of a load run, by part: robust to how busy the cores were, and it
/// separates the service's cost from the load generator's and the simulator's.
fn cpu_per_request(before: &HashMap<String, u64>, requests: usize) -> String {
    let after = thread_ticks();
    let groups = THREAD_GROUPS.lock().unwrap();
    let mut split: Vec<(&str, u64)> = groups.iter().map(|(name, _)| (*name, 0)).collect();
    let mut later = 0;
    for (thread, ticks) in &after {
        let used = ticks - before.get(thread).copied().unwrap_or(0).min(*ticks);
        match groups
            .iter()
            .position(|(_, threads)| threads.contains(thread))
        {
            Some(i) => split[i].1 += used,
            None => later += used,
        }
    }
    split.push(("threads started later", later));
    let micros = |ticks: u64| ticks as f64 / TICKS_PER_SECOND * 1e6 / requests.max(1) as f64;
    let total: u64 = split.iter().map(|(_, t)| t).sum();
    let parts: Vec<String> = split
        .iter()
        .filter(|(_, ticks)| *ticks > 0)
        .map(|(name, ticks)| format!("{name} {:.1}", micros(*ticks)))
        .collect();
    format!(
        "CPU per request: {:.1} µs ({})",
        micros(total),
        parts.join(", ")
    )
}

/// Builds request number `i` on a client.
type MakeRequest = Arc<dyn Fn(&reqwest::Client, usize) -> reqwest::RequestBuilder + Send + Sync>;

/// A load run's figures; all zero (the default) for a run that `BENCH_ONLY` leaves out.
#[derive(Default)]
struct Load {
    /// Requests sent (answered or not).
    requests: usize,
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: usize,
    /// CPU time per request, by part (see [`cpu_per_request`]).
    cpu: String,
}

/// Which load generator `BENCH_CLIENT` asks for: reqwest (the default, so figures stay
/// comparable with the reqwest columns of docs/benchmarks.md), or `raw`, HTTP/1.1 written and
/// read by hand, which does not bound the bare handler A as reqwest's one thread can.
fn raw_client() -> bool {
    std::env::var("BENCH_CLIENT").is_ok_and(|c| c == "raw")
}

/// `connections` clients hammer a request for `seconds`; `make` builds request i (`varies`:
/// whether it differs from one i to the next).
async fn load(connections: usize, seconds: u64, make: MakeRequest, varies: bool) -> Load {
    if raw_client() {
        return load_raw(connections, seconds, make, varies).await;
    }
    let stop = Arc::new(AtomicBool::new(false));
    // Built before the clock starts: each one reads the system's root certificates, several
    // milliseconds of CPU that the run's first fraction of a second would otherwise spend on
    // the load generator instead of the service.
    // No cap on idle connections: the client hands a connection back to its pool only after
    // the caller has read the body, so the next request may start a second one; with a cap of
    // one, that spare was closed again, and a large answer (the 50-item list) cost a new TCP
    // connection every second request.
    let clients: Vec<reqwest::Client> = (0..connections)
        .map(|_| reqwest::Client::builder().build().unwrap())
        .collect();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, client) in clients.into_iter().enumerate() {
        let stop = stop.clone();
        let make = make.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0;
            let mut i = c;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                match make(&client, i).send().await {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                    }
                    _ => errors += 1,
                }
                i += connections;
            }
            (latencies, errors)
        }));
    }
    finish(seconds, &stop, tasks, started).await
}

/// Each connection's task: its latencies (ms) and errors.
type Connection = tokio::task::JoinHandle<(Vec<f64>, usize)>;

/// Lets the connections run for `seconds`, stops them, and sums up what they measured.
async fn finish(seconds: u64, stop: &AtomicBool, tasks: Vec<Connection>, started: Instant) -> Load {
    // The connections' tasks are spawned but have not run yet (this thread's runtime runs
    // them when this awaits): the window starts here.
    let cpu_before = thread_ticks();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (l, e) = task.await.unwrap();
        all.extend(l);
        errors += e;
    }
    let mut load = summarize(all, errors, started.elapsed().as_secs_f64());
    load.cpu = cpu_per_request(&cpu_before, load.requests);
    load
}

/// A load run's figures from its latencies (ms), errors and length.
fn summarize(mut all: Vec<f64>, errors: usize, elapsed: f64) -> Load {
    all.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        all.get(((all.len().max(1) - 1) as f64 * p) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    Load {
        requests: all.len() + errors,
        rps: all.len() as f64 / elapsed,
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        errors,
        cpu: String::new(),
    }
}

/// The request as HTTP/1.1 bytes (reqwest builds it, so both clients send the same request).
fn raw_request(client: &reqwest::Client, make: &MakeRequest, i: usize) -> (String, Vec<u8>) {
    let request = make(client, i).build().unwrap();
    let url = request.url();
    let authority = format!(
        "{}:{}",
        url.host_str().unwrap(),
        url.port_or_known_default().unwrap()
    );
    let mut bytes = format!("{} {}", request.method(), url.path()).into_bytes();
    if let Some(query) = url.query() {
        bytes.extend_from_slice(format!("?{query}").as_bytes());
    }
    bytes.extend_from_slice(format!(" HTTP/1.1\r\nhost: {authority}\r\n").as_bytes());
    for (name, value) in request.headers() {
        bytes.extend_from_slice(name.as_str().as_bytes());
        bytes.extend_from_slice(b": ");
        bytes.extend_from_slice(value.as_bytes());
        bytes.extend_from_slice(b"\r\n");
    }
    let body = request
        .body()
        .and_then(|b| b.as_bytes())
        .unwrap_or_default();
    if !body.is_empty() {
        bytes.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    }
    bytes.extend_from_slice(b"\r\n");
    bytes.extend_from_slice(body);
    (authority, bytes)
}

/// Reads one answer from `stream` into `buffer` (which may already hold the start of it, and
/// keeps what follows it); its status, or `None` if the connection ended or the answer has no
/// `content-length` (the service sizes every answer these paths give).
async fn read_raw_answer(stream: &mut tokio::net::TcpStream, buffer: &mut Vec<u8>) -> Option<u16> {
    use tokio::io::AsyncReadExt;
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&buffer[..end]).ok()?;
            let status: u16 = head.get(9..12)?.parse().ok()?;
            let length: usize = head.lines().find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())
                    .flatten()
            })?;
            let total = end + 4 + length;
            while buffer.len() < total {
                let n = stream.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buffer.extend_from_slice(&chunk[..n]);
            }
            buffer.drain(..total);
            return Some(status);
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
}

/// [`load`] with a client that writes each request's bytes on a kept-alive connection and reads
/// the answer's head for its status and length: a few microseconds a request, where reqwest
/// parses each URL three times and builds a header map for each answer. With reqwest the load
/// generator's one thread can bound the bare handler and the metered reads on a 2-core machine
/// (it used a whole core there, the service's workers half a core each).
async fn load_raw(connections: usize, seconds: u64, make: MakeRequest, varies: bool) -> Load {
    use tokio::io::AsyncWriteExt;
    let stop = Arc::new(AtomicBool::new(false));
    let client = reqwest::Client::builder().build().unwrap();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..connections {
        let (stop, make, client) = (stop.clone(), make.clone(), client.clone());
        tasks.push(tokio::spawn(async move {
            let (authority, first) = raw_request(&client, &make, c);
            let mut stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
            stream.set_nodelay(true).unwrap();
            let (mut latencies, mut errors, mut buffer) = (Vec::new(), 0, Vec::new());
            let mut i = c;
            while !stop.load(Ordering::Relaxed) {
                let bytes = if varies {
                    raw_request(&client, &make, i).1
                } else {
                    first.clone()
                };
                let t = Instant::now();
                let status = match stream.write_all(&bytes).await {
                    Ok(()) => read_raw_answer(&mut stream, &mut buffer).await,
                    Err(_) => None,
                };
                match status {
                    Some(status) if (200..300).contains(&status) => {
                        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                    }
                    Some(_) => errors += 1,
                    None => {
                        errors += 1;
                        buffer.clear();
                        stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
                        stream.set_nodelay(true).unwrap();
                    }
                }
                i += connections;
            }
            (latencies, errors)
        }));
    }
    finish(seconds, &stop, tasks, started).await
}

/// Whether `BENCH_ONLY` (a comma list; unset: everything) asks for `path`.
fn wanted(path: &str) -> bool {
    match std::env::var("BENCH_ONLY") {
        Ok(list) if !list.trim().is_empty() => list.split(',').any(|p| p.trim() == path),
        _ => true,
    }
}

/// Statements per request of a load run, from the store's counters before and after it.
fn per_request(counts: DbCounts, l: &Load) -> String {
    let n = l.requests.max(1) as f64;
    format!(
        "database statements per request: {:.2} reads, {:.2} writes",
        counts.reads as f64 / n,
        counts.writes as f64 / n
    )
}

fn report(name: &str, l: &Load, baseline: Option<(&str, &Load)>) {
    let ratio = baseline
        .filter(|(_, base)| base.rps > 0.0)
        .map(|(b, base)| format!("  = {:.3} × {b}", l.rps / base.rps))
        .unwrap_or_default();
    println!(
        "{name:<52} {:>9.0} req/s  p50 {:>6.2} ms  p99 {:>7.2} ms  errors {}{ratio}",
        l.rps, l.p50_ms, l.p99_ms, l.errors
    );
    if !l.cpu.is_empty() {
        println!("    {}", l.cpu);
    }
}

/// What the measurements after the start share: the knobs, the service under test with its
/// user's key, and its resident memory before the load runs.
struct Bench {
    seconds: u64,
    connections: usize,
    accounts_n: usize,
    actors_n: usize,
    /// The service's address, `http://127.0.0.1:port`.
    base: String,
    state: web::Data<AppState>,
    key: NewApiKey,
    rss_start: u64,
    rss_idle: u64,
}

/// Lets a part just started start its threads, so that they are named after it.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// The service's configuration on `database`: two workers, limits that the load cannot reach,
/// and `BENCH_SQLITE_SYNCHRONOUS`.
fn service_config(sim: &Simulator, database: &BenchDatabase) -> Config {
    let mut config = common::config(sim, database);
    // `normal` measures what a publish costs without its sync to disk on SQLite.
    if let Ok(mode) = std::env::var("BENCH_SQLITE_SYNCHRONOUS") {
        config.database.sqlite_synchronous = serde_json::from_value(serde_json::json!(mode))
            .expect("BENCH_SQLITE_SYNCHRONOUS is full or normal");
    }
    config.server.workers = 2;
    config.platforms.poll_interval_ms = 5;
    config.publishing.threads_calls_per_hour = 1_000_000_000;
    config.publishing.queue_capacity = 1_000;
    config.usage.last_used_flush_ms = 1_000;
    // Its catch-up pass would collect the 100,000 bulk accounts below at start.
    config.collector.enabled = false;
    config
}

/// Starts baselines A and B: bare handlers in this process, same worker count, B's on the
/// service's `store`. Their address.
async fn start_baselines(store: Store) -> String {
    let baseline = HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(store.clone()))
            .route(
                "/bare",
                web::get().to(|| async { HttpResponse::Ok().body("ok") }),
            )
            .route(
                "/select1",
                web::get().to(|store: web::Data<Store>| async move {
                    match store.ping().await {
                        Ok(()) => HttpResponse::Ok().body("ok"),
                        Err(_) => HttpResponse::InternalServerError().finish(),
                    }
                }),
            )
    })
    .workers(2)
    .bind("127.0.0.1:0")
    .unwrap();
    let baseline_url = format!("http://{}", baseline.addrs()[0]);
    actix_rt::spawn(baseline.run());
    settle().await;
    claim_new_threads("bare handlers");
    baseline_url
}

/// A Pro user with a key, 50 scheduled posts, and threads accounts on the simulator: the user,
/// its key and the accounts' ids.
async fn publisher(
    sim: &Simulator,
    state: &AppState,
    seconds: u64,
    now: DateTime<Utc>,
) -> (entity::user::Model, NewApiKey, Vec<Uuid>) {
    let user = common::bench_user(&state.store, now).await;
    let key = common::pro_key(&state.store, user.id, now).await;
    let mut publish_accounts = Vec::new();
    // Threads allows 250 posts a day per profile: enough profiles for 50,000 publishes a second
    // over the whole run, and at least 512. (A fixed 512 would allow 128,000 posts: a default
    // 5 s run at 22,700 a second, a rate measured on SQLite, would use 89 % of them, and a
    // longer one would run out.)
    let profiles = (seconds as usize * 50_000 / 250).max(512);
    for i in 0..profiles {
        let s = sim
            .state()
            .create_account("threads", &format!("t{i}"), None);
        let account = operator::add_account(
            &state.store,
            &state.cipher,
            now,
            common::manual_account(user.id, &s),
        )
        .await
        .unwrap();
        publish_accounts.push(account.id);
    }
    for i in 0..50 {
        state
            .store
            .insert_scheduled_post(
                NewScheduledPost {
                    user_id: user.id,
                    account_id: publish_accounts[0],
                    platform: social_service::domain::plan::Platform::Threads,
                    page_name: "t0".into(),
                    request: json!({}),
                    content: json!({"text": format!("later {i}"), "media_urls": []}),
                    scheduled_at: now + chrono::Duration::days(30),
                },
                now,
            )
            .await
            .unwrap();
    }
    (user, key, publish_accounts)
}

/// Baselines A (the bare handler) and B (`SELECT 1` through the pool), each measured if wanted.
async fn baselines(bench: &Bench, baseline_url: &str) -> (Load, Load) {
    let (connections, seconds) = (bench.connections, bench.seconds);
    let bare = format!("{baseline_url}/bare");
    let a = if wanted("bare") {
        let a = load(
            connections,
            seconds,
            Arc::new(move |c, _| c.get(&bare)),
            false,
        )
        .await;
        report("A: bare handler (constant)", &a, None);
        a
    } else {
        Load::default()
    };
    let select = format!("{baseline_url}/select1");
    let b = if wanted("select1") {
        let b = load(
            connections,
            seconds,
            Arc::new(move |c, _| c.get(&select)),
            false,
        )
        .await;
        report(
            "B: bare handler, SELECT 1 through the pool",
            &b,
            Some(("A", &a)),
        );
        b
    } else {
        Load::default()
    };
    (a, b)
}

/// The metered list of 50 scheduled posts, against baseline B.
async fn list(bench: &Bench, b: &Load) {
    let (base, state) = (&bench.base, &bench.state);
    let (list_url, key_value) = (
        format!("{base}/api/scheduled-posts"),
        bench.key.full.clone(),
    );
    let before = state.store.db_counts();
    let list = load(
        bench.connections,
        bench.seconds,
        Arc::new(move |c, _| c.get(&list_url).header("service-api-key", &key_value)),
        false,
    )
    .await;
    report(
        "GET /api/scheduled-posts (key, metered, 50 items)",
        &list,
        Some(("B", b)),
    );
    println!(
        "    {}",
        per_request(state.store.db_counts().since(before), &list)
    );
}

/// The metered metrics of `account`, against baseline A.
async fn metrics(bench: &Bench, account: Uuid, a: &Load) {
    let (base, state) = (&bench.base, &bench.state);
    let metrics_url =
        format!("{base}/api/performance/metrics?account_id={account}&platform=threads");
    let key_value = bench.key.full.clone();
    let before = state.store.db_counts();
    let catalogue = load(
        bench.connections,
        bench.seconds,
        Arc::new(move |c, _| c.get(&metrics_url).header("service-api-key", &key_value)),
        false,
    )
    .await;
    report(
        "GET /api/performance/metrics (key, metered, 1 account)",
        &catalogue,
        Some(("A", a)),
    );
    println!(
        "    {}",
        per_request(state.store.db_counts().since(before), &catalogue)
    );
}

/// Threads text posts to the simulator, `publish_accounts` in turn, against baseline A; the
/// group commit's figures, and on SQLite the WAL's size as the run ends.
async fn publish(bench: &Bench, publish_accounts: &[Uuid], database: &BenchDatabase, a: &Load) {
    let (base, state) = (&bench.base, &bench.state);
    let (post_url, key_value, accounts) = (
        format!("{base}/v2/posts"),
        bench.key.full.clone(),
        Arc::new(publish_accounts.to_vec()),
    );
    let before = state.store.db_counts();
    let commits_before = state.store.group_commit_stats();
    let publish = load(
        bench.connections,
        bench.seconds,
        Arc::new(move |c, i| {
            let account = accounts[i % accounts.len()];
            c.post(&post_url).header("service-api-key", &key_value).json(&json!({"post": {
            "accountId": account,
            "content": {"text": format!("bench {i} {}", Uuid::new_v4()), "platform": "threads"},
            "target": {"targetType": "threads"},
        }}))
        }),
        true,
    )
    .await;
    report(
        "POST /v2/posts (threads text, simulator)",
        &publish,
        Some(("A", a)),
    );
    println!(
        "    {}",
        per_request(state.store.db_counts().since(before), &publish)
    );
    let commits = state.store.group_commit_stats();
    let (transactions, writes) = (
        commits.transactions - commits_before.transactions,
        commits.writes - commits_before.writes,
    );
    println!(
        "    group commit: {writes} writes in {transactions} transactions ({:.1} per transaction), {} WAL syncs",
        writes as f64 / transactions.max(1) as f64,
        commits.wal_syncs - commits_before.wal_syncs
    );
    // The WAL must stay bounded under a steady stream of publishes (see the group
    // commit's checkpoints): its size as the run ends.
    if database.schema.is_none()
        && let Ok(wal) = std::fs::metadata(database.dir.path().join("bench.db-wal"))
    {
        println!("    SQLite WAL: {:.1} MB", wal.len() as f64 / 1e6);
    }
}

/// `accounts_n` connected accounts of `user_id`, inserted in bulk; their ids.
async fn insert_accounts(
    state: &AppState,
    user_id: Uuid,
    now: DateTime<Utc>,
    accounts_n: usize,
) -> Vec<Uuid> {
    let started = Instant::now();
    let mut ids = Vec::with_capacity(accounts_n);
    for chunk in (0..accounts_n).collect::<Vec<_>>().chunks(1_000) {
        let rows: Vec<entity::account::ActiveModel> = chunk
            .iter()
            .map(|i| {
                let (id, row) = common::account_row(
                    &state.cipher,
                    user_id,
                    social_service::domain::plan::Platform::Threads,
                    format!("bulk{i}"),
                    format!("bulk {i}"),
                    "bench-token",
                    now,
                );
                ids.push(id);
                row
            })
            .collect();
        entity::account::Entity::insert_many(rows)
            .exec(state.store.connection())
            .await
            .unwrap();
    }
    println!(
        "\ninserted {accounts_n} accounts in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    ids
}

/// Starts a second service on `database` and waits until it is ready: the time that took, and
/// the client that asked.
async fn start_to_ready(config: &Config, database: &BenchDatabase) -> (Duration, reqwest::Client) {
    let started = Instant::now();
    let again = common::build(config.clone(), database).await;
    let ready_url = format!("http://127.0.0.1:{}/readyz", again.port());
    actix_rt::spawn(again.run_until_stopped());
    let client = reqwest::Client::new();
    while !client
        .get(&ready_url)
        .send()
        .await
        .map(|r| r.status().is_success())
        .unwrap_or(false)
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    (started.elapsed(), client)
}

/// What starting the actors cost.
struct Actors {
    /// RSS before their rows were first read.
    before_rows: u64,
    /// RSS after that read, before the actors started.
    before_actors: u64,
    started: Duration,
    /// RSS with them live.
    rss_actors: u64,
}

/// Starts the actors of the accounts `ids` (by asking each its health), 500 at a time.
async fn start_actors(state: &AppState, ids: &[Uuid]) -> Actors {
    // The rows are read once before the baseline and again as the actors start: the first
    // read grows SQLite's page cache on whichever pooled connections serve it, by an amount
    // that varies from run to run and is not the actors' (valgrind's dhat counted 0.5 to
    // 1.6 KB of it per actor when the one read was inside the measured window).
    let read_rows = |chunk: &[Uuid]| {
        use sea_orm::{ColumnTrait, QueryFilter};
        entity::account::Entity::find()
            .filter(entity::account::Column::Id.is_in(chunk.to_vec()))
            .all(state.store.connection())
    };
    let before_rows = rss_bytes();
    for chunk in ids.chunks(500) {
        read_rows(chunk).await.unwrap();
    }
    let before_actors = rss_bytes();
    let started = Instant::now();
    for chunk in ids.chunks(500) {
        let rows = read_rows(chunk).await.unwrap();
        let asks = rows.iter().map(|row| state.supervisor.health(row));
        for r in futures_util::future::join_all(asks).await {
            r.unwrap();
        }
    }
    let started = started.elapsed();
    Actors {
        before_rows,
        before_actors,
        started,
        rss_actors: rss_bytes(),
    }
}

/// The latencies (ms) of 20 requests for the operator actor view, sorted.
async fn actor_view_ms(client: &reqwest::Client, base: &str) -> Vec<f64> {
    let view_url = format!("{base}/api/admin/actors");
    let mut view_ms = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let r = client
            .get(&view_url)
            .bearer_auth(common::OPERATOR_TOKEN)
            .send()
            .await
            .unwrap();
        let _ = r.bytes().await.unwrap();
        view_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    view_ms.sort_by(|a, b| a.total_cmp(b));
    view_ms
}

/// RSS with `accounts_n` connected accounts and with `actors_n` live actors, the actor view's
/// latency, and the time from start to ready with the accounts in the database.
async fn memory(
    bench: &Bench,
    config: &Config,
    database: &BenchDatabase,
    user_id: Uuid,
    now: DateTime<Utc>,
) {
    let (state, accounts_n, actors_n) = (&bench.state, bench.accounts_n, bench.actors_n);
    // 100,000 connected accounts (bulk insert), then 10,000 live actors.
    let ids = insert_accounts(state, user_id, now, accounts_n).await;
    let rss_accounts = rss_bytes();
    let (start_to_ready, client) = start_to_ready(config, database).await;
    let actors = start_actors(state, &ids[..actors_n]).await;
    let view_ms = actor_view_ms(&client, &bench.base).await;
    println!(
        "started {} actors in {:.2} s; live actors: {}",
        actors_n,
        actors.started.as_secs_f64(),
        state.supervisor.live_actors()
    );
    println!(
        "actor view with {} live actors: p50 {:.1} ms, max {:.1} ms",
        state.supervisor.live_actors(),
        view_ms[10],
        view_ms[19]
    );
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "RSS: process start {:.1} MiB; service idle {:.1} MiB; after {accounts_n} accounts {:.1} MiB",
        mb(bench.rss_start),
        mb(bench.rss_idle),
        mb(rss_accounts)
    );
    let per = |from: u64, to: u64| to.saturating_sub(from) as f64 / actors_n as f64;
    println!(
        "RSS with {actors_n} live actors: {:.1} MiB (+{:.0} bytes per actor)",
        mb(actors.rss_actors),
        per(actors.before_actors, actors.rss_actors)
    );
    println!(
        "  reading their rows once before: +{:.0} bytes per row (SQLite's page cache); counted with the actors instead: +{:.0} bytes per actor",
        per(actors.before_rows, actors.before_actors),
        per(actors.before_rows, actors.rss_actors)
    );
    println!(
        "start to ready with {accounts_n} accounts in the database: {:.0} ms",
        start_to_ready.as_secs_f64() * 1000.0
    );
}

#[actix_web::main]
async fn main() {
    let seconds = env_usize("BENCH_SECONDS", 5) as u64;
    let connections = env_usize("BENCH_CONNECTIONS", 32);
    let accounts_n = env_usize("BENCH_ACCOUNTS", 100_000);
    let actors_n = env_usize("BENCH_ACTORS", 10_000).min(accounts_n);
    let rss_start = rss_bytes();
    claim_new_threads("load generator");

    let sim = common::start_simulator();
    // Each part's threads are named after it has started them.
    settle().await;
    claim_new_threads("simulator");
    let database = BenchDatabase::from_env().await;
    let config = service_config(&sim, &database);
    let backend = if database.schema.is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    println!("benchmarks on {backend}; {connections} connections, {seconds} s per load run\n");

    let app = common::build(config.clone(), &database).await;
    let base = format!("http://127.0.0.1:{}", app.port());
    let state = app.state();
    actix_rt::spawn(app.run_until_stopped());
    settle().await;
    claim_new_threads("service");
    let rss_idle = rss_bytes();

    let baseline_url = start_baselines(state.store.clone()).await;
    let now = Utc::now();
    let (user, key, publish_accounts) = publisher(&sim, &state, seconds, now).await;
    let bench = Bench {
        seconds,
        connections,
        accounts_n,
        actors_n,
        base,
        state,
        key,
        rss_start,
        rss_idle,
    };

    let (a, b) = baselines(&bench, &baseline_url).await;
    if wanted("list") {
        list(&bench, &b).await;
    }
    if wanted("metrics") {
        metrics(&bench, publish_accounts[0], &a).await;
    }
    if wanted("publish") {
        publish(&bench, &publish_accounts, &database, &a).await;
    }
    if !wanted("memory") {
        database.drop_schema().await;
        return;
    }
    memory(&bench, &config, &database, user.id, now).await;
    database.drop_schema().await;
}
