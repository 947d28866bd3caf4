//! Hostile clients over raw sockets: stalled bodies, malformed framing, oversized heads.
//! Slow clients cannot hold a connection, and every answer of ours is in catalogue form with a
//! request id (docs/api-notes.md, "Slow clients and malformed requests"). Uploads, the API's and
//! the Compose page's form, keep the longer upload deadline.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
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
    /// Parses the first response (actix may append a second one of its own, see docs/api-notes.md).
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

/// How a case must be answered.
enum Expect {
    /// By our code: this status, in catalogue form with this code, with a request id.
    Catalogue(u16, &'static str),
    /// By actix-http before our code runs: this status, an empty body (docs/api-notes.md lists these).
    Actix(u16),
    /// actix-http drops the connection at once; our answer, if it was ready first, is all the
    /// client may get.
    Dropped,
    /// Nothing to check on the client's side (it went away).
    Nothing,
}

#[actix_web::test]
async fn malformed_requests_to_the_real_binary_are_answered_and_never_logged_as_errors() {
    use std::process::{Command, Stdio};

    use social_service::{crypto::TokenCipher, store::Store};

    let dir = tempfile::tempdir().unwrap();
    let db_url = format!("sqlite://{}/hostile.db?mode=rwc", dir.path().display());
    let store = Store::connect(&db_url, 2, None).await.unwrap();
    store.migrate().await.unwrap();
    let now = chrono::Utc::now();
    let user = store
        .upsert_oidc_user("iss", "hostile", Some("hostile@example.com"), None, now)
        .await
        .unwrap();
    let api_key = social_service::crypto::generate_api_key();
    store
        .insert_api_key(user.id, "hostile", &api_key, now)
        .await
        .unwrap();
    let log_path = dir.path().join("service.log");
    let log = std::fs::File::create(&log_path).unwrap();
    // The default log level: no RUST_LOG.
    let mut child = Command::new(env!("CARGO_BIN_EXE_service"))
        .arg("serve")
        .env_remove("DATABASE_URL")
        .env_remove("RUST_LOG")
        .env("SERVICE__SERVER__BIND", "127.0.0.1:0")
        .env("SERVICE__SERVER__REQUEST_HEAD_TIMEOUT_MS", "1000")
        .env("SERVICE__SERVER__REQUEST_BODY_TIMEOUT_SECS", "1")
        .env("SERVICE__SERVER__CLIENT_DISCONNECT_TIMEOUT_MS", "500")
        .env("SERVICE__DATABASE__URL", &db_url)
        .env("SERVICE__SECRETS__SESSION_KEY", "s".repeat(40))
        .env(
            "SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY",
            TokenCipher::generate_key(),
        )
        .env("SERVICE__SECRETS__OPERATOR_TOKEN", "operator-token-hostile")
        // Sign-in configured (nowhere: it is not used), so that startup has nothing to warn about.
        .env("SERVICE__AUTH__ISSUER", "http://127.0.0.1:9")
        .env("SERVICE__SCHEDULER__ENABLED", "false")
        .env("SERVICE__COLLECTOR__ENABLED", "false")
        .env("SERVICE__LOGGING__FORMAT", "json")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let addr = loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains("listening")) {
            let event: Value = serde_json::from_str(line).unwrap();
            break event["fields"]["address"].as_str().unwrap().to_string();
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("service did not start: {text}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    let key = format!("service-api-key: {}", api_key.full);
    let post = |headers: &str, body: &str| {
        format!("POST /v2/posts HTTP/1.1\r\nHost: x\r\n{key}\r\nContent-Type: application/json\r\n{headers}\r\n{body}")
            .into_bytes()
    };
    // actix-http refuses heads over 128 KiB (a constant of its decoder).
    let big = "a".repeat(200 * 1024);
    let over_limit = format!("{{\"post\":\"{}\"}}", "a".repeat(1024 * 1024 + 10));
    let mut cases: Vec<(&str, Vec<u8>, Expect)> = vec![
        (
            "Transfer-Encoding other than chunked",
            post("Transfer-Encoding: gzip\r\n", ""),
            Expect::Actix(400),
        ),
        (
            "both Content-Length and Transfer-Encoding",
            post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"),
            Expect::Actix(400),
        ),
        (
            "two different Content-Lengths",
            post("Content-Length: 5\r\nContent-Length: 6\r\n", "{}"),
            Expect::Actix(400),
        ),
        (
            "HTTP/1.1 without Host",
            b"GET /health HTTP/1.1\r\n\r\n".to_vec(),
            Expect::Actix(400),
        ),
        (
            "non-numeric Content-Length",
            post("Content-Length: abc\r\n", "{}"),
            Expect::Actix(400),
        ),
        (
            "invalid chunk size",
            post("Transfer-Encoding: chunked\r\n", "zz\r\n{}\r\n0\r\n\r\n"),
            Expect::Dropped,
        ),
        (
            "oversized header",
            format!("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n").into_bytes(),
            Expect::Actix(431),
        ),
        (
            "oversized query",
            format!("GET /health?q={big} HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes(),
            Expect::Actix(431),
        ),
        (
            "too many headers",
            format!(
                "GET /health HTTP/1.1\r\nHost: x\r\n{}\r\n",
                (0..200).map(|i| format!("X-H{i}: {i}\r\n")).collect::<String>()
            )
            .into_bytes(),
            Expect::Actix(431),
        ),
        (
            "non-UTF-8 API key and request id",
            b"GET /v2/accounts HTTP/1.1\r\nHost: x\r\nservice-api-key: \xff\xfe\r\nX-Request-Id: \xe9t\xe9\r\n\r\n"
                .to_vec(),
            Expect::Catalogue(401, "InvalidApiKey"),
        ),
        (
            "control character in a header value",
            b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n".to_vec(),
            Expect::Actix(400),
        ),
        (
            "bad method token",
            b"G(T /health HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            Expect::Actix(400),
        ),
        (
            "unknown method",
            b"BREW /health HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            Expect::Catalogue(405, "MethodNotAllowed"),
        ),
        (
            "HTTP/0.9 request line",
            b"GET /health\r\n\r\n".to_vec(),
            Expect::Actix(400),
        ),
        (
            "unknown HTTP version",
            b"GET /health HTTP/3.7\r\nHost: x\r\n\r\n".to_vec(),
            Expect::Actix(400),
        ),
        (
            "declared body over the limit",
            post("Content-Length: 2000000\r\n", "{\"post\":"),
            Expect::Catalogue(413, "PayloadTooLarge"),
        ),
        (
            "chunked body over the limit",
            post(
                "Transfer-Encoding: chunked\r\n",
                &format!("{:x}\r\n{over_limit}\r\n0\r\n\r\n", over_limit.len()),
            ),
            Expect::Catalogue(413, "PayloadTooLarge"),
        ),
        (
            "stalled body",
            post("Content-Length: 200\r\n", "{\"post\":"),
            Expect::Catalogue(408, "RequestTimeout"),
        ),
        (
            "stalled head",
            b"GET /health HTTP/1.1\r\nHost: x\r\n".to_vec(),
            Expect::Actix(408),
        ),
    ];
    // A client that goes away in the middle of a body, and one that resets the connection.
    cases.push((
        "client gone mid-body",
        post("Content-Length: 200\r\n", "{\"po"),
        Expect::Nothing,
    ));

    let mut failures = Vec::new();
    for (what, request, expect) in &cases {
        if matches!(expect, Expect::Nothing) {
            let mut stream = TcpStream::connect(&addr).await.unwrap();
            stream.write_all(request).await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
            // SO_LINGER 0: the close is a reset, the rudest way to leave.
            stream.set_zero_linger().unwrap();
            drop(stream);
            continue;
        }
        let exchange = exchange(&addr, request, Duration::from_secs(30)).await;
        if !exchange.closed {
            failures.push(format!("{what}: connection held"));
            continue;
        }
        if matches!(expect, Expect::Dropped) {
            if !exchange.raw.is_empty() && exchange.response().json()["success"] != false {
                failures.push(format!(
                    "{what}: {:?}",
                    String::from_utf8_lossy(&exchange.raw)
                ));
            }
            continue;
        }
        if !String::from_utf8_lossy(&exchange.raw).contains("\r\n\r\n") {
            failures.push(format!("{what}: no answer"));
            continue;
        }
        let response = exchange.response();
        match expect {
            Expect::Catalogue(status, code) => {
                let body = response.json();
                if response.status != *status
                    || body["success"] != false
                    || body["error"] != *code
                    || !body["message"].is_string()
                    || response.header("x-request-id").is_none()
                {
                    failures.push(format!(
                        "{what}: expected {status} {code} in catalogue form, got {} {:?} {body}",
                        response.status, response.headers
                    ));
                }
            }
            Expect::Actix(status) => {
                if response.status != *status || !response.body.is_empty() {
                    failures.push(format!(
                        "{what}: expected actix's empty {status}, got {} {:?}",
                        response.status,
                        String::from_utf8_lossy(&exchange.raw)
                    ));
                }
            }
            Expect::Dropped | Expect::Nothing => {}
        }
    }
    // The service still serves, and has logged what it logs.
    let health = reqwest::get(format!("http://{addr}/health")).await.unwrap();
    assert_eq!(health.status(), 200);
    // A graceful stop writes out every line logged before it (a kill could cut the log short,
    // and a sleep would only guess how long the writer needs).
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let stopping = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if stopping.elapsed() > Duration::from_secs(40) {
            let _ = child.kill();
            panic!("did not exit after SIGTERM");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let logs = std::fs::read_to_string(&log_path).unwrap();
    let loud: Vec<&str> = logs
        .lines()
        .filter(|line| {
            let event: Value = serde_json::from_str(line).unwrap_or(Value::Null);
            event["level"] == "ERROR" || event["level"] == "WARN"
        })
        .collect();
    assert!(
        failures.is_empty() && loud.is_empty(),
        "{failures:#?}\nclient mistakes logged as errors or warnings:\n{}",
        loud.join("\n")
    );
}

/// actix-http times only a connection's first head; after one request, a client sending a few
/// bytes of the next head and then nothing is closed once keep-alive plus the head deadline
/// have passed (the idle watch), not held for as long as it likes.
#[actix_web::test]
async fn a_stalled_second_head_does_not_hold_the_connection() {
    let app = TestApp::spawn_with(|config| {
        config.server.keep_alive_secs = 1;
        config.server.request_head_timeout_ms = 1000;
    })
    .await;
    let mut stream = TcpStream::connect(addr(&app)).await.unwrap();
    // The service's idle clock starts at its last activity on the connection, which is after
    // this instant (it received the request) and before we read its answer: the lower bound
    // below is taken from here, not from our own stall, which the server cannot see.
    let requested = Instant::now();
    // One whole request, answered (not pipelined: actix closes after a response while another
    // request is queued).
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&raw).contains("{\"status\":\"ok\"}") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("the first request is answered")
            .unwrap();
        assert!(
            n > 0,
            "closed before answering: {:?}",
            String::from_utf8_lossy(&raw)
        );
        raw.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&raw).starts_with("HTTP/1.1 200"));
    // A few bytes of the next head, then nothing.
    let stalled = Instant::now();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHo")
        .await
        .unwrap();
    let end = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf)).await;
    let elapsed = stalled.elapsed();
    assert!(
        matches!(end, Ok(Ok(0)) | Ok(Err(_))),
        "the stalled second head still holds the connection after {elapsed:?}"
    );
    // Keep-alive (1 s) plus the head deadline (1 s) first; the sweep runs every second.
    let since_request = requested.elapsed();
    assert!(
        since_request >= Duration::from_secs(2),
        "closed before the client's time was up: {since_request:?} after the request, {elapsed:?} after the stall"
    );
}

#[actix_web::test]
async fn the_compose_pages_upload_form_has_the_uploads_body_deadline() {
    let app = TestApp::spawn_with(|config| {
        config.server.request_body_timeout_secs = 1;
        config.media.upload_timeout_secs = 30;
    })
    .await;
    let publisher = app.publisher("facebook", "pro").await;
    let dashboard = &publisher.dashboard;
    let page = dashboard
        .client
        .get(app.url("/dashboard/compose"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let token = crate::dashboard_compose::upload_token(&page);
    // The form as a browser sends it, with the file's second half 2 s behind its first: past
    // the other routes' deadline, well within the uploads'.
    let jpeg = service_sim::media::SAMPLE_JPG;
    let boundary = "slow-upload-boundary";
    let mut first = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"form_token\"\r\n\r\n{token}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"media\"\r\n\r\n\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.jpg\"\r\n\
         Content-Type: image/jpeg\r\n\r\n"
    )
    .into_bytes();
    let half = jpeg.len() / 2;
    first.extend_from_slice(&jpeg[..half]);
    let mut rest = jpeg[half..].to_vec();
    rest.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let chunks = [(Duration::ZERO, first), (Duration::from_secs(2), rest)];
    let body = futures_util::stream::iter(chunks).then(|(delay, bytes)| async move {
        tokio::time::sleep(delay).await;
        Ok::<_, std::io::Error>(bytes)
    });
    let response = dashboard
        .no_redirect
        .post(app.url("/dashboard/compose/media"))
        .header("origin", app.state.public_url.clone())
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(reqwest::Body::wrap_stream(body))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303, "{:?}", response.text().await);
    let location = response.headers()["location"].to_str().unwrap().to_string();
    assert!(location.contains("uploaded=1"), "{location}");
}
