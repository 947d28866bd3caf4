//! A webhook receiver for tests: a real HTTP server on 127.0.0.1 that records every request it
//! gets (method, path, headers, body, arrival time) and answers from the test's script, and the
//! Standard Webhooks signature check a receiver makes.
//!
//! The script is a queue of replies taken one per request, in arrival order; once it is empty,
//! every request gets the default reply (204 unless the test sets another).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, dev::ServerHandle, http, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::Value;

use crate::helpers::eventually;

/// How the receiver answers one request.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    /// A `Location` header (for a 3xx).
    pub location: Option<String>,
    /// How long the receiver waits before answering.
    pub delay: Duration,
    pub body: String,
}

impl Reply {
    /// `status` at once, with an empty body.
    pub fn status(status: u16) -> Self {
        Self {
            status,
            location: None,
            delay: Duration::ZERO,
            body: String::new(),
        }
    }

    /// A redirect to `location`.
    pub fn redirect(status: u16, location: &str) -> Self {
        Self {
            location: Some(location.to_string()),
            ..Self::status(status)
        }
    }

    /// The same reply, sent after `delay`.
    pub fn after(self, delay: Duration) -> Self {
        Self { delay, ..self }
    }

    /// The same reply with `body`.
    pub fn with_body(self, body: &str) -> Self {
        Self {
            body: body.to_string(),
            ..self
        }
    }
}

/// One request the receiver got.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    /// The path with its query, as sent.
    pub path: String,
    /// Header names in lower case, in the order sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the request had arrived whole.
    pub at: Instant,
}

impl Received {
    /// The value of header `name`, which must be sent once at most.
    pub fn header(&self, name: &str) -> Option<&str> {
        let mut values = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str());
        let value = values.next();
        assert!(values.next().is_none(), "{name} sent twice: {self:?}");
        value
    }

    /// A header that must be there.
    pub fn required(&self, name: &str) -> &str {
        self.header(name)
            .unwrap_or_else(|| panic!("no {name} header: {self:?}"))
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("a webhook body is UTF-8")
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("the body is no JSON ({e}): {}", self.text()))
    }

    /// `webhook-id`.
    pub fn webhook_id(&self) -> &str {
        self.required("webhook-id")
    }

    /// The body's `type`.
    pub fn event(&self) -> String {
        self.json()["type"].as_str().unwrap_or_default().to_string()
    }

    /// The signatures of `webhook-signature`, in the order sent.
    pub fn signatures(&self) -> Vec<String> {
        self.required("webhook-signature")
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }
}

#[derive(Default)]
struct Inner {
    received: Vec<Received>,
    script: VecDeque<Reply>,
    default: Option<Reply>,
}

type Shared = Arc<Mutex<Inner>>;

/// The receiver; it stops when dropped.
pub struct Receiver {
    pub port: u16,
    shared: Shared,
    handle: ServerHandle,
}

async fn answer(request: HttpRequest, body: web::Bytes, shared: web::Data<Shared>) -> HttpResponse {
    let received = Received {
        method: request.method().to_string(),
        path: request
            .uri()
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
        headers: request
            .headers()
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_string(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: body.to_vec(),
        at: Instant::now(),
    };
    let reply = {
        let mut inner = shared.lock().unwrap();
        inner.received.push(received);
        let default = inner.default.clone();
        inner
            .script
            .pop_front()
            .or(default)
            .unwrap_or_else(|| Reply::status(204))
    };
    if !reply.delay.is_zero() {
        actix_rt::time::sleep(reply.delay).await;
    }
    let mut response = HttpResponse::build(http::StatusCode::from_u16(reply.status).unwrap());
    if let Some(location) = &reply.location {
        response.insert_header((http::header::LOCATION, location.as_str()));
    }
    response.body(reply.body)
}

impl Receiver {
    /// Starts a receiver on a free port of 127.0.0.1.
    pub async fn start() -> Self {
        let shared: Shared = Arc::default();
        let data = web::Data::new(shared.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .app_data(web::PayloadConfig::new(16 * 1024 * 1024))
                .default_service(web::to(answer))
        })
        .workers(2)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .unwrap();
        let port = server.addrs()[0].port();
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        Self {
            port,
            shared,
            handle,
        }
    }

    /// `host:port`, as `webhooks.allow_hosts` lists it.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A URL of this receiver.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Queues `reply` for the next request without one.
    pub fn reply(&self, reply: Reply) {
        self.shared.lock().unwrap().script.push_back(reply);
    }

    /// The reply once the queue is empty.
    pub fn reply_by_default(&self, reply: Reply) {
        self.shared.lock().unwrap().default = Some(reply);
    }

    /// Everything received, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().unwrap().received.clone()
    }

    /// What was received on `path` (query included), in arrival order.
    pub fn received_on(&self, path: &str) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    /// Waits until `path` has received at least `count` requests; returns them all.
    pub async fn wait_for(&self, path: &str, count: usize) -> Vec<Received> {
        eventually(&format!("{count} request(s) on {path}"), async || {
            self.received_on(path).len() >= count
        })
        .await;
        self.received_on(path)
    }

    /// Waits for a message of type `event` on `path`; returns the first one.
    pub async fn wait_for_event(&self, path: &str, event: &str) -> Received {
        eventually(&format!("a {event} on {path}"), async || {
            self.received_on(path).iter().any(|r| r.event() == event)
        })
        .await;
        self.received_on(path)
            .into_iter()
            .find(|r| r.event() == event)
            .unwrap()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        if tokio::runtime::Handle::try_current().is_ok() {
            actix_rt::spawn(async move { handle.stop(false).await });
        }
    }
}

/// The HMAC key of a `whsec_` secret.
fn key_of(secret: &str) -> Vec<u8> {
    let encoded = secret
        .strip_prefix("whsec_")
        .unwrap_or_else(|| panic!("a secret starts with whsec_: {secret}"));
    STANDARD
        .decode(encoded)
        .unwrap_or_else(|e| panic!("a secret is base64 after whsec_ ({e}): {secret}"))
}

/// The `v1,` signature of a message, as a sender with `secret` writes it.
pub fn sign(secret: &str, id: &str, timestamp: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key_of(secret)).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// Whether one `v1,` signature is `secret`'s for the request (checked as a receiver checks it:
/// the HMAC over `{webhook-id}.{webhook-timestamp}.{body}`, compared in constant time).
fn verifies(secret: &str, received: &Received, signature: &str) -> bool {
    let Some(encoded) = signature.strip_prefix("v1,") else {
        return false;
    };
    let Ok(given) = STANDARD.decode(encoded) else {
        return false;
    };
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key_of(secret)).unwrap();
    mac.update(
        format!(
            "{}.{}.",
            received.webhook_id(),
            received.required("webhook-timestamp")
        )
        .as_bytes(),
    );
    mac.update(&received.body);
    mac.verify_slice(&given).is_ok()
}

/// For each signature of `webhook-signature`, in order: whether `secret` made it.
pub fn signed_by(secret: &str, received: &Received) -> Vec<bool> {
    received
        .signatures()
        .iter()
        .map(|signature| verifies(secret, received, signature))
        .collect()
}

/// Asserts that a signature of the request verifies with `secret`, as a Standard Webhooks
/// receiver accepts a message when any one of its signatures does.
pub fn assert_signed(secret: &str, received: &Received) {
    assert!(
        signed_by(secret, received).contains(&true),
        "no signature verifies with the secret: {received:?}"
    );
}

/// The signing example of the Standard Webhooks specification: the receiver's check is the
/// specification's, not a mirror of the service's code.
#[test]
fn the_signature_is_the_specifications() {
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let (id, timestamp, body) = (
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "1614265330",
        br#"{"test": 2432232314}"#,
    );
    let signature = sign(secret, id, timestamp, body);
    assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    let received = Received {
        method: "POST".into(),
        path: "/".into(),
        headers: vec![
            ("webhook-id".into(), id.into()),
            ("webhook-timestamp".into(), timestamp.into()),
            (
                "webhook-signature".into(),
                format!("v1,bm9wZQ== {signature}"),
            ),
        ],
        body: body.to_vec(),
        at: Instant::now(),
    };
    assert_eq!(signed_by(secret, &received), [false, true]);
    assert_signed(secret, &received);
    let other = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    assert_eq!(signed_by(other, &received), [false, false]);
}

/// The receiver answers from its script, then with its default, and records every request.
#[actix_web::test]
async fn the_receiver_answers_from_its_script_and_records_requests() {
    let receiver = Receiver::start().await;
    receiver.reply(Reply::status(500).with_body("down"));
    receiver.reply(Reply::redirect(302, "/elsewhere"));
    receiver.reply(Reply::status(200).after(Duration::from_millis(300)));
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let send = async |body: &str| {
        let started = Instant::now();
        let response = client
            .post(receiver.url("/hook?x=1"))
            .header("webhook-id", "msg_1")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .map(|v| v.to_str().unwrap().to_string());
        let text = response.text().await.unwrap();
        (status, location, text, started.elapsed())
    };
    let (status, _, text, _) = send("one").await;
    assert_eq!((status, text.as_str()), (500, "down"));
    let (status, location, _, _) = send("two").await;
    assert_eq!((status, location.as_deref()), (302, Some("/elsewhere")));
    let (status, _, _, took) = send("three").await;
    assert_eq!(status, 200);
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert_eq!(send("four").await.0, 204);
    receiver.reply_by_default(Reply::status(503));
    assert_eq!(send("five").await.0, 503);

    let got = receiver.wait_for("/hook?x=1", 5).await;
    let bodies: Vec<String> = got.iter().map(Received::text).collect();
    assert_eq!(bodies, ["one", "two", "three", "four", "five"]);
    assert!(
        got.iter()
            .all(|r| r.method == "POST" && r.webhook_id() == "msg_1")
    );
    assert!(got.windows(2).all(|w| w[0].at <= w[1].at));
    assert!(receiver.received_on("/elsewhere").is_empty());
}
