//! The real binary is SIGKILLed in the middle of a batch of due scheduled posts and restarted:
//! no post is published twice, none is lost, every one ends in a terminal state.

use std::{
    collections::HashMap,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use chrono::Utc;
use serde_json::json;
use service_sim::{SimConfig, Simulator, state::FaultSpec};
use social_service::{
    crypto::TokenCipher,
    services::operator,
    services::operator::ManualAccount,
    store::{NewScheduledPost, Store},
};

const POSTS: usize = 40;
const ACCOUNTS: usize = 4;

fn start_service(envs: &[(String, String)]) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_service"));
    command
        .arg("serve")
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (key, value) in envs {
        command.env(key, value);
    }
    command.spawn().unwrap()
}

/// A simulator, a SQLite file with one user, and the environment that points the real binary
/// at both.
struct Rig {
    sim: Simulator,
    _dir: tempfile::TempDir,
    db_url: String,
    key: String,
    cipher: TokenCipher,
    store: Store,
    user: entity::user::Model,
}

impl Drop for Rig {
    fn drop(&mut self) {
        crate::helpers::assert_no_violations(&self.sim);
    }
}

impl Rig {
    async fn new(name: &str) -> Self {
        let sim = Simulator::start(SimConfig::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let db_url = format!("sqlite://{}/{name}.db?mode=rwc", dir.path().display());
        let key = TokenCipher::generate_key();
        let cipher = TokenCipher::from_config_value(&key).unwrap();
        let store = Store::connect(&db_url, 2, None).await.unwrap();
        store.migrate().await.unwrap();
        let user = store
            .upsert_oidc_user(
                "iss",
                name,
                Some(&format!("{name}@example.com")),
                None,
                Utc::now(),
            )
            .await
            .unwrap();
        Self {
            sim,
            _dir: dir,
            db_url,
            key,
            cipher,
            store,
            user,
        }
    }

    /// A threads account on the simulator whose every call takes `latency_ms`, connected.
    async fn slow_threads_account(&self, name: &str, latency_ms: u64) -> entity::account::Model {
        let sim_account = self.sim.state().create_account("threads", name, None);
        self.sim.state().set_faults(
            "threads",
            &sim_account.external_id,
            FaultSpec {
                latency_ms,
                ..FaultSpec::default()
            },
        );
        operator::add_account(
            &self.store,
            &self.cipher,
            Utc::now(),
            ManualAccount {
                user_id: self.user.id,
                platform: "threads".into(),
                external_id: sim_account.external_id.clone(),
                name: name.into(),
                username: None,
                account_type: None,
                profile_picture_url: None,
                access_token: sim_account.access_token.clone(),
                refresh_token: None,
                token_expires_at: None,
                data_access_expires_at: None,
            },
        )
        .await
        .unwrap()
    }

    /// A threads text post scheduled at `at`.
    async fn schedule(
        &self,
        account: &entity::account::Model,
        text: &str,
        at: chrono::DateTime<Utc>,
    ) -> uuid::Uuid {
        self.store
            .insert_scheduled_post(
                NewScheduledPost {
                    user_id: self.user.id,
                    account_id: account.id,
                    platform: social_service::domain::plan::Platform::Threads,
                    page_name: account.display_name.clone(),
                    request: json!({"post": {
                        "accountId": account.id,
                        "content": {"text": text, "platform": "threads"},
                        "target": {"targetType": "threads"},
                    }}),
                    content: json!({"text": text, "media_urls": []}),
                    scheduled_at: at,
                },
                Utc::now(),
            )
            .await
            .unwrap()
            .id
    }

    /// The binary's environment: this database and simulator, fast polling, and `extra`.
    fn envs(&self, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut envs: Vec<(String, String)> = [
            ("SERVICE__SERVER__BIND", "127.0.0.1:0".to_string()),
            ("SERVICE__DATABASE__URL", self.db_url.clone()),
            ("SERVICE__SECRETS__SESSION_KEY", "k".repeat(40)),
            ("SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY", self.key.clone()),
            (
                "SERVICE__SECRETS__OPERATOR_TOKEN",
                "operator-token-0123456789".into(),
            ),
            (
                "SERVICE__PLATFORMS__THREADS_URL",
                format!("{}/threads", self.sim.base_url),
            ),
            ("SERVICE__PLATFORMS__POLL_INTERVAL_MS", "50".into()),
            ("SERVICE__SCHEDULER__MAX_SLEEP_MS", "100".into()),
            // These tests are about publishing; the daily collection would add its own calls.
            ("SERVICE__COLLECTOR__ENABLED", "false".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        envs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        envs
    }
}

#[actix_web::test]
async fn sigkill_mid_batch_loses_nothing_and_publishes_nothing_twice() {
    // Arrange: accounts on the simulator whose calls take a while (so the kill lands
    // mid-batch), and a batch of posts already due.
    let rig = Rig::new("crash").await;
    let (sim, store) = (&rig.sim, &rig.store);
    let mut accounts = Vec::new();
    for i in 0..ACCOUNTS {
        accounts.push(rig.slow_threads_account(&format!("acct{i}"), 120).await);
    }
    let mut texts = HashMap::new();
    for i in 0..POSTS {
        let text = format!("crash post {i}");
        let due = Utc::now() - chrono::Duration::seconds(1);
        let id = rig.schedule(&accounts[i % ACCOUNTS], &text, due).await;
        texts.insert(id, text);
    }
    let envs = rig.envs(&[
        ("SERVICE__SCHEDULER__LEASE_SECS", "2"),
        ("RUST_LOG", "warn"),
    ]);

    // Run until part of the batch is out, then SIGKILL.
    let mut first = start_service(&envs);
    let started = Instant::now();
    while sim.state().published(Some("threads"), None).len() < POSTS / 4 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no progress before the kill"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    let at_kill = sim.state().published(Some("threads"), None).len();
    assert!(
        at_kill < POSTS,
        "the kill should land mid-batch ({at_kill} published)"
    );
    let mut left_publishing = 0;
    for id in texts.keys() {
        if store
            .find_scheduled_post(*id)
            .await
            .unwrap()
            .unwrap()
            .status
            .as_str()
            == "publishing"
        {
            left_publishing += 1;
        }
    }
    assert!(left_publishing > 0, "the kill left claimed posts to settle");

    // Restart: it settles what the dead process left and finishes the rest.
    let mut second = start_service(&envs);
    let started = Instant::now();
    let rows = loop {
        let mut rows = Vec::new();
        for id in texts.keys() {
            rows.push(store.find_scheduled_post(*id).await.unwrap().unwrap());
        }
        if rows
            .iter()
            .all(|r| r.status.as_str() == "published" || r.status.as_str() == "failed")
        {
            break rows;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "not all posts reached a terminal state: {:?}",
            rows.iter().map(|r| r.status.as_str()).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    second.kill().unwrap();
    second.wait().unwrap();

    // Count what the platform received, per text.
    let mut received: HashMap<String, usize> = HashMap::new();
    for item in sim.state().published(Some("threads"), None) {
        *received.entry(item.text.unwrap_or_default()).or_default() += 1;
    }
    for (text, count) in &received {
        assert_eq!(*count, 1, "{text} was published {count} times");
    }
    for row in &rows {
        let text = &texts[&row.id];
        match row.status.as_str() {
            "published" => assert_eq!(received.get(text), Some(&1), "{text} marked published"),
            // Only a post whose final call was cut off may fail, and it says so.
            _ => assert_eq!(
                row.error_code.as_deref(),
                Some("PublishingUnconfirmed"),
                "{text}: {:?}",
                row.error
            ),
        }
    }
    let published = rows
        .iter()
        .filter(|r| r.status.as_str() == "published")
        .count();
    assert!(
        published >= POSTS - ACCOUNTS,
        "at most one post per account was cut off mid-publish"
    );
}

#[actix_web::test]
async fn sigterm_finishes_in_flight_publishes_and_leaves_the_rest_scheduled() {
    let rig = Rig::new("term").await;
    let (sim, store) = (&rig.sim, &rig.store);
    let account = rig.slow_threads_account("slow", 400).await;
    // The first is due now, the rest in an hour.
    let now = Utc::now();
    let mut ids = Vec::new();
    for i in 0..5 {
        let at = if i == 0 {
            now
        } else {
            now + chrono::Duration::hours(1)
        };
        ids.push(rig.schedule(&account, &format!("term post {i}"), at).await);
    }
    let envs = rig.envs(&[]);
    let mut child = start_service(&envs);
    // Wait until the due post is being published, then SIGTERM.
    let started = Instant::now();
    loop {
        let row = store.find_scheduled_post(ids[0]).await.unwrap().unwrap();
        if row.status.as_str() == "publishing" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never started publishing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit_wait = Instant::now();
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            exit_wait.elapsed() < Duration::from_secs(40),
            "did not exit after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "clean exit: {exit:?}");
    let first = store.find_scheduled_post(ids[0]).await.unwrap().unwrap();
    assert_eq!(
        first.status.as_str(),
        "published",
        "the in-flight publish finished before exit"
    );
    for id in &ids[1..] {
        assert_eq!(
            store
                .find_scheduled_post(*id)
                .await
                .unwrap()
                .unwrap()
                .status
                .as_str(),
            "scheduled"
        );
    }
    assert_eq!(sim.state().published(Some("threads"), None).len(), 1);
}
