//! The rendered `GET /api/scheduled-posts` answer kept in memory: every write that changes what a
//! listing shows drops it on the instance that wrote (the very next listing is current), other
//! instances hear of it by notification (PostgreSQL) or within `auth.cache_ttl_ms`; a warm listing
//! makes no database statement and is still metered.
//!
//! The tests that check "at once" run with a TTL of an hour, so that an expired entry cannot
//! pass them for another reason.

use std::time::{Duration, Instant};

use chrono::SecondsFormat;
use entity::post_submission::SubmissionStatus;
use reqwest::Response;
use serde_json::{Value, json};
use social_service::{
    store::access::AccessCache,
    store::{AttemptClaim, AttemptEnd, EndedAttempt, NewSubmission, PublishWrite, SubmissionRow},
};
use uuid::Uuid;

use crate::{
    authcache::{on_postgres, wait_for_second, wait_listening},
    helpers::{Publisher, TestApp, status_and_json},
};

/// How long this instance may take to hear its own notification (PostgreSQL): generous, the
/// machine is loaded.
const DEADLINE: Duration = Duration::from_secs(30);

const HOUR_MS: u64 = 3_600_000;

async fn get_list(base: &str, key: &str, query: &str) -> Response {
    reqwest::Client::new()
        .get(format!("{base}/api/scheduled-posts{query}"))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap()
}

async fn list(base: &str, key: &str, query: &str) -> Value {
    let (status, body) = status_and_json(get_list(base, key, query).await).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The listed post `id`'s status (`None`: not listed).
fn status_of(body: &Value, id: &str) -> Option<String> {
    body["posts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|post| post["scheduled_post_id"] == id)
        .map(|post| post["status"].as_str().unwrap().to_string())
}

/// Schedules a text post `secs` from the test clock's now; its id.
async fn schedule(app: &TestApp, publisher: &Publisher, text: &str, secs: i64) -> String {
    let at = (app.clock_now() + chrono::Duration::seconds(secs))
        .to_rfc3339_opts(SecondsFormat::Millis, true);
    let (status, body) = app
        .post(
            &publisher.key,
            &publisher.body(json!({"text": text, "scheduledAt": at})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["scheduledPostId"].as_str().unwrap().to_string()
}

async fn cancel(app: &TestApp, key: &str, id: &str) -> u16 {
    app.http
        .delete(app.url(&format!("/api/scheduled-posts/{id}")))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[actix_web::test]
async fn a_post_scheduled_or_cancelled_is_in_the_very_next_listing() {
    let app = TestApp::spawn_with(|config| config.auth.cache_ttl_ms = HOUR_MS).await;
    let publisher = app.publisher("threads", "pro").await;
    let key = &publisher.key;
    // Warm, unfiltered and filtered: each filter is an entry of its own.
    for _ in 0..2 {
        assert_eq!(list(&app.base, key, "").await["count"], 0);
        assert_eq!(list(&app.base, key, "?status=scheduled").await["count"], 0);
    }
    assert_eq!(app.state.store.access().listings_len(), 2);

    let id = schedule(&app, &publisher, "soon listed", 3600).await;
    let body = list(&app.base, key, "").await;
    assert_eq!(body["count"], 1, "{body}");
    assert_eq!(status_of(&body, &id).as_deref(), Some("scheduled"));
    let body = list(&app.base, key, "?status=scheduled").await;
    assert_eq!(status_of(&body, &id).as_deref(), Some("scheduled"));
    // Warm again, then cancel.
    list(&app.base, key, "").await;
    assert_eq!(cancel(&app, key, &id).await, 200);
    let body = list(&app.base, key, "").await;
    assert_eq!(
        status_of(&body, &id).as_deref(),
        Some("cancelled"),
        "{body}"
    );
    let body = list(&app.base, key, "?status=scheduled").await;
    assert_eq!(body["count"], 0, "{body}");
}

#[actix_web::test]
async fn a_post_the_scheduler_publishes_shows_its_new_status_in_the_very_next_listing() {
    let app = TestApp::spawn_with(|config| config.auth.cache_ttl_ms = HOUR_MS).await;
    let publisher = app.publisher("threads", "pro").await;
    let id = schedule(&app, &publisher, "published by the scheduler", 120).await;
    // Cached while `scheduled`.
    for _ in 0..2 {
        let body = list(&app.base, &publisher.key, "").await;
        assert_eq!(status_of(&body, &id).as_deref(), Some("scheduled"));
    }
    app.clock.advance(chrono::Duration::seconds(121));
    // Wait on the row itself, not on the listing under test.
    let started = Instant::now();
    let row = loop {
        let row = app
            .state
            .store
            .find_scheduled_post(id.parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        if row.status.as_str() == "published" {
            break row;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "never published: {}",
            row.status
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let body = list(&app.base, &publisher.key, "").await;
    let post = &body["posts"][0];
    assert_eq!(post["status"], "published", "{body}");
    assert_eq!(post["post_id"].as_str(), row.post_id.as_deref(), "{body}");
    assert_eq!(post["attempts"], 1, "{body}");
    assert_eq!(
        post["post_submission_id"].as_str(),
        row.submission_id.map(|s| s.to_string()).as_deref(),
        "{body}"
    );
}

/// Waits until the listing version reaches `expected` (on PostgreSQL this instance also hears
/// its own notifications, a bump each), then holds it to exactly that.
async fn version_is(access: &AccessCache, expected: u64, after: &str) {
    let started = Instant::now();
    while access.listing_version() < expected {
        assert!(
            started.elapsed() < DEADLINE,
            "after {after}: version {} never reached {expected}",
            access.listing_version()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(access.listing_version(), expected, "after {after}");
}

/// Each kind of scheduled-post write, one by one, through the store: the ones a listing shows
/// drop the listings (one bump each, batches included: one notification per batch), and
/// lease-only renewals do not.
#[actix_web::test]
async fn every_write_a_listing_shows_drops_the_listings_and_lease_renewals_do_not() {
    // No scheduler: the claims below are made by hand.
    let app = TestApp::spawn_without_background(|config| config.auth.cache_ttl_ms = HOUR_MS).await;
    let publisher = app.publisher("threads", "pro").await;
    let store = &app.state.store;
    let access = store.access();
    let per_write = if on_postgres() {
        let started = Instant::now();
        while access.listens() == 0 {
            assert!(started.elapsed() < DEADLINE, "the listener never connected");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        2
    } else {
        1
    };
    let mut expected = access.listing_version();
    macro_rules! wrote {
        ($what:expr) => {
            expected += per_write;
            version_is(access, expected, $what).await;
        };
    }

    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(schedule(&app, &publisher, &format!("post {i}"), 61 + i).await);
        wrote!("a post scheduled");
    }
    let id = |i: usize| -> Uuid { ids[i].parse().unwrap() };
    list(&app.base, &publisher.key, "").await;
    assert_eq!(access.listings_len(), 1);

    app.clock.advance(chrono::Duration::seconds(70));
    let now = app.clock_now();
    let lease = now + chrono::Duration::seconds(60);
    let claimed = store.claim_due_posts("me", now, lease, 10).await.unwrap();
    assert_eq!(claimed.len(), 3);
    wrote!("a claim");
    assert_eq!(access.listings_len(), 0, "the claim dropped the listing");
    let none = store.claim_due_posts("me", now, lease, 10).await.unwrap();
    assert!(none.is_empty());

    let submission = Uuid::new_v4();
    assert!(
        store
            .set_scheduled_submission(id(0), "me", submission)
            .await
            .unwrap()
    );
    wrote!("a submission linked");

    // Lease-only renewals: no listing shows a lease.
    list(&app.base, &publisher.key, "").await;
    let longer = lease + chrono::Duration::seconds(60);
    assert!(
        store
            .renew_claim(id(0), "me", submission, longer)
            .await
            .unwrap()
    );
    let all: Vec<Uuid> = (0..3).map(id).collect();
    assert_eq!(store.extend_leases("me", all, longer).await.unwrap(), 3);
    assert_eq!(access.listing_version(), expected, "lease renewals left it");
    assert_eq!(access.listings_len(), 1, "lease renewals kept the listing");

    let claim = |i: usize| AttemptClaim {
        scheduled_post_id: id(i),
        claimant: "me".into(),
        attempt: 1,
    };
    assert!(
        store
            .renew_attempt_claim(&claim(1), Uuid::new_v4(), longer)
            .await
            .unwrap()
    );
    wrote!("a continuation's claim renewal");

    // The group commit's fenced write before the final call links the history row.
    let row = SubmissionRow {
        id: Uuid::new_v4(),
        new: NewSubmission {
            user_id: publisher.user_id,
            account_id: publisher.account.id,
            platform: entity::platform::Platform::Threads,
            post_type: None,
            post_id: None,
            status: SubmissionStatus::Publishing,
            page_name: publisher.account.display_name.clone(),
            content: json!({"text": "post 2", "media_urls": []}),
            result: None,
            error_code: None,
            error_message: None,
            published_at: None,
        },
        steps: Default::default(),
        scheduled_post_id: Some(id(2)),
        created_at: now,
        updated_at: now,
        publisher: None,
    };
    let row_id = row.id;
    let write = PublishWrite::BeforeFinal {
        row,
        claim: Some((claim(2), longer)),
    };
    assert!(store.publish_write(write).await.unwrap());
    wrote!("the write before the final call");

    // Two ends in one transaction: one bump, one notification.
    let written = store
        .end_attempts(
            &[
                EndedAttempt {
                    id: id(0),
                    claimant: "me".into(),
                    lease_expired_at: None,
                    end: AttemptEnd::Published {
                        post_id: "p-0".into(),
                    },
                },
                EndedAttempt {
                    id: id(1),
                    claimant: "me".into(),
                    lease_expired_at: None,
                    end: AttemptEnd::Rescheduled {
                        next_attempt_at: now,
                        error: "try again".into(),
                    },
                },
            ],
            now,
        )
        .await
        .unwrap();
    assert_eq!(written, [true, true]);
    wrote!("a batch of ends");

    assert!(
        store
            .finish_scheduled_checked(
                id(2),
                row_id,
                &AttemptEnd::Published {
                    post_id: "p-2".into()
                },
                now
            )
            .await
            .unwrap()
    );
    wrote!("the reconciler's end");

    let again = store.claim_due_posts("me", now, lease, 10).await.unwrap();
    assert_eq!(again.len(), 1);
    wrote!("a claim of the rescheduled post");
    assert_eq!(store.release_claims("me", &[id(1)], now).await.unwrap(), 1);
    wrote!("a drain's give-back");

    // And what the next listing shows is all of it.
    let body = list(&app.base, &publisher.key, "").await;
    assert_eq!(status_of(&body, &ids[0]).as_deref(), Some("published"));
    assert_eq!(status_of(&body, &ids[1]).as_deref(), Some("scheduled"));
    assert_eq!(status_of(&body, &ids[2]).as_deref(), Some("published"));
    assert_eq!(
        body["posts"][1]["last_attempt_error"], "try again",
        "{body}"
    );
    assert_eq!(cancel(&app, &publisher.key, &ids[1]).await, 200);
    wrote!("a cancel");
    let body = list(&app.base, &publisher.key, "").await;
    assert_eq!(status_of(&body, &ids[1]).as_deref(), Some("cancelled"));
    // A cancel that changes nothing drops nothing.
    assert_eq!(cancel(&app, &publisher.key, &ids[1]).await, 409);
    assert_eq!(access.listings_len(), 1);
    assert_eq!(access.listing_version(), expected);
}

#[actix_web::test]
async fn a_warm_listing_makes_no_database_statement_and_is_still_metered() {
    // No background actors and no last-use flush: the only statements are the requests'.
    let app = TestApp::spawn_without_background(|config| {
        config.usage.last_used_flush_ms = HOUR_MS;
    })
    .await;
    let pro = app.publisher("threads", "pro").await;
    for i in 0..50 {
        schedule(&app, &pro, &format!("post {i}"), 3600 + i).await;
    }
    let cold = get_list(&app.base, &pro.key, "").await;
    assert_eq!(cold.status(), 200);
    let cold = cold.bytes().await.unwrap();
    let before = app.state.store.db_counts();
    let warm = get_list(&app.base, &pro.key, "").await;
    let spent = app.state.store.db_counts().since(before);
    assert_eq!(warm.status(), 200);
    assert_eq!(
        warm.headers()["content-type"],
        "application/json",
        "as `HttpResponse::json` answers"
    );
    assert_eq!(warm.bytes().await.unwrap(), cold, "the same bytes");
    assert_eq!(spent.total(), 0, "statements of a warm listing: {spent:?}");

    // Free: every cached answer still counts against the allowance, and the eleventh call is
    // refused even though its answer is in memory.
    let free = app.publisher("threads", "free").await;
    for used in 1..=10 {
        let response = get_list(&app.base, &free.key, "").await;
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["x-ratelimit-remaining"],
            (10 - used).to_string().as_str()
        );
    }
    assert_eq!(get_list(&app.base, &free.key, "").await.status(), 429);
}

#[actix_web::test]
async fn another_instance_lists_a_post_scheduled_on_the_first_within_the_bound() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let second = app.spawn_second().await;
    if on_postgres() {
        wait_listening(&second).await;
    }
    // Warm on the second instance.
    for _ in 0..2 {
        assert_eq!(list(&second.base, &publisher.key, "").await["count"], 0);
    }
    assert_eq!(second.state.store.access().listings_len(), 1);

    let id = schedule(&app, &publisher, "heard of elsewhere", 3600).await;
    // The instance that wrote lists it at once.
    let body = list(&app.base, &publisher.key, "").await;
    assert_eq!(status_of(&body, &id).as_deref(), Some("scheduled"));

    wait_for_second(&app, &second, || async {
        let body = list(&second.base, &publisher.key, "").await;
        status_of(&body, &id).as_deref() == Some("scheduled")
    })
    .await;
}
