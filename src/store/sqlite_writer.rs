//! SQLite's group-commit writer: a connection of our own on the database file, on which the
//! group commit's drainer writes a batch of publish-path writes synchronously, on the thread the
//! drainer runs on.
//!
//! Why not the pool: sqlx runs each SQLite connection on a thread of its own, so every batch
//! would be a hand-over to that thread and back. On a busy two-core machine that thread waited
//! for a core, and a batch took some 0.7 ms of wall time for 0.2 ms of work, twice per publish.
//! Written here, a batch costs only its work.
//!
//! What keeps this from stalling the thread it runs on (an actor's thread: an arbiter, or the
//! HTTP worker hosting the actor):
//! - it never waits for SQLite's write lock: `busy_timeout` is 0, and a batch that finds
//!   another writer holding the lock is handed back ([`Applied::Busy`]) to be written through
//!   the pool, which waits for it off this thread;
//! - it never checkpoints (`wal_autocheckpoint = 0`): the pool's connections do, and the group
//!   commit asks one to now and then ([`SqliteWriter::checkpoint_due`]), so the copying of the
//!   WAL back into the database, and its syncs, happen elsewhere.
//!
//! - it never syncs to disk (`synchronous = NORMAL`): with `database.sqlite_synchronous = "full"`
//!   (the default) a committed batch's writers are answered only once another thread has
//!   synced the WAL ([`WalSyncer`], `wal_sync.rs`), while this one goes on with the next batch.
//!
//! The values bound are exactly those sqlx binds for the same columns (ids as 16-byte blobs,
//! times as RFC 3339 text, JSON documents as text); the test
//! `the_one_trip_batch_writes_what_single_statements_write` compares them column by column.
//!
//! The module also holds the one setting the pool's own connections get through rusqlite
//! ([`stable_plans`]), since this is where the service speaks to SQLite below sqlx.

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use chrono::{DateTime, Utc};
use entity::post_submission::{PublishSteps, SubmissionStatus};
use rusqlite::{ErrorCode as SqliteCode, config::DbConfig, params};
use sea_orm::{ActiveEnum, DbBackend, DbErr};
use uuid::Uuid;

use super::{
    DbStats,
    publish_write::{PublishedOutcome, SubmissionRow},
    wal_sync::WalSyncer,
};

/// Batches between two checkpoints the group commit asks the pool for.
const CHECKPOINT_EVERY: u64 = 256;

const INSERT_ROW: &str = "INSERT INTO post_submissions (id, user_id, account_id, platform, \
     post_type, post_id, status, page_name, content, result, steps, error_code, error_message, \
     scheduled_post_id, created_at, published_at, updated_at, publisher) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)";

/// `publishing → published`; the rows it changed tell whether the row exists. Not
/// `RETURNING id`: SQLite collects returned rows in a temporary b-tree, built and freed for
/// every statement.
const MARK_PUBLISHED: &str = "UPDATE post_submissions SET status = ?2, post_id = ?3, \
     result = ?4, published_at = ?5, updated_at = ?5, steps = coalesce(?6, steps) \
     WHERE id = ?1";

const BEGIN: &str = "BEGIN IMMEDIATE";
const COMMIT: &str = "COMMIT";

/// What became of a batch.
pub(crate) enum Applied {
    /// Committed; the ids of the outcomes' rows that were found.
    Committed(HashSet<Uuid>),
    /// Another connection held the write lock: nothing was written.
    Busy,
}

#[derive(Debug)]
pub(crate) struct SqliteWriter {
    conn: Mutex<rusqlite::Connection>,
    batches: AtomicU64,
    /// Batches handed back because another connection held the write lock.
    busy: AtomicU64,
    /// The store's statement counters (each execution here counts as one).
    stats: Arc<DbStats>,
    /// With `database.sqlite_synchronous = "full"`: what a batch waits for before its writers
    /// are answered.
    syncer: Option<Arc<WalSyncer>>,
}

impl SqliteWriter {
    /// Opens the database file (which the pool has created) with the pool's settings, except
    /// the three above: no waiting for the lock, no checkpoints, no syncs.
    pub fn open(
        path: &str,
        cache_kib: u32,
        synchronous: crate::config::SqliteSync,
        stats: Arc<DbStats>,
    ) -> Result<Self, DbErr> {
        let conn = rusqlite::Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(db_err)?;
        conn.busy_timeout(Duration::ZERO).map_err(db_err)?;
        // `journal_mode` answers with the mode; the others answer nothing.
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .map_err(db_err)?;
        // Never a sync on this thread: with `full`, the batch's writers wait for [`WalSyncer`].
        conn.execute_batch(&format!(
            "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
             PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = -{}",
            cache_kib.max(1)
        ))
        .map_err(db_err)?;
        let syncer = match synchronous {
            crate::config::SqliteSync::Full => Some(Arc::new(WalSyncer::start(path)?)),
            crate::config::SqliteSync::Normal => None,
        };
        Ok(Self {
            conn: Mutex::new(conn),
            syncer,
            batches: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            stats,
        })
    }

    /// Writes `rows` and `outcomes` in one transaction. On an error nothing is written (the
    /// transaction is rolled back before returning).
    pub fn apply(
        &self,
        rows: &[&SubmissionRow],
        outcomes: &[PublishedOutcome<'_>],
    ) -> Result<Applied, DbErr> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        // A batch cut off by a panic (the lock is then poisoned) left its transaction open and
        // the write lock held: end it before anything else.
        if !conn.is_autocommit() {
            conn.execute_batch("ROLLBACK").map_err(db_err)?;
        }
        // `BEGIN` and `COMMIT` as cached statements: rusqlite's `Transaction` parses both anew
        // for every batch.
        match conn
            .prepare_cached(BEGIN)
            .and_then(|mut begin| begin.execute([]))
        {
            Ok(_) => {}
            Err(error) if is_busy(&error) => {
                self.busy.fetch_add(1, Ordering::Relaxed);
                return Ok(Applied::Busy);
            }
            Err(error) => return Err(db_err(error)),
        }
        match write_batch(&conn, rows, outcomes) {
            Ok(found) => {
                self.stats
                    .count_writes((rows.len() + outcomes.len()) as u64);
                self.batches.fetch_add(1, Ordering::Relaxed);
                Ok(Applied::Committed(found))
            }
            Err(error) => {
                // A failed `COMMIT` may have ended the transaction already.
                if !conn.is_autocommit()
                    && let Err(rollback) = conn.execute_batch("ROLLBACK")
                {
                    tracing::error!(error = %rollback, "sqlite writer: cannot roll back a failed batch");
                }
                Err(error)
            }
        }
    }

    /// Batches handed back so far because another connection was writing.
    pub fn busy_batches(&self) -> u64 {
        self.busy.load(Ordering::Relaxed)
    }

    /// What a committed batch waits for before its writers are answered, if anything.
    pub fn syncer(&self) -> Option<&Arc<WalSyncer>> {
        self.syncer.as_ref()
    }

    /// This connection's `PRAGMA synchronous` (0 off, 1 normal, 2 full).
    #[cfg(test)]
    pub fn synchronous(&self) -> i64 {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        conn.query_row("PRAGMA synchronous", [], |row| row.get(0))
            .unwrap_or(-1)
    }

    /// Whether this batch is one after which the pool should checkpoint the WAL (this
    /// connection never does: see the module's comment).
    pub fn checkpoint_due(&self) -> bool {
        self.batches
            .load(Ordering::Relaxed)
            .is_multiple_of(CHECKPOINT_EVERY)
    }
}

/// The batch's statements and its `COMMIT`, inside the transaction [`SqliteWriter::apply`]
/// began; the ids of the outcomes' rows that were found.
fn write_batch(
    conn: &rusqlite::Connection,
    rows: &[&SubmissionRow],
    outcomes: &[PublishedOutcome<'_>],
) -> Result<HashSet<Uuid>, DbErr> {
    let mut found = HashSet::with_capacity(outcomes.len());
    let mut insert = conn.prepare_cached(INSERT_ROW).map_err(db_err)?;
    for row in rows {
        let new = &row.new;
        insert
            .execute(params![
                row.id.as_bytes().as_slice(),
                new.user_id.as_bytes().as_slice(),
                new.account_id.as_bytes().as_slice(),
                new.platform.to_value(),
                new.post_type.as_ref().map(ActiveEnum::to_value),
                new.post_id.as_deref(),
                new.status.to_value(),
                new.page_name,
                new.content.to_string(),
                new.result.as_ref().map(|r| r.to_string()),
                steps_text(&row.steps)?,
                new.error_code.as_deref(),
                new.error_message.as_deref(),
                row.scheduled_post_id
                    .as_ref()
                    .map(|id| id.as_bytes().as_slice()),
                time(row.created_at),
                new.published_at.map(time),
                time(row.updated_at),
                row.publisher.as_deref(),
            ])
            .map_err(db_err)?;
    }
    let mut mark = conn.prepare_cached(MARK_PUBLISHED).map_err(db_err)?;
    for outcome in outcomes {
        let steps = outcome.steps.map(steps_text).transpose()?;
        let changed = mark
            .execute(params![
                outcome.id.as_bytes().as_slice(),
                SubmissionStatus::Published.to_value(),
                outcome.post_id,
                outcome.result.to_string(),
                time(outcome.now),
                steps,
            ])
            .map_err(db_err)?;
        if changed > 0 {
            found.insert(outcome.id);
        }
    }
    // The webhook events of the outcomes, in the same transaction (see `outbox.rs`).
    let mut event = conn
        .prepare_cached(&super::outbox::post_events_sql(DbBackend::Sqlite, 1))
        .map_err(db_err)?;
    let ended = rows
        .iter()
        .filter(|row| row.new.status != SubmissionStatus::Publishing)
        .map(|row| row.id);
    for id in ended.chain(found.iter().copied()) {
        event
            .execute(params![id.as_bytes().as_slice()])
            .map_err(db_err)?;
    }
    conn.prepare_cached(COMMIT)
        .and_then(|mut commit| commit.execute([]))
        .map_err(db_err)?;
    Ok(found)
}

/// Turns on SQLite's query planner stability guarantee on one of the pool's connections.
///
/// Without it, SQLite (since 3.47) reads a bound `LIMIT ?` while planning and marks the
/// statement to be planned again whenever that parameter is bound anew, which every run does.
/// SeaORM's `.one()` binds `LIMIT 1`, so each such read (an account, a user, a key on a cache
/// miss, most dashboard reads) would parse and plan its SQL again instead of running sqlx's
/// cached statement: about 200,000 instructions a read (measured with callgrind).
/// The guarantee gives up plans chosen from bound values, which need `ANALYZE` statistics this
/// service never gathers, or a `LIKE ?` on an index, which it never runs.
pub(super) async fn stable_plans(
    conn: &mut sea_orm::sqlx::SqliteConnection,
) -> Result<(), sea_orm::sqlx::Error> {
    on_handle(conn, |db| {
        db.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
    })
    .await
    .map(drop)
}

/// Runs `f` on a pooled sqlx connection's own SQLite handle, seen as a rusqlite connection
/// (for the settings sqlx has no call for).
async fn on_handle<T>(
    conn: &mut sea_orm::sqlx::SqliteConnection,
    f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>,
) -> Result<T, sea_orm::sqlx::Error> {
    let mut locked = conn.lock_handle().await?;
    let raw = locked.as_raw_handle().as_ptr();
    // SAFETY: `raw` is this connection's open handle, and no other thread uses it while
    // `locked` holds the connection's lock. A rusqlite connection made from a handle does not
    // close it, and it is dropped before the lock is released.
    let borrowed = unsafe { rusqlite::Connection::from_handle(raw) }
        .map_err(|e| sea_orm::sqlx::Error::Configuration(e.into()))?;
    f(&borrowed).map_err(|e| sea_orm::sqlx::Error::Configuration(e.into()))
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(SqliteCode::DatabaseBusy | SqliteCode::DatabaseLocked)
    )
}

fn db_err(error: rusqlite::Error) -> DbErr {
    DbErr::Custom(format!("sqlite writer: {error}"))
}

/// A time as sqlx writes a `DateTime<Utc>` to SQLite.
fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false)
}

/// The steps' text as SeaORM writes it. SeaORM goes through a `serde_json::Value`, whose
/// objects sort their keys; the steps' types declare their fields in that order, so serializing
/// them directly gives the same text without building and dropping the tree (a fifth of this
/// writer's work per publish). An error fails the batch (which is then retried write by write
/// through SeaORM), never an empty text stored.
fn steps_text(steps: &PublishSteps) -> Result<String, DbErr> {
    serde_json::to_string(steps).map_err(|e| DbErr::Json(e.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use sea_orm::ConnectionTrait;

    use super::*;

    /// A batch cut off mid-transaction (a panic) leaves the transaction open and the database's
    /// write lock held. The next batch ends it first, then commits, and the pool can write again.
    #[tokio::test]
    async fn a_transaction_left_open_is_ended_by_the_next_batch() {
        let (_dir, store) = crate::store::temp_sqlite_store(1).await;
        let writer = store.writer.clone().unwrap();
        writer
            .conn
            .lock()
            .unwrap()
            .execute_batch("BEGIN IMMEDIATE; DELETE FROM users")
            .unwrap();
        assert!(matches!(
            writer.apply(&[], &[]).unwrap(),
            Applied::Committed(found) if found.is_empty()
        ));
        assert!(writer.conn.lock().unwrap().is_autocommit());
        store
            .db
            .execute_unprepared("CREATE TABLE probe (x)")
            .await
            .unwrap();
    }

    /// Why the pool's connections need the guarantee: without it a statement with `LIMIT ?`
    /// is planned again each time it runs with the limit bound anew; with it, never.
    #[test]
    fn a_bound_limit_replans_only_without_the_stability_guarantee() {
        use rusqlite::StatementStatus;
        let replans = |guarantee: bool| {
            let conn = rusqlite::Connection::open_in_memory().unwrap();
            conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, guarantee)
                .unwrap();
            conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
                .unwrap();
            let mut select = conn
                .prepare("SELECT v FROM t WHERE id = ?1 LIMIT ?2")
                .unwrap();
            for id in 0..3 {
                select.query(params![id, 1]).unwrap().next().unwrap();
            }
            select.get_status(StatementStatus::RePrepare)
        };
        assert!(replans(false) > 0);
        assert_eq!(replans(true), 0);
    }

    /// Every connection the pool opens has the guarantee on (see [`stable_plans`]).
    #[tokio::test]
    async fn pooled_connections_plan_a_bound_limit_once() {
        let (_dir, store) = crate::store::temp_sqlite_store(2).await;
        let pool = store.db.get_sqlite_connection_pool();
        let (mut first, mut second) =
            (pool.acquire().await.unwrap(), pool.acquire().await.unwrap());
        for conn in [&mut first, &mut second] {
            let on = on_handle(conn, |db| {
                db.db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG)
            });
            assert!(on.await.unwrap());
        }
    }
}
