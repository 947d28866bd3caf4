//! Several instances on one database: an account's platform budget and its one publish at a
//! time hold across them, a silent instance's lease and claims are taken over, and operators
//! see the members. Leases and budgets are shared on PostgreSQL, the store several instances
//! share; on SQLite the same tests run on the one instance that owns the file.

use std::time::{Duration, Instant};

use entity::scheduled_post::{self, ScheduledStatus};
use reqwest::Client;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Statement, sea_query::Expr};
use serde_json::{Value, json};
use service_sim::state::FaultSpec;

use crate::{
    authcache::on_postgres,
    helpers::{OPERATOR_TOKEN, Publisher, SecondInstance, TestApp, status_and_json},
};

/// The instances a test spreads its requests over: two on PostgreSQL, one on SQLite.
async fn instances(app: &TestApp) -> (Vec<String>, Option<SecondInstance>) {
    if on_postgres() {
        let second = app.spawn_second().await;
        (vec![app.base.clone(), second.base.clone()], Some(second))
    } else {
        (vec![app.base.clone()], None)
    }
}

async fn post_at(base: &str, publisher: &Publisher, text: &str) -> (u16, Value) {
    let response = Client::new()
        .post(format!("{base}/v2/posts"))
        .header("service-api-key", &publisher.key)
        .json(&publisher.body(json!({ "text": text })))
        .send()
        .await
        .unwrap();
    status_and_json(response).await
}

#[actix_web::test]
async fn an_accounts_platform_budget_holds_across_instances() {
    let app = TestApp::spawn_with(|c| c.publishing.facebook_calls_per_hour = 4).await;
    let (bases, _second) = instances(&app).await;
    let publisher = app.publisher("facebook", "pro").await;
    let mut statuses = Vec::new();
    for i in 0..10 {
        let (status, body) =
            post_at(&bases[i % bases.len()], &publisher, &format!("post {i}")).await;
        if status == 429 {
            assert_eq!(body["error"], "RateLimitExceeded", "{body}");
            assert!(body["retry_after"].as_u64().unwrap() >= 1, "{body}");
        }
        statuses.push(status);
    }
    let admitted = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((admitted, refused), (4, 6), "{statuses:?}");
    // What the platform saw: four posts, four calls.
    assert_eq!(app.published(&publisher.sim).len(), 4);
    assert_eq!(
        app.sim
            .state()
            .request_count("facebook", &publisher.sim.external_id),
        4
    );
    crate::helpers::assert_no_violations(&app.sim);
}

#[actix_web::test]
async fn an_account_has_one_publish_in_flight_across_instances() {
    let app = TestApp::spawn().await;
    let (bases, _second) = instances(&app).await;
    let publisher = app.publisher("facebook", "pro").await;
    // Each call takes a while: publishes running side by side would overlap at the platform.
    app.sim.state().set_faults(
        "facebook",
        &publisher.sim.external_id,
        FaultSpec {
            latency_ms: 150,
            ..FaultSpec::default()
        },
    );
    let posts = (0..6).map(|i| {
        let base = bases[i % bases.len()].clone();
        let publisher = &publisher;
        async move { post_at(&base, publisher, &format!("side by side {i}")).await }
    });
    let answers = futures_util::future::join_all(posts).await;
    for (status, body) in &answers {
        assert_eq!(*status, 200, "{body}");
    }
    assert_eq!(app.published(&publisher.sim).len(), 6);
    assert_eq!(
        app.sim
            .state()
            .peak_writes("facebook", &publisher.sim.external_id),
        1,
        "the platform saw two publishes of the account at once"
    );
    crate::helpers::assert_no_violations(&app.sim);
}

/// The database's clock in milliseconds, as SQL (the cluster's rows are in its time).
fn db_now_ms() -> &'static str {
    if on_postgres() {
        "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint"
    } else {
        "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
    }
}

async fn execute(app: &TestApp, sql: String) {
    let db = app.state.store.connection();
    db.execute_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap();
}

/// Writes a membership row for `instance`, renewed `ago_ms` ago.
pub(crate) async fn member(app: &TestApp, instance: &str, ago_ms: i64) {
    let started = if on_postgres() {
        "now()"
    } else {
        "'2026-11-29 00:00:00+00:00'"
    };
    execute(
        app,
        format!(
            "INSERT INTO cluster_members (instance, address, started_at, heartbeat_ms) \
             VALUES ('{instance}', 'http://10.0.0.9:8080', {started}, {now} - {ago_ms}) \
             ON CONFLICT (instance) DO UPDATE SET heartbeat_ms = excluded.heartbeat_ms",
            now = db_now_ms()
        ),
    )
    .await;
}

pub(crate) fn metric(app: &TestApp, line_start: &str) -> u64 {
    app.state
        .metrics
        .render()
        .lines()
        .find(|line| line.starts_with(line_start))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[actix_web::test]
async fn a_live_instances_publish_lease_is_waited_for_and_a_silent_ones_taken_over() {
    if !on_postgres() {
        // One instance owns a SQLite file: there is no lease to hold elsewhere.
        return;
    }
    let app = TestApp::spawn_with(|c| c.cluster.takeover_secs = 3).await;
    let publisher = app.publisher("facebook", "pro").await;
    let account = publisher.account.id;
    // Another instance, alive, holds the account's lease (it is publishing to it).
    member(&app, "busy-host:1:aa", 0).await;
    execute(
        &app,
        format!(
            "INSERT INTO account_leases (account_id, holder, epoch, tat_ms) \
             VALUES ('{account}', 'busy-host:1:aa', 7, 0)"
        ),
    )
    .await;
    let keep_alive = {
        let app_url = app.state.store.clone();
        actix_rt::spawn(async move {
            loop {
                let db = app_url.connection();
                let sql = format!(
                    "UPDATE cluster_members SET heartbeat_ms = {} WHERE instance = 'busy-host:1:aa'",
                    db_now_ms()
                );
                let _ = db
                    .execute_raw(Statement::from_string(db.get_database_backend(), sql))
                    .await;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        })
    };
    let started = Instant::now();
    let (status, body) = post_at(&app.base, &publisher, "waits its turn").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"], "ServiceUnavailable", "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("Another instance"),
        "{body}"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(6),
        "waited twice the takeover time"
    );
    assert!(app.published(&publisher.sim).is_empty());
    // The holder goes silent: after the takeover time its lease is this instance's.
    keep_alive.abort();
    let (status, body) = post_at(&app.base, &publisher, "taken over").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(app.published(&publisher.sim).len(), 1);
    assert_eq!(metric(&app, "cluster_takeovers_total{what=\"lease\"}"), 1);
    crate::helpers::assert_no_violations(&app.sim);
}

#[actix_web::test]
async fn a_silent_instances_scheduled_post_is_taken_over_within_the_takeover_time() {
    let app = TestApp::spawn_with(|c| {
        c.cluster.takeover_secs = 3;
        c.scheduler.lease_secs = 120;
    })
    .await;
    let publisher = app.publisher("facebook", "pro").await;
    let mut body = publisher.body(json!({"text": "left behind"}));
    body["post"]["content"]["scheduledAt"] =
        json!((app.clock_now() + chrono::Duration::hours(1)).to_rfc3339());
    let (status, answer) = app.post(&publisher.key, &body).await;
    assert_eq!(status, 200, "{answer}");
    let id: uuid::Uuid = answer["scheduledPostId"].as_str().unwrap().parse().unwrap();
    // An instance claimed it, wrote nothing else, and went silent; its lease runs 2 minutes.
    member(&app, "gone-host:9:zz", 60_000).await;
    let now = app.clock_now();
    scheduled_post::Entity::update_many()
        .col_expr(
            scheduled_post::Column::Status,
            Expr::value(ScheduledStatus::Publishing),
        )
        .col_expr(
            scheduled_post::Column::ClaimedBy,
            Expr::value("gone-host:9:zz"),
        )
        .col_expr(scheduled_post::Column::ClaimedAt, Expr::value(now))
        .col_expr(
            scheduled_post::Column::LeaseUntil,
            Expr::value(now + chrono::Duration::seconds(120)),
        )
        .col_expr(scheduled_post::Column::NextAttemptAt, Expr::value(now))
        .col_expr(scheduled_post::Column::Attempts, Expr::value(1))
        .filter(scheduled_post::Column::Id.eq(id))
        .exec(app.state.store.connection())
        .await
        .unwrap();
    let started = Instant::now();
    loop {
        let row = app
            .state
            .store
            .find_scheduled_post(id)
            .await
            .unwrap()
            .unwrap();
        if row.status == ScheduledStatus::Published {
            break;
        }
        // Well inside the claim's 120 s lease: the silence, not the lease, ended the claim.
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "still {:?} after {:?}",
            row.status,
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.published(&publisher.sim).len(), 1);
    assert!(metric(&app, "cluster_takeovers_total{what=\"scheduled\"}") >= 1);
    crate::helpers::assert_no_violations(&app.sim);
}

#[actix_web::test]
async fn operators_see_every_instance_and_readiness_reports_membership() {
    let app = TestApp::spawn().await;
    let (bases, _second) = instances(&app).await;
    member(&app, "gone-host:2:yy", 3_600_000).await;
    let response = Client::new()
        .get(app.url("/api/admin/actors"))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap();
    let (status, view) = status_and_json(response).await;
    assert_eq!(status, 200, "{view}");
    let cluster = &view["cluster"];
    assert_eq!(cluster["takeover_secs"], 10);
    assert_eq!(cluster["shared"], on_postgres());
    let members = cluster["members"].as_array().unwrap();
    let live: Vec<&Value> = members.iter().filter(|m| m["live"] == true).collect();
    assert_eq!(live.len(), bases.len(), "{members:?}");
    assert!(live.iter().all(|m| {
        m["address"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    }));
    assert_eq!(members.iter().filter(|m| m["this"] == true).count(), 1);
    let gone = members
        .iter()
        .find(|m| m["instance"] == "gone-host:2:yy")
        .unwrap();
    assert_eq!(gone["live"], false);
    assert!(gone["silent_secs"].as_f64().unwrap() >= 3_600.0);
    for base in &bases {
        let (status, body) = status_and_json(
            Client::new()
                .get(format!("{base}/readyz"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!((status, &body["checks"]["membership"]), (200, &json!("ok")));
    }
}

#[actix_web::test]
async fn a_write_answered_on_one_instance_is_seen_at_once_by_every_other() {
    if !on_postgres() {
        // One instance owns a SQLite file: there is no other instance to tell.
        return;
    }
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let second = app.spawn_second().await;
    crate::authcache::wait_listening(&second).await;
    let get = |base: String, key: String| async move {
        Client::new()
            .get(format!("{base}/v2/accounts"))
            .header("service-api-key", key)
            .send()
            .await
            .unwrap()
            .status()
    };
    for round in 0..5 {
        let (key, id) = app
            .create_key(&publisher.dashboard, &format!("round {round}"))
            .await;
        // Cached on the second instance.
        assert_eq!(get(second.base.clone(), key.clone()).await, 200);
        let cached = second.state.store.access().len().0;
        let started = Instant::now();
        let response = publisher
            .dashboard
            .client
            .delete(app.url(&format!("/api/keys/{id}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        // The second instance acknowledged it: the write did not wait out the 2 s bound.
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "round {round}: answered after {:?}",
            started.elapsed()
        );
        // The answer came after the second instance dropped its copy: no wait here.
        assert_eq!(
            second.state.store.access().len().0,
            cached - 1,
            "round {round}: the second instance still held the deleted key"
        );
        assert_eq!(
            get(second.base.clone(), key).await,
            401,
            "round {round}: the second instance still knew the deleted key"
        );
    }
}

#[actix_web::test]
async fn a_write_waits_for_a_live_instance_that_has_not_acknowledged_it() {
    if !on_postgres() {
        // One instance owns a SQLite file: there is no other instance to wait for.
        return;
    }
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let (_key, id) = app.create_key(&publisher.dashboard, "doomed").await;
    // A member that renews its membership but never acknowledges anything (its listener is
    // stuck): the write waits for it, up to the bound, before answering.
    member(&app, "stuck-host:4:ee", 0).await;
    let started = Instant::now();
    let response = publisher
        .dashboard
        .client
        .delete(app.url(&format!("/api/keys/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "answered after {:?} without the stuck instance's acknowledgement",
        started.elapsed()
    );
}

#[actix_web::test]
async fn a_silent_instances_publish_in_flight_is_settled_within_the_takeover_time() {
    let app = TestApp::spawn_with(|c| c.cluster.takeover_secs = 3).await;
    let publisher = app.publisher("threads", "pro").await;
    let now = app.clock_now();
    // An instance wrote the row before its final call, then died: the call may have gone out.
    let row = social_service::store::SubmissionRow {
        id: uuid::Uuid::new_v4(),
        new: social_service::store::NewSubmission {
            user_id: publisher.user_id,
            account_id: publisher.account.id,
            platform: social_service::domain::plan::Platform::Threads,
            post_type: Some(entity::post_submission::PostType::Text),
            post_id: None,
            status: entity::post_submission::SubmissionStatus::Publishing,
            page_name: publisher.account.display_name.clone(),
            content: json!({"text": "cut off", "media_urls": []}),
            result: None,
            error_code: None,
            error_message: None,
            published_at: None,
        },
        steps: entity::post_submission::PublishSteps {
            final_started: true,
            ..Default::default()
        },
        scheduled_post_id: None,
        created_at: now,
        updated_at: now,
        publisher: Some("dead-host:7:xx".into()),
    };
    let id = row.id;
    app.state
        .store
        .publish_write(social_service::store::PublishWrite::BeforeFinal { row, claim: None })
        .await
        .unwrap();
    member(&app, "dead-host:7:xx", 60_000).await;
    // Long before `scheduler.stale_publish_secs` (30 minutes): the silence settles it.
    let started = Instant::now();
    loop {
        let row = entity::post_submission::Entity::find_by_id(id)
            .one(app.state.store.connection())
            .await
            .unwrap()
            .unwrap();
        if row.status != entity::post_submission::SubmissionStatus::Publishing {
            assert_eq!(
                row.status,
                entity::post_submission::SubmissionStatus::Unconfirmed,
                "a final call that may have gone out is never called failed"
            );
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "still publishing after {:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
