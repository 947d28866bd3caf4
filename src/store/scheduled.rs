//! Scheduled posts. Every state change is a conditional update on the current state (and, while
//! publishing, on the claimant), so concurrent schedulers, cancels and settlements never overwrite
//! each other: whoever's update matches the expected state wins, the rest see 0 rows.

use chrono::{DateTime, Utc};
use entity::platform::Platform;
use entity::scheduled_post::{self, ScheduledStatus};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DbBackend, DbErr,
    DerivePartialModel, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set, Statement,
    TransactionTrait, Value, sea_query::Expr,
};
// `cast_as` in the listings' column expressions, `sub` in releasing claims.
use sea_orm::sea_query::ExprTrait as _;
use uuid::Uuid;

use super::{IDS_PER_STATEMENT, ScheduledFilter, Store};
use crate::store::access::Invalidation;

/// A scheduled post as `GET /api/scheduled-posts` lists it: only the columns the list returns
/// (not the accepted request, which can be large, nor the claim and lease), and the content as
/// its stored JSON text, which the answer embeds as it is instead of parsing it into a tree and
/// writing it out again for every row.
#[derive(Debug, Clone, DerivePartialModel)]
#[sea_orm(entity = "scheduled_post::Entity", from_query_result)]
pub struct ScheduledListing {
    pub id: Uuid,
    pub account_id: Uuid,
    pub platform: Platform,
    pub page_name: String,
    /// `{text, media_urls}` as stored (JSON text; cast, since PostgreSQL's column is `json`).
    #[sea_orm(from_expr = "Expr::col(scheduled_post::Column::Content).cast_as(\"text\")")]
    pub content: String,
    pub scheduled_at: DateTime<Utc>,
    pub status: ScheduledStatus,
    pub attempts: i32,
    pub next_attempt_at: DateTime<Utc>,
    pub submission_id: Option<Uuid>,
    pub post_id: Option<String>,
    pub error_code: Option<String>,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub published_at: Option<DateTime<Utc>>,
}

/// A post accepted for later.
#[derive(Debug, Clone)]
pub struct NewScheduledPost {
    pub user_id: Uuid,
    pub account_id: Uuid,
    pub platform: Platform,
    pub page_name: String,
    pub request: serde_json::Value,
    pub content: serde_json::Value,
    pub scheduled_at: DateTime<Utc>,
}

/// How an attempt ended: the post's next state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptEnd {
    /// `publishing → published`.
    Published { post_id: String },
    /// `publishing → failed`.
    Failed { code: String, error: String },
    /// `publishing → scheduled`, for another attempt at `next_attempt_at`.
    Rescheduled {
        next_attempt_at: DateTime<Utc>,
        error: String,
    },
}

/// One attempt's end, written only while `claimant` still holds the post (and, with
/// `lease_expired_at`, only a claim whose lease ended before it: settlement of a dead claimant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedAttempt {
    pub id: Uuid,
    pub claimant: String,
    pub lease_expired_at: Option<DateTime<Utc>>,
    pub end: AttemptEnd,
}

impl AttemptEnd {
    /// The post's new status and the columns that go with it.
    fn columns(&self) -> (ScheduledStatus, Vec<(scheduled_post::Column, Expr)>) {
        match self {
            AttemptEnd::Published { post_id } => (
                ScheduledStatus::Published,
                vec![
                    (
                        scheduled_post::Column::PostId,
                        Expr::value(post_id.as_str()),
                    ),
                    // Set below to the write's `now`.
                ],
            ),
            AttemptEnd::Failed { code, error } => (
                ScheduledStatus::Failed,
                vec![
                    (
                        scheduled_post::Column::ErrorCode,
                        Expr::value(code.as_str()),
                    ),
                    (scheduled_post::Column::Error, Expr::value(error.as_str())),
                ],
            ),
            AttemptEnd::Rescheduled {
                next_attempt_at,
                error,
            } => (
                ScheduledStatus::Scheduled,
                vec![
                    (
                        scheduled_post::Column::NextAttemptAt,
                        Expr::value(*next_attempt_at),
                    ),
                    (
                        scheduled_post::Column::ClaimedBy,
                        Expr::value(None::<String>),
                    ),
                    (scheduled_post::Column::Error, Expr::value(error.as_str())),
                ],
            ),
        }
    }
}

/// What a cancel did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelOutcome {
    Cancelled,
    /// Unknown, or another user's.
    NotFound,
    /// Not `scheduled` any more: its current status.
    NotCancellable(ScheduledStatus),
}

impl Store {
    pub async fn insert_scheduled_post(
        &self,
        new: NewScheduledPost,
        now: DateTime<Utc>,
    ) -> Result<scheduled_post::Model, DbErr> {
        self.insert_scheduled_post_as(super::new_row_id(), new, now)
            .await
    }

    /// [`Self::insert_scheduled_post`] with the id chosen beforehand (an idempotency key's claim
    /// names it, so a retry can find what its first request scheduled).
    pub async fn insert_scheduled_post_as(
        &self,
        id: Uuid,
        new: NewScheduledPost,
        now: DateTime<Utc>,
    ) -> Result<scheduled_post::Model, DbErr> {
        let inserted = scheduled_post::ActiveModel {
            id: Set(id),
            user_id: Set(new.user_id),
            account_id: Set(new.account_id),
            platform: Set(new.platform),
            page_name: Set(new.page_name),
            request: Set(new.request),
            content: Set(new.content),
            scheduled_at: Set(new.scheduled_at),
            status: Set(ScheduledStatus::Scheduled),
            attempts: Set(0),
            next_attempt_at: Set(new.scheduled_at),
            claimed_by: Set(None),
            claimed_at: Set(None),
            lease_until: Set(None),
            submission_id: Set(None),
            post_id: Set(None),
            error_code: Set(None),
            error: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
            published_at: Set(None),
        }
        .insert(&self.db)
        .await;
        // Also after an error: whether the row went in may be unknown.
        self.scheduled_changed().await;
        inserted
    }

    /// The user's scheduled posts, by scheduled time.
    pub async fn list_scheduled_posts(
        &self,
        user_id: Uuid,
        filter: ScheduledFilter,
    ) -> Result<Vec<scheduled_post::Model>, DbErr> {
        let ScheduledFilter {
            status,
            platform,
            limit,
        } = filter;
        let mut query =
            scheduled_post::Entity::find().filter(scheduled_post::Column::UserId.eq(user_id));
        if let Some(status) = status {
            query = query.filter(scheduled_post::Column::Status.eq(status));
        }
        if let Some(platform) = platform {
            query = query.filter(scheduled_post::Column::Platform.eq(platform));
        }
        query
            .order_by_asc(scheduled_post::Column::ScheduledAt)
            .order_by_asc(scheduled_post::Column::Id)
            .limit(limit)
            .all(&self.db)
            .await
    }

    /// The user's scheduled posts as the API lists them (see [`ScheduledListing`]), by
    /// scheduled time.
    pub async fn scheduled_listing(
        &self,
        user_id: Uuid,
        filter: ScheduledFilter,
    ) -> Result<Vec<ScheduledListing>, DbErr> {
        let ScheduledFilter {
            status,
            platform,
            limit,
        } = filter;
        let mut query =
            scheduled_post::Entity::find().filter(scheduled_post::Column::UserId.eq(user_id));
        if let Some(status) = status {
            query = query.filter(scheduled_post::Column::Status.eq(status));
        }
        if let Some(platform) = platform {
            query = query.filter(scheduled_post::Column::Platform.eq(platform));
        }
        query
            .order_by_asc(scheduled_post::Column::ScheduledAt)
            .order_by_asc(scheduled_post::Column::Id)
            .limit(limit)
            .into_partial_model::<ScheduledListing>()
            .all(&self.db)
            .await
    }

    /// The body of `GET /api/scheduled-posts`: `render` of [`Self::scheduled_listing`], kept
    /// in the access cache (see [`crate::store::access`]) until a scheduled-post write, or the TTL,
    /// drops it. The listing version is read before the rows, so a listing that raced a write
    /// is answered but not kept.
    pub async fn scheduled_listing_body<E: From<DbErr>>(
        &self,
        user_id: Uuid,
        filter: ScheduledFilter,
        render: impl FnOnce(&[ScheduledListing]) -> Result<bytes::Bytes, E>,
    ) -> Result<bytes::Bytes, E> {
        let key = (user_id, filter);
        if let Some(body) = self.access.listing(&key) {
            return Ok(body);
        }
        let seen = self.access.listing_version();
        let rows = self.scheduled_listing(user_id, filter).await?;
        let body = render(&rows)?;
        self.access.insert_listing(seen, key, body.clone());
        Ok(body)
    }

    pub async fn find_scheduled_post(
        &self,
        id: Uuid,
    ) -> Result<Option<scheduled_post::Model>, DbErr> {
        scheduled_post::Entity::find_by_id(id).one(&self.db).await
    }

    /// Cancels one of the user's posts if it is still `scheduled`.
    pub async fn cancel_scheduled_post(
        &self,
        user_id: Uuid,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<CancelOutcome, DbErr> {
        let result = scheduled_post::Entity::update_many()
            .col_expr(
                scheduled_post::Column::Status,
                Expr::value(ScheduledStatus::Cancelled.as_str()),
            )
            .col_expr(scheduled_post::Column::UpdatedAt, Expr::value(now))
            .filter(scheduled_post::Column::Id.eq(id))
            .filter(scheduled_post::Column::UserId.eq(user_id))
            .filter(scheduled_post::Column::Status.eq(ScheduledStatus::Scheduled))
            .exec(&self.db)
            .await;
        let result = self.after_scheduled_update(result).await?;
        if result.rows_affected == 1 {
            return Ok(CancelOutcome::Cancelled);
        }
        Ok(match self.find_scheduled_post(id).await? {
            Some(post) if post.user_id == user_id => CancelOutcome::NotCancellable(post.status),
            _ => CancelOutcome::NotFound,
        })
    }

    /// When the earliest `scheduled` post is due.
    pub async fn next_due_at(&self) -> Result<Option<DateTime<Utc>>, DbErr> {
        let next = scheduled_post::Entity::find()
            .filter(scheduled_post::Column::Status.eq(ScheduledStatus::Scheduled))
            .order_by_asc(scheduled_post::Column::NextAttemptAt)
            .one(&self.db)
            .await?;
        Ok(next.map(|p| p.next_attempt_at))
    }

    /// Claims up to `limit` due posts, earliest first: `scheduled → publishing` with this
    /// claimant and lease, in one statement. A post is claimed by exactly one caller: the update
    /// re-checks `status = 'scheduled'` on every row it changes (PostgreSQL re-evaluates it after
    /// waiting for a concurrent claimant's lock, and `SKIP LOCKED` avoids the wait; SQLite runs
    /// one writer at a time).
    pub async fn claim_due_posts(
        &self,
        claimant: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: u64,
    ) -> Result<Vec<scheduled_post::Model>, DbErr> {
        let backend = self.backend();
        let postgres = backend == DbBackend::Postgres;
        let sql = if postgres {
            // The pick is a materialized CTE, run once: as a subquery of `IN`, PostgreSQL may
            // run it again for each row it updates, and posts that tie on `next_attempt_at`
            // could then be picked beyond the limit.
            "WITH picked AS MATERIALIZED (\
               SELECT id FROM scheduled_posts WHERE status = 'scheduled' AND next_attempt_at <= $2 \
               ORDER BY next_attempt_at LIMIT $4 FOR UPDATE SKIP LOCKED) \
             UPDATE scheduled_posts SET status = 'publishing', claimed_by = $1, claimed_at = $2, \
             lease_until = $3, attempts = attempts + 1, updated_at = $2 \
             WHERE status = 'scheduled' AND id IN (SELECT id FROM picked) \
             RETURNING *"
        } else {
            "UPDATE scheduled_posts SET status = 'publishing', claimed_by = ?, claimed_at = ?, \
             lease_until = ?, attempts = attempts + 1, updated_at = ? \
             WHERE status = 'scheduled' AND id IN (\
               SELECT id FROM scheduled_posts WHERE status = 'scheduled' AND next_attempt_at <= ? \
               ORDER BY next_attempt_at LIMIT ?) \
             RETURNING *"
        };
        let (claimant, now, lease, limit): (Value, Value, Value, Value) = (
            claimant.to_string().into(),
            now.into(),
            lease_until.into(),
            (limit as i64).into(),
        );
        // PostgreSQL reuses `$2`; SQLite's `?` takes one value per occurrence.
        let values = if postgres {
            vec![claimant, now, lease, limit]
        } else {
            vec![claimant, now.clone(), lease, now.clone(), now, limit]
        };
        let rows = scheduled_post::Entity::find()
            .from_raw_sql(Statement::from_sql_and_values(backend, sql, values))
            .all(&self.db)
            .await;
        // `publishing`, one attempt more: listed. Most passes claim nothing and change nothing.
        if rows.as_ref().map_or(true, |rows| !rows.is_empty()) {
            self.scheduled_changed().await;
        }
        let mut rows = rows?;
        rows.sort_by_key(|r| r.next_attempt_at);
        Ok(rows)
    }

    /// Records which history row this attempt writes, if `claimant` still holds the claim.
    pub async fn set_scheduled_submission(
        &self,
        id: Uuid,
        claimant: &str,
        submission_id: Uuid,
    ) -> Result<bool, DbErr> {
        let result = scheduled_post::Entity::update_many()
            .col_expr(
                scheduled_post::Column::SubmissionId,
                Expr::value(submission_id),
            )
            .filter(Self::claimed_by(id, claimant, None))
            .exec(&self.db)
            .await;
        // The listing names the attempt's history row.
        let result = self.after_scheduled_update(result).await?;
        Ok(result.rows_affected == 1)
    }

    /// Renews one claim if `claimant` still holds it *for this attempt* (the fence before an
    /// irreversible call): a stale job of an earlier attempt of the same instance fails it too.
    /// Only the lease changes, which no listing shows: cached listings stay.
    pub async fn renew_claim(
        &self,
        id: Uuid,
        claimant: &str,
        submission_id: Uuid,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let result = scheduled_post::Entity::update_many()
            .col_expr(scheduled_post::Column::LeaseUntil, Expr::value(lease_until))
            .filter(Self::claimed_by(id, claimant, None))
            .filter(scheduled_post::Column::SubmissionId.eq(submission_id))
            .exec(&self.db)
            .await?;
        Ok(result.rows_affected == 1)
    }

    /// Extends the leases of the posts this instance holds right now (`ids`: queued or
    /// publishing). A post it claimed but no longer tracks is left to expire and be settled.
    /// One statement per [`IDS_PER_STATEMENT`] ids (thousands may be claimed at once). Only
    /// leases change, which no listing shows: cached listings stay.
    pub async fn extend_leases(
        &self,
        claimant: &str,
        ids: Vec<Uuid>,
        lease_until: DateTime<Utc>,
    ) -> Result<u64, DbErr> {
        let mut extended = 0;
        for chunk in ids.chunks(IDS_PER_STATEMENT) {
            let result = scheduled_post::Entity::update_many()
                .col_expr(scheduled_post::Column::LeaseUntil, Expr::value(lease_until))
                .filter(scheduled_post::Column::Id.is_in(chunk.iter().copied()))
                .filter(scheduled_post::Column::ClaimedBy.eq(claimant))
                .filter(scheduled_post::Column::Status.eq(ScheduledStatus::Publishing))
                .exec(&self.db)
                .await?;
            extended += result.rows_affected;
        }
        Ok(extended)
    }

    /// The post is still `publishing` under `claimant`; with `lease_expired_at`, only if that
    /// claim's lease ended before it (settlement of a dead claimant's posts).
    fn claimed_by(id: Uuid, claimant: &str, lease_expired_at: Option<DateTime<Utc>>) -> Condition {
        let condition = Condition::all()
            .add(scheduled_post::Column::Id.eq(id))
            .add(scheduled_post::Column::Status.eq(ScheduledStatus::Publishing))
            .add(scheduled_post::Column::ClaimedBy.eq(claimant));
        match lease_expired_at {
            Some(at) => condition.add(scheduled_post::Column::LeaseUntil.lt(at)),
            None => condition,
        }
    }

    /// Ends one attempt (see [`EndedAttempt`]) on `db` (the pool or a transaction); false when
    /// the claimant no longer holds the post (someone else settled it first).
    async fn end_attempt<C: ConnectionTrait>(
        db: &C,
        ended: &EndedAttempt,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let (status, columns) = ended.end.columns();
        let mut update = scheduled_post::Entity::update_many()
            .col_expr(scheduled_post::Column::Status, Expr::value(status.as_str()))
            .col_expr(
                scheduled_post::Column::LeaseUntil,
                Expr::value(None::<DateTime<Utc>>),
            )
            .col_expr(scheduled_post::Column::UpdatedAt, Expr::value(now));
        if status == ScheduledStatus::Published {
            update = update.col_expr(scheduled_post::Column::PublishedAt, Expr::value(now));
        }
        for (column, value) in columns {
            update = update.col_expr(column, value);
        }
        let result = update
            .filter(Self::claimed_by(
                ended.id,
                &ended.claimant,
                ended.lease_expired_at,
            ))
            .exec(db)
            .await?;
        if result.rows_affected == 1 && status == ScheduledStatus::Failed {
            // In the same transaction (see `end_attempts`).
            super::outbox::scheduled_failure_event(db, ended.id).await?;
        }
        Ok(result.rows_affected == 1)
    }

    /// Ends many attempts together, in one transaction (one commit, which is what a write costs
    /// on SQLite, and one lock hold instead of one per post). Each post is still ended only
    /// while its claimant holds it: the answer says, per entry of `ended`, whether it was
    /// written (false: the claim was lost, and the post is someone else's to end). Rows are
    /// updated in id order, so two batches sharing rows (a settlement racing an end) never
    /// lock them in opposite orders on PostgreSQL.
    pub async fn end_attempts(
        &self,
        ended: &[EndedAttempt],
        now: DateTime<Utc>,
    ) -> Result<Vec<bool>, DbErr> {
        let mut written = vec![false; ended.len()];
        match ended {
            [] => {}
            // A failure writes its webhook event beside it: a transaction, as for many.
            [one] if !matches!(one.end, AttemptEnd::Failed { .. }) => {
                written[0] = self.end_one(one, now).await?
            }
            many => {
                let mut order: Vec<usize> = (0..many.len()).collect();
                order.sort_by_key(|&i| many[i].id);
                let txn = self.db.begin().await?;
                for i in order {
                    written[i] = Self::end_attempt(&txn, &many[i], now).await?;
                }
                // One notification for the batch, delivered with its commit.
                let changed = written.contains(&true);
                if changed {
                    self.notify(&txn, &[Invalidation::Scheduled]).await?;
                }
                let committed = txn.commit().await;
                if changed {
                    // Also when the commit failed: its outcome may be unknown.
                    self.access.evict(Invalidation::Scheduled);
                    self.outbox_may_have_events();
                }
                committed?;
            }
        }
        Ok(written)
    }

    async fn end_one(&self, ended: &EndedAttempt, now: DateTime<Utc>) -> Result<bool, DbErr> {
        let written = Self::end_attempt(&self.db, ended, now).await;
        if !matches!(written, Ok(false)) {
            self.scheduled_changed().await;
        }
        written
    }

    /// `publishing → scheduled` for another attempt at `next_attempt_at`, by the claimant.
    pub async fn reschedule_post(
        &self,
        id: Uuid,
        claimant: &str,
        next_attempt_at: DateTime<Utc>,
        error: &str,
        now: DateTime<Utc>,
        lease_expired_at: Option<DateTime<Utc>>,
    ) -> Result<bool, DbErr> {
        let end = AttemptEnd::Rescheduled {
            next_attempt_at,
            error: error.to_string(),
        };
        self.end_one(
            &EndedAttempt {
                id,
                claimant: claimant.to_string(),
                lease_expired_at,
                end,
            },
            now,
        )
        .await
    }

    /// Gives back posts this instance claimed but never started (shutdown): `publishing →
    /// scheduled`, the claim's attempt not counted. Only posts `claimant` still holds; the
    /// caller passes only posts whose attempt never started, so nothing was published.
    pub async fn release_claims(
        &self,
        claimant: &str,
        ids: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<u64, DbErr> {
        let released = self.release_chunks(claimant, ids, now).await;
        // One notification for the whole give-back (back to `scheduled`, the attempt uncounted).
        if !matches!(released, Ok(0)) {
            self.scheduled_changed().await;
        }
        released
    }

    async fn release_chunks(
        &self,
        claimant: &str,
        ids: &[Uuid],
        now: DateTime<Utc>,
    ) -> Result<u64, DbErr> {
        let mut released = 0;
        for chunk in ids.chunks(IDS_PER_STATEMENT) {
            let result = scheduled_post::Entity::update_many()
                .col_expr(
                    scheduled_post::Column::Status,
                    Expr::value(ScheduledStatus::Scheduled.as_str()),
                )
                .col_expr(
                    scheduled_post::Column::ClaimedBy,
                    Expr::value(None::<String>),
                )
                .col_expr(
                    scheduled_post::Column::LeaseUntil,
                    Expr::value(None::<DateTime<Utc>>),
                )
                .col_expr(
                    scheduled_post::Column::Attempts,
                    Expr::col(scheduled_post::Column::Attempts).sub(1),
                )
                .col_expr(scheduled_post::Column::UpdatedAt, Expr::value(now))
                .filter(scheduled_post::Column::Id.is_in(chunk.iter().copied()))
                .filter(scheduled_post::Column::ClaimedBy.eq(claimant))
                .filter(scheduled_post::Column::Status.eq(ScheduledStatus::Publishing))
                .exec(&self.db)
                .await?;
            released += result.rows_affected;
        }
        Ok(released)
    }

    /// Posts left `publishing` by a claimant whose lease has passed (a process that died).
    pub async fn expired_claims(
        &self,
        now: DateTime<Utc>,
    ) -> Result<Vec<scheduled_post::Model>, DbErr> {
        scheduled_post::Entity::find()
            .filter(scheduled_post::Column::Status.eq(ScheduledStatus::Publishing))
            .filter(scheduled_post::Column::LeaseUntil.lt(now))
            .all(&self.db)
            .await
    }

    /// The history rows of scheduled attempts (`ids`: their `submission_id`s), for settling
    /// many expired claims with one read.
    pub async fn attempt_submissions(
        &self,
        ids: &[Uuid],
    ) -> Result<Vec<entity::post_submission::Model>, DbErr> {
        entity::post_submission::Entity::find()
            .filter(entity::post_submission::Column::Id.is_in(ids.iter().copied()))
            .all(&self.db)
            .await
    }

    /// Ends a post whose attempt was handed to the reconciler (the platform was still
    /// processing it, or a cut-off final call was looked for): `publishing → published`,
    /// `failed`, or `scheduled` again when the platform showed that nothing went out. Whoever
    /// claimed the post, as long as `submission_id` is still its attempt.
    pub async fn finish_scheduled_checked(
        &self,
        id: Uuid,
        submission_id: Uuid,
        end: &AttemptEnd,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let (status, columns) = end.columns();
        let mut update = scheduled_post::Entity::update_many()
            .col_expr(scheduled_post::Column::Status, Expr::value(status.as_str()))
            .col_expr(
                scheduled_post::Column::LeaseUntil,
                Expr::value(None::<DateTime<Utc>>),
            )
            .col_expr(scheduled_post::Column::UpdatedAt, Expr::value(now));
        if status == ScheduledStatus::Published {
            update = update.col_expr(scheduled_post::Column::PublishedAt, Expr::value(now));
        }
        for (column, value) in columns {
            update = update.col_expr(column, value);
        }
        let result = update
            .filter(scheduled_post::Column::Id.eq(id))
            .filter(scheduled_post::Column::Status.eq(ScheduledStatus::Publishing))
            .filter(scheduled_post::Column::SubmissionId.eq(submission_id))
            .exec(&self.db)
            .await;
        let result = self.after_scheduled_update(result).await?;
        Ok(result.rows_affected == 1)
    }

    /// After an update of scheduled posts outside a transaction: when it changed a row (or its
    /// outcome is unknown), drops the listings here and tells the other instances.
    async fn after_scheduled_update(
        &self,
        result: Result<sea_orm::UpdateResult, DbErr>,
    ) -> Result<sea_orm::UpdateResult, DbErr> {
        if result.as_ref().map_or(true, |r| r.rows_affected > 0) {
            self.scheduled_changed().await;
        }
        result
    }
}
