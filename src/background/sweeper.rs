//! The sweeper: every `auth.sweep_interval_secs` (and once at start) it deletes the sign-in
//! states, connection states, sessions, spent form tokens, idempotency keys and old webhook
//! messages that can no longer be used ([`Store::sweep_expired`]). Every hour (and once at
//! start) it also sweeps uploaded media ([`MediaService::sweep`]): a sweep lists every file in
//! the media store, which is too much work for the shorter interval.
//! "Expired" is judged by the service's clock. Each sweep is bounded ([`SWEEP_BOUNDS`]): a
//! backlog larger than one sweep is cleared over the following ones.

use std::{sync::Arc, time::Duration};

use actix::prelude::*;

use crate::store::in_runtime::in_runtime;
use crate::{
    clock::SharedClock,
    services::media::MediaService,
    store::{Store, SweepBounds, SweepCounts},
};

/// How often uploaded media are swept.
const MEDIA_SWEEP_EVERY: Duration = Duration::from_secs(3600);

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
    media: Option<Arc<MediaService>>,
    sweeping_media: bool,
}

impl Sweeper {
    /// Sweeps every `every` (at least a second).
    pub fn new(store: Store, clock: SharedClock, every: Duration) -> Self {
        Self {
            store,
            clock,
            every: every.max(Duration::from_secs(1)),
            sweeping: false,
            media: None,
            sweeping_media: false,
        }
    }

    /// Also sweeps uploaded media, hourly.
    pub fn with_media(mut self, media: Arc<MediaService>) -> Self {
        self.media = Some(media);
        self
    }

    fn sweep_media(&mut self, ctx: &mut Context<Self>) {
        let Some(media) = self.media.clone() else {
            return;
        };
        if self.sweeping_media {
            return;
        }
        self.sweeping_media = true;
        ctx.spawn(
            in_runtime(async move { media.sweep().await })
                .into_actor(self)
                .map(|result, actor, _| {
                    actor.sweeping_media = false;
                    match result {
                        Ok(report) => tracing::debug!(?report, "swept uploaded media"),
                        Err(error) => {
                            tracing::warn!(%error, "sweep of uploaded media failed; trying again at the next one");
                        }
                    }
                }),
        );
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
        self.sweep_media(ctx);
        ctx.run_interval(MEDIA_SWEEP_EVERY, |actor, ctx| actor.sweep_media(ctx));
    }
}
