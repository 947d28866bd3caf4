//! `GET /api/published-posts`: newest first, `limit` (default 20, max 100) and `offset`, only
//! the caller's posts.

use serde_json::{Value, json};
use social_service::store::NewSubmission;
use uuid::Uuid;

use crate::helpers::{Dashboard, TestApp, error_body, status_and_json};

async fn record(app: &TestApp, user_id: Uuid, account_id: Uuid, n: usize) {
    for i in 0..n {
        let now = app.clock_now();
        let submission = NewSubmission {
            user_id,
            account_id,
            platform: social_service::publish::plan::Platform::Facebook,
            post_type: Some(if i % 2 == 0 {
                entity::post_submission::PostType::Text
            } else {
                entity::post_submission::PostType::Album
            }),
            post_id: Some(format!("page_{i}")),
            status: entity::post_submission::SubmissionStatus::Published,
            page_name: "History Page".into(),
            content: json!({"text": format!("post {i}"), "media_urls": []}),
            result: (i % 2 == 1).then(|| json!({"photo_count": 3})),
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
}

async fn page(app: &TestApp, dashboard: &Dashboard, query: &str) -> (u16, Value) {
    let url = app.url(&format!("/api/published-posts{query}"));
    status_and_json(dashboard.client.get(url).send().await.unwrap()).await
}

#[actix_web::test]
async fn history_is_paginated_newest_first() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("history@example.com").await;
    let account = app
        .add_account(dashboard.user_id, "facebook", "History Page")
        .await;
    record(&app, dashboard.user_id, account.id, 25).await;

    let (status, body) = page(&app, &dashboard, "").await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            body["total"].clone(),
            body["limit"].clone(),
            body["offset"].clone()
        ),
        (json!(25), json!(20), json!(0))
    );
    let posts = body["posts"].as_array().unwrap();
    assert_eq!(posts.len(), 20);
    assert_eq!(posts[0]["content"]["text"], "post 24", "newest first");
    assert_eq!(posts[19]["content"]["text"], "post 5");
    let newest = &posts[0];
    assert_eq!(newest["platform"], "facebook");
    assert_eq!(newest["post_type"], "text");
    assert_eq!(newest["status"], "published");
    assert_eq!(newest["page_name"], "History Page");
    assert_eq!(newest["account_id"], json!(account.id));
    assert!(newest["post_submission_id"].is_string());
    assert!(newest["published_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        posts[1]["photo_count"], 3,
        "type-specific result fields are merged in"
    );

    let (_, body) = page(&app, &dashboard, "?limit=10&offset=20").await;
    let posts = body["posts"].as_array().unwrap();
    assert_eq!(posts.len(), 5);
    assert_eq!(posts[4]["content"]["text"], "post 0");
    assert_eq!(
        (body["limit"].clone(), body["offset"].clone()),
        (json!(10), json!(20))
    );

    let (_, body) = page(&app, &dashboard, "?limit=500").await;
    assert_eq!(body["limit"], 100, "limit is clamped to the maximum");
    assert_eq!(body["posts"].as_array().unwrap().len(), 25);

    let (_, body) = page(&app, &dashboard, "?offset=100").await;
    assert_eq!(
        (body["posts"].clone(), body["total"].clone()),
        (json!([]), json!(25))
    );
}

#[actix_web::test]
async fn history_rejects_bad_bounds() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("bounds@example.com").await;
    assert_eq!(
        page(&app, &dashboard, "?limit=0").await,
        (
            400,
            error_body("InvalidRequest", "limit must be at least 1")
        )
    );
    assert_eq!(
        page(&app, &dashboard, "?offset=-3").await,
        (
            400,
            error_body("InvalidRequest", "offset must not be negative")
        )
    );
    let (status, body) = page(&app, &dashboard, "?limit=ten").await;
    assert_eq!(
        (status, body["error"].clone()),
        (400, json!("InvalidRequest"))
    );
}

#[actix_web::test]
async fn users_see_only_their_own_history() {
    let app = TestApp::spawn().await;
    let alice = app.sign_in("alice.history@example.com").await;
    let bob = app.sign_in("bob.history@example.com").await;
    let account = app
        .add_account(alice.user_id, "facebook", "Alice Page")
        .await;
    record(&app, alice.user_id, account.id, 3).await;
    assert_eq!(
        page(&app, &bob, "").await,
        (
            200,
            json!({"posts": [], "total": 0, "limit": 20, "offset": 0})
        )
    );
    assert_eq!(page(&app, &alice, "").await.1["total"], 3);
}
