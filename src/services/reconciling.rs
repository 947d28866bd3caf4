//! Carrying on publishes the platform was still processing at our deadline: the reconciler
//! actor's pass claims the due checks and runs each on its account's actor (the check itself is
//! [`crate::publish::reconcile`]).

use std::sync::Arc;

use entity::post_submission;
use futures_util::StreamExt;

use crate::{
    actors::supervisor::Supervisor,
    publish::{
        reconcile::{CheckOutcome, CheckSpec, give_up},
        run::PublishDeps,
    },
};

/// Checks claimed in one pass.
const BATCH: u64 = 64;
/// Checks running at once (each on its account's actor).
const CONCURRENCY: usize = 8;

/// What the reconciler actor works with: the publishing dependencies (a check that runs out of
/// time is given up with them), the account actors (each check runs on its account's actor),
/// this instance's claimant id and the timings.
pub struct ReconcileService {
    deps: Arc<PublishDeps>,
    supervisor: Arc<Supervisor>,
    /// This process's claimant id (the scheduler's too).
    instance: String,
    /// How long a claim on a check holds: the scheduler's lease, the service's measure of
    /// "this instance died".
    lease: chrono::Duration,
}

impl ReconcileService {
    pub fn new(
        deps: Arc<PublishDeps>,
        supervisor: Arc<Supervisor>,
        instance: String,
        lease: chrono::Duration,
    ) -> Self {
        Self {
            deps,
            supervisor,
            instance,
            lease,
        }
    }

    /// How often the actor looks for due checks.
    pub fn check_interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.deps.publishing.unconfirmed_check_interval_ms.max(10))
    }

    /// How often the reconciler looks for due checks: at the check interval, and at least as
    /// often as dead instances' claims are handed back, so a dead instance's checks go on
    /// within the takeover time.
    pub fn look_every(&self) -> std::time::Duration {
        self.check_interval().min(self.deps.cluster.look_every())
    }

    /// One look at the table: claims the due checks and runs them (a few at a time).
    pub async fn pass(&self) -> Result<Vec<CheckOutcome>, sea_orm::DbErr> {
        let now = self.deps.clock.now();
        let due = self.deps.store.due_checks(now, BATCH).await?;
        if due.is_empty() {
            return Ok(Vec::new());
        }
        let outcomes = futures_util::stream::iter(due)
            .map(|row| self.check_one(row))
            .buffer_unordered(CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        Ok(outcomes)
    }

    /// Claims one due check and runs it on the account's actor.
    async fn check_one(&self, row: post_submission::Model) -> CheckOutcome {
        let store = &self.deps.store;
        let now = self.deps.clock.now();
        // The claim must outlive one check (a status read, or a continuation's final call).
        let lease = self.lease;
        let claimant = self.instance.as_str();
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
        if row.check_until.is_some_and(|until| now >= until) {
            return give_up(&self.deps, &row, claimant).await;
        }
        let retry_in = |secs: u64| {
            let interval = self.deps.publishing.unconfirmed_check_interval_ms;
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
        match self.supervisor.check_unconfirmed(&account, spec).await {
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
}
