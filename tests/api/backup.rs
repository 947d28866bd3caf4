//! `service backup`, `service migrate status` and `service --version`: a backup taken while
//! publishes go on restores to a service that knows the same keys, accounts and history.

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicBool, Ordering},
};

use serde_json::{Value, json};
use social_service::services::backup::{self, BackupOutcome};

use crate::{
    config::service,
    helpers::{TestApp, eventually, status_and_json},
};

async fn get(base: &str, path: &str, client: &reqwest::Client) -> (u16, Value) {
    status_and_json(client.get(format!("{base}{path}")).send().await.unwrap()).await
}

async fn accounts(base: &str, key: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .get(format!("{base}/v2/accounts"))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap();
    status_and_json(response).await
}

fn submission_id(body: &Value) -> String {
    body["data"]["post_submission_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{body}"))
        .to_string()
}

#[actix_web::test]
async fn a_backup_taken_while_publishing_restores_keys_accounts_and_every_answered_publish() {
    if crate::authcache::on_postgres() {
        return; // VACUUM INTO is SQLite's; PostgreSQL is backed up with pg_dump.
    }
    let app = Arc::new(TestApp::spawn().await);
    let publisher = app.publisher("facebook", "ultra").await;
    let answered = Arc::new(Mutex::new(Vec::new()));
    for i in 0..3 {
        let (status, body) = app
            .post(
                &publisher.key,
                &publisher.body(json!({"text": format!("before {i}")})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        answered.lock().unwrap().push(submission_id(&body));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let publishing = {
        let (app, answered, stop) = (app.clone(), answered.clone(), stop.clone());
        let (key, body) = (
            publisher.key.clone(),
            publisher.body(json!({"text": "during the backup"})),
        );
        actix_rt::spawn(async move {
            let mut statuses = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                let (status, answer) = app.post(&key, &body).await;
                if status == 200 {
                    answered.lock().unwrap().push(submission_id(&answer));
                }
                statuses.push((status, answer));
            }
            statuses
        })
    };
    // The backup starts only once the loop is publishing.
    eventually("a publish from the loop", async || {
        answered.lock().unwrap().len() > 3
    })
    .await;
    let before_backup = answered.lock().unwrap().clone();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("backup.db");
    let outcome = backup::backup(&app.config.database.url, &path).await;
    stop.store(true, Ordering::SeqCst);
    let statuses = publishing.await.unwrap();
    assert!(
        matches!(&outcome, Ok(BackupOutcome::Written(written)) if *written == path),
        "{outcome:?}"
    );
    for (status, body) in &statuses {
        assert_eq!(*status, 200, "publishes go on during the backup: {body}");
    }

    let (_, accounts_before) = accounts(&app.base, &publisher.key).await;
    // The documented restore, in a directory that holds what a stopped service leaves beside its
    // database (its write-ahead log, shared memory and access-change files, copied from the live
    // one): the backup takes the database file's place, and those files are deleted.
    let live = app
        .config
        .database
        .url
        .trim_start_matches("sqlite://")
        .split('?')
        .next()
        .unwrap()
        .to_string();
    let restore_dir = tempfile::tempdir().unwrap();
    let database = restore_dir.path().join("service.db");
    let mut stale = Vec::new();
    for suffix in ["-wal", "-shm", "-access"] {
        let beside = format!("{live}{suffix}");
        if std::path::Path::new(&beside).exists() {
            let copy = restore_dir.path().join(format!("service.db{suffix}"));
            std::fs::copy(&beside, &copy).unwrap();
            stale.push(copy);
        }
    }
    assert!(
        !stale.is_empty(),
        "a running SQLite service keeps its log beside the database"
    );
    std::fs::copy(&path, &database).unwrap();
    for file in &stale {
        std::fs::remove_file(file).unwrap();
    }
    let restored = app
        .spawn_second_with(|config| {
            config.database.url = format!("sqlite://{}?mode=rwc", database.display());
        })
        .await;
    let (status, accounts_after) = accounts(&restored.base, &publisher.key).await;
    assert_eq!(status, 200, "the API key authenticates: {accounts_after}");
    assert_eq!(accounts_after, accounts_before);
    assert!(
        accounts_after
            .to_string()
            .contains(&publisher.account.id.to_string()),
        "{accounts_after}"
    );

    let (status, history) = get(
        &restored.base,
        "/api/published-posts?limit=100",
        &publisher.dashboard.client,
    )
    .await;
    assert_eq!(status, 200, "{history}");
    let restored_ids: Vec<&str> = history["posts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|post| post["post_submission_id"].as_str().unwrap())
        .collect();
    for id in &before_backup {
        assert!(
            restored_ids.contains(&id.as_str()),
            "publish {id} answered before the backup started: {history}"
        );
    }
}

#[test]
fn backup_refuses_an_existing_file_and_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/s.db?mode=rwc", dir.path().display());
    let existing = dir.path().join("taken.db");
    std::fs::write(&existing, b"keep me").unwrap();
    let output = service()
        .args(["backup", existing.to_str().unwrap()])
        .env("SERVICE__DATABASE__URL", &db)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("already exists"), "{stderr}");
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");
}

#[test]
fn backup_on_postgres_prints_pg_dump_without_the_password_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("social.dump");
    let output = service()
        .args(["backup", path.to_str().unwrap()])
        .env(
            "SERVICE__DATABASE__URL",
            "postgres://app:s3cret-pw@db.example:5433/social",
        )
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("pg_dump --host db.example --port 5433"),
        "{stdout}"
    );
    assert!(stdout.contains("social"), "{stdout}");
    assert!(!stdout.contains("s3cret-pw"), "{stdout}");
    assert!(!path.exists());
}

fn migrate_status(db: &str) -> Vec<(String, String)> {
    let output = service()
        .args(["migrate", "status"])
        .env("SERVICE__DATABASE__URL", db)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let (name, status) = line.split_once(' ').unwrap();
            (name.to_string(), status.to_string())
        })
        .collect()
}

#[test]
fn migrate_status_lists_each_migration_pending_then_applied() {
    use migration::MigratorTrait;
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/m.db?mode=rwc", dir.path().display());
    let names: Vec<String> = migration::Migrator::migrations()
        .iter()
        .map(|m| m.name().to_string())
        .collect();
    let pending: Vec<(String, String)> = names
        .iter()
        .map(|n| (n.clone(), "pending".to_string()))
        .collect();
    assert_eq!(migrate_status(&db), pending);

    let output = service()
        .arg("migrate")
        .env("SERVICE__DATABASE__URL", &db)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("migrations applied"));

    let applied: Vec<(String, String)> = names
        .iter()
        .map(|n| (n.clone(), "applied".to_string()))
        .collect();
    assert_eq!(migrate_status(&db), applied);
}

#[test]
fn version_names_the_package_version_and_the_commit() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let output = service().arg("--version").output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("service {} ({commit})", env!("CARGO_PKG_VERSION"))
    );
}
