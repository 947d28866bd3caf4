//! Scheduler dispatch benchmark: N posts due at the same instant across M accounts, published
//! through the account actors to an in-process simulator with zero latency.
//!
//! ```sh
//! cargo bench --bench scheduler                                   # SQLite, 10,000 posts, 1,000 accounts
//! BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench scheduler
//! BENCH_POSTS=2000 BENCH_ACCOUNTS=200 BENCH_DB_POOL=30 cargo bench --bench scheduler
//! # The scaling curve: posts {1k, 10k, 100k} × accounts {100, 1k, 10k}, one line per point,
//! # each point on a fresh database and bounded by BENCH_TIMEOUT_SECS.
//! BENCH_CURVE=1 BENCH_TIMEOUT_SECS=300 cargo bench --bench scheduler
//! BENCH_CURVE=1 BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench scheduler
//! ```
//!
//! Reports the dispatch lag (claim time − due time) and the publish lag (published − due) as
//! p50/p99, and posts published per second. Bounded: a point gives up after
//! `BENCH_TIMEOUT_SECS` (600) and reports what it reached.
//!
//! Other knobs: `BENCH_PLATFORM` (`threads`, the default, or `facebook`: the simulator allows a
//! Threads account 250 posts per 24 h, so points with more posts per account than that fail
//! the excess on Threads; Facebook pages have no such quota), `BENCH_MAX_IN_FLIGHT`,
//! `BENCH_CLAIM_BATCH`, `BENCH_MAX_CLAIMED`, `BENCH_SETTLE_BATCH` (the `scheduler.*` settings;
//! defaults as shipped). The service's own per-account call limits are lifted: the benchmark
//! measures the scheduler, not the limiter. Accounts and posts are inserted in bulk (500 rows
//! per statement).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter, Set,
    sea_query::OnConflict,
};
use serde_json::json;
use service_sim::Simulator;
use social_service::{AppState, config::Config, domain::plan::Platform};
use uuid::Uuid;

use common::{BenchDatabase, env_usize};

fn env_override(name: &str, value: &mut usize) {
    if let Some(v) = std::env::var(name).ok().and_then(|v| v.parse().ok()) {
        *value = v;
    }
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Rows per bulk insert: 500 rows of ~21 columns stay under SQLite's and PostgreSQL's limits
/// on bound values.
const INSERT_CHUNK: usize = 500;

/// What one point measured.
struct Point {
    backend: &'static str,
    posts: usize,
    accounts: usize,
    setup_secs: f64,
    published: usize,
    ended: usize,
    timed_out: bool,
    /// Published per second, from the due time to the last publish.
    rate: f64,
    span_secs: f64,
    dispatch: Vec<i64>,
    publish: Vec<i64>,
}

impl Point {
    fn line(&self) -> String {
        format!(
            "{backend:8} posts {posts:>6}  accounts {accounts:>5}  {rate:>7.0} posts/s  \
             dispatch p50 {dp50:>6} ms p99 {dp99:>6} ms  publish p50 {pp50:>6} ms p99 {pp99:>6} ms  \
             published {published}/{posts} in {span:.1} s{timeout}  (setup {setup:.1} s)",
            backend = self.backend,
            posts = self.posts,
            accounts = self.accounts,
            rate = self.rate,
            dp50 = percentile(&self.dispatch, 0.50),
            dp99 = percentile(&self.dispatch, 0.99),
            pp50 = percentile(&self.publish, 0.50),
            pp99 = percentile(&self.publish, 0.99),
            published = self.published,
            span = self.span_secs,
            timeout = if self.timed_out {
                format!(", TIMED OUT with {} ended", self.ended)
            } else {
                String::new()
            },
            setup = self.setup_secs,
        )
    }
}

/// The platform `BENCH_PLATFORM` names: `facebook`, or else Threads.
fn bench_platform() -> Platform {
    let platform_name = std::env::var("BENCH_PLATFORM").unwrap_or_else(|_| "threads".into());
    match platform_name.as_str() {
        "facebook" => Platform::Facebook,
        _ => Platform::Threads,
    }
}

/// The service's configuration for one point: the pool and `scheduler.*` settings from the
/// environment, the per-account call limits lifted, and the scheduler left out at build.
fn point_config(sim: &Simulator, database: &BenchDatabase) -> Config {
    let mut config = common::config(sim, database);
    config.database.max_connections = env_usize("BENCH_DB_POOL", 10) as u32;
    config.platforms.poll_interval_ms = 10;
    config.publishing.threads_calls_per_hour = 10_000_000;
    config.publishing.facebook_calls_per_hour = 10_000_000;
    config.scheduler.enabled = false; // started by `run_point`, once the posts are in
    env_override("BENCH_MAX_IN_FLIGHT", &mut config.scheduler.max_in_flight);
    env_override("BENCH_CLAIM_BATCH", &mut config.scheduler.claim_batch);
    env_override("BENCH_MAX_CLAIMED", &mut config.scheduler.max_claimed);
    env_override("BENCH_SETTLE_BATCH", &mut config.scheduler.settle_batch);
    config
}

/// `accounts_n` accounts of `user_id` on `platform`, in bulk: one simulator account and one
/// service account each. Their ids and names.
async fn insert_accounts(
    sim: &Simulator,
    state: &AppState,
    user_id: Uuid,
    platform: Platform,
    accounts_n: usize,
    now: DateTime<Utc>,
) -> Vec<(Uuid, String)> {
    let db = state.store.connection();
    let mut accounts: Vec<(Uuid, String)> = Vec::with_capacity(accounts_n);
    let mut rows = Vec::with_capacity(accounts_n);
    for i in 0..accounts_n {
        let sim_account = sim
            .state()
            .create_account(platform.as_str(), &format!("bench{i}"), None);
        let (id, row) = common::account_row(
            &state.cipher,
            user_id,
            platform,
            sim_account.external_id,
            sim_account.name.clone(),
            &sim_account.access_token,
            now,
        );
        accounts.push((id, sim_account.name));
        rows.push(row);
    }
    while !rows.is_empty() {
        let chunk: Vec<_> = rows.drain(..rows.len().min(INSERT_CHUNK)).collect();
        entity::account::Entity::insert_many(chunk)
            .exec(db)
            .await
            .unwrap();
    }
    accounts
}

/// `posts` posts of `user_id`, in bulk, spread over `accounts` in turn; their due time.
async fn insert_posts(
    db: &DatabaseConnection,
    user_id: Uuid,
    platform: Platform,
    accounts: &[(Uuid, String)],
    posts: usize,
    now: DateTime<Utc>,
) -> DateTime<Utc> {
    let platform_name = platform.as_str();
    // All due at one instant a little ahead (so none is claimed before all are in: the
    // scheduler starts after the inserts anyway).
    let due = Utc::now() + chrono::Duration::seconds(2);
    let mut rows = Vec::with_capacity(INSERT_CHUNK);
    for i in 0..posts {
        let (account_id, name) = &accounts[i % accounts.len()];
        let text = format!("bench post {i}");
        rows.push(entity::scheduled_post::ActiveModel {
            id: Set(Uuid::new_v4()),
            user_id: Set(user_id),
            account_id: Set(*account_id),
            platform: Set(platform),
            page_name: Set(name.clone()),
            request: Set(json!({"post": {
                "accountId": account_id,
                "content": {"text": text, "platform": platform_name},
                "target": {"targetType": platform_name},
            }})),
            content: Set(json!({"text": text, "media_urls": []})),
            scheduled_at: Set(due),
            status: Set(entity::scheduled_post::ScheduledStatus::Scheduled),
            attempts: Set(0),
            next_attempt_at: Set(due),
            claimed_by: Set(None),
            claimed_at: Set(None),
            lease_until: Set(None),
            submission_id: Set(None),
            post_id: Set(None),
            error_code: Set(None),
            error: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
            published_at: Set(None),
        });
        if rows.len() == INSERT_CHUNK || i + 1 == posts {
            entity::scheduled_post::Entity::insert_many(std::mem::take(&mut rows))
                .on_conflict(
                    OnConflict::column(entity::scheduled_post::Column::Id)
                        .do_nothing()
                        .to_owned(),
                )
                .exec(db)
                .await
                .unwrap();
        }
    }
    due
}

/// Waits, from now, until all `posts` have ended or `timeout` has passed: how many ended, and
/// whether it timed out.
async fn wait_for_posts(db: &DatabaseConnection, posts: usize, timeout: Duration) -> (usize, bool) {
    let started = Instant::now();
    let ended_count = || async {
        entity::scheduled_post::Entity::find()
            .filter(entity::scheduled_post::Column::Status.is_in([
                entity::scheduled_post::ScheduledStatus::Published,
                entity::scheduled_post::ScheduledStatus::Failed,
                entity::scheduled_post::ScheduledStatus::Cancelled,
            ]))
            .count(db)
            .await
            .unwrap() as usize
    };
    let mut timed_out = false;
    let mut ended;
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        ended = ended_count().await;
        if ended >= posts {
            break;
        }
        if started.elapsed() > timeout {
            timed_out = true;
            break;
        }
    }
    (ended, timed_out)
}

/// The dispatch lags and publish lags (ms after `due`) of the `posts` posts, each sorted, and
/// the last publish (`due` if none).
async fn lags(
    db: &DatabaseConnection,
    due: DateTime<Utc>,
    posts: usize,
) -> (Vec<i64>, Vec<i64>, DateTime<Utc>) {
    let mut publish = Vec::with_capacity(posts);
    let mut dispatch = Vec::with_capacity(posts);
    let mut last: DateTime<Utc> = due;
    for row in entity::scheduled_post::Entity::find()
        .all(db)
        .await
        .unwrap()
    {
        if let Some(at) = row.claimed_at {
            dispatch.push((at - due).num_milliseconds());
        }
        if let Some(at) = row.published_at {
            publish.push((at - due).num_milliseconds());
            last = last.max(at);
        }
    }
    publish.sort_unstable();
    dispatch.sort_unstable();
    (dispatch, publish, last)
}

async fn run_point(posts: usize, accounts_n: usize, timeout: Duration, verbose: bool) -> Point {
    let platform = bench_platform();
    let platform_name = platform.as_str();
    let sim = common::start_simulator();

    let database = BenchDatabase::from_env().await;
    let config = point_config(&sim, &database);
    let backend = database.backend();

    let setup = Instant::now();
    let app = common::build(config.clone(), &database).await;
    let state = app.state();
    let db = state.store.connection();
    let now = Utc::now();
    let user = common::bench_user(&state.store, now).await;
    let accounts = insert_accounts(&sim, &state, user.id, platform, accounts_n, now).await;
    let due = insert_posts(db, user.id, platform, &accounts, posts, now).await;
    let setup_secs = setup.elapsed().as_secs_f64();
    if verbose {
        println!(
            "{backend}: {posts} posts due at one instant across {accounts_n} {platform_name} accounts, pool of {} connections, \
             max_in_flight {}, claim_batch {}, max_claimed {}, settle_batch {} (setup {setup_secs:.1} s)",
            config.database.max_connections,
            config.scheduler.max_in_flight,
            config.scheduler.claim_batch,
            config.scheduler.max_claimed,
            config.scheduler.settle_batch,
        );
    }

    // Start the scheduler and wait for the due instant to pass and every post to end.
    // Its service is built whatever `scheduler.enabled` says; only the actor was left out. The
    // address is held to the end: an actor whose addresses are all gone stops.
    let scheduler =
        social_service::background::scheduler::SchedulerActor::new(state.scheduling.clone());
    let scheduler = actix::Actor::start(scheduler);
    let (ended, timed_out) = wait_for_posts(db, posts, timeout).await;
    // Stop claiming (a timed-out point must not go on loading the machine).
    let _ = scheduler
        .send(social_service::background::scheduler::Drain)
        .await;
    let (dispatch, publish, last) = lags(db, due, posts).await;
    let span_secs = (last - due).num_milliseconds().max(1) as f64 / 1000.0;
    let point = Point {
        backend,
        posts,
        accounts: accounts_n,
        setup_secs,
        published: publish.len(),
        ended,
        timed_out,
        rate: publish.len() as f64 / span_secs,
        span_secs,
        dispatch,
        publish,
    };
    database.drop_schema().await;
    let _ = Arc::strong_count(&state.supervisor);
    point
}

#[actix_web::main]
async fn main() {
    let timeout = Duration::from_secs(env_usize("BENCH_TIMEOUT_SECS", 600) as u64);
    if std::env::var("BENCH_CURVE").is_ok_and(|v| v == "1") {
        println!(
            "scaling curve: posts due at one instant × accounts (each point on a fresh database)"
        );
        for posts in [1_000, 10_000, 100_000] {
            for accounts in [100, 1_000, 10_000] {
                let point = run_point(posts, accounts, timeout, false).await;
                println!("{}", point.line());
            }
        }
        return;
    }
    let posts = env_usize("BENCH_POSTS", 10_000);
    let accounts = env_usize("BENCH_ACCOUNTS", 1_000).max(1);
    let point = run_point(posts, accounts, timeout, true).await;
    if point.timed_out {
        println!("timed out with {}/{posts} ended", point.ended);
    }
    println!(
        "published {}/{posts} ({} not published) in {:.2} s after the due time: {:.0} posts/s",
        point.published,
        posts - point.published,
        point.span_secs,
        point.rate
    );
    println!(
        "dispatch lag (due → claimed):   p50 {} ms, p99 {} ms, max {} ms",
        percentile(&point.dispatch, 0.50),
        percentile(&point.dispatch, 0.99),
        point.dispatch.last().copied().unwrap_or(0)
    );
    println!(
        "publish lag (due → published): p50 {} ms, p99 {} ms, max {} ms",
        percentile(&point.publish, 0.50),
        percentile(&point.publish, 0.99),
        point.publish.last().copied().unwrap_or(0)
    );
    println!("{}", point.line());
}
