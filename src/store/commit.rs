//! Group commit for the publish path: the history row written before the irreversible call
//! (with the scheduled post's fenced claim renewal) and the one written after it. Writes that
//! arrive together run in one transaction, so N concurrent publishes cost one commit (one fsync
//! on SQLite, one round of WAL flush on PostgreSQL) instead of N.
//!
//! No background task lives between batches: the first writer to find the queue idle spawns a
//! drainer, which takes whatever is queued (up to `group_commit_max`) without waiting for more,
//! so a lone write costs no added latency; writes queued while a batch runs form the next batch.

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
};

use chrono::{DateTime, Utc};
use entity::{
    post_submission::{self, PublishSteps, SubmissionStatus},
    scheduled_post::{self, ScheduledStatus},
};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set,
    TransactionTrait, sea_query::Expr,
};
use tokio::sync::oneshot;
use uuid::Uuid;

use super::{NewSubmission, Store};
use crate::access::Invalidation;

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
    /// A single statement (no scheduled post's claim to renew, link or unlink alongside).
    fn is_one_statement(&self) -> bool {
        !self.links_scheduled_post()
    }

    /// Sets or clears a scheduled post's `submission_id`, which its listing shows.
    fn links_scheduled_post(&self) -> bool {
        match self {
            PublishWrite::BeforeFinal { claim, .. } => claim.is_some(),
            PublishWrite::Ended { claim, .. } => claim.is_some(),
            PublishWrite::Published { .. } => false,
            PublishWrite::Failed { unlink, .. } => unlink.is_some(),
        }
    }
}

type Reply = oneshot::Sender<Result<bool, DbErr>>;

/// The queue of writes waiting for a batch and the counters tests and benchmarks read.
#[derive(Debug)]
pub(crate) struct GroupCommit {
    queue: Mutex<Queue>,
    max: AtomicUsize,
    transactions: AtomicU64,
    writes: AtomicU64,
}

#[derive(Debug, Default)]
struct Queue {
    waiting: VecDeque<(PublishWrite, Reply)>,
    draining: bool,
}

impl Default for GroupCommit {
    fn default() -> Self {
        Self {
            queue: Mutex::new(Queue::default()),
            max: AtomicUsize::new(DEFAULT_GROUP_COMMIT_MAX),
            transactions: AtomicU64::new(0),
            writes: AtomicU64::new(0),
        }
    }
}

/// `database.group_commit_max`'s default.
pub const DEFAULT_GROUP_COMMIT_MAX: usize = 64;

/// A reading of the group commit's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Transactions committed (a batch, or one write retried alone).
    pub transactions: u64,
    /// Publish-path writes answered.
    pub writes: u64,
}

impl GroupCommit {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Resets the queue's `draining` flag if a drainer is dropped mid-batch (its runtime shut
/// down): the writes still queued are answered with an error rather than left waiting forever.
struct DrainGuard {
    group: Arc<GroupCommit>,
    armed: bool,
}

impl Drop for DrainGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut queue = self.group.lock();
        queue.draining = false;
        queue.waiting.clear();
    }
}

impl Store {
    /// Bounds a batch (`database.group_commit_max`, at least 1).
    pub fn set_group_commit_max(&self, max: usize) {
        self.group.max.store(max.max(1), Ordering::Relaxed);
    }

    /// Transactions and writes of the group commit so far.
    pub fn group_commit_stats(&self) -> GroupCommitStats {
        GroupCommitStats {
            transactions: self.group.transactions.load(Ordering::Relaxed),
            writes: self.group.writes.load(Ordering::Relaxed),
        }
    }

    /// Runs `write` in the next batch and answers with its own result.
    pub async fn publish_write(&self, write: PublishWrite) -> Result<bool, DbErr> {
        let (reply, answer) = oneshot::channel();
        let start = {
            let mut queue = self.group.lock();
            queue.waiting.push_back((write, reply));
            !std::mem::replace(&mut queue.draining, true)
        };
        if start {
            let store = self.clone();
            tokio::spawn(async move { store.drain().await });
        }
        answer
            .await
            .map_err(|_| DbErr::Custom("the group commit stopped before the write ran".into()))?
    }

    /// Takes what is queued, batch after batch, until the queue is empty.
    async fn drain(&self) {
        let mut guard = DrainGuard {
            group: self.group.clone(),
            armed: true,
        };
        loop {
            let batch: Vec<(PublishWrite, Reply)> = {
                let mut queue = self.group.lock();
                if queue.waiting.is_empty() {
                    queue.draining = false;
                    guard.armed = false;
                    return;
                }
                let take = queue
                    .waiting
                    .len()
                    .min(self.group.max.load(Ordering::Relaxed));
                queue.waiting.drain(..take).collect()
            };
            self.run_batch(batch).await;
        }
    }

    /// One transaction for the whole batch; if it fails, each write alone, so that one bad write
    /// (a duplicate id, a constraint) fails only its own caller.
    async fn run_batch(&self, batch: Vec<(PublishWrite, Reply)>) {
        let count = batch.len() as u64;
        if batch.len() > 1 {
            match self.run_together(&batch).await {
                Ok(results) => {
                    self.group.transactions.fetch_add(1, Ordering::Relaxed);
                    self.group.writes.fetch_add(count, Ordering::Relaxed);
                    for ((_, reply), result) in batch.into_iter().zip(results) {
                        let _ = reply.send(Ok(result));
                    }
                    return;
                }
                Err(error) => {
                    tracing::warn!(%error, writes = count, "group commit failed; retrying its writes one by one");
                }
            }
        }
        for (write, reply) in batch {
            let result = self.run_alone(&write).await;
            if result.is_ok() {
                self.group.transactions.fetch_add(1, Ordering::Relaxed);
            }
            self.group.writes.fetch_add(1, Ordering::Relaxed);
            let _ = reply.send(result);
        }
    }

    async fn run_together(&self, batch: &[(PublishWrite, Reply)]) -> Result<Vec<bool>, DbErr> {
        let txn = self.db.begin().await?;
        let mut results = Vec::with_capacity(batch.len());
        for (write, _) in batch {
            // An error drops `txn`, which rolls the batch back.
            results.push(apply(&txn, write).await?);
        }
        let links = batch.iter().any(|(write, _)| write.links_scheduled_post());
        self.commit_publish_writes(txn, links).await?;
        Ok(results)
    }

    async fn run_alone(&self, write: &PublishWrite) -> Result<bool, DbErr> {
        if write.is_one_statement() {
            // Its own transaction already: BEGIN and COMMIT would only add round trips.
            return apply(&self.db, write).await;
        }
        let txn = self.db.begin().await?;
        let result = apply(&txn, write).await?;
        self.commit_publish_writes(txn, write.links_scheduled_post())
            .await?;
        Ok(result)
    }

    /// Commits publish-path writes; when they (may have) linked a scheduled post to its
    /// attempt, one notification in the transaction and the listings dropped here after it
    /// (also when the commit failed: its outcome may be unknown).
    async fn commit_publish_writes(
        &self,
        txn: sea_orm::DatabaseTransaction,
        links: bool,
    ) -> Result<(), DbErr> {
        if !links {
            return txn.commit().await;
        }
        self.notify(&txn, &[Invalidation::Scheduled]).await?;
        let committed = txn.commit().await;
        self.access.evict(Invalidation::Scheduled);
        committed
    }

    /// Renews an attempt's claim and links `submission_id` to it, outside the group commit (a
    /// continuation's recorder whose row already exists). False when the claim is lost.
    pub async fn renew_attempt_claim(
        &self,
        claim: &AttemptClaim,
        submission_id: Uuid,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let renewed = renew_attempt(&self.db, claim, submission_id, lease_until).await;
        // It (re)links the attempt's history row, which the listing shows.
        if !matches!(renewed, Ok(false)) {
            self.scheduled_changed().await;
        }
        renewed
    }
}

/// The attempt's claim is still held (see [`AttemptClaim`]).
fn attempt_held(claim: &AttemptClaim) -> sea_orm::Condition {
    sea_orm::Condition::all()
        .add(scheduled_post::Column::Id.eq(claim.scheduled_post_id))
        .add(scheduled_post::Column::Status.eq(ScheduledStatus::Publishing))
        .add(scheduled_post::Column::ClaimedBy.eq(claim.claimant.as_str()))
        .add(scheduled_post::Column::Attempts.eq(claim.attempt))
}

async fn renew_attempt<C: ConnectionTrait>(
    db: &C,
    claim: &AttemptClaim,
    submission_id: Uuid,
    lease_until: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let result = scheduled_post::Entity::update_many()
        .col_expr(scheduled_post::Column::LeaseUntil, Expr::value(lease_until))
        .col_expr(
            scheduled_post::Column::SubmissionId,
            Expr::value(submission_id),
        )
        .filter(attempt_held(claim))
        .exec(db)
        .await?;
    Ok(result.rows_affected == 1)
}

fn row_model(row: &SubmissionRow) -> post_submission::ActiveModel {
    let new = row.new.clone();
    post_submission::ActiveModel {
        id: Set(row.id),
        user_id: Set(new.user_id),
        account_id: Set(new.account_id),
        platform: Set(new.platform),
        post_type: Set(new.post_type),
        post_id: Set(new.post_id),
        status: Set(new.status),
        page_name: Set(new.page_name),
        content: Set(new.content),
        result: Set(new.result),
        steps: Set(Some(row.steps.clone())),
        error_code: Set(new.error_code),
        error_message: Set(new.error_message),
        scheduled_post_id: Set(row.scheduled_post_id),
        created_at: Set(row.created_at),
        published_at: Set(new.published_at),
        updated_at: Set(row.updated_at),
        reconcile: Set(None),
        next_check_at: Set(None),
        check_until: Set(None),
        check_claimed_by: Set(None),
        check_lease_until: Set(None),
    }
}

async fn apply<C: ConnectionTrait>(db: &C, write: &PublishWrite) -> Result<bool, DbErr> {
    match write {
        PublishWrite::BeforeFinal { row, claim } => {
            if let Some((claim, lease_until)) = claim
                && !renew_attempt(db, claim, row.id, *lease_until).await?
            {
                return Ok(false);
            }
            row_model(row).insert(db).await?;
            Ok(true)
        }
        PublishWrite::Ended { row, claim } => {
            if let Some(claim) = claim {
                // Best effort: a claim lost meanwhile leaves the post to its new holder, but the
                // history still tells what this attempt did.
                scheduled_post::Entity::update_many()
                    .col_expr(scheduled_post::Column::SubmissionId, Expr::value(row.id))
                    .filter(attempt_held(claim))
                    .exec(db)
                    .await?;
            }
            row_model(row).insert(db).await?;
            Ok(true)
        }
        PublishWrite::Published {
            id,
            post_id,
            result,
            steps,
            now,
        } => {
            let mut update = post_submission::Entity::update_many();
            if let Some(steps) = steps {
                update =
                    update.col_expr(post_submission::Column::Steps, Expr::value(steps.clone()));
            }
            let result = update
                .col_expr(
                    post_submission::Column::Status,
                    Expr::value(SubmissionStatus::Published.as_str()),
                )
                .col_expr(
                    post_submission::Column::PostId,
                    Expr::value(post_id.as_str()),
                )
                .col_expr(post_submission::Column::Result, Expr::value(result.clone()))
                .col_expr(post_submission::Column::PublishedAt, Expr::value(*now))
                .col_expr(post_submission::Column::UpdatedAt, Expr::value(*now))
                .filter(post_submission::Column::Id.eq(*id))
                .exec(db)
                .await?;
            Ok(result.rows_affected == 1)
        }
        PublishWrite::Failed {
            id,
            status,
            error_code,
            message,
            steps,
            now,
            unlink,
        } => {
            if let Some(claim) = unlink {
                scheduled_post::Entity::update_many()
                    .col_expr(
                        scheduled_post::Column::SubmissionId,
                        Expr::value(None::<Uuid>),
                    )
                    .filter(attempt_held(claim))
                    .filter(scheduled_post::Column::SubmissionId.eq(*id))
                    .exec(db)
                    .await?;
            }
            let mut update = post_submission::Entity::update_many();
            if let Some(steps) = steps {
                update =
                    update.col_expr(post_submission::Column::Steps, Expr::value(steps.clone()));
            }
            let result = update
                .col_expr(
                    post_submission::Column::Status,
                    Expr::value(status.as_str()),
                )
                .col_expr(
                    post_submission::Column::ErrorCode,
                    Expr::value(error_code.as_str()),
                )
                .col_expr(
                    post_submission::Column::ErrorMessage,
                    Expr::value(message.as_str()),
                )
                .col_expr(post_submission::Column::UpdatedAt, Expr::value(*now))
                .filter(post_submission::Column::Id.eq(*id))
                // Never overwrite an outcome already recorded (a settlement racing a late finish).
                .filter(post_submission::Column::Status.eq(SubmissionStatus::Publishing))
                .exec(db)
                .await?;
            Ok(result.rows_affected == 1)
        }
    }
}
