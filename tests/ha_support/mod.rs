//! The HA harness's parts: the processes (simulator, instances), the seeded data, the load
//! generator and the records read back from the database and the simulator.

use std::{
    collections::HashMap,
    fs::File,
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use chrono::{DateTime, Utc};
use entity::user::Plan as UserPlan;
use sea_orm::{ConnectionTrait, Database, DbBackend, Statement};
use serde_json::{Value, json};
use social_service::{
    config::PlatformsConfig,
    crypto::{TokenCipher, generate_api_key},
    services::operator::{self, ManualAccount},
    store::Store,
};

/// An instance of the service: its port, and its process while it runs.
struct Instance {
    base: String,
    port: u16,
    process: Option<Child>,
}

/// A seeded account: the service's id and the platform's.
pub struct Account {
    pub id: uuid::Uuid,
    pub external_id: String,
}

/// The processes and the data they share.
pub struct Cluster {
    admin_url: String,
    database: String,
    pub store: Store,
    sim: Child,
    pub sim_base: String,
    instances: Vec<Instance>,
    env: Vec<(String, String)>,
    bin: PathBuf,
    logs: PathBuf,
    pub accounts: Vec<Account>,
    pub key: String,
    http: reqwest::Client,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn log_file(dir: &std::path::Path, name: &str) -> (Stdio, Stdio) {
    let file = File::options()
        .create(true)
        .append(true)
        .open(dir.join(format!("{name}.log")))
        .unwrap();
    (file.try_clone().unwrap().into(), file.into())
}

/// Waits until `url` answers 200, or panics after `within`.
async fn wait_ok(http: &reqwest::Client, url: &str, within: Duration) {
    let started = Instant::now();
    loop {
        if let Ok(response) = http.get(url).send().await
            && response.status() == 200
        {
            return;
        }
        assert!(
            started.elapsed() < within,
            "{url} not ready after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

impl Cluster {
    /// A fresh database, the simulator, `accounts` facebook pages with `budget` calls an hour,
    /// and three instances.
    pub async fn start(accounts: usize, budget: u32, takeover_secs: u64) -> Self {
        let admin_url = std::env::var("HA_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let bin = std::env::var("HA_SERVICE_BIN").map_or_else(
            |_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/service"),
            PathBuf::from,
        );
        assert!(
            bin.exists(),
            "{} is missing: cargo build --release --bin service",
            bin.display()
        );
        let database = format!("ha_{}_{}", std::process::id(), rand_suffix());
        let admin = Database::connect(&admin_url).await.unwrap();
        admin
            .execute_raw(Statement::from_string(
                DbBackend::Postgres,
                format!("CREATE DATABASE {database}"),
            ))
            .await
            .unwrap();
        admin.close().await.unwrap();
        let db_url = match admin_url.rsplit_once('/') {
            Some((server, _)) => format!("{server}/{database}"),
            None => panic!("HA_DATABASE_URL names no database: {admin_url}"),
        };
        let logs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/ha-logs");
        let _ = std::fs::remove_dir_all(&logs);
        std::fs::create_dir_all(&logs).unwrap();
        println!("database {database}; logs in {}", logs.display());

        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let sim_port = free_port();
        let sim_base = format!("http://127.0.0.1:{sim_port}");
        let (out, err) = log_file(&logs, "simulator");
        let sim = Command::new(&bin)
            .args([
                "sim",
                "--bind",
                &format!("127.0.0.1:{sim_port}"),
                "--processing-ms",
                "200",
            ])
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap();
        wait_ok(
            &http,
            &format!("{sim_base}/_sim/violations"),
            Duration::from_secs(30),
        )
        .await;

        let store = Store::connect(&db_url, 4, None).await.unwrap();
        store.migrate().await.unwrap();
        let token_key = TokenCipher::generate_key();
        let cipher = TokenCipher::from_config_value(&token_key).unwrap();
        let now = Utc::now();
        let user = store
            .upsert_oidc_user("ha-harness", "publisher", Some("ha@example.com"), None, now)
            .await
            .unwrap();
        store
            .set_plan(user.id, UserPlan::Ultra, None, None, now)
            .await
            .unwrap();
        let key = generate_api_key();
        store
            .insert_api_key(user.id, "ha", &key, now)
            .await
            .unwrap();
        let mut seeded = Vec::new();
        for i in 0..accounts {
            let created: Value = http
                .post(format!("{sim_base}/_sim/accounts"))
                .json(&json!({"platform": "facebook", "name": format!("HA page {i}")}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let external_id = created["external_id"].as_str().unwrap().to_string();
            let account = operator::add_account(
                &store,
                &cipher,
                now,
                ManualAccount {
                    user_id: user.id,
                    platform: "facebook".into(),
                    external_id: external_id.clone(),
                    name: format!("HA page {i}"),
                    username: None,
                    account_type: None,
                    profile_picture_url: None,
                    access_token: created["access_token"].as_str().unwrap().to_string(),
                    refresh_token: None,
                    token_expires_at: None,
                    data_access_expires_at: None,
                },
            )
            .await
            .unwrap();
            seeded.push(Account {
                id: account.id,
                external_id,
            });
        }

        let mut env = vec![
            ("DATABASE_URL".to_string(), db_url.clone()),
            ("RUST_LOG".into(), "info,sqlx=warn".into()),
            (
                "SERVICE__SECRETS__SESSION_KEY".into(),
                "ha-session-key-0123456789abcdef0123456789".into(),
            ),
            ("SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY".into(), token_key),
            (
                "SERVICE__SECRETS__OPERATOR_TOKEN".into(),
                "ha-operator-token-0123456789".into(),
            ),
            (
                "SERVICE__PUBLISHING__FACEBOOK_CALLS_PER_HOUR".into(),
                budget.to_string(),
            ),
            ("SERVICE__COLLECTOR__ENABLED".into(), "false".into()),
            (
                "SERVICE__CLUSTER__TAKEOVER_SECS".into(),
                takeover_secs.to_string(),
            ),
            // A scheduled post refused by the budget is tried once more, then fails.
            ("SERVICE__SCHEDULER__MAX_ATTEMPTS".into(), "2".into()),
            ("SERVICE__SCHEDULER__RETRY_BASE_SECS".into(), "1".into()),
        ];
        let platforms = serde_json::to_value(PlatformsConfig::simulator(&sim_base)).unwrap();
        for (name, value) in platforms.as_object().unwrap() {
            if let Some(text) = value.as_str() {
                env.push((
                    format!("SERVICE__PLATFORMS__{}", name.to_uppercase()),
                    text.into(),
                ));
            }
        }
        let instances = (0..3)
            .map(|_| {
                let port = free_port();
                Instance {
                    base: format!("http://127.0.0.1:{port}"),
                    port,
                    process: None,
                }
            })
            .collect();
        let mut cluster = Self {
            admin_url,
            database,
            store,
            sim,
            sim_base,
            instances,
            env,
            bin,
            logs,
            accounts: seeded,
            key: key.full,
            http,
        };
        for i in 0..3 {
            cluster.start_instance(i).await;
        }
        cluster
    }

    /// Every platform call of every account takes `ms` longer.
    pub async fn slow_calls(&self, ms: u64) {
        for account in &self.accounts {
            let response = self
                .http
                .put(format!(
                    "{}/_sim/faults/facebook/{}",
                    self.sim_base, account.external_id
                ))
                .json(&json!({ "latency_ms": ms }))
                .send()
                .await
                .unwrap();
            assert!(response.status().is_success());
        }
    }

    pub fn bases(&self) -> Vec<String> {
        self.instances.iter().map(|i| i.base.clone()).collect()
    }

    /// Starts instance `i` and waits until it is ready.
    pub async fn start_instance(&mut self, i: usize) {
        let instance = &mut self.instances[i];
        let (out, err) = log_file(&self.logs, &format!("instance-{i}"));
        let process = Command::new(&self.bin)
            .arg("serve")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env(
                "SERVICE__SERVER__BIND",
                format!("127.0.0.1:{}", instance.port),
            )
            .env("SERVICE__SERVER__PUBLIC_URL", &instance.base)
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap();
        instance.process = Some(process);
        let ready = format!("{}/readyz", instance.base);
        wait_ok(&self.http, &ready, Duration::from_secs(60)).await;
    }

    /// The instance holding the most scheduled claims now (ties: the most account leases; then
    /// the second instance): the one whose death costs the most.
    pub async fn busiest(&self) -> usize {
        let rows = self
            .query(
                "SELECT m.address, \
                 (SELECT count(*) FROM scheduled_posts s WHERE s.status = 'publishing' \
                   AND s.claimed_by = m.instance) AS claims, \
                 (SELECT count(*) FROM account_leases l WHERE l.holder = m.instance) AS leases \
                 FROM cluster_members m ORDER BY claims DESC, leases DESC",
            )
            .await;
        rows.iter()
            .filter(|row| row["claims"].as_i64() > Some(0) || row["leases"].as_i64() > Some(0))
            .find_map(|row| {
                let address = row["address"].as_str()?;
                self.instances
                    .iter()
                    .position(|i| i.base == address && i.process.is_some())
            })
            .unwrap_or(1)
    }

    /// The instance id of instance `i`, from its membership row.
    pub async fn instance_id(&self, i: usize) -> String {
        let rows = self
            .query(&format!(
                "SELECT instance FROM cluster_members WHERE address = '{}'",
                self.instances[i].base
            ))
            .await;
        rows.first()
            .and_then(|row| row["instance"].as_str().map(str::to_string))
            .expect("the instance is a member")
    }

    /// SIGKILL: no drain, no goodbye.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut process) = self.instances[i].process.take() {
            process.kill().unwrap();
            process.wait().unwrap();
        }
    }

    /// SIGTERM, waits for the clean stop, then starts it again.
    pub async fn restart(&mut self, i: usize) {
        if let Some(mut process) = self.instances[i].process.take() {
            let status = Command::new("kill")
                .args(["-TERM", &process.id().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
            process.wait().unwrap();
        }
        self.start_instance(i).await;
    }

    /// Rows of `sql` as JSON objects (every column read as text).
    pub async fn query(&self, sql: &str) -> Vec<Value> {
        let wrapped = format!("SELECT row_to_json(t)::text AS row FROM ({sql}) t");
        let rows = self
            .store
            .connection()
            .query_all_raw(Statement::from_string(DbBackend::Postgres, wrapped))
            .await
            .unwrap();
        rows.iter()
            .map(|row| serde_json::from_str(&row.try_get::<String>("", "row").unwrap()).unwrap())
            .collect()
    }

    async fn count(&self, sql: &str) -> i64 {
        self.query(sql).await[0]["n"].as_i64().unwrap()
    }

    /// Waits until no scheduled post waits or publishes and no publish is in flight.
    pub async fn wait_until_settled(&self, within: Duration) -> Result<(), String> {
        let started = Instant::now();
        loop {
            let waiting = self
                .count("SELECT count(*) AS n FROM scheduled_posts WHERE status IN ('scheduled', 'publishing')")
                .await;
            let publishing = self
                .count("SELECT count(*) AS n FROM post_submissions WHERE status = 'publishing'")
                .await;
            if waiting == 0 && publishing == 0 {
                println!("settled after {:?}", started.elapsed());
                return Ok(());
            }
            if started.elapsed() > within {
                return Err(format!(
                    "{waiting} scheduled posts waiting or publishing, {publishing} publishes in flight"
                ));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn sim_get(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.sim_base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// What the simulator and the database say now.
    pub async fn records(&self) -> Records {
        let published: Vec<Published> =
            self.sim_get("/_sim/published?platform=facebook").await["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|item| Published {
                    id: item["id"].as_str().unwrap().to_string(),
                    text: item["text"].as_str().unwrap_or_default().to_string(),
                    account: item["account_id"].as_str().unwrap().to_string(),
                    at: item["published_at"].as_str().unwrap().parse().unwrap(),
                })
                .collect();
        let requests = self.sim_get("/_sim/requests").await;
        let accounts = requests["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| AccountRecord {
                external_id: a["account_id"].as_str().unwrap().to_string(),
                calls: a["count"].as_u64().unwrap(),
                peak_writes: a["peak_writes"].as_u64().unwrap(),
                window: window(&published, a["account_id"].as_str().unwrap()),
            })
            .collect();
        let violations = self.sim_get("/_sim/violations").await;
        let history = self
            .query("SELECT content->>'text' AS text, status FROM post_submissions")
            .await
            .into_iter()
            .map(|row| {
                (
                    row["text"].as_str().unwrap_or_default().to_string(),
                    row["status"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let scheduled = self
            .query("SELECT id::text AS id, status, coalesce(error_code, '') AS error_code FROM scheduled_posts")
            .await
            .into_iter()
            .map(|row| {
                (
                    row["id"].as_str().unwrap().to_string(),
                    ScheduledRecord {
                        status: row["status"].as_str().unwrap().to_string(),
                        error_code: row["error_code"].as_str().unwrap().to_string(),
                    },
                )
            })
            .collect();
        Records {
            violations: violations["count"].as_u64().unwrap(),
            violation_list: violations["violations"].clone(),
            accounts,
            published,
            history,
            scheduled,
        }
    }

    /// Stops every process and drops the database.
    pub async fn stop(mut self) {
        for i in 0..self.instances.len() {
            self.kill(i);
        }
        let _ = self.sim.kill();
        let _ = self.sim.wait();
        self.store.clone().close().await.unwrap();
        if let Ok(admin) = Database::connect(&self.admin_url).await {
            let _ = admin
                .execute_raw(Statement::from_string(
                    DbBackend::Postgres,
                    format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.database),
                ))
                .await;
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for instance in &mut self.instances {
            if let Some(process) = instance.process.as_mut() {
                let _ = process.kill();
            }
        }
        let _ = self.sim.kill();
    }
}

fn rand_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_string()
}

/// Time from an account's first post on the platform to its last.
fn window(published: &[Published], account: &str) -> Duration {
    let times: Vec<DateTime<Utc>> = published
        .iter()
        .filter(|p| p.account == account)
        .map(|p| p.at)
        .collect();
    match (times.iter().min(), times.iter().max()) {
        (Some(first), Some(last)) => (*last - *first).to_std().unwrap_or_default(),
        _ => Duration::ZERO,
    }
}

/// A post the simulator holds as published.
pub struct Published {
    pub id: String,
    pub text: String,
    pub account: String,
    pub at: DateTime<Utc>,
}

pub struct AccountRecord {
    pub external_id: String,
    pub calls: u64,
    pub peak_writes: u64,
    /// From its first post to its last.
    pub window: Duration,
}

pub struct ScheduledRecord {
    pub status: String,
    pub error_code: String,
}

pub struct Records {
    pub violations: u64,
    pub violation_list: Value,
    pub accounts: Vec<AccountRecord>,
    pub published: Vec<Published>,
    /// Post text → its history row's status.
    pub history: HashMap<String, String>,
    /// Scheduled post id → its row.
    pub scheduled: HashMap<String, ScheduledRecord>,
}

impl Records {
    pub fn summary(&self) -> String {
        let mut out = format!(
            "{} posts on the platform, {} history rows, {} scheduled posts, {} violations",
            self.published.len(),
            self.history.len(),
            self.scheduled.len(),
            self.violations
        );
        for a in &self.accounts {
            out.push_str(&format!(
                "\n  account {}: {} calls in {:.0} s, at most {} publishes at once",
                a.external_id,
                a.calls,
                a.window.as_secs_f64(),
                a.peak_writes
            ));
        }
        let mut statuses: HashMap<String, usize> = HashMap::new();
        for row in self.scheduled.values() {
            let key = if row.error_code.is_empty() {
                row.status.clone()
            } else {
                format!("{} {}", row.status, row.error_code)
            };
            *statuses.entry(key).or_default() += 1;
        }
        out.push_str(&format!("\n  scheduled posts by status: {statuses:?}"));
        out
    }
}

/// What the load sends: immediate publishes and scheduled posts, each with a unique text.
pub struct Plan {
    /// (account, text, when to send it after the start)
    pub immediate: Vec<(usize, String, Duration)>,
    /// (account, text, when it is due after the start)
    pub scheduled: Vec<(usize, String, Duration)>,
}

impl Plan {
    /// `immediate` publishes per account spread over its duration; `scheduled` posts per
    /// account due between its two times.
    pub fn new(
        cluster: &Cluster,
        (immediate, over): (usize, Duration),
        (scheduled, from, to): (usize, Duration, Duration),
    ) -> Self {
        let accounts = cluster.accounts.len();
        let mut plan = Self {
            immediate: Vec::new(),
            scheduled: Vec::new(),
        };
        for n in 0..immediate {
            for a in 0..accounts {
                let at = over.mul_f64(n as f64 / immediate as f64);
                plan.immediate.push((a, format!("ha now {a}-{n}"), at));
            }
        }
        for n in 0..scheduled {
            for a in 0..accounts {
                let at = from + (to - from).mul_f64(n as f64 / scheduled as f64);
                plan.scheduled.push((a, format!("ha later {a}-{n}"), at));
            }
        }
        plan.immediate.sort_by_key(|(_, _, at)| *at);
        plan
    }
}

/// How a request ended, as its client saw it.
#[derive(Debug, Clone)]
pub enum Outcome {
    Published {
        post_id: String,
    },
    Refused {
        status: u16,
        code: String,
    },
    /// No answer (the instance died with the request in flight).
    Unknown(String),
}

pub struct Request {
    pub text: String,
    pub outcome: Outcome,
}

pub struct ScheduledPost {
    pub text: String,
    /// The id it was accepted under; `None` when refused.
    pub id: Option<String>,
}

/// The run: what was sent and what came back, and how long takeovers took.
pub struct Scenario {
    pub immediate: Vec<Request>,
    pub scheduled: Vec<ScheduledPost>,
    /// What of the killed instance was taken over, and after how long.
    pub takeovers: Vec<(String, Duration)>,
}

/// Sends one request to the instances in turn from `next`: a connection refused (a dead
/// instance) goes to the next one, as a load balancer would; any other failure is an
/// unknown outcome.
async fn send(
    http: &reqwest::Client,
    bases: &[String],
    next: &AtomicUsize,
    key: &str,
    body: &Value,
) -> Result<(u16, Value), String> {
    let mut last = String::new();
    for _ in 0..bases.len() {
        let base = &bases[next.fetch_add(1, Ordering::Relaxed) % bases.len()];
        match http
            .post(format!("{base}/v2/posts"))
            .header("service-api-key", key)
            .json(body)
            .send()
            .await
        {
            Ok(response) => {
                let status = response.status().as_u16();
                let body = response.json().await.map_err(|e| e.to_string())?;
                return Ok((status, body));
            }
            Err(error) if error.is_connect() => last = error.to_string(),
            Err(error) => return Err(error.to_string()),
        }
    }
    Err(last)
}

fn body(account: &Account, text: &str, due: Option<DateTime<Utc>>) -> Value {
    let mut content = json!({"text": text, "platform": "facebook"});
    if let Some(due) = due {
        content["scheduledAt"] = json!(due.to_rfc3339());
    }
    json!({"post": {
        "accountId": account.id,
        "content": content,
        "target": {"targetType": "facebook"},
    }})
}

impl Scenario {
    /// Sends the plan round-robin; kills instance 1 at `kill_at` and restarts instance 2 at
    /// `restart_at`, measuring how long the killed instance's claims take to be taken over.
    pub async fn run(
        cluster: &mut Cluster,
        plan: &Plan,
        kill_at: Duration,
        restart_at: Duration,
    ) -> Self {
        let started = Instant::now();
        let t0 = Utc::now();
        let bases = Arc::new(cluster.bases());
        let next = Arc::new(AtomicUsize::new(0));
        let http = cluster.http.clone();
        let key = Arc::new(cluster.key.clone());
        let accounts: Arc<Vec<(uuid::Uuid, String)>> = Arc::new(
            cluster
                .accounts
                .iter()
                .map(|a| (a.id, a.external_id.clone()))
                .collect(),
        );
        let account = |i: usize| Account {
            id: accounts[i].0,
            external_id: accounts[i].1.clone(),
        };

        // Scheduled posts first: accepted well before they are due.
        let mut scheduled = Vec::new();
        for (a, text, due) in &plan.scheduled {
            let due = t0 + chrono::Duration::from_std(*due).unwrap();
            let id = match send(
                &http,
                &bases,
                &next,
                &key,
                &body(&account(*a), text, Some(due)),
            )
            .await
            {
                Ok((200, answer)) => answer["scheduledPostId"].as_str().map(str::to_string),
                Ok((status, answer)) => panic!("scheduling {text}: {status} {answer}"),
                Err(error) => panic!("scheduling {text}: {error}"),
            };
            scheduled.push(ScheduledPost {
                text: text.clone(),
                id,
            });
        }

        // The immediate load, each request at its time, several in flight.
        let results = Arc::new(Mutex::new(Vec::new()));
        let limit = Arc::new(tokio::sync::Semaphore::new(24));
        let mut tasks = Vec::new();
        for (a, text, at) in plan.immediate.clone() {
            let (http, bases, next, key, results, limit) = (
                http.clone(),
                bases.clone(),
                next.clone(),
                key.clone(),
                results.clone(),
                limit.clone(),
            );
            let request = body(&account(a), &text, None);
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep_until((started + at).into()).await;
                let _slot = limit.acquire().await.unwrap();
                let outcome = match send(&http, &bases, &next, &key, &request).await {
                    Ok((200, answer)) => Outcome::Published {
                        post_id: answer["data"]["post_id"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                    },
                    Ok((status, answer)) => Outcome::Refused {
                        status,
                        code: answer["error"].as_str().unwrap_or_default().to_string(),
                    },
                    Err(error) => Outcome::Unknown(error),
                };
                results.lock().unwrap().push(Request { text, outcome });
            }));
        }

        // The faults, while the load runs: the busiest instance is killed, the next restarted.
        tokio::time::sleep_until((started + kill_at).into()).await;
        let killed_index = cluster.busiest().await;
        let restarted_index = (killed_index + 1) % 3;
        let victim = cluster.instance_id(killed_index).await;
        let claimed = cluster
            .query(&format!(
                "SELECT id::text AS id FROM scheduled_posts WHERE status = 'publishing' AND claimed_by = '{victim}'"
            ))
            .await;
        cluster.kill(killed_index);
        let killed = Instant::now();
        println!(
            "killed instance {killed_index} ({victim}) holding {} scheduled claims",
            claimed.len()
        );
        let mut takeovers = Vec::new();
        let ids: Vec<String> = claimed
            .iter()
            .map(|row| row["id"].as_str().unwrap().to_string())
            .collect();
        let still_claimed = format!(
            "SELECT count(*) AS n FROM scheduled_posts WHERE claimed_by = '{victim}' \
             AND status = 'publishing' AND id::text IN ('{}')",
            ids.join("','")
        );
        let mut restarted = false;
        let mut claims_done = claimed.is_empty();
        if claims_done {
            takeovers.push(("scheduled claims (none held)".to_string(), Duration::ZERO));
        }
        while !(restarted && claims_done) {
            if !claims_done && cluster.count(&still_claimed).await == 0 {
                claims_done = true;
                takeovers.push((
                    format!("{} scheduled claims", claimed.len()),
                    killed.elapsed(),
                ));
            }
            if !restarted && started.elapsed() >= restart_at {
                cluster.restart(restarted_index).await;
                restarted = true;
                println!(
                    "restarted instance {restarted_index} at {:?}",
                    started.elapsed()
                );
            }
            assert!(
                killed.elapsed() < Duration::from_secs(120),
                "the killed instance's claims were never taken over"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for task in tasks {
            task.await.unwrap();
        }
        let immediate = std::mem::take(&mut *results.lock().unwrap());
        let mut by_outcome: HashMap<String, usize> = HashMap::new();
        for request in &immediate {
            let key = match &request.outcome {
                Outcome::Published { .. } => "200".to_string(),
                Outcome::Refused { status, code } => format!("{status} {code}"),
                Outcome::Unknown(_) => "no answer".to_string(),
            };
            *by_outcome.entry(key).or_default() += 1;
        }
        println!("immediate publishes by outcome: {by_outcome:?}");
        Self {
            immediate,
            scheduled,
            takeovers,
        }
    }
}
