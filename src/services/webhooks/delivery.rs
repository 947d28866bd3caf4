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
    store::{AttemptNext, AttemptRecord, Claim},
    webhook_sender::Signed,
};

/// Events fanned out per transaction, and messages claimed per claim at most.
const BATCH: usize = 500;
/// How long a batch of attempt results waits for others to join it.
const RECORD_WINDOW: std::time::Duration = std::time::Duration::from_millis(20);
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
    /// One pass: claim the messages due (retries, and fresh ones an earlier pass had no room
    /// for), then fan out the outbox, claiming the fresh messages as they are created; start an
    /// attempt for each claimed message, each holding one of `slots`.
    pub async fn pass(self: &Arc<Self>, slots: &Arc<Semaphore>) -> Result<PassReport, DbErr> {
        let now = self.clock.now();
        let schedule = self.config.retry_schedule_secs.clone();
        // The instance first: the claims of an instance gone silent are taken over by it.
        let token = format!("{} {}", self.instance, uuid::Uuid::new_v4().simple());
        let lease_until =
            now + Duration::seconds(self.config.timeout_secs as i64 + LEASE_MARGIN_SECS);
        let claim = |slots: &Semaphore| Claim {
            token: &token,
            lease_until,
            max: slots.available_permits().min(BATCH),
        };
        let mut report = PassReport::default();
        let first = claim(slots);
        if first.max == 0 {
            // Every slot is taken: the pass goes on once an attempt ends.
            report.more = true;
        } else if self.store.webhook_messages_due(now).await? {
            let claimed = self.store.claim_webhook_messages(&first, now).await?;
            report.more |= claimed.len() == first.max;
            let ids: HashSet<uuid::Uuid> = claimed.iter().map(|m| m.endpoint_id).collect();
            let endpoints: HashMap<uuid::Uuid, webhook_endpoint::Model> = self
                .store
                .webhook_endpoints_by_id(&ids)
                .await?
                .into_iter()
                .map(|e| (e.id, e))
                .collect();
            let claimed = claimed
                .into_iter()
                .filter_map(|m| Some((endpoints.get(&m.endpoint_id)?.clone(), m)));
            self.start(claimed, &token, slots, &mut report);
        }
        while self.store.webhook_events_waiting().await? {
            let fanned = self
                .store
                .fan_out_webhook_events(BATCH as u64, now, &claim(slots), |events, context| {
                    messages::fan_out(events, context, &schedule, now)
                })
                .await?;
            report.fanned_out += fanned.events;
            report.more |= fanned.unclaimed_due;
            self.start(fanned.claimed, &token, slots, &mut report);
            if fanned.events < BATCH {
                break;
            }
        }
        Ok(report)
    }

    /// Starts an attempt for each claimed message while a slot is free. A message left
    /// without one keeps its claim until the lease runs out, and is attempted then.
    fn start(
        self: &Arc<Self>,
        claimed: impl IntoIterator<Item = (webhook_endpoint::Model, webhook_message::Model)>,
        token: &str,
        slots: &Arc<Semaphore>,
        report: &mut PassReport,
    ) {
        for (endpoint, message) in claimed {
            let Ok(permit) = slots.clone().try_acquire_owned() else {
                report.more = true;
                break;
            };
            report.started += 1;
            let service = self.clone();
            let token = token.to_string();
            tokio::spawn(async move {
                service.attempt(message, endpoint, token, permit).await;
            });
        }
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
    /// what is queued, batch after batch, until nothing is. Each batch first waits a moment
    /// for others to join it: under a stream of deliveries, a transaction per handful of
    /// results would hold SQLite's one write lock far more often than the results need.
    async fn record(&self, record: AttemptRecord) {
        {
            let mut queue = self.attempts.lock();
            queue.0.push(record);
            if std::mem::replace(&mut queue.1, true) {
                return;
            }
        }
        loop {
            tokio::time::sleep(RECORD_WINDOW).await;
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
