//! Operators' view: health checks, the actor view and its page, metrics, request ids, and logs
//! that never carry a secret.

use std::time::Duration;

use serde_json::{Value, json};
use service_sim::state::{FaultKind, FaultSpec};

use crate::helpers::{OPERATOR_TOKEN, TestApp, status_and_json};
use crate::openapi::assert_documented;

async fn operator_get(app: &TestApp, path: &str) -> reqwest::Response {
    app.http
        .get(app.url(path))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap()
}

#[actix_web::test]
async fn health_checks_need_no_authentication_and_leak_nothing() {
    let app = TestApp::spawn_with(|config| config.collector.enabled = true).await;
    let (status, body) =
        status_and_json(app.http.get(app.url("/healthz")).send().await.unwrap()).await;
    assert_eq!((status, body), (200, json!({"status": "ok"})));
    let (status, body) =
        status_and_json(app.http.get(app.url("/readyz")).send().await.unwrap()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"status": "ready", "checks": {"database": "ok", "migrations": "ok", "supervisor": "ok", "scheduler": "ok", "collector": "ok", "reconciler": "ok", "membership": "ok"}})
    );
    // The database goes away: not ready, and still nothing but the failed check's name.
    match app.state.store.backend() {
        sea_orm::DbBackend::Postgres => {
            app.state
                .store
                .connection()
                .get_postgres_connection_pool()
                .close()
                .await
        }
        _ => {
            app.state
                .store
                .connection()
                .get_sqlite_connection_pool()
                .close()
                .await
        }
    }
    let (status, body) =
        status_and_json(app.http.get(app.url("/readyz")).send().await.unwrap()).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "not_ready");
    assert_eq!(body["checks"]["database"], "failed");
    assert!(
        !body.to_string().to_lowercase().contains("pool"),
        "no internals: {body}"
    );
}

/// A database restart or failover ends the connections waiting in the service's pool. The pool
/// does not check a connection it used within the last second (a round trip per transaction on
/// the publish path), but does check one idle for longer before handing it out: requests after
/// the restart succeed instead of each failing on a dead connection.
#[actix_web::test]
async fn requests_succeed_after_the_database_ends_the_pools_connections() {
    let app = TestApp::spawn_without_background(|_| {}).await;
    let dashboard = app.sign_in("restart@example.com").await;
    let history = || async {
        let response = dashboard
            .client
            .get(app.url("/api/published-posts"))
            .send()
            .await
            .unwrap();
        status_and_json(response).await
    };
    let ready =
        || async { status_and_json(app.http.get(app.url("/readyz")).send().await.unwrap()).await };
    // Several connections in the pool, each used.
    let warm = futures_util::future::join_all((0..4).map(|_| history())).await;
    assert!(warm.iter().all(|(status, _)| *status == 200), "{warm:?}");
    let before = history().await;
    if !app.end_database_connections().await {
        return; // SQLite: a file, no server to end the connections (the PostgreSQL suite runs this).
    }
    // Idle for longer than the pool trusts a connection unchecked.
    tokio::time::sleep(social_service::store::POOL_PING_AFTER_IDLE + Duration::from_millis(500))
        .await;
    for _ in 0..3 {
        // (The background actors are not started here: only the database's check counts.)
        let (_, body) = ready().await;
        assert_eq!(body["checks"]["database"], "ok", "{body}");
        assert_eq!(history().await, before);
    }
}

#[actix_web::test]
async fn the_actor_view_shows_a_busy_actor_and_its_queue() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let idle = app.publisher("threads", "pro").await;
    let (status, _) = app
        .post(&idle.key, &idle.body(json!({"text": "warm up"})))
        .await;
    assert_eq!(status, 200);
    app.sim.state().set_faults(
        "facebook",
        &publisher.sim.external_id,
        FaultSpec {
            latency_ms: 1_000,
            ..FaultSpec::default()
        },
    );
    let first = publisher.body(json!({"text": "first"}));
    let second = publisher.body(json!({"text": "second"}));
    // The second arrives once the first is being published, and queues behind it.
    let publishes = async {
        tokio::join!(app.post(&publisher.key, &first), async {
            app.wait_for_actor(&publisher.account, "the first publish in flight", |h| {
                h.in_flight_submission.is_some()
            })
            .await;
            app.post(&publisher.key, &second).await
        })
    };
    // Looked at until it shows the second queued behind a publish 200 ms in flight.
    let look = async {
        let started = std::time::Instant::now();
        loop {
            let response =
                operator_get(&app, "/api/admin/actors?platform=facebook&state=publishing").await;
            let (status, view) = status_and_json(response).await;
            let actor = &view["actors"][0];
            if status != 200
                || (actor["queue_depth"] == 1
                    && actor["in_flight_ms"].as_u64().is_some_and(|ms| ms >= 200))
            {
                break (status, view);
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "never busy with one queued: {view}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    // The view reads the board, never the (busy) actors; its speed is the benchmark's business.
    let ((a, b), (status, view)) = tokio::join!(publishes, look);
    assert_eq!((a.0, b.0), (200, 200));
    assert_eq!(status, 200, "{view}");
    // Busy (the in-flight members present) and then idle, the view is what the document says.
    assert_documented("get", "/api/admin/actors", 200, &view);
    assert_eq!(view["count"], 1, "{view}");
    let actor = &view["actors"][0];
    assert_eq!(actor["account_id"], json!(publisher.account.id));
    assert_eq!(actor["platform"], "facebook");
    assert_eq!(actor["name"], publisher.account.display_name);
    assert_eq!(actor["state"], "publishing");
    assert_eq!(actor["queue_depth"], 1);
    assert!(actor["in_flight_ms"].as_u64().unwrap() >= 200, "{actor}");
    assert_eq!(actor["token_valid"], true);
    assert_eq!(actor["limiter"]["capacity"], 200);
    assert!(actor["limiter"]["remaining"].as_u64().unwrap() < 200);
    assert!(view["scheduler"]["instance"].is_string());

    // Afterwards: idle, with its counts; the threads actor is listed too.
    let (_, view) = status_and_json(operator_get(&app, "/api/admin/actors").await).await;
    assert_documented("get", "/api/admin/actors", 200, &view);
    assert_eq!(view["count"], 2);
    let facebook = view["actors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["platform"] == "facebook")
        .unwrap();
    assert_eq!(facebook["state"], "idle");
    assert_eq!(facebook["published"], 2);
    assert_eq!(facebook["queue_depth"], 0);

    // Operators only; bad filters are refused.
    let response = app
        .http
        .get(app.url("/api/admin/actors"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let (status, body) =
        status_and_json(operator_get(&app, "/api/admin/actors?state=asleep").await).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (400, "InvalidRequest")
    );
}

#[actix_web::test]
async fn an_invalid_token_shows_in_the_actor_view() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("instagram", "pro").await;
    app.sim.state().set_faults(
        "instagram",
        &publisher.sim.external_id,
        FaultSpec {
            error: Some(FaultKind::TokenRevoked),
            ..FaultSpec::default()
        },
    );
    let body = publisher.body(json!({"text": "x", "mediaUrls": [app.media_url("sample.jpg")]}));
    let (status, _) = app.post(&publisher.key, &body).await;
    assert_eq!(status, 401);
    let (_, view) =
        status_and_json(operator_get(&app, "/api/admin/actors?state=token_invalid").await).await;
    assert_eq!(view["count"], 1, "{view}");
    assert_eq!(view["actors"][0]["token_valid"], false);
    assert_eq!(view["actors"][0]["failed"], 1);
    assert!(
        view["actors"][0]["last_error"]
            .as_str()
            .unwrap()
            .contains("InvalidToken")
    );
}

#[actix_web::test]
async fn metrics_count_requests_and_publishes() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    for text in ["counted", "counted again"] {
        let (status, _) = app
            .post(&publisher.key, &publisher.body(json!({"text": text})))
            .await;
        assert_eq!(status, 200);
    }
    // A route with a parameter is counted under its pattern, whatever the id.
    for id in ["abc", "def"] {
        let response = app
            .http
            .get(app.url(&format!("/api/keys/{id}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401);
    }
    let response = app.http.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 401, "operators only");
    let response = operator_get(&app, "/metrics").await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = response.text().await.unwrap();
    for line in [
        "publishes_total{platform=\"facebook\",post_type=\"text\",outcome=\"published\",code=\"\"} 2",
        "http_requests_total{route=\"/v2/posts\",method=\"POST\",status=\"200\"} 2",
        "http_requests_total{route=\"/api/keys/{id}\",method=\"GET\",status=\"401\"} 2",
        "account_actors 1",
        "publish_queue_depth 0",
        "# TYPE http_request_duration_seconds histogram",
        "publish_duration_seconds_count{platform=\"facebook\"} 2",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    assert!(text.contains("db_pool_connections{state=\"idle\"}"));
}

#[actix_web::test]
async fn request_ids_are_accepted_or_generated_and_echoed() {
    let app = TestApp::spawn().await;
    let given = app
        .http
        .get(app.url("/healthz"))
        .header("x-request-id", "trace-42.a_b:c")
        .send()
        .await
        .unwrap();
    assert_eq!(given.headers()["x-request-id"], "trace-42.a_b:c");
    let generated = app.http.get(app.url("/nowhere")).send().await.unwrap();
    assert_eq!(generated.status(), 404);
    let id = generated.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
    // Unreasonable ids are replaced, errors included.
    let replaced = app
        .http
        .get(app.url("/v2/accounts"))
        .header("x-request-id", "x".repeat(200))
        .send()
        .await
        .unwrap();
    assert_eq!(replaced.status(), 401);
    let id = replaced.headers()["x-request-id"].to_str().unwrap();
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
}

#[actix_web::test]
async fn logs_of_a_publish_and_a_connection_carry_no_secret() {
    use std::process::{Command, Stdio};

    use service_sim::{SimConfig, Simulator};
    use social_service::{
        crypto::{self, TokenCipher},
        services::operator,
        services::operator::ManualAccount,
        store::Store,
    };
    let (client_id, client_secret) = ("log-test-client", "log-test-client-secret-0123");
    let sim = Simulator::start(SimConfig {
        idp_clients: vec![(client_id.into(), client_secret.into())],
        ..SimConfig::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db_url = format!("sqlite://{}/logs.db?mode=rwc", dir.path().display());
    let key = TokenCipher::generate_key();
    let cipher = TokenCipher::from_config_value(&key).unwrap();
    let store = Store::connect(&db_url, 2, None).await.unwrap();
    store.migrate().await.unwrap();
    let now = chrono::Utc::now();
    let user = store
        .upsert_oidc_user("iss", "logs", Some("logs@example.com"), None, now)
        .await
        .unwrap();
    let sim_account = sim.state().create_account("x", "logger", None);
    let account = operator::add_account(
        &store,
        &cipher,
        now,
        ManualAccount {
            user_id: user.id,
            platform: "x".into(),
            external_id: sim_account.external_id.clone(),
            name: "logger".into(),
            username: None,
            account_type: None,
            profile_picture_url: None,
            access_token: sim_account.access_token.clone(),
            refresh_token: Some(sim_account.refresh_token.clone()),
            token_expires_at: None,
            data_access_expires_at: None,
        },
    )
    .await
    .unwrap();
    store
        .set_plan(
            user.id,
            social_service::usage::Plan::Ultra,
            Some("monthly".into()),
            None,
            now,
        )
        .await
        .unwrap();
    let api_key = crypto::generate_api_key();
    store
        .insert_api_key(user.id, "logs", &api_key, now)
        .await
        .unwrap();
    let session_key = "s".repeat(40);
    let operator_token = "operator-token-for-the-log-test";
    let log_path = dir.path().join("service.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_service"))
        .arg("serve")
        .env_remove("DATABASE_URL")
        .env("SERVICE__SERVER__BIND", "127.0.0.1:0")
        .env("SERVICE__DATABASE__URL", &db_url)
        .env("SERVICE__SECRETS__SESSION_KEY", &session_key)
        .env("SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY", &key)
        .env("SERVICE__SECRETS__OPERATOR_TOKEN", operator_token)
        .env("SERVICE__PLATFORMS__X_URL", format!("{}/x", sim.base_url))
        .env(
            "SERVICE__PLATFORMS__THREADS_URL",
            format!("{}/threads", sim.base_url),
        )
        .env("SERVICE__AUTH__ISSUER", sim.idp_issuer())
        .env("SERVICE__AUTH__CLIENT_ID", client_id)
        .env("SERVICE__AUTH__CLIENT_SECRET", client_secret)
        .env("SERVICE__OAUTH__THREADS_CLIENT_ID", client_id)
        .env("SERVICE__OAUTH__THREADS_CLIENT_SECRET", client_secret)
        .env(
            "SERVICE__OAUTH__THREADS_AUTHORIZE_URL",
            format!("{}/oauth/threads/authorize", sim.base_url),
        )
        // The token endpoints are their own keys, not derived from the API host.
        .env(
            "SERVICE__OAUTH__THREADS_TOKEN_URL",
            format!("{}/threads/oauth/access_token", sim.base_url),
        )
        .env(
            "SERVICE__OAUTH__THREADS_EXCHANGE_URL",
            format!("{}/threads/access_token", sim.base_url),
        )
        .env("SERVICE__PLATFORMS__POLL_INTERVAL_MS", "50")
        .env(
            "SERVICE__PUBLISHING__MEDIA_ALLOW_HOSTS",
            format!("[\"127.0.0.1:{}\"]", sim.port),
        )
        .env("SERVICE__LOGGING__FORMAT", "json")
        .env("RUST_LOG", "trace,sqlx=warn")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    // The bound address is in the log.
    let started = std::time::Instant::now();
    let base = loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains("listening")) {
            let event: Value = serde_json::from_str(line).unwrap();
            break format!("http://{}", event["fields"]["address"].as_str().unwrap());
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("service did not start: {text}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let client = reqwest::Client::new();
    let response = client
        .post(format!("{base}/v2/posts"))
        .header("service-api-key", &api_key.full)
        .json(&json!({"post": {
            "accountId": account.id,
            "content": {"text": ["a thread", "with two posts"], "mediaUrls": [sim.sample_media()["jpeg"]], "platform": "x"},
            "target": {"targetType": "x"},
        }}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    // A dashboard user signs in and connects a threads account over OAuth.
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let signed_in = browser
        .get(format!("{base}/auth/login?login_hint=logs@example.com"))
        .send()
        .await
        .unwrap();
    let signed_in_status = signed_in.status();
    let connected = browser
        .get(format!(
            "{base}/api/connect/threads?login_hint=Log%20Person"
        ))
        .send()
        .await
        .unwrap();
    let connected_status = connected.status();
    let connected_body = connected.text().await.unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, 200, "{body}");
    assert_eq!(signed_in_status, 200);
    assert_eq!(connected_status, 200, "{connected_body}");
    let threads = sim.state().account_named("threads", "Log Person").unwrap();
    let logs = std::fs::read_to_string(&log_path).unwrap();
    assert!(logs.contains("published"), "the publish was logged");
    // Spans: the request (with its id), the actor's message, each platform call.
    assert!(
        logs.contains("\"request_id\""),
        "request spans carry the id"
    );
    assert!(logs.contains("account_actor"), "actor message spans");
    assert!(
        logs.contains("platform_call") && logs.contains("/x/2/tweets"),
        "platform call spans"
    );
    for (what, secret) in [
        ("API key", api_key.full.as_str()),
        ("API key body", &api_key.full["service_".len()..]),
        ("access token", sim_account.access_token.as_str()),
        ("refresh token", sim_account.refresh_token.as_str()),
        ("token encryption key", key.as_str()),
        ("session key", session_key.as_str()),
        ("operator token", operator_token),
        ("connected account's token", threads.access_token.as_str()),
        ("OAuth client secret", client_secret),
    ] {
        assert!(!logs.contains(secret), "the log contains the {what}");
    }
    crate::helpers::assert_no_violations(&sim);
}

#[actix_web::test]
async fn the_healthcheck_command_probes_the_configured_address_for_readiness() {
    use social_service::startup::healthcheck::{probe, probe_address};
    let app = TestApp::spawn().await;
    let port = app.base.rsplit(':').next().unwrap().parse::<u16>().unwrap();
    let mut config = app.config.clone();
    // A service bound to every address is probed on loopback.
    config.server.bind = format!("0.0.0.0:{port}");
    let address = probe_address(&config).unwrap();
    assert_eq!(address.to_string(), format!("127.0.0.1:{port}"));
    probe(address).await.unwrap();
    // Nothing listening: not ready, and the reason names the address.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    config.server.bind = format!("127.0.0.1:{closed_port}");
    let refused = probe(probe_address(&config).unwrap()).await.unwrap_err();
    assert!(refused.contains(&closed_port.to_string()), "{refused}");
    // Port 0 names no port to probe.
    config.server.bind = "127.0.0.1:0".to_string();
    assert!(probe_address(&config).unwrap_err().contains("port 0"));
}

#[actix_web::test]
async fn a_service_on_every_interface_without_a_public_url_names_itself_by_loopback() {
    let app = TestApp::spawn_with(|config| {
        config.server.bind = "0.0.0.0:0".into();
        config.server.public_url = String::new();
    })
    .await;
    let port = app.base.rsplit(':').next().unwrap();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client
        .get(format!("{}/auth/login", app.base))
        .send()
        .await
        .unwrap();
    let location = response.headers()["location"].to_str().unwrap().to_string();
    let callback = format!("http://127.0.0.1:{port}/auth/callback");
    let sent = url::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .find(|(name, _)| name == "redirect_uri")
        .map(|(_, value)| value.into_owned());
    assert_eq!(sent.as_deref(), Some(callback.as_str()), "{location}");
}
