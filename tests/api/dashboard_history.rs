//! The dashboard's History (with each publish's delivery timeline) and Performance pages, at
//! the HTTP level (a cookie client, no browser): badges, the recorded steps with the
//! platform's own words on failure, another user's submission refused, the chart's gaps for
//! days without a snapshot, backfill through the button, the cross-site refusal, and the
//! security headers (CSP, nothing inline) of every page.

use reqwest::header;
use serde_json::json;
use service_sim::state::{FaultKind, FaultSpec, Processing};
use social_service::store::NewSubmission;
use uuid::Uuid;

use crate::helpers::{TestApp, assert_no_violations};
use crate::pages::{BROWSER_ACCEPT, get_page, post_form};

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

    let html = get_page(&app, &publisher.dashboard, "/dashboard/history").await;
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
    let container = steps.steps[0].id.clone();
    let message = row.error_message.clone().unwrap();
    let code = row.error_code.clone().unwrap();

    let html = get_page(
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
    // The Graph error itself, not only our summary of it.
    assert!(
        html.contains("(#200) The user hasn&#39;t authorized the application"),
        "{html}"
    );
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
    let body = get_page(&app, &stranger, missing).await;
    assert!(body.contains("does not exist in your history"), "{body}");
    // Nor in the stranger's list.
    let list = get_page(&app, &stranger, "/dashboard/history").await;
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
            platform: social_service::domain::plan::Platform::Facebook,
            post_type: Some(entity::post_submission::PostType::Text),
            post_id: Some(format!("page_{i}")),
            status: entity::post_submission::SubmissionStatus::Published,
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
    let first = get_page(&app, &dashboard, "/dashboard/history").await;
    assert_eq!(timeline_links(&first).len(), 20);
    assert!(first.contains("Page 1 of 2 (23 posts)"), "{first}");
    assert!(first.contains("post number 22.") && !first.contains("post number 2."));
    assert!(first.contains("href=\"/dashboard/history?page=2\""));
    let second = get_page(&app, &dashboard, "/dashboard/history?page=2").await;
    assert_eq!(timeline_links(&second).len(), 3);
    assert!(second.contains("post number 0.") && !second.contains("post number 3."));
    assert!(second.contains("href=\"/dashboard/history?page=1\""));
    // Past the end: the last page.
    let past = get_page(&app, &dashboard, "/dashboard/history?page=9").await;
    assert!(past.contains("Page 2 of 2 (23 posts)"), "{past}");
    assert_eq!(timeline_links(&past).len(), 3);
}

/// `POST /api/cron/backfill` with the owner's API key (how the snapshots of some days are
/// made, leaving the others missing).
async fn api_backfill(app: &TestApp, key: &str, account_id: Uuid, dates: &[String]) {
    let response = app
        .http
        .post(app.url("/api/cron/backfill"))
        .header("service-api-key", key)
        .json(&json!({"account_id": account_id, "missing_dates": dates}))
        .send()
        .await
        .unwrap();
    let (status, body) = crate::helpers::status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"]["success_count"], dates.len(), "{body}");
}

/// `GET /api/cron/check-missing` with the owner's API key.
async fn api_missing(app: &TestApp, key: &str, account_id: Uuid, days: u32) -> Vec<String> {
    let response = app
        .http
        .get(app.url(&format!(
            "/api/cron/check-missing?account_id={account_id}&days={days}"
        )))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap();
    let (status, body) = crate::helpers::status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    body["missing_dates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap().to_string())
        .collect()
}

/// The chart whose caption names `title`: its `<svg>…</svg>`.
fn chart_svg<'a>(html: &'a str, title: &str) -> &'a str {
    let caption = html
        .find(&format!("<span class=\"name\">{title}</span>"))
        .unwrap_or_else(|| panic!("a chart of {title}:\n{html}"));
    let start = caption + html[caption..].find("<svg").unwrap();
    let end = start + html[start..].find("</svg>").unwrap();
    &html[start..end]
}

/// The `d` of the chart's line.
fn path_of(svg: &str) -> String {
    let at = svg.find(" d=\"").expect("a path");
    let rest = &svg[at + 4..];
    rest[..rest.find('"').unwrap()].to_string()
}

/// A facebook page connected a week and a day ago, with snapshots of the last seven days but
/// one (the middle one): returns the publisher and the missing date.
async fn page_with_a_missing_day(app: &TestApp) -> (crate::helpers::Publisher, String) {
    let publisher = app.publisher("facebook", "pro").await;
    app.clock.set(app.clock_now() + chrono::Duration::days(8));
    let all = api_missing(app, &publisher.key, publisher.account.id, 7).await;
    assert_eq!(all.len(), 7, "{all:?}");
    let hole = all[3].clone();
    let some: Vec<String> = all.iter().filter(|d| **d != hole).cloned().collect();
    api_backfill(app, &publisher.key, publisher.account.id, &some).await;
    (publisher, hole)
}

#[actix_web::test]
async fn the_chart_of_a_day_without_a_snapshot_has_a_gap_not_a_zero() {
    let app = TestApp::spawn().await;
    let (publisher, hole) = page_with_a_missing_day(&app).await;
    let path = format!(
        "/dashboard/performance?account_id={}&days=7",
        publisher.account.id
    );
    let html = get_page(&app, &publisher.dashboard, &path).await;
    assert!(html.contains("aria-current=\"page\">Performance</a>"));
    for title in ["Posts", "page_media_view"] {
        let svg = chart_svg(&html, title);
        let d = path_of(svg);
        // Three days, a break, three days: two moves, four lines.
        assert_eq!(d.matches('M').count(), 2, "{title}: {d}");
        assert_eq!(d.matches('L').count(), 4, "{title}: {d}");
        assert_eq!(svg.matches("<circle").count(), 6, "{svg}");
        assert!(!svg.contains(&format!("data-date=\"{hole}\"")), "{svg}");
        assert!(svg.contains("6 of 7 days") || html.contains("6 of 7 days have a value"));
    }
    // The missing date is listed with the button.
    let missing = &html[html.find("id=\"missing-title\"").unwrap()..];
    assert!(
        missing.contains(&format!("<time datetime=\"{hole}\">")),
        "{missing}"
    );
    assert!(missing.contains("action=\"/dashboard/performance/backfill\""));
}

#[actix_web::test]
async fn the_backfill_button_creates_the_missing_snapshot_and_closes_the_gap() {
    let app = TestApp::spawn().await;
    let (publisher, hole) = page_with_a_missing_day(&app).await;
    assert_eq!(app.state.store.count_snapshots(&hole).await.unwrap(), 0);
    let account_id = publisher.account.id.to_string();
    let response = post_form(
        &app,
        &publisher.dashboard,
        "/dashboard/performance/backfill",
        &[("account_id", &account_id), ("days", "7")],
    )
    .await;
    assert_eq!(response.status(), 303);
    let location = response.headers()[header::LOCATION]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        location.starts_with(&format!(
            "/dashboard/performance?account_id={account_id}&days=7&notice=backfilled"
        )),
        "{location}"
    );
    assert_eq!(app.state.store.count_snapshots(&hole).await.unwrap(), 1);
    let html = get_page(&app, &publisher.dashboard, &location).await;
    assert!(html.contains("Backfilled 1 of 1 day(s)."), "{html}");
    assert!(html.contains("Every day in this range has its snapshot."));
    let d = path_of(chart_svg(&html, "Posts"));
    assert_eq!(d.matches('M').count(), 1, "{d}");
    assert!(
        api_missing(&app, &publisher.key, publisher.account.id, 7)
            .await
            .is_empty()
    );
}

#[actix_web::test]
async fn a_cross_site_backfill_is_refused_and_collects_nothing() {
    let app = TestApp::spawn().await;
    // Signed in before the clock moves on (the identity provider's tokens follow the real time).
    let stranger = app.sign_in("stranger@example.com").await;
    let (publisher, hole) = page_with_a_missing_day(&app).await;
    let account_id = publisher.account.id.to_string();
    for (name, value) in [
        ("origin", "https://evil.example"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let response = publisher
            .dashboard
            .no_redirect
            .post(app.url("/dashboard/performance/backfill"))
            .header(name, value)
            .form(&[("account_id", account_id.as_str()), ("days", "7")])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{name}: {value}");
    }
    assert_eq!(app.state.store.count_snapshots(&hole).await.unwrap(), 0);
    // Nor can a user backfill someone else's account through the form.
    let response = post_form(
        &app,
        &stranger,
        "/dashboard/performance/backfill",
        &[("account_id", &account_id), ("days", "7")],
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(app.state.store.count_snapshots(&hole).await.unwrap(), 0);
}

#[actix_web::test]
async fn recent_posts_show_their_metrics_or_the_platforms_error() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let (status, body) = app
        .post(
            &publisher.key,
            &publisher.body(json!({"text": "measured post"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let path = format!("/dashboard/performance?account_id={}", publisher.account.id);
    let html = get_page(&app, &publisher.dashboard, &path).await;
    let posts = &html[html.find("id=\"posts-title\"").unwrap()..];
    assert!(posts.contains("measured post"), "{posts}");
    assert!(
        posts.contains("<span class=\"muted\">reactions</span> "),
        "{posts}"
    );
    assert!(
        posts.contains("<span class=\"muted\">post_media_view</span> "),
        "{posts}"
    );

    app.sim.state().set_faults(
        "facebook",
        &publisher.sim.external_id,
        FaultSpec {
            error: Some(FaultKind::Permission),
            path_contains: Some("/posts".into()),
            ..FaultSpec::default()
        },
    );
    let html = get_page(&app, &publisher.dashboard, &path).await;
    let posts = &html[html.find("id=\"posts-title\"").unwrap()..];
    assert!(
        posts.contains("The platform did not give the recent posts:"),
        "{posts}"
    );
    assert!(!posts.contains("<table>"), "{posts}");
    assert!(!posts.contains("This account has no posts yet"), "{posts}");
}

/// The table reads each platform's own posts body: a threads account's threads are listed with
/// their insights (the body has `data.threads`, not `posts`).
#[actix_web::test]
async fn recent_posts_of_other_platforms_are_listed_too() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let (status, body) = app
        .post(
            &publisher.key,
            &publisher.body(json!({"text": "measured thread"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let path = format!("/dashboard/performance?account_id={}", publisher.account.id);
    let html = get_page(&app, &publisher.dashboard, &path).await;
    let posts = &html[html.find("id=\"posts-title\"").unwrap()..];
    assert!(posts.contains("measured thread"), "{posts}");
    assert!(
        posts.contains("<span class=\"muted\">views</span> "),
        "{posts}"
    );
    assert!(!posts.contains("This account has no posts yet"), "{posts}");
}

#[actix_web::test]
async fn performance_without_an_account_says_what_to_do() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("empty@example.com").await;
    let html = get_page(&app, &dashboard, "/dashboard/performance").await;
    assert!(html.contains("No account is connected yet"), "{html}");
    assert!(html.contains("href=\"/dashboard/accounts\""));
    let html = get_page(&app, &dashboard, "/dashboard/performance?lang=zh-TW").await;
    assert!(html.contains("成效"), "{html}");
}

#[actix_web::test]
async fn an_account_without_metrics_says_so_and_offers_no_backfill() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("x", "ultra").await;
    app.clock.set(app.clock_now() + chrono::Duration::days(3));
    let path = format!("/dashboard/performance?account_id={}", publisher.account.id);
    let html = get_page(&app, &publisher.dashboard, &path).await;
    assert!(html.contains("X gives no performance metrics"), "{html}");
    assert!(!html.contains("/dashboard/performance/backfill"), "{html}");
    assert!(!html.contains("<svg"), "{html}");
}

#[actix_web::test]
async fn the_timeline_shows_how_the_platforms_processing_ended() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("instagram", "pro").await;
    let reel = |text: &str| json!({"text": text, "mediaUrls": [app.media_url("sample.mp4")]});
    // One reel whose container processing ends in the platform's error state, one that finishes.
    app.sim.state().set_faults(
        "instagram",
        &publisher.sim.external_id,
        FaultSpec {
            processing: Processing::Fail,
            ..FaultSpec::default()
        },
    );
    let (status, body) = app
        .post(&publisher.key, &publisher.body(reel("broken reel")))
        .await;
    assert_ne!(status, 200, "{body}");
    app.sim.state().set_faults(
        "instagram",
        &publisher.sim.external_id,
        FaultSpec::default(),
    );
    let (status, body) = app
        .post(&publisher.key, &publisher.body(reel("good reel")))
        .await;
    assert_eq!(status, 200, "{body}");

    let history = app.history(&publisher.dashboard).await;
    for (text, label, final_call) in [
        (
            "good reel",
            "Platform processing finished (status polled)",
            true,
        ),
        (
            "broken reel",
            "Platform processing failed (status polled)",
            false,
        ),
    ] {
        let item = history["posts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p.to_string().contains(text))
            .unwrap_or_else(|| panic!("{text} in {history}"));
        let id = item["post_submission_id"].as_str().unwrap();
        let html = get_page(
            &app,
            &publisher.dashboard,
            &format!("/dashboard/history/{id}"),
        )
        .await;
        let timeline = &html[html.find("class=\"timeline\"").expect("a timeline")..];
        let container = timeline.find("Media container created").expect("container");
        let processed = timeline
            .find(label)
            .unwrap_or_else(|| panic!("{label}:\n{timeline}"));
        assert!(container < processed, "{timeline}");
        // Processing comes before the final call, which a failed processing never reaches.
        match timeline.find("Final publish call made") {
            Some(at) => assert!(final_call && processed < at, "{timeline}"),
            None => assert!(!final_call, "{timeline}"),
        }
    }
    assert_no_violations(&app.sim);
}
