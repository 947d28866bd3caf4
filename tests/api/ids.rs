//! Ids a client sends for a platform object: a value that fits no id grammar of the account's
//! platform is answered `404 Post not found` without any platform call (it never becomes part
//! of a platform URL), and a well-formed id the platform does not know is the platform's "no
//! such object", a 404 too, never a 500.

use serde_json::{Value, json};

use crate::helpers::{Publisher, TestApp, status_and_json};

const PLATFORMS: [&str; 5] = ["facebook", "instagram", "threads", "tiktok", "youtube"];

/// `GET /api/performance/post/{raw}` where `raw` is put in the path as given (already
/// percent-encoded where it needs to be).
async fn post_read(app: &TestApp, publisher: &Publisher, raw: &str) -> (u16, Value) {
    let path = format!(
        "/api/performance/post/{raw}?account_id={}&platform={}",
        publisher.account.id, publisher.account.platform
    );
    let response = app
        .http
        .get(app.url(&path))
        .header("service-api-key", &publisher.key)
        .send()
        .await
        .unwrap();
    status_and_json(response).await
}

fn post_not_found() -> (u16, Value) {
    (404, json!({"success": false, "error": "Post not found"}))
}

/// Hostile post ids, as they appear in the request path.
fn hostile_ids() -> Vec<(&'static str, String)> {
    vec![
        // The reported one: decoded, it walked the Graph host to the identity provider.
        (
            "traversal to another path",
            "..%2F..%2F..%2F..%2Foidc%2F.well-known%2Fopenid-configuration".into(),
        ),
        ("traversal with dots only", "..%2F..".into()),
        ("dot segment inside", "1%2F..%2F2".into()),
        ("an edge of the object", "1%2Finsights".into()),
        ("an encoded slash", "1755847768034402%2F1".into()),
        ("a query", "1%3Ffields%3Daccess_token".into()),
        ("a query after a page post", "1_2%3Faccess_token%3Dx".into()),
        ("a fragment", "1%23x".into()),
        ("a semicolon", "1%3Bx".into()),
        ("a comma (two ids)", "1%2C2".into()),
        ("spaces", "1%20%202".into()),
        ("a newline", "1%0A".into()),
        ("a NUL", "1%00".into()),
        ("a percent", "1%25".into()),
        ("full-width digits", "%EF%BC%91%EF%BC%92%EF%BC%93".into()),
        ("a right-to-left override", "%E2%80%AE12345678901".into()),
        ("an accented letter", "abcdefghij%C3%A9".into()),
        ("an alias", "me".into()),
        ("a negative number", "-1".into()),
        ("overlong digits", "1".repeat(300)),
        ("overlong letters", "a".repeat(2000)),
    ]
}

/// A well-formed id of another platform's grammar.
fn foreign_id(platform: &str) -> &'static str {
    match platform {
        "youtube" => "1755847768034402",
        _ => "dQw4w9WgXcQ",
    }
}

#[actix_rt::test]
async fn ids_outside_the_platforms_grammar_are_not_found_without_any_platform_call() {
    let app = TestApp::spawn().await;
    let state = app.sim.state();
    for platform in PLATFORMS {
        let publisher = app.publisher(platform, "pro").await;
        let external_id = &publisher.sim.external_id;
        let account_calls = state.request_count(platform, external_id);
        let received = state.received_count();
        let mut cases = hostile_ids();
        cases.push(("another platform's id", foreign_id(platform).into()));
        for (case, raw) in cases {
            assert_eq!(
                post_read(&app, &publisher, &raw).await,
                post_not_found(),
                "{platform}: {case}"
            );
        }
        // Nothing reached the simulator: neither the account's API nor any other path.
        assert_eq!(
            state.request_count(platform, external_id),
            account_calls,
            "{platform}"
        );
        assert_eq!(state.received_count(), received, "{platform}");
    }
}

#[actix_rt::test]
async fn well_formed_ids_the_platform_does_not_know_are_not_found() {
    let app = TestApp::spawn().await;
    let state = app.sim.state();
    for platform in PLATFORMS {
        let publisher = app.publisher(platform, "pro").await;
        let external_id = &publisher.sim.external_id;
        let unknown: Vec<String> = match platform {
            // A page post of this page, and a bare photo/video id.
            "facebook" => vec![format!("{external_id}_1"), "1".into()],
            "youtube" => vec!["AAAAAAAAAAA".into(), "a-b_c-d_e-f".into()],
            "tiktok" => vec!["7000000000000000001".into()],
            _ => vec!["1".into(), "17841400000000000000".into()],
        };
        for id in unknown {
            let before = state.request_count(platform, external_id);
            assert_eq!(
                post_read(&app, &publisher, &id).await,
                post_not_found(),
                "{platform}: {id}"
            );
            // The platform was asked, and its "no such object" is what the client hears.
            assert!(
                state.request_count(platform, external_id) > before,
                "{platform}: {id}"
            );
        }
        // A post that exists is still read: the refusals above are about the ids alone.
        let (status, posts) = post_read_list(&app, &publisher).await;
        assert_eq!(status, 200, "{platform}: {posts}");
        let first = match platform {
            "facebook" => &posts["posts"][0]["post_id"],
            "instagram" => &posts["data"]["media"][0]["media_id"],
            "threads" => &posts["data"]["threads"][0]["id"],
            _ => &posts["data"]["videos"][0]["video_id"],
        };
        let (status, body) = post_read(&app, &publisher, first.as_str().unwrap()).await;
        assert_eq!((status, &body["success"]), (200, &json!(true)), "{body}");
    }
}

async fn post_read_list(app: &TestApp, publisher: &Publisher) -> (u16, Value) {
    let path = format!(
        "/api/performance/posts?account_id={}&limit=1",
        publisher.account.id
    );
    let response = app
        .http
        .get(app.url(&path))
        .header("service-api-key", &publisher.key)
        .send()
        .await
        .unwrap();
    status_and_json(response).await
}

/// The simulator says "no such object" the way each platform does, so the mapping above is
/// tested against the real wire forms.
#[actix_rt::test]
async fn the_simulator_answers_unknown_ids_like_the_platforms() {
    let app = TestApp::spawn().await;
    let state = app.sim.state();
    let base = &app.sim.base_url;
    for (platform, mount, kind) in [
        ("facebook", "graph/v24.0", "GraphMethodException"),
        ("instagram", "graph/v24.0", "IGApiException"),
        ("threads", "threads/v1.0", "THApiException"),
    ] {
        let account = state.create_account(platform, "unknown ids", None);
        let token = state.issue_token(platform, &account.external_id).unwrap();
        let response = app
            .http
            .get(format!("{base}/{mount}/1?fields=id"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        let error = &body["error"];
        assert_eq!(status, 400, "{platform}: {body}");
        assert_eq!(
            (&error["code"], &error["error_subcode"], &error["type"]),
            (&json!(100), &json!(33), &json!(kind)),
            "{platform}: {body}"
        );
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .starts_with("Unsupported get request. Object with ID '1' does not exist"),
            "{platform}: {body}"
        );
    }
    // YouTube lists no item for an unknown id; TikTok queries find no video.
    let channel = state.create_account("youtube", "unknown ids", None);
    let token = state.issue_token("youtube", &channel.external_id).unwrap();
    let response = app
        .http
        .get(format!("{base}/youtube/youtube/v3/videos"))
        .query(&[("part", "snippet"), ("id", "AAAAAAAAAAA")])
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!((status, &body["items"]), (200, &json!([])), "{body}");
    let creator = state.create_account("tiktok", "unknown ids", None);
    let token = state.issue_token("tiktok", &creator.external_id).unwrap();
    let response = app
        .http
        .post(format!("{base}/tiktok/v2/video/query/"))
        .query(&[("fields", "id,title")])
        .bearer_auth(&token)
        .json(&json!({"filters": {"video_ids": ["7000000000000000001"]}}))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(
        (status, &body["data"]["videos"], &body["error"]["code"]),
        (200, &json!([]), &json!("ok")),
        "{body}"
    );
}
