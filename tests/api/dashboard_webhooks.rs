//! The dashboard's Webhooks page and delivery log at the HTTP level: each user sees only their
//! own endpoints and logs (another user's log is a 404 page), a refused URL is said on the page
//! and creates nothing, a form submitted twice acts once, and a test message and its replay
//! show in the log with their attempts.

use reqwest::header;
use serde_json::Value;

use crate::helpers::{Dashboard, TestApp, eventually, status_and_json};
use crate::pages::{get, get_page, page, post_form_as_is, see_other};

/// A service that delivers to the simulator's address (plain http on loopback), as tests do.
async fn spawn() -> TestApp {
    TestApp::spawn_with(|config| {
        config.webhooks.allow_hosts = config.publishing.media_allow_hosts.clone();
    })
    .await
}

/// A URL on the simulator, which answers any path it does not serve with a 404.
fn receiver(app: &TestApp, path: &str) -> String {
    format!("{}/hooks/{path}", app.sim.base_url)
}

/// The one-time token of the form posting to `action` on a rendered page.
fn token_of(page: &str, action: &str) -> String {
    let form = page
        .find(&format!("action=\"{action}\""))
        .unwrap_or_else(|| panic!("no form to {action}:\n{page}"));
    let marker = "name=\"form_token\" value=\"";
    let at = form + page[form..].find(marker).unwrap() + marker.len();
    page[at..at + page[at..].find('"').unwrap()].to_string()
}

/// Posts the form to `action` as the page at `from` renders it (with its token).
async fn submit(
    app: &TestApp,
    dashboard: &Dashboard,
    from: &str,
    action: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let token = token_of(&get_page(app, dashboard, from).await, action);
    let mut form = fields.to_vec();
    form.push(("form_token", &token));
    post_form_as_is(app, dashboard, action, &form).await
}

async fn add(app: &TestApp, dashboard: &Dashboard, url: &str) -> String {
    let response = submit(
        app,
        dashboard,
        "/dashboard/webhooks",
        "/dashboard/webhooks",
        &[("url", url), ("events", "post.published")],
    )
    .await;
    page(response).await
}

/// The user's endpoints, as the API lists them.
async fn api_list(app: &TestApp, dashboard: &Dashboard) -> Vec<Value> {
    let (status, body) = status_and_json(
        dashboard
            .client
            .get(app.url("/api/webhooks"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["webhooks"].as_array().unwrap().clone()
}

#[actix_web::test]
async fn the_page_lists_only_the_users_own_endpoints_and_shows_a_secret_once() {
    let app = spawn().await;
    let alice = app.sign_in("alice@example.com").await;
    let bob = app.sign_in("bob@example.com").await;
    let empty = get_page(&app, &alice, "/dashboard/webhooks").await;
    assert!(
        empty.contains("You have no webhook endpoint yet"),
        "{empty}"
    );

    let (alice_url, bob_url) = (receiver(&app, "alice"), receiver(&app, "bob"));
    let response = submit(
        &app,
        &alice,
        "/dashboard/webhooks",
        "/dashboard/webhooks",
        &[("url", &alice_url), ("events", "post.published")],
    )
    .await;
    assert_eq!(response.headers()[header::CACHE_CONTROL], "no-store");
    let created = page(response).await;
    let at = created
        .find("id=\"new-secret\"")
        .expect("the secret is shown");
    let value = &created[at..];
    let value = &value[value.find("value=\"").unwrap() + 7..];
    let secret = &value[..value.find('"').unwrap()];
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert!(created.contains("It will not be shown again"), "{created}");
    add(&app, &bob, &bob_url).await;

    let listed = api_list(&app, &alice).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["events"], serde_json::json!(["post.published"]));
    let alice_page = get_page(&app, &alice, "/dashboard/webhooks").await;
    assert!(alice_page.contains(&alice_url), "{alice_page}");
    assert!(!alice_page.contains(&bob_url), "{alice_page}");
    assert!(!alice_page.contains(secret), "the secret shown again");
    let bob_page = get_page(&app, &bob, "/dashboard/webhooks").await;
    assert!(bob_page.contains(&bob_url) && !bob_page.contains(&alice_url));
}

#[actix_web::test]
async fn another_users_delivery_log_is_a_404_and_their_endpoint_is_left_alone() {
    let app = spawn().await;
    let alice = app.sign_in("alice@example.com").await;
    let bob = app.sign_in("bob@example.com").await;
    add(&app, &alice, &receiver(&app, "alice")).await;
    let id = api_list(&app, &alice).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let log = format!("/dashboard/webhooks/{id}");
    let own = get_page(&app, &alice, &log).await;
    assert!(own.contains("No message has been sent"), "{own}");

    for path in [log.as_str(), "/dashboard/webhooks/not-an-id"] {
        let (status, body) = get(&app, &bob, path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert!(!body.contains(&receiver(&app, "alice")), "{body}");
    }
    // Bob's forms on Alice's endpoint act on nothing: the answer is Bob's list with a notice.
    for action in ["test", "disable", "rotate-secret", "delete"] {
        let token = token_of(
            &get_page(&app, &bob, "/dashboard/webhooks").await,
            "/dashboard/webhooks",
        );
        let path = format!("/dashboard/webhooks/{id}/{action}");
        let response = post_form_as_is(&app, &bob, &path, &[("form_token", token.as_str())]).await;
        assert_eq!(
            see_other(&response),
            "/dashboard/webhooks?notice=missing",
            "{action}"
        );
    }
    let listed = api_list(&app, &alice).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["is_active"], true);
    let own = get_page(&app, &alice, &log).await;
    assert!(own.contains("No message has been sent"), "{own}");
}

#[actix_web::test]
async fn a_refused_url_is_said_on_the_page_and_creates_nothing() {
    let app = spawn().await;
    let alice = app.sign_in("alice@example.com").await;
    for url in [
        "http://example.com/hook",
        "https://10.1.2.3/hook",
        "not a url",
    ] {
        let response = submit(
            &app,
            &alice,
            "/dashboard/webhooks",
            "/dashboard/webhooks",
            &[("url", url), ("description", "kept")],
        )
        .await;
        let refused = page(response).await;
        assert!(refused.contains("The endpoint was not added."), "{refused}");
        assert!(refused.contains("InvalidRequest"), "{refused}");
        assert!(!refused.contains("id=\"new-secret\""));
        // What was typed is still in the form.
        assert!(refused.contains("value=\"kept\""), "{refused}");
    }
    assert!(api_list(&app, &alice).await.is_empty());
}

#[actix_web::test]
async fn a_form_submitted_twice_adds_one_endpoint_and_an_unusable_token_none() {
    let app = spawn().await;
    let alice = app.sign_in("alice@example.com").await;
    let rendered = get_page(&app, &alice, "/dashboard/webhooks").await;
    let token = token_of(&rendered, "/dashboard/webhooks");
    let url = receiver(&app, "twice");
    let form = [("url", url.as_str()), ("form_token", token.as_str())];
    let first = page(post_form_as_is(&app, &alice, "/dashboard/webhooks", &form).await).await;
    assert!(first.contains("id=\"new-secret\""));
    let second = page(post_form_as_is(&app, &alice, "/dashboard/webhooks", &form).await).await;
    assert!(second.contains("already submitted"), "{second}");
    assert!(!second.contains("id=\"new-secret\""));
    let forged = [("url", url.as_str()), ("form_token", "forged")];
    let expired = page(post_form_as_is(&app, &alice, "/dashboard/webhooks", &forged).await).await;
    assert!(expired.contains("This form has expired"), "{expired}");
    assert_eq!(api_list(&app, &alice).await.len(), 1);
}

#[actix_web::test]
async fn a_test_message_shows_in_the_log_with_its_attempt_and_is_replayed() {
    let app = spawn().await;
    let alice = app.sign_in("alice@example.com").await;
    add(&app, &alice, &receiver(&app, "log")).await;
    let id = api_list(&app, &alice).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let list = "/dashboard/webhooks";
    let sent = submit(&app, &alice, list, &format!("{list}/{id}/test"), &[]).await;
    assert_eq!(see_other(&sent), "/dashboard/webhooks?notice=test_queued");
    let log = format!("{list}/{id}");
    eventually("the test's first attempt in the log", async || {
        get_page(&app, &alice, &log)
            .await
            .contains("class=\"attempt\"")
    })
    .await;
    let shown = get_page(&app, &alice, &log).await;
    assert!(shown.contains("webhook.test"), "{shown}");
    // The simulator has no receiver at that path: its 404 is the attempt's status.
    assert!(
        shown.contains("<td class=\"http-status\">404</td>"),
        "{shown}"
    );
    assert_eq!(shown.matches("class=\"attempt\"").count(), 1, "{shown}");

    let message = &shown[shown.find("name=\"message_id\" value=\"").unwrap() + 25..];
    let message = message[..message.find('"').unwrap()].to_string();
    assert!(message.starts_with("msg_"), "{message}");
    let replayed = submit(
        &app,
        &alice,
        &log,
        &format!("{log}/replay"),
        &[("message_id", message.as_str())],
    )
    .await;
    assert_eq!(see_other(&replayed), format!("{log}?notice=replayed"));
    eventually("the replay's attempt in the log", async || {
        get_page(&app, &alice, &log)
            .await
            .matches("class=\"attempt\"")
            .count()
            == 2
    })
    .await;
    // An unknown message is said on the log page.
    let unknown = submit(
        &app,
        &alice,
        &log,
        &format!("{log}/replay"),
        &[("message_id", "msg_0000")],
    )
    .await;
    assert_eq!(see_other(&unknown), format!("{log}?error=message_missing"));
    let said = get_page(&app, &alice, &format!("{log}?error=message_missing")).await;
    assert!(said.contains("is not in this endpoint"), "{said}");
}
