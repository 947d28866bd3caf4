//! How webhooks are delivered: signed to the Standard Webhooks specification, retried on the
//! schedule with the same id and body, never following a redirect; `410 Gone` or five days of
//! failures disable the endpoint until the user enables it; the delivery log shows every
//! attempt, a failed message can be replayed, and a rotated secret signs beside the old one for
//! a day. Prometheus counts the deliveries by outcome.

use std::time::Duration as StdDuration;

use chrono::Duration;
use serde_json::{Value, json};

use crate::helpers::{OPERATOR_TOKEN, TestApp, eventually};
use crate::webhook_receiver::{Received, Reply, signed_by};
use crate::webhooks::{
    Caller, Endpoint, assert_error, create_ok, deliveries, listed, message, messages, send_test,
    spawn_with_receiver, spawn_with_witness, time, wait_for_message,
};

/// A message's attempts, oldest first.
fn attempts(message: &Value) -> Vec<Value> {
    let mut attempts = message["attempts"]
        .as_array()
        .unwrap_or_else(|| panic!("{message}"))
        .clone();
    attempts.sort_by_key(|a| time(&a["at"]));
    attempts
}

/// The HTTP status of each attempt, oldest first.
fn statuses(message: &Value) -> Vec<Value> {
    attempts(message)
        .iter()
        .map(|a| a["http_status"].clone())
        .collect()
}

/// A publish by the endpoint's owner, which must succeed.
async fn publish(app: &TestApp, publisher: &crate::helpers::Publisher, text: &str) {
    let (status, answer) = app
        .post(&publisher.key, &publisher.body(json!({ "text": text })))
        .await;
    assert_eq!(status, 200, "{answer}");
}

/// The newest message of the endpoint's log.
async fn newest(app: &TestApp, caller: Caller<'_>, endpoint: &Endpoint) -> Value {
    messages(app, caller, endpoint)
        .await
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("no message for {}", endpoint.id))
}

/// `GET /metrics` as the operator.
async fn metrics(app: &TestApp) -> String {
    let response = app
        .http
        .get(app.url("/metrics"))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

/// Headers and body of one `webhook.test` delivery, as a receiver sees them.
fn assert_test_message(app: &TestApp, endpoint: &Endpoint, got: &Received, message_id: &str) {
    assert_eq!(got.method, "POST");
    assert_eq!(got.webhook_id(), message_id);
    let hex = message_id
        .strip_prefix("msg_")
        .unwrap_or_else(|| panic!("{message_id}"));
    assert_eq!(hex.len(), 32, "{message_id}");
    assert!(hex.chars().all(|c| c.is_ascii_hexdigit()), "{message_id}");
    let timestamp: i64 = got.required("webhook-timestamp").parse().unwrap();
    assert!(
        (timestamp - app.clock_now().timestamp()).abs() <= 5,
        "{got:?}"
    );
    assert!(
        got.required("content-type").starts_with("application/json"),
        "{got:?}"
    );
    assert!(
        got.required("user-agent")
            .starts_with("social-service-webhooks/"),
        "{got:?}"
    );
    assert_eq!(signed_by(&endpoint.secret, got), [true], "{got:?}");
    let body = got.json();
    time(&body["timestamp"]);
    assert_eq!(
        body,
        json!({
            "type": "webhook.test",
            "timestamp": body["timestamp"],
            "data": {"webhook_id": endpoint.id},
        })
    );
    let text = got.text();
    assert!(
        !text.contains(": ") && !text.contains('\n'),
        "compact JSON: {text}"
    );
}

#[actix_web::test]
async fn the_test_route_sends_a_signed_webhook_test_and_logs_the_attempt() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);
    // The test is sent whatever the endpoint subscribes to.
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), Some(&["post.failed"])).await;
    receiver.reply(Reply::status(200).with_body(&"r".repeat(2000)));
    let message_id = send_test(&app, me, &endpoint).await;
    let got = receiver.wait_for("/hook", 1).await;
    assert_test_message(&app, &endpoint, &got[0], &message_id);

    let shown = wait_for_message(&app, me, &endpoint, &message_id, "delivered", 1).await;
    assert_eq!(shown["event"], "webhook.test", "{shown}");
    let created = time(&shown["created_at"]);
    assert!(
        (created - app.clock_now()).num_seconds().abs() <= 5,
        "{shown}"
    );
    assert_eq!(shown["next_attempt_at"], Value::Null, "{shown}");
    let attempt = &shown["attempts"][0];
    assert_eq!(attempt["http_status"], 200, "{shown}");
    assert_eq!(
        attempt["response"],
        "r".repeat(1024),
        "the first 1 KB: {shown}"
    );
    assert_eq!(attempt["error"], Value::Null, "{shown}");
    assert!(attempt["duration_ms"].is_u64(), "{shown}");
    let at = time(&attempt["at"]);
    assert!((at - app.clock_now()).num_seconds().abs() <= 5, "{shown}");

    // A 204 has no body to show.
    let second = send_test(&app, me, &endpoint).await;
    assert_ne!(second, message_id);
    let shown = wait_for_message(&app, me, &endpoint, &second, "delivered", 1).await;
    assert_eq!(shown["attempts"][0]["http_status"], 204, "{shown}");
    assert_eq!(shown["attempts"][0]["response"], Value::Null, "{shown}");
    let sent = receiver.wait_for("/hook", 2).await;
    assert_eq!(sent.len(), 2, "each message once: {sent:?}");
    assert_eq!(
        listed(&app, me, &endpoint).await,
        endpoint.webhook,
        "unchanged"
    );
}

#[actix_web::test]
async fn the_delivery_log_pages_newest_first() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = send_test(&app, me, &endpoint).await;
        wait_for_message(&app, me, &endpoint, &id, "delivered", 1).await;
        ids.push(id);
        app.clock.advance(Duration::seconds(1));
    }
    let shown = |log: &Value| -> Vec<String> {
        log["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["message_id"].as_str().unwrap().to_string())
            .collect()
    };
    let all = deliveries(&app, me, &endpoint, "").await;
    assert_eq!(
        shown(&all),
        [ids[2].clone(), ids[1].clone(), ids[0].clone()],
        "{all}"
    );
    assert_eq!(
        (&all["total"], &all["offset"]),
        (&json!(3), &json!(0)),
        "{all}"
    );
    let page = deliveries(&app, me, &endpoint, "?limit=2").await;
    assert_eq!(shown(&page), [ids[2].clone(), ids[1].clone()], "{page}");
    assert_eq!(
        (&page["total"], &page["limit"]),
        (&json!(3), &json!(2)),
        "{page}"
    );
    let page = deliveries(&app, me, &endpoint, "?limit=2&offset=2").await;
    assert_eq!(shown(&page), [ids[0].clone()], "{page}");
    assert_eq!(page["offset"], 2, "{page}");
    for query in ["?limit=0", "?offset=-1", "?limit=many"] {
        let answer = me
            .get(&app, &endpoint.path(&format!("/deliveries{query}")))
            .await;
        assert_error(&answer, 400, "InvalidRequest");
    }
}

/// A 500 is retried after the schedule's 5 s (with its jitter, at most 5.5 s) with the same id
/// and the same bytes; the log shows both attempts.
#[actix_web::test]
async fn a_failed_attempt_is_retried_with_the_same_id_and_body() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    receiver.reply(Reply::status(500).with_body("down"));
    let message_id = send_test(&app, me, &endpoint).await;
    receiver.wait_for("/hook", 1).await;
    let shown = wait_for_message(&app, me, &endpoint, &message_id, "pending", 1).await;
    assert_eq!(statuses(&shown), [json!(500)], "{shown}");
    assert_eq!(shown["attempts"][0]["response"], "down", "{shown}");
    let first_at = time(&shown["attempts"][0]["at"]);
    let next = time(&shown["next_attempt_at"]);
    let delay = (next - first_at).num_milliseconds();
    assert!(
        (4_500..=5_500).contains(&delay),
        "the second attempt {delay} ms after the first"
    );

    app.clock.advance(Duration::seconds(6));
    let sent = receiver.wait_for("/hook", 2).await;
    let stamp = |r: &Received| r.required("webhook-timestamp").parse::<i64>().unwrap();
    assert!(
        stamp(&sent[1]) - stamp(&sent[0]) >= 4,
        "the attempt's own time: {sent:?}"
    );
    assert_eq!(sent[1].webhook_id(), sent[0].webhook_id());
    assert_eq!(sent[1].webhook_id(), message_id);
    assert_eq!(sent[1].body, sent[0].body, "the same bytes");
    for got in &sent {
        assert_eq!(signed_by(&endpoint.secret, got), [true], "{got:?}");
    }
    let shown = wait_for_message(&app, me, &endpoint, &message_id, "delivered", 2).await;
    assert_eq!(statuses(&shown), [json!(500), json!(204)], "{shown}");
    assert_eq!(messages(&app, me, &endpoint).await.len(), 1);
}

/// A redirect is a failed attempt: the service does not go where it points.
#[actix_web::test]
async fn a_redirect_is_not_followed_and_counts_as_a_failure() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    receiver.reply(Reply::redirect(302, &receiver.url("/elsewhere")));
    receiver.reply(Reply::redirect(307, "/elsewhere"));
    let message_id = send_test(&app, me, &endpoint).await;
    let shown = wait_for_message(&app, me, &endpoint, &message_id, "pending", 1).await;
    assert_eq!(statuses(&shown), [json!(302)], "{shown}");
    app.clock.advance(Duration::seconds(6));
    let shown = wait_for_message(&app, me, &endpoint, &message_id, "pending", 2).await;
    assert_eq!(statuses(&shown), [json!(302), json!(307)], "{shown}");
    app.clock.advance(Duration::seconds(331));
    let shown = wait_for_message(&app, me, &endpoint, &message_id, "delivered", 3).await;
    assert_eq!(
        statuses(&shown),
        [json!(302), json!(307), json!(204)],
        "{shown}"
    );
    let paths: Vec<String> = receiver.received().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/hook", "/hook", "/hook"]);
}

/// An endpoint that answers slower than `webhooks.timeout_secs` has failed; it is tried again.
#[actix_web::test]
async fn a_slow_endpoint_times_out_and_is_retried() {
    let (app, receiver) = spawn_with_receiver(|c| c.webhooks.timeout_secs = 1).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    receiver.reply(Reply::status(204).after(StdDuration::from_secs(4)));
    let message_id = send_test(&app, me, &endpoint).await;
    let shown = wait_for_message(&app, me, &endpoint, &message_id, "pending", 1).await;
    let attempt = &shown["attempts"][0];
    assert_eq!(attempt["http_status"], Value::Null, "{shown}");
    assert!(
        attempt["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{shown}"
    );
    let took = attempt["duration_ms"].as_u64().unwrap();
    assert!((900..3_500).contains(&took), "{shown}");
    app.clock.advance(Duration::seconds(6));
    let shown = wait_for_message(&app, me, &endpoint, &message_id, "delivered", 2).await;
    assert_eq!(statuses(&shown), [Value::Null, json!(204)], "{shown}");
}

/// `410 Gone` disables the endpoint and fails what it still had pending; it gets no events
/// until the user enables it again, but a test is still sent (to check a fix).
#[actix_web::test]
async fn gone_disables_the_endpoint_until_the_user_enables_it() {
    let (app, receiver, witness) = spawn_with_witness(|_| {}).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    receiver.reply(Reply::status(500));
    receiver.reply(Reply::status(410));
    let retrying = send_test(&app, me, &endpoint).await;
    wait_for_message(&app, me, &endpoint, &retrying, "pending", 1).await;
    let gone = send_test(&app, me, &endpoint).await;
    wait_for_message(&app, me, &endpoint, &gone, "failed", 1).await;
    let shown = listed(&app, me, &endpoint).await;
    assert_eq!(shown["is_active"], false, "{shown}");
    assert!(
        shown["disabled_reason"]
            .as_str()
            .unwrap_or_default()
            .contains("410"),
        "{shown}"
    );
    let retried = message(&app, me, &endpoint, &retrying).await;
    assert_eq!(
        retried["status"], "failed",
        "pending messages end with it: {retried}"
    );
    assert_eq!(retried["next_attempt_at"], Value::Null, "{retried}");

    // No events while disabled: once the witness has the publish's message, the endpoint's
    // log would have one too.
    let published = Some(&["post.published"][..]);
    create_ok(&app, me, &witness.url("/witness"), published).await;
    publish(&app, &publisher, "while disabled").await;
    witness.wait_for("/witness", 1).await;
    assert_eq!(messages(&app, me, &endpoint).await.len(), 2);
    app.clock.advance(Duration::seconds(10));
    // A test still goes out, and does not enable it.
    let checked = send_test(&app, me, &endpoint).await;
    wait_for_message(&app, me, &endpoint, &checked, "delivered", 1).await;
    assert_eq!(listed(&app, me, &endpoint).await["is_active"], false);
    assert_eq!(
        receiver.received_on("/hook").len(),
        3,
        "the retry was not sent"
    );
    // So does a replay, with the message's own id.
    let path = endpoint.path(&format!("/deliveries/{retrying}/replay"));
    let (status, answer) = me.post(&app, &path, &json!({})).await;
    assert_eq!(status, 202, "{answer}");
    wait_for_message(&app, me, &endpoint, &retrying, "delivered", 2).await;
    assert_eq!(
        receiver.wait_for("/hook", 4).await[3].webhook_id(),
        retrying
    );
    assert_eq!(listed(&app, me, &endpoint).await["is_active"], false);

    let (status, answer) = me
        .patch(&app, &endpoint.path(""), &json!({"is_active": true}))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["webhook"]["is_active"], true, "{answer}");
    assert_eq!(
        answer["webhook"]["disabled_reason"],
        Value::Null,
        "{answer}"
    );
    publish(&app, &publisher, "enabled again").await;
    let got = receiver.wait_for_event("/hook", "post.published").await;
    assert_eq!(signed_by(&endpoint.secret, &got), [true]);
    assert!(
        metrics(&app)
            .await
            .contains("webhook_deliveries_total{outcome=\"gone\"} 1")
    );
}

/// Failing continuously for five days disables an endpoint; four days do not.
#[actix_web::test]
async fn five_days_of_failures_disable_the_endpoint() {
    let (app, receiver, witness) =
        spawn_with_witness(|c| c.webhooks.retry_schedule_secs = vec![0]).await;
    receiver.reply_by_default(Reply::status(500));
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let outcome = async |expected: usize| {
        eventually("the message to fail", async || {
            let log = messages(&app, me, &endpoint).await;
            log.len() == expected && log.iter().all(|m| m["status"] == "failed")
        })
        .await;
        listed(&app, me, &endpoint).await
    };

    publish(&app, &publisher, "first failure").await;
    let shown = outcome(1).await;
    assert_eq!(
        shown["is_active"], true,
        "one failure is not five days: {shown}"
    );
    assert_eq!(
        newest(&app, me, &endpoint).await["attempts"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    app.clock.advance(Duration::days(4));
    publish(&app, &publisher, "four days on").await;
    let shown = outcome(2).await;
    assert_eq!(shown["is_active"], true, "{shown}");
    app.clock.advance(Duration::days(1) + Duration::minutes(1));
    publish(&app, &publisher, "five days on").await;
    eventually("the endpoint to be disabled", async || {
        listed(&app, me, &endpoint).await["is_active"] == false
    })
    .await;
    let shown = listed(&app, me, &endpoint).await;
    assert!(
        shown["disabled_reason"]
            .as_str()
            .is_some_and(|r| !r.is_empty()),
        "{shown}"
    );
    let published = Some(&["post.published"][..]);
    create_ok(&app, me, &witness.url("/witness"), published).await;
    publish(&app, &publisher, "disabled").await;
    witness.wait_for("/witness", 1).await;
    assert_eq!(
        messages(&app, me, &endpoint).await.len(),
        3,
        "no event once disabled"
    );
}

/// A success in between starts the five days over.
#[actix_web::test]
async fn a_success_starts_the_five_days_over() {
    let (app, receiver) = spawn_with_receiver(|c| c.webhooks.retry_schedule_secs = vec![0]).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    // Each publish's message, answered with `status`; its outcome in the log.
    let event = async |status: u16, outcome: &str| {
        receiver.reply(Reply::status(status));
        let text = format!("{outcome} at {}", app.clock_now());
        let before = messages(&app, me, &endpoint).await.len();
        publish(&app, &publisher, &text).await;
        eventually(&format!("{text}: {outcome}"), async || {
            let log = messages(&app, me, &endpoint).await;
            log.len() == before + 1 && log[0]["status"] == outcome
        })
        .await;
    };
    event(500, "failed").await;
    app.clock.advance(Duration::days(3));
    event(204, "delivered").await;
    app.clock.advance(Duration::days(1));
    event(500, "failed").await;
    app.clock.advance(Duration::days(2));
    // Six days after the first failure, two after the last success.
    event(500, "failed").await;
    assert_eq!(listed(&app, me, &endpoint).await["is_active"], true);
    assert_eq!(messages(&app, me, &endpoint).await.len(), 4);
}

/// A failed message is sent again on request: the same id and the same bytes.
#[actix_web::test]
async fn a_failed_message_is_replayed_with_the_same_id() {
    let (app, receiver) = spawn_with_receiver(|c| c.webhooks.retry_schedule_secs = vec![0]).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    // Another endpoint of the user's, which gets none of the publish's messages.
    let second = create_ok(&app, me, &receiver.url("/second"), Some(&["webhook.test"])).await;
    receiver.reply(Reply::status(500));
    publish(&app, &publisher, "replayed").await;
    let first = receiver.wait_for("/hook", 1).await.remove(0);
    let message_id = first.webhook_id().to_string();
    wait_for_message(&app, me, &endpoint, &message_id, "failed", 1).await;

    let path = endpoint.path(&format!("/deliveries/{message_id}/replay"));
    let (status, answer) = me.post(&app, &path, &json!({})).await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer, json!({"success": true, "message_id": message_id}));
    let sent = receiver.wait_for("/hook", 2).await;
    assert_eq!(sent[1].webhook_id(), message_id);
    assert_eq!(sent[1].body, first.body, "the same bytes");
    assert_eq!(signed_by(&endpoint.secret, &sent[1]), [true]);
    let shown = wait_for_message(&app, me, &endpoint, &message_id, "delivered", 2).await;
    assert_eq!(statuses(&shown), [json!(500), json!(204)], "{shown}");
    assert_eq!(
        messages(&app, me, &endpoint).await.len(),
        1,
        "no new message"
    );

    // An id that is not this endpoint's message: unknown, or the other endpoint's.
    let unknown = endpoint.path("/deliveries/msg_00000000000000000000000000000000/replay");
    assert_error(&me.post(&app, &unknown, &json!({})).await, 404, "NotFound");
    let theirs = send_test(&app, me, &second).await;
    wait_for_message(&app, me, &second, &theirs, "delivered", 1).await;
    let crossed = endpoint.path(&format!("/deliveries/{theirs}/replay"));
    assert_error(&me.post(&app, &crossed, &json!({})).await, 404, "NotFound");
    assert_eq!(receiver.received_on("/hook").len(), 2);
}

/// After a rotation both secrets sign (the new one first) for 24 hours; then only the new one.
#[actix_web::test]
async fn a_rotated_secret_signs_beside_the_old_one_for_a_day() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let old = endpoint.secret.clone();
    let (status, answer) = me
        .post(&app, &endpoint.path("/rotate-secret"), &json!({}))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["success"], true, "{answer}");
    let new = crate::webhooks::assert_secret(&answer["secret"]);
    assert_ne!(new, old);
    let until = time(&answer["previous_secret_expires_at"]);
    let day = until - app.clock_now();
    assert!(
        (day - Duration::hours(24)).num_seconds().abs() <= 5,
        "{answer}"
    );
    let text = serde_json::to_string(&listed(&app, me, &endpoint).await).unwrap();
    assert!(!text.contains("whsec_"), "{text}");

    send_test(&app, me, &endpoint).await;
    let got = receiver.wait_for("/hook", 1).await.remove(0);
    assert_eq!(got.signatures().len(), 2, "{got:?}");
    assert_eq!(
        signed_by(&new, &got),
        [true, false],
        "the new secret's first: {got:?}"
    );
    assert_eq!(signed_by(&old, &got), [false, true], "{got:?}");

    app.clock.advance(Duration::hours(23));
    send_test(&app, me, &endpoint).await;
    let got = receiver.wait_for("/hook", 2).await.remove(1);
    assert_eq!(signed_by(&new, &got), [true, false], "{got:?}");
    assert_eq!(signed_by(&old, &got), [false, true], "{got:?}");

    app.clock.advance(Duration::hours(1) + Duration::minutes(1));
    send_test(&app, me, &endpoint).await;
    let got = receiver.wait_for("/hook", 3).await.remove(2);
    assert_eq!(
        signed_by(&new, &got),
        [true],
        "only the new secret: {got:?}"
    );
    assert_eq!(signed_by(&old, &got), [false], "{got:?}");
}

/// A rotation signs the retries of a message sent before it with the new secret too: the
/// secret is the endpoint's at the attempt.
#[actix_web::test]
async fn a_retry_after_a_rotation_is_signed_with_both_secrets() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    receiver.reply(Reply::status(503));
    let message_id = send_test(&app, me, &endpoint).await;
    wait_for_message(&app, me, &endpoint, &message_id, "pending", 1).await;
    let (status, answer) = me
        .post(&app, &endpoint.path("/rotate-secret"), &json!({}))
        .await;
    assert_eq!(status, 200, "{answer}");
    let new = answer["secret"].as_str().unwrap().to_string();
    app.clock.advance(Duration::seconds(6));
    let got = receiver.wait_for("/hook", 2).await.remove(1);
    assert_eq!(got.webhook_id(), message_id);
    assert_eq!(signed_by(&new, &got), [true, false], "{got:?}");
    assert_eq!(signed_by(&endpoint.secret, &got), [false, true], "{got:?}");
}

#[actix_web::test]
async fn deliveries_are_counted_by_outcome() {
    let (app, receiver) =
        spawn_with_receiver(|c| c.webhooks.retry_schedule_secs = vec![0, 5]).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let delivered = send_test(&app, me, &endpoint).await;
    wait_for_message(&app, me, &endpoint, &delivered, "delivered", 1).await;
    receiver.reply(Reply::status(500));
    receiver.reply(Reply::status(502));
    let failed = send_test(&app, me, &endpoint).await;
    wait_for_message(&app, me, &endpoint, &failed, "pending", 1).await;
    app.clock.advance(Duration::seconds(6));
    wait_for_message(&app, me, &endpoint, &failed, "failed", 2).await;
    let text = metrics(&app).await;
    for line in [
        "webhook_deliveries_total{outcome=\"delivered\"} 1",
        "webhook_deliveries_total{outcome=\"retrying\"} 1",
        "webhook_deliveries_total{outcome=\"failed\"} 1",
        "# TYPE webhook_first_attempt_lag_seconds histogram",
        "webhook_first_attempt_lag_seconds_count 2",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

/// `GET /api/admin/webhooks` as the operator.
async fn operator_view(app: &TestApp) -> Value {
    let response = app
        .http
        .get(app.url("/api/admin/webhooks"))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap();
    let (status, body) = crate::helpers::status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true, "{body}");
    body
}

/// The operator sees the queue and the endpoints that fail, the disabled ones with the reason.
#[actix_web::test]
async fn the_operator_sees_the_queue_and_the_failing_endpoints() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let healthy = create_ok(&app, me, &receiver.url("/healthy"), None).await;
    let failing = create_ok(&app, me, &receiver.url("/failing"), None).await;
    let view = operator_view(&app).await;
    assert_eq!(view["queue_depth"], 0, "{view}");
    assert_eq!(view["oldest_pending_at"], Value::Null, "{view}");
    assert_eq!(view["failing_endpoints"], json!([]), "{view}");

    let ok = send_test(&app, me, &healthy).await;
    wait_for_message(&app, me, &healthy, &ok, "delivered", 1).await;
    receiver.reply(Reply::status(500));
    let stuck = send_test(&app, me, &failing).await;
    let shown = wait_for_message(&app, me, &failing, &stuck, "pending", 1).await;
    let failed_at = time(&shown["attempts"][0]["at"]);
    let view = operator_view(&app).await;
    assert_eq!(view["queue_depth"], 1, "{view}");
    let text = metrics(&app).await;
    assert!(text.contains("webhook_queue_depth 1"), "{text}");
    let oldest = time(&view["oldest_pending_at"]);
    assert!(
        (oldest - time(&shown["created_at"])).num_seconds().abs() <= 1,
        "{view}"
    );
    let listed = view["failing_endpoints"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{view}");
    let entry = &listed[0];
    assert_eq!(entry["id"], failing.id.as_str(), "{view}");
    assert_eq!(entry["user_id"], json!(publisher.user_id), "{view}");
    assert_eq!(entry["url"], receiver.url("/failing"), "{view}");
    assert_eq!(entry["disabled_reason"], Value::Null, "{view}");
    assert!(
        (time(&entry["failing_since"]) - failed_at)
            .num_seconds()
            .abs()
            <= 1,
        "{view}"
    );

    receiver.reply(Reply::status(410));
    app.clock.advance(Duration::seconds(6));
    wait_for_message(&app, me, &failing, &stuck, "failed", 2).await;
    let view = operator_view(&app).await;
    assert_eq!(view["queue_depth"], 0, "{view}");
    let entry = &view["failing_endpoints"][0];
    assert_eq!(entry["id"], failing.id.as_str(), "{view}");
    assert!(
        entry["disabled_reason"]
            .as_str()
            .unwrap_or_default()
            .contains("410"),
        "{view}"
    );
    // Not for anyone else.
    let response = app
        .http
        .get(app.url("/api/admin/webhooks"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let (status, _) = me.get(&app, "/api/admin/webhooks").await;
    assert_eq!(status, 401);
}

/// Two instances on one database: each message is attempted once, by one of them.
#[actix_web::test]
async fn two_instances_deliver_each_message_once() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let _second = app.spawn_second().await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(send_test(&app, me, &endpoint).await);
    }
    eventually("every message delivered", async || {
        let log = deliveries(&app, me, &endpoint, "?limit=100").await;
        let log = log["deliveries"].as_array().unwrap().clone();
        log.len() == 20 && log.iter().all(|m| m["status"] == "delivered")
    })
    .await;
    let log = deliveries(&app, me, &endpoint, "?limit=100").await;
    for shown in log["deliveries"].as_array().unwrap() {
        assert_eq!(attempts(shown).len(), 1, "{shown}");
    }
    let mut sent: Vec<String> = receiver
        .received_on("/hook")
        .iter()
        .map(|r| r.webhook_id().to_string())
        .collect();
    sent.sort();
    ids.sort();
    assert_eq!(sent, ids, "each once");
}

/// The user can switch an endpoint off and on: off, it gets no events (a test still goes).
#[actix_web::test]
async fn an_endpoint_switched_off_gets_no_events_until_switched_on() {
    let (app, receiver, witness) = spawn_with_witness(|_| {}).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let published = Some(&["post.published"][..]);
    create_ok(&app, me, &witness.url("/witness"), published).await;
    let (status, answer) = me
        .patch(&app, &endpoint.path(""), &json!({"is_active": false}))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["webhook"]["is_active"], false, "{answer}");
    publish(&app, &publisher, "while off").await;
    witness.wait_for("/witness", 1).await;
    assert!(messages(&app, me, &endpoint).await.is_empty());
    let checked = send_test(&app, me, &endpoint).await;
    wait_for_message(&app, me, &endpoint, &checked, "delivered", 1).await;

    let (status, answer) = me
        .patch(&app, &endpoint.path(""), &json!({"is_active": true}))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["webhook"]["is_active"], true, "{answer}");
    publish(&app, &publisher, "on again").await;
    let got = receiver.wait_for_event("/hook", "post.published").await;
    assert_eq!(signed_by(&endpoint.secret, &got), [true]);
    assert_eq!(
        receiver.received_on("/hook").len(),
        2,
        "{:?}",
        receiver.received()
    );
}

/// A deleted endpoint's pending retries are not sent: a message due after them reaches the
/// other endpoint, theirs never come.
#[actix_web::test]
async fn a_deleted_endpoints_retries_are_not_sent() {
    let (app, receiver, witness) = spawn_with_witness(|_| {}).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let other = create_ok(&app, me, &witness.url("/witness"), None).await;
    receiver.reply(Reply::status(500));
    let message_id = send_test(&app, me, &endpoint).await;
    wait_for_message(&app, me, &endpoint, &message_id, "pending", 1).await;
    let (status, answer) = me.delete(&app, &endpoint.path("")).await;
    assert_eq!((status, answer), (200, json!({"success": true})));
    let (status, _) = me.get(&app, &endpoint.path("/deliveries")).await;
    assert_eq!(status, 404);

    app.clock.advance(Duration::seconds(6));
    let later = send_test(&app, me, &other).await;
    wait_for_message(&app, me, &other, &later, "delivered", 1).await;
    assert_eq!(
        receiver.received_on("/hook").len(),
        1,
        "{:?}",
        receiver.received()
    );
}

/// With room for one attempt at a time, a burst of events still reaches every endpoint, each
/// message once: what a pass cannot start waits for the next.
#[actix_web::test]
async fn one_attempt_at_a_time_still_sends_every_message_once() {
    let (app, receiver) = spawn_with_receiver(|c| c.webhooks.max_in_flight = 1).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let published = Some(&["post.published"][..]);
    let first = create_ok(&app, me, &receiver.url("/first"), published).await;
    let second = create_ok(&app, me, &receiver.url("/second"), published).await;
    for n in 0..6 {
        publish(&app, &publisher, &format!("burst {n}")).await;
    }
    for endpoint in [&first, &second] {
        eventually("every message delivered", async || {
            let log = messages(&app, me, endpoint).await;
            log.len() == 6 && log.iter().all(|m| m["status"] == "delivered")
        })
        .await;
        for shown in messages(&app, me, endpoint).await {
            assert_eq!(attempts(&shown).len(), 1, "{shown}");
        }
    }
    for path in ["/first", "/second"] {
        let mut ids: Vec<String> = receiver
            .received_on(path)
            .iter()
            .map(|r| r.webhook_id().to_string())
            .collect();
        assert_eq!(ids.len(), 6, "{path}: {:?}", receiver.received());
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 6, "{path}: each message once");
    }
}

/// An event still in the outbox after its messages were made (a fan-out cut off before it
/// removed the event, or two instances taking it at once) is fanned out again without a
/// second message: the receiver gets it once.
#[actix_web::test]
async fn an_event_fanned_out_twice_is_delivered_once() {
    use sea_orm::ActiveModelTrait;
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let publisher = app.publisher("facebook", "pro").await;
    let me = Caller::Key(&publisher.key);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let event = entity::webhook_event::Model {
        id: uuid::Uuid::new_v4(),
        user_id: publisher.user_id,
        event_type: "account.invalid".into(),
        subject_id: publisher.account.id,
        status: None,
        post_id: None,
        result: None,
        published_at: None,
        error_code: None,
        error_message: None,
        reason: Some("The token was revoked".into()),
        expires_at: None,
        occurred_at: app.clock_now(),
    };
    let db = app.state.store.connection();
    for round in 1..=2 {
        entity::webhook_event::ActiveModel::from(event.clone())
            .insert(db)
            .await
            .unwrap();
        eventually("the event fanned out", async || {
            use sea_orm::EntityTrait;
            entity::webhook_event::Entity::find_by_id(event.id)
                .one(db)
                .await
                .unwrap()
                .is_none()
        })
        .await;
        let log = messages(&app, me, &endpoint).await;
        assert_eq!(log.len(), 1, "round {round}: {log:?}");
        assert_eq!(log[0]["event"], "account.invalid", "{log:?}");
    }
    receiver.wait_for_event("/hook", "account.invalid").await;
    eventually("the message delivered", async || {
        messages(&app, me, &endpoint).await[0]["status"] == "delivered"
    })
    .await;
    assert_eq!(
        receiver.received_on("/hook").len(),
        1,
        "{:?}",
        receiver.received()
    );
}

/// A message a dead instance had claimed (its lease far away) is delivered by another within
/// the takeover time, not when that lease runs out.
#[actix_web::test]
async fn a_dead_instances_claimed_message_is_delivered_by_another() {
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, sea_query::Expr};
    let (app, receiver) = spawn_with_receiver(|c| c.cluster.takeover_secs = 3).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let id = send_test(&app, me, &endpoint).await;
    eventually("the first delivery", async || {
        receiver.received_on("/hook").len() == 1
    })
    .await;
    // As if an instance had claimed it for another attempt, for an hour, and died.
    let now = app.clock_now();
    entity::webhook_message::Entity::update_many()
        .col_expr(
            entity::webhook_message::Column::Status,
            Expr::value("pending"),
        )
        .col_expr(
            entity::webhook_message::Column::ClaimToken,
            Expr::value("dead-host:5:ww 0123456789abcdef"),
        )
        .col_expr(
            entity::webhook_message::Column::LeaseUntil,
            Expr::value(now + Duration::hours(1)),
        )
        .col_expr(
            entity::webhook_message::Column::NextAttemptAt,
            Expr::value(now),
        )
        .filter(entity::webhook_message::Column::Id.eq(id.as_str()))
        .exec(app.state.store.connection())
        .await
        .unwrap();
    let started = std::time::Instant::now();
    eventually("the dead instance's attempt made by this one", async || {
        receiver.received_on("/hook").len() == 2
    })
    .await;
    assert!(
        started.elapsed() < StdDuration::from_secs(60),
        "well inside the claim's hour: {:?}",
        started.elapsed()
    );
    let sent: Vec<String> = receiver
        .received_on("/hook")
        .iter()
        .map(|r| r.webhook_id().to_string())
        .collect();
    assert_eq!(
        sent,
        [id.clone(), id],
        "the same message, with its webhook-id"
    );
}
