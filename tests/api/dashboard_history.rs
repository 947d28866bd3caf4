//! The dashboard's History (with each publish's delivery timeline) and Performance pages, at
//! the HTTP level (a cookie client, no browser): badges, the recorded steps with the
//! platform's own words on failure, another user's submission refused, the chart's gaps for
//! days without a snapshot, backfill through the button, the cross-site refusal, and the
//! security headers (CSP, nothing inline) of every page.

use reqwest::{Response, header};
use serde_json::json;
use social_service::{
    sim::state::{FaultKind, FaultSpec},
    store::NewSubmission,
};
use uuid::Uuid;

use crate::helpers::{Dashboard, TestApp};

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'";
/// What a browser sends when navigating.
const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// Checks what every page must be (HTML with the security headers, nothing inline that the
/// CSP would block) and returns its status and body.
async fn any_page(response: Response) -> (u16, String) {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let content_type = headers[header::CONTENT_TYPE].to_str().unwrap();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    assert_eq!(headers[header::CONTENT_SECURITY_POLICY], CSP);
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    let body = response.text().await.unwrap();
    assert_nothing_inline(&body);
    (status, body)
}

/// No `style=` attribute, no inline event handler, and every `<script>` is an empty element
/// loading a file of ours (the same check as the first increment's pages).
fn assert_nothing_inline(body: &str) {
    let lower = body.to_ascii_lowercase();
    assert!(!lower.contains("style="), "a style attribute:\n{body}");
    assert!(!lower.contains("<style"), "a style element:\n{body}");
    for (at, _) in lower.match_indices("<script") {
        let tag_end = at + lower[at..].find('>').unwrap() + 1;
        let tag = &lower[at..tag_end];
        assert!(tag.contains(" src=\"/static/"), "{tag}");
        assert!(
            lower[tag_end..].starts_with("</script>"),
            "an inline script body after {tag}"
        );
    }
    for (at, _) in lower.match_indices(" on") {
        let name: String = lower[at + 3..]
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect();
        let after = &lower[at + 3 + name.len()..];
        assert!(
            name.is_empty() || !after.starts_with('='),
            "an inline event handler on{name}="
        );
    }
}

async fn get(app: &TestApp, dashboard: &Dashboard, path: &str) -> (u16, String) {
    any_page(
        dashboard
            .no_redirect
            .get(app.url(path))
            .header(header::ACCEPT, BROWSER_ACCEPT)
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// A page that must answer 200.
async fn page(app: &TestApp, dashboard: &Dashboard, path: &str) -> String {
    let (status, body) = get(app, dashboard, path).await;
    assert_eq!(status, 200, "{path}:\n{body}");
    body
}

/// A same-origin form post, as a browser sends it from our pages.
#[allow(dead_code)]
async fn post_form(
    app: &TestApp,
    dashboard: &Dashboard,
    path: &str,
    form: &[(&str, &str)],
) -> Response {
    dashboard
        .no_redirect
        .post(app.url(path))
        .header(header::ORIGIN, app.state.public_url.clone())
        .header("sec-fetch-site", "same-origin")
        .header(header::ACCEPT, BROWSER_ACCEPT)
        .form(form)
        .send()
        .await
        .unwrap()
}

/// Text as askama escapes it into HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
}

/// The `href`s of the timeline links on a history page.
fn timeline_links(body: &str) -> Vec<String> {
    body.match_indices("href=\"/dashboard/history/")
        .map(|(at, _)| {
            let rest = &body[at + 6..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

/// Publishes an instagram image whose final call (`media_publish`) the platform refuses with
/// its permission error; returns the submission's id.
async fn failed_instagram_publish(app: &TestApp) -> (crate::helpers::Publisher, Uuid) {
    let publisher = app.publisher("instagram", "pro").await;
    app.sim.state().set_faults(
        "instagram",
        &publisher.sim.external_id,
        FaultSpec {
            error: Some(FaultKind::Permission),
            path_contains: Some("media_publish".into()),
            ..FaultSpec::default()
        },
    );
    let (status, body) = app
        .post(
            &publisher.key,
            &publisher.body(
                json!({"text": "refused at the end", "mediaUrls": [app.media_url("sample.jpg")]}),
            ),
        )
        .await;
    assert_ne!(status, 200, "{body}");
    let history = app.history(&publisher.dashboard).await;
    let item = &history["posts"][0];
    assert_eq!(item["status"], "failed", "{history}");
    let id = item["post_submission_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    (publisher, id)
}

#[actix_web::test]
async fn history_lists_published_and_failed_posts_with_their_badges_and_timeline_links() {
    let app = TestApp::spawn().await;
    let (publisher, failed_id) = failed_instagram_publish(&app).await;
    app.sim.state().set_faults(
        "instagram",
        &publisher.sim.external_id,
        FaultSpec::default(),
    );
    let (status, body) = app
        .post(
            &publisher.key,
            &publisher
                .body(json!({"text": "went out", "mediaUrls": [app.media_url("sample.jpg")]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    let html = page(&app, &publisher.dashboard, "/dashboard/history").await;
    assert!(html.contains("aria-current=\"page\">History</a>"), "{html}");
    assert!(
        html.contains("<span class=\"badge status-published\">published</span>"),
        "{html}"
    );
    assert!(
        html.contains("<span class=\"badge status-failed\">failed</span>"),
        "{html}"
    );
    assert!(html.contains("went out") && html.contains("refused at the end"));
    let links = timeline_links(&html);
    assert_eq!(links.len(), 2, "{links:?}");
    assert!(
        links.contains(&format!("/dashboard/history/{failed_id}")),
        "{links:?}"
    );
}

#[actix_web::test]
async fn the_timeline_of_a_failed_publish_shows_each_step_and_the_platforms_words() {
    let app = TestApp::spawn().await;
    let (publisher, id) = failed_instagram_publish(&app).await;
    let row = app.state.store.find_submission(id).await.unwrap().unwrap();
    let steps = row.steps.clone().unwrap();
    let container = steps["steps"][0]["id"].as_str().unwrap().to_string();
    let message = row.error_message.clone().unwrap();
    let code = row.error_code.clone().unwrap();

    let html = page(
        &app,
        &publisher.dashboard,
        &format!("/dashboard/history/{id}"),
    )
    .await;
    let order = [
        "Publish started",
        "Media container created",
        &container,
        "Final publish call made",
        "Failed",
    ];
    let mut from = html.find("class=\"timeline\"").expect("a timeline");
    for step in order {
        let at = html[from..]
            .find(step)
            .unwrap_or_else(|| panic!("{step} after byte {from}:\n{html}"));
        from += at;
    }
    // Each recorded step carries its time (exact UTC on hover).
    let timeline = &html[html.find("class=\"timeline\"").unwrap()..];
    assert!(!timeline.contains("time not recorded"), "{timeline}");
    assert!(
        timeline.matches("<time datetime=").count() >= 4,
        "{timeline}"
    );
    // Our code and the platform's own words.
    assert!(html.contains(&format!("<code class=\"error-code\">{code}</code>")));
    let words = escape(&message);
    assert!(html.contains(&words), "{message} in\n{html}");
    assert!(html.contains("badge status-failed"));
}

#[actix_web::test]
async fn another_users_submission_is_not_shown() {
    let app = TestApp::spawn().await;
    let (_, id) = failed_instagram_publish(&app).await;
    let stranger = app.sign_in("stranger@example.com").await;
    let missing = "/dashboard/history?notice=post_missing";
    // Answered exactly as an id that names nothing, or no id at all: back to the list.
    for path in [
        format!("/dashboard/history/{id}"),
        format!("/dashboard/history/{}", Uuid::new_v4()),
        "/dashboard/history/not-an-id".to_string(),
    ] {
        let response = stranger
            .no_redirect
            .get(app.url(&path))
            .header(header::ACCEPT, BROWSER_ACCEPT)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 303, "{path}");
        assert_eq!(response.headers()[header::LOCATION], missing, "{path}");
    }
    let body = page(&app, &stranger, missing).await;
    assert!(body.contains("does not exist in your history"), "{body}");
    // Nor in the stranger's list.
    let list = page(&app, &stranger, "/dashboard/history").await;
    assert!(timeline_links(&list).is_empty(), "{list}");
    assert!(list.contains("Nothing has been published yet"), "{list}");
}

#[actix_web::test]
async fn history_is_paginated() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("pages@example.com").await;
    let account = app
        .add_account(dashboard.user_id, "facebook", "Paged Page")
        .await;
    for i in 0..23 {
        let now = app.clock_now();
        let submission = NewSubmission {
            user_id: dashboard.user_id,
            account_id: account.id,
            platform: "facebook".into(),
            post_type: Some("text".into()),
            post_id: Some(format!("page_{i}")),
            status: "published".into(),
            page_name: "Paged Page".into(),
            content: json!({"text": format!("post number {i}.")}),
            result: None,
            error_code: None,
            error_message: None,
            published_at: Some(now),
        };
        app.state
            .store
            .insert_submission(submission, now)
            .await
            .unwrap();
        app.clock.advance(chrono::Duration::seconds(1));
    }
    let first = page(&app, &dashboard, "/dashboard/history").await;
    assert_eq!(timeline_links(&first).len(), 20);
    assert!(first.contains("Page 1 of 2 (23 posts)"), "{first}");
    assert!(first.contains("post number 22.") && !first.contains("post number 2."));
    assert!(first.contains("href=\"/dashboard/history?page=2\""));
    let second = page(&app, &dashboard, "/dashboard/history?page=2").await;
    assert_eq!(timeline_links(&second).len(), 3);
    assert!(second.contains("post number 0.") && !second.contains("post number 3."));
    assert!(second.contains("href=\"/dashboard/history?page=1\""));
}
