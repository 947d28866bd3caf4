//! The dashboard's pages at the HTTP level (a cookie client, no browser): where a visitor
//! lands, what the Overview, Accounts and API-keys pages show, the forms (create and delete a
//! key, disconnect an account) with their confirmations, the cross-site refusal, the security
//! headers every page carries, and the two languages.

use reqwest::{Client, header, redirect::Policy};
use serde_json::Value;

use crate::helpers::{Dashboard, TestApp, assert_nothing_inline, status_and_json};
use crate::pages::{BROWSER_ACCEPT, get_page, page, post_form, see_other};

/// A client without a session (and without following redirects).
fn anonymous() -> Client {
    Client::builder().redirect(Policy::none()).build().unwrap()
}

async fn api_keys(app: &TestApp, dashboard: &Dashboard) -> Vec<Value> {
    let (_, body) = status_and_json(
        dashboard
            .client
            .get(app.url("/api/keys"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    body["keys"].as_array().unwrap().clone()
}

async fn api_accounts(app: &TestApp, dashboard: &Dashboard) -> Vec<Value> {
    let (_, body) = status_and_json(
        dashboard
            .client
            .get(app.url("/api/accounts"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    body["accounts"].as_array().unwrap().clone()
}

/// The value of the readonly field that shows a new key.
fn shown_key(body: &str) -> String {
    let field = &body[body.find("id=\"new-key\"").expect("the new key's field")..];
    let value = &field[field.find("value=\"").unwrap() + 7..];
    value[..value.find('"').unwrap()].to_string()
}

#[actix_web::test]
async fn root_sends_visitors_to_sign_in_and_signed_in_users_to_their_overview() {
    let app = TestApp::spawn().await;
    let response = anonymous().get(app.url("/")).send().await.unwrap();
    assert_eq!(see_other(&response), "/signin");

    let dashboard = app.sign_in("root@example.com").await;
    let response = dashboard
        .no_redirect
        .get(app.url("/"))
        .send()
        .await
        .unwrap();
    assert_eq!(see_other(&response), "/dashboard");
}

#[actix_web::test]
async fn pages_without_a_session_redirect_to_the_sign_in_page() {
    let app = TestApp::spawn().await;
    let client = anonymous();
    for path in [
        "/dashboard",
        "/dashboard/accounts",
        "/dashboard/keys",
        "/dashboard/keys/00000000-0000-0000-0000-000000000000/delete",
        "/dashboard/accounts/00000000-0000-0000-0000-000000000000/token",
    ] {
        let response = client
            .get(app.url(path))
            .header(header::ACCEPT, BROWSER_ACCEPT)
            .send()
            .await
            .unwrap();
        assert_eq!(see_other(&response), "/signin", "{path}");
    }
    // A forged cookie is no session either.
    let response = client
        .get(app.url("/dashboard"))
        .header(header::COOKIE, "service_session=forged")
        .send()
        .await
        .unwrap();
    assert_eq!(see_other(&response), "/signin");

    // The sign-in page itself needs no session, and its button starts the sign-in.
    let body = page(client.get(app.url("/signin")).send().await.unwrap()).await;
    assert!(
        body.contains("href=\"/auth/login?return_to=/dashboard\""),
        "{body}"
    );
    assert!(body.contains(">Sign in</a>"), "{body}");
}

#[actix_web::test]
async fn signing_in_lands_on_the_overview_page() {
    let app = TestApp::spawn().await;
    let jar = std::sync::Arc::new(reqwest::cookie::Jar::default());
    let browser = Client::builder().cookie_provider(jar).build().unwrap();
    let response = browser
        .get(app.url("/auth/login?login_hint=lands@example.com"))
        .header(header::ACCEPT, BROWSER_ACCEPT)
        .send()
        .await
        .unwrap();
    assert_eq!(response.url().path(), "/dashboard");
    let body = page(response).await;
    assert!(body.contains("lands@example.com"), "the signed-in e-mail");
    for link in [
        "href=\"/dashboard\" aria-current=\"page\"",
        "href=\"/dashboard/accounts\"",
        "href=\"/dashboard/keys\"",
        "action=\"/auth/logout\"",
    ] {
        assert!(body.contains(link), "{link} in\n{body}");
    }
}

#[actix_web::test]
async fn the_overview_shows_plan_usage_and_accounts_with_their_health() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("overview@example.com").await;
    let empty = get_page(&app, &dashboard, "/dashboard").await;
    assert!(empty.contains("No account is connected yet"), "{empty}");
    assert!(empty.contains("Nothing is scheduled"), "{empty}");
    assert!(empty.contains("Nothing has been published yet"), "{empty}");

    app.add_account(dashboard.user_id, "threads", "Morning Threads")
        .await;
    let bakery = app
        .add_account(dashboard.user_id, "facebook", "Corner Bakery")
        .await;
    app.state
        .store
        .mark_account_invalid(
            bakery.id,
            "TokenRevoked: the page removed the app",
            app.clock_now(),
        )
        .await
        .unwrap();
    let (key, _) = app.create_key(&dashboard, "usage").await;
    assert_eq!(app.key_get(&key).await.status(), 200);
    assert_eq!(app.key_get(&key).await.status(), 200);

    let body = get_page(&app, &dashboard, "/dashboard").await;
    let (_, status) = status_and_json(
        dashboard
            .client
            .get(app.url("/api/subscription/status"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let limit = status["api_usage"]["limit"].as_i64().unwrap();
    assert!(body.contains("Free"), "the plan:\n{body}");
    assert!(
        body.contains(&format!("2 of {limit} calls used, {} left", limit - 2)),
        "the usage:\n{body}"
    );
    assert!(body.contains("Resets on"), "{body}");
    assert!(body.contains("Morning Threads") && body.contains("Corner Bakery"));
    assert!(body.contains("Valid"), "{body}");
    assert!(body.contains("Needs reconnecting"), "{body}");
    assert!(
        body.contains("TokenRevoked: the page removed the app"),
        "the invalid_reason:\n{body}"
    );
    // The threads token expires in 30 days (the helper's account), shown relative with the
    // exact time on hover.
    assert!(body.contains("30 days left"), "{body}");
    // facebook: a page token does not expire, but its data access does (90 days).
    assert!(body.contains("Does not expire"), "{body}");
    assert!(body.contains("Data access until"), "{body}");
    assert!(body.contains("90 days left"), "{body}");
    assert!(
        body.contains("title=\"20"),
        "an exact time in a title:\n{body}"
    );
    assert!(!body.contains("No account is connected yet"));
}

#[actix_web::test]
async fn a_browser_connecting_an_account_lands_on_the_accounts_page() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("connects@example.com").await;
    let accounts = get_page(&app, &dashboard, "/dashboard/accounts").await;
    for href in [
        "/api/connect/facebook\"",
        "/api/connect/instagram?via=facebook_login\"",
        "/api/connect/instagram?via=instagram_login\"",
        "/api/connect/threads\"",
        "/api/connect/tiktok\"",
        "/api/connect/youtube\"",
        "/api/connect/x\"",
    ] {
        assert!(accounts.contains(href), "{href}");
    }

    // The browser follows the connect link, the platform's page, and comes back.
    let response = dashboard
        .no_redirect
        .get(app.url("/api/connect/threads?login_hint=Alice"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 302);
    let authorize = response.headers()["location"].to_str().unwrap().to_string();
    let response = dashboard.no_redirect.get(&authorize).send().await.unwrap();
    assert_eq!(response.status(), 302);
    let callback = response.headers()["location"].to_str().unwrap().to_string();
    let response = dashboard
        .no_redirect
        .get(&callback)
        .header(header::ACCEPT, BROWSER_ACCEPT)
        .send()
        .await
        .unwrap();
    let landing = see_other(&response);
    assert!(
        landing.starts_with("/dashboard/accounts?"),
        "lands on the accounts page: {landing}"
    );
    let body = get_page(&app, &dashboard, &landing).await;
    assert!(body.contains("Connected 1 Threads account(s)."), "{body}");
    let connected = api_accounts(&app, &dashboard).await;
    assert_eq!(connected.len(), 1);
    let name = connected[0]["account_name"].as_str().unwrap();
    assert!(body.contains(name), "{name} listed:\n{body}");

    // Replaying the callback: the state is used up; the page says what to do.
    let response = dashboard
        .no_redirect
        .get(&callback)
        .header(header::ACCEPT, BROWSER_ACCEPT)
        .send()
        .await
        .unwrap();
    let landing = see_other(&response);
    let body = get_page(&app, &dashboard, &landing).await;
    assert!(body.contains("Start the connection again"), "{body}");
}

#[actix_web::test]
async fn a_connect_callback_without_text_html_keeps_its_json() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("script@example.com").await;
    // `*/*` (what scripts send) and `application/json` both keep the JSON contract.
    for accept in ["*/*", "application/json"] {
        let response = dashboard
            .no_redirect
            .get(app.url("/api/connect/x?login_hint=Bob"))
            .send()
            .await
            .unwrap();
        let authorize = response.headers()["location"].to_str().unwrap().to_string();
        let response = dashboard.no_redirect.get(&authorize).send().await.unwrap();
        let callback = response.headers()["location"].to_str().unwrap().to_string();
        let response = dashboard
            .no_redirect
            .get(&callback)
            .header(header::ACCEPT, accept)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(status, 200, "{accept}: {body}");
        assert_eq!(body["success"], true);
        assert_eq!(body["message"], "Connected 1 x account(s)");
        assert_eq!(body["accounts"][0]["social_channel_type"], "x");
    }
    // And an error stays the catalogue's JSON.
    let response = dashboard
        .no_redirect
        .get(app.url("/api/connect/x/callback?code=abc&state=forged"))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "InvalidOAuthState");
}

#[actix_web::test]
async fn a_key_created_with_the_form_is_shown_once_and_never_again() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("keys@example.com").await;
    let empty = get_page(&app, &dashboard, "/dashboard/keys").await;
    assert!(empty.contains("You have no API key yet"), "{empty}");
    assert!(empty.contains("<label for=\"key-name\">"), "{empty}");

    let response = post_form(
        &app,
        &dashboard,
        "/dashboard/keys",
        &[("name", "CI deploys")],
    )
    .await;
    assert_eq!(response.headers()[header::CACHE_CONTROL], "no-store");
    let created = page(response).await;
    let key = shown_key(&created);
    assert!(key.starts_with("service_"), "{key}");
    assert!(created.contains("It will not be shown again"), "{created}");
    assert!(created.contains("readonly"), "selectable without JS");
    assert!(created.contains("data-copy=\"new-key\""), "the copy button");
    assert_eq!(app.key_get(&key).await.status(), 200, "the key works");

    // The list shows the preview only, on every later visit.
    let keys = api_keys(&app, &dashboard).await;
    assert_eq!(keys.len(), 1);
    let preview = keys[0]["key_preview"].as_str().unwrap();
    for _ in 0..2 {
        let list = get_page(&app, &dashboard, "/dashboard/keys").await;
        assert!(
            list.contains("CI deploys") && list.contains(preview),
            "{list}"
        );
        assert!(!list.contains(&key), "the full key shown again:\n{list}");
        assert!(!list.contains("id=\"new-key\""));
    }

    // What a user typed is text, never markup.
    let hostile = "<script>alert(1)</script>";
    let created =
        page(post_form(&app, &dashboard, "/dashboard/keys", &[("name", hostile)]).await).await;
    assert!(
        created.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
        "{created}"
    );
    let list = get_page(&app, &dashboard, "/dashboard/keys").await;
    assert!(!list.contains(hostile), "{list}");

    // A refused name is said next to the form, and nothing is created.
    let refused =
        page(post_form(&app, &dashboard, "/dashboard/keys", &[("name", "   ")]).await).await;
    assert!(refused.contains("Give the key a name."), "{refused}");
    assert!(!refused.contains("id=\"new-key\""));
    assert_eq!(api_keys(&app, &dashboard).await.len(), 2);
}

#[actix_web::test]
async fn a_key_is_deleted_after_a_confirmation() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("delete@example.com").await;
    let (key, id) = app.create_key(&dashboard, "old").await;
    let confirm = get_page(&app, &dashboard, &format!("/dashboard/keys/{id}/delete")).await;
    let action = format!("action=\"/dashboard/keys/{id}/delete\"");
    assert!(confirm.contains(&action) && confirm.contains("method=\"post\""));
    assert_eq!(
        api_keys(&app, &dashboard).await.len(),
        1,
        "a GET deletes nothing"
    );

    let response = post_form(
        &app,
        &dashboard,
        &format!("/dashboard/keys/{id}/delete"),
        &[],
    )
    .await;
    let landing = see_other(&response);
    assert_eq!(landing, "/dashboard/keys?notice=key_deleted");
    let body = get_page(&app, &dashboard, &landing).await;
    assert!(body.contains("The key was deleted."), "{body}");
    assert!(api_keys(&app, &dashboard).await.is_empty());
    assert_eq!(app.key_get(&key).await.status(), 401);

    // Again: it is gone, and the page says so.
    let response = post_form(
        &app,
        &dashboard,
        &format!("/dashboard/keys/{id}/delete"),
        &[],
    )
    .await;
    assert_eq!(see_other(&response), "/dashboard/keys?notice=key_missing");
}

#[actix_web::test]
async fn an_account_is_disconnected_after_a_confirmation_and_its_token_can_be_checked() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("disconnect@example.com").await;
    let account = app
        .add_account(dashboard.user_id, "facebook", "Corner Bakery")
        .await;
    let id = account.id;

    let token = get_page(&app, &dashboard, &format!("/dashboard/accounts/{id}/token")).await;
    assert!(token.contains("Token of Corner Bakery"), "{token}");
    assert!(token.contains("Does not expire"), "facebook: {token}");
    assert!(
        token.contains("90 days left"),
        "the data-access window: {token}"
    );

    let confirm = get_page(
        &app,
        &dashboard,
        &format!("/dashboard/accounts/{id}/disconnect"),
    )
    .await;
    assert!(confirm.contains("Disconnect this account?"), "{confirm}");
    assert_eq!(
        api_accounts(&app, &dashboard).await.len(),
        1,
        "a GET changes nothing"
    );

    let response = post_form(
        &app,
        &dashboard,
        &format!("/dashboard/accounts/{id}/disconnect"),
        &[],
    )
    .await;
    let landing = see_other(&response);
    let body = get_page(&app, &dashboard, &landing).await;
    assert!(body.contains("The account was disconnected."), "{body}");
    assert!(!body.contains("Corner Bakery"), "{body}");
    assert!(api_accounts(&app, &dashboard).await.is_empty());
}

#[actix_web::test]
async fn a_cross_site_form_post_is_refused_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("victim@example.com").await;
    let (key, key_id) = app.create_key(&dashboard, "keep").await;
    let account = app
        .add_account(dashboard.user_id, "threads", "Keep Me")
        .await;
    let writes = [
        ("/dashboard/keys".to_string(), vec![("name", "planted")]),
        (format!("/dashboard/keys/{key_id}/delete"), vec![]),
        (
            format!("/dashboard/accounts/{}/disconnect", account.id),
            vec![],
        ),
    ];
    for (path, form) in &writes {
        for (name, value) in [
            ("origin", "https://evil.example"),
            ("sec-fetch-site", "cross-site"),
        ] {
            let response = dashboard
                .no_redirect
                .post(app.url(path))
                .header(name, value)
                .form(form)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 403, "{path} with {name}: {value}");
        }
    }
    assert_eq!(api_keys(&app, &dashboard).await.len(), 1);
    assert_eq!(api_accounts(&app, &dashboard).await.len(), 1);
    assert_eq!(app.key_get(&key).await.status(), 200);
}

#[actix_web::test]
async fn signing_out_from_a_page_lands_on_the_sign_in_page() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("leaves@example.com").await;
    let response = post_form(&app, &dashboard, "/auth/logout", &[]).await;
    assert_eq!(see_other(&response), "/signin");
    let response = dashboard
        .no_redirect
        .get(app.url("/dashboard"))
        .send()
        .await
        .unwrap();
    assert_eq!(see_other(&response), "/signin");
}

#[actix_web::test]
async fn pages_speak_traditional_chinese_by_accept_language_and_by_the_switch() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("lang@example.com").await;
    let zh = |path: &str| {
        dashboard
            .no_redirect
            .get(app.url(path))
            .header(header::ACCEPT_LANGUAGE, "zh-TW,zh;q=0.9,en;q=0.5")
            .send()
    };
    let body = page(zh("/dashboard").await.unwrap()).await;
    assert!(body.contains("<html lang=\"zh-TW\">"), "{body}");
    assert!(body.contains("總覽") && body.contains("登出"), "{body}");
    assert!(!body.contains("Sign out"), "{body}");
    let signin = page(
        anonymous()
            .get(app.url("/signin"))
            .header(header::ACCEPT_LANGUAGE, "zh-TW")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert!(signin.contains(">登入</a>"), "{signin}");

    // The switch wins over Accept-Language, and is remembered in a cookie.
    let response = zh("/dashboard/keys?lang=en").await.unwrap();
    let cookie = response.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_string();
    assert!(cookie.starts_with("service_lang=en"), "{cookie}");
    let body = page(response).await;
    assert!(body.contains("<html lang=\"en\">") && body.contains("API keys"));
    let body = page(zh("/dashboard").await.unwrap()).await;
    assert!(body.contains("<html lang=\"en\">"), "remembered: {body}");

    // And back to Chinese with the switch.
    let body = page(zh("/dashboard?lang=zh-TW").await.unwrap()).await;
    assert!(body.contains("<html lang=\"zh-TW\">"));
    let body = page(zh("/dashboard/accounts").await.unwrap()).await;
    assert!(body.contains("尚未連結任何帳號"), "{body}");
}

#[actix_web::test]
async fn the_stylesheet_and_script_are_served_with_a_content_hash_and_long_caching() {
    let app = TestApp::spawn().await;
    let signin = page(anonymous().get(app.url("/signin")).send().await.unwrap()).await;
    for (marker, content_type) in [
        ("href=\"/static/app.css?v=", "text/css"),
        ("src=\"/static/app.js?v=", "text/javascript"),
    ] {
        let start = signin.find(marker).unwrap() + marker.find('/').unwrap();
        let href = &signin[start..];
        let href = &href[..href.find('"').unwrap()];
        let response = anonymous().get(app.url(href)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{href}");
        let headers = response.headers().clone();
        assert!(
            headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with(content_type)
        );
        assert!(
            headers[header::CACHE_CONTROL]
                .to_str()
                .unwrap()
                .contains("immutable")
        );
        let etag = headers[header::ETAG].to_str().unwrap().to_string();
        assert!(href.ends_with(etag.trim_matches('"')), "{href} {etag}");
        let again = anonymous()
            .get(app.url(href))
            .header(header::IF_NONE_MATCH, &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304);
    }
}

#[actix_web::test]
async fn the_overview_lists_the_next_scheduled_posts_and_the_latest_results() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let (status, body) = app
        .post(
            &publisher.key,
            &publisher.body(serde_json::json!({"text": "Fresh bread at seven"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let later = (app.clock_now() + chrono::Duration::hours(3)).to_rfc3339();
    let (status, body) = app
        .post(
            &publisher.key,
            &publisher
                .body(serde_json::json!({"text": "Croissants tomorrow", "scheduledAt": later})),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    let overview = get_page(&app, &publisher.dashboard, "/dashboard").await;
    let scheduled = &overview[overview.find("Next scheduled posts").unwrap()..];
    let scheduled = &scheduled[..scheduled.find("Latest results").unwrap()];
    assert!(scheduled.contains("Croissants tomorrow"), "{scheduled}");
    assert!(scheduled.contains(">in 3 h</time>"), "{scheduled}");
    let results = &overview[overview.find("Latest results").unwrap()..];
    assert!(results.contains("Fresh bread at seven"), "{results}");
    assert!(results.contains("status-published"), "{results}");
    assert!(!overview.contains("Nothing is scheduled"));
    assert!(!overview.contains("Nothing has been published yet"));
    assert!(overview.contains("Pro"), "the plan");
}

#[actix_web::test]
async fn a_browser_gets_errors_as_pages_and_scripts_keep_the_json() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("errors@example.com").await;
    const BROWSER: &str = "text/html,application/xhtml+xml,*/*;q=0.8";
    let cases = [
        (
            dashboard
                .no_redirect
                .post(app.url("/dashboard/keys"))
                .header("origin", "https://evil.example")
                .form(&[("name", "planted")]),
            403,
            "CrossSiteRequest",
        ),
        (
            dashboard.no_redirect.get(app.url("/dashboard/nowhere")),
            404,
            "NotFound",
        ),
        (
            dashboard.no_redirect.get(app.url("/api/connect/myspace")),
            400,
            "InvalidPlatform",
        ),
    ];
    for (request, status, code) in cases {
        let script = request.try_clone().unwrap().send().await.unwrap();
        let (got, body) = status_and_json(script).await;
        assert_eq!((got, body["error"].as_str()), (status, Some(code)));

        let page = request.header("accept", BROWSER).send().await.unwrap();
        assert_eq!(page.status(), status, "{code}");
        let headers = page.headers().clone();
        assert!(
            headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html"),
            "{headers:?}"
        );
        assert_eq!(headers["content-security-policy"], social_service::web::CSP);
        let body = page.text().await.unwrap();
        assert!(
            body.contains(&format!("<code class=\"error-code\">{code}</code>")),
            "{body}"
        );
        assert!(body.contains(&format!("HTTP {status}")), "{body}");
        assert!(body.contains("href=\"/dashboard\""), "{body}");
        assert_nothing_inline(&body);
    }
    // Nothing was planted.
    assert_eq!(api_keys(&app, &dashboard).await.len(), 0);
}

#[actix_web::test]
async fn the_favicon_is_an_icon_cached_for_a_day() {
    let app = TestApp::spawn().await;
    let response = anonymous()
        .get(app.url("/favicon.ico"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()[header::CONTENT_TYPE], "image/x-icon");
    assert_eq!(
        response.headers()[header::CACHE_CONTROL],
        "public, max-age=86400"
    );
    let body = response.bytes().await.unwrap();
    // An ICO directory of one image, holding a PNG.
    assert_eq!(&body[..6], &[0, 0, 1, 0, 1, 0]);
    assert_eq!(&body[22..30], b"\x89PNG\r\n\x1a\n");
}
