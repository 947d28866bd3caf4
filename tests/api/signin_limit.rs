//! The per-address limit on anonymous sign-in requests (`/auth/login`, `/auth/callback`), and
//! which address counts behind a reverse proxy.

use chrono::Duration;
use reqwest::{Client, Response, redirect::Policy};
use serde_json::json;

use crate::helpers::TestApp;

/// The shipped defaults: 30 requests in any minute, 10 of them back to back.
async fn spawn_with_default_limit(trusted_proxies: &[&str]) -> TestApp {
    let trusted: Vec<String> = trusted_proxies.iter().map(|p| p.to_string()).collect();
    TestApp::spawn_with(move |config| {
        let defaults = social_service::config::Config::default();
        config.auth.signin_rate_per_minute = defaults.auth.signin_rate_per_minute;
        config.auth.signin_burst = defaults.auth.signin_burst;
        config.server.trusted_proxies = trusted;
    })
    .await
}

async fn login(app: &TestApp, forwarded_for: Option<&str>) -> Response {
    let mut request = app.http.get(app.url("/auth/login"));
    if let Some(value) = forwarded_for {
        request = request.header("x-forwarded-for", value);
    }
    request.send().await.unwrap()
}

/// Spends `n` requests of the budget, each admitted (sent on to the identity provider).
async fn admitted(app: &TestApp, forwarded_for: Option<&str>, n: usize) {
    for i in 0..n {
        let status = login(app, forwarded_for).await.status();
        assert_eq!(status, 302, "request {} of {n} should be admitted", i + 1);
    }
}

async fn assert_limited(response: Response, retry_after: u64) {
    assert_eq!(response.status(), 429);
    assert_eq!(
        response.headers()["retry-after"].to_str().unwrap(),
        retry_after.to_string()
    );
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({
            "success": false,
            "error": "RateLimitExceeded",
            "message": format!("Rate limit exceeded. Retry after {retry_after} seconds."),
            "retry_after": retry_after,
        })
    );
}

#[actix_web::test]
async fn the_31st_sign_in_request_within_a_minute_is_refused_but_not_another_addresss() {
    let app = spawn_with_default_limit(&[]).await;
    // A burst of 10, then the 11th at once is refused: the next comes in 60 s / (30 - 10).
    admitted(&app, None, 10).await;
    assert_limited(login(&app, None).await, 3).await;
    // One every 3 s for the rest of the minute: 30 in all.
    for _ in 0..20 {
        app.clock.advance(Duration::seconds(3));
        admitted(&app, None, 1).await;
    }
    // The 31st, still within the minute, and on the callback: both routes share the budget.
    let callback = app
        .http
        .get(app.url("/auth/callback?code=c&state=s"))
        .send()
        .await
        .unwrap();
    assert_limited(callback, 3).await;
    // A browser gets the same refusal as a page.
    let page = app
        .http
        .get(app.url("/auth/login"))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 429);
    assert_eq!(page.headers()["retry-after"], "3");
    assert!(page.text().await.unwrap().contains("RateLimitExceeded"));

    // Another client address (another loopback address of this machine) has its own budget.
    let other = Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .redirect(Policy::none())
        .build()
        .unwrap();
    let response = other.get(app.url("/auth/login")).send().await.unwrap();
    assert_eq!(response.status(), 302);
    // And the first one's budget comes back with time.
    app.clock.advance(Duration::seconds(3));
    admitted(&app, None, 1).await;
}

#[actix_web::test]
async fn forwarded_for_from_an_untrusted_peer_is_ignored() {
    let app = spawn_with_default_limit(&[]).await;
    admitted(&app, Some("203.0.113.1"), 10).await;
    // Another address in the header changes nothing: anyone can send one.
    assert_limited(login(&app, Some("203.0.113.2")).await, 3).await;
    assert_limited(login(&app, None).await, 3).await;
}

#[actix_web::test]
async fn forwarded_for_from_a_trusted_proxy_names_the_client() {
    let app = spawn_with_default_limit(&["127.0.0.0/8"]).await;
    admitted(&app, Some("203.0.113.1"), 10).await;
    assert_limited(login(&app, Some("203.0.113.1")).await, 3).await;
    // An entry the client added to the left of the one the proxy wrote does not help it.
    assert_limited(login(&app, Some("198.51.100.7, 203.0.113.1")).await, 3).await;
    // Trusted hops are walked past.
    assert_limited(login(&app, Some("203.0.113.1, 127.0.0.9")).await, 3).await;
    // Another client behind the same proxy has its own budget, and so has the proxy itself.
    admitted(&app, Some("203.0.113.2"), 1).await;
    admitted(&app, None, 1).await;
}
