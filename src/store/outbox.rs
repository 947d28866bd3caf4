//! The webhook outbox's writes: an event row written inside the transaction of the state change
//! it reports, so that a crash loses neither or both. Each statement copies what the event
//! needs from the row just changed, and writes nothing for a user with no active endpoint (the
//! `EXISTS`), so a service nobody subscribed to pays only an indexed look per change.

use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, Statement, Value};
use uuid::Uuid;

use super::{IDS_PER_STATEMENT, Store, placeholder};

/// A new random id in SQL: the batch statements write many rows at once. SQLite stores ids as
/// 16-byte blobs.
fn new_id(backend: DbBackend) -> &'static str {
    match backend {
        DbBackend::Postgres => "gen_random_uuid()",
        _ => "randomblob(16)",
    }
}

const SUBSCRIBED: &str =
    "EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.user_id = s.user_id AND e.is_active)";

/// The events of the publishing history rows `ids` whose status is an outcome (a row still
/// `publishing` reports nothing), each with the row's changing columns as they are now.
pub(super) fn post_events_sql(backend: DbBackend, count: usize) -> String {
    let params: Vec<String> = (1..=count).map(|n| placeholder(backend, n)).collect();
    format!(
        "INSERT INTO webhook_events (id, user_id, event_type, subject_id, status, post_id, \
         result, published_at, error_code, error_message, occurred_at) \
         SELECT {}, s.user_id, 'post', s.id, s.status, s.post_id, CAST(s.result AS TEXT), \
         s.published_at, s.error_code, s.error_message, s.updated_at \
         FROM post_submissions s WHERE s.id IN ({}) \
         AND s.status IN ('published', 'failed', 'unconfirmed') AND {SUBSCRIBED}",
        new_id(backend),
        params.join(", ")
    )
}

/// PostgreSQL: `update` (an `UPDATE` of history rows ending in `RETURNING "id"`) and the event
/// of every row it changed to an outcome, in one statement: the update in a data-modifying
/// `WITH`, whose returned rows (the new values; the rest of the statement sees the old ones)
/// feed the insert. Answers the changed rows' ids, as `update` did. `None` when `update` does
/// not have that form.
pub(super) fn with_post_events(update: Statement) -> Option<Statement> {
    let head = update.sql.strip_suffix(r#" RETURNING "id""#)?;
    let sql = format!(
        "WITH changed AS ({head} RETURNING id, user_id, status, post_id, result, published_at, \
         error_code, error_message, updated_at), \
         events AS (INSERT INTO webhook_events (id, user_id, event_type, subject_id, status, \
         post_id, result, published_at, error_code, error_message, occurred_at) \
         SELECT gen_random_uuid(), s.user_id, 'post', s.id, s.status, s.post_id, \
         CAST(s.result AS TEXT), s.published_at, s.error_code, s.error_message, s.updated_at \
         FROM changed s WHERE s.status IN ('published', 'failed', 'unconfirmed') \
         AND {SUBSCRIBED}) \
         SELECT id FROM changed"
    );
    Some(Statement {
        sql,
        values: update.values,
        db_backend: update.db_backend,
    })
}

/// Writes the events of history rows `ids` on `db` (the caller's transaction).
pub(super) async fn post_events<C: ConnectionTrait>(db: &C, ids: &[Uuid]) -> Result<(), DbErr> {
    if ids.is_empty() {
        return Ok(());
    }
    let backend = db.get_database_backend();
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        let values: Vec<Value> = chunk.iter().map(|id| (*id).into()).collect();
        db.execute_raw(Statement::from_sql_and_values(
            backend,
            post_events_sql(backend, chunk.len()),
            values,
        ))
        .await?;
    }
    Ok(())
}

/// Writes the `post.failed` event of a scheduled post that failed before any publish of it was
/// recorded (no history row to report): its owner gone, its account disconnected, its request
/// no longer valid.
pub(super) async fn scheduled_failure_event<C: ConnectionTrait>(
    db: &C,
    scheduled_post_id: Uuid,
) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let sql = format!(
        "INSERT INTO webhook_events (id, user_id, event_type, subject_id, status, error_code, \
         error_message, occurred_at) \
         SELECT {}, s.user_id, 'scheduled', s.id, 'failed', s.error_code, s.error, s.updated_at \
         FROM scheduled_posts s WHERE s.id = {} AND s.status = 'failed' \
         AND s.submission_id IS NULL AND {SUBSCRIBED}",
        new_id(backend),
        placeholder(backend, 1)
    );
    db.execute_raw(Statement::from_sql_and_values(
        backend,
        sql,
        [scheduled_post_id.into()],
    ))
    .await?;
    Ok(())
}

/// An account event (`account.invalid`, `account.token_expiring`) for account `account_id`.
pub(super) async fn account_event<C: ConnectionTrait>(
    db: &C,
    account_id: Uuid,
    event_type: &str,
    reason: &str,
    expires_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let p = |n| placeholder(backend, n);
    let sql = format!(
        "INSERT INTO webhook_events (id, user_id, event_type, subject_id, reason, expires_at, \
         occurred_at) \
         SELECT {}, s.user_id, {}, s.id, {}, {}, {} FROM accounts s WHERE s.id = {} \
         AND {SUBSCRIBED}",
        new_id(backend),
        p(1),
        p(2),
        p(3),
        p(4),
        p(5)
    );
    db.execute_raw(Statement::from_sql_and_values(
        backend,
        sql,
        [
            event_type.into(),
            reason.into(),
            expires_at.into(),
            now.into(),
            account_id.into(),
        ],
    ))
    .await?;
    Ok(())
}

impl Store {
    /// Wakes this instance's delivery actor: a commit may have written events.
    pub(super) fn outbox_may_have_events(&self) {
        self.outbox_written.notify_one();
    }

    /// What the delivery actor waits on between its looks for work.
    pub fn outbox_signal(&self) -> std::sync::Arc<tokio::sync::Notify> {
        self.outbox_written.clone()
    }
}
