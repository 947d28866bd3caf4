//! What the webhooks report: `post.published`, `post.failed` and `post.unconfirmed` for
//! immediate and scheduled posts, whose `data` is the post resource of `GET /v2/posts/{id}`;
//! `account.invalid` when a token is revoked or expires; `account.token_expiring` seven days
//! before a token or facebook's data access ends. Each goes to the user's endpoints that
//! subscribe to it, and to no one else's.

use chrono::{Duration, SecondsFormat};
use serde_json::{Value, json};
use service_sim::state::{FaultKind, FaultSpec, Processing};

use crate::helpers::{Background, Publisher, TestApp, fault, set_fault, status_and_json};
use crate::webhook_receiver::{Received, assert_signed};
use crate::webhooks::{Caller, Endpoint, create_ok, messages, spawn_with_receiver, time};

/// The post resource (`GET /v2/posts/{id}` under `post`).
async fn post_resource(app: &TestApp, key: &str, id: &str) -> Value {
    let response = app
        .http
        .get(app.url(&format!("/v2/posts/{id}")))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    body["post"].clone()
}

/// Checks a message's form (`{type, timestamp, data}`, compact, signed with the endpoint's
/// secret, its event time near the test clock's now); returns its `data`.
fn checked(app: &TestApp, endpoint: &Endpoint, received: &Received, event: &str) -> Value {
    assert_signed(&endpoint.secret, received);
    let body = received.json();
    let fields: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(fields.len(), 3, "{body}");
    assert_eq!(body["type"], event, "{body}");
    let at = time(&body["timestamp"]);
    assert!(
        (at - app.clock_now()).num_seconds().abs() <= 5,
        "the event time {at} is not the test clock's {}",
        app.clock_now()
    );
    assert!(
        !received.text().contains('\n'),
        "compact: {}",
        received.text()
    );
    body["data"].clone()
}

/// The post resource a `post.*` message is about, read back when the message has arrived.
async fn about(app: &TestApp, publisher: &Publisher, data: &Value) -> Value {
    let id = data["post_submission_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{data}"));
    post_resource(app, &publisher.key, id).await
}

/// `scheduledAt` `secs` from the test clock's now.
fn at(app: &TestApp, secs: i64) -> String {
    (app.clock_now() + Duration::seconds(secs)).to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[actix_web::test]
async fn an_immediate_publish_sends_post_published_with_the_post_resource() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let publisher = app.publisher("threads", "pro").await;
    let me = Caller::Key(&publisher.key);
    let all = create_ok(&app, me, &receiver.url("/all"), None).await;
    let failures = create_ok(&app, me, &receiver.url("/failures"), Some(&["post.failed"])).await;
    let other = app.publisher("threads", "pro").await;
    let theirs = create_ok(
        &app,
        Caller::Key(&other.key),
        &receiver.url("/theirs"),
        None,
    )
    .await;

    let (status, answer) = app
        .post(
            &publisher.key,
            &publisher.body(json!({"text": ["one", "two"]})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let id = answer["data"]["post_submission_id"].as_str().unwrap();
    let got = receiver.wait_for_event("/all", "post.published").await;
    let data = checked(&app, &all, &got, "post.published");
    let post = post_resource(&app, &publisher.key, id).await;
    assert_eq!(data, post);
    assert_eq!(post["status"], "published", "{post}");
    assert_eq!(post["post_ids"].as_array().unwrap().len(), 2, "{post}");

    // The messages are written with the post's end: once the publish has answered, the other
    // logs are final. An endpoint not subscribed, or another user's, has none.
    assert!(messages(&app, me, &failures).await.is_empty());
    assert!(
        messages(&app, Caller::Key(&other.key), &theirs)
            .await
            .is_empty()
    );
    let log = messages(&app, me, &all).await;
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0]["event"], "post.published");
    assert_eq!(log[0]["message_id"], got.webhook_id());
    assert!(receiver.received_on("/failures").is_empty());
    assert!(receiver.received_on("/theirs").is_empty());
}

#[actix_web::test]
async fn a_failed_publish_sends_post_failed_with_the_reason() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), Some(&["post.failed"])).await;
    set_fault(&app.sim, &publisher.sim, fault(FaultKind::Permission));
    let (status, answer) = app
        .post(&publisher.key, &publisher.body(json!({"text": "refused"})))
        .await;
    assert_eq!(status, 403, "{answer}");
    let got = receiver.wait_for_event("/hook", "post.failed").await;
    let data = checked(&app, &endpoint, &got, "post.failed");
    assert_eq!(data["post_submission_id"], answer["post_submission_id"]);
    assert_eq!(data, about(&app, &publisher, &data).await);
    assert_eq!(data["status"], "failed", "{data}");
    assert_eq!(data["error"]["code"], "InsufficientPermissions", "{data}");
}

#[actix_web::test]
async fn a_scheduled_post_sends_post_published_naming_the_scheduled_post() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let body = publisher.body(json!({"text": "later", "scheduledAt": at(&app, 120)}));
    let (status, answer) = app.post(&publisher.key, &body).await;
    assert_eq!(status, 200, "{answer}");
    let scheduled_id = answer["scheduledPostId"].as_str().unwrap().to_string();
    assert!(
        messages(&app, me, &endpoint).await.is_empty(),
        "nothing happened yet"
    );

    app.clock.advance(Duration::seconds(121));
    let got = receiver.wait_for_event("/hook", "post.published").await;
    let data = checked(&app, &endpoint, &got, "post.published");
    assert_eq!(data["scheduled_post_id"], scheduled_id.as_str(), "{data}");
    assert_eq!(data["status"], "published", "{data}");
    assert_eq!(data, about(&app, &publisher, &data).await);
    assert_eq!(
        data["post_id"],
        app.published(&publisher.sim)[0].id.as_str()
    );
}

/// A scheduled post whose token the user revoked: the post fails and the account is invalid,
/// two messages.
#[actix_web::test]
async fn a_scheduled_post_on_a_revoked_token_sends_post_failed_and_account_invalid() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let publisher = app.publisher("threads", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let body = publisher.body(json!({"text": "token dies", "scheduledAt": at(&app, 61)}));
    let (status, answer) = app.post(&publisher.key, &body).await;
    assert_eq!(status, 200, "{answer}");
    let scheduled_id = answer["scheduledPostId"].as_str().unwrap().to_string();
    set_fault(&app.sim, &publisher.sim, fault(FaultKind::TokenRevoked));
    app.clock.advance(Duration::seconds(62));

    let failed = receiver.wait_for_event("/hook", "post.failed").await;
    let data = checked(&app, &endpoint, &failed, "post.failed");
    assert_eq!(data["scheduled_post_id"], scheduled_id.as_str(), "{data}");
    assert_eq!(data["error"]["code"], "InvalidToken", "{data}");
    assert_eq!(data, about(&app, &publisher, &data).await);

    let invalid = receiver.wait_for_event("/hook", "account.invalid").await;
    let data = checked(&app, &endpoint, &invalid, "account.invalid");
    let reason = data["reason"].as_str().unwrap_or_default().to_string();
    assert!(!reason.is_empty(), "{data}");
    assert_eq!(
        data,
        json!({
            "account_id": publisher.account.id,
            "platform": "threads",
            "page_name": "threads demo",
            "reason": reason,
        })
    );
    assert_ne!(failed.webhook_id(), invalid.webhook_id());
}

/// The user revokes the app on X: the next publish fails and the account is reported invalid.
#[actix_web::test]
async fn a_revoked_token_on_an_immediate_publish_sends_account_invalid() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let publisher = app.publisher("x", "ultra").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), Some(&["account.invalid"])).await;
    assert!(app.sim.state().revoke_token(&publisher.sim.access_token));
    let (status, answer) = app
        .post(&publisher.key, &publisher.body(json!({"text": "revoked"})))
        .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (401, Some("InvalidToken")),
        "{answer}"
    );
    let got = receiver.wait_for_event("/hook", "account.invalid").await;
    let data = checked(&app, &endpoint, &got, "account.invalid");
    assert_eq!(data["account_id"], json!(publisher.account.id), "{data}");
    assert_eq!(data["platform"], "x", "{data}");
    assert_eq!(data["page_name"], "x demo", "{data}");
    assert!(
        data["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{data}"
    );
    // Subscribed to account.invalid only: the failed post is not sent.
    let log = messages(&app, me, &endpoint).await;
    assert_eq!(log.len(), 1, "{log:?}");
}

/// A publish the platform is still processing at the deadline: `post.unconfirmed`, then
/// `post.published` once the service's check finds it out, both about the one post.
#[actix_web::test]
async fn an_unconfirmed_publish_sends_post_unconfirmed_then_post_published() {
    let (app, receiver) = spawn_with_receiver(|c| {
        c.platforms.processing_timeout_secs = 1;
        c.publishing.unconfirmed_check_interval_ms = 100;
    })
    .await;
    let publisher = app.publisher("threads", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let stuck = FaultSpec {
        processing: Processing::Never,
        ..FaultSpec::default()
    };
    set_fault(&app.sim, &publisher.sim, stuck);
    let video = json!({"text": "A video", "mediaUrls": [app.media_url("sample.mp4")]});
    let (status, answer) = app.post(&publisher.key, &publisher.body(video)).await;
    assert_eq!(status, 202, "{answer}");
    let id = answer["post_submission_id"].as_str().unwrap().to_string();

    let got = receiver.wait_for_event("/hook", "post.unconfirmed").await;
    let data = checked(&app, &endpoint, &got, "post.unconfirmed");
    assert_eq!(data["post_submission_id"], id.as_str(), "{data}");
    assert_eq!(data["status"], "unconfirmed", "{data}");
    assert_eq!(data["error"]["code"], "PublishUnconfirmed", "{data}");
    assert_eq!(data, post_resource(&app, &publisher.key, &id).await);

    set_fault(&app.sim, &publisher.sim, FaultSpec::default());
    crate::helpers::eventually("the check's post.published", async || {
        // Checks are due by the service's clock.
        app.clock.advance(Duration::milliseconds(500));
        receiver
            .received_on("/hook")
            .iter()
            .any(|r| r.event() == "post.published")
    })
    .await;
    let got = receiver.wait_for_event("/hook", "post.published").await;
    let data = checked(&app, &endpoint, &got, "post.published");
    assert_eq!(data["post_submission_id"], id.as_str(), "{data}");
    assert_eq!(data["status"], "published", "{data}");
    assert_eq!(data, post_resource(&app, &publisher.key, &id).await);
}

/// How many messages of `event` the endpoint's log holds.
async fn logged(app: &TestApp, caller: Caller<'_>, endpoint: &Endpoint, event: &str) -> usize {
    messages(app, caller, endpoint)
        .await
        .iter()
        .filter(|m| m["event"] == event)
        .count()
}

fn fast_sweeps(config: &mut social_service::config::Config) {
    config.oauth.refresh_sweep_secs = 1;
}

/// A 60-day instagram token (no refresh grant): `account.token_expiring` once, seven days
/// before its end; `account.invalid` when it has ended.
#[actix_web::test]
async fn an_instagram_token_sends_token_expiring_a_week_before_and_invalid_at_its_end() {
    let (app, receiver) = spawn_with_receiver(fast_sweeps).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let instagram = app
        .connect(publisher.user_id, "instagram", "insta demo")
        .await;
    let expires = instagram.account.token_expires_at.unwrap();
    let event = "account.token_expiring";

    app.clock.set(expires - Duration::days(8));
    app.wait_two_passes(Background::TokenKeeper).await;
    assert_eq!(logged(&app, me, &endpoint, event).await, 0, "too early");

    app.clock
        .set(expires - Duration::days(7) + Duration::minutes(1));
    let got = receiver.wait_for_event("/hook", event).await;
    let data = checked(&app, &endpoint, &got, event);
    assert_eq!(data["account_id"], json!(instagram.account.id), "{data}");
    assert_eq!(data["platform"], "instagram", "{data}");
    assert_eq!(data["page_name"], "insta demo", "{data}");
    assert_eq!(data["reason"], "token", "{data}");
    assert_eq!(
        time(&data["expires_at"]).timestamp(),
        expires.timestamp(),
        "{data}"
    );
    assert_eq!(data.as_object().unwrap().len(), 5, "{data}");
    // Said once, not on every sweep.
    app.wait_two_passes(Background::TokenKeeper).await;
    app.wait_two_passes(Background::TokenKeeper).await;
    assert_eq!(logged(&app, me, &endpoint, event).await, 1);

    app.clock.set(expires + Duration::minutes(1));
    let got = receiver.wait_for_event("/hook", "account.invalid").await;
    let data = checked(&app, &endpoint, &got, "account.invalid");
    assert_eq!(data["account_id"], json!(instagram.account.id), "{data}");
    assert_eq!(data["platform"], "instagram", "{data}");
    assert!(
        data["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{data}"
    );
    app.wait_two_passes(Background::TokenKeeper).await;
    assert_eq!(logged(&app, me, &endpoint, "account.invalid").await, 1);
}

/// Facebook page tokens do not expire, but the app's access to the page's data does, after 90
/// days: `account.token_expiring` with the reason `data_access` a week before.
#[actix_web::test]
async fn facebooks_data_access_window_sends_token_expiring() {
    let (app, receiver) = spawn_with_receiver(fast_sweeps).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(
        &app,
        me,
        &receiver.url("/hook"),
        Some(&["account.token_expiring"]),
    )
    .await;
    let ends = publisher.account.data_access_expires_at.unwrap();
    let event = "account.token_expiring";

    app.clock.set(ends - Duration::days(8));
    app.wait_two_passes(Background::TokenKeeper).await;
    assert_eq!(logged(&app, me, &endpoint, event).await, 0, "too early");
    app.clock
        .set(ends - Duration::days(7) + Duration::minutes(1));
    let got = receiver.wait_for_event("/hook", event).await;
    let data = checked(&app, &endpoint, &got, event);
    assert_eq!(
        data,
        json!({
            "account_id": publisher.account.id,
            "platform": "facebook",
            "page_name": "facebook demo",
            "expires_at": data["expires_at"],
            "reason": "data_access",
        })
    );
    assert_eq!(
        time(&data["expires_at"]).timestamp(),
        ends.timestamp(),
        "{data}"
    );
    app.wait_two_passes(Background::TokenKeeper).await;
    app.wait_two_passes(Background::TokenKeeper).await;
    assert_eq!(logged(&app, me, &endpoint, event).await, 1, "said once");
}
