//! The history of a publish as it runs: [`StepRecorder`] keeps the steps an adapter reports (the
//! platforms' [`StepSink`]) in `post_submissions.steps`, and renews the claim the publish runs
//! under before each step that needs it ([`ClaimFence`] for a scheduled post, [`CheckFence`] for
//! a continuation). Here, not in `platforms`, because the history and the claims are
//! publishing's: adapters only report.

use std::sync::Mutex;

use chrono::{DateTime, Utc};
use entity::post_submission::{PublishSteps, Step, StepKind};
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::{
    cluster::AccountLease,
    platforms::{Pending, PlatformError, ProcessingOutcome, StepSink},
    store::{AttemptClaim, PublishWrite, Store, SubmissionRow},
};

/// Records the remote ids of a publish as they are made, in `post_submissions.steps` (a
/// [`PublishSteps`] document), so that an interrupted publish can be settled from what was done.
pub struct StepRecorder {
    store: Option<(Store, Uuid)>,
    state: Mutex<PublishSteps>,
    /// The history row of a new publish, not written yet: its steps stay in memory until the
    /// final call, when one transaction writes the row (see [`StepRecorder::before_final`]).
    /// `None` once written, and for a recorder whose row already exists.
    unwritten: Mutex<Option<SubmissionRow>>,
    fence: Option<ClaimFence>,
    check_fence: Option<CheckFence>,
    /// The account's publish lease the publish runs under: lost, the final call is not made.
    lease: Option<std::sync::Arc<AccountLease>>,
    /// Stamps each step with the time it was recorded (`at`), for the delivery timeline of the
    /// dashboard's history. Without one (adapter tests) steps carry no time.
    clock: Option<crate::clock::SharedClock>,
    /// Called when the final call is cleared to go (see [`FinalProbe`]).
    probe: Option<FinalProbe>,
    /// A new publish's recorder: after the row is written (at the final call) the steps that
    /// follow (the published ids) stay in memory too and are written with the outcome, so the
    /// publish writes once after its final call. Their only use is the history: a publish cut off
    /// after its final call is `unconfirmed` from `final_started` alone.
    deferred: bool,
}

/// Called at the moment the adapter is cleared to make its irreversible call (after the write
/// before it): how tests observe what the publish path wrote before that call.
pub type FinalProbe = std::sync::Arc<dyn Fn() + Send + Sync>;

/// The claim a scheduled publish runs under. Before the irreversible call the claim is renewed
/// conditionally: if another instance has meanwhile settled the post (this one was presumed
/// dead), the renewal fails and the final call is not made. This keeps at-most-once even across
/// a pause longer than the lease.
#[derive(Clone)]
pub struct ClaimFence {
    pub scheduled_post_id: Uuid,
    pub claimant: String,
    /// The attempt's number (`scheduled_posts.attempts` as its claim set it): a stale job of an
    /// earlier attempt of the same claimant does not hold the claim.
    pub attempt: i32,
    pub lease: chrono::Duration,
    pub clock: crate::clock::SharedClock,
}

/// The check claim an instance holds on an unconfirmed submission while it carries its publish
/// on (`post_submissions.check_claimed_by`). Renewed conditionally before a final call made by
/// the continuation, like [`ClaimFence`]: an instance whose claim was taken over (it was presumed
/// dead) does not make the call.
#[derive(Clone)]
pub struct CheckFence {
    pub claimant: String,
    pub lease: chrono::Duration,
    pub clock: crate::clock::SharedClock,
}

impl ClaimFence {
    pub(crate) fn attempt_claim(&self) -> AttemptClaim {
        AttemptClaim {
            scheduled_post_id: self.scheduled_post_id,
            claimant: self.claimant.clone(),
            attempt: self.attempt,
        }
    }
}

impl StepRecorder {
    /// A recorder for a new publish whose history row is `row`: nothing is written until the
    /// final call (or until the publish ends without one; see `run_job`).
    pub fn for_new_submission(store: Store, row: SubmissionRow) -> Self {
        Self {
            store: Some((store, row.id)),
            state: Mutex::new(PublishSteps::default()),
            unwritten: Mutex::new(Some(row)),
            fence: None,
            check_fence: None,
            lease: None,
            clock: None,
            probe: None,
            deferred: true,
        }
    }

    /// A recorder that carries on the steps already recorded on `submission_id` (a publish
    /// continued after its processing finished), under the instance's check claim.
    pub fn resume(
        store: Store,
        submission_id: Uuid,
        recorded: Option<PublishSteps>,
        fence: CheckFence,
    ) -> Self {
        Self {
            store: Some((store, submission_id)),
            state: Mutex::new(recorded.unwrap_or_default()),
            unwritten: Mutex::new(None),
            fence: None,
            check_fence: Some(fence),
            lease: None,
            clock: None,
            probe: None,
            deferred: false,
        }
    }

    /// A recorder that keeps steps in memory only (adapter tests).
    pub fn in_memory() -> Self {
        Self {
            store: None,
            state: Mutex::new(PublishSteps::default()),
            unwritten: Mutex::new(None),
            fence: None,
            check_fence: None,
            lease: None,
            clock: None,
            probe: None,
            deferred: false,
        }
    }

    /// Whether the irreversible call has started (now or in an earlier run of this publish).
    pub fn final_started(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .final_started
    }

    /// Runs the recorder under a scheduled post's claim (see [`ClaimFence`]).
    pub fn with_fence(mut self, fence: Option<ClaimFence>) -> Self {
        self.fence = fence;
        self
    }

    /// Runs the recorder under the account's publish lease (see [`AccountLease::valid`]).
    pub fn with_lease(mut self, lease: Option<std::sync::Arc<AccountLease>>) -> Self {
        self.lease = lease;
        self
    }

    /// Refuses the final call when this instance can no longer be sure it holds the account's
    /// publish lease (it lost touch with the database for most of the takeover time): another
    /// instance may take the account over at any moment.
    fn check_lease(&self) -> Result<(), PlatformError> {
        match &self.lease {
            Some(lease) if !lease.valid() => Err(PlatformError::Transient(
                "this instance could not renew its membership in time; the final publish call was not made".into(),
            )),
            _ => Ok(()),
        }
    }

    /// Calls `probe` whenever the final call is cleared to go.
    pub fn with_final_probe(mut self, probe: Option<FinalProbe>) -> Self {
        self.probe = probe;
        self
    }

    /// Stamps the steps recorded from now on with `clock`'s time.
    pub fn with_clock(mut self, clock: crate::clock::SharedClock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The time to stamp a step with, as the history shows it (`None` without a clock).
    fn stamp(&self) -> Option<DateTime<Utc>> {
        self.clock.as_ref().map(|clock| clock.now())
    }

    /// Records a remote id (container, upload session, media id, published segment id…).
    ///
    /// Under a check claim the claim is renewed too, so a long continuation (the tweets of an x
    /// thread, one call each) keeps it while it makes progress; a claim lost meanwhile (this
    /// instance was presumed dead) stops it before its next call.
    pub async fn record(&self, kind: StepKind, id: &str) -> Result<(), PlatformError> {
        let snapshot = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            state.steps.push(Step {
                kind,
                id: id.to_string(),
                outcome: None,
                at: self.stamp(),
            });
            state.clone()
        };
        if self.deferred {
            // Kept in memory: an interrupted publish that never reached its final call is
            // retried (or failed) as if these steps had not happened, and one that did is
            // settled from `final_started`, written before the call; the outcome's write carries
            // them to the history.
            return Ok(());
        }
        self.persist(snapshot).await?;
        self.renew_check_claim().await
    }

    /// The row not written yet, with the steps recorded so far, taken so that the caller writes
    /// it (the publish ended before its final call). `None` when the row exists.
    pub fn take_unwritten(&self) -> Option<SubmissionRow> {
        let mut row = self
            .unwritten
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()?;
        row.steps = self.snapshot();
        Some(row)
    }

    /// Records how the platform's processing of `id` ended (a container, an uploaded video, a
    /// TikTok publish): one step for the whole wait, not one per poll (`still_processing` is at
    /// our deadline; a later check goes on). Best effort: the wait's own result decides the
    /// publish, so a step that cannot be written is only logged.
    pub async fn processing(&self, id: &str, outcome: ProcessingOutcome) {
        let snapshot = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            state.steps.push(Step {
                kind: StepKind::Processing,
                id: id.to_string(),
                outcome: Some(outcome),
                at: self.stamp(),
            });
            state.clone()
        };
        if self.deferred {
            return;
        }
        if let Err(error) = self.persist(snapshot).await {
            tracing::warn!(%error, "the processing step was not recorded");
        }
    }

    /// Renews the check claim, if this recorder runs under one; an error when it is lost.
    async fn renew_check_claim(&self) -> Result<(), PlatformError> {
        if let (Some((store, submission_id)), Some(fence)) = (&self.store, &self.check_fence) {
            let until = fence.clock.now() + fence.lease;
            let held = store
                .renew_check_claim(*submission_id, &fence.claimant, until)
                .await
                .map_err(|e| PlatformError::Transient(format!("cannot renew the claim: {e}")))?;
            if !held {
                return Err(PlatformError::Rejected(
                    "this instance no longer holds the submission's check claim; it stopped before its next platform call".into(),
                ));
            }
        }
        Ok(())
    }

    /// Marks that the irreversible call is about to be made. After this, an interrupted publish
    /// is never resumed automatically: its outcome must be checked on the platform.
    ///
    /// For a new publish this is its one write before the call: the history row (`publishing`,
    /// the steps so far, `final_started`) and, for a scheduled post, the renewal of its claim
    /// and the link to the row, in one transaction (grouped with other publishes' writes). A
    /// claim lost meanwhile writes nothing and the call is not made.
    pub async fn before_final(&self) -> Result<(), PlatformError> {
        self.check_lease()?;
        // Taken, not copied, while it is written: an announcement meanwhile (see
        // [`Self::announce`]) then finds nothing to write instead of inserting it a second time.
        let unwritten = self
            .unwritten
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some((store, submission_id)) = &self.store else {
            return self.before_final_existing().await;
        };
        let Some(mut row) = unwritten else {
            return self.before_final_existing().await;
        };
        let kept = row.clone();
        let put_back = || {
            *self.unwritten.lock().unwrap_or_else(|p| p.into_inner()) = Some(kept.clone());
        };
        let mut steps = self.snapshot();
        steps.final_started = true;
        if let Some(at) = self.stamp() {
            steps.final_started_at = Some(at);
            row.updated_at = at;
        }
        row.steps = steps.clone();
        let claim = self
            .fence
            .as_ref()
            .map(|fence| (fence.attempt_claim(), fence.clock.now() + fence.lease));
        let written = match store
            .publish_write(PublishWrite::BeforeFinal { row, claim })
            .await
        {
            Ok(written) => written,
            Err(e) => {
                put_back();
                return Err(PlatformError::Transient(format!(
                    "cannot record the publish: {e}"
                )));
            }
        };
        if !written {
            put_back();
            return Err(Self::claim_lost());
        }
        tracing::debug!(submission = %submission_id, "history row written before the final call");
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = steps;
        self.cleared();
        Ok(())
    }

    /// Writes the history row now (status `publishing`, the steps so far) if it is still only
    /// in memory: a caller that stopped waiting has told its client to look for it. The publish
    /// goes on; its final call then updates the row like a continuation's. Best effort: a row
    /// that cannot be written is logged and stays in memory, to be written as usual.
    pub async fn announce(&self) {
        let Some((store, submission_id)) = &self.store else {
            return;
        };
        let unwritten = self
            .unwritten
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some(mut row) = unwritten else {
            return;
        };
        row.steps = self.snapshot();
        if let Some(at) = self.stamp() {
            row.updated_at = at;
        }
        // Immediate publishes only (they are the ones with a waiting caller): no claim to link.
        match store
            .publish_write(PublishWrite::Ended {
                row: row.clone(),
                claim: None,
            })
            .await
        {
            Ok(_) => {
                tracing::info!(submission = %submission_id, "history row written early: the caller stopped waiting");
            }
            Err(error) => {
                tracing::warn!(%error, submission = %submission_id, "the history row could not be written early");
                *self.unwritten.lock().unwrap_or_else(|p| p.into_inner()) = Some(row);
            }
        }
    }

    fn claim_lost() -> PlatformError {
        PlatformError::Rejected(
            "this instance no longer holds the scheduled post's claim; the final publish call was not made".into(),
        )
    }

    /// [`Self::before_final`] for a row that exists (a continuation, or a recorder built on an
    /// existing row).
    async fn before_final_existing(&self) -> Result<(), PlatformError> {
        self.check_lease()?;
        if let (Some((store, submission_id)), Some(fence)) = (&self.store, &self.fence) {
            let until = fence.clock.now() + fence.lease;
            let held = store
                .renew_attempt_claim(&fence.attempt_claim(), *submission_id, until)
                .await
                .map_err(|e| PlatformError::Transient(format!("cannot renew the claim: {e}")))?;
            if !held {
                return Err(Self::claim_lost());
            }
        }
        self.renew_check_claim().await?;
        let snapshot = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            state.final_started = true;
            if let Some(at) = self.stamp() {
                state.final_started_at = Some(at);
            }
            state.clone()
        };
        self.persist(snapshot).await?;
        self.cleared();
        Ok(())
    }

    fn cleared(&self) {
        if let Some(probe) = &self.probe {
            probe();
        }
    }

    /// The steps recorded so far.
    pub fn snapshot(&self) -> PublishSteps {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Ids recorded as `kind`, in order.
    pub fn ids(&self, kind: StepKind) -> Vec<String> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .ids(kind)
    }

    async fn persist(&self, snapshot: PublishSteps) -> Result<(), PlatformError> {
        if let Some((store, id)) = &self.store {
            store
                .record_submission_steps(*id, snapshot)
                .await
                .map_err(|e| PlatformError::Transient(format!("cannot record step: {e}")))?;
        }
        Ok(())
    }
}

/// The adapters' view of the recorder (the inherent methods do the work).
impl StepSink for StepRecorder {
    fn record<'a>(
        &'a self,
        kind: StepKind,
        id: &'a str,
    ) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(StepRecorder::record(self, kind, id))
    }

    fn processing<'a>(&'a self, id: &'a str, outcome: ProcessingOutcome) -> BoxFuture<'a, ()> {
        Box::pin(StepRecorder::processing(self, id, outcome))
    }

    fn before_final(&self) -> BoxFuture<'_, Result<(), PlatformError>> {
        Box::pin(StepRecorder::before_final(self))
    }
}

/// What is left of a publish the platform was still processing (`post_submissions.reconcile`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reconcile {
    pub pending: Pending,
    /// Result fields already known (a carousel's `item_count`), merged into the outcome.
    pub fields: Value,
    /// The x monthly post count taken for this post, given back if it does not go out.
    pub reserved_counter: Option<ReservedCounter>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservedCounter {
    pub user_id: Uuid,
    pub key: String,
}
