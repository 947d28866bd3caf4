//! The persistence layer: every query the service runs lives under this module, as methods on
//! [`Store`]. Handlers and actors call these; nothing else builds SQL.

pub mod access;
mod accounts;
mod api_keys;
mod backup;
mod cluster;
mod commit;
mod copy;
mod disabled;
mod form_tokens;
mod idempotency;
pub mod in_runtime;
pub mod last_used;
mod login_states;
mod media;
mod migration_lock;
mod oauth_states;
mod outbox;
mod peers;
mod posts;
mod publish_write;
mod reseal;
mod scheduled;
mod sessions;
mod snapshots;
mod sqlite_writer;
mod submissions;
mod sweep;
mod usage;
mod users;
mod wal_sync;
mod webhook_queue;
mod webhooks;

use crate::config::{DEFAULT_SQLITE_CACHE_KIB, SqliteSync};
use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use migration::{Migrator, MigratorTrait};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbBackend,
    DbErr, Statement, TransactionTrait,
};

use access::{AccessCache, Invalidation};

pub use accounts::{NewAccount, NewTokens};
pub use api_keys::Authenticated;
pub use cluster::{BudgetGrant, LeaseAsk, LeaseGrant, MemberRow, SilentClaims};
pub use commit::GroupCommitStats;
pub use copy::{CopyError, CopySource, TableCount, copied_tables};
pub use form_tokens::FORM_TOKEN_TTL;
pub use idempotency::{KeyClaim, NewIdempotencyKey};
pub use oauth_states::StateOwner;
pub use posts::{PostFilter, PostRecord};
pub use publish_write::{AttemptClaim, PublishWrite, SubmissionRow};
pub use reseal::{ReEncryptError, ResealReport, ResealScope, RowReseal};
pub use scheduled::{AttemptEnd, CancelOutcome, EndedAttempt, NewScheduledPost, ScheduledListing};
pub use snapshots::SnapshotClaim;
pub use submissions::{HistoryListing, NewSubmission, Page};
pub use sweep::{SweepBounds, SweepCounts};
pub use usage::Reservation;
pub use users::UserSearch;
pub use webhook_queue::{AttemptNext, AttemptRecord, Claim, FanOutContext, FannedOut, NewMessage};
pub use webhooks::{Delivery, EndpointChange, NewEndpoint, QueueStats};

/// Which of a user's scheduled posts to list: `None` is "any"; at most `limit` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScheduledFilter {
    pub status: Option<entity::scheduled_post::ScheduledStatus>,
    pub platform: Option<entity::platform::Platform>,
    pub limit: u64,
}

/// A new id for a row of a table that grows with every post (the history, scheduled posts).
/// Time-ordered (UUIDv7), so each insert lands at the right edge of the primary key's index
/// instead of on a random page of it: with random (v4) ids every insert would dirty, and on
/// SQLite write to the WAL, a page of its own, read back first once the index outgrew the page
/// cache. The id still reveals nothing but roughly when the row was made.
pub fn new_row_id() -> uuid::Uuid {
    uuid::Uuid::now_v7()
}

/// Handle to the database; cheap to clone (it wraps a connection pool).
#[derive(Clone, Debug)]
pub struct Store {
    db: DatabaseConnection,
    /// On a SQLite file, the group commit's own connection, which writes a batch on the
    /// drainer's thread (see `sqlite_writer.rs`); `None` on PostgreSQL and in-memory SQLite.
    writer: Option<Arc<sqlite_writer::SqliteWriter>>,
    stats: Arc<DbStats>,
    /// What authentication and ownership checks read without a query, and the rendered
    /// scheduled-post listings (see [`crate::store::access`]). Every write to a row it holds evicts the
    /// entry here, right after its commit, and (on PostgreSQL) notifies the other instances in
    /// the write's transaction (for a lone statement, right after it).
    access: Arc<AccessCache>,
    /// The `pg_notify` channel of this database schema.
    channel: Arc<str>,
    /// The publish path's group commit (see `commit.rs`), shared by every clone.
    group: Arc<commit::GroupCommit>,
    /// On a SQLite file, how other processes' changes to cached rows are announced
    /// ([`access::ChangeMarker`]); PostgreSQL has notifications.
    changes: Option<Arc<access::ChangeMarker>>,
    /// Signalled after a commit that may have written webhook events, so that this instance's
    /// delivery actor fans them out at once instead of at its next look.
    outbox_written: Arc<tokio::sync::Notify>,
    /// Acknowledgements of this instance's invalidations by the others (see `peers.rs`).
    peers: Arc<peers::Peers>,
}

/// Statements sent to the database since the store connected, by kind: what the benchmarks
/// report as round trips per request, and what tests read to hold a hot path to its budget.
/// Counted by SeaORM's per-statement callback (two relaxed increments, no lock).
#[derive(Debug, Default)]
pub struct DbStats {
    reads: AtomicU64,
    writes: AtomicU64,
}

/// A reading of [`DbStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DbCounts {
    /// `SELECT` statements (and other statements that change nothing).
    pub reads: u64,
    /// `INSERT`, `UPDATE`, `DELETE` (each one a write transaction of its own unless it runs
    /// inside an explicit one).
    pub writes: u64,
}

impl DbCounts {
    /// What happened between `earlier` and this reading.
    pub fn since(self, earlier: DbCounts) -> DbCounts {
        DbCounts {
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
        }
    }

    pub fn total(self) -> u64 {
        self.reads + self.writes
    }
}

impl DbStats {
    /// Counts each statement of `sql`. A text of several statements (the group commit's
    /// one-trip batch on SQLite) counts each, and its `BEGIN`/`COMMIT` none, as a transaction
    /// opened through the pool counts none. Values are bound, never inlined, so `;` only ever
    /// separates statements.
    fn observe(&self, sql: &str) {
        for statement in sql.split(';') {
            let verb = statement
                .trim_start()
                .split(|c: char| !c.is_ascii_alphabetic())
                .next()
                .unwrap_or("");
            let is = |words: &[&str]| words.iter().any(|w| verb.eq_ignore_ascii_case(w));
            if verb.is_empty() || is(&["BEGIN", "COMMIT", "ROLLBACK", "END"]) {
                continue;
            }
            let write = is(&["INSERT", "UPDATE", "DELETE"]);
            let counter = if write { &self.writes } else { &self.reads };
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts `n` writes run without SeaORM (the group commit's own SQLite connection).
    fn count_writes(&self, n: u64) {
        self.writes.fetch_add(n, Ordering::Relaxed);
    }

    pub fn counts(&self) -> DbCounts {
        DbCounts {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }
}

/// How long a pooled connection may sit idle before the pool checks it is still live when it is
/// next taken (see `connect_with_cache`).
pub const POOL_PING_AFTER_IDLE: Duration = Duration::from_secs(1);

impl Store {
    /// Connects to `url` (SQLite or PostgreSQL). For a SQLite file the parent directory is
    /// created; the file itself is created by `mode=rwc`. `pg_schema` selects a PostgreSQL schema
    /// (tests use one fresh schema each).
    pub async fn connect(
        url: &str,
        max_connections: u32,
        pg_schema: Option<&str>,
    ) -> Result<Self, DbErr> {
        Self::connect_with_cache(
            url,
            max_connections,
            pg_schema,
            DEFAULT_SQLITE_CACHE_KIB,
            SqliteSync::default(),
        )
        .await
    }

    /// [`Self::connect`] with SQLite's page cache set to `sqlite_cache_kib` KiB per connection
    /// (`database.sqlite_cache_kib`) and its commits synced as `synchronous` says
    /// (`database.sqlite_synchronous`); both ignored on PostgreSQL, whose commits are durable
    /// as the server is configured (`synchronous_commit`, on by default).
    pub async fn connect_with_cache(
        url: &str,
        max_connections: u32,
        pg_schema: Option<&str>,
        sqlite_cache_kib: u32,
        synchronous: SqliteSync,
    ) -> Result<Self, DbErr> {
        if let Some(path) = sqlite_file_path(url)
            && let Some(parent) = std::path::Path::new(path).parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent)
                .map_err(|e| DbErr::Custom(format!("cannot create {}: {e}", parent.display())))?;
        }
        let options = |max_connections: u32| {
            let mut options = ConnectOptions::new(url.to_string());
            options
                .max_connections(max_connections.max(1))
                .acquire_timeout(Duration::from_secs(10))
                // sqlx pings a pooled connection on every acquire by default: a round trip
                // before each transaction. Without it, on PostgreSQL, a publish cost the service
                // 7-16 % less CPU and `SELECT 1` through the pool ran 1.3-1.6 times as fast
                // (docs/benchmarks.md). A connection used within the last second is
                // trusted (one the server ends mid-burst fails its statement, and sqlx's check on
                // release then drops it); one idle longer, which a restart or a proxy may have
                // closed, is still checked (test
                // `requests_succeed_after_the_database_ends_the_pools_connections`).
                .test_before_acquire_if_idle_for(POOL_PING_AFTER_IDLE)
                .sqlx_logging(false)
                .map_sqlx_sqlite_opts(move |opts| {
                    use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
                    // WAL lets readers proceed during a write; writers queue on the busy timeout
                    // instead of failing with SQLITE_BUSY.
                    opts.journal_mode(SqliteJournalMode::Wal)
                        .synchronous(match synchronous {
                            SqliteSync::Full => SqliteSynchronous::Full,
                            SqliteSync::Normal => SqliteSynchronous::Normal,
                        })
                        .busy_timeout(Duration::from_secs(15))
                        .foreign_keys(true)
                        // Negative: a size in KiB (SQLite's own default is 2,000 KiB per
                        // connection, which a pool of them fills with pages the OS caches anyway).
                        .pragma("cache_size", format!("-{}", sqlite_cache_kib.max(1)))
                })
                .map_sqlx_sqlite_pool_opts(|pool| {
                    pool.after_connect(|conn, _| Box::pin(sqlite_writer::stable_plans(conn)))
                });
            if let Some(schema) = pg_schema {
                options.set_schema_search_path(schema.to_string());
            }
            options
        };
        let stats = Arc::new(DbStats::default());
        let observer = stats.clone();
        let mut db = Database::connect(options(max_connections)).await?;
        db.set_metric_callback(move |info| observer.observe(&info.statement.sql));
        // SQLite's group-commit connection (see `sqlite_writer.rs`): opened after the pool,
        // which creates the file; only the group commit's drainer uses it, one batch at a time.
        let writer = match sqlite_file_path(url) {
            Some(path) => Some(Arc::new(sqlite_writer::SqliteWriter::open(
                path,
                sqlite_cache_kib,
                synchronous,
                stats.clone(),
            )?)),
            None => None,
        };
        Ok(Self {
            db,
            writer,
            stats,
            access: Arc::new(AccessCache::default()),
            channel: access::channel_name(pg_schema).into(),
            group: Arc::default(),
            changes: sqlite_file_path(url)
                .map(|path| Arc::new(access::ChangeMarker::for_database(path))),
            outbox_written: Arc::default(),
            peers: Arc::default(),
        })
    }

    /// This store with `cache` (the application's: its clock and configured bounds) in place
    /// of the default one. Set before the store is cloned: clones share the cache.
    pub fn with_access_cache(mut self, cache: Arc<AccessCache>) -> Self {
        self.access = cache;
        self
    }

    /// The access cache (see [`crate::store::access`]).
    pub fn access(&self) -> &Arc<AccessCache> {
        &self.access
    }

    /// On PostgreSQL, starts the listener that applies other instances' invalidations to this
    /// store's cache (see [`peers::spawn_listener`]); nothing to do on SQLite, where one
    /// instance owns the file and the TTL bounds anything else. Needs a running runtime.
    pub fn listen_for_invalidations(&self, retry: Duration) {
        if self.backend() == DbBackend::Postgres {
            peers::spawn_listener(
                self.db.get_postgres_connection_pool(),
                self.channel.to_string(),
                self.access.clone(),
                self.peers.clone(),
                retry,
            );
        }
    }

    /// Opens the transaction of a write that changes cached rows; finish it with
    /// [`Self::commit_invalidating`].
    async fn begin_invalidating(&self) -> Result<DatabaseTransaction, DbErr> {
        self.db.begin().await
    }

    /// Tells the other instances about `what` inside `txn` (PostgreSQL delivers a notification
    /// when, and only if, its transaction commits), commits, then evicts here: the same
    /// operation as the write, so the next request on this instance reads the new row. On
    /// PostgreSQL it then waits until every other live instance has evicted it too (see
    /// `peers.rs`): a request sent anywhere after the answer sees the write.
    async fn commit_invalidating(
        &self,
        txn: DatabaseTransaction,
        what: &[Invalidation],
    ) -> Result<(), DbErr> {
        let (messages, seq) = self.invalidation_messages(what);
        let result = async {
            self.notify_messages(&txn, &messages).await?;
            txn.commit().await
        }
        .await;
        // Also when the commit failed: its outcome may be unknown (a connection lost after
        // sending it), and an eviction is only ever a query more.
        for item in what {
            self.access.evict(*item);
        }
        if let Some(seq) = seq {
            self.await_peers(seq).await;
        }
        result
    }

    /// On PostgreSQL, tells the other instances about `what` on `db`: inside a transaction the
    /// notification is delivered when, and only if, it commits. Nothing to do on SQLite.
    async fn notify<C: ConnectionTrait>(&self, db: &C, what: &[Invalidation]) -> Result<(), DbErr> {
        let messages: Vec<peers::Message> = what
            .iter()
            .map(|what| peers::Message::Invalidate {
                what: *what,
                from: None,
            })
            .collect();
        self.notify_messages(db, &messages).await
    }

    /// [`Self::notify`] with the messages made.
    async fn notify_messages<C: ConnectionTrait>(
        &self,
        db: &C,
        messages: &[peers::Message],
    ) -> Result<(), DbErr> {
        if self.backend() != DbBackend::Postgres {
            return Ok(());
        }
        for message in messages {
            db.execute_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                "SELECT pg_notify($1, $2)",
                [self.channel.to_string().into(), message.payload().into()],
            ))
            .await?;
        }
        Ok(())
    }

    /// After a write outside a transaction that changed what scheduled-post listings show
    /// (or whose outcome is unknown): drops them here at once, then tells the other instances.
    /// A notification that cannot be sent is logged, not the write's error (the write is done;
    /// `auth.cache_ttl_ms` bounds what the other instances keep).
    async fn scheduled_changed(&self) {
        self.access.evict(Invalidation::Scheduled);
        if let Err(error) = self.notify(&self.db, &[Invalidation::Scheduled]).await {
            tracing::warn!(%error, "cannot notify the other instances of a scheduled-post write");
        }
    }

    /// For a command run as a process of its own, after it committed `what`: on a SQLite file,
    /// tells the running instances, which see it on their very next authentication (on
    /// PostgreSQL the transaction's notification did). A failure is logged: the change is
    /// made, and `auth.cache_ttl_ms` still bounds what the instances keep.
    pub fn tell_other_processes(&self, what: &[Invalidation]) {
        if let Some(changes) = &self.changes
            && let Err(error) = changes.announce(what)
        {
            tracing::warn!(%error, "cannot tell the running instances of the change");
        }
    }

    /// Drops the whole access cache if another process announced a change (see
    /// [`access::ChangeMarker`]); nothing to do on PostgreSQL.
    fn apply_other_processes_changes(&self) {
        if let Some(changes) = &self.changes
            && changes.changed()
        {
            self.access.evict(Invalidation::All);
        }
    }

    /// Applies every pending migration; on PostgreSQL under an advisory lock, so that
    /// instances starting together migrate once (see `migration_lock.rs`).
    pub async fn migrate(&self) -> Result<(), DbErr> {
        if self.backend() != DbBackend::Postgres {
            return Migrator::up(&self.db, None).await;
        }
        let key = migration_lock::lock_key(&self.channel);
        let lock =
            migration_lock::MigrationLock::acquire(self.db.get_postgres_connection_pool(), key)
                .await?;
        let result = Migrator::up(&self.db, None).await;
        lock.release().await;
        result
    }

    /// Closes the pool (the migration's own connection, see `Application::build`).
    pub async fn close(self) -> Result<(), DbErr> {
        self.db.close().await
    }

    /// Statements sent so far (see [`DbStats`]).
    pub fn db_counts(&self) -> DbCounts {
        self.stats.counts()
    }

    /// Runs a trivial query (health checks).
    pub async fn ping(&self) -> Result<(), DbErr> {
        self.db.ping().await
    }

    pub fn backend(&self) -> DbBackend {
        self.db.get_database_backend()
    }

    /// Migrations known to the binary but not applied to the database.
    pub async fn pending_migrations(&self) -> Result<usize, DbErr> {
        Ok(Migrator::get_pending_migrations(&self.db).await?.len())
    }

    /// Connections in the pool: `(open, idle)`.
    pub fn pool_stats(&self) -> (u32, usize) {
        match self.backend() {
            DbBackend::Postgres => {
                let pool = self.db.get_postgres_connection_pool();
                (pool.size(), pool.num_idle())
            }
            DbBackend::Sqlite => {
                let pool = self.db.get_sqlite_connection_pool();
                (pool.size(), pool.num_idle())
            }
            _ => (0, 0),
        }
    }

    /// The underlying connection, for tests that need to inspect rows directly.
    pub fn connection(&self) -> &DatabaseConnection {
        &self.db
    }
}

/// The file path of a `sqlite://PATH?…` URL, unless it is in-memory.
fn sqlite_file_path(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    if path.is_empty() || path == ":memory:" || rest.contains("mode=memory") {
        None
    } else {
        Some(path)
    }
}

/// Ids per statement when a statement lists many rows: far below SQLite's limit on bound
/// variables (999 before 3.32), and small enough that one statement holds SQLite's write lock
/// only briefly.
pub const IDS_PER_STATEMENT: usize = 500;

/// Placeholder `n` (1-based) in the backend's raw SQL dialect: numbered on both, so that a
/// statement may use one value twice.
fn placeholder(backend: DbBackend, n: usize) -> String {
    match backend {
        DbBackend::Postgres => format!("${n}"),
        _ => format!("?{n}"),
    }
}

/// Unit tests' store: a migrated SQLite file in a directory of its own (kept while the
/// returned `TempDir` lives), with a pool of `max_connections`.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) async fn temp_sqlite_store(max_connections: u32) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/t.db?mode=rwc", dir.path().display());
    let store = Store::connect(&url, max_connections, None).await.unwrap();
    store.migrate().await.unwrap();
    (dir, store)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Row ids made one after another sort in that order (within a millisecond too: UUIDv7's
    /// counter), so inserts append to the primary key's index.
    #[test]
    fn new_row_ids_sort_in_the_order_they_were_made() {
        let ids: Vec<_> = (0..1_000).map(|_| new_row_id()).collect();
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(ids[0].get_version_num(), 7);
    }

    #[test]
    fn statements_are_counted_by_kind() {
        let stats = DbStats::default();
        for sql in [
            "SELECT 1",
            "  insert INTO t VALUES (1)",
            "UPDATE t SET a = 1",
            "DELETE FROM t",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "",
            // The group commit's one-trip batch: its statements, not its transaction control.
            "BEGIN;INSERT INTO t VALUES (?);UPDATE t SET a = ? RETURNING id;COMMIT",
        ] {
            stats.observe(sql);
        }
        assert_eq!(
            stats.counts(),
            DbCounts {
                reads: 2,
                writes: 5
            }
        );
    }

    /// The pre-call record of a publish must survive a power cut: by default every SQLite
    /// connection, the pool's and the group commit's own, syncs each commit.
    #[tokio::test]
    async fn sqlite_commits_are_synced_to_disk_unless_configured_otherwise() {
        for (mode, expected) in [
            (SqliteSync::default(), 2),
            (SqliteSync::Full, 2),
            (SqliteSync::Normal, 1),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let url = format!("sqlite://{}/sync.db?mode=rwc", dir.path().display());
            let store = Store::connect_with_cache(&url, 2, None, 64, mode)
                .await
                .unwrap();
            let pooled = store
                .db
                .query_one_raw(Statement::from_string(
                    DbBackend::Sqlite,
                    "PRAGMA synchronous",
                ))
                .await
                .unwrap()
                .unwrap()
                .try_get_by_index::<i64>(0)
                .unwrap();
            assert_eq!(pooled, expected, "{mode:?}: the pool's connections");
            // The group commit's connection never syncs on its actor's thread: its batches
            // wait for the WAL sync thread instead.
            let writer = store.writer.as_ref().unwrap();
            assert_eq!(writer.synchronous(), 1, "{mode:?}: the group commit's own");
            assert_eq!(
                writer.syncer().is_some(),
                mode == SqliteSync::Full,
                "{mode:?}: the group commit waits for the WAL's sync"
            );
        }
    }

    #[test]
    fn sqlite_paths() {
        assert_eq!(
            sqlite_file_path("sqlite://data/x.db?mode=rwc"),
            Some("data/x.db")
        );
        assert_eq!(sqlite_file_path("sqlite::memory:"), None);
        assert_eq!(sqlite_file_path("postgres://h/db"), None);
    }
}
