//! The sweeper: every `auth.sweep_interval_secs` (and once at start) it deletes the sign-in
//! states, connection states, sessions, spent form tokens, idempotency keys and old webhook
//! messages that can no longer be used ([`Store::sweep_expired`]).
//! "Expired" is judged by the service's clock. Each sweep is bounded ([`SWEEP_BOUNDS`]): a
//! backlog larger than one sweep is cleared over the following ones.

use std::time::Duration;

use actix::prelude::*;

use crate::store::in_runtime::in_runtime;
use crate::{
    clock::SharedClock,
    store::{Store, SweepBounds, SweepCounts},
};

/// Rows per statement, and statements per table per sweep: 10,000 rows of each table at
/// most, in transactions short enough not to stall SQLite's writer.
pub const SWEEP_BOUNDS: SweepBounds = SweepBounds {
    batch: 500,
    max_batches: 20,
};

/// Deletes what the service's clock says is dead (see the module's comment). What the
/// sweeper runs on its timer; tests call it directly.
pub async fn sweep_once(store: &Store, clock: &SharedClock) -> Result<SweepCounts, sea_orm::DbErr> {
    let counts = store.sweep_expired(clock.now(), SWEEP_BOUNDS).await?;
    if counts.total() > 0 {
        tracing::debug!(
            ?counts,
            "swept expired sign-in states, connection states, sessions, form tokens, idempotency keys and webhook messages"
        );
    }
    Ok(counts)
}

pub struct Sweeper {
    store: Store,
    clock: SharedClock,
    every: Duration,
    sweeping: bool,
}

impl Sweeper {
    /// Sweeps every `every` (at least a second).
    pub fn new(store: Store, clock: SharedClock, every: Duration) -> Self {
        Self {
            store,
            clock,
            every: every.max(Duration::from_secs(1)),
            sweeping: false,
        }
    }

    fn sweep(&mut self, ctx: &mut Context<Self>) {
        // A sweep slower than the interval is not doubled up.
        if self.sweeping {
            return;
        }
        self.sweeping = true;
        let (store, clock) = (self.store.clone(), self.clock.clone());
        ctx.spawn(
            in_runtime(async move { sweep_once(&store, &clock).await })
                .into_actor(self)
                .map(|result, actor, _| {
                    actor.sweeping = false;
                    if let Err(error) = result {
                        tracing::warn!(%error, "sweep of expired rows failed; trying again at the next one");
                    }
                }),
        );
    }
}

impl Actor for Sweeper {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.sweep(ctx);
        ctx.run_interval(self.every, |actor, ctx| actor.sweep(ctx));
    }
}
