//! The webhook delivery actor: looks for work every `webhooks.poll_interval_ms`, and at once
//! when this instance's own writes may have queued some (the store's outbox signal). Each look
//! is one pass of [`WebhookService::pass`]: fan out the outbox, claim due messages, start their
//! attempts, at most `webhooks.max_in_flight` in flight. Passes never overlap; one asked for
//! while another runs happens right after it, as does one after a pass that stopped at a bound.

use std::{sync::Arc, time::Duration};

use actix::prelude::*;
use tokio::sync::Semaphore;

use crate::services::webhooks::WebhookService;
use crate::store::in_runtime::in_runtime;

/// How long a wake waits for others to join it.
const WAKE_WINDOW: Duration = Duration::from_millis(25);
/// How often the queue-depth gauge is read from the database.
const QUEUE_GAUGE_EVERY: Duration = Duration::from_secs(15);

pub struct WebhookDeliveryActor {
    service: Arc<WebhookService>,
    slots: Arc<Semaphore>,
    busy: bool,
    again: bool,
    /// A look is set for the end of the wake window.
    waking: bool,
}

impl WebhookDeliveryActor {
    pub fn new(service: Arc<WebhookService>) -> Self {
        let slots = Arc::new(Semaphore::new(service.config().max_in_flight.max(1)));
        Self {
            service,
            slots,
            busy: false,
            again: false,
            waking: false,
        }
    }

    fn look(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            self.again = true;
            return;
        }
        self.busy = true;
        self.again = false;
        let (service, slots) = (self.service.clone(), self.slots.clone());
        ctx.spawn(
            in_runtime(async move { service.pass(&slots).await })
                .into_actor(self)
                .map(|result, actor, ctx| {
                    actor.busy = false;
                    let more = match result {
                        Ok(report) => report.more,
                        Err(error) => {
                            tracing::warn!(%error, "webhook delivery: cannot read the queue");
                            false
                        }
                    };
                    if actor.again || more {
                        // A pass that stopped at its bound goes on once an attempt frees a slot,
                        // not in a tight loop.
                        let pause = if more && actor.slots.available_permits() == 0 {
                            Duration::from_millis(20)
                        } else {
                            Duration::ZERO
                        };
                        ctx.run_later(pause, |actor, ctx| actor.look(ctx));
                    }
                }),
        );
    }
}

/// Look for work now.
#[derive(Message)]
#[rtype(result = "()")]
struct Wake;

impl Handler<Wake> for WebhookDeliveryActor {
    type Result = ();

    fn handle(&mut self, _msg: Wake, ctx: &mut Self::Context) {
        // Wakes within a short window make one look: under a stream of publishes each commit
        // wakes the actor, and one pass per commit would cost more database work than the
        // messages it sends.
        if !self.waking {
            self.waking = true;
            ctx.run_later(WAKE_WINDOW, |actor, ctx| {
                actor.waking = false;
                actor.look(ctx);
            });
        }
    }
}

impl Actor for WebhookDeliveryActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let every = Duration::from_millis(self.service.config().poll_interval_ms.max(1));
        self.look(ctx);
        ctx.run_interval(every, |actor, ctx| actor.look(ctx));
        // The queue-depth gauge, from the database (every instance's messages).
        ctx.run_interval(QUEUE_GAUGE_EVERY, |actor, ctx| {
            let service = actor.service.clone();
            ctx.spawn(
                in_runtime(async move {
                    if let Err(error) = service.queue().await {
                        tracing::debug!(%error, "webhook queue gauge not refreshed");
                    }
                })
                .into_actor(actor),
            );
        });
        let (signal, me) = (self.service.signal(), ctx.address());
        ctx.spawn(
            async move {
                loop {
                    signal.notified().await;
                    if me.try_send(Wake).is_err() {
                        break;
                    }
                }
            }
            .into_actor(self),
        );
    }
}
