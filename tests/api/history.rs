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
            platform: social_service::domain::plan::Platform::Facebook,
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

/// A steps document with and without step times, written straight into the column: the row
/// loads with its steps typed. A document that is not one is an error on load, never an empty
/// history.
#[actix_web::test]
async fn stored_steps_documents_load_typed_and_a_damaged_one_is_an_error() {
    use entity::post_submission::{ProcessingOutcome, StepKind};
    use sea_orm::ConnectionTrait;
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("steps@example.com").await;
    let account = app
        .add_account(dashboard.user_id, "facebook", "Steps Page")
        .await;
    record(&app, dashboard.user_id, account.id, 1).await;
    let set_steps = |document: &str| {
        format!("UPDATE post_submissions SET steps = '{document}' WHERE page_name = 'History Page'")
    };
    let db = app.state.store.connection();
    let today = r#"{"final_started":true,"final_started_at":"2026-11-24T06:00:01.250Z","steps":[{"at":"2026-11-24T06:00:00.000Z","id":"17890","name":"container"},{"at":"2026-11-24T06:00:00.500Z","id":"17890","name":"processing","outcome":"finished"},{"id":"1800","name":"post"}]}"#;
    let changed = db.execute_unprepared(&set_steps(today)).await.unwrap();
    assert_eq!(changed.rows_affected(), 1);
    let id = app
        .state
        .store
        .list_submissions(
            dashboard.user_id,
            social_service::store::Page {
                limit: 10,
                offset: 0,
            },
        )
        .await
        .unwrap()
        .0[0]
        .id;
    let row = app.state.store.find_submission(id).await.unwrap().unwrap();
    let steps = row.steps.unwrap();
    assert!(steps.final_started);
    assert_eq!(steps.ids(StepKind::Container), ["17890"]);
    assert_eq!(steps.ids(StepKind::Post), ["1800"]);
    assert_eq!(steps.steps[1].outcome, Some(ProcessingOutcome::Finished));
    assert_eq!(steps.steps[2].at, None);

    db.execute_unprepared(&set_steps(
        r#"{"steps":[{"name":"teleport","id":"1"}],"final_started":false}"#,
    ))
    .await
    .unwrap();
    assert!(app.state.store.find_submission(id).await.is_err());
}
