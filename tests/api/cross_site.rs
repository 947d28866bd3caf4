//! State-changing requests carrying the dashboard session cookie must come from this site: a
//! cross-site `Origin` (or `Sec-Fetch-Site`) gets 403 `CrossSiteRequest` on every such route.

use reqwest::{Method, RequestBuilder, header};
use serde_json::{Value, json};

use crate::helpers::{Dashboard, TestApp, error_body, status_and_json};

/// Headers a browser sends on a request another site caused.
const CROSS_SITE: [(&str, &str); 6] = [
    ("origin", "https://evil.example"),
    ("origin", "null"),
    ("sec-fetch-site", "cross-site"),
    ("sec-fetch-site", "same-site"),
    // The service's own host on another port is another origin.
    ("origin", "http://127.0.0.1:1"),
    ("origin", "http://localhost"),
];

/// Every session route that changes state, with a body it accepts.
fn session_writes(app: &TestApp, key_id: &str, account_id: &str) -> Vec<(Method, String, Value)> {
    vec![
        (Method::POST, app.url("/api/keys"), json!({"name": "x"})),
        (
            Method::POST,
            app.url("/api/token/info"),
            json!({ "account_id": account_id }),
        ),
        (
            Method::DELETE,
            app.url(&format!("/api/keys/{key_id}")),
            Value::Null,
        ),
        (
            Method::DELETE,
            app.url(&format!("/api/accounts/{account_id}")),
            Value::Null,
        ),
        (Method::POST, app.url("/auth/logout"), Value::Null),
    ]
}

fn request(dashboard: &Dashboard, method: &Method, url: &str, body: &Value) -> RequestBuilder {
    let request = dashboard.no_redirect.request(method.clone(), url);
    if body.is_null() {
        request
    } else {
        request.json(body)
    }
}

async fn key_count(app: &TestApp, dashboard: &Dashboard) -> usize {
    let (_, body) = status_and_json(
        dashboard
            .client
            .get(app.url("/api/keys"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    body["keys"].as_array().unwrap().len()
}

#[actix_web::test]
async fn cross_site_writes_are_refused_on_every_session_route() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("csrf@example.com").await;
    let (_, key_id) = app.create_key(&dashboard, "kept").await;
    let account = app.add_account(dashboard.user_id, "facebook", "Page").await;
    let routes = session_writes(&app, &key_id, &account.id.to_string());

    for (method, url, body) in &routes {
        for (name, value) in CROSS_SITE {
            let response = request(&dashboard, method, url, body)
                .header(name, value)
                .send()
                .await
                .unwrap();
            let (status, body) = status_and_json(response).await;
            assert_eq!(
                (status, body),
                (
                    403,
                    error_body(
                        "CrossSiteRequest",
                        "Cross-site request refused: state-changing requests must come from this site"
                    )
                ),
                "{method} {url} with {name}: {value}"
            );
        }
        // A same-origin Origin does not launder a cross-site fetch.
        let response = request(&dashboard, method, url, body)
            .header(header::ORIGIN, &app.base)
            .header("sec-fetch-site", "cross-site")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{method} {url}");
    }

    // Nothing happened: one key, the account listed, still signed in.
    assert_eq!(key_count(&app, &dashboard).await, 1);
    let (_, accounts) = status_and_json(
        dashboard
            .client
            .get(app.url("/api/accounts"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(accounts["accounts"].as_array().unwrap().len(), 1);
    let me = dashboard
        .client
        .get(app.url("/auth/me"))
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), 200);
}

#[actix_web::test]
async fn same_origin_writes_are_accepted() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("same-origin@example.com").await;
    let (_, key_id) = app.create_key(&dashboard, "to delete").await;
    let account = app.add_account(dashboard.user_id, "facebook", "Page").await;
    let routes = session_writes(&app, &key_id, &account.id.to_string());
    // Alternate between what browsers send: Origin with fetch metadata, Origin alone, fetch
    // metadata alone.
    let same_origin: [&[(&str, &str)]; 3] = [
        &[("origin", &app.base), ("sec-fetch-site", "same-origin")],
        &[("origin", &app.base)],
        &[("sec-fetch-site", "same-origin")],
    ];
    for (i, (method, url, body)) in routes.iter().enumerate() {
        let mut request = request(&dashboard, method, url, body);
        for (name, value) in same_origin[i % same_origin.len()] {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200, "{method} {url}");
    }
    // The writes took effect, the last one being the sign-out.
    let me = dashboard
        .client
        .get(app.url("/auth/me"))
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), 401);
    let again = app.sign_in("same-origin@example.com").await;
    assert_eq!(key_count(&app, &again).await, 1, "one created, one deleted");
}

#[actix_web::test]
async fn clients_that_send_neither_header_are_not_browsers_and_are_let_through() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("curl@example.com").await;
    let response = dashboard
        .client
        .post(app.url("/api/keys"))
        .json(&json!({"name": "from curl"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(key_count(&app, &dashboard).await, 1);
}

#[actix_web::test]
async fn reads_are_not_refused_whatever_their_origin() {
    // A cross-site read cannot see the answer (no CORS headers are sent), and a GET changes
    // nothing: it is left alone, so links from elsewhere keep working.
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("reader@example.com").await;
    let response = dashboard
        .client
        .get(app.url("/api/keys"))
        .header(header::ORIGIN, "https://evil.example")
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        !response
            .headers()
            .contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN)
    );
}

#[actix_web::test]
async fn a_cross_site_sign_out_without_a_session_is_refused_too() {
    let app = TestApp::spawn().await;
    let (status, body) = status_and_json(
        app.http
            .post(app.url("/auth/logout"))
            .header(header::ORIGIN, "null")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("CrossSiteRequest"))
    );
}
