//! Usage metering (§8): the Free plan's 10 calls per month, exact under concurrency, anchored to
//! the registration date, with the §7 429 body and the rate-limit headers.

use chrono::{TimeZone, Utc};
use futures_util::future::join_all;
use serde_json::{Value, json};

use crate::helpers::{Dashboard, TestApp, status_and_json};

async fn subscription(app: &TestApp, dashboard: &Dashboard) -> Value {
    let response = dashboard
        .client
        .get(app.url("/api/subscription/status"))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200);
    body
}

fn header(response: &reqwest::Response, name: &str) -> i64 {
    response.headers()[name].to_str().unwrap().parse().unwrap()
}

#[actix_web::test]
async fn a_fresh_free_user_gets_exactly_ten_of_a_hundred_concurrent_calls() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("concurrent@example.com").await;
    let (key, _) = app.create_key(&dashboard, "burst").await;

    let responses = join_all((0..100).map(|_| app.key_get(&key))).await;
    let mut ok = 0;
    let mut refused = 0;
    for response in responses {
        match response.status().as_u16() {
            200 => ok += 1,
            429 => {
                refused += 1;
                assert_eq!(header(&response, "x-ratelimit-remaining"), 0);
                let body: Value = response.json().await.unwrap();
                let object = body.as_object().unwrap();
                assert_eq!(
                    object.keys().cloned().collect::<Vec<_>>(),
                    ["current_usage", "error", "error_en", "limit", "plan"],
                    "the §7 body, without `success`"
                );
                assert_eq!(body["current_usage"], 10);
                assert_eq!(body["limit"], 10);
                assert_eq!(body["plan"], "free");
                assert!(
                    body["error_en"]
                        .as_str()
                        .unwrap()
                        .starts_with("Monthly API call limit reached")
                );
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!((ok, refused), (10, 90));

    let body = subscription(&app, &dashboard).await;
    assert_eq!(
        body["api_usage"]["current_usage"], 10,
        "refused calls are not counted"
    );
    assert_eq!(body["api_usage"]["remaining"], 0);
}

#[actix_web::test]
async fn rate_limit_headers_describe_the_monthly_allowance() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("headers@example.com").await;
    let (key, _) = app.create_key(&dashboard, "h").await;
    let period_end = subscription(&app, &dashboard).await["api_usage"]["period_end"]
        .as_str()
        .unwrap()
        .to_string();
    let reset = chrono::DateTime::parse_from_rfc3339(&period_end)
        .unwrap()
        .timestamp();
    for expected_remaining in [9, 8, 7] {
        let response = app.key_get(&key).await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "x-ratelimit-limit"), 10);
        assert_eq!(
            header(&response, "x-ratelimit-remaining"),
            expected_remaining
        );
        assert_eq!(header(&response, "x-ratelimit-reset"), reset);
    }
}

#[actix_web::test]
async fn the_quota_message_is_localized() {
    let app = TestApp::spawn_with(|c| c.usage.free_monthly_limit = 1).await;
    let dashboard = app.sign_in("zh@example.com").await;
    let (key, _) = app.create_key(&dashboard, "zh").await;
    assert_eq!(app.key_get(&key).await.status(), 200);
    let response = app
        .http
        .get(app.url("/v2/accounts"))
        .header("service-api-key", &key)
        .header("accept-language", "zh-TW,zh;q=0.9")
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 429);
    assert!(body["error"].as_str().unwrap().contains("上限"), "{body}");
    assert!(
        body["error_en"].as_str().unwrap().contains("limit reached"),
        "{body}"
    );
    assert_eq!(
        (body["limit"].clone(), body["current_usage"].clone()),
        (json!(1), json!(1))
    );
}

#[actix_web::test]
async fn the_usage_month_rolls_over_at_the_registration_anchor() {
    // Sessions must outlive the month the test travels through.
    let app = TestApp::spawn_with(|c| c.auth.session_ttl_hours = 24 * 90).await;
    // Registered on 31 January: the periods are Jan 31 → Feb 28 → Mar 31.
    app.clock
        .set(Utc.with_ymd_and_hms(2026, 1, 31, 10, 0, 0).unwrap());
    let dashboard = app.sign_in("anchor@example.com").await;
    let (key, _) = app.create_key(&dashboard, "anchor").await;
    for _ in 0..10 {
        assert_eq!(app.key_get(&key).await.status(), 200);
    }
    assert_eq!(app.key_get(&key).await.status(), 429);
    let body = subscription(&app, &dashboard).await;
    assert_eq!(
        body["api_usage"],
        json!({
            "current_usage": 10, "limit": 10, "remaining": 0, "current_month": "2026-01",
            "period_start": "2026-01-31T00:00:00.000Z", "period_end": "2026-02-28T00:00:00.000Z",
        })
    );

    app.clock
        .set(Utc.with_ymd_and_hms(2026, 2, 27, 23, 59, 59).unwrap());
    assert_eq!(
        app.key_get(&key).await.status(),
        429,
        "still January's period"
    );

    app.clock
        .set(Utc.with_ymd_and_hms(2026, 2, 28, 0, 0, 0).unwrap());
    let response = app.key_get(&key).await;
    assert_eq!(
        response.status(),
        200,
        "a new period starts on Feb 28 (short month)"
    );
    assert_eq!(header(&response, "x-ratelimit-remaining"), 9);
    assert_eq!(
        header(&response, "x-ratelimit-reset"),
        Utc.with_ymd_and_hms(2026, 3, 31, 0, 0, 0)
            .unwrap()
            .timestamp()
    );
    let body = subscription(&app, &dashboard).await;
    assert_eq!(body["api_usage"]["current_month"], "2026-02");
    assert_eq!(body["api_usage"]["current_usage"], 1);
}

#[actix_web::test]
async fn free_subscription_status_has_the_spec_fields() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("free@example.com").await;
    let body = subscription(&app, &dashboard).await;
    assert_eq!(body["success"], true);
    assert_eq!(
        body["subscription"],
        json!({"status": "free", "plan": "free"})
    );
    let usage = &body["api_usage"];
    assert_eq!(
        (
            usage["current_usage"].clone(),
            usage["limit"].clone(),
            usage["remaining"].clone()
        ),
        (json!(0), json!(10), json!(10))
    );
    assert_eq!(
        usage["current_month"],
        app.clock_now().format("%Y-%m").to_string()
    );
}

#[actix_web::test]
async fn paid_plans_are_unlimited_but_still_counted() {
    let app = TestApp::spawn_with(|c| c.usage.free_monthly_limit = 2).await;
    let dashboard = app.sign_in("pro@example.com").await;
    let (key, _) = app.create_key(&dashboard, "pro").await;
    for _ in 0..2 {
        assert_eq!(app.key_get(&key).await.status(), 200);
    }
    assert_eq!(app.key_get(&key).await.status(), 429);

    let (status, body) = status_and_json(app.set_plan(dashboard.user_id, "pro").await).await;
    assert_eq!(status, 200);
    assert_eq!(body["user"]["plan"], "pro");
    for _ in 0..5 {
        let response = app.key_get(&key).await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "x-ratelimit-limit"), -1);
        assert_eq!(header(&response, "x-ratelimit-remaining"), -1);
    }
    let body = subscription(&app, &dashboard).await;
    assert_eq!(body["subscription"]["status"], "active");
    assert_eq!(body["subscription"]["plan"], "pro");
    assert_eq!(body["subscription"]["plan_type"], "monthly");
    assert!(body["subscription"]["current_period_end"].is_string());
    assert_eq!(body["api_usage"]["limit"], -1);
    assert_eq!(body["api_usage"]["remaining"], -1);
    assert_eq!(
        body["api_usage"]["current_usage"], 7,
        "usage is still counted"
    );

    let response = app
        .http
        .put(app.url(&format!("/admin/users/{}/plan", dashboard.user_id)))
        .bearer_auth(crate::helpers::OPERATOR_TOKEN)
        .json(&json!({"plan": "gold"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        status_and_json(response).await,
        (
            400,
            crate::helpers::error_body(
                "InvalidRequest",
                "plan must be one of `free`, `pro`, `ultra`"
            )
        )
    );
}

#[actix_web::test]
async fn session_endpoints_do_not_count_towards_usage() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("dash-only@example.com").await;
    for _ in 0..12 {
        let response = dashboard
            .client
            .get(app.url("/api/keys"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    assert_eq!(
        subscription(&app, &dashboard).await["api_usage"]["current_usage"],
        0
    );
}

#[actix_web::test]
async fn a_stored_plan_that_is_no_plan_is_an_error_never_free() {
    use sea_orm::ConnectionTrait;
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    // Damaged outside the service: read as Free, it would silently meter the user.
    let changed = app
        .state
        .store
        .connection()
        .execute_unprepared("UPDATE users SET plan = 'gold'")
        .await
        .unwrap();
    assert_eq!(changed.rows_affected(), 1);
    let response = app.key_get(&publisher.key).await;
    let (status, body) = crate::helpers::status_and_json(response).await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error"], "InternalServerError", "{body}");
    assert!(!body.to_string().contains("gold"), "{body}");
}
