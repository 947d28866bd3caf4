//! Webhook endpoints (`/api/webhooks…`): an API key or a dashboard session, not metered. The
//! use cases are [`crate::services::webhooks`]'s; another user's endpoint or message is the
//! same 404 as an unknown one.

use actix_web::{HttpResponse, middleware::from_fn, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::dto::{requests::HistoryQuery, schema::ErrorBody};
use crate::{
    AppState,
    error::ApiError,
    services::webhooks::{EndpointInput, EndpointPatch, WebhookDelivery, WebhookEndpoint},
    store::Page,
    web::auth::{Owner, require_session_or_api_key},
};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/webhooks")
            .wrap(from_fn(require_session_or_api_key))
            .route("", web::post().to(create_webhook))
            .route("", web::get().to(list_webhooks))
            .route("/{id}", web::delete().to(delete_webhook))
            .route("/{id}", web::patch().to(change_webhook))
            .route("/{id}/test", web::post().to(test_webhook))
            .route("/{id}/rotate-secret", web::post().to(rotate_webhook_secret))
            .route("/{id}/deliveries", web::get().to(list_deliveries))
            .service(
                web::resource("/{id}/deliveries/{message_id}/replay")
                    .route(web::post().to(replay_delivery)),
            ),
    );
}

/// `POST /api/webhooks`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhookRequest {
    /// An `https` URL with a public host, at most 2,048 characters.
    pub url: String,
    /// The events to send (see the tag's description); omitted or empty: every event but
    /// `webhook.test`.
    pub events: Option<Vec<String>>,
    /// At most 500 characters.
    pub description: Option<String>,
}

/// `PATCH /api/webhooks/{id}`: only the members sent change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeWebhookRequest {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    /// `null` clears it.
    #[serde(default, deserialize_with = "present")]
    pub description: Option<Option<String>>,
    /// `true` enables a disabled endpoint again; `false` disables it.
    pub is_active: Option<bool>,
}

/// A member sent as `null` is `Some(None)`, one left out `None`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookCreated {
    pub success: bool,
    pub webhook: WebhookEndpoint,
    /// `whsec_` and base64: the signing key. Shown only here; keep it.
    pub secret: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookFound {
    pub success: bool,
    pub webhook: WebhookEndpoint,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookList {
    pub success: bool,
    pub webhooks: Vec<WebhookEndpoint>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookDone {
    pub success: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookQueued {
    pub success: bool,
    /// The message's `webhook-id`.
    pub message_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookSecretRotated {
    pub success: bool,
    /// The new secret, shown only here.
    pub secret: String,
    /// Until then the previous secret also signs every message.
    #[schema(format = DateTime)]
    pub previous_secret_expires_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookDeliveries {
    pub success: bool,
    pub deliveries: Vec<WebhookDelivery>,
    pub total: u64,
    pub limit: u64,
    pub offset: u64,
}

/// Creates an endpoint and answers its signing secret, once.
#[utoipa::path(post, path = "/api/webhooks", tag = "webhooks",
    security(("api_key" = []), ("session" = [])),
    request_body = CreateWebhookRequest,
    responses(
        (status = 201, description = "Created", body = WebhookCreated),
        (status = 400, description = "`InvalidRequest`: a URL that is not public `https` or is over 2,048 characters, an unknown event, a description over 500 characters, or a 21st endpoint", body = ErrorBody),
        (status = 401, description = "`Unauthorized` or `InvalidApiKey`", body = ErrorBody),
    ))]
pub async fn create_webhook(
    state: web::Data<AppState>,
    owner: Owner,
    body: web::Json<CreateWebhookRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let input = EndpointInput {
        url: body.url,
        events: body.events,
        description: body.description,
    };
    let (webhook, secret) = state.webhooks.create(owner.user_id, input).await?;
    Ok(HttpResponse::Created().json(WebhookCreated {
        success: true,
        webhook,
        secret,
    }))
}

/// The caller's endpoints, newest first (no secrets).
#[utoipa::path(get, path = "/api/webhooks", tag = "webhooks",
    security(("api_key" = []), ("session" = [])),
    responses(
        (status = 200, description = "The endpoints", body = WebhookList),
        (status = 401, description = "`Unauthorized` or `InvalidApiKey`", body = ErrorBody),
    ))]
pub async fn list_webhooks(
    state: web::Data<AppState>,
    owner: Owner,
) -> Result<HttpResponse, ApiError> {
    let webhooks = state.webhooks.list(owner.user_id).await?;
    Ok(HttpResponse::Ok().json(WebhookList {
        success: true,
        webhooks,
    }))
}

/// Deletes an endpoint with its delivery log; its pending messages are not sent.
#[utoipa::path(delete, path = "/api/webhooks/{id}", tag = "webhooks",
    security(("api_key" = []), ("session" = [])),
    params(("id" = String, Path, description = "The endpoint's id")),
    responses(
        (status = 200, description = "Deleted", body = WebhookDone),
        (status = 401, description = "`Unauthorized` or `InvalidApiKey`", body = ErrorBody),
        (status = 404, description = "`NotFound`: not one of the caller's endpoints", body = ErrorBody),
    ))]
pub async fn delete_webhook(
    state: web::Data<AppState>,
    owner: Owner,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state.webhooks.delete(owner.user_id, &id).await?;
    Ok(HttpResponse::Ok().json(WebhookDone { success: true }))
}

/// Changes an endpoint: its URL, events, description, or whether it is active (`true`
/// enables one that was disabled).
#[utoipa::path(patch, path = "/api/webhooks/{id}", tag = "webhooks",
    security(("api_key" = []), ("session" = [])),
    params(("id" = String, Path, description = "The endpoint's id")),
    request_body = ChangeWebhookRequest,
    responses(
        (status = 200, description = "Changed", body = WebhookFound),
        (status = 400, description = "`InvalidRequest`", body = ErrorBody),
        (status = 401, description = "`Unauthorized` or `InvalidApiKey`", body = ErrorBody),
        (status = 404, description = "`NotFound`: not one of the caller's endpoints", body = ErrorBody),
    ))]
pub async fn change_webhook(
    state: web::Data<AppState>,
    owner: Owner,
    id: web::Path<String>,
    body: web::Json<ChangeWebhookRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let patch = EndpointPatch {
        url: body.url,
        events: body.events,
        description: body.description,
        is_active: body.is_active,
    };
    let webhook = state.webhooks.change(owner.user_id, &id, patch).await?;
    Ok(HttpResponse::Ok().json(WebhookFound {
        success: true,
        webhook,
    }))
}

/// Queues a `webhook.test` message to the endpoint (also a disabled one).
#[utoipa::path(post, path = "/api/webhooks/{id}/test", tag = "webhooks",
    security(("api_key" = []), ("session" = [])),
    params(("id" = String, Path, description = "The endpoint's id")),
    responses(
        (status = 202, description = "Queued", body = WebhookQueued),
        (status = 401, description = "`Unauthorized` or `InvalidApiKey`", body = ErrorBody),
        (status = 404, description = "`NotFound`: not one of the caller's endpoints", body = ErrorBody),
    ))]
pub async fn test_webhook(
    state: web::Data<AppState>,
    owner: Owner,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let message_id = state.webhooks.test(owner.user_id, &id).await?;
    Ok(HttpResponse::Accepted().json(WebhookQueued {
        success: true,
        message_id,
    }))
}

/// A new signing secret; for 24 hours the previous one signs every message too.
#[utoipa::path(post, path = "/api/webhooks/{id}/rotate-secret", tag = "webhooks",
    security(("api_key" = []), ("session" = [])),
    params(("id" = String, Path, description = "The endpoint's id")),
    responses(
        (status = 200, description = "Rotated", body = WebhookSecretRotated),
        (status = 401, description = "`Unauthorized` or `InvalidApiKey`", body = ErrorBody),
        (status = 404, description = "`NotFound`: not one of the caller's endpoints", body = ErrorBody),
    ))]
pub async fn rotate_webhook_secret(
    state: web::Data<AppState>,
    owner: Owner,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (secret, until) = state.webhooks.rotate_secret(owner.user_id, &id).await?;
    Ok(HttpResponse::Ok().json(WebhookSecretRotated {
        success: true,
        secret,
        previous_secret_expires_at: crate::domain::time::iso(until),
    }))
}

/// The endpoint's messages, newest first, each with its attempts.
#[utoipa::path(get, path = "/api/webhooks/{id}/deliveries", tag = "webhooks",
    security(("api_key" = []), ("session" = [])),
    params(("id" = String, Path, description = "The endpoint's id"), HistoryQuery),
    responses(
        (status = 200, description = "A page of the delivery log", body = WebhookDeliveries),
        (status = 400, description = "`limit` below 1, negative `offset`, or not a number", body = ErrorBody),
        (status = 401, description = "`Unauthorized` or `InvalidApiKey`", body = ErrorBody),
        (status = 404, description = "`NotFound`: not one of the caller's endpoints", body = ErrorBody),
    ))]
pub async fn list_deliveries(
    state: web::Data<AppState>,
    owner: Owner,
    id: web::Path<String>,
    query: web::Query<HistoryQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = Page::try_from(query.into_inner())?;
    let (deliveries, total) = state.webhooks.deliveries(owner.user_id, &id, page).await?;
    Ok(HttpResponse::Ok().json(WebhookDeliveries {
        success: true,
        deliveries,
        total,
        limit: page.limit,
        offset: page.offset,
    }))
}

/// Sends a message again now: the same `webhook-id` and body, its retries started over.
#[utoipa::path(post, path = "/api/webhooks/{id}/deliveries/{message_id}/replay", tag = "webhooks",
    security(("api_key" = []), ("session" = [])),
    params(("id" = String, Path, description = "The endpoint's id"),
        ("message_id" = String, Path, description = "The message's `webhook-id`")),
    responses(
        (status = 202, description = "Queued", body = WebhookQueued),
        (status = 401, description = "`Unauthorized` or `InvalidApiKey`", body = ErrorBody),
        (status = 404, description = "`NotFound`: not one of the caller's endpoints or messages", body = ErrorBody),
    ))]
pub async fn replay_delivery(
    state: web::Data<AppState>,
    owner: Owner,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, message_id) = path.into_inner();
    state
        .webhooks
        .replay(owner.user_id, &id, &message_id)
        .await?;
    Ok(HttpResponse::Accepted().json(WebhookQueued {
        success: true,
        message_id,
    }))
}
