//! Publishes the platform is still processing at our deadline are `unconfirmed`, not `failed`:
//! the client gets 202 `PublishUnconfirmed` (do not retry), and the service keeps checking in the
//! background until the platform says published or failed, publishing nothing twice.
//!
//! The simulator's per-account `processing` fault makes an object stuck (`never`) and then
//! finishing (`finish`) or failing (`fail`): its state is evaluated at each poll. The service's
//! clock is the test's manual clock, so the waits below advance it (checks are due by it).

use std::time::Duration;

use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, sea_query::Expr};
use serde_json::{Value, json};
use service_sim::state::{FaultSpec, Processing};
use social_service::error::PUBLISH_UNCONFIRMED_MESSAGE;

use crate::helpers::{Publisher, TestApp, error_body};

/// Our processing deadline is 1 s; a check is due every 100 ms (of the test clock, which the
/// waits advance) and the reconciler looks every 100 ms.
async fn spawn() -> TestApp {
    TestApp::spawn_with(|c| {
        c.platforms.processing_timeout_secs = 1;
        c.publishing.unconfirmed_check_interval_ms = 100;
    })
    .await
}

fn set_processing(app: &TestApp, publisher: &Publisher, processing: Processing) {
    app.sim.state().set_faults(
        &publisher.sim.platform,
        &publisher.sim.external_id,
        FaultSpec {
            processing,
            ..FaultSpec::default()
        },
    );
}

/// Publishes while the platform's processing is stuck: 202 `PublishUnconfirmed` naming the
/// submission, whose history item is `unconfirmed`. Returns the submission id.
async fn publish_stuck(app: &TestApp, publisher: &Publisher, content: Value) -> String {
    set_processing(app, publisher, Processing::Never);
    let (status, body) = app.post(&publisher.key, &publisher.body(content)).await;
    assert_eq!(status, 202, "{body}");
    let id = body["post_submission_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no post_submission_id: {body}"))
        .to_string();
    let mut expected = error_body("PublishUnconfirmed", PUBLISH_UNCONFIRMED_MESSAGE);
    expected["post_submission_id"] = json!(id);
    expected["post_url"] = json!(format!("/v2/posts/{id}"));
    assert_eq!(body, expected);
    assert!(PUBLISH_UNCONFIRMED_MESSAGE.contains("do not retry"));

    let item = history_item(app, publisher, &id).await;
    assert_eq!(item["status"], "unconfirmed", "{item}");
    assert_eq!(item["error"]["code"], "PublishUnconfirmed", "{item}");
    assert_eq!(
        item["error"]["message"], PUBLISH_UNCONFIRMED_MESSAGE,
        "{item}"
    );
    assert_eq!(item["post_id"], Value::Null, "{item}");
    id
}

async fn history_item(app: &TestApp, publisher: &Publisher, id: &str) -> Value {
    let history = app.history(&publisher.dashboard).await;
    history["posts"]
        .as_array()
        .unwrap_or_else(|| panic!("no history: {history}"))
        .iter()
        .find(|p| p["post_submission_id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("submission {id} not in the history: {history}"))
}

/// Waits (advancing the test clock, by which checks are due) until the history item has one of
/// `statuses`; returns it.
async fn wait_history(app: &TestApp, publisher: &Publisher, id: &str, statuses: &[&str]) -> Value {
    for _ in 0..400 {
        app.clock.advance(chrono::Duration::milliseconds(500));
        let item = history_item(app, publisher, id).await;
        if statuses.contains(&item["status"].as_str().unwrap_or_default()) {
            return item;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "submission {id} never reached {statuses:?}: {}",
        history_item(app, publisher, id).await
    );
}

/// What each platform publishes with processing on the platform's side.
fn processed_post(app: &TestApp, platform: &str) -> (Value, &'static str) {
    let mp4 = app.media_url("sample.mp4");
    match platform {
        "facebook" => (json!({"text": "A video", "mediaUrls": [mp4]}), "video"),
        "instagram" => (json!({"text": "A reel", "mediaUrls": [mp4]}), "reels"),
        "threads" => (json!({"text": "A video", "mediaUrls": [mp4]}), "video"),
        "tiktok" => (json!({"text": "A clip", "mediaUrls": [mp4]}), "video"),
        "youtube" => (json!({"text": "A title", "mediaUrls": [mp4]}), "video"),
        "x" => (json!({"text": "A video", "mediaUrls": [mp4]}), "video"),
        other => panic!("{other}"),
    }
}

/// Stuck, then finishing: `unconfirmed` → `published` with the post id, published exactly once.
async fn stuck_then_finishing(platform: &str) {
    let app = spawn().await;
    let publisher = app
        .publisher(platform, if platform == "x" { "ultra" } else { "pro" })
        .await;
    let (content, post_type) = processed_post(&app, platform);
    let id = publish_stuck(&app, &publisher, content).await;
    // Where the final call comes after processing, nothing is out yet: the service makes that
    // call itself once the container/media is ready.
    if matches!(platform, "instagram" | "threads" | "x") {
        assert!(
            app.published(&publisher.sim).is_empty(),
            "{platform}: published before processing finished"
        );
    }

    set_processing(&app, &publisher, Processing::Finish);
    let item = wait_history(&app, &publisher, &id, &["published", "failed"]).await;
    assert_eq!(item["status"], "published", "{platform}: {item}");
    assert_eq!(item["post_type"], post_type, "{platform}: {item}");
    assert!(item.get("error").is_none(), "{platform}: {item}");
    assert!(item["published_at"].is_string(), "{platform}: {item}");
    let items = app.published(&publisher.sim);
    assert_eq!(
        items.len(),
        1,
        "{platform}: published exactly once: {items:?}"
    );
    assert_eq!(item["post_id"], items[0].id, "{platform}: {item}");
    // Operators see what the reconciler did.
    let view: Value = app
        .http
        .get(app.url("/api/admin/actors"))
        .bearer_auth(crate::helpers::OPERATOR_TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(view["reconciler"]["published"], 1, "{platform}: {view}");
}

#[actix_web::test]
async fn facebook_video_still_processing_is_unconfirmed_then_published() {
    stuck_then_finishing("facebook").await;
}

#[actix_web::test]
async fn instagram_reel_still_processing_is_unconfirmed_then_published() {
    stuck_then_finishing("instagram").await;
}

#[actix_web::test]
async fn threads_video_still_processing_is_unconfirmed_then_published() {
    stuck_then_finishing("threads").await;
}

#[actix_web::test]
async fn tiktok_video_still_processing_is_unconfirmed_then_published() {
    stuck_then_finishing("tiktok").await;
}

#[actix_web::test]
async fn youtube_video_still_processing_is_unconfirmed_then_published() {
    stuck_then_finishing("youtube").await;
}

#[actix_web::test]
async fn x_video_still_processing_is_unconfirmed_then_published() {
    stuck_then_finishing("x").await;
}

#[actix_web::test]
async fn stuck_then_failing_is_failed_with_the_platforms_words() {
    let app = spawn().await;
    // (platform, what the simulated platform says about the failure)
    for (platform, words) in [
        ("facebook", "The video could not be processed"),
        ("tiktok", "file_format_check_failed"),
        ("instagram", "is ERROR"),
    ] {
        let publisher = app.publisher(platform, "pro").await;
        let (content, _) = processed_post(&app, platform);
        let id = publish_stuck(&app, &publisher, content).await;
        set_processing(&app, &publisher, Processing::Fail);
        let item = wait_history(&app, &publisher, &id, &["published", "failed"]).await;
        assert_eq!(item["status"], "failed", "{platform}: {item}");
        assert_eq!(
            item["error"]["code"], "VideoProcessingFailed",
            "{platform}: {item}"
        );
        let message = item["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(words), "{platform}: {message}");
        assert_eq!(item["post_id"], Value::Null, "{platform}: {item}");
        assert!(
            app.published(&publisher.sim).is_empty(),
            "{platform}: nothing published"
        );
    }
}

#[actix_web::test]
async fn past_the_horizon_the_service_stops_checking_and_says_so() {
    let app = TestApp::spawn_with(|c| {
        c.platforms.processing_timeout_secs = 1;
        c.publishing.unconfirmed_check_interval_ms = 100;
        c.publishing.unconfirmed_check_horizon_secs = 30;
    })
    .await;
    // facebook: the video exists, so it may yet go out: it stays unconfirmed, saying why.
    let page = app.publisher("facebook", "pro").await;
    let (content, _) = processed_post(&app, "facebook");
    let video = publish_stuck(&app, &page, content).await;
    // threads: the container was never published by us and will not be: failed.
    let threads = app.publisher("threads", "pro").await;
    let (content, _) = processed_post(&app, "threads");
    let container = publish_stuck(&app, &threads, content).await;

    let item = wait_history(&app, &page, &video, &["published", "failed", "unconfirmed"]).await;
    assert_eq!(item["status"], "unconfirmed");
    // Poll until the give-up is recorded (its message changes).
    let mut item = item;
    for _ in 0..400 {
        if item["error"]["message"] != PUBLISH_UNCONFIRMED_MESSAGE {
            break;
        }
        app.clock.advance(chrono::Duration::seconds(1));
        tokio::time::sleep(Duration::from_millis(50)).await;
        item = history_item(&app, &page, &video).await;
    }
    assert_eq!(item["status"], "unconfirmed", "{item}");
    let message = item["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("stopped checking"), "{message}");
    assert!(message.contains("check the platform"), "{message}");

    let item = wait_history(&app, &threads, &container, &["published", "failed"]).await;
    assert_eq!(item["error"]["code"], "VideoProcessingFailed", "{item}");
    let message = item["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not published"), "{message}");

    // Finishing now changes nothing: the service no longer checks, and never publishes it.
    set_processing(&app, &threads, Processing::Finish);
    let store = &app.state.store;
    let row = store
        .find_submission(container.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.next_check_at, None, "no more checks");
    assert!(app.published(&threads.sim).is_empty());
}

#[actix_web::test]
async fn a_scheduled_post_still_processing_stays_publishing_then_is_published_once() {
    let app = TestApp::spawn_with(|c| {
        c.platforms.processing_timeout_secs = 1;
        c.publishing.unconfirmed_check_interval_ms = 100;
        c.scheduler.lease_secs = 2;
    })
    .await;
    let publisher = app.publisher("instagram", "pro").await;
    set_processing(&app, &publisher, Processing::Never);
    let (mut content, _) = processed_post(&app, "instagram");
    let offset = chrono::FixedOffset::east_opt(8 * 3600).unwrap();
    content["scheduledAt"] = json!(
        (app.clock_now() + chrono::Duration::seconds(61))
            .with_timezone(&offset)
            .to_rfc3339()
    );
    let (status, body) = app.post(&publisher.key, &publisher.body(content)).await;
    assert_eq!(status, 200, "{body}");
    let scheduled_id = body["scheduledPostId"].as_str().unwrap().to_string();
    app.clock.advance(chrono::Duration::seconds(62));
    app.state.wake_scheduler();

    // Its attempt is recorded `unconfirmed` once our deadline passed.
    let submission_id = {
        let mut found = None;
        for _ in 0..200 {
            let history = app.history(&publisher.dashboard).await;
            if let Some(item) = history["posts"].as_array().unwrap().iter().find(|p| {
                p["scheduled_post_id"] == scheduled_id.as_str() && p["status"] == "unconfirmed"
            }) {
                found = Some(item["post_submission_id"].as_str().unwrap().to_string());
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        found.expect("the attempt became unconfirmed")
    };
    let store = &app.state.store;
    let scheduled_uuid = scheduled_id.parse().unwrap();
    // Its claim's lease passes: settlement neither retries nor fails a post being checked.
    app.clock.advance(chrono::Duration::seconds(10));
    let settled =
        social_service::services::scheduling::settle_expired_claims(&app.state.scheduling)
            .await
            .unwrap();
    assert_eq!(settled, 0, "a post being checked is not settled");
    let post = store
        .find_scheduled_post(scheduled_uuid)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        post.status.as_str(),
        "publishing",
        "it is still being published"
    );
    assert_eq!(post.attempts, 1, "not retried");
    assert!(app.published(&publisher.sim).is_empty());

    set_processing(&app, &publisher, Processing::Finish);
    let item = wait_history(&app, &publisher, &submission_id, &["published", "failed"]).await;
    assert_eq!(item["status"], "published", "{item}");
    // The reconciler ends the scheduled post right after the history row, in a statement of
    // its own: wait for it rather than read in between (it failed once on PostgreSQL so).
    let mut post = None;
    for _ in 0..100 {
        let found = store
            .find_scheduled_post(scheduled_uuid)
            .await
            .unwrap()
            .unwrap();
        if found.status.as_str() != "publishing" {
            post = Some(found);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let post = post.expect("the scheduled post ended with its attempt");
    assert_eq!(post.status.as_str(), "published", "{post:?}");
    assert_eq!(post.post_id.as_deref(), item["post_id"].as_str());
    assert_eq!(post.attempts, 1);
    let items = app.published(&publisher.sim);
    assert_eq!(items.len(), 1, "published exactly once: {items:?}");
    assert_eq!(item["post_id"], items[0].id);
}

#[actix_web::test]
async fn another_instance_carries_on_the_check_after_a_stop() {
    // The first instance looks for due checks only at start (its interval is an hour): after
    // the publish it does nothing more, as if it had stopped.
    let app = TestApp::spawn_with(|c| {
        c.platforms.processing_timeout_secs = 1;
        c.publishing.unconfirmed_check_interval_ms = 3_600_000;
        c.scheduler.lease_secs = 5;
    })
    .await;
    let publisher = app.publisher("instagram", "pro").await;
    let (content, _) = processed_post(&app, "instagram");
    let id = publish_stuck(&app, &publisher, content).await;
    let submission_id = id.parse().unwrap();
    let store = &app.state.store;

    // It died in the middle of a check: its claim holds until its lease passes.
    app.clock.advance(chrono::Duration::hours(2));
    let now = app.clock_now();
    assert!(
        store
            .claim_check(
                submission_id,
                "dead-instance",
                now,
                now + chrono::Duration::seconds(5)
            )
            .await
            .unwrap()
    );
    set_processing(&app, &publisher, Processing::Finish);

    // A new instance on the same database takes the check over once the lease has passed,
    // and makes the final call itself: exactly once.
    let _second = app
        .spawn_second_with(|c| c.publishing.unconfirmed_check_interval_ms = 100)
        .await;
    let item = wait_history(&app, &publisher, &id, &["published", "failed"]).await;
    assert_eq!(item["status"], "published", "{item}");
    let items = app.published(&publisher.sim);
    assert_eq!(items.len(), 1, "published exactly once: {items:?}");
    assert_eq!(item["post_id"], items[0].id);
    let row = store.find_submission(submission_id).await.unwrap().unwrap();
    assert_eq!(row.check_claimed_by, None);
    assert_eq!(row.next_check_at, None);
}

#[actix_web::test]
async fn a_silent_instances_check_is_taken_over_within_the_takeover_time() {
    let app = TestApp::spawn_with(|c| {
        c.platforms.processing_timeout_secs = 1;
        c.publishing.unconfirmed_check_interval_ms = 100;
        c.cluster.takeover_secs = 3;
    })
    .await;
    let publisher = app.publisher("instagram", "pro").await;
    let (content, _) = processed_post(&app, "instagram");
    let id = publish_stuck(&app, &publisher, content).await;
    let submission_id: uuid::Uuid = id.parse().unwrap();
    let store = &app.state.store;

    // Another instance claimed the check for an hour, then went silent.
    crate::cluster::member(&app, "gone-host:9:zz", 60_000).await;
    let now = app.clock_now();
    let lease_until = now + chrono::Duration::hours(1);
    entity::post_submission::Entity::update_many()
        .col_expr(
            entity::post_submission::Column::CheckClaimedBy,
            Expr::value("gone-host:9:zz"),
        )
        .col_expr(
            entity::post_submission::Column::CheckLeaseUntil,
            Expr::value(lease_until),
        )
        .filter(entity::post_submission::Column::Id.eq(submission_id))
        .exec(store.connection())
        .await
        .unwrap();
    set_processing(&app, &publisher, Processing::Finish);

    // Checks are due by the test clock, which moves 100 ms a step: the silence, not the
    // claim's hour, ends the claim.
    let started = std::time::Instant::now();
    let item = loop {
        app.clock.advance(chrono::Duration::milliseconds(100));
        let item = history_item(&app, &publisher, &id).await;
        if item["status"] != "unconfirmed" {
            break item;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "still unconfirmed: {item}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(app.clock_now() < lease_until);
    assert_eq!(item["status"], "published", "{item}");
    let items = app.published(&publisher.sim);
    assert_eq!(items.len(), 1, "published exactly once: {items:?}");
    assert_eq!(item["post_id"], items[0].id);
    assert!(crate::cluster::metric(&app, "cluster_takeovers_total{what=\"check\"}") >= 1);
    crate::helpers::assert_no_violations(&app.sim);
}
