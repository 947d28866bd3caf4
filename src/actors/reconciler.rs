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

use std::time::Duration;

use actix::prelude::*;
use actix_web::web;
use futures_util::StreamExt;
use serde::Serialize;

use super::in_runtime::in_runtime;
use crate::{
    AppState,
    publish::reconcile::{self, CheckOutcome, CheckSpec},
};

/// Checks claimed in one pass.
const BATCH: u64 = 64;
/// Checks running at once (each on its account's actor).
const CONCURRENCY: usize = 8;

/// What the reconciler has done (its health).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReconcilerStatus {
    pub passes: u64,
    pub published: u64,
    pub failed: u64,
    pub still_processing: u64,
    pub gave_up: u64,
    pub last_error: Option<String>,
}

pub struct ReconcilerActor {
    state: web::Data<AppState>,
    status: ReconcilerStatus,
    /// A pass is running: the next tick waits for it.
    busy: bool,
}

impl ReconcilerActor {
    pub fn new(state: web::Data<AppState>) -> Self {
        Self {
            state,
            status: ReconcilerStatus::default(),
            busy: false,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        self.busy = true;
        let state = self.state.clone();
        ctx.spawn(
            in_runtime(pass(state))
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
        let interval = Duration::from_millis(
            self.state
                .config
                .publishing
                .unconfirmed_check_interval_ms
                .max(10),
        );
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

/// One look at the table: claims the due checks and runs them (a few at a time).
async fn pass(state: web::Data<AppState>) -> Result<Vec<CheckOutcome>, sea_orm::DbErr> {
    let now = state.clock.now();
    let due = state.store.due_checks(now, BATCH).await?;
    if due.is_empty() {
        return Ok(Vec::new());
    }
    let outcomes = futures_util::stream::iter(due)
        .map(|row| check_one(&state, row))
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    Ok(outcomes)
}

/// Claims one due check and runs it on the account's actor.
async fn check_one(state: &AppState, row: entity::post_submission::Model) -> CheckOutcome {
    let store = &state.store;
    let now = state.clock.now();
    // The claim must outlive one check (a status read, or a continuation's final call); the
    // scheduler's lease is the service's measure of "this instance died".
    let lease = chrono::Duration::seconds(state.config.scheduler.lease_secs.max(1) as i64);
    let claimant = state.instance_id.as_str();
    match store.claim_check(row.id, claimant, now, now + lease).await {
        Ok(true) => {}
        // Another instance has it.
        Ok(false) => return CheckOutcome::Lost,
        Err(e) => {
            tracing::warn!(error = %e, submission = %row.id, "reconciler: cannot claim a check");
            return CheckOutcome::Lost;
        }
    }
    // The row as it is now, claimed: the copy from the due list may predate another
    // instance's final call (its recorded steps and `final_started`).
    let row = match store.find_submission(row.id).await {
        Ok(Some(fresh)) => fresh,
        other => {
            if let Err(e) = other {
                tracing::warn!(error = %e, submission = %row.id, "reconciler: cannot re-read a claimed check");
            }
            let _ = store.release_check(row.id, claimant, now).await;
            return CheckOutcome::Lost;
        }
    };
    let deps = state.supervisor.deps();
    if row.check_until.is_some_and(|until| now >= until) {
        return reconcile::give_up(deps, &row, claimant).await;
    }
    let retry_in = |secs: u64| {
        let interval = state.config.publishing.unconfirmed_check_interval_ms;
        now + chrono::Duration::milliseconds(interval.max(secs.saturating_mul(1000)) as i64)
    };
    let account = match store.find_account(row.account_id).await {
        Ok(Some(account)) => account,
        other => {
            if let Err(e) = other {
                tracing::warn!(error = %e, submission = %row.id, "reconciler: cannot read the account");
            }
            let _ = store.release_check(row.id, claimant, retry_in(0)).await;
            return CheckOutcome::StillProcessing;
        }
    };
    let spec = CheckSpec {
        submission: row.clone(),
        claimant: claimant.to_string(),
        lease,
    };
    match state.supervisor.check_unconfirmed(&account, spec).await {
        Ok(report) => report.outcome,
        Err(refused) => {
            // Not now (limiter empty, token dead, actor busy): the next check is later, at
            // least when the limiter allows.
            tracing::debug!(submission = %row.id, error = %refused, "reconciler: check refused; later");
            let next = retry_in(refused.retry_after.unwrap_or(0));
            if let Err(e) = store.release_check(row.id, claimant, next).await {
                tracing::warn!(error = %e, submission = %row.id, "reconciler: cannot release a check; its lease lapses");
            }
            CheckOutcome::StillProcessing
        }
    }
}
