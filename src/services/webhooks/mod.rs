//! Webhooks: a user's endpoints (created, listed, changed, tested, their secret rotated, their
//! delivery log read and a message replayed) and the delivery of messages (`delivery.rs`),
//! built from the outbox's events (`messages.rs`). Endpoints are the caller's own: another
//! user's id answers exactly as an unknown one does.

mod delivery;
mod messages;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use entity::{webhook_attempt, webhook_endpoint, webhook_message};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

pub use delivery::{AttemptQueue, PassReport};

use crate::{
    clock::Clock,
    config::WebhooksConfig,
    crypto::{Binding, TokenCipher},
    domain::{
        text::parse_uuid,
        time::iso,
        webhook::{
            EventSet, MAX_DESCRIPTION_CHARS, MAX_ENDPOINTS_PER_USER, PREVIOUS_SECRET_HOURS,
            WebhookEvent, WebhookSecret, is_message_id,
        },
    },
    error::ApiError,
    metrics::Metrics,
    store::{Delivery, EndpointChange, NewEndpoint, Page, QueueStats, Store},
    webhook_sender::WebhookSender,
};

/// An endpoint as its owner sees it (never its secret).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookEndpoint {
    pub id: Uuid,
    pub url: String,
    /// The events it takes, in their canonical order.
    pub events: Vec<String>,
    #[schema(required = true)]
    pub description: Option<String>,
    /// False once disabled: by its owner, after a `410 Gone`, or after 5 days of failures.
    pub is_active: bool,
    /// Why it is disabled; `null` while active.
    #[schema(required = true)]
    pub disabled_reason: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl From<webhook_endpoint::Model> for WebhookEndpoint {
    fn from(row: webhook_endpoint::Model) -> Self {
        Self {
            id: row.id,
            url: row.url,
            events: EventSet::from_stored(&row.events)
                .names()
                .map(str::to_string)
                .collect(),
            description: row.description,
            is_active: row.is_active,
            disabled_reason: row.disabled_reason,
            created_at: iso(row.created_at),
        }
    }
}

/// One message in the delivery log.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookDelivery {
    /// The `webhook-id` of its every attempt.
    pub message_id: String,
    pub event: String,
    /// `pending` (an attempt is due), `delivered` or `failed` (no attempt left).
    pub status: String,
    pub attempts: Vec<WebhookAttempt>,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When the next attempt is due; `null` once delivered or failed.
    #[schema(required = true, format = DateTime)]
    pub next_attempt_at: Option<String>,
}

/// One attempt of a message.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookAttempt {
    #[schema(format = DateTime)]
    pub at: String,
    /// The endpoint's answer; `null` when none came (see `error`).
    #[schema(required = true)]
    pub http_status: Option<i32>,
    /// The first 1,024 bytes of the answer's body.
    #[schema(required = true)]
    pub response: Option<String>,
    pub duration_ms: i32,
    #[schema(required = true)]
    pub error: Option<String>,
}

impl From<Delivery> for WebhookDelivery {
    fn from(delivery: Delivery) -> Self {
        let webhook_message::Model {
            id,
            event_type,
            status,
            created_at,
            next_attempt_at,
            ..
        } = delivery.message;
        Self {
            message_id: id,
            event: event_type,
            status,
            attempts: delivery
                .attempts
                .into_iter()
                .map(|a: webhook_attempt::Model| WebhookAttempt {
                    at: iso(a.attempted_at),
                    http_status: a.http_status,
                    response: a.response,
                    duration_ms: a.duration_ms,
                    error: a.error,
                })
                .collect(),
            created_at: iso(created_at),
            next_attempt_at: next_attempt_at.map(iso),
        }
    }
}

/// What a user asks of a new endpoint.
#[derive(Debug, Clone, Default)]
pub struct EndpointInput {
    pub url: String,
    pub events: Option<Vec<String>>,
    pub description: Option<String>,
}

/// A change of an endpoint; `None` keeps a value.
#[derive(Debug, Clone, Default)]
pub struct EndpointPatch {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub description: Option<Option<String>>,
    pub is_active: Option<bool>,
}

pub struct WebhookService {
    store: Store,
    sender: WebhookSender,
    cipher: TokenCipher,
    config: WebhooksConfig,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    attempts: AttemptQueue,
    /// This process's id, the start of its delivery passes' claim tokens.
    instance: String,
}

fn endpoint_not_found() -> ApiError {
    ApiError::not_found("Webhook endpoint not found")
}

impl WebhookService {
    pub fn new(
        store: Store,
        sender: WebhookSender,
        cipher: TokenCipher,
        config: WebhooksConfig,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
        instance: String,
    ) -> Self {
        Self {
            instance,
            store,
            sender,
            cipher,
            config,
            clock,
            metrics,
            attempts: AttemptQueue::default(),
        }
    }

    pub fn config(&self) -> &WebhooksConfig {
        &self.config
    }

    /// What the delivery actor waits on between its looks for work.
    pub fn signal(&self) -> Arc<tokio::sync::Notify> {
        self.store.outbox_signal()
    }

    async fn checked_url(&self, raw: &str) -> Result<String, ApiError> {
        let url = self
            .sender
            .check_form(raw)
            .map_err(ApiError::invalid_request)?;
        self.sender
            .check_resolves_publicly(&url)
            .await
            .map_err(ApiError::invalid_request)?;
        Ok(url.to_string())
    }

    fn checked_events(names: &[String]) -> Result<EventSet, ApiError> {
        EventSet::from_names(names.iter().map(String::as_str)).map_err(|unknown| {
            let known: Vec<&str> = WebhookEvent::ALL.iter().map(|e| e.as_str()).collect();
            ApiError::invalid_request(format!(
                "Unknown event '{unknown}'; events are {}",
                known.join(", ")
            ))
        })
    }

    fn checked_description(description: Option<String>) -> Result<Option<String>, ApiError> {
        match description {
            Some(text) if text.chars().count() > MAX_DESCRIPTION_CHARS => {
                Err(ApiError::invalid_request(format!(
                    "description must be at most {MAX_DESCRIPTION_CHARS} characters"
                )))
            }
            Some(text) if text.trim().is_empty() => Ok(None),
            other => Ok(other),
        }
    }

    fn seal(&self, id: Uuid, secret: &WebhookSecret) -> Result<String, ApiError> {
        self.cipher
            .encrypt(&Binding::webhook_secret(id), &secret.reveal())
            .map_err(|e| ApiError::internal(format!("could not seal the secret: {e}")))
    }

    /// Creates an endpoint; answers it with its secret, which is shown only here.
    pub async fn create(
        &self,
        user_id: Uuid,
        input: EndpointInput,
    ) -> Result<(WebhookEndpoint, String), ApiError> {
        let events = Self::checked_events(input.events.as_deref().unwrap_or_default())?;
        let description = Self::checked_description(input.description)?;
        let url = self.checked_url(&input.url).await?;
        let id = crate::store::new_row_id();
        let secret = WebhookSecret::generate();
        let new = NewEndpoint {
            id,
            user_id,
            url,
            events: events.to_stored(),
            description,
            secret_enc: self.seal(id, &secret)?,
        };
        let created = self
            .store
            .create_webhook_endpoint(new, MAX_ENDPOINTS_PER_USER, self.clock.now())
            .await?
            .ok_or_else(|| {
                ApiError::invalid_request(format!(
                    "A user may have at most {MAX_ENDPOINTS_PER_USER} webhook endpoints"
                ))
            })?;
        Ok((created.into(), secret.reveal()))
    }

    pub async fn list(&self, user_id: Uuid) -> Result<Vec<WebhookEndpoint>, ApiError> {
        let rows = self.store.list_webhook_endpoints(user_id).await?;
        Ok(rows.into_iter().map(WebhookEndpoint::from).collect())
    }

    async fn owned(
        &self,
        user_id: Uuid,
        raw_id: &str,
    ) -> Result<webhook_endpoint::Model, ApiError> {
        let id = parse_uuid(raw_id).ok_or_else(endpoint_not_found)?;
        self.store
            .find_webhook_endpoint(user_id, id)
            .await?
            .ok_or_else(endpoint_not_found)
    }

    pub async fn delete(&self, user_id: Uuid, raw_id: &str) -> Result<(), ApiError> {
        let id = parse_uuid(raw_id).ok_or_else(endpoint_not_found)?;
        if self.store.delete_webhook_endpoint(user_id, id).await? {
            Ok(())
        } else {
            Err(endpoint_not_found())
        }
    }

    pub async fn change(
        &self,
        user_id: Uuid,
        raw_id: &str,
        patch: EndpointPatch,
    ) -> Result<WebhookEndpoint, ApiError> {
        let endpoint = self.owned(user_id, raw_id).await?;
        let url = match patch.url {
            Some(raw) => Some(self.checked_url(&raw).await?),
            None => None,
        };
        let events = match patch.events {
            Some(names) => Some(Self::checked_events(&names)?.to_stored()),
            None => None,
        };
        let description = match patch.description {
            Some(description) => Some(Self::checked_description(description)?),
            None => None,
        };
        let change = EndpointChange {
            url,
            events,
            description,
            is_active: patch.is_active,
        };
        self.store
            .change_webhook_endpoint(user_id, endpoint.id, change, self.clock.now())
            .await?
            .map(WebhookEndpoint::from)
            .ok_or_else(endpoint_not_found)
    }

    /// Queues a `webhook.test` message to the endpoint, whatever it takes and even while it is
    /// disabled (so its owner can check a fix); answers the message id.
    pub async fn test(&self, user_id: Uuid, raw_id: &str) -> Result<String, ApiError> {
        let endpoint = self.owned(user_id, raw_id).await?;
        let message = messages::test_message(&endpoint, self.clock.now());
        let id = message.id.clone();
        self.store
            .queue_webhook_messages(vec![message], self.clock.now())
            .await?;
        Ok(id)
    }

    /// A new secret; the current one goes on signing beside it for 24 hours. Answers the new
    /// secret (shown only here) and when the old one stops signing.
    pub async fn rotate_secret(
        &self,
        user_id: Uuid,
        raw_id: &str,
    ) -> Result<(String, DateTime<Utc>), ApiError> {
        let endpoint = self.owned(user_id, raw_id).await?;
        let now = self.clock.now();
        let secret = WebhookSecret::generate();
        let until = now + chrono::Duration::hours(PREVIOUS_SECRET_HOURS);
        self.store
            .rotate_webhook_secret(
                endpoint.id,
                self.seal(endpoint.id, &secret)?,
                endpoint.secret_enc,
                until,
                now,
            )
            .await?;
        Ok((secret.reveal(), until))
    }

    pub async fn deliveries(
        &self,
        user_id: Uuid,
        raw_id: &str,
        page: Page,
    ) -> Result<(Vec<WebhookDelivery>, u64), ApiError> {
        let id = parse_uuid(raw_id).ok_or_else(endpoint_not_found)?;
        let (rows, total) = self
            .store
            .webhook_deliveries(user_id, id, page)
            .await?
            .ok_or_else(endpoint_not_found)?;
        Ok((rows.into_iter().map(WebhookDelivery::from).collect(), total))
    }

    /// Sends a message again now (the same `webhook-id` and body), its retry schedule started
    /// over.
    pub async fn replay(
        &self,
        user_id: Uuid,
        raw_id: &str,
        message_id: &str,
    ) -> Result<(), ApiError> {
        let endpoint = self.owned(user_id, raw_id).await?;
        let not_found = || ApiError::not_found("Webhook message not found");
        if !is_message_id(message_id) {
            return Err(not_found());
        }
        if self
            .store
            .replay_webhook_message(user_id, endpoint.id, message_id, self.clock.now())
            .await?
        {
            Ok(())
        } else {
            Err(not_found())
        }
    }

    /// The delivery queue, for the operator page.
    pub async fn queue(&self) -> Result<QueueStats, ApiError> {
        let stats = self.store.webhook_queue_stats().await?;
        self.metrics.gauge_set(
            "webhook_queue_depth",
            &[],
            i64::try_from(stats.queue_depth).unwrap_or(i64::MAX),
        );
        Ok(stats)
    }
}
