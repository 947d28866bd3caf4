//! The history of a publish as it runs: [`StepRecorder`] keeps the steps an adapter reports (the
//! platforms' [`StepSink`]) in `post_submissions.steps`, and renews the claim the publish runs
//! under before each step that needs it ([`ClaimFence`] for a scheduled post, [`CheckFence`] for
//! a continuation). Here, not in `platforms`, because the history and the claims are
//! publishing's: adapters only report.

use std::sync::Mutex;

use chrono::{DateTime, Utc};
use entity::post_submission::{PublishSteps, Step, StepKind};
use futures_util::future::BoxFuture;
use uuid::Uuid;

use crate::{
    platforms::{PlatformError, ProcessingOutcome, StepSink},
    store::Store,
};

/// Records the remote ids of a publish as they are made, in `post_submissions.steps` (a
/// [`PublishSteps`] document), so that an interrupted publish can be settled from what was done.
pub struct StepRecorder {
    store: Option<(Store, Uuid)>,
    state: Mutex<PublishSteps>,
    fence: Option<ClaimFence>,
    check_fence: Option<CheckFence>,
    /// Stamps each step with the time it was recorded (`at`), for the delivery timeline of the
    /// dashboard's history. Without one (adapter tests) steps carry no time.
    clock: Option<crate::clock::SharedClock>,
}

/// The claim a scheduled publish runs under. Before the irreversible call the claim is renewed
/// conditionally: if another instance has meanwhile settled the post (this one was presumed
/// dead), the renewal fails and the final call is not made. This keeps at-most-once even across
/// a pause longer than the lease.
#[derive(Clone)]
pub struct ClaimFence {
    pub scheduled_post_id: Uuid,
    pub claimant: String,
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

impl StepRecorder {
    /// A recorder that writes to the submission row `submission_id`.
    pub fn for_submission(store: Store, submission_id: Uuid) -> Self {
        Self {
            store: Some((store, submission_id)),
            state: Mutex::new(PublishSteps::default()),
            fence: None,
            check_fence: None,
            clock: None,
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
            fence: None,
            check_fence: Some(fence),
            clock: None,
        }
    }

    /// A recorder that keeps steps in memory only (adapter tests).
    pub fn in_memory() -> Self {
        Self {
            store: None,
            state: Mutex::new(PublishSteps::default()),
            fence: None,
            check_fence: None,
            clock: None,
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
        self.persist(snapshot).await?;
        self.renew_check_claim().await
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
    pub async fn before_final(&self) -> Result<(), PlatformError> {
        if let (Some((store, submission_id)), Some(fence)) = (&self.store, &self.fence) {
            let until = fence.clock.now() + fence.lease;
            let held = store
                .renew_claim(
                    fence.scheduled_post_id,
                    &fence.claimant,
                    *submission_id,
                    until,
                )
                .await
                .map_err(|e| PlatformError::Transient(format!("cannot renew the claim: {e}")))?;
            if !held {
                return Err(PlatformError::Rejected(
                    "this instance no longer holds the scheduled post's claim; the final publish call was not made".into(),
                ));
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
        self.persist(snapshot).await
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
