//! The X adapter against the simulator, and the simulator's X API on its own.

use reqwest::StatusCode;
use serde_json::{Value, json};
use service_sim::state::{FaultKind, FaultSpec, Processing};
use social_service::{
    domain::plan::{PublishPlan, XMedia, XPost},
    platforms::{Pending, PlatformError},
};

use crate::adapters::Harness;
use crate::helpers::set_fault;

fn plan(tweets: &[&str], media: XMedia) -> PublishPlan {
    PublishPlan::X(XPost {
        tweets: tweets.iter().map(|t| t.to_string()).collect(),
        media,
    })
}

fn error_on_tweets(kind: FaultKind) -> FaultSpec {
    FaultSpec {
        error: Some(kind),
        path_contains: Some("/2/tweets".into()),
        ..FaultSpec::default()
    }
}

fn step_ids(steps: &Value, name: &str) -> Vec<String> {
    steps["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == name)
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

#[actix_web::test]
async fn text_tweet_is_published() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    let (result, steps) = h
        .publish(&account, &plan(&["hello from the adapter"], XMedia::None))
        .await;
    let published = result.unwrap();
    assert!(published.post_ids.is_empty());
    assert!(published.post_id.chars().all(|c| c.is_ascii_digit()));
    let items = h
        .sim
        .state()
        .published(Some("x"), Some(&account.external_id));
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, published.post_id);
    assert_eq!(items[0].kind, "tweet");
    assert_eq!(items[0].text.as_deref(), Some("hello from the adapter"));
    assert!(items[0].media.is_empty() && items[0].reply_to.is_none());
    assert_eq!(steps["final_started"], true);
    assert_eq!(step_ids(&steps, "post"), vec![published.post_id]);
}

#[actix_web::test]
async fn four_images_are_uploaded_and_attached() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    let images = vec![
        h.media("sample.jpg").await,
        h.media("sample.png").await,
        h.media("sample.webp").await,
        h.media("sample.jpg").await,
    ];
    let (result, steps) = h
        .publish(&account, &plan(&["four pictures"], XMedia::Images(images)))
        .await;
    let published = result.unwrap();
    let items = h
        .sim
        .state()
        .published(Some("x"), Some(&account.external_id));
    assert_eq!(items.len(), 1);
    let media_steps = step_ids(&steps, "media");
    assert_eq!(media_steps.len(), 4);
    assert_eq!(items[0].media, media_steps);
    assert_eq!(items[0].id, published.post_id);
    let described = items[0].extra["media"].as_array().unwrap();
    assert_eq!(described[0]["media_type"], "image/jpeg");
    assert_eq!(described[0]["size"], service_sim::media::SAMPLE_JPG.len());
    assert_eq!(described[1]["media_type"], "image/png");
    assert_eq!(described[2]["media_type"], "image/webp");
    assert!(described.iter().all(|m| m["category"] == "tweet_image"));
}

#[actix_web::test]
async fn video_is_uploaded_in_chunks_and_processed() {
    let mut h = Harness::start().await;
    h.config.upload_chunk_bytes = 2 * 1024 * 1024;
    let account = h.account("x", "Handle");
    let video = h.media("sized/6000000.mp4").await;
    let (result, steps) = h
        .publish(&account, &plan(&["a video"], XMedia::Video(video)))
        .await;
    let published = result.unwrap();
    let item = h.sim.state().published_item(&published.post_id).unwrap();
    let media_steps = step_ids(&steps, "media");
    assert_eq!(media_steps.len(), 1);
    assert_eq!(item.media, media_steps);
    let media = &item.extra["media"][0];
    assert_eq!(media["size"], 6_000_000);
    // 6,000,000 bytes in 2 MiB pieces.
    assert_eq!(media["segments"], 3);
    assert_eq!(media["category"], "tweet_video");
    assert_eq!(media["video"], true);
    assert!(media["media_key"].as_str().unwrap().starts_with("13_"));
}

#[actix_web::test]
async fn thread_replies_chain_with_media_on_first() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    let image = h.media("sample.jpg").await;
    let (result, steps) = h
        .publish(
            &account,
            &plan(&["one", "two", "three"], XMedia::Images(vec![image])),
        )
        .await;
    let published = result.unwrap();
    assert_eq!(published.post_ids.len(), 3);
    assert_eq!(published.post_id, published.post_ids[0]);
    assert_eq!(step_ids(&steps, "post"), published.post_ids);
    let items = h
        .sim
        .state()
        .published(Some("x"), Some(&account.external_id));
    assert_eq!(items.len(), 3);
    let ids: Vec<_> = items.iter().map(|i| i.id.clone()).collect();
    assert_eq!(ids, published.post_ids);
    assert_eq!(items[0].reply_to, None);
    assert_eq!(items[1].reply_to.as_deref(), Some(ids[0].as_str()));
    assert_eq!(items[2].reply_to.as_deref(), Some(ids[1].as_str()));
    assert_eq!(items[0].media.len(), 1);
    assert!(items[1].media.is_empty() && items[2].media.is_empty());
    assert_eq!(
        items
            .iter()
            .map(|i| i.text.clone().unwrap())
            .collect::<Vec<_>>(),
        vec!["one", "two", "three"]
    );
}

#[actix_web::test]
async fn expired_token() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    set_fault(&h.sim, &account, error_on_tweets(FaultKind::TokenExpired));
    let (result, steps) = h.publish(&account, &plan(&["hi"], XMedia::None)).await;
    let err = result.unwrap_err();
    assert!(matches!(err, PlatformError::TokenExpired(_)), "{err:?}");
    assert!(err.invalidates_token());
    assert_eq!(steps["final_started"], true);
    assert!(step_ids(&steps, "post").is_empty());
    assert!(h.sim.state().published(Some("x"), None).is_empty());
}

#[actix_web::test]
async fn revoked_token() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    set_fault(
        &h.sim,
        &account,
        FaultSpec {
            error: Some(FaultKind::TokenRevoked),
            ..FaultSpec::default()
        },
    );
    let image = h.media("sample.jpg").await;
    let (result, steps) = h
        .publish(&account, &plan(&["hi"], XMedia::Images(vec![image])))
        .await;
    let err = result.unwrap_err();
    assert!(matches!(err, PlatformError::TokenInvalid(_)), "{err:?}");
    // Refused at the first media call: nothing irreversible was started.
    assert_eq!(steps["final_started"], false);
    assert!(h.sim.state().published(Some("x"), None).is_empty());
}

#[actix_web::test]
async fn rate_limit_gives_retry_after_from_reset_header() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    set_fault(&h.sim, &account, error_on_tweets(FaultKind::RateLimit));
    let (result, _) = h.publish(&account, &plan(&["hi"], XMedia::None)).await;
    match result.unwrap_err() {
        PlatformError::RateLimited { retry_after, .. } => {
            assert!((895..=900).contains(&retry_after), "{retry_after}")
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
    assert!(h.sim.state().published(Some("x"), None).is_empty());
}

#[actix_web::test]
async fn permission_missing() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    set_fault(
        &h.sim,
        &account,
        FaultSpec {
            error: Some(FaultKind::Permission),
            path_contains: Some("/media/upload".into()),
            ..FaultSpec::default()
        },
    );
    let video = h.media("sample.mp4").await;
    let (result, steps) = h
        .publish(&account, &plan(&["hi"], XMedia::Video(video)))
        .await;
    assert!(matches!(result.unwrap_err(), PlatformError::Permission(_)));
    assert_eq!(steps["final_started"], false);
    assert!(h.sim.state().published(Some("x"), None).is_empty());
}

#[actix_web::test]
async fn server_error_is_transient() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    set_fault(&h.sim, &account, error_on_tweets(FaultKind::ServerError));
    let (result, _) = h.publish(&account, &plan(&["hi"], XMedia::None)).await;
    let err = result.unwrap_err();
    assert!(matches!(err, PlatformError::Transient(_)), "{err:?}");
    assert!(h.sim.state().published(Some("x"), None).is_empty());
}

#[actix_web::test]
async fn duplicate_content_is_rejected() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    let post = plan(&["same words"], XMedia::None);
    h.publish(&account, &post).await.0.unwrap();
    let (result, _) = h.publish(&account, &post).await;
    match result.unwrap_err() {
        PlatformError::Rejected(message) => assert!(message.contains("duplicate content")),
        other => panic!("expected Rejected, got {other:?}"),
    }
    assert_eq!(
        h.sim
            .state()
            .published(Some("x"), Some(&account.external_id))
            .len(),
        1
    );
}

#[actix_web::test]
async fn video_still_processing_at_the_deadline_is_pending() {
    let mut h = Harness::start().await;
    h.config.processing_timeout_secs = 1;
    let account = h.account("x", "Handle");
    set_fault(
        &h.sim,
        &account,
        FaultSpec {
            processing: Processing::Never,
            ..FaultSpec::default()
        },
    );
    let video = h.media("sample.mp4").await;
    let (result, steps) = h
        .publish(&account, &plan(&["hi"], XMedia::Video(video)))
        .await;
    // Not a failure: the media may still finish, and then the tweet is ours to make.
    let media_id = step_ids(&steps, "media").remove(0);
    match result {
        Err(PlatformError::StillProcessing(pending)) => assert_eq!(
            *pending,
            Pending::XMedia {
                media_id: media_id.clone(),
                media_ids: vec![media_id],
                tweets: vec!["hi".into()],
            }
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(steps["final_started"], false);
    assert!(h.sim.state().published(Some("x"), None).is_empty());
}

#[actix_web::test]
async fn video_processing_failure() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    set_fault(
        &h.sim,
        &account,
        FaultSpec {
            processing: Processing::Fail,
            ..FaultSpec::default()
        },
    );
    let video = h.media("sample.mp4").await;
    let (result, steps) = h
        .publish(&account, &plan(&["hi"], XMedia::Video(video)))
        .await;
    match result.unwrap_err() {
        PlatformError::ProcessingFailed(message) => {
            assert!(message.contains("Unsupported video format"), "{message}")
        }
        other => panic!("expected ProcessingFailed, got {other:?}"),
    }
    assert_eq!(step_ids(&steps, "media").len(), 1);
    assert!(h.sim.state().published(Some("x"), None).is_empty());
}

#[actix_web::test]
async fn thread_failing_midway_keeps_published_ids_in_steps() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    let (result, steps) = {
        // The second tweet collides with an earlier post of the account.
        h.publish(&account, &plan(&["second"], XMedia::None))
            .await
            .0
            .unwrap();
        h.publish(&account, &plan(&["first", "second", "third"], XMedia::None))
            .await
    };
    assert!(matches!(result.unwrap_err(), PlatformError::Rejected(_)));
    let posted = step_ids(&steps, "post");
    assert_eq!(posted.len(), 1);
    assert_eq!(
        h.sim
            .state()
            .published_item(&posted[0])
            .unwrap()
            .text
            .as_deref(),
        Some("first")
    );
}

// ---------------------------------------------------------------------------------------------
// The simulator's X API on its own

fn x_url(h: &Harness, path: &str) -> String {
    format!("{}/x{path}", h.sim.base_url)
}

#[actix_web::test]
async fn sim_tweet_answers_201_with_rate_limit_headers() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    let response = h
        .http
        .post(x_url(&h, "/2/tweets"))
        .bearer_auth(&account.access_token)
        .json(&json!({"text": "direct"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let headers = response.headers().clone();
    assert_eq!(headers["x-rate-limit-limit"], "100");
    assert_eq!(headers["x-rate-limit-remaining"], "99");
    let reset: i64 = headers["x-rate-limit-reset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(reset > chrono::Utc::now().timestamp());
    let body: Value = response.json().await.unwrap();
    let id = body["data"]["id"].as_str().unwrap();
    assert_eq!(body["data"]["text"], "direct");
    assert_eq!(body["data"]["edit_history_tweet_ids"], json!([id]));

    // Read back, then delete.
    let read: Value = h
        .http
        .get(x_url(&h, &format!("/2/tweets/{id}")))
        .bearer_auth(&account.access_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(read["data"]["text"], "direct");
    let deleted: Value = h
        .http
        .delete(x_url(&h, &format!("/2/tweets/{id}")))
        .bearer_auth(&account.access_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(deleted["data"]["deleted"], true);
}

#[actix_web::test]
async fn sim_rejects_unknown_media_long_text_and_missing_token() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    let post = |body: Value| {
        h.http
            .post(x_url(&h, "/2/tweets"))
            .bearer_auth(&account.access_token)
            .json(&body)
            .send()
    };
    let response = post(json!({"text": "x", "media": {"media_ids": ["123"]}}))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert!(body["type"].as_str().unwrap().ends_with("/invalid-request"));
    assert_eq!(
        body["errors"][0]["parameters"]["media.media_ids"],
        json!(["123"])
    );

    let response = post(json!({"text": "a".repeat(281)})).await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let response = post(json!({"text": "é".repeat(280)})).await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);

    let response = post(json!({"text": "reply", "reply": {"in_reply_to_tweet_id": "42"}}))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);

    let response = h
        .http
        .post(x_url(&h, "/2/tweets"))
        .json(&json!({"text": "no token"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["title"], "Unauthorized");
    assert_eq!(body["type"], "about:blank");
    // Unknown media and long text are business answers; the missing token is a violation.
    assert_eq!(h.take_violation_rules(), ["missing_token"]);
}

#[actix_web::test]
async fn sim_rate_limit_fault_has_headers() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    set_fault(&h.sim, &account, error_on_tweets(FaultKind::RateLimit));
    let response = h
        .http
        .post(x_url(&h, "/2/tweets"))
        .bearer_auth(&account.access_token)
        .json(&json!({"text": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(response.headers()["x-rate-limit-remaining"], "0");
    assert!(response.headers().contains_key("x-rate-limit-limit"));
    let reset: i64 = response.headers()["x-rate-limit-reset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(reset >= chrono::Utc::now().timestamp() + 890);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["title"], "Too Many Requests");
    assert_eq!(body["status"], 429);
}

#[actix_web::test]
async fn sim_upload_sizes_and_command_style() {
    let h = Harness::start().await;
    let account = h.account("x", "Handle");
    let token = account.access_token.clone();

    // An image over 5 MB is refused at initialize.
    let response = h
        .http
        .post(x_url(&h, "/2/media/upload/initialize"))
        .bearer_auth(&token)
        .json(&json!({"media_type": "image/png", "total_bytes": 6_000_000, "media_category": "tweet_image"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(response.headers()["x-rate-limit-limit"], "1875");

    // Command-style INIT (urlencoded), APPEND (JSON base64), FINALIZE (query only).
    let init: Value = h
        .http
        .post(x_url(&h, "/2/media/upload"))
        .bearer_auth(&token)
        .form(&[
            ("command", "INIT"),
            ("media_type", "image/jpeg"),
            ("total_bytes", "4"),
            ("media_category", "tweet_image"),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = init["data"]["id"].as_str().unwrap().to_string();
    assert!(
        init["data"]["media_key"]
            .as_str()
            .unwrap()
            .starts_with("3_")
    );

    // Finalizing early: the size does not match.
    let early = h
        .http
        .post(x_url(&h, &format!("/2/media/upload/{id}/finalize")))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(early.status(), StatusCode::BAD_REQUEST);

    let append = h
        .http
        .post(x_url(&h, "/2/media/upload"))
        .bearer_auth(&token)
        .json(
            &json!({"command": "APPEND", "media_id": id, "segment_index": 0, "media": "/9j/4A=="}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(append.status(), StatusCode::OK);
    let finalized: Value = h
        .http
        .post(x_url(&h, "/2/media/upload"))
        .query(&[("command", "FINALIZE"), ("media_id", id.as_str())])
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(finalized["data"]["size"], 4);
    assert!(finalized["data"].get("processing_info").is_none());

    // One-shot multipart image upload.
    let boundary = "b0undary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"media_category\"\r\n\r\ntweet_image\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"media\"; filename=\"a.png\"\r\n\r\n"
    )
    .into_bytes();
    // The content holds a line that merely looks like a delimiter.
    let content = b"\x89PNG\r\n\x1a\n\r\n--not-the-boundary";
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let one_shot: Value = h
        .http
        .post(x_url(&h, "/2/media/upload"))
        .bearer_auth(&token)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let shot_id = one_shot["data"]["id"].as_str().unwrap().to_string();
    assert_eq!(one_shot["data"]["size"], content.len());

    // Both uploads can go on a post.
    let response = h
        .http
        .post(x_url(&h, "/2/tweets"))
        .bearer_auth(&token)
        .json(&json!({"text": "two", "media": {"media_ids": [id, shot_id]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    // Finalizing before the bytes were appended.
    assert_eq!(h.take_violation_rules(), ["invalid_request"]);
}
