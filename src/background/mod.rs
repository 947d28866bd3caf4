//! The actors that work on their own and call platforms: the scheduler (due posts), the
//! reconciler (publishes still processing), the token keeper (refreshes) and the collector
//! (daily snapshots, with a catch-up at start); the webhook delivery actor; and the sweeper (expired rows), which calls
//! none but starts with them.
//!
//! Each one's mailbox is made before the actor runs (`actix::Context::new`), so its address is
//! known while the services are built (the publishing service wakes the scheduler through it)
//! and the HTTP state can hold it, with nothing filled in later. The actors themselves run when
//! [`PendingBackground::start`] is called: at once, or later when the build deferred them
//! ([`crate::BuildOptions::defer_background`]).

pub mod collector;
pub mod reconciler;
pub mod scheduler;
pub mod sweeper;
pub mod token_keeper;
pub mod view;
pub mod webhook_delivery;

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use actix::{Actor, Addr, AsyncContext, Context};

use self::{
    collector::CollectorActor, reconciler::ReconcilerActor, scheduler::SchedulerActor,
    sweeper::Sweeper, token_keeper::TokenKeeper, webhook_delivery::WebhookDeliveryActor,
};

/// An actor and the context it will run in, whose address is already handed out.
struct Pending<A: Actor<Context = Context<A>>> {
    context: Context<A>,
    actor: A,
}

impl<A: Actor<Context = Context<A>>> Pending<A> {
    fn new(mailbox: Mailbox<A>, actor: A) -> Self {
        Self {
            context: mailbox.0,
            actor,
        }
    }

    fn run(self) -> Addr<A> {
        self.context.run(self.actor)
    }
}

/// The mailbox of an actor not built yet: build the services that need its address, then the
/// actor, then hand both to [`prepare`].
pub struct Mailbox<A: Actor<Context = Context<A>>>(Context<A>);

impl<A: Actor<Context = Context<A>>> Mailbox<A> {
    pub fn new() -> Self {
        Self(Context::new())
    }

    /// Where messages for the actor go; they wait in the mailbox until it runs.
    pub fn address(&self) -> Addr<A> {
        self.0.address()
    }
}

impl<A: Actor<Context = Context<A>>> Default for Mailbox<A> {
    fn default() -> Self {
        Self::new()
    }
}

/// The background actors, built but not yet running.
pub struct PendingBackground {
    scheduler: Option<Pending<SchedulerActor>>,
    collector: Option<Pending<CollectorActor>>,
    reconciler: Pending<ReconcilerActor>,
    token_keeper: Pending<TokenKeeper>,
    webhooks: Pending<WebhookDeliveryActor>,
    sweeper: Sweeper,
    started: Arc<AtomicBool>,
}

/// The background actors' addresses, as the HTTP state holds them (the operator's actor view,
/// `/readyz`, draining at shutdown). An actor shows only once it runs, so nothing waits on a
/// mailbox that nobody reads yet.
#[derive(Clone)]
pub struct BackgroundActors {
    scheduler: Option<Addr<SchedulerActor>>,
    collector: Option<Addr<CollectorActor>>,
    reconciler: Addr<ReconcilerActor>,
    token_keeper: Addr<TokenKeeper>,
    started: Arc<AtomicBool>,
}

/// Pairs each actor with its mailbox; the scheduler and collector are absent when disabled.
pub fn prepare(
    scheduler: Option<(Mailbox<SchedulerActor>, SchedulerActor)>,
    collector: Option<CollectorActor>,
    reconciler: ReconcilerActor,
    token_keeper: TokenKeeper,
    webhooks: WebhookDeliveryActor,
    sweeper: Sweeper,
) -> (PendingBackground, BackgroundActors) {
    let webhooks = Pending::new(Mailbox::new(), webhooks);
    let scheduler = scheduler.map(|(mailbox, actor)| Pending::new(mailbox, actor));
    let collector = collector.map(|actor| Pending::new(Mailbox::new(), actor));
    let reconciler = Pending::new(Mailbox::new(), reconciler);
    let token_keeper = Pending::new(Mailbox::new(), token_keeper);
    let started = Arc::new(AtomicBool::new(false));
    let addresses = BackgroundActors {
        scheduler: scheduler.as_ref().map(|p| p.context.address()),
        collector: collector.as_ref().map(|p| p.context.address()),
        reconciler: reconciler.context.address(),
        token_keeper: token_keeper.context.address(),
        started: started.clone(),
    };
    let pending = PendingBackground {
        scheduler,
        collector,
        reconciler,
        token_keeper,
        webhooks,
        sweeper,
        started,
    };
    (pending, addresses)
}

impl PendingBackground {
    /// Runs the actors on the current arbiter.
    pub fn start(self) {
        if let Some(scheduler) = self.scheduler {
            scheduler.run();
        }
        // Publishes the platform was still processing at our deadline are checked until they
        // end, on every instance (immediate ones too, so not tied to `scheduler.enabled`).
        self.reconciler.run();
        self.token_keeper.run();
        // Every instance delivers: each message is claimed by one at a time.
        self.webhooks.run();
        self.sweeper.start();
        if let Some(collector) = self.collector {
            collector.run();
        }
        self.started.store(true, Ordering::Release);
    }
}

impl BackgroundActors {
    fn running<A: Actor>(&self, addr: Option<&Addr<A>>) -> Option<Addr<A>> {
        addr.filter(|_| self.started.load(Ordering::Acquire))
            .cloned()
    }

    /// The scheduler, once running (never when `scheduler.enabled` is false).
    pub fn scheduler(&self) -> Option<Addr<SchedulerActor>> {
        self.running(self.scheduler.as_ref())
    }

    /// The collector, once running (never when `collector.enabled` is false).
    pub fn collector(&self) -> Option<Addr<CollectorActor>> {
        self.running(self.collector.as_ref())
    }

    /// The reconciler, once running.
    pub fn reconciler(&self) -> Option<Addr<ReconcilerActor>> {
        self.running(Some(&self.reconciler))
    }

    /// The token keeper, once running.
    pub fn token_keeper(&self) -> Option<Addr<TokenKeeper>> {
        self.running(Some(&self.token_keeper))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use actix::{Handler, Message};

    use super::*;

    /// Counts the pings it handled.
    #[derive(Default)]
    struct Counter(u32);

    impl Actor for Counter {
        type Context = Context<Self>;
    }

    struct Ping;

    impl Message for Ping {
        type Result = u32;
    }

    impl Handler<Ping> for Counter {
        type Result = u32;

        fn handle(&mut self, _msg: Ping, _ctx: &mut Self::Context) -> u32 {
            self.0 += 1;
            self.0
        }
    }

    /// What the builder relies on: an address handed out before the actor runs takes messages
    /// (a wake sent while the background is deferred), and the actor handles them once it runs.
    #[actix_rt::test]
    async fn a_message_sent_before_the_actor_runs_is_handled_once_it_does() {
        let mailbox = Mailbox::<Counter>::new();
        let address = mailbox.address();
        address.try_send(Ping).unwrap();
        let pending = Pending::new(mailbox, Counter::default());
        let running = pending.run();
        // The early ping came first: this one is the second.
        assert_eq!(running.send(Ping).await.unwrap(), 2);
        assert_eq!(address.send(Ping).await.unwrap(), 3);
    }
}
