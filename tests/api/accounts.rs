//! Connected accounts: listing, soft-delete disconnect, token info, tenant isolation, and tokens
//! encrypted at rest.

use serde_json::{Value, json};

use crate::helpers::{TestApp, error_body, status_and_json};

#[actix_web::test]
async fn accounts_are_listed_with_their_platform_fields() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("lister@example.com").await;
    let facebook = app
        .add_account(dashboard.user_id, "facebook", "My Page")
        .await;
    let instagram = app
        .add_account(dashboard.user_id, "instagram", "my.insta")
        .await;
    let threads = app
        .add_account(dashboard.user_id, "threads", "my.threads")
        .await;

    let (status, body) = status_and_json(
        dashboard
            .client
            .get(app.url("/api/accounts"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let accounts = body["accounts"].as_array().unwrap();
    assert_eq!(accounts.len(), 3);
    let find = |id: uuid::Uuid| {
        accounts
            .iter()
            .find(|a| a["account_id"] == json!(id))
            .unwrap()
            .clone()
    };

    let fb = find(facebook.id);
    assert_eq!(fb["social_channel_type"], "facebook");
    assert_eq!(fb["page_name"], "My Page");
    assert_eq!(fb["page_id"], json!(facebook.external_id));
    assert_eq!(
        fb["expires_at"],
        json!(null),
        "facebook tokens do not expire"
    );
    assert!(fb["data_access_expires_at"].is_string());
    assert_eq!(fb["is_valid"], true);
    for field in ["created_at", "updated_at"] {
        assert!(
            fb[field].as_str().unwrap().ends_with('Z'),
            "{field} is ISO 8601 UTC"
        );
    }

    let ig = find(instagram.id);
    assert_eq!(ig["ig_username"], "my.insta");
    assert_eq!(ig["ig_account_id"], json!(instagram.external_id));
    assert_eq!(ig["account_type"], "CREATOR");
    assert!(ig["expires_at"].is_string());

    let th = find(threads.id);
    assert_eq!(th["threads_username"], "my.threads");
    assert_eq!(th["threads_id"], json!(threads.external_id));
    assert!(
        th.as_object()
            .unwrap()
            .contains_key("threads_profile_picture")
    );
}

#[actix_web::test]
async fn disconnect_is_a_soft_delete_that_leaves_listings() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("disconnect@example.com").await;
    let account = app
        .add_account(dashboard.user_id, "instagram", "gone.soon")
        .await;
    let keep = app
        .add_account(dashboard.user_id, "facebook", "Stays")
        .await;

    let url = app.url(&format!("/api/accounts/{}", account.id));
    let (status, body) = status_and_json(dashboard.client.delete(&url).send().await.unwrap()).await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"success": true, "message": "Account disconnected"})
        )
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
    let ids: Vec<_> = listed["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["account_id"].clone())
        .collect();
    assert_eq!(ids, vec![json!(keep.id)]);

    // The row (and its tokens) are kept, marked disabled.
    let row = app
        .state
        .store
        .find_owned_account(dashboard.user_id, account.id)
        .await
        .unwrap()
        .unwrap();
    assert!(row.disabled);
    assert_eq!(row.access_token_enc, account.access_token_enc);

    // Disconnecting again, or validating it, is AccountNotFound.
    let (status, body) = status_and_json(dashboard.client.delete(&url).send().await.unwrap()).await;
    let not_found = error_body(
        "AccountNotFound",
        "Account not found or does not belong to you",
    );
    assert_eq!((status, body), (404, not_found.clone()));
    let response = dashboard
        .client
        .post(app.url("/api/token/info"))
        .json(&json!({"account_id": account.id}))
        .send()
        .await
        .unwrap();
    assert_eq!(status_and_json(response).await, (404, not_found));
}

#[actix_web::test]
async fn another_user_can_neither_see_disconnect_nor_validate_an_account() {
    let app = TestApp::spawn().await;
    let alice = app.sign_in("alice.accounts@example.com").await;
    let bob = app.sign_in("bob.accounts@example.com").await;
    let account = app
        .add_account(alice.user_id, "threads", "alice.threads")
        .await;
    let not_found = error_body(
        "AccountNotFound",
        "Account not found or does not belong to you",
    );

    let listed: Value = bob
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed, json!({"accounts": []}));

    let response = bob
        .client
        .delete(app.url(&format!("/api/accounts/{}", account.id)))
        .send()
        .await
        .unwrap();
    assert_eq!(status_and_json(response).await, (404, not_found.clone()));

    let response = bob
        .client
        .post(app.url("/api/token/info"))
        .json(&json!({"account_id": account.id}))
        .send()
        .await
        .unwrap();
    assert_eq!(status_and_json(response).await, (404, not_found.clone()));

    // Unknown and malformed ids answer the same way.
    for id in [uuid::Uuid::new_v4().to_string(), "not-a-uuid".to_string()] {
        let response = alice
            .client
            .delete(app.url(&format!("/api/accounts/{id}")))
            .send()
            .await
            .unwrap();
        assert_eq!(
            status_and_json(response).await,
            (404, not_found.clone()),
            "{id}"
        );
    }

    let listed: Value = alice
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
        "alice's account is untouched"
    );
}

#[actix_web::test]
async fn token_info_reports_validity_and_expiry() {
    let app = TestApp::spawn_with(|c| c.auth.session_ttl_hours = 24 * 90).await;
    let dashboard = app.sign_in("tokens@example.com").await;
    let instagram = app
        .add_account(dashboard.user_id, "instagram", "ig.tokens")
        .await;
    let facebook = app
        .add_account(dashboard.user_id, "facebook", "FB Tokens")
        .await;
    let info = |id: uuid::Uuid| {
        dashboard
            .client
            .post(app.url("/api/token/info"))
            .json(&json!({"account_id": id}))
            .send()
    };

    let (status, body) = status_and_json(info(instagram.id).await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(body["success"], true);
    let data = &body["data"];
    assert_eq!(data["is_valid"], true);
    assert_eq!(data["platform"], "instagram");
    assert_eq!(data["account_name"], "ig.tokens");
    assert_eq!(data["days_until_expiry"], 30);
    assert!(data["expires_at"].is_string());

    let (_, body) = status_and_json(info(facebook.id).await.unwrap()).await;
    assert_eq!(body["data"]["expires_at"], json!(null));
    assert_eq!(body["data"]["days_until_expiry"], json!(null));
    assert_eq!(body["data"]["is_valid"], true);

    // After the token's expiry the account reports invalid.
    app.clock.advance(chrono::Duration::days(31));
    let (_, body) = status_and_json(info(instagram.id).await.unwrap()).await;
    assert_eq!(body["data"]["is_valid"], false);
    assert_eq!(body["data"]["days_until_expiry"], -1);

    let response = dashboard
        .client
        .post(app.url("/api/token/info"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        status_and_json(response).await,
        (
            400,
            error_body("MissingParameter", "Missing required parameter: account_id")
        )
    );
}

#[actix_web::test]
async fn platform_tokens_are_encrypted_at_rest() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("crypto@example.com").await;
    let account = app
        .add_account(dashboard.user_id, "threads", "secretive")
        .await;
    assert!(!account.access_token_enc.contains("plaintext-token"));
    assert_eq!(
        social_service::tokens::open_access(&app.state.cipher, &account).unwrap(),
        "plaintext-token-secretive"
    );
}

#[actix_web::test]
async fn api_clients_list_their_accounts_with_a_key() {
    let app = TestApp::spawn().await;
    let alice = app.sign_in("alice.v2@example.com").await;
    let bob = app.sign_in("bob.v2@example.com").await;
    let (key, _) = app.create_key(&alice, "k").await;
    let mine = app.add_account(alice.user_id, "x", "alice_x").await;
    app.add_account(bob.user_id, "x", "bob_x").await;
    let (status, body) = status_and_json(app.key_get(&key).await).await;
    assert_eq!(status, 200);
    assert_eq!(body["success"], true);
    let accounts = body["accounts"].as_array().unwrap();
    assert_eq!(accounts.len(), 1);
    assert_eq!(accounts[0]["account_id"], json!(mine.id));
    assert_eq!(accounts[0]["x_username"], "alice_x");
}

#[actix_web::test]
async fn a_stored_platform_that_is_no_platform_is_an_error_never_a_guess() {
    use sea_orm::ConnectionTrait;
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let response = app.key_get(&publisher.key).await;
    assert_eq!(response.status(), 200);
    // Damaged outside the service: there is no platform to read it as, so the listing fails
    // instead of showing the account under some default (or without its platform's fields).
    let changed = app
        .state
        .store
        .connection()
        .execute_unprepared(&format!(
            "UPDATE accounts SET platform = 'myspace' WHERE external_id = '{}'",
            publisher.account.external_id
        ))
        .await
        .unwrap();
    assert_eq!(changed.rows_affected(), 1);
    let (status, body) = status_and_json(app.key_get(&publisher.key).await).await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error"], "InternalServerError", "{body}");
    assert!(!body.to_string().contains("myspace"), "{body}");
}
