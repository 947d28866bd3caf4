//! `service db copy`: a SQLite database filled through the API, copied into a new PostgreSQL
//! database, serves the same keys, accounts, history and scheduled posts with the same ids,
//! every row of every table equal; a target that holds rows, a copy onto its own source and a
//! source that does not exist are refused, and the source is never written.

use std::process::Output;

use chrono::{FixedOffset, SecondsFormat};
use chrono_tz::Asia::Taipei;
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, EntityName, EntityTrait};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{OPERATOR_TOKEN, Publisher, TestApp, eventually, status_and_json};

/// The PostgreSQL server the copies go to, without a database name: `TEST_POSTGRES_SERVER`, or
/// the local one CI runs.
fn postgres_server() -> String {
    std::env::var("TEST_POSTGRES_SERVER")
        .ok()
        .filter(|server| !server.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432".to_string())
}

fn db_copy(from: &str, to: &str) -> Output {
    crate::config::service()
        .args(["db", "copy", "--from", from, "--to", to])
        .output()
        .unwrap()
}

/// A new, empty PostgreSQL database of the test's own; dropped at its end.
struct FreshPostgres {
    name: String,
    url: String,
}

impl FreshPostgres {
    async fn create() -> Self {
        let name = format!("copy_{}", Uuid::new_v4().simple());
        let admin = Database::connect(format!("{}/postgres", postgres_server()))
            .await
            .unwrap();
        admin
            .execute_unprepared(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        admin.close().await.unwrap();
        let url = format!("{}/{name}", postgres_server());
        Self { name, url }
    }
}

impl Drop for FreshPostgres {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop runs inside the test's runtime: use a thread with its own runtime.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                if let Ok(admin) =
                    Database::connect(format!("{}/postgres", postgres_server())).await
                {
                    // FORCE ends the connections of the instance the test started on it.
                    let _ = admin
                        .execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .await;
                    let _ = admin.close().await;
                }
            });
        })
        .join();
    }
}

/// `text` with every timestamp's fraction of a second cut to six digits: PostgreSQL keeps the
/// microsecond, while SQLite keeps what it was given (the usage flush writes the system
/// clock's nanoseconds).
fn to_the_microsecond(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        out.push(chars[i]);
        if chars[i] == '.' {
            let digits = chars[i + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            if chars.get(i + 1 + digits) == Some(&'Z') {
                out.extend(&chars[i + 1..i + 1 + digits.min(6)]);
                i += digits;
            }
        }
        i += 1;
    }
    out
}

/// Every row of every copied table, as the entities read them, sorted per table.
async fn every_row(url: &str) -> Vec<(&'static str, Vec<String>)> {
    let db: DatabaseConnection = Database::connect(url).await.unwrap();
    let mut tables = Vec::new();
    macro_rules! read_each {
        ($($module:ident),* $(,)?) => {
            $(
                let mut rows: Vec<String> = entity::$module::Entity::find()
                    .all(&db)
                    .await
                    .unwrap()
                    .iter()
                    .map(|row| to_the_microsecond(&format!("{row:?}")))
                    .collect();
                rows.sort();
                tables.push((entity::$module::Entity.table_name(), rows));
            )*
        };
    }
    entity::for_every_table!(read_each);
    db.close().await.unwrap();
    tables
}

async fn api_get(base: &str, path: &str, key: &str) -> Value {
    let response = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

async fn history(base: &str, publisher: &Publisher) -> Value {
    let response = publisher
        .dashboard
        .client
        .get(format!("{base}/api/published-posts?limit=100"))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// A publisher with published posts, a scheduled and a cancelled post, a revoked second key
/// and a collected daily snapshot: rows in most tables, nullable columns both set and empty.
async fn fill(app: &TestApp) -> Publisher {
    let publisher = app.publisher("facebook", "ultra").await;
    let bystander = app.publisher("facebook", "pro").await;
    for (who, text) in [
        (&publisher, "first"),
        (&publisher, "second"),
        (&bystander, "hi"),
    ] {
        let (status, body) = app.post(&who.key, &who.body(json!({ "text": text }))).await;
        assert_eq!(status, 200, "{body}");
    }
    let offset = FixedOffset::east_opt(8 * 3600).unwrap();
    let mut scheduled = Vec::new();
    for days in [30, 31] {
        let at = (app.clock_now() + chrono::Duration::days(days))
            .with_timezone(&offset)
            .to_rfc3339_opts(SecondsFormat::Millis, false);
        let body = publisher.body(json!({"text": format!("in {days} days"), "scheduledAt": at}));
        let (status, answer) = app.post(&publisher.key, &body).await;
        assert_eq!(status, 200, "{answer}");
        scheduled.push(answer["scheduledPostId"].as_str().unwrap().to_string());
    }
    let cancelled = app
        .http
        .delete(app.url(&format!("/api/scheduled-posts/{}", scheduled[1])))
        .header("service-api-key", &publisher.key)
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), 200);
    // An uploaded file (its row and its owner's storage total).
    let uploaded = app
        .http
        .post(app.url("/v2/media"))
        .header("service-api-key", &publisher.key)
        .header("content-type", "image/png")
        .body(b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x02\0\0\0\x02\x08\x06\0\0\0".repeat(4))
        .send()
        .await
        .unwrap();
    assert_eq!(uploaded.status(), 201);
    let (_, spare_id) = app.create_key(&publisher.dashboard, "spare").await;
    let revoked = publisher
        .dashboard
        .client
        .delete(app.url(&format!("/api/keys/{spare_id}")))
        .send()
        .await
        .unwrap();
    assert!(revoked.status().is_success(), "{}", revoked.status());
    let yesterday = app.clock_now().with_timezone(&Taipei).date_naive() - chrono::Days::new(1);
    let collect = format!(
        "/api/cron/collect-performance?date={}&account_id={}",
        yesterday.format("%Y-%m-%d"),
        publisher.account.id
    );
    let response = app
        .http
        .post(app.url(&collect))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    // A webhook endpoint with a delivered test message: endpoints, messages and attempts.
    let created = app
        .http
        .post(app.url("/api/webhooks"))
        .header("service-api-key", &publisher.key)
        .json(&json!({ "url": app.media_url("hook"), "description": "copied" }))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(created).await;
    assert_eq!(status, 201, "{body}");
    let deliveries = format!(
        "/api/webhooks/{}/deliveries",
        body["webhook"]["id"].as_str().unwrap()
    );
    let tested = app
        .http
        .post(app.url(&format!(
            "/api/webhooks/{}/test",
            body["webhook"]["id"].as_str().unwrap()
        )))
        .header("service-api-key", &publisher.key)
        .send()
        .await
        .unwrap();
    assert_eq!(tested.status(), 202);
    eventually("the test message attempted", async || {
        let response = app
            .http
            .get(app.url(&deliveries))
            .header("service-api-key", &publisher.key)
            .send()
            .await
            .unwrap();
        let (_, body) = status_and_json(response).await;
        body["deliveries"][0]["attempts"]
            .as_array()
            .is_some_and(|attempts| !attempts.is_empty())
    })
    .await;
    eventually("every publish settled", async || {
        history(&app.base, &publisher).await["posts"]
            .as_array()
            .is_some_and(|posts| posts.iter().all(|p| p["status"] != "processing"))
    })
    .await;
    publisher
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[actix_web::test]
async fn a_sqlite_database_copied_into_postgresql_serves_the_same_keys_accounts_and_posts() {
    if crate::authcache::on_postgres() {
        return; // The copy starts from the SQLite database that the SQLite run gives each test.
    }
    let app = TestApp::spawn_with(|config| {
        config.webhooks.allow_hosts = config.publishing.media_allow_hosts.clone();
    })
    .await;
    let publisher = fill(&app).await;
    // The documented way with the service running: copy from a backup of it.
    let dir = tempfile::tempdir().unwrap();
    let backup = dir.path().join("backup.db");
    let output = crate::config::service()
        .args(["backup", backup.to_str().unwrap()])
        .env("SERVICE__DATABASE__URL", &app.config.database.url)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let source = format!("sqlite://{}", backup.display());
    let source_bytes = std::fs::read(&backup).unwrap();
    let target = FreshPostgres::create().await;

    let output = db_copy(&source, &target.url);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary = String::from_utf8_lossy(&output.stdout);
    for table in social_service::store::copied_tables() {
        assert!(summary.contains(table), "{table} in the summary: {summary}");
    }
    assert!(summary.contains("every table's count matches"), "{summary}");
    assert_eq!(
        std::fs::read(&backup).unwrap(),
        source_bytes,
        "the source is only read"
    );

    let source_rows = every_row(&source).await;
    let copied_rows = every_row(&target.url).await;
    for (table, rows) in &source_rows {
        let minimum = if [
            "login_states",
            "oauth_states",
            "used_form_tokens",
            "idempotency_keys",
            // Fanned out as soon as written.
            "webhook_events",
        ]
        .contains(table)
        {
            0
        } else {
            1
        };
        assert!(rows.len() >= minimum, "the test fills {table}");
    }
    assert_eq!(
        copied_rows, source_rows,
        "every row of every table, as it was"
    );

    let copy = app
        .spawn_second_with(|config| config.database.url = target.url.clone())
        .await;
    let accounts = api_get(&copy.base, "/v2/accounts", &publisher.key).await;
    assert_eq!(
        accounts,
        api_get(&app.base, "/v2/accounts", &publisher.key).await
    );
    assert!(
        accounts
            .to_string()
            .contains(&publisher.account.id.to_string()),
        "{accounts}"
    );
    let copied_history = history(&copy.base, &publisher).await;
    assert_eq!(copied_history, history(&app.base, &publisher).await);
    assert_eq!(copied_history["posts"].as_array().unwrap().len(), 2);
    let copied_scheduled = api_get(&copy.base, "/api/scheduled-posts", &publisher.key).await;
    assert_eq!(
        copied_scheduled,
        api_get(&app.base, "/api/scheduled-posts", &publisher.key).await
    );
    assert!(
        copied_scheduled.to_string().contains("cancelled"),
        "{copied_scheduled}"
    );

    // Again onto the copy, now that it holds rows, and from the live database: refused.
    let before = every_row(&target.url).await;
    let output = db_copy(&app.config.database.url, &target.url);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(stderr(&output).contains("not empty"), "{}", stderr(&output));
    assert_eq!(every_row(&target.url).await, before, "nothing written");
}

#[test]
fn a_copy_onto_its_own_source_or_from_a_missing_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("service.db");
    let output = crate::config::service()
        .arg("migrate")
        .env(
            "SERVICE__DATABASE__URL",
            format!("sqlite://{}?mode=rwc", file.display()),
        )
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let bytes = std::fs::read(&file).unwrap();

    let output = db_copy(
        &format!("sqlite://{}", file.display()),
        &format!("sqlite://{}?mode=rwc", file.display()),
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        stderr(&output).contains("same database"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read(&file).unwrap(), bytes);

    let missing = dir.path().join("missing.db");
    let output = db_copy(
        &format!("sqlite://{}?mode=rwc", missing.display()),
        &format!(
            "sqlite://{}?mode=rwc",
            dir.path().join("target.db").display()
        ),
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        stderr(&output).contains("cannot open the source"),
        "{}",
        stderr(&output)
    );
    assert!(!missing.exists(), "a missing source is not created");
}
