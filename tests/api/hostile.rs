//! Hostile clients over raw sockets: stalled bodies, malformed framing, oversized heads.
//! Slow clients cannot hold a connection, and every answer of ours is in catalogue form with a
//! request id (README, "Slow clients and malformed requests").

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::helpers::{TestApp, error_body};

/// What came back on one connection.
pub struct Exchange {
    /// Everything the server wrote, up to its close (or `wait`).
    pub raw: Vec<u8>,
    /// Whether the server closed the connection within `wait`.
    pub closed: bool,
    /// From the first byte sent to the server's close (or to `wait`).
    pub elapsed: Duration,
}

/// The first response on a connection.
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

impl Exchange {
    /// Parses the first response (actix may append a second one of its own, see README).
    pub fn response(&self) -> RawResponse {
        let text = String::from_utf8_lossy(&self.raw);
        let (head, rest) = text
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no response head in {text:?}"));
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status line in {text:?}"));
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
            .collect();
        let length = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let body = rest.as_bytes()[..length.min(rest.len())].to_vec();
        RawResponse {
            status,
            headers,
            body,
        }
    }
}

/// Sends `request` on a fresh connection to `addr` (`host:port`), keeps the connection open
/// without sending more, and reads until the server closes it or `wait` passes.
pub async fn exchange(addr: &str, request: &[u8], wait: Duration) -> Exchange {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    // A server that closes early may reset the connection under a large request; what it
    // answered is still in our receive buffer.
    let _ = stream.write_all(request).await;
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let closed = loop {
        let remaining = wait.saturating_sub(started.elapsed());
        match tokio::time::timeout(remaining, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(n)) => raw.extend_from_slice(&buf[..n]),
            Err(_) => break false,
        }
    };
    Exchange {
        raw,
        closed,
        elapsed: started.elapsed(),
    }
}

pub fn addr(app: &TestApp) -> String {
    app.base.trim_start_matches("http://").to_string()
}

/// The `Cookie` header of a signed-in dashboard user (a raw socket has no cookie jar).
async fn session_cookie(app: &TestApp, email: &str) -> String {
    use reqwest::cookie::CookieStore;
    let jar = std::sync::Arc::new(reqwest::cookie::Jar::default());
    let client = reqwest::Client::builder()
        .cookie_provider(jar.clone())
        .build()
        .unwrap();
    let response = client
        .get(app.url(&format!("/auth/login?login_hint={email}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let cookies = jar.cookies(&app.base.parse().unwrap()).unwrap();
    cookies.to_str().unwrap().to_string()
}

/// The two ways a body can stall: 8 of 200 announced bytes, or a chunked body's first chunk.
fn stalled_requests(path: &str, auth_header: &str) -> [(&'static str, String); 2] {
    [
        (
            "fixed length",
            format!(
                "POST {path} HTTP/1.1\r\nHost: x\r\n{auth_header}\r\n\
                 Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{{\"post\":"
            ),
        ),
        (
            "chunked",
            format!(
                "POST {path} HTTP/1.1\r\nHost: x\r\n{auth_header}\r\n\
                 Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\
                 8\r\n{{\"post\":\r\n"
            ),
        ),
    ]
}

#[actix_web::test]
async fn stalled_bodies_get_a_catalogue_408_within_the_deadline_and_are_disconnected() {
    let app = TestApp::spawn_with(|config| {
        config.server.request_body_timeout_secs = 1;
        config.server.client_disconnect_timeout_ms = 500;
    })
    .await;
    let dashboard = app.sign_in("stall-key@example.com").await;
    let (key, _) = app.create_key(&dashboard, "stall").await;
    let cookie = session_cookie(&app, "stall-session@example.com").await;
    let deadline = Duration::from_secs(1);
    let mut cases = Vec::new();
    cases.extend(stalled_requests(
        "/v2/posts",
        &format!("service-api-key: {key}"),
    ));
    cases.extend(stalled_requests("/api/keys", &format!("Cookie: {cookie}")));
    for (index, (framing, request)) in cases.iter().enumerate() {
        let what = format!("{framing} body, request {index}");
        // A broken server holds the connection for good; 30 s tells it from a slow machine.
        let exchange = exchange(&addr(&app), request.as_bytes(), Duration::from_secs(30)).await;
        assert!(exchange.closed, "{what}: the connection was held");
        assert!(
            exchange.elapsed >= deadline,
            "{what}: answered before the deadline"
        );
        assert!(
            exchange.elapsed < deadline + Duration::from_secs(15),
            "{what}: took {:?}",
            exchange.elapsed
        );
        let response = exchange.response();
        assert_eq!(response.status, 408, "{what}");
        assert_eq!(
            response.json(),
            error_body(
                "RequestTimeout",
                "The request body was not received in time"
            ),
            "{what}"
        );
        assert!(response.header("x-request-id").is_some(), "{what}");
        assert_eq!(response.header("connection"), Some("close"), "{what}");
    }
}

#[actix_web::test]
async fn a_stalled_body_on_a_route_that_never_reads_it_does_not_hold_the_connection() {
    let app = TestApp::spawn_with(|config| {
        config.server.request_body_timeout_secs = 600;
        config.server.client_disconnect_timeout_ms = 500;
    })
    .await;
    // Neither `/health` nor a refused API-key request reads the body: the answer comes at once,
    // and the connection is closed rather than left waiting for the rest of the body (actix
    // drains a chunked body it was left with, for as long as the client likes).
    for (framing, request) in stalled_requests("/health", "X-Trace: 1")
        .into_iter()
        .chain(stalled_requests("/v2/posts", "service-api-key: nope"))
    {
        let exchange = exchange(&addr(&app), request.as_bytes(), Duration::from_secs(30)).await;
        assert!(exchange.closed, "{framing}: the connection was held");
        assert!(
            exchange.elapsed < Duration::from_secs(15),
            "{framing}: took {:?}",
            exchange.elapsed
        );
        let response = exchange.response();
        assert!(
            [200, 405, 401].contains(&response.status),
            "{framing}: {}",
            response.status
        );
        assert!(response.header("x-request-id").is_some(), "{framing}");
    }
}

#[actix_web::test]
async fn punctual_bodies_keep_their_connection_alive() {
    let app = TestApp::spawn_with(|config| config.server.request_body_timeout_secs = 1).await;
    let cookie = session_cookie(&app, "punctual@example.com").await;
    // Two key creations on one connection, fixed-length then chunked: the deadline and the
    // unread-body rule leave a connection alone when its client did nothing wrong (the second
    // request is answered on the same socket, and only it, asking to, closes).
    let body = r#"{"name":"punctual"}"#;
    let head = format!(
        "POST /api/keys HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\nContent-Type: application/json\r\n"
    );
    let fixed = format!("{head}Content-Length: {}\r\n\r\n{body}", body.len());
    let chunked = format!(
        "{head}Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    );
    let mut stream = TcpStream::connect(addr(&app)).await.unwrap();
    let mut answers = Vec::new();
    for request in [fixed, chunked] {
        // One at a time: actix closes after a response while a pipelined request is queued.
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        let answer = loop {
            let n = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf))
                .await
                .unwrap()
                .unwrap();
            assert!(n > 0, "closed after {}", String::from_utf8_lossy(&raw));
            raw.extend_from_slice(&buf[..n]);
            let exchange = Exchange {
                raw: raw.clone(),
                closed: false,
                elapsed: Duration::ZERO,
            };
            if let Some(text) = String::from_utf8_lossy(&raw).split_once("\r\n\r\n")
                && exchange.response().body.len() == text.1.len()
                && !text.1.is_empty()
            {
                break exchange.response();
            }
        };
        answers.push(answer);
    }
    for answer in &answers {
        assert_eq!(answer.status, 200, "{}", answer.json());
        assert_eq!(answer.json()["success"], true);
    }
    assert_eq!(answers[0].header("connection"), None);
    assert_eq!(answers[1].header("connection"), Some("close"));
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut rest)).await;
    assert!(closed.is_ok() && rest.is_empty(), "closed after the second");
}
