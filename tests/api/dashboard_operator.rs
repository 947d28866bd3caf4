//! The dashboard's operator pages at the HTTP level: an operator (by the configuration's e-mail
//! list, or by the CLI's stored role) sees the live actor view, the scheduler's and collector's
//! panels and the usage table, and changes a plan through the form; anyone else is sent to the
//! overview, told why, and sees no data; cross-site posts are refused; `/admin/actors` redirects
//! here.

use reqwest::header;
use serde_json::{Value, json};
use social_service::services::operator;

use crate::helpers::{Dashboard, TestApp, status_and_json};
use crate::pages::{BROWSER_ACCEPT, get, post_form};

const OPERATOR_EMAIL: &str = "ops@example.com";

/// A service whose configuration names `OPERATOR_EMAIL` an operator (in another case, as people
/// type it), with the scheduler and the collector running.
async fn spawn() -> TestApp {
    TestApp::spawn_with(|config| {
        config.auth.operator_emails = vec!["Ops@Example.com".into()];
        config.scheduler.enabled = true;
        config.collector.enabled = true;
    })
    .await
}

/// The operator page's status for this user (200 shown, 303 sent away).
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

async fn subscription(app: &TestApp, dashboard: &Dashboard) -> Value {
    let (status, body) = status_and_json(
        dashboard
            .client
            .get(app.url("/api/subscription/status"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["subscription"].clone()
}

#[actix_web::test]
async fn an_operator_by_configured_email_sees_actors_panels_and_usage() {
    let app = spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let (status, _) = app
        .post(&publisher.key, &publisher.body(json!({"text": "warm up"})))
        .await;
    assert_eq!(status, 200);
    let other = app.publisher("facebook", "free").await;
    for _ in 0..2 {
        assert_eq!(app.key_get(&other.key).await.status(), 200);
    }
    let ops = app.sign_in(OPERATOR_EMAIL).await;

    let (status, html) = get(&app, &ops, "/dashboard/operator").await;
    assert_eq!(status, 200, "{html}");
    // The navigation shows the operator link to operators.
    assert!(html.contains("href=\"/dashboard/operator\""), "{html}");
    // The actor table: the account's actor, its state, limiter and token.
    assert!(html.contains("Account actors"), "{html}");
    assert!(
        html.contains(&publisher.account.id.to_string()),
        "the threads actor: {html}"
    );
    assert!(html.contains("actor-idle"), "{html}");
    assert!(html.contains("valid"), "{html}");
    // Scheduler and collector as panels, not JSON.
    for heading in ["Scheduler", "Collector", "Next run", "Collecting for"] {
        assert!(html.contains(heading), "{heading}: {html}");
    }
    assert!(!html.contains("\"running\""), "no JSON dump: {html}");
    assert!(!html.contains("<pre"), "no JSON dump: {html}");
    // The usage table lists users with their plans and a plan form each.
    assert!(html.contains("Users and plans"), "{html}");
    assert!(html.contains(OPERATOR_EMAIL), "{html}");
    assert!(
        html.contains(&format!(
            "action=\"/dashboard/operator/users/{}/plan\"",
            other.user_id
        )),
        "{html}"
    );
    // Each user's row shows that user's usage, as their own subscription status counts it
    // (the table reads every user's counter in one query).
    for (who, expected) in [(&publisher, None), (&other, Some((2, 10)))] {
        let (status, body) = status_and_json(
            who.dashboard
                .client
                .get(app.url("/api/subscription/status"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let used = body["api_usage"]["current_usage"].as_i64().unwrap();
        let text = match expected {
            Some((calls, limit)) => {
                assert_eq!(used, calls, "the two calls with the key: {body}");
                format!("{used} of {limit} calls used, {} left", limit - used)
            }
            None => format!("{used} calls, no limit"),
        };
        let id = format!("action=\"/dashboard/operator/users/{}/plan\"", who.user_id);
        let row_end = html.find(&id).unwrap_or_else(|| panic!("{id}: {html}"));
        let row = &html[html[..row_end].rfind("<tr").unwrap()..row_end];
        assert!(row.contains(&format!("<td>{text}</td>")), "{text} in {row}");
    }
    // It refreshes with the script (never inline); without it, a link does.
    assert!(
        html.contains("data-refresh=\"/dashboard/operator\""),
        "{html}"
    );
    assert!(html.contains("class=\"op-refresh\""), "{html}");
    let script = html
        .split("<script src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    let js = ops
        .client
        .get(app.url(script))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for part in [
        "op-live",
        "data-refresh",
        "document.hidden",
        "getSelection",
        "5000",
    ] {
        assert!(js.contains(part), "{part} in {script}");
    }

    // Filters are a GET form: the facebook filter hides the threads actor.
    let (status, filtered) = get(&app, &ops, "/dashboard/operator?platform=facebook&state=").await;
    assert_eq!(status, 200);
    assert!(!filtered.contains(&publisher.account.id.to_string()));
    assert!(filtered.contains("<option value=\"facebook\" selected>"));
    let (_, by_state) = get(&app, &ops, "/dashboard/operator?state=publishing").await;
    assert!(!by_state.contains(&publisher.account.id.to_string()));
    // An unknown filter value is ignored, not a JSON error.
    let (status, _) = get(&app, &ops, "/dashboard/operator?state=asleep").await;
    assert_eq!(status, 200);
}

#[actix_web::test]
async fn the_plan_form_changes_the_users_plan() {
    let app = spawn().await;
    let customer = app.sign_in("customer@example.com").await;
    assert_eq!(subscription(&app, &customer).await["plan"], "free");
    let ops = app.sign_in(OPERATOR_EMAIL).await;

    let path = format!("/dashboard/operator/users/{}/plan", customer.user_id);
    let response = post_form(
        &app,
        &ops,
        &path,
        &[("plan", "ultra"), ("plan_type", "annual")],
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        response.headers()[header::LOCATION],
        "/dashboard/operator?notice=plan_changed"
    );
    let status = subscription(&app, &customer).await;
    assert_eq!(status["plan"], "ultra", "{status}");
    let stored = app
        .state
        .store
        .find_user(customer.user_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.plan_type.as_deref(), Some("annual"));
    let (_, html) = get(&app, &ops, "/dashboard/operator?notice=plan_changed").await;
    assert!(html.contains("The plan was changed."), "{html}");

    // A plan that does not exist changes nothing and says so.
    let response = post_form(&app, &ops, &path, &[("plan", "gold")]).await;
    assert_eq!(
        response.headers()[header::LOCATION],
        "/dashboard/operator?error=plan_invalid"
    );
    assert_eq!(subscription(&app, &customer).await["plan"], "ultra");
}

#[actix_web::test]
async fn a_non_operator_is_refused_and_sees_no_data() {
    let app = spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let (status, _) = app
        .post(&publisher.key, &publisher.body(json!({"text": "warm up"})))
        .await;
    assert_eq!(status, 200);
    let victim = app.sign_in("victim@example.com").await;
    let user = app.sign_in("user@example.com").await;

    let (_, overview) = get(&app, &user, "/dashboard").await;
    assert!(
        !overview.contains("/dashboard/operator"),
        "no operator link for a user: {overview}"
    );
    let response = user
        .no_redirect
        .get(app.url("/dashboard/operator"))
        .header(header::ACCEPT, BROWSER_ACCEPT)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(
        response.headers()[header::LOCATION],
        "/dashboard?notice=operator_only"
    );
    assert_eq!(response.text().await.unwrap(), "", "no data");
    // Where it lands says why.
    let (status, html) = get(&app, &user, "/dashboard?notice=operator_only").await;
    assert_eq!(status, 200);
    assert!(html.contains("This page is for operators."), "{html}");
    for secret in [
        publisher.account.id.to_string(),
        "victim@example.com".to_string(),
        "Scheduler".to_string(),
    ] {
        assert!(!html.contains(&secret), "{secret} leaked: {html}");
    }
    // Nor may a user change a plan (their own included).
    for target in [victim.user_id, user.user_id] {
        let response = post_form(
            &app,
            &user,
            &format!("/dashboard/operator/users/{target}/plan"),
            &[("plan", "ultra")],
        )
        .await;
        assert_eq!(response.status(), 303);
        assert_eq!(
            response.headers()[header::LOCATION],
            "/dashboard?notice=operator_only"
        );
    }
    assert_eq!(subscription(&app, &victim).await["plan"], "free");
    assert_eq!(subscription(&app, &user).await["plan"], "free");
    // Without a session: the sign-in page, as everywhere in the dashboard.
    let response = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(app.url("/dashboard/operator"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()[header::LOCATION], "/signin");
}

#[actix_web::test]
async fn the_role_granted_by_the_cli_opens_the_pages_and_withdrawing_it_closes_them() {
    let app = spawn().await;
    let someone = app.sign_in("someone@example.com").await;
    assert_eq!(operator_page_status(&app, &someone).await, 303);

    // The function `service user operator <email> --on|--off` calls.
    let now = app.clock_now();
    let user = operator::set_operator(&app.state.store, now, someone.user_id, true)
        .await
        .unwrap();
    assert!(user.is_operator);
    let (status, html) = get(&app, &someone, "/dashboard/operator").await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Users and plans"));

    operator::set_operator(&app.state.store, now, someone.user_id, false)
        .await
        .unwrap();
    assert_eq!(operator_page_status(&app, &someone).await, 303);
}

#[actix_web::test]
async fn a_cross_site_plan_change_is_refused() {
    let app = spawn().await;
    let customer = app.sign_in("customer@example.com").await;
    let ops = app.sign_in(OPERATOR_EMAIL).await;
    let path = format!("/dashboard/operator/users/{}/plan", customer.user_id);
    for (name, value) in [
        ("origin", "https://evil.example"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let response = ops
            .no_redirect
            .post(app.url(&path))
            .header(name, value)
            .form(&[("plan", "ultra")])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{name}: {value}");
    }
    assert_eq!(subscription(&app, &customer).await["plan"], "free");
}

#[actix_web::test]
async fn the_admin_actors_address_redirects_to_the_operator_page() {
    let app = spawn().await;
    let response = app
        .http
        .get(app.url("/admin/actors?platform=x"))
        .header(header::ACCEPT, BROWSER_ACCEPT)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()[header::LOCATION], "/dashboard/operator");
    // The machine endpoint is not redirected: without the operator's bearer token it is 401.
    let response = app
        .http
        .get(app.url("/api/admin/actors"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}

/// The operator-role migration leaves existing users without the role, and rolls back.
#[actix_rt::test]
async fn existing_users_are_not_operators_after_the_migration() {
    use migration::{Migrator, MigratorTrait};
    use sea_orm::{ConnectionTrait, Database, DbBackend, Statement};

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/m.db?mode=rwc", dir.path().display());
    let db = Database::connect(url).await.unwrap();
    let migrations = Migrator::migrations();
    let at = migrations
        .iter()
        .position(|m| m.name() == "m20261124_000008_operator_role")
        .unwrap();
    Migrator::up(&db, Some(u32::try_from(at).unwrap()))
        .await
        .unwrap();
    db.execute_unprepared(
        "INSERT INTO users (id, email, display_name, oidc_issuer, oidc_subject, plan, \
         created_at, updated_at) VALUES ('u', 'old@example.com', NULL, 'i', 's', 'free', \
         '2026-11-21T00:00:00Z', '2026-11-21T00:00:00Z')",
    )
    .await
    .unwrap();
    Migrator::up(&db, None).await.unwrap();
    let rows = db
        .query_all_raw(Statement::from_string(
            DbBackend::Sqlite,
            "SELECT is_operator FROM users",
        ))
        .await
        .unwrap();
    let flags: Vec<bool> = rows
        .iter()
        .map(|row| row.try_get::<bool>("", "is_operator").unwrap())
        .collect();
    assert_eq!(flags, [false]);
    Migrator::down(&db, Some(u32::try_from(migrations.len() - at).unwrap()))
        .await
        .unwrap();
    let rows = db
        .query_all_raw(Statement::from_string(
            DbBackend::Sqlite,
            "SELECT email FROM users",
        ))
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "the user survives the rollback");
}
