//! Housekeeping: dead sign-in states, connection states and sessions are deleted by the
//! sweeper, judged by the service's clock, while live ones stay usable.

use chrono::Duration;
use entity::{login_state, oauth_state, session};
use sea_orm::{EntityTrait, PaginatorTrait};
use social_service::{background::sweeper::sweep_once, crypto, store::StateOwner};

use crate::helpers::TestApp;

fn login_state_row(state: &str, expires_at: chrono::DateTime<chrono::Utc>) -> login_state::Model {
    login_state::Model {
        state: state.into(),
        purpose: "login".into(),
        pkce_verifier: "verifier".into(),
        nonce: "nonce".into(),
        return_to: None,
        created_at: expires_at - Duration::minutes(10),
        expires_at,
    }
}

async fn login_states(app: &TestApp) -> Vec<String> {
    let mut states: Vec<String> = login_state::Entity::find()
        .all(app.state.store.connection())
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.state)
        .collect();
    states.sort();
    states
}

#[actix_web::test]
async fn a_sweep_deletes_dead_states_and_sessions_and_keeps_live_ones() {
    let app = TestApp::spawn().await;
    let store = &app.state.store;
    // Signed in before anything else: its session must outlive the sweep.
    let dashboard = app.sign_in("sweep@example.com").await;
    let now = app.clock_now();

    // Dead by the service's clock once it moves 20 minutes on, though not by the wall clock.
    let soon = now + Duration::minutes(10);
    let later = now + Duration::hours(2);
    store
        .insert_login_state(login_state_row("dead-login", soon))
        .await
        .unwrap();
    store
        .insert_login_state(login_state_row("live-login", later))
        .await
        .unwrap();
    for (hash, expires_at) in [("dead-oauth", soon), ("live-oauth", later)] {
        store
            .insert_oauth_state(
                hash,
                StateOwner {
                    user_id: dashboard.user_id,
                    session_hash: "some-session",
                },
                oauth_state::ConnectionKind::Threads,
                "verifier".into(),
                now,
                expires_at,
            )
            .await
            .unwrap();
    }
    let expired = crypto::sha256_hex("expired-session");
    let revoked = crypto::sha256_hex("revoked-session");
    store
        .create_session(dashboard.user_id, expired, now, soon)
        .await
        .unwrap();
    store
        .create_session(dashboard.user_id, revoked.clone(), now, later)
        .await
        .unwrap();
    assert!(store.revoke_session(&revoked, now).await.unwrap());
    let db = store.connection();
    assert_eq!(session::Entity::find().count(db).await.unwrap(), 3);

    app.clock.advance(Duration::minutes(20));
    let counts = sweep_once(store, &app.state.clock).await.unwrap();

    assert_eq!(
        (counts.login_states, counts.oauth_states, counts.sessions),
        (1, 1, 2)
    );
    assert_eq!(login_states(&app).await, vec!["live-login".to_string()]);
    let oauth: Vec<String> = oauth_state::Entity::find()
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.state_hash)
        .collect();
    assert_eq!(oauth, vec!["live-oauth".to_string()]);
    assert_eq!(session::Entity::find().count(db).await.unwrap(), 1);
    // The session that signed in is the one kept, and still signs its user in.
    let me = dashboard
        .client
        .get(app.url("/auth/me"))
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), 200);
}

#[actix_web::test]
async fn a_sweep_forgets_spent_form_tokens_only_once_no_token_that_old_is_valid() {
    let app = TestApp::spawn().await;
    let store = &app.state.store;
    let user = app.sign_in("forms@example.com").await.user_id;
    let now = app.clock_now();
    let ttl = social_service::store::FORM_TOKEN_TTL;
    assert!(
        store
            .spend_form_token("old", user, now - ttl - Duration::minutes(1))
            .await
            .unwrap()
    );
    assert!(store.spend_form_token("recent", user, now).await.unwrap());

    let counts = sweep_once(store, &app.state.clock).await.unwrap();
    assert_eq!(counts.form_tokens, 1);
    assert!(
        !store.spend_form_token("recent", user, now).await.unwrap(),
        "a token that could still be presented stays spent"
    );
    assert!(
        store.spend_form_token("old", user, now).await.unwrap(),
        "the old one was forgotten"
    );
}

#[actix_web::test]
async fn the_sweeper_runs_on_its_own_every_interval() {
    let app = TestApp::spawn_with(|config| config.auth.sweep_interval_secs = 1).await;
    let now = app.clock_now();
    app.state
        .store
        .insert_login_state(login_state_row("abandoned", now - Duration::minutes(1)))
        .await
        .unwrap();
    app.state
        .store
        .insert_login_state(login_state_row("in-progress", now + Duration::minutes(5)))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    while login_states(&app).await.contains(&"abandoned".to_string()) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(15),
            "the sweeper never deleted the expired sign-in state"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(login_states(&app).await, vec!["in-progress".to_string()]);
}

/// A PostgreSQL schema of its own for one test, dropped with it.
struct FreshSchema {
    url: String,
    name: String,
}

impl Drop for FreshSchema {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        // Drop runs inside the test's runtime: use a thread with its own.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                use sea_orm::ConnectionTrait;
                if let Ok(db) = sea_orm::Database::connect(&url).await {
                    let _ = db
                        .execute_unprepared(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
                        .await;
                    let _ = db.close().await;
                }
            });
        })
        .join();
    }
}

#[actix_web::test]
async fn two_instances_starting_at_once_on_a_fresh_database_migrate_once() {
    use sea_orm::{ConnectionTrait, Statement};
    use social_service::{Application, BuildOptions};

    let Some(url) = std::env::var("TEST_DATABASE_URL")
        .ok()
        .filter(|url| !url.is_empty())
    else {
        // SQLite: one process owns the file; there is no lock to take.
        return;
    };
    // An instance to borrow a working configuration from (secrets, simulator, database URL).
    let app = TestApp::spawn().await;
    let schema = FreshSchema {
        url: url.clone(),
        name: format!("t_{}", uuid::Uuid::new_v4().simple()),
    };
    let admin = sea_orm::Database::connect(&url).await.unwrap();
    admin
        .execute_unprepared(&format!("CREATE SCHEMA {}", schema.name))
        .await
        .unwrap();

    let build = || {
        Application::build(
            app.config.clone(),
            BuildOptions {
                pg_schema: Some(schema.name.clone()),
                ..BuildOptions::default()
            },
        )
    };
    let (first, second) = tokio::join!(build(), build());
    let (first, second) = (first.unwrap(), second.unwrap());
    for instance in [first, second] {
        let health = reqwest::get(format!("http://127.0.0.1:{}/health", instance.port()));
        actix_rt::spawn(instance.run_until_stopped());
        assert_eq!(health.await.unwrap().status(), 200);
    }

    let rows = admin
        .query_all_raw(Statement::from_string(
            sea_orm::DbBackend::Postgres,
            format!(
                "SELECT version FROM {}.seaql_migrations ORDER BY version",
                schema.name
            ),
        ))
        .await
        .unwrap();
    let applied: Vec<String> = rows
        .iter()
        .map(|row| row.try_get::<String>("", "version").unwrap())
        .collect();
    let mut expected: Vec<String> = {
        use migration::MigratorTrait;
        migration::Migrator::migrations()
            .iter()
            .map(|m| m.name().to_string())
            .collect()
    };
    expected.sort();
    assert_eq!(applied, expected, "each migration recorded once");
    admin.close().await.unwrap();
}
