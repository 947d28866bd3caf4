//! What users rely on holds whichever instance answers: allowances counted once, a sign-out,
//! a plan change, uploads and webhook endpoints seen by every instance. Each test writes on
//! one instance and reads on a second one on the same database (PostgreSQL in the PostgreSQL
//! suite; the same SQLite file otherwise, for what is not cached).

use reqwest::{Client, header};
use serde_json::{Value, json};

use crate::{
    authcache::{on_postgres, wait_listening},
    helpers::{SecondInstance, TestApp, status_and_json},
    webhooks::{Caller, create_ok, spawn_with_receiver},
};

async fn second_of(app: &TestApp) -> SecondInstance {
    let second = app.spawn_second().await;
    if on_postgres() {
        wait_listening(&second).await;
    }
    second
}

async fn get(base: &str, path: &str, key: &str) -> (u16, Value) {
    let response = Client::new()
        .get(format!("{base}{path}"))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap();
    status_and_json(response).await
}

#[actix_web::test]
async fn the_free_plans_ten_calls_are_counted_once_across_instances() {
    let app = TestApp::spawn().await;
    let second = second_of(&app).await;
    let dashboard = app.sign_in("free-everywhere@example.com").await;
    let (key, _) = app.create_key(&dashboard, "both").await;
    let mut statuses = Vec::new();
    for i in 0..15 {
        let base = if i % 2 == 0 { &app.base } else { &second.base };
        statuses.push(get(base, "/v2/accounts", &key).await.0);
    }
    let ok = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((ok, refused), (10, 5), "{statuses:?}");
}

#[actix_web::test]
async fn the_x_monthly_allowance_is_counted_once_across_instances() {
    let app = TestApp::spawn_with(|c| c.publishing.x_monthly_posts = 3).await;
    let second = second_of(&app).await;
    let ultra = app.publisher("x", "ultra").await;
    let mut statuses = Vec::new();
    for i in 0..5 {
        let base = if i % 2 == 0 { &app.base } else { &second.base };
        let response = Client::new()
            .post(format!("{base}/v2/posts"))
            .header("service-api-key", &ultra.key)
            .json(&ultra.body(json!({ "text": format!("x post {i}") })))
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        if status == 429 {
            assert_eq!(body["error"], "RateLimitExceeded", "{body}");
        }
        statuses.push(status);
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    assert_eq!(app.published(&ultra.sim).len(), 3);
    crate::helpers::assert_no_violations(&app.sim);
}

#[actix_web::test]
async fn a_session_signed_out_on_one_instance_is_refused_by_another() {
    let app = TestApp::spawn().await;
    let second = second_of(&app).await;
    let (response, _) = crate::auth::callback_response(&app, "signed-out@example.com").await;
    let cookie = response.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    // The browser's cookie goes to every instance behind the load balancer.
    let keys = |base: String| {
        let cookie = cookie.clone();
        async move {
            Client::new()
                .get(format!("{base}/api/keys"))
                .header(header::COOKIE, cookie)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(keys(second.base.clone()).await, 200);
    let response = Client::new()
        .post(app.url("/auth/logout"))
        .header(header::COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // Replayed by a client that ignored its removal: refused by the other instance at once.
    assert_eq!(keys(second.base.clone()).await, 401);
}

#[actix_web::test]
async fn a_plan_change_on_one_instance_meters_the_next_call_on_another() {
    if !on_postgres() {
        // Several instances need PostgreSQL: over one SQLite file the other instance's cache
        // keeps the old plan for `auth.cache_ttl_ms`.
        return;
    }
    let app = TestApp::spawn().await;
    let second = second_of(&app).await;
    let dashboard = app.sign_in("upgraded@example.com").await;
    let (key, _) = app.create_key(&dashboard, "both").await;
    for _ in 0..10 {
        assert_eq!(get(&second.base, "/v2/accounts", &key).await.0, 200);
    }
    // Used up, and the second instance has the Free plan cached.
    assert_eq!(get(&second.base, "/v2/accounts", &key).await.0, 429);
    assert_eq!(app.set_plan(dashboard.user_id, "pro").await.status(), 200);
    // Answered after the second instance dropped its copy: its very next call is Pro's.
    assert_eq!(get(&second.base, "/v2/accounts", &key).await.0, 200);
}

#[actix_web::test]
async fn an_upload_on_one_instance_is_listed_served_and_deleted_by_another() {
    let app = TestApp::spawn().await;
    let second = second_of(&app).await;
    let publisher = app.publisher("facebook", "pro").await;
    let jpeg = service_sim::media::SAMPLE_JPG.to_vec();
    let response = Client::new()
        .post(app.url("/v2/media"))
        .header("service-api-key", &publisher.key)
        .header(header::CONTENT_TYPE, "image/jpeg")
        .body(jpeg.clone())
        .send()
        .await
        .unwrap();
    let (status, uploaded) = status_and_json(response).await;
    assert_eq!(status, 201, "{uploaded}");
    let id = uploaded["media"]["id"].as_str().unwrap();
    let (status, listed) = get(&second.base, "/v2/media", &publisher.key).await;
    assert_eq!(status, 200, "{listed}");
    assert!(
        listed.to_string().contains(id),
        "the second instance lists it: {listed}"
    );
    // Its public URL, asked of the second instance.
    let url = uploaded["media"]["url"].as_str().unwrap();
    let path = &url[url.find("/media/").unwrap()..];
    let served = Client::new()
        .get(format!("{}{path}", second.base))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), 200);
    assert_eq!(served.bytes().await.unwrap().to_vec(), jpeg);
    let deleted = Client::new()
        .delete(format!("{}/v2/media/{id}", second.base))
        .header("service-api-key", &publisher.key)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    let (status, _) = get(&app.base, &format!("/v2/media/{id}"), &publisher.key).await;
    assert_eq!(status, 404, "the first instance no longer has it");
}

#[actix_web::test]
async fn a_webhook_endpoint_made_on_one_instance_is_listed_and_deleted_by_another() {
    let (app, receiver) = spawn_with_receiver(|_| {}).await;
    let second = second_of(&app).await;
    let publisher = app.publisher("facebook", "pro").await;
    let endpoint = create_ok(
        &app,
        Caller::Key(&publisher.key),
        &receiver.url("/hook"),
        None,
    )
    .await;
    let (status, listed) = get(&second.base, "/api/webhooks", &publisher.key).await;
    assert_eq!(status, 200, "{listed}");
    assert!(listed.to_string().contains(&endpoint.id), "{listed}");
    let deleted = Client::new()
        .delete(format!("{}{}", second.base, endpoint.path("")))
        .header("service-api-key", &publisher.key)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    let (status, listed) = get(&app.base, "/api/webhooks", &publisher.key).await;
    assert_eq!(status, 200);
    assert!(!listed.to_string().contains(&endpoint.id), "{listed}");
}
