//! Batches API-key `last_used_at` writes (spec §2.1: "may lag by a few minutes").
//!
//! The request path only records into a shared map (no database write, no mailbox message);
//! the [`LastUsedWriter`] actor drains it on an interval and writes the batch. A flush runs as a
//! spawned future, so the actor's mailbox never waits on the database. What a crash loses: at most
//! one interval of last-use times, which only makes `last_used_at` lag further.

use std::{sync::Arc, time::Duration};

use actix::{Actor, ActorFutureExt, AsyncContext, Context, WrapFuture};
use chrono::{DateTime, Utc};
use dashmap::DashMap;
use uuid::Uuid;

use super::Store;

/// Last-use times waiting to be written; shared between request handlers and the writer.
#[derive(Clone, Default, Debug)]
pub struct LastUsedRecorder {
    pending: Arc<DashMap<Uuid, DateTime<Utc>>>,
    /// Calls of users on unlimited plans, by `(user, usage period key)`, not yet written. They
    /// need no admission check, so they skip the per-request write (and the row lock every call
    /// of one user would otherwise queue on).
    calls: Arc<DashMap<(Uuid, String), i64>>,
    /// Held for writing while counts move from `calls` to the database, and for reading by
    /// whoever adds the two up: a reader never sees a count in both places, or in neither.
    usage_gate: Arc<tokio::sync::RwLock<()>>,
}

impl LastUsedRecorder {
    /// Notes a use of `key_id` (keeps the latest time per key).
    pub fn record(&self, key_id: Uuid, at: DateTime<Utc>) {
        self.pending
            .entry(key_id)
            .and_modify(|t| {
                if at > *t {
                    *t = at;
                }
            })
            .or_insert(at);
    }

    /// Counts a call of a user on an unlimited plan.
    pub fn count_call(&self, user_id: Uuid, period_key: String) {
        *self.calls.entry((user_id, period_key)).or_insert(0) += 1;
    }

    /// Hold while reading the written count and [`Self::pending_calls`] together.
    pub async fn reading_usage(&self) -> tokio::sync::RwLockReadGuard<'_, ()> {
        self.usage_gate.read().await
    }

    /// Counted calls not yet written.
    pub fn pending_calls(&self, user_id: Uuid, period_key: &str) -> i64 {
        self.calls
            .get(&(user_id, period_key.to_string()))
            .map(|n| *n)
            .unwrap_or(0)
    }

    fn drain(&self) -> Vec<(Uuid, DateTime<Utc>)> {
        let keys: Vec<Uuid> = self.pending.iter().map(|e| *e.key()).collect();
        keys.into_iter()
            .filter_map(|k| self.pending.remove(&k))
            .collect()
    }

    /// Writes everything pending now (also used on shutdown).
    pub async fn flush(&self, store: &Store) {
        let counted: Vec<((Uuid, String), i64)> = self
            .calls
            .iter()
            .map(|e| (e.key().clone(), *e.value()))
            .collect();
        if !counted.is_empty() {
            let _moving = self.usage_gate.write().await;
            for ((user_id, period), n) in counted {
                if let Err(err) = store.add_usage(user_id, &period, n, Utc::now()).await {
                    tracing::warn!(error = %err, "could not write usage counts; will retry");
                    continue;
                }
                // Written: take those `n` off (calls counted meanwhile stay for the next flush).
                let key = (user_id, period);
                if let Some(mut left) = self.calls.get_mut(&key) {
                    *left -= n;
                }
                self.calls.remove_if(&key, |_, left| *left <= 0);
            }
        }
        let batch = self.drain();
        if batch.is_empty() {
            return;
        }
        if let Err(err) = store.record_keys_last_used(&batch).await {
            tracing::warn!(error = %err, "could not write API-key last use; will retry");
            for (key, at) in batch {
                self.record(key, at);
            }
        }
    }
}

/// Flushes a [`LastUsedRecorder`] every `interval`.
pub struct LastUsedWriter {
    recorder: LastUsedRecorder,
    store: Store,
    interval: Duration,
    flushing: bool,
}

impl LastUsedWriter {
    pub fn new(recorder: LastUsedRecorder, store: Store, interval: Duration) -> Self {
        Self {
            recorder,
            store,
            interval,
            flushing: false,
        }
    }
}

impl Actor for LastUsedWriter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.interval, |act, ctx| {
            if act.flushing {
                return; // the previous flush is still writing
            }
            act.flushing = true;
            let recorder = act.recorder.clone();
            let store = act.store.clone();
            ctx.spawn(
                crate::store::in_runtime::in_runtime(async move { recorder.flush(&store).await })
                    .into_actor(act)
                    .map(|_, act, _| act.flushing = false),
            );
        });
    }
}
