//! Webhook deliveries checked by a verifier nobody here wrote: the PyPI package
//! `standardwebhooks`, inside the receiver `.ci/webhook-verifier/receiver.py`, which `.ci/webhooks`
//! installs and points this test at. A scenario of events (a test event, a published post, a
//! failed post, a delivery answered 500 and retried, a replay, a secret rotation) must reach the
//! receiver, every attempt the delivery log lists must have arrived there, and each must verify.
//!
//! Runs only when `WEBHOOK_VERIFIER_PYTHON` (the virtual environment's interpreter) is set;
//! `.ci/webhooks` sets it and `WEBHOOK_VERIFIER_SCRIPT` (the receiver).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use reqwest::Client;
use serde_json::{Value, json};
use service_sim::state::{FaultKind, FaultSpec};
use uuid::Uuid;

use crate::helpers::{Publisher, TestApp, eventually, fault, set_fault, status_and_json};

/// What the receiver answers a delivery it was told to fail (the attempt's `response`).
const FORCED_FAILURE: &str = "forced failure";

fn var(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} must be set with WEBHOOK_VERIFIER_PYTHON"))
}

/// The receiver, a child process stopped when the test ends (passed or failed).
struct Receiver {
    child: Child,
    port: u16,
    http: Client,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    /// Starts the receiver on a free port, which it prints as its first line once it listens.
    fn start(python: &str, script: &str) -> Self {
        let mut child = Command::new(python)
            .args([script, "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {python} {script}: {e}"));
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the receiver did not print its port: {line:?}"));
        Self {
            child,
            port,
            http: Client::new(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    async fn control(&self, path: &str, body: Value) {
        let response = self.http.post(self.url(path)).json(&body).send().await;
        assert_eq!(response.unwrap().status(), 204, "receiver {path}");
    }

    /// The secrets each delivery is verified with, each on its own, in this order.
    async fn set_secrets(&self, secrets: &[&str]) {
        self.control("/secrets", json!({ "secrets": secrets }))
            .await;
    }

    /// Makes the next `count` deliveries of `event` fail with a 500.
    async fn fail_next(&self, count: u32, event: &str) {
        self.control("/fail-next", json!({ "count": count, "type": event }))
            .await;
    }

    /// Every delivery the receiver saw, in arrival order.
    async fn records(&self) -> Vec<Value> {
        let results: Value = self
            .http
            .get(self.url("/results"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        results["deliveries"].as_array().unwrap().clone()
    }

    /// The deliveries of one message (by `webhook-id`), in arrival order.
    async fn records_of(&self, message_id: &str) -> Vec<Value> {
        let records = self.records().await;
        records
            .into_iter()
            .filter(|record| record["webhook_id"] == message_id)
            .collect()
    }

    /// Waits until the message's `attempts`-th delivery has arrived and was answered 204; its
    /// deliveries, which number exactly `attempts`.
    async fn delivered(&self, message_id: &str, attempts: usize) -> Vec<Value> {
        eventually(
            &format!("delivery {attempts} of {message_id}"),
            async || {
                let records = self.records_of(message_id).await;
                records.len() >= attempts && records[attempts - 1]["answered"] == 204
            },
        )
        .await;
        let records = self.records_of(message_id).await;
        assert_eq!(records.len(), attempts, "{records:#?}");
        records
    }

    /// Waits for the delivery of `event` about the post `post_id`; its record.
    async fn post_event(&self, event: &str, post_id: &str) -> Value {
        let matches = |record: &Value| {
            let body: Value = serde_json::from_str(record["body"].as_str().unwrap()).unwrap();
            record["type"] == event && body["data"]["post_submission_id"] == post_id
        };
        eventually(&format!("{event} for {post_id}"), async || {
            self.records().await.iter().any(matches)
        })
        .await;
        let records = self.records().await;
        records.into_iter().find(matches).unwrap()
    }
}

/// One webhook endpoint, managed with an API key (in the header every API call sends it in).
struct Endpoint<'a> {
    app: &'a TestApp,
    key: String,
    id: String,
}

impl Endpoint<'_> {
    /// Registers `url` for every event; the endpoint and its secret.
    async fn create<'a>(app: &'a TestApp, key: &str, url: &str) -> (Endpoint<'a>, String) {
        let response = app
            .http
            .post(app.url("/api/webhooks"))
            .header("service-api-key", key)
            .json(&json!({ "url": url, "description": "standardwebhooks receiver" }))
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(status, 201, "{body}");
        let secret = body["secret"].as_str().unwrap().to_string();
        // `whsec_` and the standard base64 of 32 bytes, padded.
        assert!(secret.starts_with("whsec_") && secret.len() == 50, "{body}");
        let endpoint = Endpoint {
            app,
            key: key.to_string(),
            id: body["webhook"]["id"].as_str().unwrap().to_string(),
        };
        (endpoint, secret)
    }

    /// `POST` to the endpoint's `path` (below `/api/webhooks/{id}`): status and body.
    async fn post(&self, path: &str) -> (u16, Value) {
        let url = self.app.url(&format!("/api/webhooks/{}{path}", self.id));
        let response = self
            .app
            .http
            .post(url)
            .header("service-api-key", &self.key)
            .send();
        status_and_json(response.await.unwrap()).await
    }

    /// Queues a `webhook.test` message; its id.
    async fn test(&self) -> String {
        let (status, body) = self.post("/test").await;
        assert_eq!(status, 202, "{body}");
        body["message_id"].as_str().unwrap().to_string()
    }

    /// Attempts a message again.
    async fn replay(&self, message_id: &str) {
        let (status, body) = self.post(&format!("/deliveries/{message_id}/replay")).await;
        assert_eq!(status, 202, "{body}");
        assert_eq!(body["message_id"], message_id, "{body}");
    }

    /// Rotates the secret; the replacement.
    async fn rotate(&self) -> String {
        let (status, body) = self.post("/rotate-secret").await;
        assert_eq!(status, 200, "{body}");
        assert!(body["previous_secret_expires_at"].is_string(), "{body}");
        let secret = body["secret"].as_str().unwrap().to_string();
        assert!(secret.starts_with("whsec_") && secret.len() == 50, "{body}");
        secret
    }

    /// The delivery log, newest first.
    async fn deliveries(&self) -> Vec<Value> {
        let path = format!("/api/webhooks/{}/deliveries?limit=100", self.id);
        let response = self
            .app
            .http
            .get(self.app.url(&path))
            .header("service-api-key", &self.key);
        let (status, body) = status_and_json(response.send().await.unwrap()).await;
        assert_eq!(status, 200, "{body}");
        body["deliveries"].as_array().unwrap().clone()
    }
}

/// Publishes `text` for `publisher` to `account` (one of the publisher's); the answer's status
/// and `post_submission_id`.
async fn publish(app: &TestApp, publisher: &Publisher, account: Uuid, text: &str) -> (u16, String) {
    let mut request = publisher.body(json!({ "text": text }));
    request["post"]["accountId"] = json!(account);
    let (status, body) = app.post(&publisher.key, &request).await;
    let id = body["data"]["post_submission_id"]
        .as_str()
        .or(body["post_submission_id"].as_str())
        .unwrap_or_else(|| panic!("no post_submission_id: {body}"));
    (status, id.to_string())
}

/// Waits for `event` about the post `id`; its `data` must be the post resource as
/// `GET /v2/posts/{id}` reads it (the outcome is final: nothing changed since the event).
async fn expect_post_event(app: &TestApp, receiver: &Receiver, key: &str, event: &str, id: &str) {
    let record = receiver.post_event(event, id).await;
    let response = app.http.get(app.url(&format!("/v2/posts/{id}")));
    let response = response
        .header("service-api-key", key)
        .send()
        .await
        .unwrap();
    let (status, resource) = status_and_json(response).await;
    assert_eq!(status, 200, "{resource}");
    assert_eq!(body_of(&record)["data"], resource["post"], "{record:#?}");
}

/// The parsed body of a delivery.
fn body_of(record: &Value) -> Value {
    serde_json::from_str(record["body"].as_str().unwrap()).unwrap()
}

/// Whether `standardwebhooks` accepted the delivery with at least one configured secret.
fn verified(record: &Value) -> bool {
    record["verified"]
        .as_array()
        .is_some_and(|results| results.contains(&json!(true)))
}

#[actix_web::test]
async fn every_delivery_verifies_with_the_standard_webhooks_package() {
    let Ok(python) = std::env::var("WEBHOOK_VERIFIER_PYTHON") else {
        eprintln!("skipped: WEBHOOK_VERIFIER_PYTHON is not set (`bash .ci/webhooks` sets it)");
        return;
    };
    let receiver = Receiver::start(&python, &var("WEBHOOK_VERIFIER_SCRIPT"));
    let port = receiver.port;
    // The system clock: the verifier refuses a `webhook-timestamp` more than 5 minutes off its own.
    let app = TestApp::spawn_on_system_clock(|config| {
        config.webhooks.allow_hosts = vec![format!("127.0.0.1:{port}")];
        config.webhooks.poll_interval_ms = 50;
        config.webhooks.retry_schedule_secs = vec![0, 1, 1];
    })
    .await;
    let publisher = app.publisher("facebook", "pro").await;
    let hook_url = receiver.url("/hook/ci");
    let (endpoint, secret) = Endpoint::create(&app, &publisher.key, &hook_url).await;
    receiver.set_secrets(&[&secret]).await;

    let test_id = endpoint.test().await;
    let test = &receiver.delivered(&test_id, 1).await[0];
    assert_eq!(test["type"], "webhook.test", "{test:#?}");
    assert_eq!(
        body_of(test)["data"]["webhook_id"],
        endpoint.id,
        "{test:#?}"
    );

    // An account named beyond ASCII: the signature covers the body's exact UTF-8 bytes, and
    // the post resource in the body carries the name.
    let named = app
        .connect(publisher.user_id, "facebook", "Café 台北 ✓")
        .await;
    let (status, published) = publish(
        &app,
        &publisher,
        named.account.id,
        "delivered to a verifier",
    )
    .await;
    assert_eq!(status, 200);
    expect_post_event(
        &app,
        &receiver,
        &publisher.key,
        "post.published",
        &published,
    )
    .await;

    set_fault(&app.sim, &publisher.sim, fault(FaultKind::Permission));
    let account = publisher.account.id;
    let (status, failed) = publish(&app, &publisher, account, "refused by the platform").await;
    assert_eq!(status, 403);
    set_fault(&app.sim, &publisher.sim, FaultSpec::default());
    expect_post_event(&app, &receiver, &publisher.key, "post.failed", &failed).await;

    // A 500, then the retry on the schedule: the same message, id and bytes.
    receiver.fail_next(1, "webhook.test").await;
    let retried_id = endpoint.test().await;
    let retried = receiver.delivered(&retried_id, 2).await;
    let answered: Vec<&Value> = retried.iter().map(|r| &r["answered"]).collect();
    assert_eq!(answered, [&json!(500), &json!(204)], "{retried:#?}");
    assert_eq!(retried[0]["body_sha256"], retried[1]["body_sha256"]);
    assert!(
        retried[0]["timestamp"].as_str() <= retried[1]["timestamp"].as_str(),
        "each attempt is signed at its own time: {retried:#?}"
    );

    // A replay of a delivered message: the same id and bytes again.
    endpoint.replay(&test_id).await;
    let replayed = receiver.delivered(&test_id, 2).await;
    assert_eq!(replayed[0]["body_sha256"], replayed[1]["body_sha256"]);

    // After a rotation both secrets sign, the replacement first: a receiver holding either one
    // verifies.
    let rotated = endpoint.rotate().await;
    assert_ne!(rotated, secret);
    receiver.set_secrets(&[&rotated, &secret]).await;
    let after_id = endpoint.test().await;
    let after = &receiver.delivered(&after_id, 1).await[0];
    assert_eq!(after["verified"], json!([true, true]), "{after:#?}");
    assert_eq!(
        after["verified_by_signature"],
        json!([[true, false], [false, true]]),
        "one signature per secret, the replacement's first: {after:#?}"
    );

    let deliveries = settled_log(&endpoint, 5).await;
    let mut events: Vec<&str> = deliveries
        .iter()
        .map(|d| d["event"].as_str().unwrap())
        .collect();
    events.sort_unstable();
    assert_eq!(
        events,
        [
            "post.failed",
            "post.published",
            "webhook.test",
            "webhook.test",
            "webhook.test"
        ],
        "{deliveries:#?}"
    );
    audit(&deliveries, &receiver.records().await);
}

/// The delivery log once it lists `count` messages, none of them pending.
async fn settled_log(endpoint: &Endpoint<'_>, count: usize) -> Vec<Value> {
    eventually("every message settled in the delivery log", async || {
        let deliveries = endpoint.deliveries().await;
        deliveries.len() == count && deliveries.iter().all(|d| d["status"] != "pending")
    })
    .await;
    endpoint.deliveries().await
}

/// Every attempt the log lists reached the receiver, and the receiver saw nothing else; each
/// verified with `standardwebhooks`; the attempts of one message carry its id and its bytes; the
/// log records what the receiver answered.
fn audit(deliveries: &[Value], records: &[Value]) {
    let mut by_message: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for record in records {
        let id = record["webhook_id"].as_str().unwrap_or_default();
        by_message.entry(id).or_default().push(record);
    }
    for record in records {
        assert!(verified(record), "refused by standardwebhooks: {record:#?}");
        let id = record["webhook_id"].as_str().unwrap_or_default();
        let hex = id.strip_prefix("msg_").unwrap_or_default();
        assert!(
            hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
            "webhook-id {id:?}"
        );
        let content_type = record["content_type"].as_str().unwrap_or_default();
        assert!(content_type.starts_with("application/json"), "{record:#?}");
        let agent = record["user_agent"].as_str().unwrap_or_default();
        assert!(agent.starts_with("social-service-webhooks/"), "{record:#?}");
    }
    for delivery in deliveries {
        let id = delivery["message_id"].as_str().unwrap();
        let seen = by_message.remove(id).unwrap_or_default();
        let attempts = delivery["attempts"].as_array().unwrap();
        assert_eq!(
            attempts.len(),
            seen.len(),
            "attempts listed and deliveries received differ: {delivery:#?} {seen:#?}"
        );
        assert_eq!(delivery["status"], "delivered", "{delivery:#?}");
        let mut listed: Vec<u64> = attempts
            .iter()
            .map(|a| a["http_status"].as_u64().unwrap_or(0))
            .collect();
        let mut answered: Vec<u64> = seen
            .iter()
            .map(|r| r["answered"].as_u64().unwrap())
            .collect();
        listed.sort_unstable();
        answered.sort_unstable();
        assert_eq!(listed, answered, "{delivery:#?} {seen:#?}");
        for attempt in attempts.iter().filter(|a| a["http_status"] == 500) {
            assert_eq!(attempt["response"], FORCED_FAILURE, "{attempt:#?}");
        }
        for record in &seen {
            assert_eq!(record["type"], delivery["event"], "{record:#?}");
            assert_eq!(record["body_sha256"], seen[0]["body_sha256"], "{seen:#?}");
        }
    }
    assert!(
        by_message.is_empty(),
        "deliveries of messages the log does not list: {by_message:#?}"
    );
}
