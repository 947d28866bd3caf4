//! Webhook endpoints: `POST`/`GET /api/webhooks`, `PATCH`/`DELETE /api/webhooks/{id}`, the
//! secret (shown on creation and rotation only), managed with the dashboard session or an API key
//! and never metered. What they refuse (a URL that is not a public https one, an unknown event,
//! a 21st endpoint) is a catalogue error that creates nothing, and another user's endpoint
//! answers exactly as an unknown one.
//!
//! The helpers here are shared with `webhook_delivery`.

use base64::Engine;
use reqwest::Method;
use serde_json::{Value, json};
use social_service::config::Config;

use crate::helpers::{Dashboard, TestApp, eventually, status_and_json};
use crate::webhook_receiver::Receiver;

/// Every event an endpoint can subscribe to, in the canonical order: what an endpoint created
/// without `events` (or with `[]`) subscribes to.
pub const ALL_EVENTS: [&str; 5] = [
    "post.published",
    "post.failed",
    "post.unconfirmed",
    "account.token_expiring",
    "account.invalid",
];

/// Who calls the webhook API: a signed-in dashboard user or an API key.
#[derive(Clone, Copy)]
pub enum Caller<'a> {
    Session(&'a Dashboard),
    Key(&'a str),
}

impl Caller<'_> {
    /// `method path` with an optional JSON body; status and JSON answer.
    pub async fn call(
        self,
        app: &TestApp,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let method_name = method.as_str().to_string();
        let url = app.url(path);
        let request = match self {
            Caller::Session(dashboard) => dashboard.no_redirect.request(method, url),
            Caller::Key(key) => app.http.request(method, url).header("service-api-key", key),
        };
        let request = match body {
            Some(body) => request.json(body),
            None => request,
        };
        let (status, answer) = status_and_json(request.send().await.unwrap()).await;
        if let Some(route) = route_of(path) {
            let method = method_name.to_ascii_lowercase();
            crate::openapi::assert_documented(&method, &route, status, &answer);
        }
        (status, answer)
    }

    pub async fn get(self, app: &TestApp, path: &str) -> (u16, Value) {
        self.call(app, Method::GET, path, None).await
    }

    pub async fn post(self, app: &TestApp, path: &str, body: &Value) -> (u16, Value) {
        self.call(app, Method::POST, path, Some(body)).await
    }

    pub async fn patch(self, app: &TestApp, path: &str, body: &Value) -> (u16, Value) {
        self.call(app, Method::PATCH, path, Some(body)).await
    }

    pub async fn delete(self, app: &TestApp, path: &str) -> (u16, Value) {
        self.call(app, Method::DELETE, path, None).await
    }
}

/// The documented route of a path under `/api/webhooks` (every answer there is checked against
/// the OpenAPI document).
fn route_of(path: &str) -> Option<String> {
    let path = path.split('?').next()?;
    let rest = path.strip_prefix("/api/webhooks")?;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    let route = match parts.as_slice() {
        [] => "",
        [_] => "/{id}",
        [_, "test"] => "/{id}/test",
        [_, "rotate-secret"] => "/{id}/rotate-secret",
        [_, "deliveries"] => "/{id}/deliveries",
        [_, "deliveries", _, "replay"] => "/{id}/deliveries/{message_id}/replay",
        _ => return None,
    };
    Some(format!("/api/webhooks{route}"))
}

/// A created endpoint: its id, its secret and the `webhook` object of the answer.
pub struct Endpoint {
    pub id: String,
    pub secret: String,
    pub webhook: Value,
}

impl Endpoint {
    /// The path of one of its routes (`""`, `/test`, `/rotate-secret`, `/deliveries`, ...).
    pub fn path(&self, tail: &str) -> String {
        format!("/api/webhooks/{}{tail}", self.id)
    }
}

/// The service, its simulator and a receiver the service may deliver to over plain http, with
/// the delivery actor looking for due messages every 50 ms; `adjust` changes the rest.
pub async fn spawn_with_receiver(adjust: impl FnOnce(&mut Config)) -> (TestApp, Receiver) {
    let receiver = Receiver::start().await;
    let host = receiver.host();
    let app = TestApp::spawn_with(move |config| {
        config.webhooks.allow_hosts = vec![host];
        config.webhooks.poll_interval_ms = 50;
        adjust(config);
    })
    .await;
    (app, receiver)
}

/// [`spawn_with_receiver`] with a second receiver, allowed too: a witness whose delivery shows
/// that an event's messages have all been made (an event's messages are made together).
pub async fn spawn_with_witness(adjust: impl FnOnce(&mut Config)) -> (TestApp, Receiver, Receiver) {
    let witness = Receiver::start().await;
    let host = witness.host();
    let (app, receiver) = spawn_with_receiver(move |config| {
        config.webhooks.allow_hosts.push(host);
        adjust(config);
    })
    .await;
    (app, receiver, witness)
}

/// Asserts a secret's form: `whsec_` and the standard base64 (padded) of 32 bytes.
pub fn assert_secret(secret: &Value) -> String {
    let secret = secret
        .as_str()
        .unwrap_or_else(|| panic!("no secret: {secret}"));
    let encoded = secret
        .strip_prefix("whsec_")
        .unwrap_or_else(|| panic!("{secret}"));
    let key = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap_or_else(|e| panic!("{secret}: {e}"));
    assert_eq!(key.len(), 32, "{secret}");
    secret.to_string()
}

/// `POST /api/webhooks` with `body`.
pub async fn create(app: &TestApp, caller: Caller<'_>, body: &Value) -> (u16, Value) {
    caller.post(app, "/api/webhooks", body).await
}

/// Creates an endpoint for `url` with `events` (None: the field left out), which must succeed.
pub async fn create_ok(
    app: &TestApp,
    caller: Caller<'_>,
    url: &str,
    events: Option<&[&str]>,
) -> Endpoint {
    let mut body = json!({ "url": url });
    if let Some(events) = events {
        body["events"] = json!(events);
    }
    let (status, answer) = create(app, caller, &body).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["success"], true, "{answer}");
    Endpoint {
        id: answer["webhook"]["id"].as_str().unwrap().to_string(),
        secret: assert_secret(&answer["secret"]),
        webhook: answer["webhook"].clone(),
    }
}

/// The caller's endpoints (`GET /api/webhooks`), newest first.
pub async fn list(app: &TestApp, caller: Caller<'_>) -> Vec<Value> {
    let (status, body) = caller.get(app, "/api/webhooks").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true, "{body}");
    body["webhooks"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .clone()
}

/// One endpoint as the list shows it.
pub async fn listed(app: &TestApp, caller: Caller<'_>, endpoint: &Endpoint) -> Value {
    list(app, caller)
        .await
        .into_iter()
        .find(|w| w["id"] == endpoint.id.as_str())
        .unwrap_or_else(|| panic!("{} is not listed", endpoint.id))
}

/// `POST /api/webhooks/{id}/test`, which must be accepted; the message id.
pub async fn send_test(app: &TestApp, caller: Caller<'_>, endpoint: &Endpoint) -> String {
    let (status, body) = caller.post(app, &endpoint.path("/test"), &json!({})).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["success"], true, "{body}");
    body["message_id"].as_str().unwrap().to_string()
}

/// The endpoint's delivery log (`GET .../deliveries{query}`), which must answer.
pub async fn deliveries(
    app: &TestApp,
    caller: Caller<'_>,
    endpoint: &Endpoint,
    query: &str,
) -> Value {
    let path = endpoint.path(&format!("/deliveries{query}"));
    let (status, body) = caller.get(app, &path).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true, "{body}");
    body
}

/// The messages of the log's first page.
pub async fn messages(app: &TestApp, caller: Caller<'_>, endpoint: &Endpoint) -> Vec<Value> {
    deliveries(app, caller, endpoint, "").await["deliveries"]
        .as_array()
        .unwrap()
        .clone()
}

/// One message of the log.
pub async fn message(
    app: &TestApp,
    caller: Caller<'_>,
    endpoint: &Endpoint,
    message_id: &str,
) -> Value {
    messages(app, caller, endpoint)
        .await
        .into_iter()
        .find(|m| m["message_id"] == message_id)
        .unwrap_or_else(|| panic!("{message_id} is not in the log"))
}

/// Waits until the log shows `message_id` with `status` and `attempts` attempts; returns it.
pub async fn wait_for_message(
    app: &TestApp,
    caller: Caller<'_>,
    endpoint: &Endpoint,
    message_id: &str,
    status: &str,
    attempts: usize,
) -> Value {
    let seen = async || message(app, caller, endpoint, message_id).await;
    eventually(
        &format!("{message_id} {status} after {attempts} attempt(s)"),
        async || {
            let shown = seen().await;
            shown["status"] == status
                && shown["attempts"].as_array().map(Vec::len) == Some(attempts)
        },
    )
    .await;
    seen().await
}

/// Asserts a catalogue error: `status` and the code `code`.
pub fn assert_error(answer: &(u16, Value), status: u16, code: &str) {
    let (got, body) = answer;
    assert_eq!(
        (*got, body["error"].as_str()),
        (status, Some(code)),
        "{body}"
    );
    assert_eq!(body["success"], false, "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

/// Parses an RFC 3339 time of an answer.
pub fn time(value: &Value) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(value.as_str().unwrap_or_else(|| panic!("{value}")))
        .unwrap_or_else(|e| panic!("{value}: {e}"))
        .to_utc()
}

#[actix_web::test]
async fn endpoints_are_created_listed_and_deleted_with_the_session() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);

    let url = receiver.url("/hooks/one?source=social");
    let body = json!({"url": url, "description": "orders"});
    let (status, answer) = create(&app, me, &body).await;
    assert_eq!(status, 201, "{answer}");
    let secret = assert_secret(&answer["secret"]);
    let first = answer["webhook"].clone();
    let created_at = time(&first["created_at"]);
    assert!(
        (created_at - app.clock_now()).num_seconds().abs() <= 1,
        "{first}"
    );
    assert_eq!(
        answer,
        json!({
            "success": true,
            "webhook": {
                "id": first["id"],
                "url": url,
                "events": ALL_EVENTS,
                "description": "orders",
                "is_active": true,
                "disabled_reason": null,
                "created_at": first["created_at"],
            },
            "secret": secret,
        })
    );
    let first_id = first["id"].as_str().unwrap().to_string();
    assert!(!first_id.is_empty());

    app.clock.advance(chrono::Duration::seconds(1));
    let (status, answer) = create(
        &app,
        me,
        &json!({"url": receiver.url("/two"), "events": []}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let second = answer["webhook"].clone();
    assert_eq!(second["events"], json!(ALL_EVENTS), "{answer}");
    assert_eq!(second["description"], Value::Null, "{answer}");
    let second_secret = assert_secret(&answer["secret"]);
    assert_ne!(secret, second_secret, "each endpoint has its own secret");

    // Newest first, exactly as created, and no secret in sight.
    let response = dashboard
        .client
        .get(app.url("/api/webhooks"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(!text.contains("whsec_"), "a listed secret: {text}");
    assert!(!text.contains("secret"), "a listed secret: {text}");
    let shown: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(shown, json!({"success": true, "webhooks": [second, first]}));

    let (status, answer) = me.delete(&app, &format!("/api/webhooks/{first_id}")).await;
    assert_eq!((status, answer), (200, json!({"success": true})));
    assert_eq!(list(&app, me).await, [second]);
    let again = me.delete(&app, &format!("/api/webhooks/{first_id}")).await;
    assert_error(&again, 404, "NotFound");
    // Nobody else sees them.
    let other = app.sign_in("other@example.com").await;
    assert!(list(&app, Caller::Session(&other)).await.is_empty());
}

#[actix_web::test]
async fn an_api_key_manages_endpoints_and_is_never_metered() {
    let (app, receiver) = spawn_with_receiver(|c| c.usage.free_monthly_limit = 2).await;
    let publisher = app.publisher("facebook", "free").await;
    let key = Caller::Key(&publisher.key);
    let session = Caller::Session(&publisher.dashboard);

    let endpoint = create_ok(&app, key, &receiver.url("/hook"), Some(&["post.failed"])).await;
    assert_eq!(endpoint.webhook["events"], json!(["post.failed"]));
    // The same user's endpoints, whichever way they were created.
    assert_eq!(
        list(&app, session).await,
        std::slice::from_ref(&endpoint.webhook)
    );
    assert_eq!(
        list(&app, key).await,
        std::slice::from_ref(&endpoint.webhook)
    );

    let (status, answer) = key
        .patch(&app, &endpoint.path(""), &json!({"description": "by key"}))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["webhook"]["description"], "by key", "{answer}");
    let message_id = send_test(&app, key, &endpoint).await;
    receiver.wait_for("/hook", 1).await;
    wait_for_message(&app, key, &endpoint, &message_id, "delivered", 1).await;
    let (status, answer) = key
        .post(&app, &endpoint.path("/rotate-secret"), &json!({}))
        .await;
    assert_eq!(status, 200, "{answer}");
    for _ in 0..3 {
        list(&app, key).await;
    }

    // Far more calls than the plan's allowance of 2, none counted.
    let status: Value = publisher
        .dashboard
        .client
        .get(app.url("/api/subscription/status"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(status["api_usage"]["current_usage"], 0, "{status}");
    let (status, answer) = key.delete(&app, &endpoint.path("")).await;
    assert_eq!((status, answer), (200, json!({"success": true})));
    assert!(list(&app, session).await.is_empty());

    // Neither a session nor a key; a key that is no key.
    let response = app.http.get(app.url("/api/webhooks")).send().await.unwrap();
    assert_eq!(response.status(), 401);
    let response = app
        .http
        .post(app.url("/api/webhooks"))
        .json(&json!({"url": receiver.url("/hook")}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let (status, _) = Caller::Key("sk_not_a_key").get(&app, "/api/webhooks").await;
    assert_eq!(status, 401);
    assert!(list(&app, session).await.is_empty());
}

/// The interface names `Authorization: Bearer <api key>` as the key's other form.
#[actix_web::test]
async fn events_are_checked_collapsed_and_kept_in_the_canonical_order() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);
    let url = receiver.url("/hook");

    let some = [
        "webhook.test",
        "account.invalid",
        "post.published",
        "account.invalid",
    ];
    let endpoint = create_ok(&app, me, &url, Some(&some)).await;
    assert_eq!(
        endpoint.webhook["events"],
        json!(["post.published", "account.invalid", "webhook.test"])
    );
    let only_test = create_ok(&app, me, &url, Some(&["webhook.test"])).await;
    assert_eq!(only_test.webhook["events"], json!(["webhook.test"]));

    for events in [
        json!(["post.deleted"]),
        json!(["post.published", "Post.Failed"]),
        json!([""]),
        json!(["*"]),
        json!("post.published"),
        json!([1]),
    ] {
        let answer = create(&app, me, &json!({"url": url, "events": events})).await;
        assert_eq!(answer.0, 400, "{events}: {}", answer.1);
        assert_eq!(answer.1["success"], false, "{events}: {}", answer.1);
    }
    let unknown = create(&app, me, &json!({"url": url, "events": ["post.deleted"]})).await;
    assert_error(&unknown, 400, "InvalidRequest");
    assert_eq!(list(&app, me).await.len(), 2, "nothing else created");

    // Changing them: the same rules.
    let (status, answer) = me
        .patch(
            &app,
            &endpoint.path(""),
            &json!({"events": ["post.failed", "post.failed"]}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["webhook"]["events"],
        json!(["post.failed"]),
        "{answer}"
    );
    let refused = me
        .patch(
            &app,
            &endpoint.path(""),
            &json!({"events": ["post.failed", "nope"]}),
        )
        .await;
    assert_error(&refused, 400, "InvalidRequest");
    let (status, answer) = me
        .patch(&app, &endpoint.path(""), &json!({"events": []}))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["webhook"]["events"], json!(ALL_EVENTS), "{answer}");
    assert_eq!(
        listed(&app, me, &endpoint).await["events"],
        json!(ALL_EVENTS)
    );
}

/// URLs a webhook may not go to: not https (unless the host is allow-listed), with credentials,
/// not absolute, a private, loopback or link-local address written out or behind a name, over
/// 2048 characters. Each is refused and nothing is created.
#[actix_web::test]
async fn urls_that_are_not_public_https_are_refused_and_nothing_is_created() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);

    let prefix = receiver.url("/");
    let longest = format!("{prefix}{}", "a".repeat(2048 - prefix.len()));
    assert_eq!(longest.len(), 2048);
    let too_long = format!("{longest}a");
    let refused = [
        "http://93.184.216.34/hook".to_string(),
        "https://10.1.2.3/hook".into(),
        "https://172.16.0.1/hook".into(),
        "https://192.168.1.10/hook".into(),
        "https://127.0.0.1/hook".into(),
        "https://[::1]/hook".into(),
        "https://169.254.169.254/latest/meta-data".into(),
        "https://[fe80::1]/hook".into(),
        "https://0.0.0.0/hook".into(),
        "https://localhost/hook".into(),
        "https://localhost:8443/hook".into(),
        // The receiver's address on another port is not allow-listed.
        "http://127.0.0.1:1/hook".into(),
        format!("https://user:secret@{}/hook", receiver.host()),
        "https://user:secret@93.184.216.34/hook".into(),
        "ftp://93.184.216.34/hook".into(),
        "/hook".into(),
        "not a url".into(),
        String::new(),
        too_long,
    ];
    for url in &refused {
        let answer = create(&app, me, &json!({ "url": url })).await;
        assert_error(&answer, 400, "InvalidRequest");
    }
    let description = create(
        &app,
        me,
        &json!({"url": receiver.url("/hook"), "description": "d".repeat(501)}),
    )
    .await;
    assert_error(&description, 400, "InvalidRequest");
    for body in [json!({}), json!({"url": 5}), json!(["not an object"])] {
        assert_error(&create(&app, me, &body).await, 400, "InvalidRequest");
    }
    assert!(list(&app, me).await.is_empty(), "nothing created");

    // The limits themselves are allowed, and so is a public address over https.
    let at_limit = create_ok(&app, me, &longest, None).await;
    assert_eq!(at_limit.webhook["url"], longest.as_str());
    let (status, answer) = create(
        &app,
        me,
        &json!({"url": receiver.url("/hook"), "description": "d".repeat(500)}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    create_ok(&app, me, "https://93.184.216.34/hook", None).await;
    assert_eq!(list(&app, me).await.len(), 3);

    // A change of URL is checked the same way and leaves the endpoint as it was.
    for url in [
        "https://127.0.0.1/hook",
        "http://93.184.216.34/hook",
        "https://localhost/x",
    ] {
        let answer = me
            .patch(&app, &at_limit.path(""), &json!({ "url": url }))
            .await;
        assert_error(&answer, 400, "InvalidRequest");
    }
    assert_eq!(listed(&app, me, &at_limit).await, at_limit.webhook);
    let (status, answer) = me
        .patch(
            &app,
            &at_limit.path(""),
            &json!({"url": receiver.url("/moved")}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["webhook"]["url"], receiver.url("/moved"), "{answer}");
}

#[actix_web::test]
async fn a_twenty_first_endpoint_is_refused() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);
    let mut endpoints = Vec::new();
    for n in 0..20 {
        endpoints.push(create_ok(&app, me, &receiver.url(&format!("/hook/{n}")), None).await);
    }
    let answer = create(&app, me, &json!({"url": receiver.url("/hook/20")})).await;
    assert_error(&answer, 400, "InvalidRequest");
    let shown = list(&app, me).await;
    assert_eq!(shown.len(), 20);
    assert!(shown.iter().all(|w| w["url"] != receiver.url("/hook/20")));
    // The limit is per user.
    let other = app.sign_in("other@example.com").await;
    create_ok(&app, Caller::Session(&other), &receiver.url("/other"), None).await;
    // One deleted, one more fits.
    let (status, _) = me.delete(&app, &endpoints[0].path("")).await;
    assert_eq!(status, 200);
    create_ok(&app, me, &receiver.url("/hook/20"), None).await;
    assert_eq!(list(&app, me).await.len(), 20);
}

/// Every route of another user's endpoint answers as for an id that does not exist, and
/// changes nothing.
#[actix_web::test]
async fn another_users_endpoint_is_not_found_like_an_unknown_one() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let owner = app.publisher("facebook", "pro").await;
    let stranger = app.publisher("facebook", "pro").await;
    let mine = Caller::Key(&owner.key);
    let endpoint = create_ok(&app, mine, &receiver.url("/owner"), None).await;
    let message_id = send_test(&app, mine, &endpoint).await;
    wait_for_message(&app, mine, &endpoint, &message_id, "delivered", 1).await;

    let unknown = uuid::Uuid::now_v7().to_string();
    let routes = |id: &str| {
        vec![
            (Method::DELETE, format!("/api/webhooks/{id}"), None),
            (
                Method::POST,
                format!("/api/webhooks/{id}/test"),
                Some(json!({})),
            ),
            (
                Method::POST,
                format!("/api/webhooks/{id}/rotate-secret"),
                Some(json!({})),
            ),
            (
                Method::PATCH,
                format!("/api/webhooks/{id}"),
                Some(json!({"is_active": false, "description": "mine now"})),
            ),
            (Method::GET, format!("/api/webhooks/{id}/deliveries"), None),
            (
                Method::POST,
                format!("/api/webhooks/{id}/deliveries/{message_id}/replay"),
                Some(json!({})),
            ),
        ]
    };
    for caller in [
        Caller::Key(&stranger.key),
        Caller::Session(&stranger.dashboard),
    ] {
        for ((method, theirs, body), (_, nobodys, _)) in
            routes(&endpoint.id).into_iter().zip(routes(&unknown))
        {
            let answer = caller
                .call(&app, method.clone(), &theirs, body.as_ref())
                .await;
            assert_error(&answer, 404, "NotFound");
            let expected = caller
                .call(&app, method.clone(), &nobodys, body.as_ref())
                .await;
            assert_eq!(answer, expected, "{method} {theirs}");
            let not_an_id = nobodys.replace(&unknown, "not-an-id");
            let garbled = caller
                .call(&app, method.clone(), &not_an_id, body.as_ref())
                .await;
            assert_eq!(garbled, expected, "{method} {not_an_id}");
        }
    }

    // The owner's endpoint is as it was: listed, active, one message, the same secret.
    assert_eq!(listed(&app, mine, &endpoint).await, endpoint.webhook);
    assert_eq!(messages(&app, mine, &endpoint).await.len(), 1);
    assert_eq!(
        receiver.received().len(),
        1,
        "the stranger's test was not sent"
    );
    let again = send_test(&app, mine, &endpoint).await;
    let sent = receiver.wait_for("/owner", 2).await;
    assert_eq!(sent[1].webhook_id(), again);
    assert_eq!(
        crate::webhook_receiver::signed_by(&endpoint.secret, &sent[1]),
        [true],
        "the secret was not rotated"
    );
}

/// A cookie-authenticated write from another site is refused like every session write.
#[actix_web::test]
async fn a_cross_site_write_with_the_session_is_refused() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let me = Caller::Session(&dashboard);
    let endpoint = create_ok(&app, me, &receiver.url("/hook"), None).await;
    let response = dashboard
        .no_redirect
        .post(app.url("/api/webhooks"))
        .header("origin", "https://evil.example")
        .json(&json!({"url": receiver.url("/evil")}))
        .send()
        .await
        .unwrap();
    let answer = status_and_json(response).await;
    assert_error(&answer, 403, "CrossSiteRequest");
    let response = dashboard
        .no_redirect
        .delete(app.url(&endpoint.path("")))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    let answer = status_and_json(response).await;
    assert_error(&answer, 403, "CrossSiteRequest");
    assert_eq!(list(&app, me).await, [endpoint.webhook]);
}
