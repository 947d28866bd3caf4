//! Sign-in with the simulator's identity provider as a real one behaves: RS256 ID tokens checked
//! against its JWKS, a signing-key rotation followed, and the operator role given by
//! `auth.operator_emails` only to an address the provider says is verified.

use serde_json::Value;

use crate::helpers::{Dashboard, TestApp, status_and_json};

const OPERATOR_EMAIL: &str = "ops@example.com";

async fn operator_page_status(app: &TestApp, dashboard: &Dashboard) -> u16 {
    dashboard
        .no_redirect
        .get(app.url("/dashboard/operator"))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn published_kids(app: &TestApp) -> Vec<String> {
    let jwks: Value = app
        .http
        .get(format!("{}/oidc/jwks", app.sim.base_url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["kid"].as_str().unwrap().to_string())
        .collect()
}

#[actix_web::test]
async fn the_provider_publishes_rs256_keys_through_discovery() {
    let app = TestApp::spawn().await;
    let discovery: Value = app
        .http
        .get(format!(
            "{}/.well-known/openid-configuration",
            app.sim.idp_issuer()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        discovery["jwks_uri"],
        format!("{}/oidc/jwks", app.sim.base_url)
    );
    assert_eq!(
        discovery["id_token_signing_alg_values_supported"],
        serde_json::json!(["RS256"])
    );
    assert_eq!(published_kids(&app).await.len(), 1);
}

#[actix_web::test]
async fn sign_in_still_works_after_the_provider_rotates_its_signing_key() {
    let app = TestApp::spawn().await;
    let email = "rotation@example.com";
    let first = app.sign_in(email).await;
    let before = published_kids(&app).await;

    let rotated: Value = app
        .http
        .post(format!("{}/_sim/idp/rotate-key", app.sim.base_url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let new_kid = rotated["kid"].as_str().unwrap().to_string();
    // The old key is gone from the JWKS: only a fresh fetch can verify the next ID token.
    assert_eq!(published_kids(&app).await, vec![new_kid.clone()]);
    assert!(!before.contains(&new_kid));

    let second = app.sign_in(email).await;
    assert_eq!(
        second.user_id, first.user_id,
        "the same user, by issuer and subject"
    );
}

#[actix_web::test]
async fn a_listed_address_the_provider_has_not_verified_is_no_operator() {
    let app = TestApp::spawn_with(|config| {
        config.auth.operator_emails = vec![OPERATOR_EMAIL.into()];
    })
    .await;
    let unverified = format!("{}/_sim/idp/unverified/{OPERATOR_EMAIL}", app.sim.base_url);
    let response = app.http.put(&unverified).send().await.unwrap();
    assert_eq!(response.status(), 204);

    let dashboard = app.sign_in(OPERATOR_EMAIL).await;
    assert_eq!(
        operator_page_status(&app, &dashboard).await,
        303,
        "an unverified address is sent away from the operator page"
    );

    // Once the provider vouches for the address, the next sign-in records it and the same user
    // is an operator.
    let response = app.http.delete(&unverified).send().await.unwrap();
    assert_eq!(response.status(), 204);
    let verified = app.sign_in(OPERATOR_EMAIL).await;
    assert_eq!(verified.user_id, dashboard.user_id);
    assert_eq!(operator_page_status(&app, &verified).await, 200);
}

#[actix_web::test]
async fn a_verified_operator_who_loses_verification_loses_the_role_at_the_next_sign_in() {
    let app = TestApp::spawn_with(|config| {
        config.auth.operator_emails = vec![OPERATOR_EMAIL.into()];
    })
    .await;
    let verified = app.sign_in(OPERATOR_EMAIL).await;
    assert_eq!(operator_page_status(&app, &verified).await, 200);

    app.sim.set_idp_email_verified(OPERATOR_EMAIL, false);
    let unverified = app.sign_in(OPERATOR_EMAIL).await;
    assert_eq!(unverified.user_id, verified.user_id);
    assert_eq!(operator_page_status(&app, &unverified).await, 303);
}

#[actix_web::test]
async fn a_discovery_document_naming_another_issuer_is_not_trusted() {
    // The same provider reached under another name: its document names the issuer it knows.
    let app =
        TestApp::spawn_with(|c| c.auth.issuer = c.auth.issuer.replace("127.0.0.1", "localhost"))
            .await;
    let (status, body) = status_and_json(
        app.http
            .get(app.url("/auth/login?login_hint=someone@example.com"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"], "ServiceUnavailable");
}
