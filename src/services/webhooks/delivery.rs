//! Delivering messages. A pass fans out the outbox's waiting events, claims the messages due
//! (as many as there are free attempt slots) and starts an attempt for each; attempts run
//! concurrently, and their results are written in batches by one writer at a time, as they
//! come. A message is claimed for one attempt by one instance; if that instance dies, the
//! claim's lease runs out and another takes it (at least once, never lost).

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
};

use chrono::{DateTime, Duration, Utc};
use entity::{webhook_endpoint, webhook_message};
use sea_orm::DbErr;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{WebhookService, messages};
use crate::{
    crypto::Binding,
    domain::webhook::{DISABLE_AFTER_DAYS, WebhookSecret, attempt_due, signature_header},
    store::{AttemptNext, AttemptRecord},
    webhook_sender::Signed,
};

/// Events fanned out per transaction, and messages claimed per pass at most.
const BATCH: u64 = 500;
/// A claim outlives its attempt's time limit by this much before another instance may take it.
const LEASE_MARGIN_SECS: i64 = 60;

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassReport {
    pub fanned_out: usize,
    pub started: usize,
    /// More may be waiting: the pass stopped at a bound, not for want of work.
    pub more: bool,
}

/// Results of attempts waiting to be written, and whether a writer is writing them.
#[derive(Debug, Default)]
pub struct AttemptQueue {
    inner: Mutex<(Vec<AttemptRecord>, bool)>,
}

impl AttemptQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, (Vec<AttemptRecord>, bool)> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl WebhookService {
    /// One pass: fan out, claim, start attempts (each holding one of `slots`).
    pub async fn pass(self: &Arc<Self>, slots: &Arc<Semaphore>) -> Result<PassReport, DbErr> {
        let now = self.clock.now();
        let schedule = self.config.retry_schedule_secs.clone();
        let mut report = PassReport::default();
        while self.store.webhook_events_waiting().await? {
            let taken = self
                .store
                .fan_out_webhook_events(BATCH, now, |events, context| {
                    messages::fan_out(events, context, &schedule, now)
                })
                .await?;
            report.fanned_out += taken;
            if (taken as u64) < BATCH {
                break;
            }
        }
        let free = (slots.available_permits() as u64).min(BATCH);
        if free == 0 {
            report.more = true;
            return Ok(report);
        }
        if !self.store.webhook_messages_due(now).await? {
            return Ok(report);
        }
        let token = uuid::Uuid::new_v4().simple().to_string();
        let lease = now + Duration::seconds(self.config.timeout_secs as i64 + LEASE_MARGIN_SECS);
        let claimed = self
            .store
            .claim_webhook_messages(&token, now, lease, free)
            .await?;
        report.more = claimed.len() as u64 == free;
        let ids: HashSet<uuid::Uuid> = claimed.iter().map(|m| m.endpoint_id).collect();
        let endpoints: HashMap<uuid::Uuid, webhook_endpoint::Model> = self
            .store
            .webhook_endpoints_by_id(&ids)
            .await?
            .into_iter()
            .map(|e| (e.id, e))
            .collect();
        for message in claimed {
            let Some(endpoint) = endpoints.get(&message.endpoint_id).cloned() else {
                continue;
            };
            let Ok(permit) = slots.clone().try_acquire_owned() else {
                break;
            };
            report.started += 1;
            let service = self.clone();
            let token = token.clone();
            tokio::spawn(async move {
                service.attempt(message, endpoint, token, permit).await;
            });
        }
        Ok(report)
    }

    /// The secrets that sign at `now`: the current one, then a rotated-out one still in its
    /// 24 hours.
    fn secrets(
        &self,
        endpoint: &webhook_endpoint::Model,
        now: DateTime<Utc>,
    ) -> Vec<WebhookSecret> {
        let binding = Binding::webhook_secret(endpoint.id);
        let open = |sealed: &str| {
            self.cipher
                .decrypt(&binding, sealed)
                .ok()
                .and_then(|shown| WebhookSecret::parse(&shown))
        };
        let mut secrets: Vec<WebhookSecret> = open(&endpoint.secret_enc).into_iter().collect();
        if let (Some(sealed), Some(until)) = (
            &endpoint.previous_secret_enc,
            endpoint.previous_secret_until,
        ) && until > now
        {
            secrets.extend(open(sealed));
        }
        secrets
    }

    async fn attempt(
        self: Arc<Self>,
        message: webhook_message::Model,
        endpoint: webhook_endpoint::Model,
        claim_token: String,
        _permit: OwnedSemaphorePermit,
    ) {
        let now = self.clock.now();
        if message.attempts == 0 {
            let lag = (now - message.occurred_at).num_microseconds().unwrap_or(0);
            self.metrics.observe(
                "webhook_first_attempt_lag_seconds",
                &[],
                lag.max(0) as f64 / 1e6,
            );
        }
        let secrets = self.secrets(&endpoint, now);
        let outcome = if secrets.is_empty() {
            crate::webhook_sender::SendOutcome {
                status: None,
                response: None,
                duration: std::time::Duration::ZERO,
                error: Some("the endpoint's secret could not be read".into()),
            }
        } else {
            let signed = Signed {
                signature: signature_header(
                    &secrets,
                    &message.id,
                    now.timestamp(),
                    &message.payload,
                ),
                message_id: message.id.clone(),
                timestamp: now.timestamp(),
            };
            self.sender
                .send(&endpoint.url, &signed, message.payload.clone())
                .await
        };
        let next = self.next_after(&message, outcome.status);
        let label = match &next {
            AttemptNext::Delivered => "delivered",
            AttemptNext::Retry { .. } => "retrying",
            AttemptNext::GiveUp => "failed",
            AttemptNext::Gone { .. } => "gone",
        };
        self.metrics
            .inc("webhook_deliveries_total", &[("outcome", label)]);
        let record = AttemptRecord {
            message_id: message.id,
            endpoint_id: endpoint.id,
            claim_token,
            attempted_at: now,
            http_status: outcome.status.map(i32::from),
            response: outcome.response,
            duration_ms: i32::try_from(outcome.duration.as_millis()).unwrap_or(i32::MAX),
            error: outcome.error,
            next,
        };
        self.record(record).await;
    }

    /// What follows an attempt that got `status` (`None`: no answer).
    fn next_after(&self, message: &webhook_message::Model, status: Option<u16>) -> AttemptNext {
        match status {
            Some(200..=299) => AttemptNext::Delivered,
            Some(410) => AttemptNext::Gone {
                reason: "The endpoint answered 410 Gone".into(),
            },
            _ => {
                let index = usize::try_from(message.retry_index).unwrap_or(0) + 1;
                let jitter = rand::random::<f64>() * 2.0 - 1.0;
                match attempt_due(
                    &self.config.retry_schedule_secs,
                    index,
                    self.clock.now(),
                    jitter,
                ) {
                    Some(at) => AttemptNext::Retry {
                        at,
                        retry_index: i32::try_from(index).unwrap_or(i32::MAX),
                    },
                    None => AttemptNext::GiveUp,
                }
            }
        }
    }

    /// Queues an attempt's result; the first to find no writer writing becomes it, and writes
    /// what is queued, batch after batch, until nothing is.
    async fn record(&self, record: AttemptRecord) {
        {
            let mut queue = self.attempts.lock();
            queue.0.push(record);
            if std::mem::replace(&mut queue.1, true) {
                return;
            }
        }
        loop {
            let batch = {
                let mut queue = self.attempts.lock();
                if queue.0.is_empty() {
                    queue.1 = false;
                    return;
                }
                std::mem::take(&mut queue.0)
            };
            let disable_before = self.clock.now() - Duration::days(DISABLE_AFTER_DAYS);
            match self
                .store
                .record_webhook_attempts(&batch, disable_before)
                .await
            {
                Ok(disabled) => {
                    for endpoint in disabled {
                        tracing::warn!(%endpoint, "webhook endpoint disabled");
                    }
                }
                // The claims run out and the messages are attempted again: at least once.
                Err(error) => {
                    tracing::warn!(%error, attempts = batch.len(), "could not record webhook attempts")
                }
            }
        }
    }
}
