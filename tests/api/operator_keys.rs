//! `service user list`, `service key list EMAIL` and `service key revoke ID`, called as the
//! command calls them: from a store of its own, as a separate process beside running instances.

use chrono::Duration;
use social_service::services::{keys, operator, user_access};

use crate::{
    authcache::{on_postgres, wait_listening},
    helpers::TestApp,
    user_access::{assert_key_refused, key_status},
};

fn address() -> String {
    format!("{}@example.com", uuid::Uuid::new_v4().simple())
}

#[actix_web::test]
async fn user_list_shows_every_user_oldest_first_with_plan_role_and_state() {
    let app = TestApp::spawn().await;
    let (first, second) = (address(), address());
    let older = app.sign_in(&first).await;
    app.clock.advance(Duration::seconds(5));
    let newer = app.sign_in(&second).await;
    assert_eq!(app.set_plan(newer.user_id, "pro").await.status(), 200);
    let cli = app.cli_store().await;
    operator::set_operator(&cli, app.clock_now(), older.user_id, true)
        .await
        .unwrap();
    user_access::disable_users(&cli, app.clock_now(), &second)
        .await
        .unwrap();

    let users = user_access::list_users(&cli).await.unwrap();
    let seen: Vec<_> = users
        .iter()
        .map(|user| {
            (
                user.id,
                user.email.clone().unwrap(),
                user.plan.as_str(),
                user.disabled_at.is_some(),
                user.is_operator,
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (older.user_id, first, "free", false, true),
            (newer.user_id, second, "pro", true, false),
        ]
    );
    assert!(users[0].created_at < users[1].created_at);
}

#[actix_web::test]
async fn key_list_shows_every_key_of_the_address_revoked_ones_too_and_no_secret() {
    let app = TestApp::spawn().await;
    let email = address();
    let owner = app.sign_in(&email).await;
    let (kept, _) = app.create_key(&owner, "kept").await;
    app.clock.advance(Duration::seconds(1));
    let (deleted, deleted_id) = app.create_key(&owner, "deleted").await;
    let stranger = app.sign_in(&address()).await;
    app.create_key(&stranger, "someone else's").await;
    let response = owner
        .client
        .delete(app.url(&format!("/api/keys/{deleted_id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let cli = app.cli_store().await;
    // The address as the operator types it, in any case.
    let listed = keys::list_keys_by_email(&cli, &email.to_uppercase())
        .await
        .unwrap();
    let seen: Vec<_> = listed
        .iter()
        .map(|key| (key.name.as_str(), key.is_active, key.user_id))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("kept", true, owner.user_id),
            ("deleted", false, owner.user_id)
        ]
    );
    for (key, full) in listed.iter().zip([&kept, &deleted]) {
        assert!(full.starts_with(key.key_preview.trim_end_matches('.')));
        assert_ne!(&key.key_preview, full);
    }
    assert!(matches!(
        keys::list_keys_by_email(&cli, "nobody@example.com").await,
        Err(keys::KeyCommandError::NoSuchUser(_))
    ));
}

#[actix_web::test]
async fn a_revoked_key_is_refused_on_every_instance_from_the_next_request() {
    let app = TestApp::spawn().await;
    let owner = app.sign_in(&address()).await;
    assert_eq!(app.set_plan(owner.user_id, "pro").await.status(), 200);
    let (revoked, revoked_id) = app.create_key(&owner, "revoked").await;
    let (other, _) = app.create_key(&owner, "other").await;
    let second = app.spawn_second().await;
    if on_postgres() {
        wait_listening(&second).await;
    }
    // Warm on both instances: the key and its owner come from memory now.
    for base in [&app.base, &second.base] {
        for _ in 0..2 {
            assert_eq!(key_status(base, &revoked).await, 200);
        }
    }

    let cli = app.cli_store().await;
    let id = uuid::Uuid::parse_str(&revoked_id).unwrap();
    let key = keys::revoke_key(&cli, app.clock_now(), id).await.unwrap();
    assert!(!key.is_active);
    assert_key_refused(&app.base, &revoked).await;
    assert_key_refused(&second.base, &revoked).await;
    // The owner's other key, and the owner's list, as `DELETE /api/keys/{id}` leaves them.
    assert_eq!(key_status(&second.base, &other).await, 200);
    let listed: serde_json::Value = owner
        .client
        .get(app.url("/api/keys"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(!listed.to_string().contains(&revoked_id));

    // Again: nothing changes, and it is still refused.
    let again = keys::revoke_key(&cli, app.clock_now(), id).await.unwrap();
    assert!(!again.is_active);
    assert_eq!(key_status(&app.base, &revoked).await, 401);
    assert!(matches!(
        keys::revoke_key(&cli, app.clock_now(), uuid::Uuid::new_v4()).await,
        Err(keys::KeyCommandError::NoSuchKey(_))
    ));
}

#[test]
fn the_command_revoking_an_unknown_key_says_so_with_exit_code_1() {
    let dir = tempfile::tempdir().unwrap();
    let id = uuid::Uuid::new_v4().to_string();
    let output = crate::config::service()
        .current_dir(dir.path())
        .args(["key", "revoke", &id])
        .env(
            "SERVICE__DATABASE__URL",
            format!("sqlite://{}/s.db?mode=rwc", dir.path().display()),
        )
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("error: no API key has the id {id}")),
        "{stderr}"
    );
}

/// The built binary's `user list`, `key list` and `key revoke`, in both output forms, on the
/// database of a running instance (SQLite: the binary finds a PostgreSQL test's schema by no
/// option of its own, and the library tests above cover PostgreSQL).
#[actix_web::test]
async fn the_binary_lists_users_and_keys_in_both_forms_and_revokes_a_key_the_service_then_refuses()
{
    if on_postgres() {
        return;
    }
    let app = TestApp::spawn().await;
    let (first, second) = (address(), address());
    let owner = app.sign_in(&first).await;
    app.clock.advance(Duration::seconds(5));
    let other = app.sign_in(&second).await;
    assert_eq!(app.set_plan(other.user_id, "pro").await.status(), 200);
    let (kept, _) = app.create_key(&owner, "kept").await;
    app.clock.advance(Duration::seconds(1));
    let (revoked, revoked_id) = app.create_key(&owner, "to revoke").await;
    assert_eq!(key_status(&app.base, &revoked).await, 200);
    let run = |args: &[&str]| {
        let output = crate::config::service()
            .args(args)
            .env("SERVICE__DATABASE__URL", &app.config.database.url)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).to_string();
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        stdout
    };

    let lines = run(&["user", "list"]);
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with(&format!("{} {first} free enabled user ", owner.user_id)));
    assert!(lines[1].starts_with(&format!("{} {second} pro enabled user ", other.user_id)));
    let users: serde_json::Value = serde_json::from_str(&run(&["user", "list", "--json"])).unwrap();
    let emails: Vec<_> = users
        .as_array()
        .unwrap()
        .iter()
        .map(|user| (user["email"].as_str().unwrap(), user["plan"].as_str()))
        .collect();
    assert_eq!(
        emails,
        vec![
            (first.as_str(), Some("free")),
            (second.as_str(), Some("pro"))
        ]
    );

    let listed = run(&["key", "list", &first]);
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(
        listed.contains("\"kept\"") && listed.contains(" active "),
        "{listed}"
    );
    let as_json = run(&["key", "list", &first, "--json"]);
    for full in [&kept, &revoked] {
        assert!(!listed.contains(full.as_str()) && !as_json.contains(full.as_str()));
    }
    let keys: serde_json::Value = serde_json::from_str(&as_json).unwrap();
    let names: Vec<_> = keys
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["kept", "to revoke"]);

    run(&["key", "revoke", &revoked_id]);
    assert_key_refused(&app.base, &revoked).await;
    assert_eq!(key_status(&app.base, &kept).await, 200);
    let after = run(&["key", "list", &first]);
    let revoked_line = after
        .lines()
        .find(|line| line.contains("\"to revoke\""))
        .unwrap();
    assert!(revoked_line.contains(" revoked "), "{after}");
}
