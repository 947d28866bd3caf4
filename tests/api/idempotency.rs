//! `Idempotency-Key` on `POST /v2/posts`: a retry with the same key and body gets the first
//! answer again (`Idempotent-Replayed: true`) and neither publishes nor counts against the plan;
//! another body is 422, a retry while the first runs is 409, a malformed key is 400; keys are
//! per user, kept in the database (another instance, a restart), and a claim whose request died
//! never publishes twice.

use futures_util::future::join_all;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use service_sim::state::FaultSpec;
use social_service::{crypto::sha256_hex_bytes, store::NewIdempotencyKey};

use crate::helpers::{Publisher, TestApp, error_body, eventually, set_fault, status_and_json};
use crate::openapi::assert_documented;

/// What a `POST /v2/posts` answered: status, the replay header, the body as sent and as JSON.
#[derive(Debug)]
struct Answer {
    status: u16,
    replayed: Option<String>,
    remaining: Option<i64>,
    retry_after: Option<String>,
    text: String,
    body: Value,
}

/// `POST /v2/posts` to `base` with `key` and the `Idempotency-Key` header lines `keys`.
async fn post_to(base: &str, api_key: &str, keys: &[&[u8]], body: &[u8]) -> Answer {
    let mut headers = HeaderMap::new();
    for key in keys {
        headers.append("idempotency-key", HeaderValue::from_bytes(key).unwrap());
    }
    let response = reqwest::Client::new()
        .post(format!("{base}/v2/posts"))
        .header("service-api-key", api_key)
        .header("content-type", "application/json")
        .headers(headers)
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let (replayed, retry_after) = (header("idempotent-replayed"), header("retry-after"));
    let remaining = header("x-ratelimit-remaining").map(|v| v.parse().unwrap());
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    assert_documented("post", "/v2/posts", status, &body);
    Answer {
        status,
        replayed,
        remaining,
        retry_after,
        text,
        body,
    }
}

async fn post(app: &TestApp, publisher: &Publisher, key: &str, body: &Value) -> Answer {
    let bytes = serde_json::to_vec(body).unwrap();
    post_to(&app.base, &publisher.key, &[key.as_bytes()], &bytes).await
}

/// Calls counted this period for the publisher (`GET /api/subscription/status`).
async fn used(app: &TestApp, publisher: &Publisher) -> i64 {
    let response = publisher
        .dashboard
        .client
        .get(app.url("/api/subscription/status"))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    body["api_usage"]["current_usage"].as_i64().unwrap()
}

#[actix_web::test]
async fn a_retry_gets_the_first_answer_without_publishing_or_counting_again() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "free").await;
    let body = publisher.body(json!({"text": "once"}));

    let first = post(&app, &publisher, "order-1", &body).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.replayed, None, "a first answer is not a replay");
    assert_eq!(first.remaining, Some(9), "the call is counted once");
    assert_eq!(used(&app, &publisher).await, 1);

    let again = post(&app, &publisher, "order-1", &body).await;
    assert_eq!(
        (again.status, again.text.as_str()),
        (200, first.text.as_str())
    );
    assert_eq!(again.replayed.as_deref(), Some("true"));
    assert_eq!(
        again.remaining,
        Some(9),
        "the allowance is unchanged by a replay"
    );
    assert_eq!(used(&app, &publisher).await, 1);
    assert_eq!(app.published(&publisher.sim).len(), 1);

    // Without the header, a repeat is a new post, as the spec says.
    let (status, _) = app.post(&publisher.key, &body).await;
    assert_eq!(status, 200);
    assert_eq!(app.published(&publisher.sim).len(), 2);
    assert_eq!(used(&app, &publisher).await, 2);
}

#[actix_web::test]
async fn the_quoted_and_the_bare_form_are_one_key() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let body = publisher.body(json!({"text": "quoted"}));

    let first = post(&app, &publisher, r#""8e03978e-40d5 \"q\" \\""#, &body).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let bare = post(&app, &publisher, r#"8e03978e-40d5 "q" \"#, &body).await;
    assert_eq!((bare.status, bare.text), (200, first.text));
    assert_eq!(bare.replayed.as_deref(), Some("true"));
    assert_eq!(app.published(&publisher.sim).len(), 1);
}

#[actix_web::test]
async fn the_same_key_with_another_body_is_refused() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "free").await;
    let first = post(&app, &publisher, "k", &publisher.body(json!({"text": "a"}))).await;
    assert_eq!(first.status, 200, "{}", first.text);

    let other = post(&app, &publisher, "k", &publisher.body(json!({"text": "b"}))).await;
    assert_eq!(other.status, 422);
    assert_eq!(
        other.body,
        error_body(
            "IdempotencyKeyReused",
            "This Idempotency-Key was first sent with a different request body; use a new key for a different request"
        )
    );
    assert_eq!(other.replayed, None);
    assert_eq!(app.published(&publisher.sim).len(), 1);
    assert_eq!(used(&app, &publisher).await, 1, "a refusal is not counted");
}

#[actix_web::test]
async fn malformed_keys_are_refused_before_anything_is_done() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "free").await;
    let body = serde_json::to_vec(&publisher.body(json!({"text": "never"}))).unwrap();
    let long = "k".repeat(256);
    let cases: [(&str, Vec<&[u8]>); 6] = [
        ("empty", vec![b""]),
        ("empty quoted", vec![b"\"\""]),
        ("too long", vec![long.as_bytes()]),
        ("not ASCII", vec!["clé".as_bytes()]),
        ("unterminated quote", vec![b"\"abc"]),
        ("two lines", vec![b"a", b"b"]),
    ];
    for (case, keys) in cases {
        let answer = post_to(&app.base, &publisher.key, &keys, &body).await;
        assert_eq!(answer.status, 400, "{case}: {}", answer.text);
        assert_eq!(answer.body["error"], "InvalidRequest", "{case}");
        assert!(
            answer.body["message"]
                .as_str()
                .unwrap()
                .contains("Idempotency-Key"),
            "{case}: {}",
            answer.text
        );
    }
    assert!(app.published(&publisher.sim).is_empty());
    assert_eq!(used(&app, &publisher).await, 0, "nothing was counted");
    // A 255-character key is fine.
    let longest = "k".repeat(255);
    let answer = post_to(&app.base, &publisher.key, &[longest.as_bytes()], &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
}

#[actix_web::test]
async fn two_users_may_use_the_same_key() {
    let app = TestApp::spawn().await;
    let alice = app.publisher("facebook", "pro").await;
    let bob = app.publisher("facebook", "pro").await;
    let a = post(&app, &alice, "shared", &alice.body(json!({"text": "a"}))).await;
    let b = post(&app, &bob, "shared", &bob.body(json!({"text": "b"}))).await;
    assert_eq!((a.status, b.status), (200, 200), "{} {}", a.text, b.text);
    assert_eq!(b.replayed, None);
    assert_eq!(app.published(&alice.sim).len(), 1);
    assert_eq!(app.published(&bob.sim).len(), 1);
}

#[actix_web::test]
async fn fifty_concurrent_requests_with_one_key_publish_once() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "free").await;
    // Slow enough that the requests overlap the first one.
    let slow = FaultSpec {
        latency_ms: 300,
        ..FaultSpec::default()
    };
    set_fault(&app.sim, &publisher.sim, slow);
    let body = publisher.body(json!({"text": "fifty"}));

    let answers = join_all((0..50).map(|_| post(&app, &publisher, "burst", &body))).await;
    let first: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.status == 200 && a.replayed.is_none())
        .collect();
    assert_eq!(first.len(), 1, "one request ran: {answers:#?}");
    let first_text = &first[0].text;
    for answer in &answers {
        match (answer.status, answer.replayed.as_deref()) {
            (200, None) => {}
            (200, Some("true")) => assert_eq!(&answer.text, first_text),
            (409, None) => {
                assert_eq!(
                    answer.body["error"], "IdempotencyKeyInUse",
                    "{}",
                    answer.text
                );
                let wait = answer.body["retry_after"].as_u64().unwrap();
                assert!((1..=5).contains(&wait), "{}", answer.text);
                assert_eq!(answer.retry_after, Some(wait.to_string()));
            }
            _ => panic!("unexpected answer {answer:#?}"),
        }
    }
    assert!(
        answers.iter().any(|a| a.status == 409),
        "some requests overlapped the first"
    );
    assert_eq!(app.published(&publisher.sim).len(), 1);
    assert_eq!(used(&app, &publisher).await, 1);
    let later = post(&app, &publisher, "burst", &body).await;
    assert_eq!((later.status, &later.text), (200, first_text));
    assert_eq!(later.replayed.as_deref(), Some("true"));
}

#[actix_web::test]
async fn a_kept_answer_holds_on_another_instance_of_the_database() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let body = publisher.body(json!({"text": "kept"}));
    let first = post(&app, &publisher, "restart", &body).await;
    assert_eq!(first.status, 200, "{}", first.text);

    let restarted = app.spawn_second().await;
    let bytes = serde_json::to_vec(&body).unwrap();
    let again = post_to(&restarted.base, &publisher.key, &[b"restart"], &bytes).await;
    assert_eq!((again.status, again.text), (200, first.text));
    assert_eq!(again.replayed.as_deref(), Some("true"));
    assert_eq!(app.published(&publisher.sim).len(), 1);
}

#[actix_web::test]
async fn a_refused_request_is_kept_and_replayed_too() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "free").await;
    let body = publisher.body(json!({"text": ""}));
    let first = post(&app, &publisher, "invalid", &body).await;
    assert_eq!(first.status, 400, "{}", first.text);
    let again = post(&app, &publisher, "invalid", &body).await;
    assert_eq!((again.status, &again.text), (400, &first.text));
    assert_eq!(again.replayed.as_deref(), Some("true"));
    assert_eq!(
        used(&app, &publisher).await,
        1,
        "counted once, as a refused call without a key is"
    );
}

#[actix_web::test]
async fn the_quota_refusal_is_the_same_and_leaves_the_key_free() {
    let app = TestApp::spawn_with(|c| c.usage.free_monthly_limit = 1).await;
    let publisher = app.publisher("facebook", "free").await;
    let body = publisher.body(json!({"text": "one"}));
    assert_eq!(post(&app, &publisher, "first", &body).await.status, 200);

    let (status, plain) = app.post(&publisher.key, &body).await;
    assert_eq!(status, 429);
    let keyed = post(&app, &publisher, "second", &body).await;
    assert_eq!((keyed.status, &keyed.body), (429, &plain));
    assert_eq!(keyed.remaining, Some(0));
    assert_eq!(keyed.replayed, None);

    // The refusal was not kept: the key runs once the plan allows it.
    assert_eq!(app.set_plan(publisher.user_id, "pro").await.status(), 200);
    let later = post(&app, &publisher, "second", &body).await;
    assert_eq!(later.status, 200, "{}", later.text);
    assert_eq!(later.replayed, None);
    assert_eq!(app.published(&publisher.sim).len(), 2);
}

/// A claim as an instance that died while running the request would have left it: never
/// answered, its lease over.
async fn lapsed_claim(
    app: &TestApp,
    publisher: &Publisher,
    key: &str,
    body: &[u8],
    post: uuid::Uuid,
) {
    let now = app.clock_now();
    let claim = app
        .state
        .store
        .claim_idempotency_key(NewIdempotencyKey {
            user_id: publisher.user_id,
            key: key.to_string(),
            fingerprint: sha256_hex_bytes(body),
            post_submission_id: post,
            locked_until: now - chrono::Duration::seconds(1),
            created_at: now - chrono::Duration::minutes(10),
            expires_at: now + chrono::Duration::hours(23),
        })
        .await
        .unwrap();
    assert!(matches!(claim, social_service::store::KeyClaim::Claimed(_)));
}

#[actix_web::test]
async fn a_lapsed_claim_whose_publish_started_points_at_the_post() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let body = publisher.body(json!({"text": "out already"}));
    // The dead request's publish: out on the platform, recorded in the history.
    let (status, published) = app.post(&publisher.key, &body).await;
    assert_eq!(status, 200, "{published}");
    let id = published["data"]["post_submission_id"].as_str().unwrap();
    let bytes = serde_json::to_vec(&body).unwrap();
    lapsed_claim(&app, &publisher, "died", &bytes, id.parse().unwrap()).await;

    let retry = post_to(&app.base, &publisher.key, &[b"died"], &bytes).await;
    assert_eq!(retry.status, 202, "{}", retry.text);
    assert_eq!(retry.body["error"], "PublishUnconfirmed");
    assert_eq!(retry.body["post_submission_id"], id);
    assert_eq!(retry.body["post_url"], format!("/v2/posts/{id}"));
    assert!(
        retry.body["message"]
            .as_str()
            .unwrap()
            .contains("published"),
        "{}",
        retry.text
    );
    assert_eq!(
        app.published(&publisher.sim).len(),
        1,
        "not published again"
    );
}

#[actix_web::test]
async fn a_lapsed_claim_that_started_no_publish_runs_once() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let bytes = serde_json::to_vec(&publisher.body(json!({"text": "never sent"}))).unwrap();
    let id = uuid::Uuid::now_v7();
    lapsed_claim(&app, &publisher, "died early", &bytes, id).await;

    let retry = post_to(&app.base, &publisher.key, &[b"died early"], &bytes).await;
    assert_eq!(retry.status, 200, "{}", retry.text);
    assert_eq!(retry.replayed, None);
    assert_eq!(
        retry.body["data"]["post_submission_id"],
        id.to_string(),
        "the history row the claim named"
    );
    let again = post_to(&app.base, &publisher.key, &[b"died early"], &bytes).await;
    assert_eq!((again.status, again.text), (200, retry.text));
    assert_eq!(app.published(&publisher.sim).len(), 1);
}

#[actix_web::test]
async fn a_lapsed_claim_that_scheduled_its_post_answers_as_scheduled() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let at = app.clock_now() + chrono::Duration::hours(2);
    let body = publisher.body(json!({"text": "later", "scheduledAt": at.to_rfc3339()}));
    let bytes = serde_json::to_vec(&body).unwrap();
    let id = uuid::Uuid::now_v7();
    lapsed_claim(&app, &publisher, "scheduled", &bytes, id).await;
    // What the dead request scheduled before it could answer.
    app.state
        .store
        .insert_scheduled_post_as(
            id,
            social_service::store::NewScheduledPost {
                user_id: publisher.user_id,
                account_id: publisher.account.id,
                platform: social_service::domain::plan::Platform::Facebook,
                page_name: publisher.account.display_name.clone(),
                request: body.clone(),
                content: json!({"text": "later", "media_urls": []}),
                scheduled_at: at,
            },
            app.clock_now(),
        )
        .await
        .unwrap();

    let retry = post_to(&app.base, &publisher.key, &[b"scheduled"], &bytes).await;
    assert_eq!(retry.status, 200, "{}", retry.text);
    assert_eq!(retry.body["scheduled"], true, "{}", retry.text);
    assert_eq!(retry.body["scheduledPostId"], id.to_string());
    assert_eq!(retry.replayed.as_deref(), Some("true"));
    let response = app
        .http
        .get(app.url("/api/scheduled-posts"))
        .header("service-api-key", &publisher.key)
        .send()
        .await
        .unwrap();
    let (status, listed) = status_and_json(response).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        listed["posts"].as_array().map(Vec::len),
        Some(1),
        "scheduled once: {listed}"
    );
}

#[actix_web::test]
async fn a_key_is_forgotten_by_the_sweeper_after_a_day() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let first = post(
        &app,
        &publisher,
        "day",
        &publisher.body(json!({"text": "a"})),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.text);

    app.clock.advance(chrono::Duration::hours(24));
    let counts =
        social_service::background::sweeper::sweep_once(&app.state.store, &app.state.clock)
            .await
            .unwrap();
    assert_eq!(counts.idempotency_keys, 1);
    let other = post(
        &app,
        &publisher,
        "day",
        &publisher.body(json!({"text": "b"})),
    )
    .await;
    assert_eq!(other.status, 200, "a new request: {}", other.text);
    assert_eq!(other.replayed, None);
    eventually("both posts on the platform", async || {
        app.published(&publisher.sim).len() == 2
    })
    .await;
}
