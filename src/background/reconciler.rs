//! The reconciler actor: carries on publishes the platform was still processing at our deadline
//! (history `unconfirmed`, see [`crate::publish::reconcile`]) until the platform says published
//! or failed.
//!
//! Every `publishing.unconfirmed_check_interval_ms` it looks for due checks, claims each with a
//! conditional update (so with several instances on one database exactly one checks it, and a
//! claim whose lease passed — its instance died — is taken over), and asks the submission's
//! account actor to run the check, so the platform calls go through that account's limiter and
//! token state. Past `publishing.unconfirmed_check_horizon_secs` it stops checking. What is
//! left to do is in the database, so a restart (or another instance) resumes it; nothing the
//! actor holds in memory is needed.
//!
//! All database and platform work runs in futures spawned on the actor's context.

use std::sync::Arc;

use actix::prelude::*;
use serde::Serialize;

use crate::store::in_runtime::in_runtime;
use crate::{publish::reconcile::CheckOutcome, services::reconciling::ReconcileService};

/// What the reconciler has done (its health).
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct ReconcilerStatus {
    pub passes: u64,
    pub published: u64,
    pub failed: u64,
    pub still_processing: u64,
    pub gave_up: u64,
    #[schema(required = true)]
    pub last_error: Option<String>,
}

pub struct ReconcilerActor {
    service: Arc<ReconcileService>,
    status: ReconcilerStatus,
    /// A pass is running: the next tick waits for it.
    busy: bool,
}

impl ReconcilerActor {
    pub fn new(service: Arc<ReconcileService>) -> Self {
        Self {
            service,
            status: ReconcilerStatus::default(),
            busy: false,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        self.busy = true;
        let service = self.service.clone();
        ctx.spawn(
            in_runtime(async move { service.pass().await })
                .into_actor(self)
                .map(|result, actor, _ctx| {
                    actor.busy = false;
                    actor.status.passes += 1;
                    match result {
                        Ok(outcomes) => {
                            for outcome in outcomes {
                                let counter = match outcome {
                                    CheckOutcome::Published => &mut actor.status.published,
                                    CheckOutcome::Failed => &mut actor.status.failed,
                                    CheckOutcome::StillProcessing => {
                                        &mut actor.status.still_processing
                                    }
                                    CheckOutcome::Unconfirmed => &mut actor.status.gave_up,
                                    CheckOutcome::Lost => continue,
                                };
                                *counter += 1;
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "reconciler: cannot read due checks");
                            actor.status.last_error = Some(format!("database: {e}"));
                        }
                    }
                }),
        );
    }
}

impl Actor for ReconcilerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let interval = self.service.look_every();
        tracing::info!(
            interval_ms = interval.as_millis() as u64,
            "reconciler started"
        );
        // At start too: checks left by a previous run of this instance are due already.
        self.tick(ctx);
        ctx.run_interval(interval, |actor, ctx| actor.tick(ctx));
    }
}

/// The reconciler's status.
pub struct GetStatus;

impl Message for GetStatus {
    type Result = ReconcilerStatus;
}

impl Handler<GetStatus> for ReconcilerActor {
    type Result = MessageResult<GetStatus>;

    fn handle(&mut self, _msg: GetStatus, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.status.clone())
    }
}
