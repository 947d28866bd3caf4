//! API keys: creation (shown once), listing, deletion taking effect at once, tenant isolation,
//! the key format rules of §5 and `last_used_at`.

use std::time::Duration;

use serde_json::json;

use crate::helpers::{TestApp, error_body, status_and_json};

#[actix_web::test]
async fn a_created_key_is_shown_once_and_listed_by_preview_only() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("keys@example.com").await;
    let response = dashboard
        .client
        .post(app.url("/api/keys"))
        .json(&json!({"name": "  CI pipeline  "}))
        .send()
        .await
        .unwrap();
    let (status, created) = status_and_json(response).await;
    assert_eq!(status, 200);
    assert_eq!(created["success"], true);
    let full = created["api_key"].as_str().unwrap();
    assert!(full.starts_with("service_") && full.len() == 48, "{full}");
    let key = &created["key"];
    assert_eq!(key["name"], "CI pipeline");
    assert_eq!(key["is_active"], true);
    assert_eq!(key["last_used_at"], json!(null));
    let preview = key["key_preview"].as_str().unwrap();
    assert_eq!(preview, format!("{}...", &full[..12]));

    app.create_key(&dashboard, "second").await;
    let (status, listed) = status_and_json(
        dashboard
            .client
            .get(app.url("/api/keys"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let keys = listed["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0]["id"], key["id"]);
    assert_eq!(
        keys[0]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>(),
        [
            "created_at",
            "id",
            "is_active",
            "key_preview",
            "last_used_at",
            "name"
        ]
    );
    assert!(
        !listed.to_string().contains(full),
        "the full key is never listed"
    );

    // Only the hash is stored.
    let stored: Vec<entity::api_key::Model> = {
        use sea_orm::EntityTrait;
        entity::api_key::Entity::find()
            .all(app.state.store.connection())
            .await
            .unwrap()
    };
    assert!(
        stored
            .iter()
            .all(|k| k.key_hash != full && !k.key_hash.contains(&full[8..]))
    );
}

#[actix_web::test]
async fn key_creation_validates_the_name() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("names@example.com").await;
    let cases = [
        (
            json!({}),
            error_body("MissingParameter", "Missing required parameter: name"),
        ),
        (
            json!({"name": "   "}),
            error_body("InvalidRequest", "name must not be empty"),
        ),
        (
            json!({"name": "x".repeat(101)}),
            error_body("InvalidRequest", "name must be at most 100 characters"),
        ),
    ];
    for (request, expected) in cases {
        let response = dashboard
            .client
            .post(app.url("/api/keys"))
            .json(&request)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!((status, body), (400, expected), "{request}");
    }
}

#[actix_web::test]
async fn a_deleted_key_fails_on_the_very_next_request() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("delete@example.com").await;
    let (key, id) = app.create_key(&dashboard, "short-lived").await;
    assert_eq!(app.key_get(&key).await.status(), 200);

    let response = dashboard
        .client
        .delete(app.url(&format!("/api/keys/{id}")))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"success": true, "message": "API key deleted", "id": id})
    );

    let (status, body) = status_and_json(app.key_get(&key).await).await;
    assert_eq!(
        (status, body),
        (
            401,
            error_body("InvalidApiKey", "Invalid or missing API key")
        )
    );

    // Deleted keys leave the listing; deleting again is not found.
    let listed: serde_json::Value = dashboard
        .client
        .get(app.url("/api/keys"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed, json!({"keys": []}));
    let response = dashboard
        .client
        .delete(app.url(&format!("/api/keys/{id}")))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(
        (status, body),
        (404, error_body("KeyNotFound", "API key not found"))
    );
    let response = dashboard
        .client
        .delete(app.url("/api/keys/not-a-uuid"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
}

#[actix_web::test]
async fn users_cannot_list_or_delete_each_others_keys() {
    let app = TestApp::spawn().await;
    let alice = app.sign_in("alice@example.com").await;
    let bob = app.sign_in("bob@example.com").await;
    let (alice_key, alice_key_id) = app.create_key(&alice, "alice's").await;

    let listed: serde_json::Value = bob
        .client
        .get(app.url("/api/keys"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed, json!({"keys": []}));

    let response = bob
        .client
        .delete(app.url(&format!("/api/keys/{alice_key_id}")))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(
        (status, body),
        (404, error_body("KeyNotFound", "API key not found"))
    );
    assert_eq!(
        app.key_get(&alice_key).await.status(),
        200,
        "alice's key still works"
    );
}

#[actix_web::test]
async fn missing_malformed_and_unknown_keys_are_refused() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("format@example.com").await;
    let (key, _) = app.create_key(&dashboard, "real").await;
    let unknown = format!("service_{}", "A".repeat(40));
    let cases: Vec<(&str, Option<String>)> = vec![
        ("missing", None),
        ("empty", Some(String::new())),
        (
            "wrong prefix",
            Some(key.replacen("service_", "servic3_", 1)),
        ),
        // (Leading and trailing blanks are not part of an HTTP field value: the protocol strips
        // them before any server sees them, so only inner whitespace can be tested.)
        (
            "inner space",
            Some(key.replacen("service_", "service_ ", 1)),
        ),
        ("inner tab", Some(key.replacen("service_", "service_\t", 1))),
        ("truncated", Some(key[..key.len() - 1].to_string())),
        ("unknown", Some(unknown)),
    ];
    for (name, value) in cases {
        let mut request = app.http.get(app.url("/v2/accounts"));
        if let Some(value) = value {
            request = request.header("service-api-key", value);
        }
        let (status, body) = status_and_json(request.send().await.unwrap()).await;
        assert_eq!(status, 401, "{name}");
        assert_eq!(
            body,
            error_body("InvalidApiKey", "Invalid or missing API key"),
            "{name}"
        );
    }
}

#[actix_web::test]
async fn last_used_at_is_recorded_after_use() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("lastused@example.com").await;
    let (key, _) = app.create_key(&dashboard, "used").await;
    let (unused_key, _) = app.create_key(&dashboard, "unused").await;
    drop(unused_key);
    assert_eq!(app.key_get(&key).await.status(), 200);

    // Writes are batched (every 50 ms in tests); poll briefly.
    let mut listed = serde_json::Value::Null;
    for _ in 0..50 {
        listed = dashboard
            .client
            .get(app.url("/api/keys"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if !listed["keys"][0]["last_used_at"].is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let used_at = listed["keys"][0]["last_used_at"]
        .as_str()
        .expect("last_used_at recorded");
    let used_at: chrono::DateTime<chrono::Utc> = used_at.parse().unwrap();
    assert!((used_at - app.clock_now()).num_seconds().abs() < 5);
    assert_eq!(listed["keys"][1]["last_used_at"], json!(null));
}
