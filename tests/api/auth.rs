//! Dashboard sign-in (OIDC code + PKCE + state), session cookies, logout, and the separation of
//! API keys and sessions.

use reqwest::{Client, header, redirect::Policy};
use serde_json::{Value, json};

use crate::helpers::{OPERATOR_TOKEN, TestApp, error_body, status_and_json};

/// A client that keeps cookies as a browser does, and shows each redirect instead of following it.
fn browser_without_redirects() -> Client {
    Client::builder()
        .cookie_store(true)
        .redirect(Policy::none())
        .build()
        .unwrap()
}

/// Starts a sign-in in `browser` and follows it through the identity provider, up to the
/// callback path the provider sends the browser back to (not requested).
async fn callback_path(app: &TestApp, browser: &Client, email: &str) -> String {
    let login = browser
        .get(app.url(&format!("/auth/login?login_hint={email}")))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 302);
    let authorize = login.headers()[header::LOCATION].to_str().unwrap();
    let idp = browser.get(authorize).send().await.unwrap();
    assert_eq!(idp.status(), 302);
    let callback = idp.headers()[header::LOCATION].to_str().unwrap();
    callback[callback.find("/auth/callback").unwrap()..].to_string()
}

#[actix_web::test]
async fn a_sign_in_link_started_in_another_browser_signs_nobody_in() {
    let app = TestApp::spawn().await;
    // The attacker starts a sign-in with their own account and stops at the callback.
    let attacker = browser_without_redirects();
    let path = callback_path(&app, &attacker, "attacker@example.com").await;

    // The victim opens the link: with no binding cookie at all, and with one of their own sign-in
    // started meanwhile (the cookie then names another state).
    let victim = browser_without_redirects();
    let own_start = victim
        .get(app.url("/auth/login?login_hint=victim@example.com"))
        .send()
        .await
        .unwrap();
    assert_eq!(own_start.status(), 302);
    let response = victim.get(app.url(&path)).send().await.unwrap();
    assert_eq!(response.status(), 400);
    assert!(
        response.headers().get(header::SET_COOKIE).is_none(),
        "no session cookie is set"
    );
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        error_body(
            "InvalidRequest",
            "This sign-in was started in another browser; start again at /auth/login"
        )
    );
    let (status, _) = status_and_json(victim.get(app.url("/auth/me")).send().await.unwrap()).await;
    assert_eq!(status, 401, "the victim is not signed in as anyone");

    // A browser is shown the error as a page.
    let attacker = browser_without_redirects();
    let path = callback_path(&app, &attacker, "attacker@example.com").await;
    let page = Client::new()
        .get(app.url(&path))
        .header(header::ACCEPT, "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 400);
    assert!(
        page.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("started in another browser")
    );

    // A refused link is used up: even the browser that started it cannot complete it now.
    let (status, body) = status_and_json(attacker.get(app.url(&path)).send().await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(
        body["message"],
        "Unknown or expired sign-in state; start again at /auth/login"
    );
}

#[actix_web::test]
async fn the_sign_in_binding_cookie_is_short_lived_httponly_lax_and_cleared_after_use() {
    let app = TestApp::spawn().await;
    let browser = browser_without_redirects();
    let login = browser
        .get(app.url("/auth/login?login_hint=binding@example.com"))
        .send()
        .await
        .unwrap();
    let cookie = login.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(cookie.starts_with("service_login="), "{cookie}");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/auth", "Max-Age=600"] {
        assert!(cookie.contains(attribute), "{attribute}: {cookie}");
    }
    let authorize = login.headers()[header::LOCATION].to_str().unwrap();
    let idp = browser.get(authorize).send().await.unwrap();
    let callback = idp.headers()[header::LOCATION].to_str().unwrap();
    let path = &callback[callback.find("/auth/callback").unwrap()..];
    let response = browser.get(app.url(path)).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let cleared = response
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|c| c.starts_with("service_login="))
        .expect("the binding cookie is cleared");
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
}

/// Runs the sign-in redirects by hand and returns the callback response (not followed).
pub(crate) async fn callback_response(app: &TestApp, email: &str) -> (reqwest::Response, String) {
    let client = browser_without_redirects();
    let login = client
        .get(app.url(&format!("/auth/login?login_hint={email}")))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 302);
    let authorize = login.headers()[header::LOCATION]
        .to_str()
        .unwrap()
        .to_string();
    assert!(authorize.starts_with(&app.sim.base_url), "{authorize}");
    for param in [
        "code_challenge=",
        "code_challenge_method=S256",
        "state=",
        "nonce=",
    ] {
        assert!(
            authorize.contains(param),
            "authorization request carries {param}"
        );
    }
    let idp = client.get(&authorize).send().await.unwrap();
    assert_eq!(idp.status(), 302);
    let callback = idp.headers()[header::LOCATION]
        .to_str()
        .unwrap()
        .to_string();
    // Whatever public URL the service believes in, the callback is served here.
    let path = &callback[callback.find("/auth/callback").unwrap()..];
    let response = client.get(app.url(path)).send().await.unwrap();
    (response, path.to_string())
}

#[actix_web::test]
async fn first_sign_in_creates_the_user_and_later_ones_find_it() {
    let app = TestApp::spawn().await;
    let first = app.sign_in("new.user@example.com").await;
    let second = app.sign_in("new.user@example.com").await;
    assert_eq!(first.user_id, second.user_id);
    let other = app.sign_in("someone.else@example.com").await;
    assert_ne!(first.user_id, other.user_id);

    let me: Value = first
        .client
        .get(app.url("/auth/me"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["user"]["email"], "new.user@example.com");
    assert_eq!(me["user"]["plan"], "free");
}

#[actix_web::test]
async fn the_session_cookie_is_signed_httponly_and_lax() {
    let app = TestApp::spawn().await;
    let (response, _) = callback_response(&app, "cookie@example.com").await;
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()[header::LOCATION], "/dashboard");
    let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(cookie.starts_with("service_session="), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Lax"), "{cookie}");
    assert!(
        !cookie.contains("Secure"),
        "plain-http public URL: no Secure flag: {cookie}"
    );
}

#[actix_web::test]
async fn the_cookie_is_secure_when_the_public_url_is_https() {
    let app =
        TestApp::spawn_with(|c| c.server.public_url = "https://social.example.com".into()).await;
    let (response, path) = callback_response(&app, "secure@example.com").await;
    assert!(path.starts_with("/auth/callback?"));
    assert_eq!(response.status(), 303);
    let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(cookie.contains("Secure"), "{cookie}");
}

#[actix_web::test]
async fn a_callback_cannot_be_replayed_or_forged() {
    let app = TestApp::spawn().await;
    let (response, path) = callback_response(&app, "replay@example.com").await;
    assert_eq!(response.status(), 303);
    // The same state (and code) a second time.
    let (status, body) = status_and_json(app.http.get(app.url(&path)).send().await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        error_body(
            "InvalidRequest",
            "Unknown or expired sign-in state; start again at /auth/login"
        )
    );
    // A state we never issued.
    let (status, body) = status_and_json(
        app.http
            .get(app.url("/auth/callback?code=abc&state=forged"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "InvalidRequest");
    let (status, body) = status_and_json(
        app.http
            .get(app.url("/auth/callback?state=x"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            400,
            error_body("MissingParameter", "Missing required parameter: code")
        )
    );
}

#[actix_web::test]
async fn tampered_cookies_are_refused() {
    let app = TestApp::spawn().await;
    let (response, _) = callback_response(&app, "tamper@example.com").await;
    let set_cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    let value = set_cookie
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("service_session=");
    let (token, signature) = value.rsplit_once('.').unwrap();

    let genuine = format!("service_session={value}");
    let ok = app
        .http
        .get(app.url("/api/keys"))
        .header(header::COOKIE, &genuine)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);

    let flipped = if token.starts_with('A') { "B" } else { "A" };
    let forged_token = format!("service_session={flipped}{}.{signature}", &token[1..]);
    let forged_signature = format!("service_session={token}.{}", "A".repeat(signature.len()));
    let unsigned = format!("service_session={token}");
    for cookie in [forged_token, forged_signature, unsigned] {
        let response = app
            .http
            .get(app.url("/api/keys"))
            .header(header::COOKIE, &cookie)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(
            (status, body),
            (401, error_body("Unauthorized", "Invalid session")),
            "{cookie}"
        );
    }
}

#[actix_web::test]
async fn logout_revokes_the_session_server_side() {
    let app = TestApp::spawn().await;
    let (response, _) = callback_response(&app, "logout@example.com").await;
    let set_cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    let cookie = set_cookie.split(';').next().unwrap().to_string();

    let response = app
        .http
        .post(app.url("/auth/logout"))
        .header(header::COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let cleared = response.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_string();
    assert!(cleared.starts_with("service_session=;"), "{cleared}");
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"success": true, "message": "Signed out"})
    );

    // The old cookie, replayed by a client that ignored the removal, is dead.
    let response = app
        .http
        .get(app.url("/api/keys"))
        .header(header::COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(
        (status, body),
        (
            401,
            error_body("Unauthorized", "Session expired or signed out")
        )
    );
}

#[actix_web::test]
async fn api_keys_are_refused_on_session_endpoints() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("mixed@example.com").await;
    let (key, key_id) = app.create_key(&dashboard, "k").await;
    let account = app.add_account(dashboard.user_id, "facebook", "Page").await;
    let requests = [
        app.http.get(app.url("/api/keys")),
        app.http
            .post(app.url("/api/keys"))
            .json(&json!({"name": "x"})),
        app.http.delete(app.url(&format!("/api/keys/{key_id}"))),
        app.http.get(app.url("/api/accounts")),
        app.http
            .delete(app.url(&format!("/api/accounts/{}", account.id))),
        app.http
            .post(app.url("/api/token/info"))
            .json(&json!({"account_id": account.id})),
        app.http.get(app.url("/api/published-posts")),
        app.http.get(app.url("/api/subscription/status")),
    ];
    for request in requests {
        let response = request
            .header("service-api-key", &key)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(status, 401);
        assert_eq!(
            body,
            error_body(
                "Unauthorized",
                "This endpoint requires a dashboard session; API keys are not accepted here"
            )
        );
    }
    // Nothing happened: the key and the account are still there.
    assert_eq!(app.key_get(&key).await.status(), 200);
    let accounts: Value = dashboard
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(accounts["accounts"].as_array().unwrap().len(), 1);
}

#[actix_web::test]
async fn sessions_are_refused_on_key_endpoints() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("session-only@example.com").await;
    let response = dashboard
        .client
        .get(app.url("/v2/accounts"))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(
        (status, body),
        (
            401,
            error_body("InvalidApiKey", "Invalid or missing API key")
        )
    );
}

#[actix_web::test]
async fn operator_endpoints_need_the_operator_token() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("op@example.com").await;
    let (key, _) = app.create_key(&dashboard, "k").await;
    let url = app.url(&format!("/admin/users/{}/plan", dashboard.user_id));
    let attempts = [
        app.http.put(&url).json(&json!({"plan": "pro"})),
        app.http
            .put(&url)
            .bearer_auth("wrong-token-wrong-token")
            .json(&json!({"plan": "pro"})),
        app.http
            .put(&url)
            .header("service-api-key", &key)
            .json(&json!({"plan": "pro"})),
        dashboard.client.put(&url).json(&json!({"plan": "pro"})),
    ];
    for attempt in attempts {
        let (status, body) = status_and_json(attempt.send().await.unwrap()).await;
        assert_eq!(
            (status, body),
            (401, error_body("Unauthorized", "Operator token required"))
        );
    }
    let response = app
        .http
        .get(app.url("/admin/users?email=op@example.com"))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200);
    assert_eq!(body["users"][0]["id"], json!(dashboard.user_id));
    assert_eq!(body["users"][0]["plan"], "free");
}

#[actix_web::test]
async fn sign_in_is_unavailable_when_not_configured() {
    let app = TestApp::spawn_with(|c| c.auth.issuer = String::new()).await;
    let (status, body) =
        status_and_json(app.http.get(app.url("/auth/login")).send().await.unwrap()).await;
    assert_eq!(status, 503);
    assert_eq!(body["error"], "ServiceUnavailable");
}

/// Signs in with `return_to` set to `encoded` (already percent-encoded, as it goes in the query)
/// and returns where the callback sends the browser. The sign-in itself must succeed.
async fn landing_after_sign_in(app: &TestApp, encoded: &str) -> String {
    let client = browser_without_redirects();
    let login = client
        .get(app.url(&format!(
            "/auth/login?login_hint=land@example.com&return_to={encoded}"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 302, "{encoded}");
    let authorize = login.headers()[header::LOCATION].to_str().unwrap();
    let idp = client.get(authorize).send().await.unwrap();
    assert_eq!(idp.status(), 302, "{encoded}");
    let callback = idp.headers()[header::LOCATION].to_str().unwrap();
    let path = &callback[callback.find("/auth/callback").unwrap()..];
    let response = client.get(app.url(path)).send().await.unwrap();
    assert_eq!(response.status(), 303, "{encoded}");
    let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(
        cookie.starts_with("service_session="),
        "{encoded}: signed in"
    );
    response.headers()[header::LOCATION]
        .to_str()
        .unwrap()
        .to_string()
}

/// `return_to` values (percent-encoded for the query) that must not leave the default landing.
const HOSTILE_RETURN_TO: &[&str] = &[
    // The reported one: a tab, which browsers drop, making `//evil.example`.
    "%2F%09%2Fevil.example",
    "%2F%0A%2Fevil.example",
    "%2F%0D%2Fevil.example",
    "%2F%00%2Fevil.example",
    "%2F%0D%0ASet-Cookie%3A%20x%3Dy",
    "%2F%5Cevil.example",
    "%2F%5C%5Cevil.example",
    "%2F%2Fevil.example",
    "%2F%2F%2Fevil.example",
    "https%3A%2F%2Fevil.example%2F",
    "evil.example",
    // Encoded once more: the service receives `%09`, `%5C`, `/%2F`, `%2F%2F`, …
    "%2F%2509%2Fevil.example",
    "%2F%250A%2Fevil.example",
    "%2F%250D%2Fevil.example",
    "%2F%2500%2Fevil.example",
    "%2F%255Cevil.example",
    "%2F%252F%2Fevil.example",
    "%2F%252F%252Fevil.example",
    "%252F%252Fevil.example",
    // And once more again.
    "%2F%252509%2Fevil.example",
    "%2F%25252F%2Fevil.example",
];

#[actix_web::test]
async fn after_sign_in_only_a_same_site_path_is_followed() {
    let app = TestApp::spawn().await;
    // A good path is kept, with its query.
    assert_eq!(
        landing_after_sign_in(&app, "%2Fapi%2Fkeys%3Fpage%3D2%26sort%3Dname").await,
        "/api/keys?page=2&sort=name"
    );
    // Without a usable path, the default landing: the dashboard's overview.
    assert_eq!(landing_after_sign_in(&app, "").await, "/dashboard");
    for hostile in HOSTILE_RETURN_TO {
        assert_eq!(
            landing_after_sign_in(&app, hostile).await,
            "/dashboard",
            "return_to={hostile}"
        );
    }
}

#[actix_web::test]
async fn no_input_to_the_sign_in_routes_gets_a_5xx() {
    let app = TestApp::spawn().await;
    // A sign-in state the service really issued, for a callback with a bad code from the
    // browser that started it.
    let browser = browser_without_redirects();
    let login = browser
        .get(app.url("/auth/login?login_hint=odd@example.com"))
        .send()
        .await
        .unwrap();
    let authorize = url::Url::parse(login.headers()[header::LOCATION].to_str().unwrap()).unwrap();
    let issued = authorize
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .to_string();

    let mut paths: Vec<(String, u16)> = HOSTILE_RETURN_TO
        .iter()
        .map(|hostile| (format!("/auth/login?return_to={hostile}"), 302))
        .collect();
    let long = "a".repeat(4000);
    paths.extend([
        (format!("/auth/login?return_to=%2F{long}"), 302),
        ("/auth/login?login_hint=%00%0A%0D%5C".into(), 302),
        ("/auth/login?return_to=%2Fa&return_to=%2Fb".into(), 400),
        ("/auth/login?return_to=%FF%FE".into(), 302),
        ("/auth/callback".into(), 400),
        ("/auth/callback?code=".into(), 400),
        ("/auth/callback?code=x&state=".into(), 400),
        ("/auth/callback?code=x&state=%00".into(), 400),
        ("/auth/callback?code=x&state=a%0Ab".into(), 400),
        ("/auth/callback?code=x&state=%FF%FE".into(), 400),
        ("/auth/callback?code=x&state=%27%3B--".into(), 400),
        (format!("/auth/callback?code=x&state={long}"), 400),
        ("/auth/callback?code=a&code=b&state=x".into(), 400),
        ("/auth/callback?code=x&state=a&state=b".into(), 400),
        ("/auth/callback?error=access_denied".into(), 401),
        ("/auth/callback?error=a&error=b".into(), 400),
        (
            "/auth/callback?error=%00&error_description=%0D%0A".into(),
            401,
        ),
        ("/auth/callback?error=&code=x&state=y".into(), 401),
        (
            format!("/auth/callback?code=not-a-code&state={issued}"),
            401,
        ),
        ("/auth/me".into(), 401),
    ]);
    for (path, expected) in paths {
        // The other sign-ins started here would replace the issued state's binding cookie.
        let client = if path.contains(&issued) {
            &browser
        } else {
            &app.http
        };
        let response = client.get(app.url(&path)).send().await.unwrap();
        let status = response.status().as_u16();
        if status >= 400 {
            let (_, body) = status_and_json(response).await;
            assert_eq!(body["success"], false, "{path}: {body}");
            assert!(body["error"].is_string(), "{path}: {body}");
        }
        assert_eq!(status, expected, "{path}");
    }

    // Cookies no session ever had, on sign-out and on `me`.
    for cookie in [
        "service_session=",
        "service_session=.",
        "service_session=%00.%00",
        "service_session=a.b.c",
        "service_session=\"quoted\"",
        "service_session",
        "=;;=",
    ] {
        let response = app
            .http
            .post(app.url("/auth/logout"))
            .header(header::COOKIE, cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "logout with {cookie}");
        let response = app
            .http
            .get(app.url("/auth/me"))
            .header(header::COOKIE, cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "me with {cookie}");
    }
    // Wrong methods answer in catalogue form too.
    for (method, path) in [
        (reqwest::Method::POST, "/auth/login"),
        (reqwest::Method::POST, "/auth/callback"),
        (reqwest::Method::GET, "/auth/logout"),
        (reqwest::Method::PUT, "/auth/logout"),
    ] {
        let response = app
            .http
            .request(method.clone(), app.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{method} {path}");
    }
}
