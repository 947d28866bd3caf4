//! Scheduled posts: `scheduledAt`, list and cancel, and the scheduler actor.

use std::time::Duration;

use chrono::{FixedOffset, SecondsFormat};
use serde_json::{Value, json};
use service_sim::state::{FaultKind, FaultSpec};

use crate::helpers::{Background, Publisher, TestApp, status_and_json};

/// `scheduledAt` `secs` from the test clock's now, written with a +08:00 offset.
fn at(app: &TestApp, secs: i64) -> String {
    let offset = FixedOffset::east_opt(8 * 3600).unwrap();
    (app.clock_now() + chrono::Duration::seconds(secs))
        .with_timezone(&offset)
        .to_rfc3339_opts(SecondsFormat::Millis, false)
}

async fn schedule(
    app: &TestApp,
    publisher: &Publisher,
    mut content: Value,
    secs: i64,
) -> (u16, Value) {
    content["scheduledAt"] = json!(at(app, secs));
    app.post(&publisher.key, &publisher.body(content)).await
}

pub(crate) async fn schedule_ok(
    app: &TestApp,
    publisher: &Publisher,
    content: Value,
    secs: i64,
) -> String {
    let (status, body) = schedule(app, publisher, content, secs).await;
    assert_eq!(status, 200, "{body}");
    body["scheduledPostId"].as_str().unwrap().to_string()
}

async fn list(app: &TestApp, key: &str, query: &str) -> Value {
    let response = app
        .http
        .get(app.url(&format!("/api/scheduled-posts{query}")))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn cancel(app: &TestApp, key: &str, id: &str) -> (u16, Value) {
    let response = app
        .http
        .delete(app.url(&format!("/api/scheduled-posts/{id}")))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap();
    status_and_json(response).await
}

/// Waits until the post has one of `statuses`; returns it.
async fn wait_for(app: &TestApp, key: &str, id: &str, statuses: &[&str]) -> Value {
    for _ in 0..150 {
        let body = list(app, key, "?limit=100").await;
        if let Some(post) = body["posts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["scheduled_post_id"] == id)
            && statuses.contains(&post["status"].as_str().unwrap())
        {
            return post.clone();
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    panic!(
        "post {id} never reached {statuses:?}: {}",
        list(app, key, "?limit=100").await
    );
}

#[actix_web::test]
async fn scheduling_answers_the_scheduled_form_and_keeps_the_post() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let when = at(&app, 120);
    let (status, body) = schedule(&app, &publisher, json!({"text": "later"}), 120).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["scheduled"], true);
    assert_eq!(body["platform"], "threads");
    let expected = chrono::DateTime::parse_from_rfc3339(&when)
        .unwrap()
        .with_timezone(&chrono::Utc);
    assert_eq!(
        body["scheduledAt"],
        social_service::domain::time::iso(expected)
    );
    assert!(body["message"].as_str().is_some());
    let id = body["scheduledPostId"].as_str().unwrap();

    let listed = list(&app, &publisher.key, "").await;
    assert_eq!(listed["success"], true);
    assert_eq!(listed["count"], 1);
    let post = &listed["posts"][0];
    assert_eq!(post["scheduled_post_id"], id);
    assert_eq!(post["account_id"], json!(publisher.account.id));
    assert_eq!(post["platform"], "threads");
    assert_eq!(post["page_name"], publisher.account.display_name);
    assert_eq!(post["content"], json!({"text": "later", "media_urls": []}));
    assert_eq!(post["scheduled_at"], body["scheduledAt"]);
    assert_eq!(post["status"], "scheduled");
    assert!(post["created_at"].as_str().unwrap().ends_with('Z'));
    // Nothing reached the platform.
    assert_eq!(app.published(&publisher.sim).len(), 0);
}

#[actix_web::test]
async fn scheduled_at_must_be_a_minute_ahead_and_well_formed() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    for secs in [-3600, 0, 59] {
        let (status, body) = schedule(&app, &publisher, json!({"text": "x"}), secs).await;
        assert_eq!(
            (status, body["error"].as_str().unwrap()),
            (400, "InvalidRequest"),
            "{secs}: {body}"
        );
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("at least 1 minute"),
            "{body}"
        );
    }
    for bad in ["tomorrow", "2030-01-01T10:00:00", "2030-02-30T10:00:00Z"] {
        let body = publisher.body(json!({"text": "x", "scheduledAt": bad}));
        let (status, body) = app.post(&publisher.key, &body).await;
        assert_eq!(
            (status, body["error"].as_str().unwrap()),
            (400, "InvalidRequest"),
            "{bad}"
        );
        assert!(body["message"].as_str().unwrap().contains("scheduledAt"));
    }
    // Exactly one minute ahead is accepted (the clock on a whole second, as `at` writes none
    // finer than milliseconds).
    use chrono::Timelike;
    app.clock.set(app.clock_now().with_nanosecond(0).unwrap());
    let (status, body) = schedule(&app, &publisher, json!({"text": "x"}), 60).await;
    assert_eq!(status, 200, "{body}");
}

#[actix_web::test]
async fn a_post_that_could_never_publish_is_refused_when_scheduled() {
    let app = TestApp::spawn().await;
    let instagram = app.publisher("instagram", "pro").await;
    let x_on_pro = app.publisher("x", "pro").await;
    let cases = [
        (
            &instagram,
            json!({"text": "no media"}),
            400,
            "MediaRequired",
        ),
        (
            &instagram,
            json!({"text": "t", "mediaUrls": [app.media_url("missing.jpg")]}),
            400,
            "MediaDownloadFailed",
        ),
        (
            &instagram,
            json!({"text": "t", "mediaUrls": ["http://10.0.0.1/a.jpg"]}),
            400,
            "InvalidMediaUrl",
        ),
        (
            &x_on_pro,
            json!({"text": "t"}),
            403,
            "InsufficientPermissions",
        ),
    ];
    for (publisher, content, status, code) in cases {
        let (got, body) = schedule(&app, publisher, content, 300).await;
        assert_eq!(
            (got, body["error"].as_str().unwrap()),
            (status, code),
            "{body}"
        );
        assert_eq!(list(&app, &publisher.key, "").await["count"], 0);
    }
}

#[actix_web::test]
async fn due_posts_publish_through_the_account_and_land_in_the_history() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let jpg = app.media_url("sample.jpg");
    let id = schedule_ok(
        &app,
        &publisher,
        json!({"text": "scheduled photo", "mediaUrls": [jpg]}),
        120,
    )
    .await;
    // Two looks at the table while it is not due yet: nothing is claimed.
    app.wait_two_passes(Background::Scheduler).await;
    assert_eq!(
        app.published(&publisher.sim).len(),
        0,
        "not before its time"
    );
    assert_eq!(
        list(&app, &publisher.key, "").await["posts"][0]["status"],
        "scheduled"
    );
    app.clock.advance(chrono::Duration::seconds(121));
    let post = wait_for(&app, &publisher.key, &id, &["published", "failed"]).await;
    assert_eq!(post["status"], "published", "{post}");
    let published = app.published(&publisher.sim);
    assert_eq!(published.len(), 1);
    assert!(
        post["post_id"].as_str().is_some_and(|id| !id.is_empty()),
        "{post}"
    );
    let history = app.history(&publisher.dashboard).await;
    assert_eq!(history["posts"][0]["scheduled_post_id"], id);
    assert_eq!(history["posts"][0]["status"], "published");
    assert_eq!(history["posts"][0]["post_id"], post["post_id"]);
}

#[actix_web::test]
async fn list_filters_by_status_and_platform_in_scheduled_order_with_a_limit() {
    let app = TestApp::spawn().await;
    let threads = app.publisher("threads", "ultra").await;
    let x = app.connect(threads.user_id, "x", "x account").await;
    let mut ids = Vec::new();
    for (i, secs) in [600, 300, 900].iter().enumerate() {
        ids.push(schedule_ok(&app, &threads, json!({"text": format!("t{i}")}), *secs).await);
    }
    let mut x_body = threads.body(json!({"text": "on x", "scheduledAt": at(&app, 450)}));
    x_body["post"]["accountId"] = json!(x.account.id);
    x_body["post"]["content"]["platform"] = json!("x");
    x_body["post"]["target"]["targetType"] = json!("x");
    let (status, body) = app.post(&threads.key, &x_body).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = cancel(&app, &threads.key, &ids[2]).await;
    assert_eq!(status, 200);

    let all = list(&app, &threads.key, "").await;
    let order: Vec<&str> = all["posts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["t1", "on x", "t0", "t2"], "by scheduled_at");
    assert_eq!(list(&app, &threads.key, "?platform=x").await["count"], 1);
    assert_eq!(
        list(&app, &threads.key, "?status=cancelled").await["posts"][0]["scheduled_post_id"],
        ids[2]
    );
    assert_eq!(
        list(&app, &threads.key, "?status=scheduled&platform=threads").await["count"],
        2
    );
    let limited = list(&app, &threads.key, "?limit=2").await;
    assert_eq!(limited["count"], 2);
    assert_eq!(limited["posts"][0]["content"]["text"], "t1");

    // Bad filters are refused; another user sees nothing.
    for (query, code) in [
        ("?status=done", "InvalidRequest"),
        ("?platform=myspace", "InvalidPlatform"),
        ("?limit=0", "InvalidRequest"),
    ] {
        let response = app
            .http
            .get(app.url(&format!("/api/scheduled-posts{query}")))
            .header("service-api-key", &threads.key)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!((status, body["error"].as_str().unwrap()), (400, code));
    }
    let stranger = app.publisher("threads", "pro").await;
    assert_eq!(list(&app, &stranger.key, "").await["count"], 0);
}

#[actix_web::test]
async fn only_scheduled_posts_can_be_cancelled() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let id = schedule_ok(&app, &publisher, json!({"text": "cancel me"}), 120).await;
    let (status, body) = cancel(&app, &publisher.key, &id).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"success": true, "message": "Scheduled post cancelled", "scheduledPostId": id})
    );
    let (status, body) = cancel(&app, &publisher.key, &id).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (409, "ScheduledPostNotCancellable")
    );
    assert!(body["message"].as_str().unwrap().contains("cancelled"));

    // A cancelled post is never published: two looks at the table well after its time, and
    // whatever they claimed has finished.
    app.clock.advance(chrono::Duration::seconds(180));
    app.wait_two_passes(Background::Scheduler).await;
    assert_eq!(app.published(&publisher.sim).len(), 0);
    assert_eq!(
        list(&app, &publisher.key, "").await["posts"][0]["status"],
        "cancelled"
    );
    let scheduler = app.background_status(Background::Scheduler).await;
    assert_eq!(
        (&scheduler["published"], &scheduler["failed"]),
        (&json!(0), &json!(0)),
        "{scheduler}"
    );

    // Published posts cannot be cancelled either.
    let done = schedule_ok(&app, &publisher, json!({"text": "goes out"}), 61).await;
    app.clock.advance(chrono::Duration::seconds(62));
    wait_for(&app, &publisher.key, &done, &["published"]).await;
    let (status, body) = cancel(&app, &publisher.key, &done).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (409, "ScheduledPostNotCancellable")
    );

    // Unknown, malformed and another user's ids are all 404.
    let stranger = app.publisher("threads", "pro").await;
    for (key, id) in [
        (&publisher.key, uuid::Uuid::new_v4().to_string()),
        (&publisher.key, "not-an-id".to_string()),
        (&stranger.key, done.clone()),
    ] {
        let (status, body) = cancel(&app, key, &id).await;
        assert_eq!(
            (status, body["error"].as_str().unwrap()),
            (404, "ScheduledPostNotFound"),
            "{id}"
        );
    }
}

#[actix_web::test]
async fn a_transient_failure_is_retried_and_then_publishes_once() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    app.sim.state().set_faults(
        "threads",
        &publisher.sim.external_id,
        FaultSpec {
            error: Some(FaultKind::ServerError),
            times: Some(1),
            ..FaultSpec::default()
        },
    );
    // An image post: its container is created before the final call, so a 5xx there means
    // nothing went out and the attempt is safe to retry.
    let id = schedule_ok(
        &app,
        &publisher,
        json!({"text": "retry me", "mediaUrls": [app.media_url("sample.jpg")]}),
        61,
    )
    .await;
    app.clock.advance(chrono::Duration::seconds(62));
    // The first attempt fails with a 5xx and goes back to `scheduled` with its reason.
    let mut waiting = Value::Null;
    for _ in 0..100 {
        let post = list(&app, &publisher.key, "").await["posts"][0].clone();
        if post["attempts"] == 1 && post["status"] == "scheduled" {
            waiting = post;
            break;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    assert!(
        waiting["last_attempt_error"]
            .as_str()
            .unwrap()
            .contains("PublishingFailed"),
        "{waiting}"
    );
    assert!(waiting["next_attempt_at"].is_string());
    // Its retry comes due after the backoff (1 s in tests).
    app.clock.advance(chrono::Duration::seconds(2));
    let post = wait_for(&app, &publisher.key, &id, &["published", "failed"]).await;
    assert_eq!(post["status"], "published", "{post}");
    assert_eq!(post["attempts"], 2);
    assert_eq!(app.published(&publisher.sim).len(), 1);
}

#[actix_web::test]
async fn permanent_failures_fail_at_once_with_the_reason() {
    let app = TestApp::spawn().await;
    let revoked = app.publisher("threads", "pro").await;
    app.sim.state().set_faults(
        "threads",
        &revoked.sim.external_id,
        FaultSpec {
            error: Some(FaultKind::TokenRevoked),
            ..FaultSpec::default()
        },
    );
    let a = schedule_ok(&app, &revoked, json!({"text": "token dies"}), 61).await;
    let disconnected = app.publisher("threads", "pro").await;
    let b = schedule_ok(&app, &disconnected, json!({"text": "account goes"}), 61).await;
    let response = disconnected
        .dashboard
        .client
        .delete(app.url(&format!("/api/accounts/{}", disconnected.account.id)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    app.clock.advance(chrono::Duration::seconds(62));

    let post = wait_for(&app, &revoked.key, &a, &["published", "failed"]).await;
    assert_eq!(post["status"], "failed");
    assert_eq!(post["error_code"], "InvalidToken");
    assert_eq!(post["attempts"], 1);
    let post = wait_for(&app, &disconnected.key, &b, &["published", "failed"]).await;
    assert_eq!(post["status"], "failed");
    assert_eq!(post["error_code"], "AccountDisabled");
    assert!(post["error"].as_str().unwrap().contains("disconnected"));
    assert_eq!(
        app.sim
            .state()
            .request_count("threads", &disconnected.sim.external_id),
        0,
        "no platform call for a disconnected account"
    );
}

#[actix_web::test]
async fn two_instances_on_one_database_publish_each_post_exactly_once() {
    let app = TestApp::spawn().await;
    let second = app.spawn_second().await;
    let mut publishers = Vec::new();
    for _ in 0..4 {
        publishers.push(app.publisher("threads", "pro").await);
    }
    let mut ids = Vec::new();
    for i in 0..40 {
        let publisher = &publishers[i % 4];
        ids.push((
            i % 4,
            schedule_ok(&app, publisher, json!({"text": format!("post {i}")}), 61).await,
        ));
    }
    app.clock.advance(chrono::Duration::seconds(62));
    second.state.wake_scheduler();
    app.state.wake_scheduler();
    // Waits on the rows, not on the first instance's listing: what the second instance wrote
    // reaches that listing by notification on PostgreSQL, but on SQLite (no notifications
    // between instances) only after `auth.cache_ttl_ms`, and this test's clock stands still.
    let all: Vec<String> = ids.iter().map(|(_, id)| id.clone()).collect();
    let ended =
        |row: &entity::scheduled_post::Model| matches!(row.status.as_str(), "published" | "failed");
    // Two instances on one SQLite file under a loaded machine may meet a transient refusal;
    // such a post is retried with backoff, on this test's clock: move it on to the retry.
    let retried = |row: &entity::scheduled_post::Model| {
        row.status.as_str() == "scheduled" && row.attempts > 0
    };
    let rows = loop {
        let rows = wait_rows(&app, &all, "published, failed or retried", |row| {
            ended(row) || retried(row)
        })
        .await;
        let Some(next) = rows
            .iter()
            .filter(|r| retried(r))
            .map(|r| r.next_attempt_at)
            .max()
        else {
            break rows;
        };
        for row in rows.iter().filter(|r| retried(r)) {
            println!("retried: {} after {:?}", row.id, row.error);
            assert!(row.attempts < 3, "retried again and again: {row:?}");
        }
        app.clock
            .advance(next - app.clock_now() + chrono::Duration::seconds(1));
        second.state.wake_scheduler();
        app.state.wake_scheduler();
    };
    for row in rows {
        assert_eq!(row.status.as_str(), "published", "{row:?}");
    }
    let mut texts: Vec<String> = publishers
        .iter()
        .flat_map(|p| app.published(&p.sim))
        .map(|item| item.text.unwrap_or_default())
        .collect();
    texts.sort();
    let mut expected: Vec<String> = (0..40).map(|i| format!("post {i}")).collect();
    expected.sort();
    assert_eq!(texts, expected, "each post published exactly once");
}

#[actix_web::test]
async fn graceful_shutdown_finishes_in_flight_publishes_and_leaves_the_rest_scheduled() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    app.sim.state().set_faults(
        "threads",
        &publisher.sim.external_id,
        FaultSpec {
            latency_ms: 300,
            ..FaultSpec::default()
        },
    );
    let due = schedule_ok(
        &app,
        &publisher,
        json!({"text": "in flight at shutdown"}),
        61,
    )
    .await;
    let later = schedule_ok(&app, &publisher, json!({"text": "not yet due"}), 3600).await;
    app.clock.advance(chrono::Duration::seconds(62));
    // Wait until it is being published, then drain.
    wait_for(&app, &publisher.key, &due, &["publishing"]).await;
    social_service::Application::drain(&app.state).await;
    let post = wait_for(
        &app,
        &publisher.key,
        &due,
        &["published", "failed", "publishing"],
    )
    .await;
    assert_eq!(
        post["status"], "published",
        "drain waited for the in-flight publish"
    );
    // After draining nothing new is claimed, even once due and woken: a drained scheduler
    // does not look at the table at all. (The wake is ahead of the status question in the
    // actor's mailbox, so a look it started would show as `looking` or a further pass.)
    let drained = app.background_status(Background::Scheduler).await;
    assert_eq!(drained["draining"], true, "{drained}");
    app.clock.advance(chrono::Duration::seconds(3600));
    app.state.wake_scheduler();
    let after = app.background_status(Background::Scheduler).await;
    assert_eq!(
        (&after["passes"], &after["looking"], &after["in_flight"]),
        (&drained["passes"], &json!(false), &json!(0)),
        "no look after draining: {after}"
    );
    let post = wait_for(
        &app,
        &publisher.key,
        &later,
        &["scheduled", "published", "publishing"],
    )
    .await;
    assert_eq!(post["status"], "scheduled");
    assert_eq!(app.published(&publisher.sim).len(), 1);
}

#[actix_web::test]
async fn the_final_call_is_fenced_by_the_claim() {
    use social_service::publish::steps::{ClaimFence, StepRecorder};
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    app.state
        .background
        .scheduler()
        .unwrap()
        .send(social_service::background::scheduler::Drain)
        .await
        .unwrap();
    let id = schedule_ok(&app, &publisher, json!({"text": "fenced"}), 61).await;
    app.clock.advance(chrono::Duration::seconds(62));
    let now = app.clock_now();
    let claimed = app
        .state
        .store
        .claim_due_posts(
            "other-instance",
            now,
            now + chrono::Duration::seconds(60),
            10,
        )
        .await
        .unwrap();
    assert_eq!(claimed[0].id.to_string(), id);
    let post = &claimed[0];
    let fence = |claimant: &str, attempt: i32| ClaimFence {
        scheduled_post_id: post.id,
        claimant: claimant.into(),
        attempt,
        lease: chrono::Duration::seconds(60),
        clock: app.state.clock.clone(),
    };
    let recorder = |claimant: &str, attempt: i32| {
        let row = social_service::store::SubmissionRow {
            id: uuid::Uuid::new_v4(),
            new: social_service::store::NewSubmission {
                user_id: post.user_id,
                account_id: post.account_id,
                platform: social_service::domain::plan::Platform::Threads,
                post_type: Some(entity::post_submission::PostType::Text),
                post_id: None,
                status: entity::post_submission::SubmissionStatus::Publishing,
                page_name: post.page_name.clone(),
                content: post.content.clone(),
                result: None,
                error_code: None,
                error_message: None,
                published_at: None,
            },
            steps: Default::default(),
            scheduled_post_id: Some(post.id),
            created_at: now,
            updated_at: now,
            publisher: None,
        };
        let id = row.id;
        let recorder = StepRecorder::for_new_submission(app.state.store.clone(), row)
            .with_fence(Some(fence(claimant, attempt)));
        (id, recorder)
    };
    let store = &app.state.store;
    // An instance that lost the claim (it was presumed dead and the post settled) may not make
    // the irreversible call; nor may a stale job of an earlier attempt of the claimant itself.
    // Either writes nothing: no history row, no link.
    for (claimant, attempt) in [
        ("presumed-dead", post.attempts),
        ("other-instance", post.attempts - 1),
    ] {
        let (id, refused) = recorder(claimant, attempt);
        assert!(
            refused.before_final().await.is_err(),
            "{claimant} {attempt}"
        );
        assert!(!refused.final_started());
        assert!(store.find_submission(id).await.unwrap().is_none());
    }
    let unlinked = store.find_scheduled_post(post.id).await.unwrap().unwrap();
    assert_eq!(unlinked.submission_id, None);
    // The holder of the attempt's claim writes the row (final call started) and links it, in
    // its one write before the call.
    let (id, holder) = recorder("other-instance", post.attempts);
    assert!(holder.before_final().await.is_ok());
    let row = store.find_submission(id).await.unwrap().unwrap();
    assert_eq!(row.status.as_str(), "publishing");
    assert!(row.steps.unwrap().final_started);
    assert_eq!(row.scheduled_post_id, Some(post.id));
    let linked = store.find_scheduled_post(post.id).await.unwrap().unwrap();
    assert_eq!(linked.submission_id, Some(id));
}

#[actix_web::test]
async fn a_due_post_publishes_on_the_timer_set_for_it() {
    // Real time, and the longest sleep an hour: only the timer set for the earliest due post
    // can publish it while the test waits. (How late it starts is the benchmark's business;
    // here it is only checked not to be early.)
    let app = TestApp::spawn_on_system_clock(|c| c.scheduler.max_sleep_ms = 3_600_000).await;
    let publisher = app.publisher("threads", "pro").await;
    let due = chrono::Utc::now() + chrono::Duration::seconds(3);
    // Inserted directly (the API requires a minute's lead) and announced as the API does.
    let row = app
        .state
        .store
        .insert_scheduled_post(
            social_service::store::NewScheduledPost {
                user_id: publisher.user_id,
                account_id: publisher.account.id,
                platform: social_service::domain::plan::Platform::Threads,
                page_name: publisher.account.display_name.clone(),
                request: publisher.body(json!({"text": "on time"})),
                content: json!({"text": "on time", "media_urls": []}),
                scheduled_at: due,
            },
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    app.state.wake_scheduler();
    // Polled for a minute (the post is due in 3 s; the next longest sleep ends in an hour).
    let started = std::time::Instant::now();
    let post = loop {
        let body = list(&app, &publisher.key, "").await;
        let post = body["posts"][0].clone();
        if post["status"] == "published" || post["status"] == "failed" {
            break post;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not published: {body}"
        );
        tokio::time::sleep(Duration::from_millis(40)).await;
    };
    assert_eq!(post["status"], "published", "{post}");
    let row = app
        .state
        .store
        .find_scheduled_post(row.id)
        .await
        .unwrap()
        .unwrap();
    let claimed_late = row.claimed_at.unwrap() - due;
    assert!(
        claimed_late >= chrono::Duration::zero(),
        "not before its time: {claimed_late}"
    );
    assert!(row.published_at.unwrap() >= row.claimed_at.unwrap());
}

#[actix_web::test]
async fn a_thread_cut_off_after_its_first_post_is_not_sent_again() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("x", "ultra").await;
    // The first tweet goes out; the platform rate-limits the second.
    app.sim.state().set_faults(
        "x",
        &publisher.sim.external_id,
        FaultSpec {
            error: Some(FaultKind::RateLimit),
            path_contains: Some("/2/tweets".into()),
            skip: 1,
            ..FaultSpec::default()
        },
    );
    let id = schedule_ok(
        &app,
        &publisher,
        json!({"text": ["one", "two", "three"]}),
        61,
    )
    .await;
    app.clock.advance(chrono::Duration::seconds(62));
    let post = wait_for(&app, &publisher.key, &id, &["published", "failed"]).await;
    assert_eq!(
        post["status"], "failed",
        "not retried from the start: {post}"
    );
    assert_eq!(post["attempts"], 1);
    app.sim.state().clear_faults(None);
    // Two looks at the table an hour on: a failed post is not claimed again.
    app.clock.advance(chrono::Duration::seconds(3600));
    app.wait_two_passes(Background::Scheduler).await;
    let texts: Vec<String> = app
        .published(&publisher.sim)
        .into_iter()
        .map(|p| p.text.unwrap_or_default())
        .collect();
    assert_eq!(texts, vec!["one"], "the first tweet exactly once");
    let post = list(&app, &publisher.key, "").await["posts"][0].clone();
    assert_eq!(
        (&post["status"], &post["attempts"]),
        (&json!("failed"), &json!(1)),
        "{post}"
    );
}

#[actix_web::test]
async fn a_stored_status_that_is_no_status_is_an_error_never_a_guess() {
    use sea_orm::ConnectionTrait;
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    schedule_ok(&app, &publisher, json!({"text": "later"}), 3600).await;
    // The one row, damaged outside the service (a bad manual edit, a newer version's status).
    let changed = app
        .state
        .store
        .connection()
        .execute_unprepared("UPDATE scheduled_posts SET status = 'paused'")
        .await
        .unwrap();
    assert_eq!(changed.rows_affected(), 1);
    let (status, body) = status_and_json(
        app.http
            .get(app.url("/api/scheduled-posts"))
            .header("service-api-key", &publisher.key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    // Not listed as `scheduled` (or anything else): the catalogue's internal error, no details.
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error"], "InternalServerError", "{body}");
    assert!(!body.to_string().contains("paused"), "{body}");
}

/// Waits until every one of `ids` (scheduled post ids) satisfies `check`, reading the rows;
/// fails after a generous bound (the scheduler is stuck). Answers the rows.
async fn wait_rows(
    app: &TestApp,
    ids: &[String],
    what: &str,
    check: impl Fn(&entity::scheduled_post::Model) -> bool,
) -> Vec<entity::scheduled_post::Model> {
    let started = std::time::Instant::now();
    loop {
        let mut rows = Vec::with_capacity(ids.len());
        for id in ids {
            let row = app
                .state
                .store
                .find_scheduled_post(id.parse().unwrap())
                .await
                .unwrap()
                .unwrap();
            rows.push(row);
        }
        if rows.iter().all(&check) {
            return rows;
        }
        let stuck: Vec<String> = rows
            .iter()
            .filter(|row| !check(row))
            .map(|row| format!("{} {} {:?}", row.status.as_str(), row.attempts, row.error))
            .collect();
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "posts never became {what}: {stuck:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[actix_web::test]
async fn many_due_posts_are_all_claimed_without_waiting_for_publishes_and_a_drain_gives_back_the_queued()
 {
    // Two publishing at once, claims of seven: thirty due posts take several claims, and the
    // old scheduler (claim only what can publish now) would hold all but two `scheduled`
    // until publishes end. The platform holds every call for a minute: nothing ends here.
    let app = TestApp::spawn_with(|c| {
        c.scheduler.max_in_flight = 2;
        c.scheduler.claim_batch = 7;
    })
    .await;
    let mut publishers = Vec::new();
    for _ in 0..3 {
        let publisher = app.publisher("threads", "pro").await;
        app.sim.state().set_faults(
            "threads",
            &publisher.sim.external_id,
            FaultSpec {
                latency_ms: 60_000,
                ..FaultSpec::default()
            },
        );
        publishers.push(publisher);
    }
    let mut ids = Vec::new();
    for i in 0..30 {
        let publisher = &publishers[i % 3];
        ids.push(
            schedule_ok(
                &app,
                publisher,
                json!({"text": format!("post {i}")}),
                61 + i as i64,
            )
            .await,
        );
    }
    app.clock.advance(chrono::Duration::seconds(100));
    app.state.wake_scheduler();
    let rows = wait_rows(&app, &ids, "claimed", |row| {
        row.status == entity::scheduled_post::ScheduledStatus::Publishing
    })
    .await;
    let instance = app.state.scheduling.instance().to_string();
    for row in &rows {
        assert_eq!(row.claimed_by.as_deref(), Some(instance.as_str()));
        assert!(row.claimed_at.is_some() && row.lease_until.is_some());
        assert_eq!(row.attempts, 1);
    }
    for publisher in &publishers {
        assert!(
            app.published(&publisher.sim).is_empty(),
            "claimed while nothing has published"
        );
    }
    let status = app.background_status(Background::Scheduler).await;
    assert_eq!(
        status["in_flight"], 30,
        "every claimed post is held: {status}"
    );

    // A drain gives the queued posts back (their attempt not counted) and keeps the two
    // publishing: one per account at most, two accounts at most.
    let held = app
        .state
        .background
        .scheduler()
        .unwrap()
        .send(social_service::background::scheduler::Drain)
        .await
        .unwrap();
    assert!(held >= 2, "the publishing ones are still held: {held}");
    let started = std::time::Instant::now();
    let rows = loop {
        let status = app.background_status(Background::Scheduler).await;
        if status["in_flight"] == 2 {
            break wait_rows(&app, &ids, "given back or publishing", |_| true).await;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the queued posts were never given back: {status}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let publishing: Vec<_> = rows
        .iter()
        .filter(|row| row.status == entity::scheduled_post::ScheduledStatus::Publishing)
        .collect();
    assert_eq!(publishing.len(), 2, "only the two started are kept");
    assert_ne!(publishing[0].account_id, publishing[1].account_id);
    for row in rows
        .iter()
        .filter(|row| row.status == entity::scheduled_post::ScheduledStatus::Scheduled)
    {
        assert_eq!((row.attempts, row.claimed_by.as_deref()), (0, None));
    }
}

#[actix_web::test]
async fn each_accounts_posts_publish_in_scheduled_order_from_a_big_batch() {
    // Fewer publishing at once than accounts, claims smaller than the posts: an account's posts
    // come over several claims and wait their turn behind other accounts.
    let app = TestApp::spawn_with(|c| {
        c.scheduler.max_in_flight = 2;
        c.scheduler.claim_batch = 5;
    })
    .await;
    let mut publishers = Vec::new();
    for _ in 0..3 {
        publishers.push(app.publisher("threads", "pro").await);
    }
    // Scheduled in reverse order of their times, the accounts interleaved.
    let mut ids = Vec::new();
    for i in (0..8).rev() {
        for (p, publisher) in publishers.iter().enumerate() {
            let text = format!("account {p} post {i}");
            ids.push(schedule_ok(&app, publisher, json!({ "text": text }), 61 + i).await);
        }
    }
    app.clock.advance(chrono::Duration::seconds(70));
    app.state.wake_scheduler();
    let rows = wait_rows(&app, &ids, "ended", |row| {
        !matches!(
            row.status,
            entity::scheduled_post::ScheduledStatus::Scheduled
                | entity::scheduled_post::ScheduledStatus::Publishing
        )
    })
    .await;
    for row in &rows {
        assert_eq!(
            row.status,
            entity::scheduled_post::ScheduledStatus::Published,
            "{row:?}"
        );
    }
    for (p, publisher) in publishers.iter().enumerate() {
        let texts: Vec<String> = app
            .published(&publisher.sim)
            .into_iter()
            .map(|item| item.text.unwrap_or_default())
            .collect();
        let expected: Vec<String> = (0..8).map(|i| format!("account {p} post {i}")).collect();
        assert_eq!(
            texts, expected,
            "account {p}: in scheduled order, once each"
        );
    }
}

#[actix_web::test]
async fn ends_written_together_skip_a_post_whose_claim_was_lost() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let store = &app.state.store;
    // This instance's scheduler stays out: the claims below are made by hand.
    app.state
        .background
        .scheduler()
        .unwrap()
        .send(social_service::background::scheduler::Drain)
        .await
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            schedule_ok(
                &app,
                &publisher,
                json!({"text": format!("post {i}")}),
                61 + i,
            )
            .await,
        );
    }
    app.clock.advance(chrono::Duration::seconds(70));
    let now = app.clock_now();
    let lease = now + chrono::Duration::seconds(60);
    let claimed = store.claim_due_posts("me", now, lease, 10).await.unwrap();
    assert_eq!(claimed.len(), 3);
    let id = |i: usize| -> uuid::Uuid { ids[i].parse().unwrap() };
    // The second one's claim is lost: settled meanwhile, and claimed again by another instance.
    assert!(
        store
            .reschedule_post(id(1), "me", now, "taken over", now, None)
            .await
            .unwrap()
    );
    let retaken = store
        .claim_due_posts("other", now, lease, 10)
        .await
        .unwrap();
    assert_eq!(retaken.len(), 1);
    let later = now + chrono::Duration::seconds(600);
    let ended =
        |i: usize, end: social_service::store::AttemptEnd| social_service::store::EndedAttempt {
            id: id(i),
            claimant: "me".into(),
            lease_expired_at: None,
            end,
        };
    use social_service::store::AttemptEnd;
    let written = store
        .end_attempts(
            &[
                ended(
                    0,
                    AttemptEnd::Published {
                        post_id: "p-0".into(),
                    },
                ),
                ended(
                    1,
                    AttemptEnd::Failed {
                        code: "PublishingFailed".into(),
                        error: "too late".into(),
                    },
                ),
                ended(
                    2,
                    AttemptEnd::Rescheduled {
                        next_attempt_at: later,
                        error: "try later".into(),
                    },
                ),
            ],
            now,
        )
        .await
        .unwrap();
    assert_eq!(written, [true, false, true]);
    let row = |i: usize| async move { store.find_scheduled_post(id(i)).await.unwrap().unwrap() };
    use entity::scheduled_post::ScheduledStatus;
    let first = row(0).await;
    assert_eq!(first.status, ScheduledStatus::Published);
    assert_eq!(first.post_id.as_deref(), Some("p-0"));
    assert!(first.published_at.is_some() && first.lease_until.is_none());
    let lost = row(1).await;
    assert_eq!(
        lost.status,
        ScheduledStatus::Publishing,
        "still the other's"
    );
    assert_eq!(lost.claimed_by.as_deref(), Some("other"));
    assert_eq!(lost.error_code, None);
    let third = row(2).await;
    assert_eq!(third.status, ScheduledStatus::Scheduled);
    assert_eq!(third.claimed_by, None);
    assert_eq!(third.next_attempt_at, later);
    assert_eq!(third.error.as_deref(), Some("try later"));
}

/// A claim takes at most its limit, also of posts due at the same instant, and the database
/// holds exactly the posts it answers as claimed.
#[actix_web::test]
async fn a_claim_takes_no_more_than_its_limit_of_posts_due_together() {
    use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
    let app = TestApp::spawn_with(|_| {}).await;
    let publisher = app.publisher("threads", "pro").await;
    for i in 0..8 {
        schedule_ok(&app, &publisher, json!({"text": format!("tied {i}")}), 120).await;
    }
    // Past their time for this claim only; the service's own clock has not moved.
    let later = app.clock_now() + chrono::Duration::seconds(300);
    let claimed = app
        .state
        .store
        .claim_due_posts("probe", later, later + chrono::Duration::seconds(60), 3)
        .await
        .unwrap();
    let ids: Vec<_> = claimed.iter().map(|p| p.id).collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    let held = entity::scheduled_post::Entity::find()
        .filter(entity::scheduled_post::Column::ClaimedBy.eq("probe"))
        .count(app.state.store.connection())
        .await
        .unwrap();
    assert_eq!(held, 3);
}
