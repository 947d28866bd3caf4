//! Views the platform would not give are unknown, never 0: the daily snapshot's
//! `total_post_views` of facebook, instagram and threads, and Threads' account `views`, are null
//! when the views metric failed, with the metric named in `failed_metrics`. And a permission the
//! account did not grant is `InsufficientPermissions` naming the scope.

use chrono::{Duration, Utc};
use serde_json::Value;
use service_sim::state::FaultSpec;

use crate::helpers::{OPERATOR_TOKEN, TestApp, status_and_json};

/// A date with a seeded post on every simulated account: the simulator seeds one post on each
/// of its own today − 1, − 6, − 11… (at 10:00 UTC, the same date in Asia/Taipei).
fn seeded_day() -> String {
    (Utc::now().date_naive() - Duration::days(6))
        .format("%Y-%m-%d")
        .to_string()
}

#[actix_rt::test]
async fn a_failed_views_metric_leaves_the_snapshot_total_unknown() {
    let app = TestApp::spawn().await;
    let owner = app.sign_in("owner@example.com").await;
    let state = app.sim.state();
    // The metric each adapter sums into total_post_views.
    let cases = [
        ("facebook", "post_media_view"),
        ("instagram", "reach"),
        ("threads", "views"),
    ];
    let date = seeded_day();
    for (platform, views) in cases {
        let account = app.connect(owner.user_id, platform, platform).await;
        // First with every metric: a measured total.
        let body = serde_json::json!({"account_id": account.account.id, "missing_dates": [date]});
        let response = app
            .http
            .post(app.url("/api/cron/backfill"))
            .bearer_auth(OPERATOR_TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        let (status, answer) = status_and_json(response).await;
        assert_eq!(status, 200, "{platform}: {answer}");
        let data = &answer["results"]["dates"][0]["data"];
        assert_eq!(data["posts_count"], 1, "{platform}: {answer}");
        assert!(
            data["total_post_impressions"].is_u64(),
            "{platform}: {answer}"
        );

        // Then with the views metric failing: unknown, and named.
        state.set_faults(
            platform,
            &account.sim.external_id,
            FaultSpec {
                fail_metrics: vec![views.into()],
                ..FaultSpec::default()
            },
        );
        let response = app
            .http
            .post(app.url("/api/cron/backfill"))
            .bearer_auth(OPERATOR_TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        let (status, answer) = status_and_json(response).await;
        assert_eq!(status, 200, "{platform}: {answer}");
        let result = &answer["results"]["dates"][0];
        assert_eq!(result["status"], "partial", "{platform}: {answer}");
        let data = &result["data"];
        assert_eq!(data["posts_count"], 1, "{platform}: {answer}");
        assert_eq!(
            data["total_post_impressions"],
            Value::Null,
            "{platform}: {answer}"
        );
        // Stored as unknown too.
        use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
        let row = entity::performance_snapshot::Entity::find()
            .filter(entity::performance_snapshot::Column::AccountId.eq(account.account.id))
            .one(app.state.store.connection())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.total_post_views, None, "{platform}: {row:?}");
        assert_eq!(row.status, "partial");
        let failed: Vec<&str> = row
            .failed_metrics
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|f| f["metric"].as_str().unwrap().split(','))
            .collect();
        assert!(failed.contains(&views), "{platform}: {row:?}");
    }
}

#[actix_rt::test]
async fn threads_account_views_are_null_when_the_metric_failed() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    app.sim.state().set_faults(
        "threads",
        &publisher.sim.external_id,
        FaultSpec {
            fail_metrics: vec!["views".into()],
            ..FaultSpec::default()
        },
    );
    let path = format!(
        "/api/performance/account?account_id={}&platform=threads",
        publisher.account.id
    );
    let response = app
        .http
        .get(app.url(&path))
        .header("service-api-key", &publisher.key)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["views"], Value::Null, "{body}");
    crate::openapi::assert_documented("get", "/api/performance/account", 200, &body);
    let failed = body["failed_metrics"].to_string();
    assert!(failed.contains("views"), "{body}");
    // The other metrics still come.
    let raw = body["data"]["raw_data"].as_array().unwrap();
    assert!(raw.iter().any(|m| m["name"] == "likes"), "{body}");

    // A thread's failed metric is null beside the others, not left out.
    let response = app
        .http
        .get(app.url(&format!(
            "/api/performance/posts?account_id={}&platform=threads&limit=1",
            publisher.account.id
        )))
        .header("service-api-key", &publisher.key)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    crate::openapi::assert_documented("get", "/api/performance/posts", 200, &body);
    let insights = &body["data"]["threads"][0]["insights"];
    assert_eq!(insights.get("views"), Some(&Value::Null), "{body}");
    assert!(insights["likes"].is_u64(), "{body}");
}

/// A token without the insights permission (the person unticked it at the platform's dialog):
/// the read is refused as InsufficientPermissions (403), and the answer names the permission.
#[actix_rt::test]
async fn a_permission_not_granted_is_insufficient_permissions_naming_the_scope() {
    let app = TestApp::spawn().await;
    let cases = [
        (
            "facebook",
            &[
                "pages_show_list",
                "pages_read_engagement",
                "pages_manage_posts",
            ][..],
            "read_insights",
        ),
        (
            "instagram",
            &["instagram_basic", "instagram_content_publish"][..],
            "instagram_manage_insights",
        ),
        (
            "threads",
            &["threads_basic", "threads_content_publish"][..],
            "threads_manage_insights",
        ),
    ];
    for (platform, granted, missing) in cases {
        let publisher = app.publisher(platform, "pro").await;
        app.sim.state().grant_scopes(
            &publisher.sim.access_token,
            granted.iter().map(|s| s.to_string()).collect(),
        );
        let path = format!(
            "/api/performance/account?account_id={}&platform={platform}",
            publisher.account.id
        );
        let response = app
            .http
            .get(app.url(&path))
            .header("service-api-key", &publisher.key)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(status, 403, "{platform}: {body}");
        // The performance endpoints' error form (spec §4.4): the catalogue's words for
        // InsufficientPermissions, then the platform's, which name the permission.
        let text = body["error"].as_str().unwrap();
        assert!(
            text.starts_with("Missing platform permission"),
            "{platform}: {body}"
        );
        assert!(text.contains(missing), "{platform}: {body}");
        assert_eq!(
            app.take_violation_rules(),
            ["missing_scope"],
            "{platform}: {body}"
        );
        // The daily collection records what happened, in the platform's words.
        let response = app
            .http
            .post(app.url("/api/cron/backfill"))
            .bearer_auth(OPERATOR_TOKEN)
            .json(&serde_json::json!({
                "account_id": publisher.account.id,
                "missing_dates": [seeded_day()],
            }))
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(status, 200, "{platform}: {body}");
        let result = &body["results"]["dates"][0];
        assert_eq!(result["status"], "failed", "{platform}: {body}");
        let error = result["error"].as_str().unwrap();
        assert!(
            error.starts_with("InsufficientPermissions: the platform refused the read"),
            "{platform}: {error}"
        );
        assert!(error.contains(missing), "{platform}: {error}");
        assert_eq!(
            app.take_violation_rules(),
            ["missing_scope"],
            "{platform}: {body}"
        );
    }
}

/// Migration 000007 on SQLite keeps every row and the indexes through the table rebuild, lets
/// `total_post_views` be NULL, and rolls back to the NOT NULL column (unknown totals become the
/// 0 the old schema stored).
#[actix_rt::test]
async fn the_nullable_post_views_migration_keeps_rows_both_ways() {
    use migration::{Migrator, MigratorTrait};
    use sea_orm::{ConnectOptions, ConnectionTrait, Database, DbBackend, Statement};

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/m.db?mode=rwc", dir.path().display());
    // One connection: the PRAGMA below (rows without their account) holds for every statement.
    let mut options = ConnectOptions::new(url);
    options.max_connections(1).min_connections(1);
    let db = Database::connect(options).await.unwrap();
    // Found by name, so that later migrations do not shift it.
    let migrations = Migrator::migrations();
    let at = migrations
        .iter()
        .position(|m| m.name() == "m20261124_000007_nullable_post_views")
        .unwrap();
    let this_and_later = u32::try_from(migrations.len() - at).unwrap();
    // Everything before 000007.
    Migrator::up(&db, Some(u32::try_from(at).unwrap()))
        .await
        .unwrap();
    let exec = async |sql: &str| {
        db.execute_unprepared(sql).await.unwrap();
    };
    exec("PRAGMA foreign_keys = OFF").await;
    exec(
        "INSERT INTO performance_snapshots (id, account_id, user_id, platform, snapshot_date, \
         page_name, posts_count, total_post_views, page_metrics, failed_metrics, status, \
         attempts, created_at, updated_at) VALUES ('a', 'acc', 'u', 'facebook', '2026-11-20', \
         'Page', 2, 41, '{}', '[]', 'success', 1, '2026-11-21T00:00:00Z', \
         '2026-11-21T00:00:00Z')",
    )
    .await;
    Migrator::up(&db, None).await.unwrap();
    let views = async || {
        db.query_all_raw(Statement::from_string(
            DbBackend::Sqlite,
            "SELECT total_post_views FROM performance_snapshots ORDER BY id",
        ))
        .await
        .unwrap()
        .iter()
        .map(|row| row.try_get::<Option<i64>>("", "total_post_views").unwrap())
        .collect::<Vec<_>>()
    };
    assert_eq!(views().await, [Some(41)], "the row survives the rebuild");
    exec(
        "INSERT INTO performance_snapshots (id, account_id, user_id, platform, snapshot_date, \
         page_name, posts_count, total_post_views, page_metrics, failed_metrics, status, \
         attempts, created_at, updated_at) VALUES ('b', 'acc', 'u', 'facebook', '2026-11-21', \
         'Page', 1, NULL, '{}', '[]', 'partial', 1, '2026-11-22T00:00:00Z', \
         '2026-11-22T00:00:00Z')",
    )
    .await;
    assert_eq!(views().await, [Some(41), None]);
    // The unique (account, date) index is back.
    let duplicate = db
        .execute_raw(Statement::from_string(
            DbBackend::Sqlite,
            "INSERT INTO performance_snapshots (id, account_id, user_id, platform, \
             snapshot_date, page_name, posts_count, page_metrics, failed_metrics, status, \
             attempts, created_at, updated_at) VALUES ('c', 'acc', 'u', 'facebook', \
             '2026-11-21', 'Page', 1, '{}', '[]', 'partial', 1, '2026-11-22T00:00:00Z', \
             '2026-11-22T00:00:00Z')",
        ))
        .await;
    assert!(duplicate.is_err(), "one snapshot per account and date");
    // 000007 and every later migration.
    Migrator::down(&db, Some(this_and_later)).await.unwrap();
    assert_eq!(views().await, [Some(41), Some(0)]);
}
