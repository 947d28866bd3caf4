//! Everything a client can get wrong answers in catalogue form, never actix's plain text.

use serde_json::json;

use crate::helpers::{TestApp, error_body, status_and_json};

#[actix_web::test]
async fn unknown_routes_answer_not_found_in_catalogue_form() {
    let app = TestApp::spawn().await;
    for path in [
        "/nope",
        "/api/nope",
        "/v2/posts/extra/segments",
        "/v3/posts",
    ] {
        let (status, body) =
            status_and_json(app.http.get(app.url(path)).send().await.unwrap()).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(
            body,
            error_body("NotFound", &format!("No route for GET {path}"))
        );
    }
}

#[actix_web::test]
async fn wrong_methods_answer_method_not_allowed_in_catalogue_form() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("methods@example.com").await;
    let response = dashboard
        .client
        .put(app.url("/api/keys"))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 405);
    assert_eq!(
        body,
        error_body("MethodNotAllowed", "Method PUT is not allowed on /api/keys")
    );

    let (status, body) =
        status_and_json(app.http.delete(app.url("/health")).send().await.unwrap()).await;
    assert_eq!(status, 405);
    assert_eq!(body["error"], "MethodNotAllowed");
}

#[actix_web::test]
async fn malformed_json_and_wrong_types_are_invalid_requests() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("json@example.com").await;
    let post = |body: &'static str, content_type: &'static str| {
        dashboard
            .client
            .post(app.url("/api/keys"))
            .header("content-type", content_type)
            .body(body)
            .send()
    };

    let (status, body) =
        status_and_json(post("{\"name\": ", "application/json").await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(body["success"], false);
    assert_eq!(body["error"], "InvalidRequest");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("Malformed JSON"),
        "{body}"
    );

    let (status, body) =
        status_and_json(post("{\"name\": 5}", "application/json").await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "InvalidRequest");
    assert!(
        body["message"].as_str().unwrap().contains("invalid type"),
        "{body}"
    );

    let (status, body) = status_and_json(post("name=x", "text/plain").await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        error_body("InvalidRequest", "Content-Type must be application/json")
    );

    let (status, body) = status_and_json(
        dashboard
            .client
            .get(app.url("/api/published-posts?limit=abc"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "InvalidRequest");
}

#[actix_web::test]
async fn oversized_bodies_are_refused_in_catalogue_form() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("big@example.com").await;
    let huge = format!("{{\"name\": \"{}\"}}", "a".repeat(2 * 1024 * 1024));
    let response = dashboard
        .client
        .post(app.url("/api/keys"))
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 413);
    assert_eq!(
        body,
        error_body("PayloadTooLarge", "Request body is too large")
    );
}

#[actix_web::test]
async fn health_reports_the_database() {
    let app = TestApp::spawn().await;
    let (status, body) =
        status_and_json(app.http.get(app.url("/health")).send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(body, json!({"status": "ok", "database": "ok"}));
}

#[actix_web::test]
async fn text_with_a_nul_character_is_refused_on_every_backend() {
    // PostgreSQL cannot store U+0000 (a failed query, a 500); SQLite could. Both refuse it alike.
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let mut body = publisher.body(json!({"text": "fine", "scheduledAt": "2099-01-01T00:00:00Z"}));
    body["post"]["extra"] = json!({"note": "a\u{0}b"});
    let (status, body) = app.post(&publisher.key, &body).await;
    assert_eq!(
        (status, body),
        (
            400,
            error_body(
                "InvalidRequest",
                "The request body must not contain NUL characters (\\u0000)"
            )
        )
    );

    let dashboard = app.sign_in("nul@example.com").await;
    let response = dashboard
        .client
        .post(app.url("/api/keys"))
        .json(&json!({"name": "key\u{0}"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        status_and_json(response).await,
        (
            400,
            error_body(
                "InvalidRequest",
                "name must not contain NUL characters (\\u0000)"
            )
        )
    );
}

/// An account added by an operator carries what every platform call needs: an id and a token
/// (an empty token only reached the platform as a call without one).
#[actix_web::test]
async fn an_operator_account_needs_an_id_a_name_and_a_usable_token() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("owner@example.com").await;
    let account = |external_id: &str, name: &str, token: &str| {
        json!({"user_id": dashboard.user_id, "platform": "facebook", "external_id": external_id,
               "name": name, "access_token": token})
    };
    let cases = [
        (
            account("123", "Page", ""),
            400,
            "MissingParameter",
            "access_token",
        ),
        (
            account("123", "Page", "   "),
            400,
            "MissingParameter",
            "access_token",
        ),
        (
            account("", "Page", "token"),
            400,
            "MissingParameter",
            "external_id",
        ),
        (
            account("123", " ", "token"),
            400,
            "MissingParameter",
            "name",
        ),
        (
            account("123", "Page", "to ken"),
            400,
            "InvalidRequest",
            "access_token",
        ),
    ];
    for (body, status, code, names) in cases {
        let response = app
            .http
            .post(app.url("/admin/accounts"))
            .bearer_auth(crate::helpers::OPERATOR_TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        let (got, answer) = status_and_json(response).await;
        assert_eq!(
            (got, answer["error"].as_str()),
            (status, Some(code)),
            "{body}: {answer}"
        );
        assert!(
            answer["message"].as_str().unwrap().contains(names),
            "{answer}"
        );
    }
    // A usable one is added.
    let response = app
        .http
        .post(app.url("/admin/accounts"))
        .bearer_auth(crate::helpers::OPERATOR_TOKEN)
        .json(&account("123", "Page", "token-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}
