//! Golden responses: the JSON answer of every endpoint in one scenario, compared with the
//! committed `tests/api/golden/responses.json`. It pins what clients rely on — every field, its
//! type, and every value that does not change from run to run — so that restructuring the code
//! (typed DTOs, services) cannot change a body unnoticed.
//!
//! Values that differ on every run are replaced by a placeholder of their kind before the
//! comparison: ids (`<uuid>`, platform ids `<n>`, generated names `<hex>`), times (`<time>`,
//! `<date>`), API keys and their previews, local ports; and, in the bodies of the performance, collection and
//! actor endpoints (whose numbers come from the simulator's random accounts or from timing),
//! numbers (`<int>`, `<float>`). Their presence and type stay pinned.
//!
//! After an intended change of a body: `GOLDEN_UPDATE=1 cargo test --test api golden`, and say
//! in the commit why the body changed.

use chrono::{Duration, SecondsFormat};
use reqwest::{Method, RequestBuilder};
use serde_json::{Map, Value, json};

use crate::helpers::{Dashboard, OPERATOR_TOKEN, TestApp, assert_no_violations};

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/api/golden/responses.json"
);

/// Fields of the volatile bodies whose value (even its type) depends on timing or on the
/// process.
const VOLATILE_KEYS: [&str; 6] = [
    "instance",
    "next_due",
    "last_lag_ms",
    "looking",
    "sweeping",
    "shared",
];

/// How a body's numbers are treated.
#[derive(Clone, Copy, PartialEq)]
enum Numbers {
    Pinned,
    /// From the simulator's random accounts or from timing: type only.
    Volatile,
}

struct Recorder {
    entries: Map<String, Value>,
}

impl Recorder {
    async fn call(&mut self, name: &str, request: RequestBuilder, numbers: Numbers) -> Value {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body: Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("{name}: not JSON ({status}): {text}"));
        let entry = json!({"status": status, "body": self.normalise(&body, numbers)});
        assert!(
            self.entries.insert(name.to_string(), entry).is_none(),
            "{name} twice"
        );
        body
    }

    fn normalise(&self, value: &Value, numbers: Numbers) -> Value {
        match value {
            Value::String(text) => Value::String(self.normalise_text(text)),
            Value::Number(n) if numbers == Numbers::Volatile => {
                Value::String(if n.is_f64() { "<float>" } else { "<int>" }.into())
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.normalise(item, numbers))
                    .collect(),
            ),
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| {
                        // Which instance answered, whether the scheduler had already seen the
                        // next post when it was asked, and whether the store is one several
                        // instances share: the field is pinned, not its value.
                        let v = if numbers == Numbers::Volatile
                            && VOLATILE_KEYS.contains(&k.as_str())
                        {
                            json!("<varies>")
                        } else {
                            self.normalise(v, numbers)
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn normalise_text(&self, text: &str) -> String {
        if chrono::DateTime::parse_from_rfc3339(text).is_ok()
            || chrono::DateTime::parse_from_rfc2822(text).is_ok()
        {
            return "<time>".into();
        }
        if text.starts_with("service_") {
            return if text.contains('…') || text.contains("...") {
                "<key-preview>".into()
            } else {
                "<api-key>".into()
            };
        }
        replace_runs(text)
    }
}

/// Replaces what changes from run to run inside a text: UUIDs, dates and times, long digit
/// runs (platform ids), long hex runs (generated names), and local ports.
fn replace_runs(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let rest: String = chars[i..].iter().take(36).collect();
        if rest.len() == 36 && uuid::Uuid::parse_str(&rest).is_ok() {
            out.push_str("<uuid>");
            i += 36;
            continue;
        }
        if let Some(len) = date_time_at(&chars[i..]) {
            out.push_str(if len == 10 { "<date>" } else { "<time>" });
            i += len;
            continue;
        }
        let digits = chars[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        let hex = chars[i..]
            .iter()
            .take_while(|c| c.is_ascii_digit() || ('a'..='f').contains(*c))
            .count();
        // A generated hex name may begin with ten digits or more (about one in a hundred): the
        // whole run decides, so it is still `<hex>`, not `<n>` and a tail.
        if digits >= 10 && !(hex >= 16 && hex > digits) {
            out.push_str("<n>");
            i += digits;
            continue;
        }
        if hex >= 16 {
            out.push_str("<hex>");
            i += hex;
            continue;
        }
        if rest.starts_with("127.0.0.1:") {
            let port = chars[i + 10..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            out.push_str("127.0.0.1:<port>");
            i += 10 + port;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// `YYYY-MM-DD` (10) or `YYYY-MM-DDTHH:MM:SS` (19) starting exactly here.
fn date_time_at(chars: &[char]) -> Option<usize> {
    let shape = |pattern: &str| {
        chars.len() >= pattern.len()
            && pattern.chars().zip(chars).all(|(p, c)| match p {
                'd' => c.is_ascii_digit(),
                other => other == *c,
            })
    };
    if shape("dddd-dd-ddTdd:dd:dd") {
        Some(19)
    } else if shape("dddd-dd-dd") {
        Some(10)
    } else {
        None
    }
}

fn session(dashboard: &Dashboard, method: Method, url: String) -> RequestBuilder {
    dashboard.client.request(method, url)
}

#[actix_web::test]
async fn every_endpoint_keeps_its_body() {
    let app = TestApp::spawn().await;
    let mut r = Recorder {
        entries: Map::new(),
    };
    let publisher = app.publisher("facebook", "pro").await;
    let key = publisher.key.clone();
    let dash = &publisher.dashboard;
    let account = publisher.account.id.to_string();
    let with_key = |method: Method, path: &str| {
        app.http
            .request(method, app.url(path))
            .header("service-api-key", &key)
    };
    let operator = |method: Method, path: &str| {
        app.http
            .request(method, app.url(path))
            .bearer_auth(OPERATOR_TOKEN)
    };
    use Numbers::{Pinned, Volatile};

    // Publishing.
    r.call(
        "GET /v2/accounts",
        with_key(Method::GET, "/v2/accounts"),
        Pinned,
    )
    .await;
    let published = r
        .call(
            "POST /v2/posts (published)",
            with_key(Method::POST, "/v2/posts").json(
                &publisher
                    .body(json!({"text": "golden", "mediaUrls": [app.media_url("sample.jpg")]})),
            ),
            Pinned,
        )
        .await;
    let post_id = published["data"]["post_id"].as_str().unwrap().to_string();
    let at = (app.clock_now() + Duration::days(2)).to_rfc3339_opts(SecondsFormat::Secs, true);
    let later = publisher.body(json!({"text": "later", "scheduledAt": at}));
    let scheduled = r
        .call(
            "POST /v2/posts (scheduled)",
            with_key(Method::POST, "/v2/posts").json(&later),
            Pinned,
        )
        .await;
    let scheduled_id = scheduled["scheduledPostId"]
        .as_str()
        .unwrap_or_else(|| panic!("{scheduled}"))
        .to_string();
    r.call(
        "POST /v2/posts (refused)",
        with_key(Method::POST, "/v2/posts").json(&publisher.body(json!({"text": ""}))),
        Pinned,
    )
    .await;
    let submission_id = published["data"]["post_submission_id"].as_str().unwrap();
    r.call(
        "GET /v2/posts/{post_submission_id}",
        with_key(Method::GET, &format!("/v2/posts/{submission_id}")),
        Pinned,
    )
    .await;
    r.call("GET /v2/posts", with_key(Method::GET, "/v2/posts"), Pinned)
        .await;
    r.call(
        "GET /api/scheduled-posts",
        with_key(Method::GET, "/api/scheduled-posts"),
        Pinned,
    )
    .await;
    r.call(
        "DELETE /api/scheduled-posts/{id}",
        with_key(
            Method::DELETE,
            &format!("/api/scheduled-posts/{scheduled_id}"),
        ),
        Pinned,
    )
    .await;

    // The dashboard session's endpoints.
    let me = r
        .call(
            "GET /auth/me",
            session(dash, Method::GET, app.url("/auth/me")),
            Pinned,
        )
        .await;
    r.call(
        "GET /api/published-posts",
        session(dash, Method::GET, app.url("/api/published-posts")),
        Pinned,
    )
    .await;
    r.call(
        "GET /api/accounts",
        session(dash, Method::GET, app.url("/api/accounts")),
        Pinned,
    )
    .await;
    r.call(
        "POST /api/token/info",
        session(dash, Method::POST, app.url("/api/token/info"))
            .json(&json!({"account_id": account})),
        Pinned,
    )
    .await;
    r.call(
        "GET /api/subscription/status",
        session(dash, Method::GET, app.url("/api/subscription/status")),
        Pinned,
    )
    .await;
    let created = r
        .call(
            "POST /api/keys",
            session(dash, Method::POST, app.url("/api/keys")).json(&json!({"name": "second"})),
            Pinned,
        )
        .await;
    // A key's last use is written behind the request (batched): wait until the publisher's
    // shows, so the body does not depend on how busy the machine is.
    let started = std::time::Instant::now();
    loop {
        let keys: Value = session(dash, Method::GET, app.url("/api/keys"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let used = keys["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["name"] == "publisher" && !k["last_used_at"].is_null());
        if used {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the publisher key's last use was never recorded: {keys}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    r.call(
        "GET /api/keys",
        session(dash, Method::GET, app.url("/api/keys")),
        Pinned,
    )
    .await;
    let key_id = created["key"]["id"]
        .as_str()
        .or_else(|| created["id"].as_str())
        .unwrap_or_else(|| panic!("a key id in {created}"))
        .to_string();
    r.call(
        "DELETE /api/keys/{id}",
        session(
            dash,
            Method::DELETE,
            app.url(&format!("/api/keys/{key_id}")),
        ),
        Pinned,
    )
    .await;

    // Performance and collection: numbers from the simulator's random accounts.
    let q = format!("account_id={account}&platform=facebook");
    for endpoint in ["metrics", "account", "posts"] {
        r.call(
            &format!("GET /api/performance/{endpoint}"),
            with_key(Method::GET, &format!("/api/performance/{endpoint}?{q}")),
            Volatile,
        )
        .await;
    }
    r.call(
        "GET /api/performance/post/{id}",
        with_key(Method::GET, &format!("/api/performance/post/{post_id}?{q}")),
        Volatile,
    )
    .await;
    r.call(
        "POST /api/cron/collect-performance",
        with_key(Method::POST, "/api/cron/collect-performance"),
        Volatile,
    )
    .await;
    r.call(
        "GET /api/cron/check-missing",
        with_key(
            Method::GET,
            &format!("/api/cron/check-missing?account_id={account}&days=3"),
        ),
        Volatile,
    )
    .await;
    let yesterday = (app.clock_now() - Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    r.call(
        "POST /api/cron/backfill",
        with_key(Method::POST, "/api/cron/backfill")
            .json(&json!({"account_id": account, "missing_dates": [yesterday]})),
        Volatile,
    )
    .await;
    r.call(
        "GET /api/cron/collection-status",
        with_key(Method::GET, "/api/cron/collection-status?days=1"),
        Volatile,
    )
    .await;

    // Operations.
    r.call("GET /healthz", app.http.get(app.url("/healthz")), Pinned)
        .await;
    r.call("GET /readyz", app.http.get(app.url("/readyz")), Pinned)
        .await;
    r.call(
        "GET /api/admin/actors",
        operator(Method::GET, "/api/admin/actors"),
        Volatile,
    )
    .await;
    r.call(
        "GET /admin/users",
        operator(
            Method::GET,
            &format!(
                "/admin/users?email={}",
                me["user"]["email"].as_str().unwrap()
            ),
        ),
        Pinned,
    )
    .await;
    r.call(
        "PUT /admin/users/{id}/plan",
        operator(Method::PUT, &format!("/admin/users/{}/plan", dash.user_id))
            .json(&json!({"plan": "ultra", "plan_type": "annual"})),
        Pinned,
    )
    .await;

    // Errors.
    r.call(
        "401 (no key)",
        app.http.get(app.url("/v2/accounts")),
        Pinned,
    )
    .await;
    r.call(
        "404 (no route)",
        app.http.get(app.url("/v2/nowhere")),
        Pinned,
    )
    .await;
    r.call(
        "405 (wrong method)",
        with_key(Method::PATCH, "/v2/posts"),
        Pinned,
    )
    .await;
    assert_no_violations(&app.sim);

    let got = Value::Object(r.entries);
    if std::env::var_os("GOLDEN_UPDATE").is_some() {
        std::fs::create_dir_all(std::path::Path::new(GOLDEN).parent().unwrap()).unwrap();
        std::fs::write(GOLDEN, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
        return;
    }
    let text = std::fs::read_to_string(GOLDEN)
        .unwrap_or_else(|e| panic!("{GOLDEN}: {e} (GOLDEN_UPDATE=1 writes it)"));
    let want: Value = serde_json::from_str(&text).unwrap();
    let (want, got) = (want.as_object().unwrap(), got.as_object().unwrap());
    let mut differences = vec![];
    for (name, expected) in want {
        match got.get(name) {
            Some(actual) if actual == expected => {}
            Some(actual) => {
                differences.push(format!("{name}:\n  want {expected}\n  got  {actual}"))
            }
            None => differences.push(format!("{name}: no longer called")),
        }
    }
    for name in got.keys().filter(|name| !want.contains_key(*name)) {
        differences.push(format!("{name}: new (not in the golden file)"));
    }
    assert!(
        differences.is_empty(),
        "responses changed (GOLDEN_UPDATE=1 rewrites {GOLDEN} if the change is intended):\n{}",
        differences.join("\n")
    );
}
