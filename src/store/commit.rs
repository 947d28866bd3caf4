//! Group commit for the publish path: the history row written before the irreversible call
//! (with the scheduled post's fenced claim renewal) and the one written after it. Writes that
//! arrive together run in one transaction, so N concurrent publishes cost one commit (one fsync
//! on SQLite, one round of WAL flush on PostgreSQL) instead of N.
//!
//! No background task lives between batches: the first writer to find the queue idle spawns a
//! drainer, which takes whatever is queued (up to `group_commit_max`) without waiting for more,
//! so a lone write costs no added latency; writes queued while a batch runs form the next batch.
//! On SQLite, every 256th batch starts a WAL checkpoint beside the writes; once it has finished,
//! the drainer waits (up to 250 ms) for a second, short one, so that the WAL can start over (see
//! [`Store::checkpoint`]).

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering},
    },
};

use chrono::{DateTime, Utc};
use entity::{
    post_submission::{self, SubmissionStatus},
    scheduled_post::{self, ScheduledStatus},
};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter, Set, Statement,
    TransactionTrait, sea_query::Expr,
};
use tokio::sync::oneshot;
use uuid::Uuid;

use super::{
    Store,
    publish_write::{AttemptClaim, PublishWrite, PublishedOutcome, SubmissionRow},
    sqlite_writer::{Applied, SqliteWriter},
};
use crate::config::DEFAULT_GROUP_COMMIT_MAX;
use crate::store::access::Invalidation;

/// The longest the drainer waits for a WAL checkpoint (see [`Store::checkpoint`]). One took
/// about a millisecond on one machine and a median 29 ms on a slower virtual disk; the writes queued meanwhile go in the next batch, so the wait costs
/// latency, not throughput.
const CHECKPOINT_WAIT: std::time::Duration = std::time::Duration::from_millis(250);

type Reply = oneshot::Sender<Result<bool, DbErr>>;

/// The queue of writes waiting for a batch and the counters tests and benchmarks read.
#[derive(Debug)]
pub(crate) struct GroupCommit {
    queue: Mutex<Queue>,
    max: AtomicUsize,
    transactions: AtomicU64,
    writes: AtomicU64,
    /// SQLite: where the periodic checkpoint stands ([`Checkpoint`] as a `u8`).
    checkpoint: AtomicU8,
}

/// The two checkpoints of a WAL reset (see [`Store::checkpoint`]).
#[derive(Debug, Clone, Copy)]
#[repr(u8)]
enum Checkpoint {
    /// None running.
    Idle = 0,
    /// The first, run beside the writes, is copying the WAL back.
    Copying = 1,
    /// The first has finished: the drainer runs the second, and waits for it.
    Copied = 2,
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
            checkpoint: AtomicU8::new(Checkpoint::Idle as u8),
        }
    }
}

/// A reading of the group commit's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Transactions committed (a batch, or one write retried alone).
    pub transactions: u64,
    /// Publish-path writes answered.
    pub writes: u64,
    /// SQLite: batches that found another connection writing and went through the pool.
    pub handed_to_pool: u64,
    /// SQLite with `database.sqlite_synchronous = "full"`: syncs of the WAL that the group
    /// commit's own batches waited for (one may cover several batches).
    pub wal_syncs: u64,
}

impl GroupCommit {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Marks the first checkpoint of a WAL reset [`Checkpoint::Copied`] when dropped.
struct CopiedOnDrop(Arc<GroupCommit>);

impl Drop for CopiedOnDrop {
    fn drop(&mut self) {
        self.0
            .checkpoint
            .store(Checkpoint::Copied as u8, Ordering::Release);
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

    /// Transactions, writes and hand-overs of the group commit so far.
    pub fn group_commit_stats(&self) -> GroupCommitStats {
        GroupCommitStats {
            transactions: self.group.transactions.load(Ordering::Relaxed),
            writes: self.group.writes.load(Ordering::Relaxed),
            handed_to_pool: self.writer.as_ref().map_or(0, |w| w.busy_batches()),
            wal_syncs: self
                .writer
                .as_ref()
                .and_then(|w| w.syncer())
                .map_or(0, |syncer| syncer.syncs()),
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

    /// The next batch, or `None` (and the queue marked idle) when nothing is waiting.
    fn take_batch(&self) -> Option<Vec<(PublishWrite, Reply)>> {
        let mut queue = self.group.lock();
        if queue.waiting.is_empty() {
            queue.draining = false;
            return None;
        }
        let take = queue
            .waiting
            .len()
            .min(self.group.max.load(Ordering::Relaxed));
        Some(queue.waiting.drain(..take).collect())
    }

    /// Takes what is queued, batch after batch, until the queue is empty.
    async fn drain(&self) {
        let mut guard = DrainGuard {
            group: self.group.clone(),
            armed: true,
        };
        loop {
            let Some(batch) = self.take_batch() else {
                guard.armed = false;
                return;
            };
            match self.run_batch_here(batch) {
                Some((batch, failed)) => self.run_batch_elsewhere(batch, failed).await,
                None if self.writer.as_ref().is_some_and(|w| w.checkpoint_due()) => {
                    self.start_copying_checkpoint();
                }
                None => {}
            }
            if self
                .group
                .checkpoint
                .compare_exchange(
                    Checkpoint::Copied as u8,
                    Checkpoint::Idle as u8,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                self.checkpoint().await;
            }
        }
    }

    /// On SQLite, the whole batch in one transaction on the group commit's own connection, on
    /// this thread (see [`apply_on_own_connection`]). Gives the batch back when it must go through
    /// the pool instead, with whether that was because it failed.
    fn run_batch_here(
        &self,
        batch: Vec<(PublishWrite, Reply)>,
    ) -> Option<(Vec<(PublishWrite, Reply)>, bool)> {
        let Some(writer) = &self.writer else {
            return Some((batch, false));
        };
        let writes: Vec<&PublishWrite> = batch.iter().map(|(write, _)| write).collect();
        match apply_on_own_connection(writer, &writes) {
            Some(Ok(results)) => {
                let ends = writes.iter().any(|write| write.may_end());
                match writer.syncer() {
                    // Answered once the WAL is on disk, while this drainer writes the next batch.
                    Some(syncer) => {
                        let (store, syncer) = (self.clone(), syncer.clone());
                        tokio::spawn(async move {
                            match syncer.synced().await {
                                Ok(()) => store.answer_committed(batch, results, ends),
                                Err(error) => answer_failed(batch, &error),
                            }
                        });
                    }
                    None => self.answer_committed(batch, results, ends),
                }
                None
            }
            Some(Err(error)) => {
                // A lone write's error is its caller's, from the retry.
                if batch.len() > 1 {
                    tracing::warn!(%error, writes = batch.len(), "group commit failed; retrying its writes one by one");
                }
                Some((batch, true))
            }
            None => Some((batch, false)),
        }
    }

    /// Through the pool: one transaction for the whole batch, statement by statement; each write
    /// alone if it fails (or `failed` already), so that one bad write (a duplicate id, a
    /// constraint) fails only its own caller.
    async fn run_batch_elsewhere(&self, batch: Vec<(PublishWrite, Reply)>, failed: bool) {
        if !failed && batch.len() > 1 {
            return self.run_batch_together(batch).await;
        }
        self.run_one_by_one(batch).await;
    }

    /// Starts the first of a WAL reset's two checkpoints, unless one is running: a pool
    /// connection copies the WAL back while the writes go on. It bears the reset's slow part
    /// (syncing the WAL, whose appends were never synced, and copying most of it), so the
    /// second, which the drainer waits for, has only the frames written meanwhile to sync and
    /// copy. Waiting for the whole of it would cost the drainer some 6 ms of `fsync` every 256
    /// batches on a busy 2-core machine, a tenth of the time with no publish moving.
    fn start_copying_checkpoint(&self) {
        if self
            .group
            .checkpoint
            .compare_exchange(
                Checkpoint::Idle as u8,
                Checkpoint::Copying as u8,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return;
        }
        let run = self.passive_checkpoint();
        // Marks the checkpoint copied when it ends, and also if its task is dropped (its
        // runtime shutting down), so that a later drainer does not wait for it forever.
        let copied = CopiedOnDrop(self.group.clone());
        tokio::spawn(async move {
            if let Ok(Err(error)) = run.await {
                tracing::warn!(%error, "WAL checkpoint failed");
            }
            drop(copied);
        });
    }

    /// Has a pool connection checkpoint the WAL, while this drainer waits (at most
    /// [`CHECKPOINT_WAIT`]): the group commit's own connection never does (a checkpoint syncs
    /// to disk, and it writes on an actor's thread). Passive: it copies what no reader still
    /// needs and waits for nobody.
    ///
    /// Why the drainer waits: SQLite starts the WAL over from its beginning only when a write
    /// transaction begins after a checkpoint has copied every frame back. A checkpoint running
    /// beside the writer never catches up with it, so under a steady stream of publishes the
    /// WAL would grow without bound (48 MB a second in the bench, 380 MB after 8 s), and every
    /// frame would be appended to a growing file instead of overwriting one already there.
    /// Writes queued meanwhile form the next, larger batch. Why only so long: a pool with no
    /// connection free would otherwise hold every publish's write until one frees; past the
    /// bound the checkpoint finishes on its own, without the drainer.
    async fn checkpoint(&self) {
        match tokio::time::timeout(CHECKPOINT_WAIT, self.passive_checkpoint()).await {
            Ok(Ok(Ok(_))) => {}
            Ok(Ok(Err(error))) => tracing::warn!(%error, "WAL checkpoint failed"),
            Ok(Err(error)) => tracing::warn!(%error, "WAL checkpoint stopped"),
            Err(_) => tracing::debug!("WAL checkpoint still running; the group commit goes on"),
        }
    }

    /// A passive checkpoint on a pool connection, in a task of its own (it runs to its end even
    /// if nobody waits for it).
    fn passive_checkpoint(&self) -> tokio::task::JoinHandle<Result<sea_orm::ExecResult, DbErr>> {
        let db = self.db.clone();
        tokio::spawn(async move {
            db.execute_unprepared("PRAGMA wal_checkpoint(PASSIVE)")
                .await
        })
    }

    /// A batch in one transaction, statement by statement; if it fails, write by write.
    async fn run_batch_together(&self, batch: Vec<(PublishWrite, Reply)>) {
        let count = batch.len() as u64;
        match self.run_together(&batch).await {
            Ok(results) => self.answer_committed(batch, results, false),
            Err(error) => {
                tracing::warn!(%error, writes = count, "group commit failed; retrying its writes one by one");
                self.run_one_by_one(batch).await;
            }
        }
    }

    /// Answers the callers of a batch committed in one transaction.
    /// With `ends`, the batch may have written webhook events: the delivery actor is woken.
    fn answer_committed(&self, batch: Vec<(PublishWrite, Reply)>, results: Vec<bool>, ends: bool) {
        if ends {
            self.outbox_may_have_events();
        }
        self.group.transactions.fetch_add(1, Ordering::Relaxed);
        self.group
            .writes
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        for ((_, reply), result) in batch.into_iter().zip(results) {
            let _ = reply.send(Ok(result));
        }
    }

    /// Each write in its own transaction, each caller answered with its own result.
    async fn run_one_by_one(&self, batch: Vec<(PublishWrite, Reply)>) {
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
        let writes: Vec<&PublishWrite> = batch.iter().map(|(write, _)| write).collect();
        // An error drops `txn`, which rolls the batch back.
        let results = apply_batch(&txn, &writes).await?;
        let outcomes: Vec<Uuid> = writes
            .iter()
            .zip(&results)
            .filter(|(write, written)| **written && write.may_end())
            .map(|(write, _)| write.submission_id())
            .collect();
        super::outbox::post_events(&txn, &outcomes).await?;
        let links = batch.iter().any(|(write, _)| write.links_scheduled_post());
        self.commit_publish_writes(txn, links).await?;
        if !outcomes.is_empty() {
            self.outbox_may_have_events();
        }
        Ok(results)
    }

    async fn run_alone(&self, write: &PublishWrite) -> Result<bool, DbErr> {
        if let Some(statement) = one_statement_with_event(self.backend(), write) {
            let found = returned_ids(self.db.query_all_raw(statement).await?)?;
            self.outbox_may_have_events();
            return Ok(found.contains(&write.submission_id()));
        }
        if write.may_end() {
            let txn = self.db.begin().await?;
            let result = apply(&txn, write).await?;
            if result {
                super::outbox::post_events(&txn, &[write.submission_id()]).await?;
            }
            self.commit_publish_writes(txn, write.links_scheduled_post())
                .await?;
            self.outbox_may_have_events();
            return Ok(result);
        }
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
        publisher: Set(row.publisher.clone()),
    }
}

/// A batch's writes in as few statements as they allow, since on the publish path the
/// statements of a batch are the serial part (one writer at a time, one round trip to the
/// database each): the new rows without a scheduled post in multi-row `INSERT`s, the
/// `published` outcomes in `UPDATE … RETURNING id`s, the rest (`others`) one by one. Their
/// order does not matter, because each touches a row of its own (a job waits for one write's
/// answer before it sends its next); `None` when a row appears twice (run one by one, in order).
struct BatchPlan {
    statements: Vec<Statement>,
    /// What each of `statements` answers, in the same order.
    planned: Vec<Planned>,
    /// Writes with conditions of their own (a claim to renew, a status to check): [`apply`].
    others: Vec<usize>,
}

/// What a planned statement answers.
enum Planned {
    /// Inserts these writes' rows: all of them, or an error.
    Rows(Vec<usize>),
    /// Marks these writes' rows published, returning the ids it found.
    Published(Vec<(usize, Uuid)>),
}

impl BatchPlan {
    fn new(backend: DbBackend, writes: &[&PublishWrite]) -> Option<Self> {
        if !rows_are_distinct(writes) {
            return None;
        }
        let rows: Vec<(usize, &SubmissionRow)> = writes
            .iter()
            .enumerate()
            .filter_map(|(i, w)| w.plain_row().map(|row| (i, row)))
            .collect();
        let published: Vec<(usize, PublishedOutcome<'_>)> = writes
            .iter()
            .enumerate()
            .filter_map(|(i, w)| PublishedOutcome::of(w).map(|o| (i, o)))
            .collect();
        let (mut statements, mut planned) = (Vec::new(), Vec::new());
        for chunk in power_of_two_chunks(&rows) {
            let insert =
                post_submission::Entity::insert_many(chunk.iter().map(|(_, row)| row_model(row)));
            statements.push(sea_orm::QueryTrait::build(&insert, backend));
            planned.push(Planned::Rows(chunk.iter().map(|(i, _)| *i).collect()));
        }
        // Outcomes with their final steps and outcomes without apart: one statement sets every
        // row's steps or none (a `CASE` that kept some rows' column would mix the column's
        // type with the parameters', which PostgreSQL refuses for `json`).
        let (with_steps, without_steps): (Vec<_>, Vec<_>) =
            published.into_iter().partition(|(_, o)| o.steps.is_some());
        for group in [with_steps, without_steps] {
            for chunk in power_of_two_chunks(&group) {
                let outcomes: Vec<&PublishedOutcome<'_>> = chunk.iter().map(|(_, o)| o).collect();
                statements.push(backend.build(&mark_published(&outcomes)));
                planned.push(Planned::Published(
                    chunk.iter().map(|(i, o)| (*i, o.id)).collect(),
                ));
            }
        }
        let others = (0..writes.len())
            .filter(|i| {
                writes[*i].plain_row().is_none() && PublishedOutcome::of(writes[*i]).is_none()
            })
            .collect();
        Some(Self {
            statements,
            planned,
            others,
        })
    }

    /// Each planned write's answer once its statements ran: a new row was written (its
    /// statement did not fail), an outcome was written when its row's id came back in `found`.
    /// The `others` stay `false` here: [`apply`] answers them.
    fn answers(&self, writes: usize, found: &std::collections::HashSet<Uuid>) -> Vec<bool> {
        let mut results = vec![false; writes];
        for planned in &self.planned {
            match planned {
                Planned::Rows(indices) => indices.iter().for_each(|i| results[*i] = true),
                Planned::Published(rows) => rows
                    .iter()
                    .for_each(|(i, id)| results[*i] = found.contains(id)),
            }
        }
        results
    }
}

/// Runs `writes` on `db` (inside the caller's transaction), one statement at a time.
async fn apply_batch<C: ConnectionTrait>(
    db: &C,
    writes: &[&PublishWrite],
) -> Result<Vec<bool>, DbErr> {
    let Some(mut plan) = BatchPlan::new(db.get_database_backend(), writes) else {
        let mut results = Vec::with_capacity(writes.len());
        for write in writes {
            results.push(apply(db, write).await?);
        }
        return Ok(results);
    };
    let mut found = std::collections::HashSet::new();
    for (statement, planned) in plan.statements.drain(..).zip(&plan.planned) {
        match planned {
            Planned::Rows(_) => {
                db.execute_raw(statement).await?;
            }
            Planned::Published(_) => {
                found.extend(returned_ids(db.query_all_raw(statement).await?)?);
            }
        }
    }
    let mut results = plan.answers(writes.len(), &found);
    for i in plan.others {
        results[i] = apply(db, writes[i]).await?;
    }
    Ok(results)
}

/// SQLite: the whole batch on the group commit's own connection, written on this thread (see
/// `sqlite_writer.rs`). `None` when the batch has writes with conditions of their own (they
/// need each answer before the next statement), names a row twice (run one by one, in order),
/// or found another connection writing (then it is written through the pool, which waits).
fn apply_on_own_connection(
    writer: &SqliteWriter,
    writes: &[&PublishWrite],
) -> Option<Result<Vec<bool>, DbErr>> {
    if !rows_are_distinct(writes) {
        return None;
    }
    let mut rows = Vec::new();
    let mut outcomes = Vec::new();
    for write in writes {
        if let Some(row) = write.plain_row() {
            rows.push(row);
        } else if let Some(outcome) = PublishedOutcome::of(write) {
            outcomes.push(outcome);
        } else {
            return None;
        }
    }
    match writer.apply(&rows, &outcomes) {
        // A new row was written (the transaction committed); an outcome was written when its
        // row was found.
        Ok(Applied::Committed(found)) => Some(Ok(writes
            .iter()
            .map(|write| match write {
                PublishWrite::Published { id, .. } => found.contains(id),
                _ => true,
            })
            .collect())),
        Ok(Applied::Busy) => None,
        Err(error) => Some(Err(error)),
    }
}

/// Answers every writer of a committed batch whose sync failed: committed, but not known to be
/// on disk, so each caller treats its write as failed and makes no platform call on its strength.
fn answer_failed(batch: Vec<(PublishWrite, Reply)>, error: &DbErr) {
    for (_, reply) in batch {
        let _ = reply.send(Err(DbErr::Custom(error.to_string())));
    }
}

/// No two writes name the same row (a batch that does runs one by one, in order).
fn rows_are_distinct(writes: &[&PublishWrite]) -> bool {
    let mut seen = std::collections::HashSet::with_capacity(writes.len());
    writes.iter().all(|w| seen.insert(w.submission_id()))
}

fn returned_ids(rows: Vec<sea_orm::QueryResult>) -> Result<std::collections::HashSet<Uuid>, DbErr> {
    rows.iter()
        .map(|row| row.try_get::<Uuid>("", "id"))
        .collect()
}

/// `items` in chunks whose lengths are powers of two, largest first (13 → 8, 4, 1): a
/// multi-row statement's text depends on its row count, and with a handful of counts the
/// database connection's prepared-statement cache keeps every one of them, instead of
/// preparing a new text for each batch size.
fn power_of_two_chunks<T>(mut items: &[T]) -> impl Iterator<Item = &[T]> {
    std::iter::from_fn(move || {
        if items.is_empty() {
            return None;
        }
        let size = 1 << items.len().ilog2();
        let (chunk, rest) = items.split_at(size);
        items = rest;
        Some(chunk)
    })
}

/// `publishing → published` for several rows in one statement (each column a `CASE` on the
/// id), returning the ids it updated. The outcomes all carry steps, or none does.
fn mark_published(outcomes: &[&PublishedOutcome<'_>]) -> sea_orm::sea_query::UpdateStatement {
    use post_submission::Column;
    use sea_orm::sea_query::{CaseStatement, Query};
    let by_id = |value: &dyn Fn(&PublishedOutcome<'_>) -> Expr| -> Expr {
        let mut case = CaseStatement::new();
        for outcome in outcomes {
            case = case.case(Column::Id.eq(outcome.id), value(outcome));
        }
        case.into()
    };
    let mut update = Query::update();
    update
        .table(post_submission::Entity)
        .value(
            Column::Status,
            Expr::value(SubmissionStatus::Published.as_str()),
        )
        .value(
            Column::PostId,
            by_id(&|o| Expr::value(o.post_id.to_string())),
        )
        .value(Column::Result, by_id(&|o| Expr::value(o.result.clone())))
        .value(Column::PublishedAt, by_id(&|o| Expr::value(o.now)))
        .value(Column::UpdatedAt, by_id(&|o| Expr::value(o.now)));
    if outcomes.iter().all(|o| o.steps.is_some()) {
        update.value(
            Column::Steps,
            by_id(&|o| Expr::value(o.steps.cloned().unwrap_or_default())),
        );
    }
    update
        .and_where(Column::Id.is_in(outcomes.iter().map(|o| o.id)))
        .returning_col(Column::Id);
    update
}

/// `publishing → failed | unconfirmed` of a `Failed` write (`None` for any other write). Never
/// overwrites an outcome already recorded (a settlement racing a late finish).
fn mark_failed(write: &PublishWrite) -> Option<sea_orm::UpdateMany<post_submission::Entity>> {
    let PublishWrite::Failed {
        id,
        status,
        error_code,
        message,
        steps,
        now,
        ..
    } = write
    else {
        return None;
    };
    let mut update = post_submission::Entity::update_many();
    if let Some(steps) = steps {
        update = update.col_expr(post_submission::Column::Steps, Expr::value(steps.clone()));
    }
    Some(
        update
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
            .filter(post_submission::Column::Status.eq(SubmissionStatus::Publishing)),
    )
}

/// On PostgreSQL, a lone outcome that touches no scheduled post as one statement with its
/// webhook event (see [`super::outbox::with_post_events`]): one round trip, as without webhooks.
fn one_statement_with_event(backend: DbBackend, write: &PublishWrite) -> Option<Statement> {
    if backend != DbBackend::Postgres || write.links_scheduled_post() {
        return None;
    }
    let update = match write {
        PublishWrite::Published { .. } => {
            let outcomes: Vec<PublishedOutcome<'_>> =
                PublishedOutcome::of(write).into_iter().collect();
            let outcomes: Vec<&PublishedOutcome<'_>> = outcomes.iter().collect();
            backend.build(&mark_published(&outcomes))
        }
        PublishWrite::Failed { .. } => {
            let mut update = sea_orm::QueryTrait::into_query(mark_failed(write)?);
            update.returning_col(post_submission::Column::Id);
            backend.build(&update)
        }
        _ => return None,
    };
    super::outbox::with_post_events(update)
}

async fn apply<C: ConnectionTrait>(db: &C, write: &PublishWrite) -> Result<bool, DbErr> {
    match write {
        PublishWrite::BeforeFinal { row, claim } => {
            if let Some((claim, lease_until)) = claim
                && !renew_attempt(db, claim, row.id, *lease_until).await?
            {
                return Ok(false);
            }
            post_submission::Entity::insert(row_model(row))
                .exec_without_returning(db)
                .await?;
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
            post_submission::Entity::insert(row_model(row))
                .exec_without_returning(db)
                .await?;
            Ok(true)
        }
        PublishWrite::Published { id, .. } => {
            // The batch's statement, with one row.
            let outcomes: Vec<PublishedOutcome<'_>> =
                PublishedOutcome::of(write).into_iter().collect();
            let outcomes: Vec<&PublishedOutcome<'_>> = outcomes.iter().collect();
            let found = returned_ids(db.query_all(&mark_published(&outcomes)).await?)?;
            Ok(found.contains(id))
        }
        PublishWrite::Failed { id, unlink, .. } => {
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
            let Some(update) = mark_failed(write) else {
                return Ok(false);
            };
            let result = update.exec(db).await?;
            Ok(result.rows_affected == 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::power_of_two_chunks;

    #[test]
    fn batches_split_into_power_of_two_statements() {
        let lengths = |n: usize| {
            let items: Vec<usize> = (0..n).collect();
            power_of_two_chunks(&items)
                .map(<[usize]>::len)
                .collect::<Vec<_>>()
        };
        assert_eq!(lengths(0), Vec::<usize>::new());
        assert_eq!(lengths(1), [1]);
        assert_eq!(lengths(13), [8, 4, 1]);
        assert_eq!(lengths(64), [64]);
        // Every item once, in order.
        let items: Vec<usize> = (0..27).collect();
        let flat: Vec<usize> = power_of_two_chunks(&items).flatten().copied().collect();
        assert_eq!(flat, items);
    }
}
