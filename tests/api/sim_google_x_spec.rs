//! The simulator refuses what YouTube, YouTube Analytics, X and TikTok refuse, as the specs
//! say (`sim/src/spec/`): an unknown or badly typed parameter, a value outside its enum or
//! bounds, a missing required parameter, a body field the schema lacks and a token without the
//! scope the call needs. Each answers the platform's own error and is recorded as a violation.
//! Google and X tokens carry the scopes their authorization granted, also after a refresh.

use reqwest::redirect::Policy;
use serde_json::{Value, json};

use crate::helpers::{CLIENT_ID, CLIENT_SECRET, TestApp, status_and_json};

const YT_UPLOAD: &str = "https://www.googleapis.com/auth/youtube.upload";
const YT_READONLY: &str = "https://www.googleapis.com/auth/youtube.readonly";
const YT_ANALYTICS: &str = "https://www.googleapis.com/auth/yt-analytics.readonly";

async fn get(app: &TestApp, token: &str, path: &str) -> (u16, Value) {
    let url = format!("{}{path}", app.sim.base_url);
    status_and_json(app.http.get(url).bearer_auth(token).send().await.unwrap()).await
}

async fn post_json(app: &TestApp, token: &str, path: &str, body: Value) -> (u16, Value) {
    let url = format!("{}{path}", app.sim.base_url);
    let response = app
        .http
        .post(url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    status_and_json(response).await
}

/// The single `errors[]` item of a Google error, after checking the envelope.
fn google_item(status: u16, body: &Value, code: u16) -> &Value {
    assert_eq!(status, code, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(
        body["error"]["errors"].as_array().map(Vec::len),
        Some(1),
        "{body}"
    );
    &body["error"]["errors"][0]
}

fn scoped(app: &TestApp, token: &str, scopes: &[&str]) {
    app.sim
        .state()
        .grant_scopes(token, scopes.iter().map(|s| s.to_string()).collect());
}

#[actix_rt::test]
async fn youtube_data_api_refuses_what_the_discovery_document_does_not_allow() {
    let app = TestApp::spawn().await;
    let channel = app
        .sim
        .state()
        .create_account("youtube", "Spec Channel", Some("spec"));
    let token = &channel.access_token;

    // Well-formed: answered.
    let (status, body) = get(
        &app,
        token,
        "/youtube/youtube/v3/videos?part=status&id=nope",
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let cases: [(&str, &str, &str, &str); 6] = [
        // A name videos.list does not take.
        (
            "/youtube/youtube/v3/videos?part=status&id=a&colour=red",
            "badRequest",
            "colour",
            "unknown_parameter",
        ),
        // `chart` is an enum.
        (
            "/youtube/youtube/v3/videos?part=status&chart=trending",
            "invalidParameter",
            "chart",
            "invalid_enum",
        ),
        // `maxResults` is an integer of 1..=50.
        (
            "/youtube/youtube/v3/playlistItems?part=snippet&playlistId=x&maxResults=many",
            "invalidParameter",
            "maxResults",
            "invalid_type",
        ),
        (
            "/youtube/youtube/v3/playlistItems?part=snippet&playlistId=x&maxResults=51",
            "invalidParameter",
            "maxResults",
            "out_of_range",
        ),
        // `part` is required.
        (
            "/youtube/youtube/v3/videos?id=a",
            "required",
            "part",
            "missing_parameter",
        ),
        // A part the Video resource does not have.
        (
            "/youtube/youtube/v3/videos?part=status,analytics&id=a",
            "unknownPart",
            "part",
            "invalid_enum",
        ),
    ];
    let mut expected = Vec::new();
    for (path, reason, location, rule) in cases {
        let (status, body) = get(&app, token, path).await;
        let item = google_item(status, &body, 400);
        assert_eq!(item["reason"], reason, "{path}: {body}");
        assert_eq!(item["location"], location, "{path}: {body}");
        assert_eq!(item["locationType"], "parameter", "{path}: {body}");
        expected.push(rule);
    }
    let (_, body) = get(&app, token, "/youtube/youtube/v3/videos?id=a").await;
    assert_eq!(body["error"]["message"], "Required parameter: part");
    expected.push("missing_parameter");

    // A metadata field the Video schema does not have (a misspelt `title`).
    let url = format!(
        "{}/youtube/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status",
        app.sim.base_url
    );
    let response = app
        .http
        .post(&url)
        .bearer_auth(token)
        .json(&json!({"snippet": {"titel": "Hello"}, "status": {"privacyStatus": "private"}}))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    let item = google_item(status, &body, 400);
    assert_eq!(item["reason"], "badRequest", "{body}");
    assert_eq!(
        item["message"],
        "Invalid JSON payload received. Unknown name \"titel\" at 'resource.snippet': Cannot find field."
    );
    expected.push("unknown_field");

    // A token granted only the Analytics scope may not list videos nor upload.
    scoped(&app, token, &[YT_ANALYTICS]);
    let (status, body) = get(&app, token, "/youtube/youtube/v3/videos?part=status&id=a").await;
    let item = google_item(status, &body, 403);
    assert_eq!(item["reason"], "insufficientPermissions", "{body}");
    assert_eq!(
        body["error"]["message"],
        "Request had insufficient authentication scopes."
    );
    let response = app
        .http
        .post(&url)
        .bearer_auth(token)
        .json(&json!({"snippet": {"title": "Hello"}}))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(
        google_item(status, &body, 403)["reason"],
        "insufficientPermissions"
    );
    expected.extend(["missing_scope", "missing_scope"]);
    // Any one of the method's scopes suffices: youtube.readonly lists.
    scoped(&app, token, &[YT_READONLY]);
    let (status, body) = get(&app, token, "/youtube/youtube/v3/videos?part=status&id=a").await;
    assert_eq!(status, 200, "{body}");

    assert_eq!(app.take_violation_rules(), expected);
}

#[actix_rt::test]
async fn youtube_analytics_refuses_badly_typed_parameters_and_a_token_without_its_scope() {
    let app = TestApp::spawn().await;
    let channel = app
        .sim
        .state()
        .create_account("youtube", "Report Channel", Some("report"));
    let token = &channel.access_token;
    let reports = |query: &str| {
        format!(
            "/youtubeanalytics/v2/reports?ids=channel%3D%3DMINE&startDate=2026-11-01&endDate=2026-11-07&metrics=views{query}"
        )
    };
    let (status, body) = get(&app, token, &reports("")).await;
    assert_eq!(status, 200, "{body}");
    for (query, location, rule) in [
        ("&maxResults=ten", "maxResults", "invalid_type"),
        (
            "&includeHistoricalChannelData=perhaps",
            "includeHistoricalChannelData",
            "invalid_type",
        ),
        ("&alt=xml", "alt", "invalid_enum"),
        ("&dimension=day", "dimension", "unknown_parameter"),
    ] {
        let (status, body) = get(&app, token, &reports(query)).await;
        let item = google_item(status, &body, 400);
        assert_eq!(item["location"], location, "{query}: {body}");
        assert_eq!(item["domain"], "global", "{query}: {body}");
        assert_eq!(app.take_violation_rules(), [rule], "{query}");
    }
    let (status, body) = get(
        &app,
        token,
        "/youtubeanalytics/v2/reports?ids=channel%3D%3DMINE&startDate=2026-11-01&endDate=2026-11-07",
    )
    .await;
    assert_eq!(google_item(status, &body, 400)["reason"], "required");
    assert_eq!(app.take_violation_rules(), ["missing_parameter"]);

    // youtube.upload does not read reports.
    scoped(&app, token, &[YT_UPLOAD]);
    let (status, body) = get(&app, token, &reports("")).await;
    assert_eq!(
        google_item(status, &body, 403)["reason"],
        "insufficientPermissions"
    );
    assert_eq!(app.take_violation_rules(), ["missing_scope"]);
}

#[actix_rt::test]
async fn x_refuses_what_the_openapi_documents_do_not_allow() {
    let app = TestApp::spawn().await;
    let user = app
        .sim
        .state()
        .create_account("x", "Spec User", Some("spec"));
    let token = &user.access_token;
    let (status, body) = post_json(&app, token, "/x/2/tweets", json!({"text": "first"})).await;
    assert_eq!(status, 201, "{body}");
    let id = body["data"]["id"].as_str().unwrap().to_string();

    // Either version's name for the post fields is accepted, item by item.
    for name in ["tweet.fields", "post.fields"] {
        let (status, body) = get(
            &app,
            token,
            &format!("/x/2/tweets/{id}?{name}=public_metrics,created_at"),
        )
        .await;
        assert_eq!(status, 200, "{name}: {body}");
    }
    let invalid = |status: u16, body: &Value, parameter: &str| {
        assert_eq!(status, 400, "{body}");
        assert_eq!(
            body["type"], "https://api.x.com/2/problems/invalid-request",
            "{body}"
        );
        assert_eq!(body["title"], "Invalid Request", "{body}");
        assert!(
            body["errors"][0]["parameters"].get(parameter).is_some(),
            "{parameter}: {body}"
        );
        body["errors"][0]["message"].as_str().unwrap().to_string()
    };
    let (status, body) = get(
        &app,
        token,
        &format!("/x/2/tweets/{id}?tweet.fields=id,view_count"),
    )
    .await;
    let message = invalid(status, &body, "tweet.fields");
    assert!(
        message
            .starts_with("The `tweet.fields` query parameter value [view_count] is not one of ["),
        "{message}"
    );
    let (status, body) = get(&app, token, &format!("/x/2/tweets/{id}?fields=id")).await;
    let message = invalid(status, &body, "fields");
    assert!(
        message.starts_with("The query parameter [fields] is not one of ["),
        "{message}"
    );
    let (status, body) = get(&app, token, "/x/2/media/upload?command=STATUS").await;
    let message = invalid(status, &body, "media_id");
    assert_eq!(message, "The `media_id` query parameter can not be empty");
    let (status, body) = get(&app, token, "/x/2/media/upload?command=CHECK&media_id=1").await;
    invalid(status, &body, "command");
    assert_eq!(
        app.take_violation_rules(),
        [
            "invalid_enum",
            "unknown_parameter",
            "missing_parameter",
            "invalid_enum"
        ]
    );

    // A body property CreatePostsRequest does not have, at the top or nested.
    for body in [
        json!({"text": "hi", "reply_to": "1"}),
        json!({"text": "hi", "media": {"media_ids": ["1"], "alt_text": "x"}}),
    ] {
        let (status, answer) = post_json(&app, token, "/x/2/tweets", body).await;
        assert_eq!(status, 400, "{answer}");
        let message = answer["errors"][0]["message"].as_str().unwrap();
        assert!(
            message.ends_with(
                "is not defined in the schema and the schema does not allow additional properties"
            ),
            "{message}"
        );
    }
    assert_eq!(app.take_violation_rules(), ["unknown_field"; 2]);

    // Posting needs tweet.write besides tweet.read and users.read; uploading needs media.write.
    scoped(&app, token, &["tweet.read", "users.read"]);
    let (status, body) = post_json(&app, token, "/x/2/tweets", json!({"text": "second"})).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["title"], "Forbidden", "{body}");
    let (status, _) = post_json(
        &app,
        token,
        "/x/2/media/upload/initialize",
        json!({"media_type": "image/png", "total_bytes": 10, "media_category": "tweet_image"}),
    )
    .await;
    assert_eq!(status, 403);
    // users/me is allowed with exactly those two.
    let (status, body) = get(&app, token, "/x/2/users/me").await;
    assert_eq!(status, 200, "{body}");
    scoped(&app, token, &["tweet.read"]);
    let (status, _) = get(&app, token, "/x/2/users/me").await;
    assert_eq!(status, 403);
    assert_eq!(app.take_violation_rules(), ["missing_scope"; 3]);
}

#[actix_rt::test]
async fn tiktok_refuses_each_endpoint_without_its_documented_scope_and_bad_parameters() {
    let app = TestApp::spawn().await;
    let creator = app
        .sim
        .state()
        .create_account("tiktok", "Spec Creator", Some("spec"));
    let token = &creator.access_token;
    // Display scopes only: no posting endpoint answers.
    scoped(&app, token, &["user.info.basic", "video.list"]);
    for (path, body) in [
        ("/tiktok/v2/post/publish/creator_info/query/", json!({})),
        (
            "/tiktok/v2/post/publish/video/init/",
            json!({"post_info": {"title": "t", "privacy_level": "SELF_ONLY"},
                   "source_info": {"source": "PULL_FROM_URL", "video_url": "https://example.com/v.mp4"}}),
        ),
        (
            "/tiktok/v2/post/publish/inbox/video/init/",
            json!({"source_info": {"source": "PULL_FROM_URL", "video_url": "https://example.com/v.mp4"}}),
        ),
        (
            "/tiktok/v2/post/publish/status/fetch/",
            json!({"publish_id": "v_pub_url~1"}),
        ),
    ] {
        let (status, answer) = post_json(&app, token, path, body).await;
        assert_eq!(status, 401, "{path}: {answer}");
        assert_eq!(answer["error"]["code"], "scope_not_authorized", "{path}");
    }
    assert_eq!(app.take_violation_rules(), ["scope_not_authorized"; 4]);
    // An upload-only token may send photos to the inbox but not post them directly.
    scoped(&app, token, &["video.upload"]);
    let photos = |mode: &str| {
        json!({"media_type": "PHOTO", "post_mode": mode,
               "post_info": {"title": "t", "privacy_level": "SELF_ONLY"},
               "source_info": {"source": "PULL_FROM_URL", "photo_images": ["https://example.com/1.jpg"], "photo_cover_index": 0}})
    };
    let (status, answer) = post_json(
        &app,
        token,
        "/tiktok/v2/post/publish/content/init/",
        photos("DIRECT_POST"),
    )
    .await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(answer["error"]["code"], "scope_not_authorized");
    assert_eq!(app.take_violation_rules(), ["scope_not_authorized"]);

    // Display API: an unknown field, a missing `fields`, a bad enum, a badly typed count.
    scoped(
        &app,
        token,
        &["user.info.basic", "video.list", "video.upload"],
    );
    for (path, body) in [
        (
            "/tiktok/v2/video/list/?fields=id,colour",
            json!({"max_count": 5}),
        ),
        ("/tiktok/v2/video/list/", json!({"max_count": 5})),
        (
            "/tiktok/v2/video/list/?fields=id",
            json!({"max_count": "five"}),
        ),
        (
            "/tiktok/v2/post/publish/content/init/",
            json!({"media_type": "PHOTO", "post_mode": "LATER"}),
        ),
    ] {
        let (status, answer) = post_json(&app, token, path, body).await;
        assert_eq!(status, 400, "{path}: {answer}");
        assert_eq!(
            answer["error"]["code"], "invalid_params",
            "{path}: {answer}"
        );
    }
    assert_eq!(app.take_violation_rules(), ["invalid_params"; 4]);
}

/// Drives a platform's authorize page on the simulator and returns the code.
async fn authorize(app: &TestApp, platform: &str, scope: &str, person: &str) -> String {
    let client = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap();
    let response = client
        .get(format!("{}/oauth/{platform}/authorize", app.sim.base_url))
        .query(&[
            ("client_id", CLIENT_ID),
            ("redirect_uri", "http://localhost/callback"),
            ("response_type", "code"),
            ("scope", scope),
            ("state", "s"),
            ("login_hint", person),
            (
                "code_challenge",
                "verifier-verifier-verifier-verifier-verifier",
            ),
            ("code_challenge_method", "plain"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 302);
    let location = response.headers()["location"].to_str().unwrap().to_string();
    let url = url::Url::parse(&location).unwrap();
    url.query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .unwrap()
}

async fn token(app: &TestApp, platform: &str, form: &[(&str, &str)]) -> Value {
    let response = app
        .http
        .post(format!("{}/{platform}", app.sim.base_url))
        .basic_auth(CLIENT_ID, Some(CLIENT_SECRET))
        .form(form)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[actix_rt::test]
async fn google_and_x_tokens_carry_the_granted_scopes_across_a_refresh() {
    let app = TestApp::spawn().await;
    let verifier = "verifier-verifier-verifier-verifier-verifier";

    // Google: an authorization for uploads only.
    let code = authorize(&app, "google", YT_UPLOAD, "Gina").await;
    let granted = token(
        &app,
        "oauth/google/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "http://localhost/callback"),
            ("code_verifier", verifier),
        ],
    )
    .await;
    assert_eq!(granted["scope"], YT_UPLOAD, "{granted}");
    let refreshed = token(
        &app,
        "oauth/google/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", granted["refresh_token"].as_str().unwrap()),
        ],
    )
    .await;
    assert_eq!(refreshed["scope"], YT_UPLOAD, "{refreshed}");
    for access in [&granted["access_token"], &refreshed["access_token"]] {
        let (status, body) = get(
            &app,
            access.as_str().unwrap(),
            "/youtube/youtube/v3/channels?part=id&mine=true",
        )
        .await;
        assert_eq!(status, 403, "{body}");
    }
    assert_eq!(app.take_violation_rules(), ["missing_scope"; 2]);

    // X: reading only, with a refresh token (offline.access); the refresh keeps the scopes.
    let code = authorize(&app, "x", "tweet.read users.read offline.access", "Xavier").await;
    let granted = token(
        &app,
        "x/2/oauth2/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "http://localhost/callback"),
            ("code_verifier", verifier),
        ],
    )
    .await;
    assert_eq!(granted["scope"], "tweet.read users.read offline.access");
    let refreshed = token(
        &app,
        "x/2/oauth2/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", granted["refresh_token"].as_str().unwrap()),
        ],
    )
    .await;
    let access = refreshed["access_token"].as_str().unwrap();
    let (status, _) = get(&app, access, "/x/2/users/me").await;
    assert_eq!(status, 200);
    let (status, _) = post_json(&app, access, "/x/2/tweets", json!({"text": "hello"})).await;
    assert_eq!(status, 403);
    assert_eq!(app.take_violation_rules(), ["missing_scope"]);

    // Without offline.access X issues no refresh token.
    let code = authorize(&app, "x", "tweet.read users.read", "Xena").await;
    let granted = token(
        &app,
        "x/2/oauth2/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "http://localhost/callback"),
            ("code_verifier", verifier),
        ],
    )
    .await;
    assert!(granted.get("refresh_token").is_none(), "{granted}");
}

/// `GET /2/users/{id}/tweets` lists a user's posts newest first as X does: default fields
/// only unless `tweet.fields` asks, text escaped, replies left out on request, pages of
/// `max_results` with a `next_token`, and `max_results` held to the spec's 5..=100.
#[actix_rt::test]
async fn x_lists_a_users_posts_newest_first_in_pages() {
    let app = TestApp::spawn().await;
    let user = app
        .sim
        .state()
        .create_account("x", "Listed User", Some("listed"));
    let token = &user.access_token;
    let mut ids = Vec::new();
    for text in ["one", "two & <three>", "four", "five", "six", "seven"] {
        let (status, body) = post_json(&app, token, "/x/2/tweets", json!({"text": text})).await;
        assert_eq!(status, 201, "{body}");
        ids.push(body["data"]["id"].as_str().unwrap().to_string());
    }
    let reply = json!({"text": "a reply", "reply": {"in_reply_to_tweet_id": ids[0]}});
    let (status, body) = post_json(&app, token, "/x/2/tweets", reply).await;
    assert_eq!(status, 201, "{body}");
    let listing = format!("/x/2/users/{}/tweets", user.external_id);

    let (status, body) = get(&app, token, &listing).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["meta"]["result_count"], 7, "{body}");
    assert_eq!(body["data"][0]["text"], "a reply", "newest first: {body}");
    assert!(body["data"][0].get("created_at").is_none(), "{body}");
    assert_eq!(body["data"][5]["text"], "two &amp; &lt;three&gt;");

    let query = "?exclude=replies&max_results=5&tweet.fields=created_at";
    let (status, first) = get(&app, token, &format!("{listing}{query}")).await;
    assert_eq!(status, 200, "{first}");
    let texts = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["text"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        texts(&first),
        ["seven", "six", "five", "four", "two &amp; &lt;three&gt;"]
    );
    assert!(first["data"][0]["created_at"].is_string(), "{first}");
    assert_eq!(first["meta"]["newest_id"], ids[5].as_str());
    let token_param = first["meta"]["next_token"].as_str().unwrap();
    let (status, second) = get(
        &app,
        token,
        &format!("{listing}{query}&pagination_token={token_param}"),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(texts(&second), ["one"]);
    assert!(second["meta"].get("next_token").is_none(), "{second}");

    // An hour from now: nothing yet.
    let later = (chrono::Utc::now() + chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let (status, body) = get(&app, token, &format!("{listing}?start_time={later}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"meta": {"result_count": 0}}));

    let (status, body) = get(&app, token, &format!("{listing}?max_results=101")).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["errors"][0]["parameters"].get("max_results").is_some(),
        "{body}"
    );
    assert_eq!(app.take_violation_rules().len(), 1);
}
