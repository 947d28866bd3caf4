//! Connecting accounts over each platform's OAuth against the simulator (the browser's
//! redirects followed by the test client, with its cookie jar), and the state's protections.

use serde_json::{Value, json};
use social_service::tokens;

use crate::helpers::{Background, Dashboard, TestApp, eventually, status_and_json};

/// Runs the whole browser flow: connect → platform authorize → callback.
async fn connect(
    app: &TestApp,
    dashboard: &Dashboard,
    platform: &str,
    person: &str,
) -> (u16, Value) {
    let response = dashboard
        .client
        .get(app.url(&format!("/api/connect/{platform}?login_hint={person}")))
        .send()
        .await
        .unwrap();
    status_and_json(response).await
}

/// Starts a connection and stops at the platform's redirect back: the callback URL.
async fn callback_url(
    app: &TestApp,
    dashboard: &Dashboard,
    platform: &str,
    person: &str,
) -> String {
    let response = dashboard
        .no_redirect
        .get(app.url(&format!("/api/connect/{platform}?login_hint={person}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 302);
    let authorize = response.headers()["location"].to_str().unwrap().to_string();
    let response = dashboard.no_redirect.get(&authorize).send().await.unwrap();
    assert_eq!(
        response.status(),
        302,
        "the simulator signs in and redirects back"
    );
    response.headers()["location"].to_str().unwrap().to_string()
}

fn accounts(body: &Value) -> &Vec<Value> {
    body["accounts"].as_array().unwrap()
}

#[actix_rt::test]
async fn each_platform_connects_through_its_oauth_flow() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("owner@example.com").await;
    let cases: [(&str, &[&str]); 6] = [
        (
            "facebook",
            &["page_name", "page_id", "data_access_expires_at"],
        ),
        (
            "instagram",
            &["ig_username", "ig_account_id", "account_type"],
        ),
        (
            "threads",
            &["threads_username", "threads_id", "threads_profile_picture"],
        ),
        ("tiktok", &["tiktok_username", "tiktok_open_id"]),
        ("youtube", &["channel_title", "channel_id"]),
        ("x", &["x_username", "x_user_id"]),
    ];
    let now = app.clock_now();
    for (platform, fields) in cases {
        let (status, body) = connect(&app, &dashboard, platform, "Alice").await;
        assert_eq!(status, 200, "{platform}: {body}");
        assert_eq!(body["success"], true);
        let connected = accounts(&body);
        assert_eq!(connected.len(), 1, "{platform}: {body}");
        let account = &connected[0];
        assert_eq!(account["social_channel_type"], platform);
        assert_eq!(account["is_valid"], true);
        for field in fields {
            assert!(
                account.get(*field).is_some(),
                "{platform} lacks {field}: {account}"
            );
        }
        // The platform's own id for the account, as the simulator knows it.
        let id_field = fields[1];
        let sim_platform_name = match platform {
            "facebook" => "Alice Page",
            "youtube" => "Alice Channel",
            _ => "Alice",
        };
        let sim = app
            .sim
            .state()
            .account_named(platform, sim_platform_name)
            .unwrap();
        assert_eq!(account[id_field], sim.external_id, "{platform}");
        let expires = account["expires_at"]
            .as_str()
            .map(|s| chrono::DateTime::parse_from_rfc3339(s).unwrap());
        // Seconds from now, to the second (the response has milliseconds; the clock has more).
        let lifetime = expires
            .map(|e| ((e.with_timezone(&chrono::Utc) - now).num_milliseconds() + 999) / 1000);
        match platform {
            "facebook" => {
                assert_eq!(
                    account["expires_at"],
                    Value::Null,
                    "page tokens do not expire"
                );
                let data = chrono::DateTime::parse_from_rfc3339(
                    account["data_access_expires_at"].as_str().unwrap(),
                )
                .unwrap();
                let window = data.with_timezone(&chrono::Utc) - now;
                assert_eq!((window.num_milliseconds() + 999) / 1000, 90 * 86_400);
            }
            // The platforms' lifetimes (platform-apis.md): 60 days, 24 h, 1 h, 2 h.
            "instagram" => assert_eq!(lifetime, Some(5_183_944), "60-day user token"),
            "threads" => assert_eq!(lifetime, Some(5_184_000), "60-day token"),
            "tiktok" => assert_eq!(lifetime, Some(86_400)),
            "youtube" => assert_eq!(lifetime, Some(3_599)),
            _ => assert_eq!(lifetime, Some(7_200), "{platform}"),
        }
    }
    // The accounts are the user's, and a connected account publishes with its new token.
    let listed: Value = dashboard
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["accounts"].as_array().unwrap().len(), 6);
    let (key, _) = app.create_key(&dashboard, "after connect").await;
    app.set_plan(dashboard.user_id, "ultra").await;
    for account in listed["accounts"].as_array().unwrap() {
        let platform = account["social_channel_type"].as_str().unwrap();
        if platform != "threads" && platform != "facebook" && platform != "x" {
            continue;
        }
        let body = json!({"post": {
            "accountId": account["account_id"],
            "content": {"text": format!("hello from {platform}"), "platform": platform},
            "target": {"targetType": platform},
        }});
        let (status, result) = app.post(&key, &body).await;
        assert_eq!(status, 200, "{platform}: {result}");
    }
}

#[actix_rt::test]
async fn connecting_again_updates_and_reconnecting_after_disconnect_makes_a_new_account() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("owner@example.com").await;
    let (_, first) = connect(&app, &dashboard, "threads", "Bob").await;
    let first_id = accounts(&first)[0]["account_id"].clone();
    // Connected again: the same account, with a fresh token.
    let (status, again) = connect(&app, &dashboard, "threads", "Bob").await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(accounts(&again)[0]["account_id"], first_id);
    let listed: Value = dashboard
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        listed["accounts"].as_array().unwrap().len(),
        1,
        "no duplicate"
    );
    // Disconnected, then connected again: a new account_id (spec §3.2); the old row stays.
    let response = dashboard
        .client
        .delete(app.url(&format!("/api/accounts/{}", first_id.as_str().unwrap())))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (_, reconnected) = connect(&app, &dashboard, "threads", "Bob").await;
    let new_id = accounts(&reconnected)[0]["account_id"].clone();
    assert_ne!(new_id, first_id);
    let old = app
        .state
        .store
        .find_account(first_id.as_str().unwrap().parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert!(old.disabled, "the disconnected account is kept, disabled");
}

#[actix_rt::test]
async fn forged_replayed_and_foreign_states_connect_nothing() {
    let app = TestApp::spawn().await;
    let alice = app.sign_in("alice@example.com").await;
    let mallory = app.sign_in("mallory@example.com").await;
    let refused = |body: &Value| body["error"] == "InvalidOAuthState";
    // Forged: a state the service never issued.
    let response = alice
        .client
        .get(app.url("/api/connect/threads/callback?code=abc&state=forged"))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert!(status == 400 && refused(&body), "{status} {body}");
    // A real callback, used once, then replayed.
    let url = callback_url(&app, &alice, "threads", "Carol").await;
    let first = alice.client.get(&url).send().await.unwrap();
    assert_eq!(first.status(), 200);
    let replay = alice.client.get(&url).send().await.unwrap();
    let (status, body) = status_and_json(replay).await;
    assert!(status == 400 && refused(&body), "replayed: {status} {body}");
    // Alice's callback in Mallory's browser: bound to Alice's session, refused for Mallory.
    let url = callback_url(&app, &alice, "tiktok", "Dave").await;
    let stolen = mallory.client.get(&url).send().await.unwrap();
    let (status, body) = status_and_json(stolen).await;
    assert!(status == 400 && refused(&body), "foreign: {status} {body}");
    // Without a session at all.
    let anonymous = app.http.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    // The user refusing on the platform's page: said so, nothing connected.
    let url = callback_url(&app, &alice, "x", "Erin").await;
    let denied = url.replace("code=", "error=access_denied&ignored=");
    let (status, body) = status_and_json(alice.client.get(&denied).send().await.unwrap()).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("ConnectionFailed")),
        "{body}"
    );
    // Nothing was connected for Mallory, and only Carol's threads account for Alice.
    let mine: Value = alice
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(mine["accounts"].as_array().unwrap().len(), 1, "{mine}");
    let theirs: Value = mallory
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(theirs["accounts"], json!([]));
}

#[actix_rt::test]
async fn tokens_are_encrypted_at_rest() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("owner@example.com").await;
    let (_, body) = connect(&app, &dashboard, "x", "Frank").await;
    let id = accounts(&body)[0]["account_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let sim = app.sim.state().account_named("x", "Frank").unwrap();
    let row = app.state.store.find_account(id).await.unwrap().unwrap();
    assert!(!row.access_token_enc.contains(&sim.access_token));
    assert!(row.access_token_enc.starts_with("v2:"));
    assert_eq!(
        tokens::open_access(&app.state.cipher, &row).unwrap(),
        sim.access_token
    );
    let refresh = row.refresh_token_enc.unwrap();
    assert!(
        !refresh.contains("x-rt-"),
        "the refresh token is encrypted too"
    );
    // No endpoint returns a token.
    let listed = dashboard
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!listed.contains(&sim.access_token));
}

/// The stored row of a connected account, with its tokens decrypted.
async fn stored(app: &TestApp, id: &str) -> (entity::account::Model, String, Option<String>) {
    let row = app
        .state
        .store
        .find_account(id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let access = tokens::open_access(&app.state.cipher, &row).unwrap();
    let refresh = tokens::open_refresh(&app.state.cipher, &row).unwrap();
    (row, access, refresh)
}

async fn token_info(app: &TestApp, dashboard: &Dashboard, id: &str) -> Value {
    let response = dashboard
        .client
        .post(app.url("/api/token/info"))
        .json(&json!({"account_id": id}))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

fn fast_sweeps(config: &mut social_service::config::Config) {
    config.oauth.refresh_sweep_secs = 1;
    config.auth.session_ttl_hours = 24 * 120;
}

#[actix_rt::test]
async fn threads_tokens_are_refreshed_five_days_before_they_expire() {
    let app = TestApp::spawn_with(fast_sweeps).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let (_, body) = connect(&app, &dashboard, "threads", "Grace").await;
    let id = accounts(&body)[0]["account_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (row, old_token, _) = stored(&app, &id).await;
    let expires = row.token_expires_at.unwrap();
    let (key, _) = app.create_key(&dashboard, "k").await;
    app.set_plan(dashboard.user_id, "pro").await;
    let post = |text: &str| json!({"post": {"accountId": id, "content": {"text": text, "platform": "threads"}, "target": {"targetType": "threads"}}});
    // Six days before expiry: two sweeps, no refresh.
    let refreshes = app.refresh_outcomes("threads");
    app.clock.set(expires - chrono::Duration::days(6));
    app.wait_two_passes(Background::TokenKeeper).await;
    app.publish_after_any_refresh(&key, &post("before the window"))
        .await;
    assert_eq!(
        app.refresh_outcomes("threads"),
        refreshes,
        "no refresh tried before its window"
    );
    assert_eq!(
        stored(&app, &id).await.1,
        old_token,
        "not refreshed before its window"
    );
    // Five days before: refreshed by the next sweep, through the account's actor.
    app.clock
        .set(expires - chrono::Duration::days(5) + chrono::Duration::minutes(1));
    eventually("the threads refresh", async || {
        stored(&app, &id).await.1 != old_token
    })
    .await;
    let (row, new_token, _) = stored(&app, &id).await;
    let sim = app.sim.state().account_named("threads", "Grace").unwrap();
    assert_eq!(
        new_token, sim.access_token,
        "the platform's new token is stored"
    );
    assert!(row.token_expires_at.unwrap() > expires + chrono::Duration::days(50));
    let info = token_info(&app, &dashboard, &id).await;
    assert_eq!(info["is_valid"], true);
    assert_eq!(info["days_until_expiry"], 60, "{info}");
    // And the account publishes with it.
    let (status, result) = app.post(&key, &post("after refresh")).await;
    assert_eq!(status, 200, "{result}");
}

#[actix_rt::test]
async fn tiktok_refresh_tokens_rotate_and_the_newest_is_kept() {
    let app = TestApp::spawn_with(fast_sweeps).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let (_, body) = connect(&app, &dashboard, "tiktok", "Heidi").await;
    let id = accounts(&body)[0]["account_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (row, old_access, old_refresh) = stored(&app, &id).await;
    let old_refresh = old_refresh.expect("tiktok gives a refresh token");
    // Within 15 minutes of the access token's expiry.
    app.clock
        .set(row.token_expires_at.unwrap() - chrono::Duration::minutes(10));
    eventually("the tiktok refresh", async || {
        stored(&app, &id).await.1 != old_access
    })
    .await;
    let (_, _, new_refresh) = stored(&app, &id).await;
    let new_refresh = new_refresh.unwrap();
    assert_ne!(
        new_refresh, old_refresh,
        "the rotated refresh token is stored"
    );
    // The spent refresh token no longer works at TikTok; the stored one does.
    assert_eq!(tiktok_refresh_status(&app, &old_refresh).await, 400);
    assert_eq!(tiktok_refresh_status(&app, &new_refresh).await, 200);
}

#[actix_rt::test]
async fn two_instances_finding_a_token_due_rotate_it_once() {
    let app = TestApp::spawn_with(fast_sweeps).await;
    // Its token keeper sweeps every second too: both instances find the token due together.
    let second = app.spawn_second().await;
    let dashboard = app.sign_in("owner@example.com").await;
    let (_, body) = connect(&app, &dashboard, "tiktok", "Judy").await;
    let id = accounts(&body)[0]["account_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (row, old_access, old_refresh) = stored(&app, &id).await;
    let old_refresh = old_refresh.unwrap();
    app.clock
        .set(row.token_expires_at.unwrap() - chrono::Duration::minutes(10));
    eventually("the tiktok refresh", async || {
        stored(&app, &id).await.1 != old_access
    })
    .await;
    // Both keepers have swept since: a second rotation, with the spent refresh token, would
    // have been refused by TikTok and the account marked invalid.
    app.wait_two_passes(crate::helpers::Background::TokenKeeper)
        .await;
    let (row, _, new_refresh) = stored(&app, &id).await;
    assert!(row.is_valid, "{:?}", row.last_error);
    let new_refresh = new_refresh.unwrap();
    assert_ne!(new_refresh, old_refresh);
    // The stored refresh token is the live one: it was rotated once, not twice.
    assert_eq!(tiktok_refresh_status(&app, &old_refresh).await, 400);
    assert_eq!(tiktok_refresh_status(&app, &new_refresh).await, 200);
    let _ = second;
}

#[actix_rt::test]
async fn a_revoked_token_invalidates_the_account_on_the_next_publish() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("owner@example.com").await;
    app.set_plan(dashboard.user_id, "ultra").await;
    let (key, _) = app.create_key(&dashboard, "k").await;
    let (_, body) = connect(&app, &dashboard, "x", "Ivan").await;
    let id = accounts(&body)[0]["account_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, token, _) = stored(&app, &id).await;
    // The user revokes the app on X.
    assert!(app.sim.state().revoke_token(&token));
    let post = |text: &str| json!({"post": {"accountId": id, "content": {"text": text, "platform": "x"}, "target": {"targetType": "x"}}});
    let (status, result) = app.post(&key, &post("first")).await;
    assert_eq!(
        (status, result["error"].as_str()),
        (401, Some("InvalidToken")),
        "{result}"
    );
    let info = token_info(&app, &dashboard, &id).await;
    assert_eq!(info["is_valid"], false, "{info}");
    assert!(
        info["invalid_reason"]
            .as_str()
            .unwrap()
            .contains("InvalidToken"),
        "{info}"
    );
    let listed: Value = dashboard
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["accounts"][0]["is_valid"], false);
    // Reconnecting makes it valid again (same account, new token).
    let (_, again) = connect(&app, &dashboard, "x", "Ivan").await;
    assert_eq!(accounts(&again)[0]["account_id"], id.as_str());
    assert_eq!(accounts(&again)[0]["is_valid"], true);
    let (status, result) = app.post(&key, &post("second")).await;
    assert_eq!(status, 200, "{result}");
}

#[actix_rt::test]
async fn a_refused_refresh_and_an_expired_instagram_token_are_reported() {
    let app = TestApp::spawn_with(fast_sweeps).await;
    let dashboard = app.sign_in("owner@example.com").await;
    let (_, yt) = connect(&app, &dashboard, "youtube", "Judy").await;
    let yt_id = accounts(&yt)[0]["account_id"].as_str().unwrap().to_string();
    let (_, ig) = connect(&app, &dashboard, "instagram", "Judy").await;
    let ig_id = accounts(&ig)[0]["account_id"].as_str().unwrap().to_string();
    let (_, fb) = connect(&app, &dashboard, "facebook", "Judy").await;
    let fb_id = accounts(&fb)[0]["account_id"].as_str().unwrap().to_string();
    // The Google grant is revoked: the refresh fails for good and the account says so.
    let (row, _, refresh) = stored(&app, &yt_id).await;
    app.sim
        .state()
        .objects
        .remove(&format!("refresh:{}", refresh.unwrap()));
    app.clock
        .set(row.token_expires_at.unwrap() - chrono::Duration::minutes(5));
    eventually("the refused refresh", async || {
        !stored(&app, &yt_id).await.0.is_valid
    })
    .await;
    let info = token_info(&app, &dashboard, &yt_id).await;
    assert_eq!(info["is_valid"], false);
    assert!(
        info["invalid_reason"]
            .as_str()
            .unwrap()
            .contains("expired or revoked"),
        "{info}"
    );
    // Sixty days on: the instagram token has expired (no refresh grant) and is marked invalid;
    // the facebook page token still works, but its 90-day data access is reported.
    app.clock.set(app.clock_now() + chrono::Duration::days(61));
    eventually("the expired instagram token", async || {
        !stored(&app, &ig_id).await.0.is_valid
    })
    .await;
    let info = token_info(&app, &dashboard, &ig_id).await;
    assert_eq!(info["is_valid"], false);
    assert!(info["days_until_expiry"].as_i64().unwrap() < 0);
    let info = token_info(&app, &dashboard, &fb_id).await;
    assert_eq!(info["is_valid"], true, "{info}");
    assert_eq!(info["expires_at"], Value::Null);
    assert_eq!(info["days_until_data_access_expiry"], 28, "{info}");
    assert_eq!(info["data_access_expired"], false);
    app.clock.set(app.clock_now() + chrono::Duration::days(30));
    let info = token_info(&app, &dashboard, &fb_id).await;
    assert_eq!(info["data_access_expired"], true, "{info}");
}

#[actix_rt::test]
async fn the_token_key_rotates_with_the_cli() {
    use secrecy::ExposeSecret;
    use social_service::crypto::TokenCipher;
    let app = TestApp::spawn().await;
    // The command works on the SQLite file (a PostgreSQL test schema is not reachable by URL).
    let Some(db_url) = app.sqlite_url.clone() else {
        return;
    };
    let dashboard = app.sign_in("owner@example.com").await;
    let (_, body) = connect(&app, &dashboard, "tiktok", "Kim").await;
    let id = accounts(&body)[0]["account_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, access, refresh) = stored(&app, &id).await;
    let old_key = app
        .config
        .secrets
        .token_encryption_key
        .as_ref()
        .unwrap()
        .expose_secret()
        .to_string();
    let new_key = TokenCipher::generate_key();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_service"))
        .arg("rotate-token-key")
        .env_remove("DATABASE_URL")
        .env("SERVICE__DATABASE__URL", &db_url)
        .env("SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY", &new_key)
        .env("SERVICE__SECRETS__PREVIOUS_TOKEN_ENCRYPTION_KEYS", &old_key)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("re-encrypted the tokens of 1 accounts")
    );
    let row = app
        .state
        .store
        .find_account(id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let new = TokenCipher::from_config_value(&new_key).unwrap();
    assert_eq!(tokens::open_access(&new, &row).unwrap(), access);
    assert_eq!(tokens::open_refresh(&new, &row).unwrap(), refresh);
    assert!(
        tokens::open_access(&app.state.cipher, &row).is_err(),
        "the old key no longer reads it"
    );
}

/// TikTok refuses a field whose scope was not granted (`username` needs `user.info.profile`):
/// our connect flow asks for every scope the fields we read need, and a token without one is a
/// permission the user must grant, named, not a dead token.
#[actix_rt::test]
async fn tiktok_connects_with_the_scopes_its_fields_need_and_a_missing_one_is_named() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("owner@example.com").await;
    let (status, body) = connect(&app, &dashboard, "tiktok", "Tina").await;
    assert_eq!(status, 200, "{body}");
    let account = &accounts(&body)[0];
    assert_eq!(account["tiktok_username"], "tina", "{account}");
    let account_id = account["account_id"].as_str().unwrap().to_string();

    // The same token, as if the user had not granted user.info.profile.
    let state = app.sim.state();
    let sim = state.account_named("tiktok", "Tina").unwrap();
    state.grant_scopes(
        &sim.access_token,
        ["user.info.basic", "user.info.stats", "video.list"]
            .map(String::from)
            .to_vec(),
    );
    let (key, _) = app.create_key(&dashboard, "insights").await;
    app.set_plan(dashboard.user_id, "pro").await;
    let response = app
        .http
        .get(app.url(&format!(
            "/api/performance/account?account_id={account_id}&platform=tiktok"
        )))
        .header("service-api-key", &key)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 403, "{body}");
    let text = body["error"].as_str().unwrap();
    assert!(text.contains("user.info.profile"), "{text}");
    assert!(text.contains("scope_not_authorized"), "{text}");
    // The token made to lack the scope was refused once, logged as that violation.
    assert_eq!(app.take_violation_rules(), ["scope_not_authorized"]);
    let listed: Value = dashboard
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed = listed["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["account_id"] == account_id.as_str())
        .cloned()
        .unwrap();
    assert_eq!(listed["is_valid"], true, "{listed}");
}

/// The token endpoint is `oauth.tiktok_token_url`, not derived from the API host: pointed at a
/// closed port, tiktok's code exchange fails and connects nothing, while x (untouched) connects.
#[actix_rt::test]
async fn the_token_endpoint_comes_from_the_config() {
    let app = TestApp::spawn_with(|config| {
        // Port 1 on loopback: nothing listens there.
        config.oauth.tiktok_token_url = "http://127.0.0.1:1/v2/oauth/token/".into();
    })
    .await;
    let dashboard = app.sign_in("owner@example.com").await;
    let (status, body) = connect(&app, &dashboard, "tiktok", "Tina").await;
    assert_ne!(status, 200, "{body}");
    let (status, body) = connect(&app, &dashboard, "x", "Xavier").await;
    assert_eq!(status, 200, "{body}");
    let listed: Value = dashboard
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let platforms: Vec<&str> = listed["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["social_channel_type"].as_str().unwrap())
        .collect();
    assert_eq!(platforms, vec!["x"], "{listed}");
}

/// The status TikTok's token endpoint answers a refresh with `token`.
async fn tiktok_refresh_status(app: &TestApp, token: &str) -> u16 {
    app.http
        .post(format!("{}/tiktok/v2/oauth/token/", app.sim.base_url))
        .form(&[
            ("client_key", crate::helpers::CLIENT_ID),
            ("client_secret", crate::helpers::CLIENT_SECRET),
            ("grant_type", "refresh_token"),
            ("refresh_token", token),
        ])
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}
