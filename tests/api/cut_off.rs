//! Scheduled posts of an instance that died (SIGKILL, power cut) with them claimed: settled
//! from the steps their attempts recorded, and a final call cut off mid-flight confirmed with
//! the platform rather than guessed.

use entity::{post_submission::SubmissionStatus, scheduled_post::ScheduledStatus};
use serde_json::json;
use social_service::{
    config::PlatformsConfig, platforms::StepKind, publish::reconcile::NOT_OUT_MESSAGE,
    services::scheduling::settle_expired_claims, store::NewSubmission,
};
use uuid::Uuid;

use crate::{
    helpers::{Publisher, TestApp, eventually},
    scheduled::schedule_ok,
};

/// A test instance whose scheduler is stopped, so that a "dead" instance claims the posts.
async fn app_without_a_scheduler() -> TestApp {
    let app = TestApp::spawn_with(|c| {
        c.scheduler.lease_secs = 2;
        c.publishing.unconfirmed_check_interval_ms = 100;
    })
    .await;
    app.state
        .background
        .scheduler()
        .unwrap()
        .send(social_service::background::scheduler::Drain)
        .await
        .unwrap();
    app
}

/// Writes the history row of a publish to `publisher`'s account as the publish does before its
/// final call (an attempt of `scheduled_post_id` if given), its final call started or not, and
/// answers its id: what a process killed at that point leaves.
async fn cut_off_publish(
    app: &TestApp,
    publisher: &Publisher,
    content: serde_json::Value,
    scheduled_post_id: Option<Uuid>,
    final_started: bool,
) -> Uuid {
    let store = &app.state.store;
    let id = Uuid::new_v4();
    let post_type = if content["media_urls"]
        .as_array()
        .is_some_and(|m| !m.is_empty())
    {
        entity::post_submission::PostType::Photo
    } else {
        entity::post_submission::PostType::Text
    };
    store
        .start_submission(
            id,
            NewSubmission {
                user_id: publisher.user_id,
                account_id: publisher.account.id,
                platform: publisher.account.platform,
                post_type: Some(post_type),
                post_id: None,
                status: SubmissionStatus::Publishing,
                page_name: publisher.account.display_name.clone(),
                content,
                result: None,
                error_code: None,
                error_message: None,
                published_at: None,
            },
            scheduled_post_id,
            app.clock_now(),
        )
        .await
        .unwrap();
    store
        .record_submission_steps(
            id,
            serde_json::from_value(json!({"steps": [], "final_started": final_started})).unwrap(),
        )
        .await
        .unwrap();
    id
}

/// Publishes `content` through the service: its history row, and the id of its step `kind`.
async fn published_with_step(
    app: &TestApp,
    publisher: &Publisher,
    content: serde_json::Value,
    kind: StepKind,
) -> (entity::post_submission::Model, String) {
    let (status, body) = app.post(&publisher.key, &publisher.body(content)).await;
    assert_eq!(status, 200, "{body}");
    let id = body["data"]["post_submission_id"].as_str().unwrap();
    let row = app
        .state
        .store
        .find_submission(id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let step = row
        .steps
        .as_ref()
        .unwrap()
        .steps
        .iter()
        .find(|s| s.kind == kind);
    let step = step.unwrap().id.clone();
    (row, step)
}

/// [`cut_off_publish`] with its final call started after recording the step `name` `id`.
async fn cut_off_with_step(
    app: &TestApp,
    publisher: &Publisher,
    content: serde_json::Value,
    name: &str,
    id: &str,
) -> Uuid {
    let submission = cut_off_publish(app, publisher, content, None, true).await;
    let steps = json!({"steps": [{"id": id, "name": name}], "final_started": true});
    app.state
        .store
        .record_submission_steps(submission, serde_json::from_value(steps).unwrap())
        .await
        .unwrap();
    submission
}

/// Claims every due post as `dead-instance`, which writes each attempt's history row (as a
/// publish does before its final call) and then stops; the posts in `final_started` had
/// their final call started. Answers the history rows' ids, by scheduled post id.
async fn claimed_by_a_dead_instance(
    app: &TestApp,
    publisher: &Publisher,
    final_started: &[&str],
) -> std::collections::HashMap<String, Uuid> {
    let store = &app.state.store;
    app.clock.advance(chrono::Duration::seconds(62));
    let now = app.clock_now();
    let lease = now + chrono::Duration::seconds(1);
    let claimed = store
        .claim_due_posts("dead-instance", now, lease, 10)
        .await
        .unwrap();
    let mut attempts = std::collections::HashMap::new();
    for row in claimed {
        let started = final_started.contains(&row.id.to_string().as_str());
        let submission_id =
            cut_off_publish(app, publisher, row.content.clone(), Some(row.id), started).await;
        assert!(
            store
                .set_scheduled_submission(row.id, "dead-instance", submission_id)
                .await
                .unwrap()
        );
        attempts.insert(row.id.to_string(), submission_id);
    }
    attempts
}

/// The threads text publish's one final call, made on the simulator as the dead instance
/// made it (`POST /{user}/threads` with `auto_publish_text`): the post is out. Answers its id.
async fn final_call_went_out(app: &TestApp, publisher: &Publisher, text: &str) -> String {
    let config = PlatformsConfig::simulator(&app.sim.base_url);
    let url = format!(
        "{}/{}/{}/threads",
        config.threads_url, config.threads_version, publisher.sim.external_id
    );
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(&publisher.sim.access_token)
        .form(&[
            ("media_type", "TEXT"),
            ("text", text),
            ("auto_publish_text", "true"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    body["id"].as_str().unwrap().to_string()
}

/// Waits until the scheduled post has left `publishing` (the platform was asked), and
/// answers it.
async fn after_the_lookup(app: &TestApp, id: &str) -> entity::scheduled_post::Model {
    let store = &app.state.store;
    let id: Uuid = id.parse().unwrap();
    eventually("the platform to be asked", async || {
        let row = store.find_scheduled_post(id).await.unwrap().unwrap();
        row.status != ScheduledStatus::Publishing
    })
    .await;
    store.find_scheduled_post(id).await.unwrap().unwrap()
}

#[actix_web::test]
async fn a_dead_instances_posts_are_retried_when_nothing_went_out() {
    let app = app_without_a_scheduler().await;
    let publisher = app.publisher("threads", "pro").await;
    let store = &app.state.store;
    let json = |text: &str| json!({ "text": text });
    let unstarted = schedule_ok(&app, &publisher, json("never reached the platform"), 61).await;
    let midway = schedule_ok(&app, &publisher, json("final call was cut off"), 61).await;
    let attempts = claimed_by_a_dead_instance(&app, &publisher, &[&midway]).await;
    // The lease passes; settlement runs (as the next start would).
    app.clock.advance(chrono::Duration::seconds(5));
    assert_eq!(
        settle_expired_claims(&app.state.scheduling).await.unwrap(),
        2
    );
    let unstarted_row = store
        .find_scheduled_post(unstarted.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        unstarted_row.status,
        ScheduledStatus::Scheduled,
        "retried: the final call was never made"
    );
    // The platform shows no post with the cut-off call's text: nothing went out, and the
    // post is given another attempt.
    let midway_row = after_the_lookup(&app, &midway).await;
    assert_eq!(
        midway_row.status,
        ScheduledStatus::Scheduled,
        "{midway_row:?}"
    );
    assert_eq!(midway_row.error.as_deref(), Some(NOT_OUT_MESSAGE));
    let history = store
        .find_submission(attempts[&midway])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(history.status, SubmissionStatus::Failed);
    assert_eq!(history.error_message.as_deref(), Some(NOT_OUT_MESSAGE));
    assert!(app.published(&publisher.sim).is_empty());
    // Settling again does nothing.
    assert_eq!(
        settle_expired_claims(&app.state.scheduling).await.unwrap(),
        0
    );
}

#[actix_web::test]
async fn a_dead_instances_final_call_that_went_out_is_confirmed_with_the_platform() {
    let app = app_without_a_scheduler().await;
    let publisher = app.publisher("threads", "pro").await;
    let store = &app.state.store;
    let text = "went out as the instance died";
    let scheduled = schedule_ok(&app, &publisher, json!({ "text": text }), 61).await;
    let attempts = claimed_by_a_dead_instance(&app, &publisher, &[&scheduled]).await;
    let post_id = final_call_went_out(&app, &publisher, text).await;
    app.clock.advance(chrono::Duration::seconds(5));
    assert_eq!(
        settle_expired_claims(&app.state.scheduling).await.unwrap(),
        1
    );
    let row = after_the_lookup(&app, &scheduled).await;
    assert_eq!(row.status, ScheduledStatus::Published, "{row:?}");
    assert_eq!(row.post_id.as_deref(), Some(post_id.as_str()));
    let history = store
        .find_submission(attempts[&scheduled])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(history.status, SubmissionStatus::Published);
    assert_eq!(history.post_id.as_deref(), Some(post_id.as_str()));
    assert_eq!(app.published(&publisher.sim).len(), 1, "published once");
}

#[actix_web::test]
async fn an_immediate_publish_cut_off_by_a_crash_is_settled_or_looked_up() {
    let app = app_without_a_scheduler().await;
    let threads = app.publisher("threads", "pro").await;
    let x = app.publisher("x", "ultra").await;
    let store = &app.state.store;
    let mut ids = Vec::new();
    for (publisher, text, final_started) in [
        (&threads, "cut off", false),
        (&threads, "cut off", true),
        (&x, "cut off, see example.com", true),
    ] {
        let content = json!({"text": text, "media_urls": []});
        ids.push(cut_off_publish(&app, publisher, content, None, final_started).await);
    }
    app.clock.advance(chrono::Duration::seconds(1_801));
    settle_expired_claims(&app.state.scheduling).await.unwrap();
    let interrupted = store.find_submission(ids[0]).await.unwrap().unwrap();
    assert_eq!(interrupted.status, SubmissionStatus::Failed);
    // threads is asked, and shows no such post: nothing went out.
    eventually("the platform to be asked", async || {
        let row = store.find_submission(ids[1]).await.unwrap().unwrap();
        row.status == SubmissionStatus::Failed
    })
    .await;
    let looked_up = store.find_submission(ids[1]).await.unwrap().unwrap();
    assert_eq!(looked_up.error_message.as_deref(), Some(NOT_OUT_MESSAGE));
    // x lists a link as `t.co`: a post with one cannot be told from its listing, and whether
    // it went out stays unconfirmed.
    let unconfirmed = store.find_submission(ids[2]).await.unwrap().unwrap();
    assert_eq!(unconfirmed.status, SubmissionStatus::Unconfirmed);
    assert!(unconfirmed.error_message.unwrap().contains("unconfirmed"));
    assert_eq!(unconfirmed.next_check_at, None, "not checked");
}

/// An x publish cut off at its final call: looked up on `GET /2/users/{id}/tweets`. One that
/// went out is confirmed with X's id; one that did not is failed and gives its monthly count
/// back.
#[actix_web::test]
async fn a_cut_off_x_post_is_looked_up_on_the_users_posts() {
    let app = app_without_a_scheduler().await;
    let store = &app.state.store;
    let publisher = app.publisher("x", "ultra").await;
    let month = |user: entity::user::Model| {
        let period = social_service::usage::usage_period(user.created_at, app.clock_now());
        format!("x-posts:{}", period.key())
    };
    let key = month(store.find_user(publisher.user_id).await.unwrap().unwrap());
    // What went out: a publish that answered, then a dead instance's call with the same text.
    let text = "out on x as the instance died";
    let (status, body) = app
        .post(&publisher.key, &publisher.body(json!({"text": text})))
        .await;
    assert_eq!(status, 200, "{body}");
    let out = app.published(&publisher.sim);
    assert_eq!(
        store.period_usage(publisher.user_id, &key).await.unwrap(),
        1
    );
    let went_out = json!({"text": text, "media_urls": []});
    let found = cut_off_publish(&app, &publisher, went_out, None, true).await;
    // A dead instance's publish that never reached X, its monthly count taken.
    let lost = json!({"text": "never reached x", "media_urls": []});
    let not_out = cut_off_publish(&app, &publisher, lost, None, true).await;
    store
        .reserve_call(publisher.user_id, &key, Some(60), app.clock_now())
        .await
        .unwrap();
    assert_eq!(
        store.period_usage(publisher.user_id, &key).await.unwrap(),
        2
    );
    app.clock.advance(chrono::Duration::seconds(1_801));
    settle_expired_claims(&app.state.scheduling).await.unwrap();
    eventually("x to be asked", async || {
        let found = store.find_submission(found).await.unwrap().unwrap();
        let not_out = store.find_submission(not_out).await.unwrap().unwrap();
        found.status == SubmissionStatus::Published && not_out.status == SubmissionStatus::Failed
    })
    .await;
    let found = store.find_submission(found).await.unwrap().unwrap();
    assert_eq!(found.post_id.as_deref(), Some(out[0].id.as_str()));
    let not_out = store.find_submission(not_out).await.unwrap().unwrap();
    assert_eq!(not_out.error_message.as_deref(), Some(NOT_OUT_MESSAGE));
    assert_eq!(
        store.period_usage(publisher.user_id, &key).await.unwrap(),
        1,
        "the count of the post that did not go out is given back"
    );
    assert_eq!(app.published(&publisher.sim).len(), 1, "published once");
}

/// facebook's and instagram's posts are found on their own edges (`/{page}/posts`,
/// `/{ig-user}/media`), by their own text fields, with their own ids.
#[actix_web::test]
async fn a_cut_off_final_call_is_found_on_facebook_and_instagram() {
    let app = app_without_a_scheduler().await;
    let store = &app.state.store;
    let jpg = app.media_url("sample.jpg");
    for platform in ["facebook", "instagram"] {
        let publisher = app.publisher(platform, "pro").await;
        let text = format!("out on {platform} as the instance died");
        // What the cut-off final call published.
        let (status, body) = app
            .post(
                &publisher.key,
                &publisher.body(json!({"text": text, "mediaUrls": [jpg]})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let out = app.published(&publisher.sim);
        assert_eq!(out.len(), 1);
        let content = json!({"text": text, "media_urls": [jpg]});
        let id = cut_off_publish(&app, &publisher, content, None, true).await;
        app.clock.advance(chrono::Duration::seconds(1_801));
        settle_expired_claims(&app.state.scheduling).await.unwrap();
        eventually("the platform to be asked", async || {
            let row = store.find_submission(id).await.unwrap().unwrap();
            row.status == SubmissionStatus::Published
        })
        .await;
        let row = store.find_submission(id).await.unwrap().unwrap();
        assert_eq!(
            row.post_id.as_deref(),
            Some(out[0].id.as_str()),
            "{platform}"
        );
        assert_eq!(app.published(&publisher.sim).len(), 1, "{platform}: once");
    }
}

/// A tiktok upload cut off at its last chunk: TikTok had given the upload its `publish_id`
/// before the final call, and its status says whether the post went out. One whose upload
/// completed is confirmed with TikTok's post id; one with no `publish_id` yet (its final call
/// was the init) cannot be asked and stays unconfirmed.
#[actix_web::test]
async fn a_cut_off_tiktok_upload_is_confirmed_by_its_status() {
    let app = app_without_a_scheduler().await;
    let store = &app.state.store;
    let publisher = app.publisher("tiktok", "pro").await;
    let clip = app.media_url("sample.mp4");
    let content = json!({"text": "A clip out as the instance died", "media_urls": [clip]});
    // The upload whose last chunk went out: made through the service, as the dead instance
    // made it, so TikTok holds it under its publish id.
    let (done, publish_id) = published_with_step(
        &app,
        &publisher,
        json!({"text": content["text"], "mediaUrls": [clip]}),
        StepKind::PublishId,
    )
    .await;
    let uploaded =
        cut_off_with_step(&app, &publisher, content.clone(), "publish_id", &publish_id).await;
    let no_id_yet = cut_off_publish(&app, &publisher, content, None, true).await;
    app.clock.advance(chrono::Duration::seconds(1_801));
    settle_expired_claims(&app.state.scheduling).await.unwrap();
    eventually("tiktok to be asked", async || {
        let row = store.find_submission(uploaded).await.unwrap().unwrap();
        row.status == SubmissionStatus::Published
    })
    .await;
    let row = store.find_submission(uploaded).await.unwrap().unwrap();
    assert_eq!(row.post_id, done.post_id);
    let unasked = store.find_submission(no_id_yet).await.unwrap().unwrap();
    assert_eq!(unasked.status, SubmissionStatus::Unconfirmed);
    assert_eq!(unasked.next_check_at, None, "not checked");
    assert_eq!(app.published(&publisher.sim).len(), 1, "published once");
}

/// A youtube upload cut off mid-file: its session (recorded before the upload) says whether
/// it completed. A completed one is the published video; a session holding none of the file
/// means YouTube made no video, and the publish failed with nothing out.
#[actix_web::test]
async fn a_cut_off_youtube_upload_is_settled_by_its_session() {
    let app = app_without_a_scheduler().await;
    let store = &app.state.store;
    let publisher = app.publisher("youtube", "pro").await;
    let video = app.media_url("sample.mp4");
    let text = "A title\n\nA description";
    let content = json!({"text": text, "media_urls": [video]});
    let (done, session) = published_with_step(
        &app,
        &publisher,
        json!({"text": text, "mediaUrls": [video]}),
        StepKind::UploadSession,
    )
    .await;
    let completed = cut_off_with_step(
        &app,
        &publisher,
        content.clone(),
        "upload_session",
        &session,
    )
    .await;
    // A session the dead instance opened and sent nothing into.
    let config = PlatformsConfig::simulator(&app.sim.base_url);
    let opened = reqwest::Client::new()
        .post(format!(
            "{}/upload/youtube/v3/videos",
            config.youtube_upload_url
        ))
        .query(&[("uploadType", "resumable"), ("part", "snippet,status")])
        .bearer_auth(&publisher.sim.access_token)
        .header("X-Upload-Content-Length", "4096")
        .header("X-Upload-Content-Type", "video/mp4")
        .json(&json!({
            "snippet": {"title": "A title", "description": "A description", "categoryId": "22"},
            "status": {"privacyStatus": "public", "selfDeclaredMadeForKids": false},
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let empty = opened.headers()["location"].to_str().unwrap().to_string();
    let cut = cut_off_with_step(&app, &publisher, content, "upload_session", &empty).await;
    app.clock.advance(chrono::Duration::seconds(1_801));
    settle_expired_claims(&app.state.scheduling).await.unwrap();
    eventually("youtube to be asked", async || {
        let completed = store.find_submission(completed).await.unwrap().unwrap();
        let cut = store.find_submission(cut).await.unwrap().unwrap();
        completed.status == SubmissionStatus::Published && cut.status == SubmissionStatus::Failed
    })
    .await;
    let completed = store.find_submission(completed).await.unwrap().unwrap();
    assert_eq!(completed.post_id, done.post_id);
    let cut = store.find_submission(cut).await.unwrap().unwrap();
    assert_eq!(cut.error_message.as_deref(), Some(NOT_OUT_MESSAGE));
    assert_eq!(app.published(&publisher.sim).len(), 1, "published once");
}
