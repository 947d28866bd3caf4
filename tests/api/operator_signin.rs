//! The old operator page's sign-in (`/admin/login`): no token in the address, a form that trades
//! the token for an HttpOnly, SameSite=Strict, signed and expiring cookie. The page it opened,
//! `/admin/actors`, now redirects to the dashboard's operator page (issue 14), which needs a
//! dashboard session: the cookie opens nothing any more.

use reqwest::{Client, header, redirect::Policy};
use serde_json::json;

use crate::{
    helpers::{OPERATOR_TOKEN, TestApp, error_body, status_and_json},
    ops::operator_browser,
};

fn no_redirect_client() -> Client {
    Client::builder().redirect(Policy::none()).build().unwrap()
}

/// The `name=value` part of the operator cookie a sign-in sets.
async fn operator_cookie(app: &TestApp) -> String {
    let response = app
        .http
        .post(app.url("/admin/login"))
        .form(&[("token", OPERATOR_TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    let set_cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    set_cookie.split(';').next().unwrap().to_string()
}

#[actix_web::test]
async fn the_operator_token_in_the_address_no_longer_opens_the_page() {
    let app = TestApp::spawn().await;
    let url = app.url(&format!("/admin/actors?token={OPERATOR_TOKEN}"));
    // The page went away (issue 14): whoever asks, with the token in the address, as a browser,
    // or with the bearer header, is sent to the dashboard's operator page, and gets no cookie
    // and no data on the way.
    let requests = [
        app.http.get(&url),
        app.http
            .get(&url)
            .header(header::ACCEPT, "text/html,application/xhtml+xml"),
        app.http
            .get(app.url("/admin/actors"))
            .bearer_auth(OPERATOR_TOKEN),
    ];
    for request in requests {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 303);
        assert_eq!(response.headers()[header::LOCATION], "/dashboard/operator");
        assert!(!response.headers().contains_key(header::SET_COOKIE));
        assert_eq!(response.text().await.unwrap(), "");
    }
}

#[actix_web::test]
async fn the_sign_in_form_sets_a_strict_httponly_cookie_that_opens_the_page() {
    let app = TestApp::spawn().await;
    let form = app.http.get(app.url("/admin/login")).send().await.unwrap();
    assert_eq!(form.status(), 200);
    assert!(
        form.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert_eq!(form.headers()["x-frame-options"], "DENY");
    let html = form.text().await.unwrap();
    assert!(
        html.contains("<form method=post action=/admin/login>"),
        "{html}"
    );
    assert!(html.contains("name=token type=password"), "{html}");

    let response = app
        .http
        .post(app.url("/admin/login"))
        .form(&[("token", OPERATOR_TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()[header::LOCATION], "/admin/actors");
    let set_cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(set_cookie.starts_with("service_operator="), "{set_cookie}");
    for attribute in [
        "HttpOnly",
        "SameSite=Strict",
        "Path=/admin",
        "Max-Age=28800",
    ] {
        assert!(set_cookie.contains(attribute), "{attribute}: {set_cookie}");
    }
    assert!(
        !set_cookie.contains("Secure"),
        "plain-http public URL: {set_cookie}"
    );
    assert!(
        !set_cookie.contains(OPERATOR_TOKEN),
        "the cookie is not the token"
    );

    // Where it lands now sends on to the dashboard's operator page, which needs a dashboard
    // session: the operator cookie alone opens no data.
    let browser = operator_browser(&app).await;
    let page = browser.get(app.url("/admin/actors")).send().await.unwrap();
    assert_eq!(page.status(), 303);
    assert_eq!(page.headers()[header::LOCATION], "/dashboard/operator");
    let page = browser
        .get(app.url("/dashboard/operator"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 303);
    assert_eq!(page.headers()[header::LOCATION], "/signin");
}

#[actix_web::test]
async fn the_operator_cookie_opens_no_json_admin_endpoint() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("plan@example.com").await;
    let browser = operator_browser(&app).await;
    let attempts = [
        browser.get(app.url("/api/admin/actors")),
        browser.get(app.url("/admin/users?email=plan@example.com")),
        browser
            .put(app.url(&format!("/admin/users/{}/plan", dashboard.user_id)))
            .header(header::ORIGIN, &app.base)
            .json(&json!({"plan": "pro"})),
        browser.get(app.url("/metrics")),
    ];
    for attempt in attempts {
        let (status, body) = status_and_json(attempt.send().await.unwrap()).await;
        assert_eq!(
            (status, body),
            (401, error_body("Unauthorized", "Operator token required"))
        );
    }
    // The plan did not change.
    let (_, me) = status_and_json(
        dashboard
            .client
            .get(app.url("/auth/me"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(me["user"]["plan"], "free");
}

#[actix_web::test]
async fn a_wrong_or_missing_token_is_refused() {
    let app = TestApp::spawn().await;
    let browser = Client::builder()
        .cookie_store(true)
        .redirect(Policy::none())
        .build()
        .unwrap();
    let forms: [&[(&str, &str)]; 4] = [
        &[("token", "wrong-token-wrong-token")],
        &[("token", &OPERATOR_TOKEN[..OPERATOR_TOKEN.len() - 1])],
        &[("token", "")],
        &[("not_token", OPERATOR_TOKEN)],
    ];
    for form in forms {
        let response = browser
            .post(app.url("/admin/login"))
            .form(form)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 303, "{form:?}");
        assert_eq!(
            response.headers()[header::LOCATION],
            "/admin/login?failed=1"
        );
        assert!(
            !response.headers().contains_key(header::SET_COOKIE),
            "{form:?}"
        );
    }
    let notice = browser
        .get(app.url("/admin/login?failed=1"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        notice.contains("That is not the operator token."),
        "{notice}"
    );
    let page = browser.get(app.url("/admin/actors")).send().await.unwrap();
    assert_eq!(page.status(), 303);
    assert_eq!(page.headers()[header::LOCATION], "/dashboard/operator");

    // Not a form at all: the catalogue's 400, not a crash.
    let (status, body) = status_and_json(
        app.http
            .post(app.url("/admin/login"))
            .json(&json!({"token": OPERATOR_TOKEN}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "InvalidRequest");
}

#[actix_web::test]
async fn sign_out_clears_the_cookie() {
    let app = TestApp::spawn().await;
    let browser = operator_browser(&app).await;
    let response = browser
        .post(app.url("/admin/logout"))
        .header(header::ORIGIN, &app.base)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()[header::LOCATION], "/admin/login");
    let cleared = response.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(cleared.starts_with("service_operator=;"), "{cleared}");
    assert!(cleared.contains("Path=/admin"), "{cleared}");
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    let page = browser
        .get(app.url("/admin/actors"))
        .header(header::ACCEPT, "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 303);
    assert_eq!(page.headers()[header::LOCATION], "/dashboard/operator");
}

#[actix_web::test]
async fn sign_in_and_sign_out_from_another_site_are_refused() {
    let app = TestApp::spawn().await;
    let cross_site = [
        (header::ORIGIN.as_str(), "https://evil.example"),
        (header::ORIGIN.as_str(), "null"),
        ("sec-fetch-site", "cross-site"),
    ];
    for (name, value) in cross_site {
        let response = app
            .http
            .post(app.url("/admin/login"))
            .header(name, value)
            .form(&[("token", OPERATOR_TOKEN)])
            .send()
            .await
            .unwrap();
        assert!(
            !response.headers().contains_key(header::SET_COOKIE),
            "{name}: {value}"
        );
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
            "{name}: {value}"
        );
    }
    // From the page itself it works.
    let response = app
        .http
        .post(app.url("/admin/login"))
        .header(header::ORIGIN, &app.base)
        .header("sec-fetch-site", "same-origin")
        .form(&[("token", OPERATOR_TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert!(response.headers().contains_key(header::SET_COOKIE));

    // Another site cannot sign the operator out either.
    let cookie = operator_cookie(&app).await;
    let (status, body) = status_and_json(
        app.http
            .post(app.url("/admin/logout"))
            .header(header::COOKIE, &cookie)
            .header(header::ORIGIN, "https://evil.example")
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

#[actix_web::test]
async fn the_cookie_is_secure_when_the_public_url_is_https() {
    let app =
        TestApp::spawn_with(|c| c.server.public_url = "https://social.example.com".into()).await;
    let response = no_redirect_client()
        .post(app.url("/admin/login"))
        .header(header::ORIGIN, "https://social.example.com")
        .form(&[("token", OPERATOR_TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    let set_cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(set_cookie.contains("Secure"), "{set_cookie}");
}
