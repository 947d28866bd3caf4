//! The daily collection: the `/api/cron/*` endpoints and the collector actor, against the
//! simulator over HTTP, on a fixed clock.

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Asia::Taipei;
use serde_json::{Value, json};
use service_sim::state::{FaultKind, FaultSpec};
use social_service::store::SnapshotClaim;

use crate::helpers::{
    Background, Connected, OPERATOR_TOKEN, TestApp, eventually, fault, status_and_json,
};
use crate::openapi::assert_documented;

async fn operator_get(app: &TestApp, path: &str) -> (u16, Value) {
    let response = app
        .http
        .get(app.url(path))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap();
    status_and_json(response).await
}

async fn operator_post(app: &TestApp, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = app.http.post(app.url(path)).bearer_auth(OPERATOR_TOKEN);
    if let Some(body) = body {
        request = request.json(&body);
    }
    status_and_json(request.send().await.unwrap()).await
}

/// Yesterday in Asia/Taipei by the app's clock.
fn taipei_yesterday(app: &TestApp) -> NaiveDate {
    app.clock_now()
        .with_timezone(&Taipei)
        .date_naive()
        .pred_opt()
        .unwrap()
}

fn day(date: NaiveDate) -> String {
    date.format("%Y-%m-%d").to_string()
}

/// Connects `n` accounts, cycling through the platforms that have insights.
async fn connect_many(app: &TestApp, user: uuid::Uuid, n: usize) -> Vec<Connected> {
    let platforms = ["facebook", "instagram", "threads", "youtube", "tiktok"];
    let mut connected = Vec::new();
    for i in 0..n {
        let platform = platforms[i % platforms.len()];
        connected.push(
            app.connect(user, platform, &format!("{platform} {i:02}"))
                .await,
        );
    }
    connected
}

#[actix_rt::test]
async fn a_collection_over_many_accounts_records_the_failures_and_goes_on() {
    let app = TestApp::spawn().await;
    let owner = app.sign_in("owner@example.com").await;
    let accounts = connect_many(&app, owner.user_id, 12).await;
    // x has no insights: it is not part of a collection.
    app.connect(owner.user_id, "x", "x account").await;
    let state = app.sim.state();
    for (index, error) in [(1, FaultKind::TokenRevoked), (7, FaultKind::ServerError)] {
        let sim = &accounts[index].sim;
        state.set_faults(&sim.platform, &sim.external_id, fault(error));
    }
    let date = taipei_yesterday(&app);
    let (status, body) = operator_post(&app, "/api/cron/collect-performance", None).await;
    assert_eq!(status, 200, "{body}");
    // Failures included (null data, an error), the answer is what the document says.
    assert_documented("post", "/api/cron/collect-performance", 200, &body);
    let results = &body["results"];
    assert_eq!(results["target_date"], day(date));
    assert_eq!(results["total_accounts"], 12);
    assert_eq!(results["success_count"], 10, "{body}");
    assert_eq!(results["failed_count"], 2);
    let listed = results["accounts"].as_array().unwrap();
    assert_eq!(listed.len(), 12);
    for outcome in listed {
        let failing =
            outcome["page_name"] == "instagram 01" || outcome["page_name"] == "threads 07";
        if failing {
            assert_eq!(outcome["status"], "failed", "{outcome}");
            assert_eq!(outcome["data"], Value::Null);
            assert!(outcome["error"].as_str().unwrap().len() > 10);
        } else {
            assert_eq!(outcome["status"], "success", "{outcome}");
            let data = &outcome["data"];
            assert!(
                data["page_metrics"].as_object().unwrap().len() >= 3,
                "{outcome}"
            );
            assert!(data["posts_count"].is_u64());
            assert!(data["total_post_views"].is_u64());
        }
    }
    // Stored: one snapshot per account for the date, the failures included.
    let (status, history) = operator_get(&app, "/api/cron/collection-status?days=1").await;
    assert_eq!(status, 200, "{history}");
    assert_eq!(history["days"], 1);
    assert_eq!(history["total_snapshots"], 12);
    assert_eq!(history["unique_dates"], 1);
    assert_eq!(history["unique_accounts"], 12);
    for snapshot in history["history"].as_array().unwrap() {
        assert_eq!(snapshot["snapshot_date_str"], day(date));
        let collected_at = snapshot["collected_at"].as_str().unwrap();
        assert!(
            DateTime::parse_from_rfc2822(collected_at).is_ok(),
            "{collected_at}"
        );
        assert!(collected_at.ends_with(" GMT"));
        let expected =
            if snapshot["page_name"] == "instagram 01" || snapshot["page_name"] == "threads 07" {
                "failed"
            } else {
                "success"
            };
        assert_eq!(snapshot["status"], expected, "{snapshot}");
    }
    // Collecting the date again (faults gone) fixes the outage and duplicates nothing. The
    // revoked token stays dead until the account is reconnected, and says so.
    state.clear_faults(None);
    let (status, body) = operator_post(&app, "/api/cron/collect-performance", None).await;
    assert_eq!(status, 200);
    assert_eq!(body["results"]["success_count"], 11, "{body}");
    let revoked = body["results"]["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["page_name"] == "instagram 01")
        .unwrap();
    assert_eq!(revoked["status"], "failed");
    assert!(
        revoked["error"]
            .as_str()
            .unwrap()
            .starts_with("InvalidToken"),
        "{revoked}"
    );
    let metrics = app
        .http
        .get(app.url("/metrics"))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(r#"collector_accounts_total{platform="instagram",status="failed"} 2"#),
        "{metrics}"
    );
    assert_eq!(
        app.state.store.count_snapshots(&day(date)).await.unwrap(),
        12
    );
}

#[actix_rt::test]
async fn check_missing_finds_the_gaps_and_backfill_fills_them_once() {
    let app = TestApp::spawn().await;
    let owner = app.sign_in("owner@example.com").await;
    let page = app.connect(owner.user_id, "facebook", "Gap Page").await;
    // Ten days later, three of them collected.
    app.clock.set(app.clock_now() + chrono::Duration::days(10));
    let yesterday = taipei_yesterday(&app);
    let collected: Vec<NaiveDate> = [2, 5, 6]
        .iter()
        .map(|back| yesterday - chrono::Duration::days(*back))
        .collect();
    for date in &collected {
        let path = format!(
            "/api/cron/collect-performance?date={}&account_id={}",
            day(*date),
            page.account.id
        );
        let (status, body) = operator_post(&app, &path, None).await;
        assert_eq!(
            (status, body["results"]["success_count"].as_u64()),
            (200, Some(1)),
            "{body}"
        );
    }
    let check = format!(
        "/api/cron/check-missing?account_id={}&days=30",
        page.account.id
    );
    let (status, body) = operator_get(&app, &check).await;
    assert_eq!(status, 200, "{body}");
    // Dates before the account was connected were never due.
    let connected_on = page.account.created_at.with_timezone(&Taipei).date_naive();
    let expected: Vec<String> = connected_on
        .iter_days()
        .take_while(|d| *d <= yesterday)
        .filter(|d| !collected.contains(d))
        .map(day)
        .collect();
    assert_eq!(
        body,
        json!({
            "success": true,
            "account_id": page.account.id,
            "page_name": "Gap Page",
            "days_checked": 30,
            "missing_dates_count": expected.len(),
            "missing_dates": expected,
        })
    );
    let backfill = json!({"account_id": page.account.id, "missing_dates": expected});
    let (status, first) = operator_post(&app, "/api/cron/backfill", Some(backfill.clone())).await;
    assert_eq!(status, 200, "{first}");
    assert_documented("post", "/api/cron/backfill", 200, &first);
    assert_eq!(first["success"], true);
    assert_eq!(first["results"]["total_dates"], expected.len());
    assert_eq!(first["results"]["success_count"], expected.len());
    assert_eq!(first["results"]["failed_count"], 0);
    for entry in first["results"]["dates"].as_array().unwrap() {
        assert_eq!(entry["status"], "success", "{entry}");
        let data = &entry["data"];
        assert!(
            data["page_metrics"]["page_media_view"].is_number(),
            "{entry}"
        );
        assert!(data["posts_count"].is_u64());
        assert!(data["total_post_impressions"].is_u64());
    }
    let (_, after) = operator_get(&app, &check).await;
    assert_eq!(after["missing_dates_count"], 0, "{after}");
    assert_eq!(after["missing_dates"], json!([]));
    // Backfilling the same dates again changes nothing: same numbers, one row per date.
    let (status, second) = operator_post(&app, "/api/cron/backfill", Some(backfill)).await;
    assert_eq!(status, 200);
    assert_eq!(second["results"], first["results"]);
    for date in &expected {
        assert_eq!(
            app.state.store.count_snapshots(date).await.unwrap(),
            1,
            "{date}"
        );
    }
    // Dates still to come, and malformed ones, are refused.
    for dates in [
        json!([day(yesterday + chrono::Duration::days(1))]),
        json!(["2026-02-30"]),
        json!([]),
    ] {
        let body = json!({"account_id": page.account.id, "missing_dates": dates});
        let (status, refused) = operator_post(&app, "/api/cron/backfill", Some(body)).await;
        assert_eq!(
            (status, &refused["error"]),
            (400, &json!("InvalidRequest")),
            "{refused}"
        );
    }
}

#[actix_rt::test]
async fn cron_endpoints_take_the_operator_token_or_the_owners_key() {
    let app = TestApp::spawn().await;
    let alice = app.publisher("threads", "pro").await;
    let bob = app.publisher("facebook", "pro").await;
    let (status, body) = operator_post(&app, "/api/cron/collect-performance", None).await;
    assert_eq!(
        (status, body["results"]["total_accounts"].as_u64()),
        (200, Some(2))
    );
    // No credentials, or a wrong operator token.
    let response = app
        .http
        .get(app.url("/api/cron/collection-status"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let response = app
        .http
        .get(app.url("/api/cron/collection-status"))
        .bearer_auth("not-the-operator-token")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    // A key sees its owner's snapshots only, and may not touch another user's account.
    let key_get = |key: &str, path: &str| {
        app.http
            .get(app.url(path))
            .header("service-api-key", key.to_string())
            .send()
    };
    let (status, mine) = status_and_json(
        key_get(&alice.key, "/api/cron/collection-status")
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(mine["days"], 7, "the default window");
    assert_eq!(mine["total_snapshots"], 1);
    assert_eq!(mine["history"][0]["account_id"], json!(alice.account.id));
    let path = format!("/api/cron/check-missing?account_id={}", bob.account.id);
    let (status, body) = status_and_json(key_get(&alice.key, &path).await.unwrap()).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("AccountNotFound"))
    );
    let response = app
        .http
        .post(app.url("/api/cron/collect-performance"))
        .header("service-api-key", &alice.key)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200);
    assert_eq!(
        body["results"]["total_accounts"], 1,
        "only alice's own account"
    );
    let (status, body) = operator_get(&app, "/api/cron/check-missing").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("MissingParameter"))
    );
}

#[actix_rt::test]
async fn a_missed_run_is_caught_up_at_start_once_even_by_two_instances() {
    let app = TestApp::spawn().await;
    let owner = app.sign_in("owner@example.com").await;
    let accounts = connect_many(&app, owner.user_id, 10).await;
    // The date the latest run due by now collects: yesterday, or the day before between
    // midnight and the 02:00 run (the test runs on the real date and time of day).
    let date = day(app
        .state
        .collection
        .schedule()
        .latest_target(app.clock_now()));
    // A collector that died mid-run left one claim behind (its lease has run out).
    let now = app.clock_now();
    let claim = SnapshotClaim {
        account: &accounts[0].account,
        date: &date,
        claimant: "dead-instance",
        now: now - chrono::Duration::hours(2),
        lease_until: now - chrono::Duration::hours(1),
        recollect: false,
        max_attempts: None,
    };
    assert!(app.state.store.claim_snapshot(claim).await.unwrap());
    // Two instances start with the collector on: both see the missed run.
    let first = app.spawn_second_with(|c| c.collector.enabled = true).await;
    let second = app.spawn_second_with(|c| c.collector.enabled = true).await;
    // Two days: the window ends yesterday, and the missed run's date may be the day before.
    eventually("every account collected", async || {
        let (_, body) = operator_get(&app, "/api/cron/collection-status?days=2").await;
        body["history"]
            .as_array()
            .is_some_and(|rows| rows.len() == 10 && rows.iter().all(|r| r["status"] == "success"))
    })
    .await;
    assert_eq!(app.state.store.count_snapshots(&date).await.unwrap(), 10);
    let taken_over = app
        .state
        .store
        .find_snapshot(accounts[0].account.id, &date)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken_over.attempts, 2, "the dead claim was taken over once");
    // Each account's day was fetched by one instance only: what the two passes collected adds
    // up to ten (each pass reports once it has finished).
    let collected = |s: &Value| s["last_run"]["success_count"].as_u64().unwrap_or(0);
    eventually("both passes reported", async || {
        let (_, a) = first.collector_status().await;
        let (_, b) = second.collector_status().await;
        a["running"] == false && b["running"] == false && collected(&a) + collected(&b) == 10
    })
    .await;
}

#[actix_rt::test]
async fn the_daily_run_happens_at_two_in_the_morning_taipei_time() {
    // 01:59:30 in Taipei on 2026-12-01.
    let before = DateTime::parse_from_rfc3339("2026-11-30T17:59:30Z")
        .unwrap()
        .with_timezone(&Utc);
    let app = TestApp::spawn_with(|c| c.collector.enabled = true).await;
    // Signed in (the identity provider's tokens are checked against the service's clock) and
    // connected, then to the night before the run.
    let owner = app.sign_in("owner@example.com").await;
    let accounts = connect_many(&app, owner.user_id, 3).await;
    app.clock.set(before);
    let count = async |date: &str| app.state.store.count_snapshots(date).await.unwrap();
    // Repair passes may pick up the just-connected accounts for Nov 29; Nov 30 is not due yet:
    // two looks at the clock, and whatever pass they started has finished.
    app.wait_two_passes(Background::Collector).await;
    assert_eq!(count("2026-11-30").await, 0);
    app.clock.set(before + chrono::Duration::seconds(31));
    // Each account's row is claimed (`collecting`) first, then finished.
    eventually("the 02:00 run", async || {
        let mut finished = 0;
        for connected in &accounts {
            let row = app
                .state
                .store
                .find_snapshot(connected.account.id, "2026-11-30")
                .await
                .unwrap();
            finished += usize::from(row.is_some_and(|r| r.status == "success"));
        }
        finished == 3
    })
    .await;
    assert_eq!(count("2026-11-30").await, 3);
    let collector_view = async || -> Value {
        let view: Value = app
            .http
            .get(app.url("/api/admin/actors"))
            .bearer_auth(OPERATOR_TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        view["collector"].clone()
    };
    // The pass reports once it has finished.
    eventually("the run reported", async || {
        collector_view().await["last_run"]["target_date"] == "2026-11-30"
    })
    .await;
    let collector = &collector_view().await;
    assert_eq!(collector["next_run"], "2026-12-01T18:00:00Z", "{collector}");
    assert_eq!(collector["current_target"], "2026-11-30");
    assert_eq!(collector["last_run"]["target_date"], "2026-11-30");
    assert_eq!(collector["last_run"]["trigger"], "schedule");
    assert_eq!(collector["last_run"]["success_count"], 3);
}

#[actix_rt::test]
async fn a_failed_metric_is_null_in_the_daily_snapshot() {
    let app = TestApp::spawn().await;
    let owner = app.sign_in("owner@example.com").await;
    let state = app.sim.state();
    let cases = [
        ("facebook", "page_total_actions", "page_media_view"),
        ("instagram", "profile_views", "website_clicks"),
        ("youtube", "likes", "views"),
    ];
    for (platform, failing, _) in cases {
        let account = app.connect(owner.user_id, platform, platform).await;
        state.set_faults(
            platform,
            &account.sim.external_id,
            FaultSpec {
                fail_metrics: vec![failing.into()],
                ..FaultSpec::default()
            },
        );
    }
    let (status, body) = operator_post(&app, "/api/cron/collect-performance", None).await;
    assert_eq!(status, 200, "{body}");
    let outcomes = body["results"]["accounts"].as_array().unwrap();
    assert_eq!(outcomes.len(), 3, "{body}");
    for (platform, failing, other) in cases {
        let outcome = outcomes
            .iter()
            .find(|o| o["page_name"] == platform)
            .unwrap_or_else(|| panic!("{platform}: {body}"));
        // Collected, with a metric missing.
        assert_eq!(outcome["status"], "partial", "{outcome}");
        let data = &outcome["data"];
        // Unknown, not a measured zero; the others still come.
        assert_eq!(
            data["page_metrics"].get(failing),
            Some(&Value::Null),
            "{outcome}"
        );
        assert!(data["page_metrics"][other].is_u64(), "{outcome}");
        let failed: Vec<&str> = data["failed_metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["metric"].as_str().unwrap())
            .collect();
        assert_eq!(failed, vec![failing], "{outcome}");
    }
}

#[actix_rt::test]
async fn a_threads_snapshot_succeeds_and_a_failure_keeps_the_platforms_words() {
    let app = TestApp::spawn().await;
    let owner = app.sign_in("owner@example.com").await;
    let good = app.connect(owner.user_id, "threads", "threads good").await;
    let bad = app.connect(owner.user_id, "threads", "threads bad").await;
    let state = app.sim.state();
    state.set_faults(
        &bad.sim.platform,
        &bad.sim.external_id,
        fault(FaultKind::ServerError),
    );
    let (status, body) = operator_post(&app, "/api/cron/collect-performance", None).await;
    assert_eq!(status, 200, "{body}");
    let outcome = |name: &str| {
        body["results"]["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["page_name"] == name)
            .cloned()
            .unwrap()
    };
    let ok = outcome("threads good");
    assert_eq!(ok["status"], "success", "{ok}");
    assert!(ok["data"]["posts_count"].is_u64(), "{ok}");
    assert_eq!(good.account.platform.as_str(), "threads");
    // The record says what Threads said, not that a post failed to publish.
    let failed = outcome("threads bad");
    assert_eq!(failed["status"], "failed", "{failed}");
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("An unexpected error has occurred. Please retry your request later."),
        "{error}"
    );
    assert!(!error.contains("publish the post"), "{error}");
    // And so does the stored snapshot.
    let (_, history) = operator_get(&app, "/api/cron/collection-status?days=1").await;
    let stored = history["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["page_name"] == "threads bad")
        .cloned()
        .unwrap();
    assert_eq!(stored["status"], "failed", "{stored}");
    assert_eq!(stored["error"], error, "{stored}");
}
