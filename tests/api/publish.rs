//! `POST /v2/posts` end to end: the service, its account actors and the platform simulator.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use service_sim::state::{FaultKind, FaultSpec, Processing};

use crate::helpers::{Publisher, TestApp, error_body, fault, status_and_json};

/// Publishes and returns the response `data`, asserting success.
async fn publish_ok(app: &TestApp, publisher: &Publisher, content: Value) -> Value {
    let (status, body) = app.post(&publisher.key, &publisher.body(content)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    body["data"].clone()
}

#[actix_web::test]
async fn every_platform_and_post_type_publishes_and_reads_back() {
    let app = TestApp::spawn().await;
    let jpg = app.media_url("sample.jpg");
    let png = app.media_url("sample.png");
    let webp = app.media_url("sample.webp");
    let mp4 = app.media_url("sample.mp4");
    let mov = app.media_url("sample.mov");
    // (platform, content, post_type, sim items expected)
    let cases: Vec<(&str, Value, &str, usize)> = vec![
        ("facebook", json!({"text": "Hello page"}), "text", 1),
        (
            "facebook",
            json!({"text": "A photo", "mediaUrls": jpg}),
            "photo",
            1,
        ),
        (
            "facebook",
            json!({"text": "An album", "mediaUrls": [jpg, png, jpg]}),
            "album",
            1,
        ),
        (
            "facebook",
            json!({"text": "A video", "mediaUrls": [mp4]}),
            "video",
            1,
        ),
        (
            "instagram",
            json!({"text": "A photo", "mediaUrls": [jpg]}),
            "photo",
            1,
        ),
        (
            "instagram",
            json!({"text": "A carousel", "mediaUrls": [jpg, png, mp4]}),
            "carousel",
            1,
        ),
        (
            "instagram",
            json!({"text": "A reel", "mediaUrls": [mov], "coverUrl": png}),
            "reels",
            1,
        ),
        ("threads", json!({"text": "Just text"}), "text", 1),
        (
            "threads",
            json!({"text": "A webp", "mediaUrls": [webp]}),
            "photo",
            1,
        ),
        (
            "threads",
            json!({"text": "A video", "mediaUrls": [mp4]}),
            "video",
            1,
        ),
        (
            "threads",
            json!({"text": "A carousel", "mediaUrls": [jpg, webp, mp4]}),
            "carousel",
            1,
        ),
        (
            "threads",
            json!({"text": ["one", "two", "three"], "mediaUrls": [jpg]}),
            "thread",
            3,
        ),
        ("x", json!({"text": "A tweet"}), "text", 1),
        (
            "x",
            json!({"text": "Four images", "mediaUrls": [jpg, png, jpg, png]}),
            "photo",
            1,
        ),
        (
            "x",
            json!({"text": "A video", "mediaUrls": [mp4]}),
            "video",
            1,
        ),
        ("x", json!({"text": ["first", "second"]}), "thread", 2),
        (
            "tiktok",
            json!({"text": "A video", "mediaUrls": [mp4]}),
            "video",
            1,
        ),
        (
            "tiktok",
            json!({"text": "Photos", "mediaUrls": [jpg, webp]}),
            "carousel",
            1,
        ),
        (
            "youtube",
            json!({"text": "My title\n\nMy description", "mediaUrls": [mp4, png]}),
            "video",
            1,
        ),
    ];
    for (platform, content, post_type, items) in cases {
        let publisher = app.publisher(platform, "ultra").await;
        let data = publish_ok(&app, &publisher, content.clone()).await;
        assert_eq!(data["post_type"], post_type, "{platform} {content}");
        assert_eq!(data["platform"], platform);
        assert_eq!(data["page_name"], publisher.account.display_name);
        assert!(data["post_submission_id"].as_str().unwrap().len() == 36);
        assert!(data["published_at"].as_str().unwrap().ends_with('Z'));
        let published = app.published(&publisher.sim);
        assert_eq!(
            published.len(),
            items,
            "{platform} {content}: {published:?}"
        );
        let post_id = data["post_id"].as_str().unwrap();
        assert!(!post_id.is_empty());
        match post_type {
            "album" => assert_eq!(data["photo_count"], 3),
            "carousel" if platform == "instagram" => assert_eq!(data["item_count"], 3),
            "thread" => {
                assert_eq!(data["thread_count"], items);
                let ids: Vec<&str> = data["post_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                let sim_ids: Vec<&str> = published.iter().map(|p| p.id.as_str()).collect();
                assert_eq!(ids, sim_ids, "{platform}: post_ids in order");
                // Each post replies to the one before.
                for pair in published.windows(2) {
                    assert_eq!(pair[1].reply_to.as_deref(), Some(pair[0].id.as_str()));
                }
            }
            _ => {}
        }
        // The text reached the platform.
        let first_text = match &content["text"] {
            Value::Array(items) => items[0].as_str().unwrap().to_string(),
            Value::String(s) => s.clone(),
            _ => String::new(),
        };
        let sim_text = published[0].text.clone().unwrap_or_default();
        let expected = if platform == "youtube" {
            "My description".to_string()
        } else {
            first_text
        };
        assert!(
            sim_text.contains(&expected),
            "{platform}: simulator has {sim_text:?}, expected {expected:?}"
        );
    }
}

#[actix_web::test]
async fn the_history_records_each_publish_with_the_submission_fields() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let jpg = app.media_url("sample.jpg");
    let data = publish_ok(
        &app,
        &publisher,
        json!({"text": "album", "mediaUrls": [jpg, jpg]}),
    )
    .await;
    let history = app.history(&publisher.dashboard).await;
    assert_eq!(history["total"], 1);
    let item = &history["posts"][0];
    for field in [
        "post_submission_id",
        "post_id",
        "post_type",
        "platform",
        "page_name",
        "published_at",
        "photo_count",
    ] {
        assert_eq!(item[field], data[field], "{field}");
    }
    assert_eq!(item["status"], "published");
    let row = app
        .state
        .store
        .find_submission(
            data["post_submission_id"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    let steps = row.steps.unwrap();
    assert!(steps.final_started, "{steps:?}");
    assert_eq!(
        steps.steps.len(),
        2,
        "both unpublished photo ids are recorded: {steps:?}"
    );
}

#[actix_web::test]
async fn validation_errors_never_reach_the_platform() {
    let app = TestApp::spawn().await;
    let facebook = app.publisher("facebook", "ultra").await;
    let instagram = app.publisher("instagram", "ultra").await;
    let threads = app.publisher("threads", "ultra").await;
    let other_user = app.publisher("facebook", "ultra").await;
    let jpg = app.media_url("sample.jpg");
    let mp4 = app.media_url("sample.mp4");
    let too_many: Vec<String> = (0..11).map(|_| jpg.clone()).collect();

    let mut cases: Vec<(&Publisher, Value, u16, &str)> = vec![
        (&facebook, json!({}), 400, "MissingParameter"),
        (
            &facebook,
            json!({"post": {"content": {}}}),
            400,
            "MissingParameter",
        ),
        (
            &instagram,
            instagram.body(json!({"text": "no media"})),
            400,
            "MediaRequired",
        ),
        (
            &instagram,
            instagram.body(json!({"mediaUrls": [jpg]})),
            400,
            "TextRequired",
        ),
        (
            &facebook,
            facebook.body(json!({"text": 12})),
            400,
            "InvalidTextFormat",
        ),
        (
            &facebook,
            facebook.body(json!({"text": "x", "mediaUrls": too_many})),
            400,
            "InvalidCarouselSize",
        ),
        (
            &threads,
            threads.body(json!({"text": "a".repeat(501)})),
            400,
            "TextTooLong",
        ),
        (
            &facebook,
            facebook.body(json!({"text": "x", "mediaUrls": [jpg, mp4]})),
            400,
            "InvalidMediaType",
        ),
        (
            &facebook,
            facebook.body(json!({"text": "x", "mediaUrls": ["not a url"]})),
            400,
            "InvalidMediaUrl",
        ),
        (
            &facebook,
            facebook.body(json!({"text": "x", "mediaUrls": ["file:///etc/passwd"]})),
            400,
            "InvalidMediaUrl",
        ),
        (
            &facebook,
            facebook.body(json!({"text": "x", "mediaUrls": [app.media_url("large.mp4")]})),
            400,
            "MediaTooLarge",
        ),
        (
            &facebook,
            facebook.body(json!({"text": "x", "mediaUrls": [app.media_url("wrong-type.jpg")]})),
            400,
            "InvalidMediaType",
        ),
        (
            &facebook,
            facebook.body(json!({"text": "x", "mediaUrls": [app.media_url("missing.jpg")]})),
            400,
            "MediaDownloadFailed",
        ),
        (
            &threads,
            threads.body(json!({"text": ["a", "b"], "mediaUrls": [jpg, jpg]})),
            400,
            "InvalidCarouselSize",
        ),
    ];
    let mut wrong_platform = facebook.body(json!({"text": "x"}));
    wrong_platform["post"]["content"]["platform"] = json!("myspace");
    wrong_platform["post"]["target"]["targetType"] = json!("myspace");
    cases.push((&facebook, wrong_platform, 400, "InvalidPlatform"));
    let mut mismatch = facebook.body(json!({"text": "x"}));
    mismatch["post"]["target"]["targetType"] = json!("instagram");
    cases.push((&facebook, mismatch, 400, "InvalidRequest"));
    // Another user's account.
    cases.push((
        &facebook,
        other_user.body(json!({"text": "x"})),
        400,
        "InvalidAccountId",
    ));
    // A facebook account used for instagram content.
    let mut cross = facebook.body(json!({"text": "x", "mediaUrls": [jpg]}));
    cross["post"]["content"]["platform"] = json!("instagram");
    cross["post"]["target"]["targetType"] = json!("instagram");
    cases.push((&facebook, cross, 400, "InvalidPlatform"));

    for (publisher, body, status, code) in cases {
        let (got_status, got) = app.post(&publisher.key, &body).await;
        assert_eq!(
            (got_status, got["error"].as_str().unwrap_or("")),
            (status, code),
            "{body}: {got}"
        );
        assert_eq!(got["success"], false);
        assert!(got["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    for publisher in [&facebook, &instagram, &threads, &other_user] {
        assert_eq!(
            app.sim
                .state()
                .request_count(&publisher.sim.platform, &publisher.sim.external_id),
            0,
            "no platform call for a refused request"
        );
    }

    // The missing parameter is named.
    let (_, body) = app
        .post(&facebook.key, &json!({"post": {"content": {}}}))
        .await;
    assert_eq!(
        body,
        error_body("MissingParameter", "Missing required parameter: accountId")
    );
}

#[actix_web::test]
async fn a_disconnected_account_is_refused() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let response = publisher
        .dashboard
        .client
        .delete(app.url(&format!("/api/accounts/{}", publisher.account.id)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (status, body) = app
        .post(&publisher.key, &publisher.body(json!({"text": "hi"})))
        .await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (400, "AccountDisabled")
    );
}

#[actix_web::test]
async fn media_urls_on_private_networks_are_refused() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let port = app.sim.port;
    for url in [
        // The simulator's own port is allow-listed; another loopback port is not.
        format!("http://127.0.0.1:{}/media/sample.jpg", port + 1),
        "http://10.0.0.1/a.jpg".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        format!("http://[::1]:{port}/media/sample.jpg"),
        format!("http://localhost:{port}/media/sample.jpg"),
        // A redirect from the allowed host to a private one is checked again.
        format!(
            "{}/media/redirect?to=http://10.1.2.3/a.jpg",
            app.sim.base_url
        ),
    ] {
        let (status, body) = app
            .post(
                &publisher.key,
                &publisher.body(json!({"text": "x", "mediaUrls": [url]})),
            )
            .await;
        assert_eq!(
            (status, body["error"].as_str().unwrap()),
            (400, "InvalidMediaUrl"),
            "{url}: {body}"
        );
    }
    assert_eq!(app.published(&publisher.sim).len(), 0);
}

#[actix_web::test]
async fn x_needs_the_ultra_plan_and_allows_sixty_posts_a_month_across_accounts() {
    let app = TestApp::spawn_with(|c| c.publishing.x_monthly_posts = 3).await;
    let pro = app.publisher("x", "pro").await;
    let (status, body) = app.post(&pro.key, &pro.body(json!({"text": "hi"}))).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (403, "InsufficientPermissions")
    );
    assert!(body["message"].as_str().unwrap().contains("Ultra"));
    assert_eq!(app.published(&pro.sim).len(), 0);

    let ultra = app.publisher("x", "ultra").await;
    let second = app.connect(ultra.user_id, "x", "second x").await;
    publish_ok(&app, &ultra, json!({"text": "one"})).await;
    publish_ok(&app, &ultra, json!({"text": "two"})).await;
    // A failed publish gives its count back.
    app.sim
        .state()
        .set_faults("x", &ultra.sim.external_id, fault(FaultKind::Permission));
    let (status, _) = app
        .post(&ultra.key, &ultra.body(json!({"text": "fails"})))
        .await;
    assert_eq!(status, 403);
    app.sim.state().clear_faults(None);
    let mut other = ultra.body(json!({"text": "three, on the other account"}));
    other["post"]["accountId"] = json!(second.account.id);
    let (status, body) = app.post(&ultra.key, &other).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = app
        .post(&ultra.key, &ultra.body(json!({"text": "four"})))
        .await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (429, "RateLimitExceeded"),
        "{body}"
    );
    assert!(body["retry_after"].as_u64().unwrap() > 0);
    assert_eq!(app.published(&ultra.sim).len(), 2);
}

#[actix_web::test]
async fn long_tweets_are_truncated_to_280_characters() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("x", "ultra").await;
    let text = format!("{}{}", "é".repeat(279), "👍🏽 and more");
    publish_ok(&app, &publisher, json!({"text": text})).await;
    let published = app.published(&publisher.sim);
    assert_eq!(published[0].text.as_deref(), Some("é".repeat(279).as_str()));
}

#[actix_web::test]
async fn platform_faults_map_to_the_catalogue() {
    let app = TestApp::spawn().await;
    let jpg = app.media_url("sample.jpg");
    let mp4 = app.media_url("sample.mp4");
    let cases: Vec<(&str, FaultSpec, Value, u16, &str)> = vec![
        (
            "facebook",
            fault(FaultKind::TokenRevoked),
            json!({"text": "x"}),
            401,
            "InvalidToken",
        ),
        (
            "threads",
            fault(FaultKind::RateLimit),
            json!({"text": "x"}),
            429,
            "RateLimitExceeded",
        ),
        (
            "instagram",
            fault(FaultKind::Permission),
            json!({"text": "x", "mediaUrls": [jpg]}),
            403,
            "InsufficientPermissions",
        ),
        (
            "x",
            fault(FaultKind::ServerError),
            json!({"text": "x"}),
            500,
            "PublishingFailed",
        ),
        (
            "tiktok",
            FaultSpec {
                processing: Processing::Fail,
                ..FaultSpec::default()
            },
            json!({"mediaUrls": [mp4]}),
            500,
            "VideoProcessingFailed",
        ),
        (
            "instagram",
            FaultSpec {
                processing: Processing::Fail,
                ..FaultSpec::default()
            },
            json!({"text": "x", "mediaUrls": [jpg, mp4]}),
            500,
            "CarouselCreationFailed",
        ),
        (
            "youtube",
            fault(FaultKind::RateLimit),
            json!({"text": "t", "mediaUrls": [mp4]}),
            429,
            "RateLimitExceeded",
        ),
    ];
    for (platform, spec, content, status, code) in cases {
        let publisher = app.publisher(platform, "ultra").await;
        app.sim
            .state()
            .set_faults(platform, &publisher.sim.external_id, spec);
        let (got_status, body) = app.post(&publisher.key, &publisher.body(content)).await;
        assert_eq!(
            (got_status, body["error"].as_str().unwrap_or("")),
            (status, code),
            "{platform}: {body}"
        );
        if code == "RateLimitExceeded" {
            assert!(body["retry_after"].as_u64().unwrap() > 0, "{body}");
        }
        if code == "PublishingFailed" {
            assert!(
                body["details"].as_str().is_some_and(|d| !d.is_empty()),
                "{body}"
            );
        }
        assert_eq!(app.published(&publisher.sim).len(), 0, "{platform}");
    }
}

#[actix_web::test]
async fn an_expired_token_marks_the_account_invalid() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    app.sim.state().set_faults(
        "threads",
        &publisher.sim.external_id,
        fault(FaultKind::TokenExpired),
    );
    let (status, body) = app
        .post(&publisher.key, &publisher.body(json!({"text": "x"})))
        .await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (401, "TokenExpired"),
        "{body}"
    );
    // The account now shows as invalid, and the next publish is refused without a platform call.
    let calls = app
        .sim
        .state()
        .request_count("threads", &publisher.sim.external_id);
    let mut invalid = false;
    for _ in 0..50 {
        let accounts: Value = publisher
            .dashboard
            .client
            .get(app.url("/api/accounts"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if accounts["accounts"][0]["is_valid"] == false {
            invalid = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(invalid, "account marked invalid");
    app.sim.state().clear_faults(None);
    let (status, body) = app
        .post(&publisher.key, &publisher.body(json!({"text": "x"})))
        .await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (401, "TokenExpired"),
        "{body}"
    );
    assert_eq!(
        app.sim
            .state()
            .request_count("threads", &publisher.sim.external_id),
        calls
    );
}

#[actix_web::test]
async fn the_account_limiter_answers_429_with_headers() {
    let app = TestApp::spawn_with(|c| c.publishing.facebook_calls_per_hour = 2).await;
    let publisher = app.publisher("facebook", "pro").await;
    publish_ok(&app, &publisher, json!({"text": "one"})).await;
    publish_ok(&app, &publisher, json!({"text": "two"})).await;
    let response = app
        .http
        .post(app.url("/v2/posts"))
        .header("service-api-key", &publisher.key)
        .json(&publisher.body(json!({"text": "three"})))
        .send()
        .await
        .unwrap();
    let headers = response.headers().clone();
    let (status, body) = status_and_json(response).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (429, "RateLimitExceeded")
    );
    let retry_after = body["retry_after"].as_u64().unwrap();
    assert!((1..=1800).contains(&retry_after), "{retry_after}");
    assert_eq!(headers["x-ratelimit-limit"], "2");
    assert_eq!(headers["x-ratelimit-remaining"], "0");
    let reset: i64 = headers["x-ratelimit-reset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(reset > chrono::Utc::now().timestamp());
    assert_eq!(app.published(&publisher.sim).len(), 2);
}

#[actix_web::test]
async fn publishes_to_one_account_run_one_at_a_time_in_arrival_order() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    app.sim.state().set_faults(
        "facebook",
        &publisher.sim.external_id,
        FaultSpec {
            latency_ms: 300,
            ..FaultSpec::default()
        },
    );
    let started = Instant::now();
    let first_body = publisher.body(json!({"text": "first"}));
    let first = app.post(&publisher.key, &first_body);
    // The second arrives once the first is being published.
    let second = async {
        app.wait_for_actor(&publisher.account, "the first publish in flight", |h| {
            h.in_flight_submission.is_some()
        })
        .await;
        app.post(&publisher.key, &publisher.body(json!({"text": "second"})))
            .await
    };
    let ((s1, b1), (s2, b2)) = tokio::join!(first, second);
    assert_eq!((s1, s2), (200, 200), "{b1} {b2}");
    // One call each, 300 ms each, one after the other.
    assert!(started.elapsed() >= Duration::from_millis(600));
    let texts: Vec<String> = app
        .published(&publisher.sim)
        .into_iter()
        .map(|p| p.text.unwrap_or_default())
        .collect();
    assert_eq!(texts, vec!["first", "second"]);
}

#[actix_web::test]
async fn a_full_queue_answers_503() {
    let app = TestApp::spawn_with(|c| c.publishing.queue_capacity = 1).await;
    let publisher = app.publisher("facebook", "pro").await;
    app.sim.state().set_faults(
        "facebook",
        &publisher.sim.external_id,
        FaultSpec {
            latency_ms: 600,
            ..FaultSpec::default()
        },
    );
    // In this order: one in flight, one queued (the queue is full), one refused.
    let bodies: Vec<Value> = (0..3)
        .map(|i| publisher.body(json!({"text": format!("post {i}")})))
        .collect();
    let account = &publisher.account;
    let first = app.post(&publisher.key, &bodies[0]);
    let rest = async {
        app.wait_for_actor(account, "the first publish in flight", |h| {
            h.in_flight_submission.is_some()
        })
        .await;
        let second = app.post(&publisher.key, &bodies[1]);
        let third = async {
            app.wait_for_actor(account, "the second publish queued", |h| {
                h.in_flight_submission.is_some() && h.queue_depth == 1
            })
            .await;
            app.post(&publisher.key, &bodies[2]).await
        };
        tokio::join!(second, third)
    };
    let (first, (second, third)) = tokio::join!(first, rest);
    let results = [first, second, third];
    let statuses: Vec<u16> = results.iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses, vec![200, 200, 503], "{results:?}");
    assert_eq!(results[2].1["error"], "ServiceUnavailable");
}

#[actix_web::test]
async fn the_actor_answers_health_while_a_slow_video_publishes() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    app.sim.state().set_faults(
        "facebook",
        &publisher.sim.external_id,
        FaultSpec {
            latency_ms: 1_500,
            ..FaultSpec::default()
        },
    );
    let mp4 = app.media_url("sample.mp4");
    let video = publisher.body(json!({"text": "slow", "mediaUrls": [mp4]}));
    let publish = app.post(&publisher.key, &video);
    // Asked through the actor (not the board) until it says it has been publishing for a
    // while: an actor busy with the publish would answer only after it, idle.
    let probe = async {
        loop {
            let health = app
                .state
                .supervisor
                .health(&publisher.account)
                .await
                .unwrap();
            if health.in_flight_ms.is_some_and(|ms| ms >= 200) {
                break health;
            }
            assert!(
                health.in_flight_submission.is_some() || health.published == 0,
                "the publish ended before the actor answered during it: {health:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let ((status, body), health) = tokio::join!(publish, probe);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        health.state,
        social_service::actors::account::ActorState::Publishing
    );
}

#[actix_web::test]
async fn past_the_time_limit_the_caller_gets_504_and_the_post_lands_in_history() {
    let app = TestApp::spawn_with(|c| c.publishing.request_timeout_secs = 1).await;
    let publisher = app.publisher("facebook", "pro").await;
    app.sim.state().set_faults(
        "facebook",
        &publisher.sim.external_id,
        FaultSpec {
            latency_ms: 1_500,
            ..FaultSpec::default()
        },
    );
    let (status, body) = app
        .post(&publisher.key, &publisher.body(json!({"text": "slow"})))
        .await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (504, "Timeout"),
        "{body}"
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("post_submission_id")
    );
    // The publish carries on after the answer, to the end.
    let started = Instant::now();
    let history = loop {
        let history = app.history(&publisher.dashboard).await;
        if history["posts"][0]["status"] != "publishing" {
            break history;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "still publishing: {history}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(history["posts"][0]["status"], "published", "{history}");
    assert_eq!(app.published(&publisher.sim).len(), 1);
}

#[actix_web::test]
async fn a_final_call_without_an_answer_is_recorded_as_unconfirmed() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("x", "ultra").await;
    app.sim.state().set_faults(
        "x",
        &publisher.sim.external_id,
        FaultSpec {
            error: Some(FaultKind::ServerError),
            path_contains: Some("/2/tweets".into()),
            ..FaultSpec::default()
        },
    );
    let (status, body) = app
        .post(
            &publisher.key,
            &publisher.body(json!({"text": "lost in the void"})),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (500, "PublishingFailed"),
        "{body}"
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("may have been published"),
        "{body}"
    );
    let history = app.history(&publisher.dashboard).await;
    assert_eq!(history["posts"][0]["status"], "unconfirmed", "{history}");
}
