//! instagram through Instagram Login: `GET /api/connect/instagram?via=instagram_login` through
//! the OAuth flow against the simulator's Instagram hosts, publishing every instagram post type
//! and reading every performance endpoint on graph.instagram.com, the token refresh at 24 h and
//! not before, and the simulator's refusals on the wrong host.

use chrono::Duration;
use serde_json::{Value, json};
use service_sim::instagram_login;

use crate::helpers::{Background, Dashboard, OPERATOR_TOKEN, TestApp, eventually, status_and_json};

/// The whole browser flow (connect → Instagram's authorize page → callback) for `person`.
async fn connect_via(app: &TestApp, dashboard: &Dashboard, via: &str, person: &str) -> Value {
    let response = dashboard
        .client
        .get(app.url(&format!(
            "/api/connect/instagram?via={via}&login_hint={person}"
        )))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["accounts"].as_array().unwrap().len(), 1, "{body}");
    body["accounts"][0].clone()
}

/// The stored row and its decrypted access token.
async fn stored(app: &TestApp, id: &str) -> (entity::account::Model, String) {
    let row = app
        .state
        .store
        .find_account(id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let token = social_service::tokens::open_access(&app.state.cipher, &row).unwrap();
    (row, token)
}

/// Moves the service's and the simulator's clocks together.
fn set_clocks(app: &TestApp, at: chrono::DateTime<chrono::Utc>) {
    app.clock.set(at);
    instagram_login::set_clock(app.sim.state(), at);
}

fn post(id: &str, content: Value) -> Value {
    let mut content = content;
    content["platform"] = json!("instagram");
    json!({"post": {"accountId": id, "content": content, "target": {"targetType": "instagram"}}})
}

/// A signed-in user on `plan` with a key and an instagram account connected through Instagram
/// Login as `person`: (dashboard, key, account id, the simulator's account).
async fn instagram_login_publisher(
    app: &TestApp,
    person: &str,
) -> (Dashboard, String, String, service_sim::state::SimAccount) {
    let dashboard = app
        .sign_in(&format!("{}@example.com", person.to_lowercase()))
        .await;
    assert_eq!(app.set_plan(dashboard.user_id, "pro").await.status(), 200);
    let (key, _) = app.create_key(&dashboard, "k").await;
    let account = connect_via(app, &dashboard, "instagram_login", person).await;
    let id = account["account_id"].as_str().unwrap().to_string();
    let sim = app.sim.state().account_named("instagram", person).unwrap();
    (dashboard, key, id, sim)
}

/// Publishes a photo, a carousel and a reel (every instagram post type of spec §4.1).
async fn publish_every_type(app: &TestApp, key: &str, id: &str) -> Vec<Value> {
    let jpg = app.media_url("sample.jpg");
    let png = app.media_url("sample.png");
    let mp4 = app.media_url("sample.mp4");
    let mov = app.media_url("sample.mov");
    let mut results = Vec::new();
    for content in [
        json!({"text": "A photo", "mediaUrls": [jpg]}),
        json!({"text": "A carousel", "mediaUrls": [jpg, png, mp4]}),
        json!({"text": "A reel", "mediaUrls": [mov], "coverUrl": png}),
    ] {
        let (status, body) = app.post(key, &post(id, content.clone())).await;
        assert_eq!(status, 200, "{content}: {body}");
        results.push(body["data"].clone());
    }
    results
}

#[actix_rt::test]
async fn connecting_via_instagram_login_lists_the_instagram_fields() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("owner@example.com").await;
    let before = app.clock_now();
    let account = connect_via(&app, &dashboard, "instagram_login", "Olga").await;
    let sim = app.sim.state().account_named("instagram", "Olga").unwrap();
    assert_eq!(account["social_channel_type"], "instagram");
    assert_eq!(account["ig_username"], "olga");
    assert_eq!(account["ig_account_id"], sim.external_id.as_str());
    assert_eq!(account["account_type"], "BUSINESS");
    assert_eq!(account["is_valid"], true);
    // The 60-day token, not the hour-long one the code gave.
    let expires: chrono::DateTime<chrono::Utc> =
        account["expires_at"].as_str().unwrap().parse().unwrap();
    assert!(expires > before + Duration::days(59), "{account}");
    let id = account["account_id"].as_str().unwrap();
    let (row, token) = stored(&app, id).await;
    assert_eq!(row.login_route, entity::account::LoginRoute::InstagramLogin);
    assert_eq!(row.token_issued_at, Some(before));
    let record = instagram_login::token_record(app.sim.state(), &token)
        .expect("an Instagram Login token is stored");
    assert!(record.long_lived);
    // The token carries exactly the scopes the connect flow asked for.
    let state = app.sim.state();
    for scope in [
        instagram_login::BASIC,
        instagram_login::CONTENT_PUBLISH,
        instagram_login::MANAGE_INSIGHTS,
    ] {
        assert!(state.has_scope(&token, scope), "{scope}");
    }
    assert!(!state.has_scope(&token, "instagram_business_manage_messages"));
    // The account list shows it with the §2.2 instagram fields.
    let listed: Value = dashboard
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed = &listed["accounts"][0];
    for field in ["ig_username", "ig_account_id", "account_type", "expires_at"] {
        assert_eq!(listed[field], account[field], "{field}");
    }
}

#[actix_rt::test]
async fn a_bad_via_is_refused_before_any_redirect_and_facebook_login_stays_the_default() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("owner@example.com").await;
    let start = async |query: &str| {
        dashboard
            .no_redirect
            .get(app.url(&format!("/api/connect/instagram{query}")))
            .send()
            .await
            .unwrap()
    };
    for bad in ["?via=instagram", "?via=", "?via=INSTAGRAM_LOGIN"] {
        let response = start(bad).await;
        assert_eq!(response.status(), 400, "{bad}");
        let (_, body) = status_and_json(response).await;
        assert_eq!(body["error"], "InvalidRequest", "{bad}: {body}");
    }
    // `via` is an instagram switch: another platform refuses instagram_login.
    let response = dashboard
        .no_redirect
        .get(app.url("/api/connect/threads?via=instagram_login"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let authorize_of = async |query: &str| {
        let response = start(query).await;
        assert_eq!(response.status(), 302, "{query}");
        response.headers()["location"].to_str().unwrap().to_string()
    };
    let meta = format!("{}/oauth/meta/authorize?", app.sim.base_url);
    assert!(authorize_of("").await.starts_with(&meta));
    assert!(authorize_of("?via=facebook_login").await.starts_with(&meta));
    let instagram = authorize_of("?via=instagram_login").await;
    assert!(
        instagram.starts_with(&format!("{}/oauth/instagram/authorize?", app.sim.base_url)),
        "{instagram}"
    );
    assert!(
        instagram.contains("scope=instagram_business_basic%2Cinstagram_business_content_publish%2Cinstagram_business_manage_insights"),
        "{instagram}"
    );
}

#[actix_rt::test]
async fn every_instagram_post_type_publishes_on_the_instagram_host() {
    let app = TestApp::spawn().await;
    let (_, key, id, sim) = instagram_login_publisher(&app, "Petra").await;
    let calls_before = instagram_login::calls_on_host(app.sim.state(), &sim.external_id);
    let results = publish_every_type(&app, &key, &id).await;
    let types: Vec<&str> = results
        .iter()
        .map(|r| r["post_type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(types, ["photo", "carousel", "reels"], "{results:?}");
    let published = app.published(&sim);
    assert_eq!(published.len(), 3, "{published:?}");
    // Containers, status polls, quota reads and media_publish all went to graph.instagram.com
    // (an Instagram Login token is refused on graph.facebook.com, and no violation was seen).
    let calls = instagram_login::calls_on_host(app.sim.state(), &sim.external_id) - calls_before;
    assert!(calls >= 3 * 3, "{calls} calls on graph.instagram.com");
}

#[actix_rt::test]
async fn the_facebook_login_route_still_connects_and_publishes_on_graph_facebook_com() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("owner@example.com").await;
    app.set_plan(dashboard.user_id, "pro").await;
    let (key, _) = app.create_key(&dashboard, "k").await;
    let account = connect_via(&app, &dashboard, "facebook_login", "Quinn").await;
    let id = account["account_id"].as_str().unwrap();
    let (row, token) = stored(&app, id).await;
    assert_eq!(row.login_route, entity::account::LoginRoute::FacebookLogin);
    assert!(instagram_login::token_record(app.sim.state(), &token).is_none());
    let jpg = app.media_url("sample.jpg");
    let (status, body) = app
        .post(
            &key,
            &post(id, json!({"text": "via facebook", "mediaUrls": [jpg]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let sim = app.sim.state().account_named("instagram", "Quinn").unwrap();
    assert_eq!(app.published(&sim).len(), 1);
    assert_eq!(
        instagram_login::calls_on_host(app.sim.state(), &sim.external_id),
        0
    );
}

fn refresh_at_once(config: &mut social_service::config::Config) {
    config.oauth.refresh_sweep_secs = 1;
    config.auth.session_ttl_hours = 24 * 120;
    // The refresh window opens at once: only the 24 h rule holds the refresh back.
    config.oauth.instagram_login_refresh_days_before = 60;
}

#[actix_rt::test]
async fn the_token_is_refreshed_once_it_is_24_hours_old_and_not_before() {
    let app = TestApp::spawn_with(refresh_at_once).await;
    let (_, key, id, _) = instagram_login_publisher(&app, "Rosa").await;
    let (row, old_token) = stored(&app, &id).await;
    let issued = row.token_issued_at.unwrap();
    let old_expiry = row.token_expires_at.unwrap();
    let jpg = app.media_url("sample.jpg");
    let photo = |text: &str| post(&id, json!({"text": text, "mediaUrls": [jpg]}));
    // 23 h on: two sweeps, no refresh (Meta would refuse it, and the simulator says so).
    let refreshes = app.refresh_outcomes("instagram");
    set_clocks(&app, issued + Duration::hours(23));
    app.wait_two_passes(Background::TokenKeeper).await;
    app.publish_after_any_refresh(&key, &photo("at 23 h")).await;
    // Not even tried: the simulator would have recorded a refresh before 24 h as a violation.
    assert_eq!(
        app.refresh_outcomes("instagram"),
        refreshes,
        "no refresh tried at 23 h"
    );
    crate::helpers::assert_no_violations(&app.sim);
    assert_eq!(
        stored(&app, &id).await.1,
        old_token,
        "not refreshed at 23 h"
    );
    // 24 h on: the next sweep refreshes it through the account's actor.
    set_clocks(&app, issued + Duration::hours(24) + Duration::minutes(1));
    eventually("the instagram login refresh", async || {
        stored(&app, &id).await.1 != old_token
    })
    .await;
    let (row, new_token) = stored(&app, &id).await;
    let record = instagram_login::token_record(app.sim.state(), &new_token).unwrap();
    assert!(record.long_lived);
    assert!(row.token_expires_at.unwrap() > old_expiry + Duration::hours(23));
    assert_eq!(
        row.token_issued_at,
        Some(issued + Duration::hours(24) + Duration::minutes(1))
    );
    assert!(row.is_valid);
    // The refreshed token keeps its scopes: the account still publishes.
    let (status, body) = app.post(&key, &photo("after refresh")).await;
    assert_eq!(status, 200, "{body}");
    // And not again before the new token is 24 h old: two more sweeps.
    app.wait_two_passes(Background::TokenKeeper).await;
    app.publish_after_any_refresh(&key, &photo("not refreshed again"))
        .await;
    assert_eq!(stored(&app, &id).await.1, new_token);
}

#[actix_rt::test]
async fn by_default_the_token_is_refreshed_five_days_before_it_expires() {
    let app = TestApp::spawn_with(|config| {
        config.oauth.refresh_sweep_secs = 1;
        config.auth.session_ttl_hours = 24 * 120;
    })
    .await;
    let (_, key, id, _) = instagram_login_publisher(&app, "Sven").await;
    let (row, old_token) = stored(&app, &id).await;
    let expires = row.token_expires_at.unwrap();
    let refreshes = app.refresh_outcomes("instagram");
    set_clocks(&app, expires - Duration::days(6));
    app.wait_two_passes(Background::TokenKeeper).await;
    let jpg = app.media_url("sample.jpg");
    let photo = post(&id, json!({"text": "six days before", "mediaUrls": [jpg]}));
    app.publish_after_any_refresh(&key, &photo).await;
    assert_eq!(
        app.refresh_outcomes("instagram"),
        refreshes,
        "not tried yet"
    );
    assert_eq!(stored(&app, &id).await.1, old_token, "not yet");
    set_clocks(&app, expires - Duration::days(5) + Duration::minutes(1));
    eventually("the refresh five days before expiry", async || {
        stored(&app, &id).await.1 != old_token
    })
    .await;
}

#[actix_rt::test]
async fn a_refused_refresh_marks_the_account_invalid() {
    let app = TestApp::spawn_with(refresh_at_once).await;
    let (dashboard, _, id, _) = instagram_login_publisher(&app, "Tara").await;
    let (row, token) = stored(&app, &id).await;
    // The user removes the app on Instagram: the token is dead, the refresh is refused.
    assert!(app.sim.state().revoke_token(&token));
    set_clocks(&app, row.token_issued_at.unwrap() + Duration::hours(25));
    eventually("the refused refresh", async || {
        !stored(&app, &id).await.0.is_valid
    })
    .await;
    let response = dashboard
        .client
        .post(app.url("/api/token/info"))
        .json(&json!({"account_id": id}))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["is_valid"], false, "{body}");
    assert!(
        body["data"]["invalid_reason"]
            .as_str()
            .unwrap()
            .contains("invalidated"),
        "{body}"
    );
}

#[actix_rt::test]
async fn every_performance_read_and_a_daily_snapshot_work_on_the_instagram_host() {
    let app = TestApp::spawn().await;
    let (_, key, id, sim) = instagram_login_publisher(&app, "Uma").await;
    publish_every_type(&app, &key, &id).await;
    let calls_before = instagram_login::calls_on_host(app.sim.state(), &sim.external_id);
    let get = async |path: String| {
        let response = app
            .http
            .get(app.url(&path))
            .header("service-api-key", &key)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(status, 200, "{path}: {body}");
        if let Some(failed) = body.get("failed_metrics") {
            assert_eq!(failed, &json!([]), "{path}: {body}");
        }
        body
    };
    let q = format!("account_id={id}&platform=instagram");
    let metrics = get(format!("/api/performance/metrics?{q}")).await;
    assert_eq!(metrics["success"], true, "{metrics}");
    let account = get(format!(
        "/api/performance/account?{q}&period=day&since=2026-11-01&until=2026-11-07"
    ))
    .await;
    assert_eq!(account["ig_account_id"], sim.external_id.as_str());
    let posts = get(format!("/api/performance/posts?{q}&limit=10")).await;
    let media = posts["data"]["media"].as_array().unwrap();
    // The simulator's history of the account, and the three just published.
    for caption in ["A photo", "A carousel", "A reel"] {
        assert!(media.iter().any(|m| m["caption"] == caption), "{caption}");
    }
    for item in media {
        let one = get(format!(
            "/api/performance/post/{}?{q}",
            item["media_id"].as_str().unwrap()
        ))
        .await;
        assert_eq!(one["data"]["metrics"], item["insights"]["metrics"], "{one}");
    }
    // One daily snapshot, collected from graph.instagram.com.
    let yesterday = app.clock_now().date_naive().pred_opt().unwrap();
    let response = app
        .http
        .post(app.url(&format!(
            "/api/cron/collect-performance?date={yesterday}&account_id={id}"
        )))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"]["success_count"], 1, "{body}");
    assert_eq!(body["results"]["failed_count"], 0, "{body}");
    let snapshot = &body["results"]["accounts"][0];
    assert_eq!(snapshot["status"], "success", "{snapshot}");
    assert!(
        instagram_login::calls_on_host(app.sim.state(), &sim.external_id) > calls_before,
        "the reads went to graph.instagram.com"
    );
}

/// A call on the simulator: (status, body).
async fn sim_get(app: &TestApp, path: &str, token: &str) -> (u16, Value) {
    let response = app
        .http
        .get(format!("{}{path}", app.sim.base_url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    status_and_json(response).await
}

#[actix_rt::test]
async fn the_simulator_keeps_instagram_login_tokens_on_their_host() {
    let app = TestApp::spawn().await;
    instagram_login_publisher(&app, "Vera").await;
    let dashboard = app.sign_in("fb@example.com").await;
    let fb = connect_via(&app, &dashboard, "facebook_login", "Walt").await;
    let (_, fb_token) = stored(&app, fb["account_id"].as_str().unwrap()).await;
    let vera = app.sim.state().account_named("instagram", "Vera").unwrap();
    let ig_token = vera.access_token.clone();
    assert!(instagram_login::token_record(app.sim.state(), &ig_token).is_some());
    // An Instagram Login token on graph.facebook.com, a Facebook Login one on
    // graph.instagram.com: both Meta's code 190.
    let (status, body) = sim_get(&app, "/graph/v24.0/me?fields=id", &ig_token).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (400, Some(190)));
    let (status, body) = sim_get(&app, "/instagram/v24.0/me?fields=id", &fb_token).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (400, Some(190)));
    // No pages on graph.instagram.com.
    let (status, _) = sim_get(&app, "/instagram/v24.0/me/accounts", &ig_token).await;
    assert_eq!(status, 400);
    // The IG user node answers this host's fields; an unknown one is refused.
    let (status, body) = sim_get(
        &app,
        "/instagram/v24.0/me?fields=user_id,username,account_type",
        &ig_token,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["user_id"], vera.external_id.as_str());
    let (status, _) = sim_get(&app, "/instagram/v24.0/me?fields=page_token", &ig_token).await;
    assert_eq!(status, 400);
    // Refreshing a token younger than 24 h is refused.
    let (status, body) = sim_get(
        &app,
        &format!(
            "/instagram/refresh_access_token?grant_type=ig_refresh_token&access_token={ig_token}"
        ),
        "",
    )
    .await;
    assert_eq!(status, 400, "{body}");
    // FB-Login-only media metrics are not served here.
    let (status, _) = sim_get(
        &app,
        &format!(
            "/instagram/v24.0/{}/insights?metric=total_likes",
            vera.external_id
        ),
        &ig_token,
    )
    .await;
    assert_eq!(status, 400);
    let mut rules = app.take_violation_rules();
    rules.sort();
    assert_eq!(
        rules,
        [
            "facebook_login_only_metric",
            "refresh_too_early",
            "unknown_field",
            "unknown_path",
            "wrong_host_token",
            "wrong_host_token",
        ]
    );
}

#[actix_rt::test]
async fn the_simulator_refuses_a_call_without_its_scope() {
    let app = TestApp::spawn().await;
    let (_, _, _, sim) = instagram_login_publisher(&app, "Xena").await;
    let token = sim.access_token.clone();
    let state = app.sim.state();
    // The person granted reading only.
    state.grant_scopes(&token, vec![instagram_login::BASIC.to_string()]);
    let publish = app
        .http
        .post(format!(
            "{}/instagram/v24.0/{}/media",
            app.sim.base_url, sim.external_id
        ))
        .bearer_auth(&token)
        .form(&[("image_url", app.media_url("sample.jpg"))])
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(publish).await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (403, Some(10)),
        "{body}"
    );
    let (status, body) = sim_get(
        &app,
        &format!(
            "/instagram/v24.0/{}/insights?metric=reach&period=day",
            sim.external_id
        ),
        &token,
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (403, Some(10)),
        "{body}"
    );
    // Reading the profile needs only the basic scope.
    let (status, _) = sim_get(&app, "/instagram/v24.0/me?fields=username", &token).await;
    assert_eq!(status, 200);
    assert_eq!(
        app.take_violation_rules(),
        ["missing_scope", "missing_scope"]
    );
}

#[actix_rt::test]
async fn connecting_again_through_facebook_login_moves_the_account_to_graph_facebook_com() {
    let app = TestApp::spawn().await;
    let (dashboard, key, id, sim) = instagram_login_publisher(&app, "Yara").await;
    // The same professional account, now linked to a page and connected through Facebook Login.
    let again = connect_via(&app, &dashboard, "facebook_login", "Yara").await;
    assert_eq!(again["account_id"], id.as_str(), "the same account");
    let (row, _) = stored(&app, &id).await;
    assert_eq!(row.login_route, entity::account::LoginRoute::FacebookLogin);
    let calls = instagram_login::calls_on_host(app.sim.state(), &sim.external_id);
    let jpg = app.media_url("sample.jpg");
    let (status, body) = app
        .post(
            &key,
            &post(&id, json!({"text": "now via facebook", "mediaUrls": [jpg]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        instagram_login::calls_on_host(app.sim.state(), &sim.external_id),
        calls,
        "nothing more on graph.instagram.com"
    );
}
