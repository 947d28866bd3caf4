//! The supervisor's roster of live account actors, which every actor holds a share of: an
//! actor finds its own entry (address and health record) there, and the supervisor finds the
//! actor.

use std::sync::Arc;

use actix::Addr;
use dashmap::DashMap;
use uuid::Uuid;

use super::{AccountActor, health::HealthRecord};
use crate::publish::run::PublishDeps;

/// The live actors, and what they all share: one `Arc` of it in each actor (for the memory
/// budget of ≤ 2 KB per idle actor: one pointer where the registry, the health board and the
/// dependencies would take three).
pub struct Roster {
    /// Every live actor's entry, by account id: its address and its health record (one map
    /// for both, so one key and one slot per actor).
    pub actors: DashMap<Uuid, ActorEntry>,
    pub deps: Arc<PublishDeps>,
}

/// A live actor: its address, the generation it was started in (so a stopping actor only
/// removes itself), the thread it runs on, and the operator view's copy of its health, which
/// the actor keeps current.
pub struct ActorEntry {
    pub generation: u64,
    pub addr: Addr<AccountActor>,
    pub placement: Placement,
    pub health: HealthRecord,
}

/// What a caller needs of a live actor to message it.
#[derive(Clone)]
pub struct LiveActor {
    pub generation: u64,
    pub addr: Addr<AccountActor>,
    /// The thread the actor runs on.
    pub placement: Placement,
}

impl ActorEntry {
    pub(in crate::actors) fn live(&self) -> LiveActor {
        LiveActor {
            generation: self.generation,
            addr: self.addr.clone(),
            placement: self.placement,
        }
    }
}

/// The thread an account actor runs on (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The HTTP worker whose publish request started it.
    RequestWorker,
    /// The supervisor's arbiter of this index.
    Arbiter(usize),
}
