//! What the publish path writes: a history row before the irreversible call (with the
//! scheduled post's claim to renew) and its outcome after it. The group commit
//! ([`super::commit`]) batches these; on SQLite its writer thread applies them.

use chrono::{DateTime, Utc};
use entity::post_submission::{PublishSteps, SubmissionStatus};
use uuid::Uuid;

use super::NewSubmission;

/// The claim of one attempt of a scheduled post: held while the post is `publishing` under
/// `claimant` and `attempts` is still this attempt's number (a stale job of an earlier attempt of
/// the same instance no longer matches).
#[derive(Debug, Clone)]
pub struct AttemptClaim {
    pub scheduled_post_id: Uuid,
    pub claimant: String,
    pub attempt: i32,
}

/// A history row about to be written for the first time.
#[derive(Debug, Clone)]
pub struct SubmissionRow {
    pub id: Uuid,
    pub new: NewSubmission,
    pub steps: PublishSteps,
    pub scheduled_post_id: Option<Uuid>,
    /// When the publish started (the history's order), not when the row is written.
    pub created_at: DateTime<Utc>,
    /// When the row is written.
    pub updated_at: DateTime<Utc>,
    /// The instance running the publish.
    pub publisher: Option<String>,
}

/// One write of the publish path. Each is answered on its own: `Ok(false)` is a conditional
/// write that matched nothing (a lost claim, an outcome already recorded).
#[derive(Debug, Clone)]
pub enum PublishWrite {
    /// Before the irreversible call: renews the attempt's claim until `lease_until` and links the
    /// row to the scheduled post (when `claim`), then inserts the row (`publishing`, steps with
    /// `final_started`). False, with nothing written, when the claim is lost.
    BeforeFinal {
        row: SubmissionRow,
        claim: Option<(AttemptClaim, DateTime<Utc>)>,
    },
    /// A publish that ended without the row having been written (it failed before the final
    /// call): the whole row at once. A scheduled attempt still holding `claim` is linked to it.
    Ended {
        row: SubmissionRow,
        claim: Option<AttemptClaim>,
    },
    /// `publishing → published`.
    Published {
        id: Uuid,
        post_id: String,
        result: serde_json::Value,
        /// The steps as they ended (those after the final call were kept in memory).
        steps: Option<PublishSteps>,
        now: DateTime<Utc>,
    },
    /// `publishing → failed | unconfirmed`; false when the row was no longer `publishing`.
    /// With `unlink`, the scheduled post stops naming this row as its attempt (see
    /// `run_job`: a refused final call is retried, and the retry's settlement must not read
    /// this attempt's `final_started`).
    Failed {
        id: Uuid,
        status: SubmissionStatus,
        error_code: String,
        message: String,
        steps: Option<PublishSteps>,
        now: DateTime<Utc>,
        unlink: Option<AttemptClaim>,
    },
}

impl PublishWrite {
    /// The history row it writes.
    pub(super) fn submission_id(&self) -> Uuid {
        match self {
            PublishWrite::BeforeFinal { row, .. } | PublishWrite::Ended { row, .. } => row.id,
            PublishWrite::Published { id, .. } | PublishWrite::Failed { id, .. } => *id,
        }
    }

    /// It may record an outcome (and so a webhook event): every write but the row written
    /// before the final call.
    pub(super) fn may_end(&self) -> bool {
        !matches!(self, PublishWrite::BeforeFinal { .. })
    }

    /// A new row with no scheduled post alongside: it can share a multi-row `INSERT`.
    pub(super) fn plain_row(&self) -> Option<&SubmissionRow> {
        match self {
            PublishWrite::BeforeFinal { row, claim: None }
            | PublishWrite::Ended { row, claim: None } => Some(row),
            _ => None,
        }
    }

    /// A single statement (no scheduled post's claim to renew, link or unlink alongside).
    pub(super) fn is_one_statement(&self) -> bool {
        !self.links_scheduled_post()
    }

    /// Sets or clears a scheduled post's `submission_id`, which its listing shows.
    pub(super) fn links_scheduled_post(&self) -> bool {
        match self {
            PublishWrite::BeforeFinal { claim, .. } => claim.is_some(),
            PublishWrite::Ended { claim, .. } => claim.is_some(),
            PublishWrite::Published { .. } => false,
            PublishWrite::Failed { unlink, .. } => unlink.is_some(),
        }
    }
}

/// What a `published` outcome writes.
pub(super) struct PublishedOutcome<'a> {
    pub id: Uuid,
    pub post_id: &'a str,
    pub result: &'a serde_json::Value,
    pub steps: Option<&'a PublishSteps>,
    pub now: DateTime<Utc>,
}

impl<'a> PublishedOutcome<'a> {
    pub(super) fn of(write: &'a PublishWrite) -> Option<Self> {
        match write {
            PublishWrite::Published {
                id,
                post_id,
                result,
                steps,
                now,
            } => Some(Self {
                id: *id,
                post_id,
                result,
                steps: steps.as_ref(),
                now: *now,
            }),
            _ => None,
        }
    }
}
