//! Control endpoints under `/_sim`, for tests, benchmarks and the demo (not part of any platform):
//!
//! - `POST /_sim/accounts` `{platform, name, username?}` → the new account with its tokens;
//! - `GET /_sim/published?platform=&account_id=` → `{count, items}` in publish order;
//! - `GET /_sim/published/{id}` → one item;
//! - `GET /_sim/requests/{platform}/{account_id}` → `{count, peak_writes}`: the calls that
//!   carried its token, and the most of its POST calls ever answered at once;
//!   `GET /_sim/requests` → `{accounts:[{platform, account_id, count, peak_writes}]}` for every
//!   account that made a call;
//! - `PUT /_sim/faults/{platform}/{account_id}` with a [`FaultSpec`]; `DELETE` the same path, or
//!   `DELETE /_sim/faults` for every account;
//! - `GET /_sim/violations` → `{count, violations:[{platform, method, path, rule, detail}]}`, the
//!   protocol violations seen (requests refused because the client broke the platform's rules);
//!   `DELETE /_sim/violations` clears them;
//! - `POST /_sim/idp/rotate-key` → `{kid}`: the identity provider signs with a new key from now on;
//! - `PUT /_sim/idp/unverified/{email}`: its ID tokens for that address say
//!   `email_verified: false`; `DELETE` the same path makes it verified again.

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::json;

use super::{
    idp::IdpState,
    state::{FaultSpec, SimState},
};

const PLATFORMS: [&str; 6] = ["facebook", "instagram", "threads", "tiktok", "youtube", "x"];

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/accounts", web::post().to(create_account))
        .route("/published", web::get().to(list_published))
        .route("/published/{id}", web::get().to(get_published))
        .route("/requests", web::get().to(request_counts))
        .route(
            "/requests/{platform}/{account_id}",
            web::get().to(request_count),
        )
        .route("/violations", web::get().to(list_violations))
        .route("/violations", web::delete().to(clear_violations))
        .route("/idp/rotate-key", web::post().to(rotate_idp_key))
        .route("/idp/unverified/{email}", web::put().to(mark_unverified))
        .route("/idp/unverified/{email}", web::delete().to(mark_verified))
        .route("/faults", web::delete().to(clear_all_faults))
        .route("/faults/{platform}/{account_id}", web::put().to(set_faults))
        .route(
            "/faults/{platform}/{account_id}",
            web::delete().to(clear_faults),
        );
}

#[derive(Deserialize)]
struct NewAccount {
    platform: String,
    name: String,
    username: Option<String>,
}

async fn create_account(state: web::Data<SimState>, body: web::Json<NewAccount>) -> HttpResponse {
    if !PLATFORMS.contains(&body.platform.as_str()) {
        return HttpResponse::BadRequest()
            .json(json!({"error": format!("unknown platform {}", body.platform)}));
    }
    let account = state.create_account(&body.platform, &body.name, body.username.as_deref());
    HttpResponse::Created().json(account)
}

#[derive(Deserialize)]
struct PublishedQuery {
    platform: Option<String>,
    account_id: Option<String>,
}

async fn list_published(
    state: web::Data<SimState>,
    query: web::Query<PublishedQuery>,
) -> HttpResponse {
    let items = state.published(query.platform.as_deref(), query.account_id.as_deref());
    HttpResponse::Ok().json(json!({"count": items.len(), "items": items}))
}

async fn get_published(state: web::Data<SimState>, id: web::Path<String>) -> HttpResponse {
    match state.published_item(&id) {
        Some(item) => HttpResponse::Ok().json(item),
        None => HttpResponse::NotFound().json(json!({"error": "no such published item"})),
    }
}

async fn request_count(
    state: web::Data<SimState>,
    path: web::Path<(String, String)>,
) -> HttpResponse {
    let (platform, account_id) = path.into_inner();
    HttpResponse::Ok().json(json!({
        "count": state.request_count(&platform, &account_id),
        "peak_writes": state.peak_writes(&platform, &account_id),
    }))
}

async fn request_counts(state: web::Data<SimState>) -> HttpResponse {
    let accounts: Vec<_> = state
        .request_counts()
        .into_iter()
        .map(|(platform, account_id, count, peak_writes)| {
            json!({"platform": platform, "account_id": account_id, "count": count, "peak_writes": peak_writes})
        })
        .collect();
    HttpResponse::Ok().json(json!({ "accounts": accounts }))
}

async fn set_faults(
    state: web::Data<SimState>,
    path: web::Path<(String, String)>,
    body: web::Json<FaultSpec>,
) -> HttpResponse {
    let (platform, account_id) = path.into_inner();
    state.set_faults(&platform, &account_id, body.into_inner());
    HttpResponse::NoContent().finish()
}

async fn clear_faults(
    state: web::Data<SimState>,
    path: web::Path<(String, String)>,
) -> HttpResponse {
    let (platform, account_id) = path.into_inner();
    state.clear_faults(Some((&platform, &account_id)));
    HttpResponse::NoContent().finish()
}

async fn clear_all_faults(state: web::Data<SimState>) -> HttpResponse {
    state.clear_faults(None);
    HttpResponse::NoContent().finish()
}

async fn list_violations(state: web::Data<SimState>) -> HttpResponse {
    let violations = state.violations();
    HttpResponse::Ok().json(json!({"count": violations.len(), "violations": violations}))
}

async fn clear_violations(state: web::Data<SimState>) -> HttpResponse {
    state.take_violations();
    HttpResponse::NoContent().finish()
}

async fn rotate_idp_key(idp: web::Data<IdpState>) -> HttpResponse {
    match idp.rotate_key() {
        Ok(kid) => HttpResponse::Ok().json(json!({ "kid": kid })),
        Err(err) => HttpResponse::InternalServerError().json(json!({"error": err.to_string()})),
    }
}

async fn mark_unverified(idp: web::Data<IdpState>, email: web::Path<String>) -> HttpResponse {
    idp.set_email_verified(&email, false);
    HttpResponse::NoContent().finish()
}

async fn mark_verified(idp: web::Data<IdpState>, email: web::Path<String>) -> HttpResponse {
    idp.set_email_verified(&email, true);
    HttpResponse::NoContent().finish()
}
