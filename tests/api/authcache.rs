//! Authentication and metering from memory: what a write changes is seen by the very next
//! request on the instance that wrote, by other instances on the same PostgreSQL database once
//! the notification arrives, and (SQLite, or a lost notification) after `auth.cache_ttl_ms`; a
//! warm call makes no database round trip.

use std::time::{Duration, Instant};

use reqwest::{Client, Response};
use serde_json::Value;

use crate::helpers::{SecondInstance, TestApp, status_and_json};

/// How long another instance may take to hear of a write before the test fails: generous, the
/// machine is loaded (the stated bound is the TTL; a notification is normally milliseconds).
const DEADLINE: Duration = Duration::from_secs(30);

pub(crate) fn on_postgres() -> bool {
    std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty())
}

fn limit_of(response: &Response) -> i64 {
    response.headers()["x-ratelimit-limit"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

async fn get(base: &str, path: &str, key: &str) -> Response {
    Client::new()
        .get(format!("{base}{path}"))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap()
}

/// Waits until the second instance's listener is listening, so that what follows is heard by
/// notification (a listener that connects later clears the cache, which would pass the test for
/// another reason).
pub(crate) async fn wait_listening(second: &SecondInstance) {
    let started = Instant::now();
    while second.state.store.access().listens() == 0 {
        assert!(started.elapsed() < DEADLINE, "the listener never connected");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Makes the write visible on `second`: on PostgreSQL by waiting (up to [`DEADLINE`]) for
/// `check` to hold, through the notification; on SQLite, where one instance owns the file and
/// there is nothing to listen to, by moving the clock past the TTL, which bounds it.
pub(crate) async fn wait_for_second<F, Fut>(app: &TestApp, second: &SecondInstance, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    if on_postgres() {
        let listens = second.state.store.access().listens();
        let started = Instant::now();
        while !check().await {
            assert!(
                started.elapsed() < DEADLINE,
                "the second instance still used its cached entry after {DEADLINE:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            second.state.store.access().listens(),
            listens,
            "seen through the notification, not a reconnection's clearing"
        );
    } else {
        println!("SQLite: no notifications between instances; covered by the TTL instead");
        let ttl = i64::try_from(app.config.auth.cache_ttl_ms).unwrap();
        app.clock.advance(chrono::Duration::milliseconds(ttl + 1));
        assert!(check().await, "still cached after the TTL");
    }
}

#[actix_web::test]
async fn a_plan_change_meters_the_very_next_call_both_ways() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("plan-change@example.com").await;
    let (key, _) = app.create_key(&dashboard, "plans").await;
    // Warm: the key and the Free user are cached now.
    for _ in 0..2 {
        let response = app.key_get(&key).await;
        assert_eq!(response.status(), 200);
        assert_eq!(limit_of(&response), 10);
    }

    assert_eq!(app.set_plan(dashboard.user_id, "pro").await.status(), 200);
    let response = app.key_get(&key).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        limit_of(&response),
        -1,
        "Pro is unlimited from the next call"
    );

    assert_eq!(app.set_plan(dashboard.user_id, "free").await.status(), 200);
    let response = app.key_get(&key).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        limit_of(&response),
        10,
        "Free is metered from the next call"
    );
}

#[actix_web::test]
async fn a_warm_pro_metrics_call_makes_no_database_round_trip() {
    // No background actors and no last-use flush during the test: the only statements are the
    // requests'.
    let app = TestApp::spawn_without_background(|config| {
        config.usage.last_used_flush_ms = 3_600_000;
    })
    .await;
    let page = app.publisher("facebook", "pro").await;
    let path = format!(
        "/api/performance/metrics?account_id={}&platform=facebook",
        page.account.id
    );
    let (status, body) = status_and_json(get(&app.base, &path, &page.key).await).await;
    assert_eq!(status, 200, "{body}");

    let before = app.state.store.db_counts();
    let (status, body) = status_and_json(get(&app.base, &path, &page.key).await).await;
    let spent = app.state.store.db_counts().since(before);
    assert_eq!(status, 200, "{body}");
    assert_eq!(spent.total(), 0, "statements of a warm call: {spent:?}");

    // Disconnecting evicts the row in the same operation: the next call refuses.
    let response = page
        .dashboard
        .client
        .delete(app.url(&format!("/api/accounts/{}", page.account.id)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (status, body): (u16, Value) =
        status_and_json(get(&app.base, &path, &page.key).await).await;
    assert_eq!(status, 404, "{body}");
}

#[actix_web::test]
async fn a_key_deleted_on_one_instance_is_refused_by_another() {
    let app = TestApp::spawn().await;
    // Pro, so that the calls waiting for the refusal use no allowance.
    let publisher = app.publisher("threads", "pro").await;
    let (key, id) = app.create_key(&publisher.dashboard, "shared").await;
    let second = app.spawn_second().await;
    if on_postgres() {
        wait_listening(&second).await;
    }
    // Warm on the second instance.
    assert_eq!(get(&second.base, "/v2/accounts", &key).await.status(), 200);

    let response = publisher
        .dashboard
        .client
        .delete(app.url(&format!("/api/keys/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // The instance that deleted it refuses at once.
    assert_eq!(app.key_get(&key).await.status(), 401);

    wait_for_second(&app, &second, || async {
        get(&second.base, "/v2/accounts", &key).await.status() == 401
    })
    .await;
    // The other key of the same user is untouched.
    assert_eq!(
        get(&second.base, "/v2/accounts", &publisher.key)
            .await
            .status(),
        200
    );
}

#[actix_web::test]
async fn an_account_disconnected_on_one_instance_is_refused_by_another() {
    let app = TestApp::spawn().await;
    let page = app.publisher("facebook", "pro").await;
    let second = app.spawn_second().await;
    if on_postgres() {
        wait_listening(&second).await;
    }
    let path = format!(
        "/api/performance/metrics?account_id={}&platform=facebook",
        page.account.id
    );
    // Warm on the second instance.
    assert_eq!(get(&second.base, &path, &page.key).await.status(), 200);

    let response = page
        .dashboard
        .client
        .delete(app.url(&format!("/api/accounts/{}", page.account.id)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(get(&app.base, &path, &page.key).await.status(), 404);

    wait_for_second(&app, &second, || async {
        get(&second.base, &path, &page.key).await.status() == 404
    })
    .await;
}

#[actix_web::test]
async fn a_cached_account_is_still_refused_to_another_user() {
    let app = TestApp::spawn().await;
    let owner = app.publisher("facebook", "pro").await;
    let stranger = app.publisher("facebook", "pro").await;
    let path = format!(
        "/api/performance/metrics?account_id={}&platform=facebook",
        owner.account.id
    );
    // The owner's call caches the row; ownership is still checked against it.
    assert_eq!(get(&app.base, &path, &owner.key).await.status(), 200);
    assert!(app.state.store.access().account(owner.account.id).is_some());
    let (status, body) = status_and_json(get(&app.base, &path, &stranger.key).await).await;
    assert_eq!(status, 404, "{body}");
}
