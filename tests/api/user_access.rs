//! `service user disable|enable|sessions revoke EMAIL`, run as a process of its own beside
//! running instances: what a disabled user can no longer do, on which instance, and when.

use std::time::{Duration, Instant};

use reqwest::{Client, Response};
use serde_json::Value;
use social_service::services::user_access;

use crate::{
    authcache::{on_postgres, wait_listening},
    helpers::{Dashboard, TestApp, error_body},
};

/// A signed-in user on the Pro plan (calls use no allowance) with an API key.
struct User {
    email: String,
    dashboard: Dashboard,
    key: String,
}

async fn user(app: &TestApp) -> User {
    let email = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    let dashboard = app.sign_in(&email).await;
    assert_eq!(app.set_plan(dashboard.user_id, "pro").await.status(), 200);
    let (key, _) = app.create_key(&dashboard, "cli").await;
    User {
        email,
        dashboard,
        key,
    }
}

pub(crate) async fn key_status(base: &str, key: &str) -> u16 {
    Client::new()
        .get(format!("{base}/v2/accounts"))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The key is refused by the instance at `base` on its very next request. On PostgreSQL the
/// command is another process whose change arrives by notification (as a key deleted on another
/// instance does): there the refusal is awaited, for a loaded machine's few milliseconds.
pub(crate) async fn assert_key_refused(base: &str, key: &str) {
    if !on_postgres() {
        assert_eq!(key_status(base, key).await, 401, "the very next request");
        return;
    }
    let started = Instant::now();
    while key_status(base, key).await != 401 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the key still worked 30 s after its user was disabled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Starts a sign-in as `email` and follows it to its end (the callback's answer).
async fn try_sign_in(app: &TestApp, email: &str) -> Response {
    let client = Client::builder().cookie_store(true).build().unwrap();
    client
        .get(app.url(&format!(
            "/auth/login?login_hint={email}&return_to=/auth/me"
        )))
        .send()
        .await
        .unwrap()
}

#[actix_web::test]
async fn a_disabled_users_keys_and_sessions_fail_on_the_very_next_request_everywhere() {
    let app = TestApp::spawn().await;
    let publisher = user(&app).await;
    let other = user(&app).await;
    let second = app.spawn_second().await;
    if on_postgres() {
        wait_listening(&second).await;
    }
    // Warm on both instances: the key and its owner come from memory now.
    for base in [&app.base, &second.base] {
        for _ in 0..2 {
            assert_eq!(key_status(base, &publisher.key).await, 200);
        }
    }
    let me = || publisher.dashboard.client.get(app.url("/auth/me")).send();
    assert_eq!(me().await.unwrap().status(), 200);

    let email = publisher.email.clone();
    let cli = app.cli_store().await;
    let disabled = user_access::disable_users(&cli, app.clock_now(), &email)
        .await
        .unwrap();
    assert_eq!(disabled.len(), 1);

    let response = me().await.unwrap();
    assert_eq!(response.status(), 401, "the session, at once");
    assert_key_refused(&app.base, &publisher.key).await;
    assert_key_refused(&second.base, &publisher.key).await;
    let response = Client::new()
        .get(app.url("/v2/accounts"))
        .header("service-api-key", &publisher.key)
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        error_body("InvalidApiKey", "Invalid or missing API key")
    );
    // Nobody else is touched.
    assert_eq!(key_status(&second.base, &other.key).await, 200);
}

#[actix_web::test]
async fn sign_in_is_refused_while_disabled_and_works_again_after_enable() {
    let app = TestApp::spawn().await;
    let publisher = user(&app).await;
    let email = publisher.email.clone();
    let cli = app.cli_store().await;
    // Addresses are compared without regard to case, as the operator may type them.
    let disabled = user_access::disable_users(&cli, app.clock_now(), &email.to_uppercase())
        .await
        .unwrap();
    assert_eq!(disabled.len(), 1);
    // Nor can the address come back in another case, as another identity at the provider.
    let other_case = try_sign_in(&app, &email.to_uppercase()).await;
    assert_eq!(other_case.status(), 401);

    let refused = try_sign_in(&app, &email).await;
    assert_eq!(refused.status(), 401);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(
        body,
        error_body(
            "Unauthorized",
            "Sign-in refused: this user has been disabled by the operator of this service"
        )
    );
    // The user's key is refused meanwhile.
    assert_key_refused(&app.base, &publisher.key).await;

    let enabled = user_access::enable_users(&cli, app.clock_now(), &email)
        .await
        .unwrap();
    assert_eq!(enabled.len(), 1);
    assert!(enabled[0].disabled_at.is_none());
    let again = app.sign_in(&email).await;
    assert_eq!(
        again.user_id, publisher.dashboard.user_id,
        "the same user, back"
    );
    let started = Instant::now();
    while key_status(&app.base, &publisher.key).await != 200 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the key never worked again"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[actix_web::test]
async fn revoking_sessions_ends_every_session_but_not_the_keys() {
    let app = TestApp::spawn().await;
    let publisher = user(&app).await;
    let email = publisher.email.clone();
    // A second browser of the same user.
    let laptop = app.sign_in(&email).await;
    assert_eq!(laptop.user_id, publisher.dashboard.user_id);

    let cli = app.cli_store().await;
    let revoked = user_access::revoke_sessions(&cli, app.clock_now(), &email)
        .await
        .unwrap();
    assert_eq!(revoked, 2);
    for client in [&publisher.dashboard.client, &laptop.client] {
        let response = client.get(app.url("/auth/me")).send().await.unwrap();
        assert_eq!(response.status(), 401);
    }
    assert_eq!(key_status(&app.base, &publisher.key).await, 200);
    // Signing in again works: only the sessions ended.
    app.sign_in(&email).await;
}

#[actix_web::test]
async fn an_unknown_address_is_an_error_not_a_silent_success() {
    let app = TestApp::spawn().await;
    let cli = app.cli_store().await;
    for result in [
        user_access::disable_users(&cli, app.clock_now(), "nobody@example.com")
            .await
            .map(|_| ()),
        user_access::revoke_sessions(&cli, app.clock_now(), "nobody@example.com")
            .await
            .map(|_| ()),
    ] {
        assert!(matches!(
            result,
            Err(user_access::UserAccessError::NoSuchUser(_))
        ));
    }
}
