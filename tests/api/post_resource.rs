//! The post resource: `GET /v2/posts/{post_submission_id}` reads back how a publish ended
//! (`processing`, `published`, `failed`, `unconfirmed`), `GET /v2/posts` lists the caller's
//! publishes newest first; neither counts against the plan's allowance. The answers of
//! `POST /v2/posts` that leave the outcome open name the resource (`post_url`).

use chrono::{Duration, SecondsFormat};
use serde_json::{Value, json};
use service_sim::state::{FaultKind, FaultSpec, Processing};
use social_service::error::PUBLISH_UNCONFIRMED_MESSAGE;

use crate::helpers::{
    Publisher, TestApp, error_body, eventually, fault, set_fault, status_and_json,
};
use crate::openapi::assert_documented;

const ONE: &str = "/v2/posts/{post_submission_id}";

/// `GET /v2/posts/{id}` with `key`; a 200 or 404 body is checked against the document.
async fn get_post(app: &TestApp, key: &str, id: &str) -> (u16, Value) {
    let response = app
        .http
        .get(app.url(&format!("/v2/posts/{id}")))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_documented("get", ONE, status, &body);
    (status, body)
}

/// The post, which must be found.
async fn post_of(app: &TestApp, key: &str, id: &str) -> Value {
    let (status, body) = get_post(app, key, id).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true, "{body}");
    body["post"].clone()
}

/// `GET /v2/posts{query}` with `key`, checked against the document.
async fn list_posts(app: &TestApp, key: &str, query: &str) -> (u16, Value) {
    let response = app
        .http
        .get(app.url(&format!("/v2/posts{query}")))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_documented("get", "/v2/posts", status, &body);
    (status, body)
}

/// The ids a list answered with, in its order.
fn ids(list: &Value) -> Vec<String> {
    list["posts"]
        .as_array()
        .unwrap_or_else(|| panic!("no posts: {list}"))
        .iter()
        .map(|post| post["post_submission_id"].as_str().unwrap().to_string())
        .collect()
}

/// Publishes `content` for `publisher`; the answer's status and body.
async fn publish(app: &TestApp, publisher: &Publisher, content: Value) -> (u16, Value) {
    app.post(&publisher.key, &publisher.body(content)).await
}

/// Publishes `content`, which must publish; returns the `post_submission_id`.
async fn published_id(app: &TestApp, publisher: &Publisher, content: Value) -> String {
    let (status, body) = publish(app, publisher, content).await;
    assert_eq!(status, 200, "{body}");
    body["data"]["post_submission_id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[actix_web::test]
async fn a_published_thread_reads_back_with_every_field() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let (status, answer) = publish(&app, &publisher, json!({"text": ["first", "second"]})).await;
    assert_eq!(status, 200, "{answer}");
    let data = &answer["data"];
    let id = data["post_submission_id"].as_str().unwrap();

    let post = post_of(&app, &publisher.key, id).await;
    let out: Vec<String> = app
        .published(&publisher.sim)
        .into_iter()
        .map(|item| item.id)
        .collect();
    assert_eq!(out.len(), 2, "{out:?}");
    let created_at = post["created_at"].as_str().unwrap().to_string();
    let updated_at = post["updated_at"].as_str().unwrap().to_string();
    assert_eq!(
        post,
        json!({
            "post_submission_id": id,
            "status": "published",
            "platform": "threads",
            "account_id": publisher.account.id,
            "page_name": "threads demo",
            "post_type": "thread",
            "post_id": out[0],
            "post_ids": out,
            "published_at": data["published_at"],
            "scheduled_post_id": null,
            "error": null,
            "created_at": created_at,
            "updated_at": updated_at,
        })
    );
    // The publish answer and the resource agree.
    assert_eq!(data["post_ids"], post["post_ids"]);
    assert!(created_at <= updated_at, "{post}");
}

#[actix_web::test]
async fn a_failed_publish_names_its_resource_which_says_why() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    set_fault(&app.sim, &publisher.sim, fault(FaultKind::Permission));
    let (status, answer) = publish(&app, &publisher, json!({"text": "not allowed"})).await;
    assert_eq!(status, 403, "{answer}");
    assert_eq!(answer["error"], "InsufficientPermissions", "{answer}");
    let id = answer["post_submission_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a failure with a history row names it: {answer}"));
    assert_eq!(answer["post_url"], format!("/v2/posts/{id}"), "{answer}");

    let post = post_of(&app, &publisher.key, id).await;
    assert_eq!(post["status"], "failed", "{post}");
    assert_eq!(post["post_id"], Value::Null, "{post}");
    assert_eq!(post["post_ids"], json!([]), "{post}");
    assert_eq!(post["published_at"], Value::Null, "{post}");
    let error = &post["error"];
    assert_eq!(error["code"], "InsufficientPermissions", "{post}");
    assert_eq!(error["message"], answer["message"], "{post}");
    assert_eq!(error["details"], answer["details"], "{post}");
    assert!(
        error["details"].as_str().is_some_and(|d| !d.is_empty()),
        "{post}"
    );
    assert!(app.published(&publisher.sim).is_empty());
}

/// A publish the platform is still processing at our deadline: 202 naming the resource, which
/// says `unconfirmed` until the service's check finds it published.
#[actix_web::test]
async fn an_unconfirmed_publish_reads_as_unconfirmed_until_it_is_checked() {
    let app = TestApp::spawn_with(|c| {
        c.platforms.processing_timeout_secs = 1;
        c.publishing.unconfirmed_check_interval_ms = 100;
    })
    .await;
    let publisher = app.publisher("threads", "pro").await;
    let stuck = FaultSpec {
        processing: Processing::Never,
        ..FaultSpec::default()
    };
    set_fault(&app.sim, &publisher.sim, stuck);
    let video = json!({"text": "A video", "mediaUrls": [app.media_url("sample.mp4")]});
    let (status, answer) = publish(&app, &publisher, video).await;
    assert_eq!(status, 202, "{answer}");
    let id = answer["post_submission_id"].as_str().unwrap().to_string();
    let mut expected = error_body("PublishUnconfirmed", PUBLISH_UNCONFIRMED_MESSAGE);
    expected["post_submission_id"] = json!(id);
    expected["post_url"] = json!(format!("/v2/posts/{id}"));
    assert_eq!(answer, expected);

    let post = post_of(&app, &publisher.key, &id).await;
    assert_eq!(post["status"], "unconfirmed", "{post}");
    assert_eq!(post["error"]["code"], "PublishUnconfirmed", "{post}");
    assert_eq!(
        post["error"]["message"], PUBLISH_UNCONFIRMED_MESSAGE,
        "{post}"
    );
    assert_eq!(post["post_id"], Value::Null, "{post}");

    set_fault(&app.sim, &publisher.sim, FaultSpec::default());
    eventually("the check finds the post published", async || {
        // Checks are due by the service's clock.
        app.clock.advance(Duration::milliseconds(500));
        post_of(&app, &publisher.key, &id).await["status"] != "unconfirmed"
    })
    .await;
    let post = post_of(&app, &publisher.key, &id).await;
    let out = app.published(&publisher.sim);
    assert_eq!(out.len(), 1, "published once: {out:?}");
    assert_eq!(post["status"], "published", "{post}");
    assert_eq!(post["post_id"], out[0].id, "{post}");
    assert_eq!(post["post_ids"], json!([out[0].id]), "{post}");
    assert_eq!(post["error"], Value::Null, "{post}");
    assert!(post["published_at"].is_string(), "{post}");
}

/// Past the request's time limit: 504 naming the resource, which says `processing` while the
/// publish goes on and `published` once it is out.
#[actix_web::test]
async fn a_timed_out_publish_reads_as_processing_then_published() {
    let app = TestApp::spawn_with(|c| c.publishing.request_timeout_secs = 1).await;
    let publisher = app.publisher("threads", "pro").await;
    let slow = FaultSpec {
        latency_ms: 1_500,
        ..FaultSpec::default()
    };
    set_fault(&app.sim, &publisher.sim, slow);
    let (status, answer) = publish(&app, &publisher, json!({"text": "slow"})).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (504, Some("Timeout")),
        "{answer}"
    );
    let id = answer["post_submission_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_string();
    assert_eq!(answer["post_url"], format!("/v2/posts/{id}"), "{answer}");
    assert!(
        answer["message"].as_str().unwrap().contains(&id),
        "{answer}"
    );

    let post = post_of(&app, &publisher.key, &id).await;
    assert_eq!(post["status"], "processing", "{post}");
    assert_eq!(post["error"], Value::Null, "{post}");
    eventually("the publish to end", async || {
        post_of(&app, &publisher.key, &id).await["status"] != "processing"
    })
    .await;
    let post = post_of(&app, &publisher.key, &id).await;
    assert_eq!(post["status"], "published", "{post}");
    assert_eq!(app.published(&publisher.sim).len(), 1);
}

#[actix_web::test]
async fn a_scheduled_posts_publish_names_the_scheduled_post() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let at = (app.clock_now() + Duration::seconds(120)).to_rfc3339_opts(SecondsFormat::Secs, true);
    let (status, answer) = publish(
        &app,
        &publisher,
        json!({"text": "later", "scheduledAt": at}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let scheduled_id = answer["scheduledPostId"].as_str().unwrap().to_string();
    app.clock.advance(Duration::seconds(121));
    eventually("the scheduled post to publish", async || {
        list_posts(&app, &publisher.key, "?status=published")
            .await
            .1["total"]
            == 1
    })
    .await;
    let (_, list) = list_posts(&app, &publisher.key, "").await;
    assert_eq!(list["total"], 1, "{list}");
    let listed = &list["posts"][0];
    assert_eq!(listed["scheduled_post_id"], scheduled_id, "{list}");
    assert_eq!(listed["status"], "published", "{list}");
    let post = post_of(&app, &publisher.key, &ids(&list)[0]).await;
    assert_eq!(&post, listed);
    assert_eq!(post["post_id"], app.published(&publisher.sim)[0].id);

    // An immediate publish has none.
    let now = published_id(&app, &publisher, json!({"text": "now"})).await;
    assert_eq!(
        post_of(&app, &publisher.key, &now).await["scheduled_post_id"],
        Value::Null
    );
}

#[actix_web::test]
async fn the_list_filters_pages_and_shows_the_newest_first() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let threads = app
        .connect(publisher.user_id, "threads", "threads demo")
        .await;
    let one = published_id(&app, &publisher, json!({"text": "one"})).await;
    app.clock.advance(Duration::seconds(1));
    let two = published_id(&app, &publisher, json!({"text": "two"})).await;
    app.clock.advance(Duration::seconds(1));
    set_fault(&app.sim, &publisher.sim, fault(FaultKind::Permission));
    let (status, answer) = publish(&app, &publisher, json!({"text": "three"})).await;
    assert_eq!(status, 403, "{answer}");
    let three = answer["post_submission_id"].as_str().unwrap().to_string();
    set_fault(&app.sim, &publisher.sim, FaultSpec::default());
    app.clock.advance(Duration::seconds(1));
    let body = json!({"post": {
        "accountId": threads.account.id,
        "content": {"text": "four", "platform": "threads"},
        "target": {"targetType": "threads"},
    }});
    let (status, answer) = app.post(&publisher.key, &body).await;
    assert_eq!(status, 200, "{answer}");
    let four = answer["data"]["post_submission_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Someone else's post is never listed.
    let other = app.publisher("facebook", "pro").await;
    let theirs = published_id(&app, &other, json!({"text": "theirs"})).await;

    let (status, all) = list_posts(&app, &publisher.key, "").await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(
        (
            &all["success"],
            &all["total"],
            &all["limit"],
            &all["offset"]
        ),
        (&json!(true), &json!(4), &json!(20), &json!(0)),
        "{all}"
    );
    assert_eq!(
        ids(&all),
        [four.as_str(), three.as_str(), two.as_str(), one.as_str()]
    );
    assert_eq!(all["posts"][1]["status"], "failed", "{all}");
    assert_eq!(all["posts"][0]["platform"], "threads", "{all}");
    assert_eq!(
        ids(&list_posts(&app, &other.key, "").await.1),
        [theirs.as_str()]
    );

    for (query, expected) in [
        ("?status=failed", vec![three.as_str()]),
        (
            "?status=published",
            vec![four.as_str(), two.as_str(), one.as_str()],
        ),
        (
            "?status=published&platform=facebook",
            vec![two.as_str(), one.as_str()],
        ),
        ("?platform=threads", vec![four.as_str()]),
        ("?status=unconfirmed", vec![]),
        (
            "?status=&platform=",
            vec![four.as_str(), three.as_str(), two.as_str(), one.as_str()],
        ),
        ("?limit=2", vec![four.as_str(), three.as_str()]),
        ("?limit=2&offset=2", vec![two.as_str(), one.as_str()]),
        ("?offset=4", vec![]),
    ] {
        let (status, list) = list_posts(&app, &publisher.key, query).await;
        assert_eq!(status, 200, "{query}: {list}");
        assert_eq!(ids(&list), expected, "{query}: {list}");
    }
    let (_, page) = list_posts(&app, &publisher.key, "?status=published&limit=1&offset=1").await;
    assert_eq!(
        (&page["total"], &page["limit"], &page["offset"]),
        (&json!(3), &json!(1), &json!(1)),
        "{page}"
    );
    assert_eq!(ids(&page), [two.as_str()]);
    assert_eq!(
        list_posts(&app, &publisher.key, "?limit=500").await.1["limit"],
        100
    );

    for (query, code, message) in [
        (
            "?status=publishing",
            "InvalidRequest",
            "status must be one of processing, published, failed, unconfirmed",
        ),
        (
            "?platform=myspace",
            "InvalidPlatform",
            "Invalid platform 'myspace'",
        ),
        ("?limit=0", "InvalidRequest", "limit must be at least 1"),
        (
            "?offset=-1",
            "InvalidRequest",
            "offset must not be negative",
        ),
    ] {
        let (status, body) = list_posts(&app, &publisher.key, query).await;
        assert_eq!((status, body), (400, error_body(code, message)), "{query}");
    }
    let (status, body) = list_posts(&app, &publisher.key, "?limit=many").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("InvalidRequest")),
        "{body}"
    );
}

/// Another user's post, an unknown id and a path that is no id answer exactly alike: the
/// answer tells nothing about posts that are not the caller's.
#[actix_web::test]
async fn ids_that_are_not_the_callers_posts_are_all_not_found_alike() {
    let app = TestApp::spawn().await;
    let owner = app.publisher("facebook", "pro").await;
    let stranger = app.publisher("facebook", "pro").await;
    let id = published_id(&app, &owner, json!({"text": "mine"})).await;
    let unknown = uuid::Uuid::now_v7().to_string();
    let not_found = error_body("NotFound", "Post not found");
    for raw in [id.as_str(), unknown.as_str(), "not-an-id", "1"] {
        let (status, body) = get_post(&app, &stranger.key, raw).await;
        assert_eq!((status, body), (404, not_found.clone()), "{raw}");
    }
    assert_eq!(
        post_of(&app, &owner.key, &id).await["post_submission_id"],
        id
    );
    // Without a key: the key is refused first, as on every API-key route.
    let response = app
        .http
        .get(app.url(&format!("/v2/posts/{id}")))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (401, Some("InvalidApiKey"))
    );
}

/// Reading posts counts nothing against the plan: the Free plan can poll, also once its
/// allowance is used up, and the rate-limit headers show the allowance unchanged.
#[actix_web::test]
async fn reading_posts_is_not_metered() {
    let app = TestApp::spawn_with(|c| c.usage.free_monthly_limit = 2).await;
    let publisher = app.publisher("facebook", "free").await;
    let id = published_id(&app, &publisher, json!({"text": "the one"})).await;
    let read = async |path: String| {
        let response = app
            .http
            .get(app.url(&path))
            .header("service-api-key", &publisher.key)
            .send()
            .await
            .unwrap();
        let remaining = response.headers()["x-ratelimit-remaining"]
            .to_str()
            .unwrap()
            .to_string();
        let limit = response.headers()["x-ratelimit-limit"]
            .to_str()
            .unwrap()
            .to_string();
        (response.status().as_u16(), limit, remaining)
    };
    let one = format!("/v2/posts/{id}");
    for _ in 0..5 {
        assert_eq!(read(one.clone()).await, (200, "2".into(), "1".into()));
        assert_eq!(
            read("/v2/posts".into()).await,
            (200, "2".into(), "1".into())
        );
    }
    let usage = |body: Value| body["api_usage"]["current_usage"].clone();
    let status: Value = publisher
        .dashboard
        .client
        .get(app.url("/api/subscription/status"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(usage(status), 1, "only the publish counted");

    // The allowance used up: metered calls are refused, reading goes on.
    assert_eq!(app.key_get(&publisher.key).await.status(), 200);
    assert_eq!(app.key_get(&publisher.key).await.status(), 429);
    assert_eq!(read(one.clone()).await, (200, "2".into(), "0".into()));
    assert_eq!(
        read("/v2/posts".into()).await,
        (200, "2".into(), "0".into())
    );
    assert_eq!(
        post_of(&app, &publisher.key, &id).await["status"],
        "published"
    );
}
