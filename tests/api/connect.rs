//! Connecting accounts over each platform's OAuth against the simulator (the browser's
//! redirects followed by the test client, with its cookie jar), and the state's protections.

use serde_json::{Value, json};

use crate::helpers::{Dashboard, TestApp, status_and_json};

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
        let days = expires.map(|e| (e.with_timezone(&chrono::Utc) - now).num_days());
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
                assert_eq!((data.with_timezone(&chrono::Utc) - now).num_days(), 89);
            }
            "instagram" | "threads" => assert_eq!(days, Some(59), "{platform}: 60-day token"),
            _ => assert_eq!(days, Some(0), "{platform}: short-lived access token"),
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
    assert!(row.access_token_enc.starts_with("v1:"));
    assert_eq!(
        app.state.cipher.decrypt(&row.access_token_enc).unwrap(),
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
