//! A webhook receiver under `/webhooks`: the other end of the service's webhooks, so that the
//! demo has somewhere to deliver and a page where its deliveries can be watched. It stands for
//! a user's own server, not for a platform: it refuses nothing and records no protocol
//! violations.
//!
//! - `POST /webhooks/inbox` (or `/webhooks/inbox/{name…}`) records a delivery: when it arrived,
//!   its `webhook-id`, `webhook-timestamp` and `webhook-signature` headers and its body; answers
//!   `204`;
//! - `POST /webhooks/secret` `{secret}` hands the receiver an endpoint's `whsec_` secret; from
//!   then on each record says whether its signature verified (HMAC-SHA256 as the Standard
//!   Webhooks specification defines it) under any secret it was handed;
//! - `GET /webhooks/inbox` (or `/webhooks/inbox/{name…}` for the deliveries to that path) shows
//!   the deliveries newest first: `{count, deliveries}` for `Accept: application/json`, a small
//!   HTML page otherwise;
//! - `DELETE /webhooks/inbox` forgets them.
//!
//! Only the last [`KEPT`] deliveries are kept, so a long demo cannot grow it without bound.

use std::{
    collections::VecDeque,
    sync::{Mutex, MutexGuard},
};

use actix_web::{HttpRequest, HttpResponse, http::header, web};
use base64::{Engine, engine::general_purpose::STANDARD};
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::util::constant_time_eq;

/// How many deliveries the receiver keeps (the oldest go first).
pub const KEPT: usize = 500;
/// How many secrets it keeps: enough for a demo's endpoints and their rotations.
const MAX_SECRETS: usize = 50;
/// The largest body it reads; the service's messages are a few KB.
const MAX_BODY_BYTES: usize = 1024 * 1024;
const INBOX: &str = "/webhooks/inbox";

/// One delivery as it arrived.
#[derive(Debug, Clone, Serialize)]
pub struct Delivery {
    pub received_at: DateTime<Utc>,
    /// The request's path (`/webhooks/inbox` or below it).
    pub path: String,
    pub webhook_id: Option<String>,
    pub webhook_timestamp: Option<String>,
    pub webhook_signature: Option<String>,
    /// The body as JSON; the raw text as a JSON string when it is not JSON.
    pub body: Value,
    /// Whether a `v1` signature matched one of the secrets handed to the receiver; `None`
    /// while it knows none.
    pub signature_verified: Option<bool>,
}

/// The receiver's deliveries and the secrets it verifies them with.
#[derive(Default)]
pub struct WebhookInbox {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    deliveries: VecDeque<Delivery>,
    /// Decoded keys, the latest first.
    keys: Vec<Vec<u8>>,
}

/// The headers of one delivery that the specification defines.
#[derive(Debug, Clone, Default)]
pub struct WebhookHeaders {
    pub id: Option<String>,
    pub timestamp: Option<String>,
    pub signature: Option<String>,
}

impl WebhookHeaders {
    fn from_request(request: &HttpRequest) -> Self {
        let read = |name: &str| {
            request
                .headers()
                .get(name)
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        };
        Self {
            id: read("webhook-id"),
            timestamp: read("webhook-timestamp"),
            signature: read("webhook-signature"),
        }
    }
}

impl WebhookInbox {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Learns an endpoint's secret (`whsec_` and base64; the prefix may be left off, as the
    /// specification's libraries allow). Refuses one that is not base64 or is empty.
    pub fn add_secret(&self, secret: &str) -> Result<(), String> {
        let key = secret_key(secret).ok_or_else(|| {
            "a secret is base64 (of at least one byte), optionally after \"whsec_\"".to_string()
        })?;
        let mut inner = self.inner();
        inner.keys.retain(|known| *known != key);
        inner.keys.insert(0, key);
        inner.keys.truncate(MAX_SECRETS);
        Ok(())
    }

    /// Records a delivery that arrived at `path` now; answers the record.
    pub fn record(&self, path: &str, headers: WebhookHeaders, body: &[u8]) -> Delivery {
        let mut inner = self.inner();
        let signature_verified = (!inner.keys.is_empty()).then(|| {
            match (&headers.id, &headers.timestamp, &headers.signature) {
                (Some(id), Some(timestamp), Some(signature)) => inner
                    .keys
                    .iter()
                    .any(|key| verify(key, id, timestamp, body, signature)),
                _ => false,
            }
        });
        let delivery = Delivery {
            received_at: Utc::now(),
            path: path.to_string(),
            webhook_id: headers.id,
            webhook_timestamp: headers.timestamp,
            webhook_signature: headers.signature,
            body: serde_json::from_slice(body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned())),
            signature_verified,
        };
        inner.deliveries.push_front(delivery.clone());
        inner.deliveries.truncate(KEPT);
        delivery
    }

    /// The deliveries kept, newest first; only those that arrived at `path` when it is given.
    pub fn deliveries(&self, path: Option<&str>) -> Vec<Delivery> {
        self.inner()
            .deliveries
            .iter()
            .filter(|d| path.is_none_or(|p| d.path == p))
            .cloned()
            .collect()
    }

    /// Forgets every delivery (the secrets stay).
    pub fn clear(&self) {
        self.inner().deliveries.clear();
    }
}

/// The HMAC key of a secret: base64-decoded, without its `whsec_` prefix.
pub fn secret_key(secret: &str) -> Option<Vec<u8>> {
    let encoded = secret.trim();
    let encoded = encoded.strip_prefix("whsec_").unwrap_or(encoded);
    STANDARD.decode(encoded).ok().filter(|key| !key.is_empty())
}

/// `v1,` and the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` under `key`.
pub fn sign(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> String {
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mac) => mac,
        // HMAC takes a key of any length.
        Err(_) => unreachable!("HMAC accepts keys of any length"),
    };
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// Whether any `v1` entry of a `webhook-signature` header (entries separated by spaces) is
/// the signature of the message under `key`. Entries of other versions are passed over, as
/// the specification asks of a verifier.
pub fn verify(key: &[u8], id: &str, timestamp: &str, body: &[u8], header: &str) -> bool {
    let expected = sign(key, id, timestamp, body);
    header
        .split_whitespace()
        .filter(|entry| entry.starts_with("v1,"))
        .any(|entry| constant_time_eq(entry, &expected))
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
        .route("/inbox", web::post().to(receive))
        .route("/inbox", web::get().to(show))
        .route("/inbox", web::delete().to(clear))
        .route("/inbox/{name:.*}", web::post().to(receive))
        .route("/inbox/{name:.*}", web::get().to(show))
        .route("/secret", web::post().to(add_secret));
}

async fn receive(
    inbox: web::Data<WebhookInbox>,
    request: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let path = request.path().trim_end_matches('/');
    inbox.record(path, WebhookHeaders::from_request(&request), &body);
    HttpResponse::NoContent().finish()
}

async fn show(inbox: web::Data<WebhookInbox>, request: HttpRequest) -> HttpResponse {
    // `/webhooks/inbox` shows every delivery; a path below it, the deliveries to that path.
    let path = request.path().trim_end_matches('/');
    let deliveries = inbox.deliveries((path != INBOX).then_some(path));
    let wants_json = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json"));
    if wants_json {
        HttpResponse::Ok().json(json!({"count": deliveries.len(), "deliveries": deliveries}))
    } else {
        HttpResponse::Ok()
            .content_type("text/html; charset=utf-8")
            .body(inbox_page(path, &deliveries))
    }
}

async fn clear(inbox: web::Data<WebhookInbox>) -> HttpResponse {
    inbox.clear();
    HttpResponse::NoContent().finish()
}

#[derive(Deserialize)]
struct SecretBody {
    secret: String,
}

async fn add_secret(inbox: web::Data<WebhookInbox>, body: web::Json<SecretBody>) -> HttpResponse {
    match inbox.add_secret(&body.secret) {
        Ok(()) => HttpResponse::NoContent().finish(),
        Err(message) => HttpResponse::BadRequest().json(json!({"error": message})),
    }
}

/// Escapes text for HTML content and quoted attributes.
fn escape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The readable form of the inbox: one row per delivery, its body pretty-printed.
fn inbox_page(path: &str, deliveries: &[Delivery]) -> String {
    let rows: String = deliveries
        .iter()
        .map(|d| {
            let event = d.body.get("type").and_then(Value::as_str).unwrap_or("");
            let verified = match d.signature_verified {
                Some(true) => "verified",
                Some(false) => "NOT verified",
                None => "no secret known",
            };
            let body = serde_json::to_string_pretty(&d.body).unwrap_or_default();
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code><br>timestamp {}</td>\
                 <td>{}<br><code>{}</code></td><td><pre>{}</pre></td></tr>",
                escape(&d.received_at.to_rfc3339()),
                escape(&d.path),
                escape(event),
                escape(d.webhook_id.as_deref().unwrap_or("")),
                escape(d.webhook_timestamp.as_deref().unwrap_or("")),
                escape(verified),
                escape(d.webhook_signature.as_deref().unwrap_or("")),
                escape(&body),
            )
        })
        .collect();
    let empty = if deliveries.is_empty() {
        "<p>No deliveries yet. Publish a post and this page shows the webhook it brings.</p>"
    } else {
        ""
    };
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"5\"><title>Webhook inbox</title>\
         <style>body{{font-family:sans-serif}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:4px;vertical-align:top;text-align:left}}\
         pre{{margin:0;max-width:60em;overflow:auto}}</style></head><body>\
         <h1>Webhook inbox <code>{}</code></h1><p>{} deliveries, newest first (the last {KEPT} \
         are kept; the page refreshes every 5 seconds). JSON: the same URL with \
         <code>Accept: application/json</code>.</p>{empty}\
         <table><tr><th>Received</th><th>Path</th><th>Event</th><th>webhook-id</th>\
         <th>Signature</th><th>Body</th></tr>{rows}</table></body></html>",
        escape(path),
        deliveries.len(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use actix_web::{App, test as web_test};

    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TIMESTAMP: &str = "1614265330";
    const BODY: &str = r#"{"test": 2432232314}"#;
    const SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn headers(signature: &str) -> WebhookHeaders {
        WebhookHeaders {
            id: Some(ID.into()),
            timestamp: Some(TIMESTAMP.into()),
            signature: Some(signature.into()),
        }
    }

    /// The example of the Standard Webhooks specification's reference libraries.
    #[test]
    fn signatures_match_the_specifications_example() {
        let key = secret_key(SECRET).unwrap();
        assert_eq!(sign(&key, ID, TIMESTAMP, BODY.as_bytes()), SIGNATURE);
        assert!(verify(&key, ID, TIMESTAMP, BODY.as_bytes(), SIGNATURE));
        // The prefix is optional.
        assert_eq!(secret_key(&SECRET[6..]), Some(key.clone()));
        // Any entry may match; other versions are passed over.
        let several = format!("v1,AAAA v1a,{} {SIGNATURE}", &SIGNATURE[3..]);
        assert!(verify(&key, ID, TIMESTAMP, BODY.as_bytes(), &several));
        // A changed body, id or timestamp, or a signature without its version, does not verify.
        assert!(!verify(
            &key,
            ID,
            TIMESTAMP,
            br#"{"test": 2432232315}"#,
            SIGNATURE
        ));
        assert!(!verify(
            &key,
            "msg_other",
            TIMESTAMP,
            BODY.as_bytes(),
            SIGNATURE
        ));
        assert!(!verify(&key, ID, "1614265331", BODY.as_bytes(), SIGNATURE));
        assert!(!verify(
            &key,
            ID,
            TIMESTAMP,
            BODY.as_bytes(),
            &SIGNATURE[3..]
        ));
        assert_eq!(secret_key("whsec_"), None);
        assert_eq!(secret_key("whsec_not base64!"), None);
    }

    #[test]
    fn records_say_whether_they_verified_once_a_secret_is_known() {
        let inbox = WebhookInbox::default();
        let unknown = inbox.record(INBOX, headers(SIGNATURE), BODY.as_bytes());
        assert_eq!(unknown.signature_verified, None);
        inbox
            .add_secret(&format!("whsec_{}", STANDARD.encode([7u8; 24])))
            .unwrap();
        inbox.add_secret(SECRET).unwrap();
        assert_eq!(
            inbox
                .record(INBOX, headers(SIGNATURE), BODY.as_bytes())
                .signature_verified,
            Some(true)
        );
        let forged = inbox.record(INBOX, headers("v1,AAAA"), BODY.as_bytes());
        assert_eq!(forged.signature_verified, Some(false));
        let unsigned = inbox.record(INBOX, WebhookHeaders::default(), b"not json");
        assert_eq!(unsigned.signature_verified, Some(false));
        assert_eq!(unsigned.body, Value::String("not json".into()));
        assert!(inbox.add_secret("whsec_%%%").is_err());
    }

    #[test]
    fn the_inbox_keeps_the_latest_deliveries_newest_first() {
        let inbox = WebhookInbox::default();
        for n in 0..KEPT + 10 {
            let path = if n % 2 == 0 {
                INBOX
            } else {
                "/webhooks/inbox/odd"
            };
            inbox.record(path, WebhookHeaders::default(), n.to_string().as_bytes());
        }
        let kept = inbox.deliveries(None);
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept[0].body, json!(KEPT + 9));
        assert_eq!(kept[KEPT - 1].body, json!(10));
        let odd = inbox.deliveries(Some("/webhooks/inbox/odd"));
        assert_eq!(odd.len(), KEPT / 2);
        assert!(odd.iter().all(|d| d.body.as_u64().unwrap() % 2 == 1));
        inbox.clear();
        assert!(inbox.deliveries(None).is_empty());
    }

    #[actix_web::test]
    async fn the_routes_record_verify_and_show_escaped() {
        let inbox = web::Data::new(WebhookInbox::default());
        let app = web_test::init_service(
            App::new()
                .app_data(inbox.clone())
                .service(web::scope("/webhooks").configure(configure)),
        )
        .await;
        let secret = web_test::TestRequest::post()
            .uri("/webhooks/secret")
            .set_json(json!({ "secret": SECRET }))
            .to_request();
        assert_eq!(web_test::call_service(&app, secret).await.status(), 204);
        let hostile = r#"{"type":"<script>alert('x')</script>","data":{"a":"&"}}"#;
        for (path, body, signature) in [
            ("/webhooks/inbox", BODY, SIGNATURE),
            ("/webhooks/inbox/a/b", hostile, "v1,<b>"),
        ] {
            let delivery = web_test::TestRequest::post()
                .uri(path)
                .insert_header(("webhook-id", ID))
                .insert_header(("webhook-timestamp", TIMESTAMP))
                .insert_header(("webhook-signature", signature))
                .insert_header(("content-type", "application/json"))
                .set_payload(body)
                .to_request();
            assert_eq!(web_test::call_service(&app, delivery).await.status(), 204);
        }
        let listed: Value = web_test::call_and_read_body_json(
            &app,
            web_test::TestRequest::get()
                .uri("/webhooks/inbox")
                .insert_header(("accept", "application/json"))
                .to_request(),
        )
        .await;
        assert_eq!(listed["count"], 2);
        assert_eq!(listed["deliveries"][0]["path"], "/webhooks/inbox/a/b");
        assert_eq!(listed["deliveries"][0]["signature_verified"], false);
        assert_eq!(
            listed["deliveries"][1]["body"],
            json!({"test": 2432232314u64})
        );
        assert_eq!(listed["deliveries"][1]["webhook_id"], ID);
        assert_eq!(listed["deliveries"][1]["signature_verified"], true);

        let page = web_test::call_service(
            &app,
            web_test::TestRequest::get()
                .uri("/webhooks/inbox/a/b")
                .to_request(),
        )
        .await;
        assert!(
            page.headers()
                .get(header::CONTENT_TYPE)
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        let html = String::from_utf8(web_test::read_body(page).await.to_vec()).unwrap();
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
        assert!(html.contains("v1,&lt;b&gt;"));
        assert!(!html.contains("<script>") && !html.contains("<b>"));
        // Only the deliveries to that path.
        assert!(html.contains("NOT verified") && !html.contains("2432232314"));
    }
}
