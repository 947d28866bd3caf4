//! The performance bodies field by field against spec §4.4–4.7 (and our documented shapes for
//! tiktok and the single threads/youtube items), per-metric failures, and determinism.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use service_sim::state::FaultSpec;

use crate::helpers::{Publisher, TestApp, status_and_json};

async fn get(app: &TestApp, p: &Publisher, endpoint: &str, extra: &str) -> Value {
    let path = format!(
        "/api/performance/{endpoint}?account_id={}&platform={}{extra}",
        p.account.id, p.account.platform
    );
    let response = app
        .http
        .get(app.url(&path))
        .header("service-api-key", &p.key)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{path}: {body}");
    // Every body read here is also checked against the committed document's schema.
    if let Some(documented) = documented_path(endpoint) {
        crate::openapi::assert_documented("get", documented, 200, &body);
    }
    body
}

/// The document's path of a performance endpoint read here.
fn documented_path(endpoint: &str) -> Option<&'static str> {
    match endpoint {
        "metrics" => Some("/api/performance/metrics"),
        "account" => Some("/api/performance/account"),
        "posts" => Some("/api/performance/posts"),
        _ if endpoint.starts_with("post/") => Some("/api/performance/post/{post_id}"),
        _ => None,
    }
}

fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .cloned()
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

const RANGE: &str = "&since=2026-11-01&until=2026-11-07";

#[actix_rt::test]
async fn facebook_bodies_match_the_spec() {
    let app = TestApp::spawn().await;
    let page = app.publisher("facebook", "pro").await;
    let account = get(&app, &page, "account", RANGE).await;
    assert_eq!(
        keys(&account),
        set(&[
            "success",
            "account_id",
            "page_name",
            "platform",
            "page_id",
            "data",
            "failed_metrics"
        ])
    );
    assert_eq!(account["page_id"], page.sim.external_id);
    let data = &account["data"];
    assert_eq!(
        keys(data),
        set(&[
            "page_id",
            "platform",
            "data_type",
            "period",
            "date_range",
            "metrics",
            "time_series"
        ])
    );
    assert_eq!(data["data_type"], "page");
    assert_eq!(data["period"], "day");
    assert_eq!(
        data["date_range"],
        json!({"start": "2026-11-01", "end": "2026-11-07"})
    );
    let metrics = set(&[
        "page_media_view",
        "page_post_engagements",
        "page_total_actions",
    ]);
    assert_eq!(keys(&data["metrics"]), metrics, "never a deprecated metric");
    assert_eq!(keys(&data["time_series"]), metrics);
    let series = data["time_series"]["page_media_view"].as_array().unwrap();
    assert_eq!(series.len(), 7, "one point per day of the range");
    assert_eq!(series[0]["date"], "2026-11-01");
    assert_eq!(series[6]["date"], "2026-11-07");
    let sum: u64 = series.iter().map(|p| p["value"].as_u64().unwrap()).sum();
    assert_eq!(data["metrics"]["page_media_view"], sum);

    let posts = get(&app, &page, "posts", "&limit=4").await;
    assert_eq!(
        keys(&posts),
        set(&[
            "success",
            "account_id",
            "page_name",
            "platform",
            "total_posts",
            "posts",
            "failed_metrics"
        ])
    );
    assert_eq!(posts["total_posts"], 4);
    for post in posts["posts"].as_array().unwrap() {
        assert_eq!(
            keys(post),
            set(&[
                "post_id",
                "message",
                "created_time",
                "reactions",
                "comments",
                "shares",
                "insights"
            ])
        );
        assert!(post["reactions"].is_u64() && post["comments"].is_u64() && post["shares"].is_u64());
        assert_eq!(
            keys(&post["insights"]["metrics"]),
            set(&["post_media_view"])
        );
    }
    let first = posts["posts"][0]["post_id"].as_str().unwrap();
    let one = get(&app, &page, &format!("post/{first}"), "").await;
    assert_eq!(
        keys(&one),
        set(&[
            "success",
            "account_id",
            "page_name",
            "platform",
            "post",
            "failed_metrics"
        ])
    );
    assert_eq!(
        one["post"], posts["posts"][0],
        "the same post, the same numbers"
    );
    // Deterministic: asked again, the same answer.
    assert_eq!(get(&app, &page, "account", RANGE).await, account);
}

#[actix_rt::test]
async fn instagram_bodies_match_the_spec() {
    let app = TestApp::spawn().await;
    let ig = app.publisher("instagram", "pro").await;
    let account = get(&app, &ig, "account", RANGE).await;
    assert_eq!(
        keys(&account),
        set(&[
            "success",
            "account_id",
            "ig_username",
            "platform",
            "ig_account_id",
            "data",
            "failed_metrics"
        ])
    );
    let data = &account["data"];
    assert_eq!(
        keys(data),
        set(&[
            "ig_account_id",
            "platform",
            "data_type",
            "period",
            "date_range",
            "metrics",
            "time_series"
        ])
    );
    assert!(data["ig_account_id"].is_u64(), "a number: {data}");
    assert_eq!(data["data_type"], "account");
    assert_eq!(
        keys(&data["metrics"]),
        set(&["reach", "follower_count", "profile_views", "website_clicks"])
    );
    let posts = get(&app, &ig, "posts", "").await;
    assert_eq!(
        keys(&posts),
        set(&[
            "success",
            "account_id",
            "ig_username",
            "platform",
            "data",
            "failed_metrics"
        ])
    );
    assert_eq!(keys(&posts["data"]), set(&["media", "total"]));
    let media = posts["data"]["media"].as_array().unwrap();
    assert_eq!(posts["data"]["total"], media.len());
    let mut types = BTreeSet::new();
    for item in media {
        assert_eq!(
            keys(item),
            set(&[
                "media_id",
                "caption",
                "media_type",
                "permalink",
                "timestamp",
                "like_count",
                "comments_count",
                "insights"
            ])
        );
        assert_eq!(item["insights"]["platform"], "instagram");
        assert_eq!(item["insights"]["data_type"], "media");
        let kind = item["media_type"].as_str().unwrap();
        types.insert(kind.to_string());
        let expected = if kind == "REELS" {
            set(&[
                "reach",
                "total_interactions",
                "likes",
                "comments",
                "shares",
                "saved",
                "ig_reels_avg_watch_time",
                "ig_reels_video_view_total_time",
            ])
        } else {
            set(&["reach", "total_interactions"])
        };
        assert_eq!(keys(&item["insights"]["metrics"]), expected, "{kind}");
    }
    assert!(
        types.contains("REELS") && types.contains("IMAGE") && types.contains("CAROUSEL_ALBUM"),
        "{types:?}"
    );
    let reel = media.iter().find(|m| m["media_type"] == "REELS").unwrap();
    let one = get(
        &app,
        &ig,
        &format!("post/{}", reel["media_id"].as_str().unwrap()),
        "",
    )
    .await;
    assert_eq!(
        keys(&one),
        set(&[
            "success",
            "account_id",
            "ig_username",
            "platform",
            "data",
            "failed_metrics"
        ])
    );
    assert_eq!(
        one["data"],
        json!({"platform": "instagram", "data_type": "media", "metrics": reel["insights"]["metrics"]})
    );
}

#[actix_rt::test]
async fn threads_bodies_match_the_spec() {
    let app = TestApp::spawn().await;
    let threads = app.publisher("threads", "pro").await;
    let account = get(&app, &threads, "account", RANGE).await;
    assert_eq!(keys(&account), set(&["success", "data", "failed_metrics"]));
    let data = &account["data"];
    assert_eq!(
        keys(data),
        set(&[
            "account_id",
            "account_name",
            "platform",
            "views",
            "raw_data"
        ])
    );
    let raw = data["raw_data"].as_array().unwrap();
    let names: BTreeSet<String> = raw
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        set(&[
            "views",
            "likes",
            "replies",
            "reposts",
            "quotes",
            "followers_count"
        ])
    );
    for entry in raw {
        if entry["name"] == "views" {
            assert_eq!(
                keys(entry),
                set(&["name", "description", "period", "values"])
            );
            let values = entry["values"].as_array().unwrap();
            assert_eq!(values.len(), 7);
            assert_eq!(keys(&values[0]), set(&["end_time", "value"]));
            let sum: u64 = values.iter().map(|v| v["value"].as_u64().unwrap()).sum();
            assert_eq!(data["views"], sum);
        } else {
            assert_eq!(
                keys(entry),
                set(&["name", "description", "total_value"]),
                "{entry}"
            );
            assert!(entry["total_value"]["value"].is_u64());
        }
    }
    let posts = get(&app, &threads, "posts", "&limit=3").await;
    let data = &posts["data"];
    assert_eq!(
        keys(data),
        set(&["account_id", "account_name", "platform", "count", "threads"])
    );
    assert_eq!(data["count"], 3);
    for thread in data["threads"].as_array().unwrap() {
        assert_eq!(
            keys(thread),
            set(&[
                "id",
                "text",
                "timestamp",
                "media_type",
                "permalink",
                "is_reply",
                "insights"
            ])
        );
        assert_eq!(
            keys(&thread["insights"]),
            set(&["views", "likes", "replies", "reposts", "quotes"])
        );
    }
    let first = &data["threads"][0];
    let one = get(
        &app,
        &threads,
        &format!("post/{}", first["id"].as_str().unwrap()),
        "",
    )
    .await;
    assert_eq!(
        keys(&one["data"]),
        set(&["account_id", "account_name", "platform", "thread"])
    );
    assert_eq!(&one["data"]["thread"], first);
}

#[actix_rt::test]
async fn youtube_and_tiktok_bodies_match_our_documented_shapes() {
    let app = TestApp::spawn().await;
    let channel = app.publisher("youtube", "pro").await;
    let account = get(&app, &channel, "account", RANGE).await;
    let data = &account["data"];
    assert_eq!(
        keys(data),
        set(&[
            "account_id",
            "account_name",
            "platform",
            "channel_id",
            "date_range",
            "metrics"
        ])
    );
    assert_eq!(data["channel_id"], channel.sim.external_id);
    assert_eq!(
        keys(&data["metrics"]),
        set(&[
            "views",
            "likes",
            "comments",
            "shares",
            "estimatedMinutesWatched",
            "averageViewDuration",
            "subscribersGained",
            "subscribersLost"
        ])
    );
    let posts = get(&app, &channel, "posts", "&limit=2").await;
    let data = &posts["data"];
    assert_eq!(
        keys(data),
        set(&["account_id", "account_name", "platform", "count", "videos"])
    );
    let video_metrics = set(&[
        "views",
        "likes",
        "comments",
        "shares",
        "estimatedMinutesWatched",
        "averageViewDuration",
    ]);
    for video in data["videos"].as_array().unwrap() {
        assert_eq!(
            keys(video),
            set(&["video_id", "title", "published_at", "thumbnail", "metrics"])
        );
        assert_eq!(keys(&video["metrics"]), video_metrics);
    }
    let first = &data["videos"][0];
    let one = get(
        &app,
        &channel,
        &format!("post/{}", first["video_id"].as_str().unwrap()),
        "",
    )
    .await;
    assert_eq!(
        keys(&one["data"]),
        set(&["account_id", "account_name", "platform", "video"])
    );
    assert_eq!(one["data"]["video"]["video_id"], first["video_id"]);
    assert_eq!(keys(&one["data"]["video"]["metrics"]), video_metrics);

    let tiktok = app.publisher("tiktok", "pro").await;
    let account = get(&app, &tiktok, "account", "").await;
    assert_eq!(
        keys(&account["data"]),
        set(&[
            "account_id",
            "account_name",
            "platform",
            "username",
            "as_of",
            "metrics"
        ])
    );
    assert_eq!(
        keys(&account["data"]["metrics"]),
        set(&[
            "follower_count",
            "following_count",
            "likes_count",
            "video_count"
        ])
    );
    let posts = get(&app, &tiktok, "posts", "&limit=2").await;
    for video in posts["data"]["videos"].as_array().unwrap() {
        assert_eq!(
            keys(video),
            set(&[
                "video_id",
                "title",
                "published_at",
                "thumbnail",
                "share_url",
                "metrics"
            ])
        );
        assert_eq!(
            keys(&video["metrics"]),
            set(&["view_count", "like_count", "comment_count", "share_count"])
        );
    }
}

#[actix_rt::test]
async fn a_failing_metric_is_named_and_the_rest_still_returns() {
    let app = TestApp::spawn().await;
    let fail = |metrics: &[&str]| FaultSpec {
        fail_metrics: metrics.iter().map(|m| m.to_string()).collect(),
        ..FaultSpec::default()
    };
    let state = app.sim.state();
    let page = app.publisher("facebook", "pro").await;
    state.set_faults(
        "facebook",
        &page.sim.external_id,
        fail(&["page_total_actions"]),
    );
    let account = get(&app, &page, "account", RANGE).await;
    // A failed metric is null (unknown), never a number, and has no time series.
    let metrics = &account["data"]["metrics"];
    assert_eq!(
        keys(metrics),
        set(&[
            "page_media_view",
            "page_post_engagements",
            "page_total_actions"
        ])
    );
    assert_eq!(metrics["page_total_actions"], Value::Null);
    assert!(metrics["page_media_view"].is_u64() && metrics["page_post_engagements"].is_u64());
    assert!(
        account["data"]["time_series"]
            .get("page_total_actions")
            .is_none()
    );
    let failed = account["failed_metrics"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{account}");
    assert_eq!(failed[0]["metric"], "page_total_actions");
    assert!(
        failed[0]["error"]
            .as_str()
            .unwrap()
            .contains("valid insights metric")
    );

    // A post metric refused: the posts still come, without that number.
    state.set_faults(
        "facebook",
        &page.sim.external_id,
        fail(&["post_media_view"]),
    );
    let posts = get(&app, &page, "posts", "&limit=2").await;
    assert_eq!(posts["total_posts"], 2);
    assert_eq!(posts["failed_metrics"][0]["metric"], "post_media_view");
    assert_eq!(
        posts["posts"][0]["insights"]["metrics"],
        json!({"post_media_view": null})
    );

    let channel = app.publisher("youtube", "pro").await;
    state.set_faults("youtube", &channel.sim.external_id, fail(&["shares"]));
    let account = get(&app, &channel, "account", RANGE).await;
    assert_eq!(account["data"]["metrics"].get("shares"), Some(&Value::Null));
    assert_eq!(account["data"]["metrics"].as_object().unwrap().len(), 8);
    assert!(account["data"]["metrics"]["views"].is_u64());
    assert_eq!(account["failed_metrics"][0]["metric"], "shares");

    let ig = app.publisher("instagram", "pro").await;
    state.set_faults(
        "instagram",
        &ig.sim.external_id,
        fail(&["total_interactions"]),
    );
    let posts = get(&app, &ig, "posts", "&limit=3").await;
    for item in posts["data"]["media"].as_array().unwrap() {
        assert!(item["insights"]["metrics"]["reach"].is_u64(), "{item}");
        assert_eq!(
            item["insights"]["metrics"].get("total_interactions"),
            Some(&Value::Null),
            "{item}"
        );
    }
    assert_eq!(
        posts["failed_metrics"],
        json!([{"metric": "total_interactions", "error": posts["failed_metrics"][0]["error"]}])
    );
}

#[actix_rt::test]
async fn a_failed_video_metric_is_null_never_zero() {
    let app = TestApp::spawn().await;
    let channel = app.publisher("youtube", "pro").await;
    app.sim.state().set_faults(
        "youtube",
        &channel.sim.external_id,
        FaultSpec {
            fail_metrics: vec!["likes".into()],
            ..FaultSpec::default()
        },
    );
    let posts = get(&app, &channel, "posts", "&limit=3").await;
    let videos = posts["data"]["videos"].as_array().unwrap();
    assert_eq!(videos.len(), 3, "{posts}");
    for video in videos {
        let metrics = &video["metrics"];
        assert_eq!(metrics.get("likes"), Some(&Value::Null), "{video}");
        for metric in [
            "views",
            "comments",
            "shares",
            "estimatedMinutesWatched",
            "averageViewDuration",
        ] {
            assert!(metrics[metric].is_u64(), "{metric}: {video}");
        }
        assert!(metrics["views"].as_u64().unwrap() > 0, "{video}");
    }
    let failed = posts["failed_metrics"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{posts}");
    assert_eq!(failed[0]["metric"], "likes");

    // Instagram account metrics asked as totals fail the same way.
    let ig = app.publisher("instagram", "pro").await;
    app.sim.state().set_faults(
        "instagram",
        &ig.sim.external_id,
        FaultSpec {
            fail_metrics: vec!["website_clicks".into()],
            ..FaultSpec::default()
        },
    );
    let account = get(&app, &ig, "account", RANGE).await;
    let metrics = &account["data"]["metrics"];
    assert_eq!(
        metrics.get("website_clicks"),
        Some(&Value::Null),
        "{account}"
    );
    assert!(metrics["profile_views"].is_u64(), "{account}");
    assert!(metrics["reach"].is_u64() && metrics["follower_count"].is_u64());
    assert_eq!(account["failed_metrics"][0]["metric"], "website_clicks");
    assert_eq!(account["failed_metrics"].as_array().unwrap().len(), 1);
}

#[actix_rt::test]
async fn youtube_video_metrics_come_from_one_top_videos_report() {
    let app = TestApp::spawn().await;
    let channel = app.publisher("youtube", "pro").await;
    let state = app.sim.state();
    let calls = || state.request_count("youtube", &channel.sim.external_id);

    let before = calls();
    let posts = get(&app, &channel, "posts", "&limit=3").await;
    // Channel, uploads playlist, one analytics report: no per-metric retries.
    assert_eq!(calls() - before, 3, "{posts}");
    assert_eq!(posts["failed_metrics"], json!([]), "{posts}");
    let videos = posts["data"]["videos"].as_array().unwrap();
    assert_eq!(videos.len(), 3);
    for video in videos {
        let metrics = &video["metrics"];
        assert_eq!(keys(metrics).len(), 6, "{video}");
        for (name, value) in metrics.as_object().unwrap() {
            assert!(value.is_u64(), "{name}: {video}");
        }
        // Seeded videos are days old: their views over that range are not zero.
        assert!(metrics["views"].as_u64().unwrap() > 0, "{video}");
        assert!(
            metrics["estimatedMinutesWatched"].as_u64().unwrap() > 0,
            "{video}"
        );
    }
    // Deterministic: the same question, the same numbers.
    assert_eq!(get(&app, &channel, "posts", "&limit=3").await, posts);

    let first = videos[0]["video_id"].as_str().unwrap();
    let before = calls();
    let one = get(&app, &channel, &format!("post/{first}"), "").await;
    // videos.list, then one report.
    assert_eq!(calls() - before, 2, "{one}");
    assert_eq!(one["failed_metrics"], json!([]), "{one}");
    assert_eq!(one["data"]["video"]["video_id"], first);
    assert!(
        one["data"]["video"]["metrics"]["views"].as_u64().unwrap() > 0,
        "{one}"
    );
}

#[actix_rt::test]
async fn instagram_account_insights_answer_every_metric() {
    let app = TestApp::spawn().await;
    let ig = app.publisher("instagram", "pro").await;
    let state = app.sim.state();
    let before = state.request_count("instagram", &ig.sim.external_id);
    let account = get(&app, &ig, "account", RANGE).await;
    // The time series, then the totals: two calls, nothing refused.
    assert_eq!(
        state.request_count("instagram", &ig.sim.external_id) - before,
        2,
        "{account}"
    );
    assert_eq!(account["failed_metrics"], json!([]), "{account}");
    let data = &account["data"];
    for metric in ["reach", "follower_count", "profile_views", "website_clicks"] {
        assert!(data["metrics"][metric].is_u64(), "{metric}: {account}");
    }
    // Totals over the range have no daily series; the series metrics have one point a day.
    assert_eq!(
        keys(&data["time_series"]),
        set(&["reach", "follower_count"])
    );
    assert_eq!(data["time_series"]["reach"].as_array().unwrap().len(), 7);
}

/// A raw GET to the simulator with the account's token.
async fn raw_get(app: &TestApp, token: &str, url: String) -> (u16, Value) {
    let response = app.http.get(url).bearer_auth(token).send().await.unwrap();
    status_and_json(response).await
}

#[actix_rt::test]
async fn the_simulator_refuses_reports_google_would_refuse() {
    let app = TestApp::spawn().await;
    let channel = app.publisher("youtube", "pro").await;
    let token = &channel.sim.access_token;
    let reports = |query: &str| {
        format!(
            "{}/youtubeanalytics/v2/reports?ids=channel%3D%3DMINE&startDate=2026-11-01&endDate=2026-11-07{query}",
            app.sim.base_url
        )
    };
    let unsupported = "The query is not supported. Check the documentation at \
        https://developers.google.com/youtube/analytics/v2/available_reports for a list of \
        supported queries.";
    let google = |reason: &str, message: &str| {
        json!({"error": {
            "code": 400,
            "message": message,
            "errors": [{"message": message, "domain": "global", "reason": reason}],
            "status": "INVALID_ARGUMENT",
        }})
    };
    // The top-videos report without its row limit and descending sort, or with a limit over
    // 200 or an ascending sort.
    for query in [
        "&metrics=views&dimensions=video",
        "&metrics=views&dimensions=video&maxResults=10",
        "&metrics=views&dimensions=video&sort=-views",
        "&metrics=views&dimensions=video&maxResults=201&sort=-views",
        "&metrics=views,likes&dimensions=video&maxResults=10&sort=views",
        "&metrics=views&dimensions=video&maxResults=10&sort=-likes",
    ] {
        let (status, body) = raw_get(&app, token, reports(query)).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(body, google("badRequest", unsupported), "{query}");
    }
    // A parameter the discovery document does not list, and a missing required one: Google
    // names the parameter in `location`.
    let located = |reason: &str, message: &str, location: &str| {
        let mut body = google(reason, message);
        body["error"]["errors"][0]["location"] = json!(location);
        body["error"]["errors"][0]["locationType"] = json!("parameter");
        body
    };
    let (status, body) = raw_get(&app, token, reports("&metrics=views&max-results=10")).await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        located(
            "badRequest",
            "Invalid JSON payload received. Unknown name \"max-results\": Cannot bind query \
             parameter. Field 'max-results' could not be found in request message.",
            "max-results"
        )
    );
    let (status, body) = raw_get(
        &app,
        token,
        format!(
            "{}/youtubeanalytics/v2/reports?ids=channel%3D%3DMINE&startDate=2026-11-01&metrics=views",
            app.sim.base_url
        ),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        located(
            "required",
            "Required value for parameter endDate is missing.",
            "endDate"
        )
    );
    // Asked as the report requires: the top videos, most viewed first, at most maxResults.
    let (status, body) = raw_get(
        &app,
        token,
        reports("&metrics=views,likes&dimensions=video&maxResults=2&sort=-views"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let rows = body["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{body}");
    assert!(
        rows[0][1].as_u64().unwrap() >= rows[1][1].as_u64().unwrap(),
        "{body}"
    );
    // Each refusal was logged as a violation: six unsupported queries, the unknown parameter
    // and the missing one.
    let mut expected = vec!["report_query"; 6];
    expected.extend(["unknown_parameter", "missing_parameter"]);
    assert_eq!(app.take_violation_rules(), expected);
}

#[actix_rt::test]
async fn the_simulator_refuses_instagram_totals_asked_as_series() {
    let app = TestApp::spawn().await;
    let ig = app.publisher("instagram", "pro").await;
    let insights = |query: &str| {
        format!(
            "{}/graph/v24.0/{}/insights?period=day&since=1793491200&until=1793750400{query}",
            app.sim.base_url, ig.sim.external_id
        )
    };
    for query in [
        "&metric=reach,profile_views,website_clicks",
        "&metric=reach,profile_views,website_clicks&metric_type=time_series",
    ] {
        let (status, body) = raw_get(&app, &ig.sim.access_token, insights(query)).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(body["error"]["code"], 100, "{body}");
        assert_eq!(body["error"]["type"], "OAuthException", "{body}");
        assert_eq!(
            body["error"]["message"],
            "(#100) The following metrics (profile_views, website_clicks) should be specified \
             with parameter metric_type=total_value",
        );
    }
    let (status, body) = raw_get(
        &app,
        &ig.sim.access_token,
        insights("&metric=profile_views,website_clicks&metric_type=total_value"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for item in body["data"].as_array().unwrap() {
        assert!(item["total_value"]["value"].is_u64(), "{item}");
        assert!(item.get("values").is_none(), "{item}");
    }
    assert_eq!(app.take_violation_rules(), vec!["total_value_required"; 2]);
}

/// Threads lists `is_reply` only on its reply edges (`/replies`, `/conversation`): the
/// simulator refuses it on `/{user}/threads` and `/{media}` as graph.threads.net does, and our
/// reads of a threads account ask only for fields those edges have.
#[actix_rt::test]
async fn threads_reads_ask_each_edge_only_for_its_fields() {
    let app = TestApp::spawn().await;
    let threads = app.publisher("threads", "pro").await;
    let posts = get(&app, &threads, "posts", "&limit=4").await;
    assert_eq!(posts["success"], true, "{posts}");
    assert_eq!(posts["data"]["count"], 4, "{posts}");
    let listed = posts["data"]["threads"].as_array().unwrap();
    assert_eq!(listed.len(), 4);
    for thread in listed {
        // The user's own threads: none of them is a reply.
        assert_eq!(thread["is_reply"], false, "{thread}");
        assert!(thread["insights"]["views"].is_u64(), "{thread}");
    }
    let first = listed[0]["id"].as_str().unwrap();
    let one = get(&app, &threads, &format!("post/{first}"), "").await;
    assert_eq!(one["data"]["thread"]["id"], first);

    // The simulator, asked directly, refuses the field with Threads' error.
    let base = format!("{}/threads/v1.0", app.sim.base_url);
    for path in [
        format!("{}/threads", threads.sim.external_id),
        first.to_string(),
    ] {
        let response = app
            .http
            .get(format!("{base}/{path}"))
            .query(&[("fields", "id,text,is_reply")])
            .bearer_auth(&threads.sim.access_token)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(status, 400, "{path}: {body}");
        let error = &body["error"];
        assert_eq!(
            error["message"],
            "(#100) Tried accessing nonexisting field (is_reply) on node type (ThreadsMedia)",
            "{path}"
        );
        assert_eq!(error["type"], "THApiException");
        assert_eq!(error["code"], 100);
        // The fields the collection lists for these edges are answered.
        let response = app
            .http
            .get(format!("{base}/{path}"))
            .query(&[("fields", "id,text,timestamp,has_replies,is_quote_post")])
            .bearer_auth(&threads.sim.access_token)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    // Only the two direct asks broke the protocol; our own reads did not.
    assert_eq!(app.take_violation_rules(), vec!["unknown_field"; 2]);
}
