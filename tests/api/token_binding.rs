//! Platform tokens are sealed to the row they are stored in: a ciphertext moved to another row
//! is refused and never reaches a platform; rows in the unbound `v1:` form are upgraded at start;
//! re-sealing (key rotation) never overwrites a token refreshed meanwhile.

use aes_gcm::{
    Aes256Gcm, Nonce,
    aead::{Aead, KeyInit},
};
use base64::{Engine, engine::general_purpose::STANDARD};
use entity::account;
use rand::RngCore;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, sea_query::Expr};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use social_service::{
    crypto::TokenCipher,
    store::{NewTokens, ResealScope, RowReseal},
    tokens::{self, PlainTokens},
};
use uuid::Uuid;

use crate::helpers::{Dashboard, TestApp, error_body, status_and_json};

/// Connects `person`'s account on `platform` through the OAuth flow against the simulator.
async fn connect_by_oauth(
    app: &TestApp,
    dashboard: &Dashboard,
    platform: &str,
    person: &str,
) -> Value {
    let response = dashboard
        .client
        .get(app.url(&format!("/api/connect/{platform}?login_hint={person}")))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    body["accounts"][0].clone()
}

async fn listed(app: &TestApp, dashboard: &Dashboard) -> Vec<Value> {
    let response = dashboard
        .client
        .get(app.url("/api/accounts"))
        .send()
        .await
        .unwrap();
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    body["accounts"].as_array().unwrap().clone()
}

fn validity_of(accounts: &[Value], id: &str) -> Value {
    accounts
        .iter()
        .find(|a| a["account_id"] == id)
        .unwrap_or_else(|| panic!("{id} is listed"))["is_valid"]
        .clone()
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

async fn row(app: &TestApp, id: Uuid) -> account::Model {
    app.state.store.find_account(id).await.unwrap().unwrap()
}

/// Writes ciphertexts into a row directly, as someone with access to the database would.
async fn overwrite_tokens(app: &TestApp, id: Uuid, access: &str, refresh: Option<&str>) {
    account::Entity::update_many()
        .col_expr(account::Column::AccessTokenEnc, Expr::value(access))
        .col_expr(account::Column::RefreshTokenEnc, Expr::value(refresh))
        .filter(account::Column::Id.eq(id))
        .exec(app.state.store.connection())
        .await
        .unwrap();
}

fn publish_body(id: &str, platform: &str) -> Value {
    json!({"post": {
        "accountId": id,
        "content": {"text": "hello", "platform": platform},
        "target": {"targetType": platform},
    }})
}

#[actix_web::test]
async fn a_token_moved_to_another_row_is_refused_until_the_account_is_reconnected() {
    // No background actors: every request the simulator receives is one of this test's.
    let app = TestApp::spawn_without_background(|_| {}).await;
    let dashboard = app.sign_in("moved@example.com").await;
    assert_eq!(app.set_plan(dashboard.user_id, "pro").await.status(), 200);
    let (key, _) = app.create_key(&dashboard, "moved").await;
    let victim = connect_by_oauth(&app, &dashboard, "threads", "Vera").await;
    let source = connect_by_oauth(&app, &dashboard, "threads", "Sam").await;
    let victim_id = victim["account_id"].as_str().unwrap().to_string();
    let source_id = source["account_id"].as_str().unwrap().to_string();
    let source_row = row(&app, source_id.parse().unwrap()).await;
    overwrite_tokens(
        &app,
        victim_id.parse().unwrap(),
        &source_row.access_token_enc,
        source_row.refresh_token_enc.as_deref(),
    )
    .await;
    let sim = app.sim.state();
    let vera = sim.account_named("threads", "Vera").unwrap();
    let sam = sim.account_named("threads", "Sam").unwrap();
    // Connecting called the simulator with each account's token; nothing may follow.
    let received = sim.received_count();
    let vera_calls = sim.request_count("threads", &vera.external_id);
    let sam_calls = sim.request_count("threads", &sam.external_id);

    let accounts = listed(&app, &dashboard).await;
    assert_eq!(validity_of(&accounts, &victim_id), false);
    assert_eq!(validity_of(&accounts, &source_id), true);
    let info = token_info(&app, &dashboard, &victim_id).await;
    assert_eq!(info["is_valid"], false, "{info}");
    assert_eq!(info["invalid_reason"], tokens::UNREADABLE_REASON, "{info}");
    let (status, body) = app.post(&key, &publish_body(&victim_id, "threads")).await;
    assert_eq!(
        (status, body),
        (
            401,
            error_body(
                "InvalidToken",
                "The platform access token of this account is no longer valid; reconnect the account"
            )
        )
    );
    assert_eq!(
        sim.received_count(),
        received,
        "nothing reached the simulator"
    );
    assert_eq!(sim.request_count("threads", &vera.external_id), vera_calls);
    assert_eq!(
        sim.request_count("threads", &sam.external_id),
        sam_calls,
        "the moved token was not used under the victim's name either"
    );

    // Reconnecting writes fresh tokens sealed for the row: valid again, and it publishes.
    let reconnected = connect_by_oauth(&app, &dashboard, "threads", "Vera").await;
    assert_eq!(reconnected["account_id"], victim_id.as_str());
    assert_eq!(reconnected["is_valid"], true);
    assert_eq!(
        validity_of(&listed(&app, &dashboard).await, &victim_id),
        true
    );
    assert_eq!(
        token_info(&app, &dashboard, &victim_id).await["is_valid"],
        true
    );
    let (status, body) = app.post(&key, &publish_body(&victim_id, "threads")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        app.sim
            .state()
            .published(Some("threads"), Some(&vera.external_id))
            .len(),
        1
    );
}

/// A value in the form stored before tokens were bound to their rows: `v1:` +
/// base64(nonce ‖ AES-256-GCM ciphertext), no associated data.
fn unbound_v1(key: &str, plaintext: &str) -> String {
    let cipher = Aes256Gcm::new_from_slice(&STANDARD.decode(key).unwrap()).unwrap();
    let mut nonce = [0u8; 12];
    rand::rng().fill_bytes(&mut nonce);
    let mut bytes = nonce.to_vec();
    bytes.extend(
        cipher
            .encrypt(Nonce::from_slice(&nonce), plaintext.as_bytes())
            .unwrap(),
    );
    format!("v1:{}", STANDARD.encode(bytes))
}

#[actix_web::test]
async fn rows_in_the_old_unbound_form_are_sealed_to_their_row_at_start() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("upgrade@example.com").await;
    let account = app.add_account(dashboard.user_id, "x", "old.form").await;
    let key = app
        .config
        .secrets
        .token_encryption_key
        .as_ref()
        .unwrap()
        .expose_secret()
        .to_string();
    overwrite_tokens(
        &app,
        account.id,
        &unbound_v1(&key, "old-access"),
        Some(&unbound_v1(&key, "old-refresh")),
    )
    .await;
    let id = account.id.to_string();
    // Normal reads accept only the bound form.
    assert_eq!(validity_of(&listed(&app, &dashboard).await, &id), false);

    // A start (here a second instance on the same database) upgrades the row.
    let _second = app.spawn_second().await;
    let upgraded = row(&app, account.id).await;
    assert!(upgraded.access_token_enc.starts_with("v2:"), "{upgraded:?}");
    assert!(
        upgraded
            .refresh_token_enc
            .as_deref()
            .unwrap()
            .starts_with("v2:")
    );
    assert_eq!(
        tokens::open_access(&app.state.cipher, &upgraded).unwrap(),
        "old-access"
    );
    assert_eq!(
        tokens::open_refresh(&app.state.cipher, &upgraded).unwrap(),
        Some("old-refresh".to_string())
    );
    assert_eq!(validity_of(&listed(&app, &dashboard).await, &id), true);
}

#[actix_web::test]
async fn a_token_refreshed_between_the_rotations_read_and_write_is_kept() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("rotation@example.com").await;
    let account = app.add_account(dashboard.user_id, "x", "rotating").await;
    let store = &app.state.store;
    let old_key = app
        .config
        .secrets
        .token_encryption_key
        .as_ref()
        .unwrap()
        .expose_secret()
        .to_string();
    let rotating = TokenCipher::from_config_value(&TokenCipher::generate_key())
        .unwrap()
        .with_previous(&old_key)
        .unwrap();

    // The rotation reads the row; a refresh then stores new tokens (X rotates the refresh
    // token); the rotation's write of what it read must not land.
    let read = row(&app, account.id).await;
    let refreshed = tokens::seal(
        &app.state.cipher,
        account.id,
        &PlainTokens::new("refreshed-access", Some("refreshed-refresh")),
    )
    .unwrap();
    store
        .store_refreshed_tokens(
            NewTokens {
                sealed: refreshed,
                token_expires_at: None,
            },
            app.clock_now(),
        )
        .await
        .unwrap();
    assert_eq!(
        store.reseal_account(&rotating, &read).await.unwrap(),
        RowReseal::Changed
    );
    let kept = row(&app, account.id).await;
    assert_eq!(
        tokens::open_access(&rotating, &kept).unwrap(),
        "refreshed-access"
    );
    assert_eq!(
        tokens::open_refresh(&rotating, &kept).unwrap().as_deref(),
        Some("refreshed-refresh")
    );

    // The whole rotation reads the changed row again and re-seals the refreshed tokens.
    let report = store
        .reseal_tokens(&rotating, ResealScope::Every)
        .await
        .unwrap();
    assert_eq!(report.resealed, 1);
    assert!(report.unreadable.is_empty());
    let rotated = row(&app, account.id).await;
    let new_only = TokenCipher::from_config_value(&TokenCipher::generate_key()).unwrap();
    assert!(tokens::open_access(&new_only, &rotated).is_err());
    assert_eq!(
        tokens::open_access(&rotating, &rotated).unwrap(),
        "refreshed-access"
    );
    assert_eq!(
        tokens::open_refresh(&rotating, &rotated)
            .unwrap()
            .as_deref(),
        Some("refreshed-refresh")
    );
    assert!(
        tokens::open_access(&app.state.cipher, &rotated).is_err(),
        "the old key alone no longer opens it"
    );
}

#[actix_web::test]
async fn tokens_refreshed_while_a_rotation_runs_are_all_kept() {
    let app = TestApp::spawn().await;
    let dashboard = app.sign_in("concurrent@example.com").await;
    let mut ids = Vec::new();
    for i in 0..40 {
        ids.push(
            app.add_account(dashboard.user_id, "x", &format!("acct{i}"))
                .await
                .id,
        );
    }
    let old_key = app
        .config
        .secrets
        .token_encryption_key
        .as_ref()
        .unwrap()
        .expose_secret()
        .to_string();
    // The running service and the rotation both hold the new key and the old one, as the
    // documented rotation has them.
    let rotating = TokenCipher::from_config_value(&TokenCipher::generate_key())
        .unwrap()
        .with_previous(&old_key)
        .unwrap();
    let store = app.state.store.clone();
    let rotation = {
        let store = store.clone();
        let rotating = rotating.clone();
        actix_rt::spawn(async move { store.reseal_tokens(&rotating, ResealScope::Every).await })
    };
    for (i, id) in ids.iter().enumerate() {
        let sealed = tokens::seal(
            &rotating,
            *id,
            &PlainTokens::new(
                &format!("new-access-{i}"),
                Some(&format!("new-refresh-{i}")),
            ),
        )
        .unwrap();
        store
            .store_refreshed_tokens(
                NewTokens {
                    sealed,
                    token_expires_at: None,
                },
                app.clock_now(),
            )
            .await
            .unwrap();
        actix_rt::task::yield_now().await;
    }
    let report = rotation.await.unwrap().unwrap();
    assert!(report.unreadable.is_empty());
    for (i, id) in ids.iter().enumerate() {
        let stored = row(&app, *id).await;
        assert_eq!(
            tokens::open_access(&rotating, &stored).unwrap(),
            format!("new-access-{i}")
        );
        assert_eq!(
            tokens::open_refresh(&rotating, &stored).unwrap(),
            Some(format!("new-refresh-{i}"))
        );
    }
}

#[actix_web::test]
async fn the_rotation_command_leaves_and_names_a_row_whose_token_was_moved_into_it() {
    let app = TestApp::spawn().await;
    // The command works on the SQLite file (a PostgreSQL test schema is not reachable by URL).
    let Some(db_url) = app.sqlite_url.clone() else {
        return;
    };
    let dashboard = app.sign_in("cli@example.com").await;
    let source = app
        .add_account(dashboard.user_id, "threads", "source")
        .await;
    let victim = app
        .add_account(dashboard.user_id, "threads", "victim")
        .await;
    overwrite_tokens(&app, victim.id, &source.access_token_enc, None).await;
    let moved = row(&app, victim.id).await;
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
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}");
    assert!(
        stdout.contains("re-encrypted the tokens of 1 accounts"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("can now be emptied"),
        "the old key may still be needed: {stdout}"
    );
    assert!(stderr.contains(&victim.id.to_string()), "{stderr}");
    assert!(!stderr.contains(&source.access_token_enc), "{stderr}");
    let new = TokenCipher::from_config_value(&new_key).unwrap();
    assert_eq!(
        tokens::open_access(&new, &row(&app, source.id).await).unwrap(),
        "plaintext-token-source"
    );
    assert_eq!(
        row(&app, victim.id).await.access_token_enc,
        moved.access_token_enc,
        "the unreadable row is left as it is"
    );
}
