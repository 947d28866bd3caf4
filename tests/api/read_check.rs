//! The full read check: for each platform with insights, an account connected through the real
//! OAuth flow (so its token carries only the scopes our connect flow asks for, and the simulator
//! enforces them) answers every performance read and one daily snapshot with 200 and no failed
//! metric. The simulator's violation log must end empty (`TestApp`'s `Drop`), so no read broke the
//! platform's protocol on the way.

use serde_json::Value;

use crate::helpers::{OPERATOR_TOKEN, TestApp, status_and_json};

/// Where each platform's post list keeps the id of its first post.
fn first_post_id(platform: &str, posts: &Value) -> String {
    let id = match platform {
        "facebook" => &posts["posts"][0]["post_id"],
        "instagram" => &posts["data"]["media"][0]["media_id"],
        "threads" => &posts["data"]["threads"][0]["id"],
        _ => &posts["data"]["videos"][0]["video_id"],
    };
    id.as_str()
        .unwrap_or_else(|| panic!("{platform}: no post in {posts}"))
        .to_string()
}

/// Every value under a `metrics` or `page_metrics` object, at any depth: none may be null
/// (a metric we could not read is listed in `failed_metrics`, and there must be none here).
fn null_metrics(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let here = format!("{path}.{key}");
                if (key == "metrics" || key == "page_metrics")
                    && let Some(metrics) = inner.as_object()
                {
                    for (name, metric) in metrics {
                        if metric.is_null() {
                            found.push(format!("{here}.{name}"));
                        }
                    }
                }
                null_metrics(inner, &here, found);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                null_metrics(item, &format!("{path}[{index}]"), found);
            }
        }
        _ => {}
    }
}

fn assert_fully_read(what: &str, body: &Value) {
    let failed = body.get("failed_metrics").cloned().unwrap_or(Value::Null);
    assert!(
        failed.is_null() || failed.as_array().is_some_and(|f| f.is_empty()),
        "{what}: failed metrics {failed} in {body}"
    );
    let mut nulls = Vec::new();
    null_metrics(body, "", &mut nulls);
    assert!(nulls.is_empty(), "{what}: null metrics {nulls:?} in {body}");
}

/// Connects `platform` through `/api/connect/{platform}{extra}` as a new user on Pro, then
/// reads metrics, account, posts, post/{id} and collects yesterday's snapshot.
async fn read_check(platform: &str, connect_query: &str) {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in(&format!("{platform}@example.com")).await;
    assert_eq!(app.set_plan(dashboard.user_id, "pro").await.status(), 200);
    let (key, _) = app.create_key(&dashboard, "reads").await;
    let response = dashboard
        .client
        .get(app.url(&format!(
            "/api/connect/{platform}?login_hint=Reader{connect_query}"
        )))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{platform} connect: {body}");
    let accounts = body["accounts"].as_array().unwrap();
    assert_eq!(accounts.len(), 1, "{body}");
    let account_id = accounts[0]["account_id"].as_str().unwrap().to_string();

    let get = async |endpoint: &str, extra: &str| {
        let path = format!(
            "/api/performance/{endpoint}?account_id={account_id}&platform={platform}{extra}"
        );
        let response = app
            .http
            .get(app.url(&path))
            .header("service-api-key", &key)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(body["success"], true, "{path}: {body}");
        assert_fully_read(&path, &body);
        body
    };
    get("metrics", "").await;
    get("account", "&since=2026-11-01&until=2026-11-07").await;
    let posts = get("posts", "&limit=5").await;
    let post_id = first_post_id(platform, &posts);
    get(&format!("post/{post_id}"), "").await;

    let response = app
        .http
        .post(app.url(&format!(
            "/api/cron/collect-performance?account_id={account_id}"
        )))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{platform} collection: {body}");
    let outcomes = body["results"]["accounts"].as_array().unwrap();
    assert_eq!(outcomes.len(), 1, "{body}");
    let outcome = &outcomes[0];
    assert_eq!(outcome["status"], "success", "{platform}: {outcome}");
    assert!(
        !outcome["data"]["page_metrics"]
            .as_object()
            .unwrap()
            .is_empty(),
        "{outcome}"
    );
    assert_fully_read("snapshot", &outcome["data"]);
    assert!(outcome["data"]["total_post_views"].is_u64(), "{outcome}");
}

#[actix_rt::test]
async fn facebook_reads_fully_with_the_scopes_we_ask_for() {
    read_check("facebook", "").await;
}

#[actix_rt::test]
async fn instagram_through_facebook_login_reads_fully_with_the_scopes_we_ask_for() {
    read_check("instagram", "").await;
}

#[actix_rt::test]
async fn threads_reads_fully_with_the_scopes_we_ask_for() {
    read_check("threads", "").await;
}

#[actix_rt::test]
async fn tiktok_reads_fully_with_the_scopes_we_ask_for() {
    read_check("tiktok", "").await;
}

#[actix_rt::test]
async fn youtube_reads_fully_with_the_scopes_we_ask_for() {
    read_check("youtube", "").await;
}

#[actix_rt::test]
async fn instagram_through_instagram_login_reads_fully_with_the_scopes_we_ask_for() {
    read_check("instagram", "&via=instagram_login").await;
}
