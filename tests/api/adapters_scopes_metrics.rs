//! What our YouTube, X and TikTok adapters do when the platform refuses a call for want of a
//! scope (InsufficientPermissions naming the scope the call needs, not a bare "Forbidden"), and
//! when TikTok leaves a metric out (null and listed in `failed_metrics`, never 0).

use serde_json::{Value, json};
use service_sim::state::FaultSpec;

use crate::helpers::{Publisher, TestApp, status_and_json};

/// Gives the publisher's simulator token only `scopes`, as if the user had granted no more;
/// its refresh token grants the same to the tokens it brings.
fn grant_only(app: &TestApp, publisher: &Publisher, scopes: &[&str]) {
    let state = app.sim.state();
    state.grant_scopes(
        &publisher.sim.access_token,
        scopes.iter().map(|s| s.to_string()).collect(),
    );
    // TikTok writes scope lists with commas, Google and X with spaces.
    let separator = if publisher.account.platform == social_service::domain::plan::Platform::Tiktok
    {
        ","
    } else {
        " "
    };
    let refresh = format!("refresh:{}", publisher.sim.refresh_token);
    if let Some(mut object) = state.objects.get_mut(&refresh) {
        object.data = json!({ "scope": scopes.join(separator) });
    }
}

async fn performance(app: &TestApp, p: &Publisher, endpoint: &str) -> (u16, Value) {
    let path = format!(
        "/api/performance/{endpoint}?account_id={}&platform={}&since=2026-11-01&until=2026-11-07",
        p.account.id, p.account.platform
    );
    let response = app
        .http
        .get(app.url(&path))
        .header("service-api-key", &p.key)
        .send()
        .await
        .unwrap();
    status_and_json(response).await
}

#[actix_rt::test]
async fn a_publish_refused_for_a_scope_is_insufficient_permissions_naming_it() {
    let app = TestApp::spawn().await;
    let mp4 = app.media_url("sample.mp4");
    let cases = [
        (
            "youtube",
            // Reading and reports, but not uploading.
            vec![
                "https://www.googleapis.com/auth/youtube.readonly",
                "https://www.googleapis.com/auth/yt-analytics.readonly",
            ],
            json!({"text": "A title", "mediaUrls": [mp4]}),
            "https://www.googleapis.com/auth/youtube.upload",
            "missing_scope",
        ),
        (
            "x",
            vec!["tweet.read", "users.read", "media.write", "offline.access"],
            json!({"text": "hello"}),
            "tweet.write",
            "missing_scope",
        ),
        (
            "tiktok",
            // Drafts only: no direct posting.
            vec!["user.info.basic", "video.upload", "video.list"],
            json!({"text": "A video", "mediaUrls": [mp4]}),
            "video.publish",
            "scope_not_authorized",
        ),
    ];
    for (platform, scopes, content, needed, rule) in cases {
        let publisher = app.publisher(platform, "ultra").await;
        grant_only(&app, &publisher, &scopes);
        let (status, body) = app.post(&publisher.key, &publisher.body(content)).await;
        assert_eq!(status, 403, "{platform}: {body}");
        assert_eq!(
            body["error"], "InsufficientPermissions",
            "{platform}: {body}"
        );
        assert!(
            body.to_string().contains(needed),
            "{platform} should name {needed}: {body}"
        );
        assert_eq!(app.published(&publisher.sim).len(), 0, "{platform}");
        assert_eq!(app.take_violation_rules(), [rule], "{platform}");
    }
}

/// Connects `platform` as `person`, the person granting only `grant` on the consent screen.
async fn connect_granting(
    app: &TestApp,
    platform: &str,
    person: &str,
    grant: &str,
) -> (u16, Value) {
    let dashboard = app.sign_in(&format!("{person}@example.com")).await;
    let response = dashboard
        .no_redirect
        .get(app.url(&format!("/api/connect/{platform}?login_hint={person}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 302);
    let mut authorize = url::Url::parse(response.headers()["location"].to_str().unwrap()).unwrap();
    authorize.query_pairs_mut().append_pair("grant", grant);
    let response = dashboard.no_redirect.get(authorize).send().await.unwrap();
    assert_eq!(response.status(), 302, "the simulator redirects back");
    let callback = response.headers()["location"].to_str().unwrap().to_string();
    let (status, body) =
        status_and_json(dashboard.client.get(&callback).send().await.unwrap()).await;
    let listed: Value = dashboard
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["accounts"], json!([]), "nothing connected: {listed}");
    (status, body)
}

#[actix_rt::test]
async fn a_connection_missing_a_scope_we_need_is_refused_naming_it() {
    let app = TestApp::spawn().await;
    for (platform, grant, named) in [
        (
            "youtube",
            "https://www.googleapis.com/auth/youtube.upload",
            "https://www.googleapis.com/auth/youtube.readonly, \
             https://www.googleapis.com/auth/yt-analytics.readonly",
        ),
        (
            "x",
            "tweet.read users.read offline.access",
            "tweet.write, media.write",
        ),
        (
            "tiktok",
            "user.info.basic,user.info.profile,user.info.stats,video.list,video.upload",
            "video.publish",
        ),
    ] {
        let person = format!("Una{platform}");
        let (status, body) = connect_granting(&app, platform, &person, grant).await;
        assert_eq!(status, 400, "{platform}: {body}");
        assert_eq!(body["error"], "ConnectionFailed", "{platform}: {body}");
        assert!(
            body.to_string().contains(named),
            "{platform} should name {named}: {body}"
        );
    }
}

#[actix_rt::test]
async fn youtube_insights_without_a_read_scope_name_the_one_needed() {
    let app = TestApp::spawn().await;
    let channel = app.publisher("youtube", "pro").await;
    // Uploads only: neither the channel nor its reports may be read (reports.query takes any
    // of youtube, youtube.readonly, yt-analytics.readonly… per its discovery entry).
    grant_only(
        &app,
        &channel,
        &["https://www.googleapis.com/auth/youtube.upload"],
    );
    let (status, body) = performance(&app, &channel, "account").await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.to_string()
            .contains("https://www.googleapis.com/auth/youtube.readonly"),
        "{body}"
    );
    assert_eq!(app.take_violation_rules(), ["missing_scope"]);
}

#[actix_rt::test]
async fn a_tiktok_metric_the_platform_left_out_is_null_and_failed_never_zero() {
    let app = TestApp::spawn().await;
    let creator = app.publisher("tiktok", "pro").await;
    // Two published videos to have video metrics.
    let mp4 = app.media_url("sample.mp4");
    for text in ["one", "two"] {
        let (status, body) = app
            .post(
                &creator.key,
                &creator.body(json!({"text": text, "mediaUrls": [mp4]})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    app.sim.state().set_faults(
        "tiktok",
        &creator.sim.external_id,
        FaultSpec {
            fail_metrics: vec!["follower_count".into(), "like_count".into()],
            ..FaultSpec::default()
        },
    );
    let (status, account) = performance(&app, &creator, "account").await;
    assert_eq!(status, 200, "{account}");
    let metrics = &account["data"]["metrics"];
    assert_eq!(
        metrics.get("follower_count"),
        Some(&Value::Null),
        "{account}"
    );
    assert!(metrics["video_count"].is_u64(), "{account}");
    let failed: Vec<&str> = account["failed_metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["metric"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["follower_count"], "{account}");

    let (status, posts) = performance(&app, &creator, "posts").await;
    assert_eq!(status, 200, "{posts}");
    let videos = posts["data"]["videos"].as_array().unwrap();
    assert!(!videos.is_empty(), "{posts}");
    for video in videos {
        assert_eq!(
            video["metrics"].get("like_count"),
            Some(&Value::Null),
            "{video}"
        );
        assert!(video["metrics"]["view_count"].is_u64(), "{video}");
    }
    // Listed once however many videos lack it.
    let failed: Vec<&str> = posts["failed_metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["metric"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["like_count"], "{posts}");
}
