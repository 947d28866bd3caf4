//! `GET /api/performance/*` over HTTP: the spec's error form, the account checks, the shapes
//! as a client gets them, and the account actor's limiter shared with publishing.

use reqwest::Response;
use serde_json::{Value, json};
use service_sim::state::{FaultKind, FaultSpec};
use uuid::Uuid;

use crate::helpers::{Publisher, TestApp, status_and_json};

async fn perf_get(app: &TestApp, key: &str, path: &str) -> Response {
    app.http
        .get(app.url(path))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap()
}

async fn perf(app: &TestApp, publisher: &Publisher, endpoint: &str, extra: &str) -> (u16, Value) {
    let path = format!(
        "/api/performance/{endpoint}?account_id={}&platform={}{extra}",
        publisher.account.id, publisher.account.platform
    );
    status_and_json(perf_get(app, &publisher.key, &path).await).await
}

fn perf_error(text: &str) -> Value {
    json!({"success": false, "error": text})
}

#[actix_rt::test]
async fn errors_use_the_performance_form_of_the_spec() {
    let app = TestApp::spawn().await;
    let owner = app.publisher("facebook", "pro").await;
    let other = app.publisher("facebook", "pro").await;
    for endpoint in ["metrics", "account", "posts", "post/123"] {
        let base = format!("/api/performance/{endpoint}");
        let (status, body) =
            status_and_json(perf_get(&app, &owner.key, &format!("{base}?platform=facebook")).await)
                .await;
        assert_eq!(
            (status, body),
            (400, perf_error("Missing account_id parameter"))
        );
        // Another user's account, an unknown one and a malformed id are all "not found".
        for id in [
            other.account.id.to_string(),
            Uuid::new_v4().to_string(),
            "nope".into(),
        ] {
            let path = format!("{base}?account_id={id}");
            let (status, body) = status_and_json(perf_get(&app, &owner.key, &path).await).await;
            assert_eq!(
                (status, body),
                (404, perf_error("Account not found")),
                "{path}"
            );
        }
        let path = format!("{base}?account_id={}", owner.account.id);
        let wrong_key = format!("service_{}", "A".repeat(40));
        let (status, body) = status_and_json(perf_get(&app, &wrong_key, &path).await).await;
        assert_eq!((status, body), (401, perf_error("Invalid API key")));
    }
    // A parameter that does not fit.
    let (status, body) = perf(&app, &owner, "account", "&since=2026-02-30").await;
    assert_eq!(
        (status, body),
        (400, perf_error("since must be a date YYYY-MM-DD"))
    );
    let (status, body) = perf(&app, &owner, "posts", "&limit=500").await;
    assert_eq!(
        (status, body),
        (400, perf_error("limit must be an integer from 1 to 100"))
    );
    let path = format!(
        "/api/performance/account?account_id={}&platform=threads",
        owner.account.id
    );
    let (status, body) = status_and_json(perf_get(&app, &owner.key, &path).await).await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"],
        "platform threads does not match the account, which is a facebook account"
    );
    // A disconnected account is gone for these endpoints too.
    let response = owner
        .dashboard
        .client
        .delete(app.url(&format!("/api/accounts/{}", owner.account.id)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (status, body) = perf(&app, &owner, "account", "").await;
    assert_eq!((status, body), (404, perf_error("Account not found")));
}

#[actix_rt::test]
async fn x_accounts_have_no_performance_metrics() {
    let app = TestApp::spawn().await;
    let x = app.publisher("x", "ultra").await;
    for endpoint in ["metrics", "account", "posts", "post/1"] {
        let (status, body) = perf(&app, &x, endpoint, "").await;
        assert_eq!(
            (status, body),
            (
                400,
                perf_error("Performance metrics are not available for x accounts")
            )
        );
    }
    assert_eq!(app.sim.state().request_count("x", &x.sim.external_id), 0);
}

#[actix_rt::test]
async fn platform_failures_say_what_failed() {
    let app = TestApp::spawn().await;
    let threads = app.publisher("threads", "pro").await;
    let fault = |error| FaultSpec {
        error: Some(error),
        ..FaultSpec::default()
    };
    let state = app.sim.state();
    state.set_faults(
        "threads",
        &threads.sim.external_id,
        fault(FaultKind::ServerError),
    );
    let (status, body) = perf(&app, &threads, "account", "").await;
    assert_eq!(
        (status, body),
        (500, perf_error("Failed to fetch performance data"))
    );
    state.set_faults(
        "threads",
        &threads.sim.external_id,
        fault(FaultKind::RateLimit),
    );
    let (status, body) = perf(&app, &threads, "posts", "").await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["success"], false);
    assert!(body["retry_after"].as_u64().unwrap() >= 1, "{body}");
    // A revoked token says so, and the account is then known invalid: the next call (and a
    // publish) is refused without asking the platform.
    state.set_faults(
        "threads",
        &threads.sim.external_id,
        fault(FaultKind::TokenRevoked),
    );
    let (status, body) = perf(&app, &threads, "account", "").await;
    assert_eq!(
        (status, body),
        (
            401,
            perf_error(
                "The platform access token is invalid or was revoked; reconnect the account"
            )
        )
    );
    state.clear_faults(None);
    let before = state.request_count("threads", &threads.sim.external_id);
    let (status, _) = perf(&app, &threads, "account", "").await;
    assert_eq!(status, 401);
    let (status, body) = app
        .post(&threads.key, &threads.body(json!({"text": "hi"})))
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (401, Some("InvalidToken"))
    );
    assert_eq!(
        state.request_count("threads", &threads.sim.external_id),
        before
    );
}

#[actix_rt::test]
async fn reads_share_the_account_limiter_with_publishing() {
    // A facebook page allows 4 calls an hour here: reads spend them, then a publish is refused.
    let app = TestApp::spawn_with(|config| config.publishing.facebook_calls_per_hour = 4).await;
    let page = app.publisher("facebook", "pro").await;
    let (status, body) = perf(&app, &page, "account", "").await;
    assert_eq!(status, 200, "{body}");
    let mut refused = None;
    for _ in 0..4 {
        let (status, body) = perf(&app, &page, "account", "").await;
        if status == 429 {
            refused = Some(body);
            break;
        }
    }
    let refused = refused.expect("reads run out of the page's hourly calls");
    assert!(refused["retry_after"].as_u64().unwrap() >= 1);
    let (status, body) = app
        .post(&page.key, &page.body(json!({"text": "hello"})))
        .await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"], "RateLimitExceeded");
}

#[actix_rt::test]
async fn metrics_lists_the_spec_identifiers_without_platform_calls() {
    let app = TestApp::spawn().await;
    let page = app.publisher("facebook", "pro").await;
    let (status, body) = perf(&app, &page, "metrics", "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["account_id"], json!(page.account.id));
    assert_eq!(body["page_name"], "facebook demo");
    assert_eq!(body["platform"], "facebook");
    assert_eq!(
        body["metrics"]["page_metrics"],
        json!([
            "page_media_view",
            "page_post_engagements",
            "page_total_actions"
        ])
    );
    assert_eq!(body["metrics"]["post_metrics"], json!(["post_media_view"]));
    assert!(body["note"].as_str().unwrap().contains("page_impressions"));
    assert_eq!(
        app.sim
            .state()
            .request_count("facebook", &page.sim.external_id),
        0
    );
}

#[actix_rt::test]
async fn account_posts_and_post_answer_for_every_supported_platform() {
    let app = TestApp::spawn().await;
    for platform in ["facebook", "instagram", "threads", "youtube", "tiktok"] {
        let publisher = app.publisher(platform, "pro").await;
        let (status, account) = perf(&app, &publisher, "account", "").await;
        assert_eq!(status, 200, "{platform}: {account}");
        assert_eq!(account["success"], true);
        crate::openapi::assert_documented("get", "/api/performance/account", 200, &account);
        assert_eq!(
            account["failed_metrics"],
            json!([]),
            "{platform}: {account}"
        );
        let (status, posts) = perf(&app, &publisher, "posts", "&limit=3").await;
        assert_eq!(status, 200, "{platform}: {posts}");
        crate::openapi::assert_documented("get", "/api/performance/posts", 200, &posts);
        // The first listed post, read on its own.
        let first = match platform {
            "facebook" => posts["posts"][0]["post_id"].clone(),
            "instagram" => posts["data"]["media"][0]["media_id"].clone(),
            "threads" => posts["data"]["threads"][0]["id"].clone(),
            "youtube" | "tiktok" => posts["data"]["videos"][0]["video_id"].clone(),
            _ => unreachable!(),
        };
        let first = first
            .as_str()
            .unwrap_or_else(|| panic!("{platform}: {posts}"));
        let (status, post) = perf(&app, &publisher, &format!("post/{first}"), "").await;
        assert_eq!(status, 200, "{platform}: {post}");
        assert_eq!(post["success"], true);
        crate::openapi::assert_documented("get", "/api/performance/post/{post_id}", 200, &post);
    }
}

/// Each platform's metric catalogue is what the document's `MetricsBody` says (one variant per
/// platform shape, every member named).
#[actix_rt::test]
async fn every_platform_catalogue_is_documented() {
    let app = TestApp::spawn().await;
    for platform in ["facebook", "instagram", "threads", "youtube", "tiktok"] {
        let publisher = app.publisher(platform, "pro").await;
        let (status, body) = perf(&app, &publisher, "metrics", "").await;
        assert_eq!(status, 200, "{platform}: {body}");
        crate::openapi::assert_documented("get", "/api/performance/metrics", 200, &body);
    }
}
