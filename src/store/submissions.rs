//! The publishing history: one row per publish attempt.

use chrono::{DateTime, Utc};
use entity::platform::Platform;
use entity::post_submission;
use entity::post_submission::{PostType, PublishSteps, SubmissionStatus};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, DbErr, DerivePartialModel, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set, TransactionTrait, sea_query::Expr,
};
// `cast_as` in the listings' column expressions.
use sea_orm::sea_query::ExprTrait as _;
use uuid::Uuid;

use super::Store;

/// A window of a list: `limit` rows after skipping `offset`. Readers build it already bounded
/// (the API's `HistoryQuery` clamps and refuses out-of-range values), so the store takes it as is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: u64,
    pub offset: u64,
}

/// A history row as `GET /api/published-posts` lists it: the columns the list returns (not the
/// recorded steps nor the check columns), with `content` and `result` as their stored JSON text,
/// so a row is not parsed into a tree and converted again.
#[derive(Debug, Clone, DerivePartialModel)]
#[sea_orm(entity = "post_submission::Entity", from_query_result)]
pub struct HistoryListing {
    pub id: Uuid,
    pub account_id: Uuid,
    pub platform: Platform,
    pub post_type: Option<PostType>,
    pub post_id: Option<String>,
    pub status: SubmissionStatus,
    pub page_name: String,
    /// `{text, media_urls}` as stored (JSON text; cast, since PostgreSQL's column is `json`).
    #[sea_orm(from_expr = "Expr::col(post_submission::Column::Content).cast_as(\"text\")")]
    pub content: String,
    /// The publish's result fields as stored (JSON text), when it published.
    #[sea_orm(from_expr = "Expr::col(post_submission::Column::Result).cast_as(\"text\")")]
    pub result: Option<String>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub scheduled_post_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub published_at: Option<DateTime<Utc>>,
}

/// A history row as the publisher records it.
#[derive(Debug, Clone)]
pub struct NewSubmission {
    pub user_id: Uuid,
    pub account_id: Uuid,
    pub platform: Platform,
    pub post_type: Option<PostType>,
    pub post_id: Option<String>,
    pub status: SubmissionStatus,
    pub page_name: String,
    pub content: serde_json::Value,
    pub result: Option<serde_json::Value>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub published_at: Option<DateTime<Utc>>,
}

impl Store {
    /// The check columns of a submission nobody needs to check (see `mark_submission_pending`).
    fn no_check() -> post_submission::ActiveModel {
        post_submission::ActiveModel {
            reconcile: Set(None),
            next_check_at: Set(None),
            check_until: Set(None),
            check_claimed_by: Set(None),
            check_lease_until: Set(None),
            ..Default::default()
        }
    }

    pub async fn insert_submission(
        &self,
        new: NewSubmission,
        now: DateTime<Utc>,
    ) -> Result<post_submission::Model, DbErr> {
        post_submission::ActiveModel {
            id: Set(super::new_row_id()),
            user_id: Set(new.user_id),
            account_id: Set(new.account_id),
            platform: Set(new.platform),
            post_type: Set(new.post_type),
            post_id: Set(new.post_id),
            status: Set(new.status),
            page_name: Set(new.page_name),
            content: Set(new.content),
            result: Set(new.result),
            steps: Set(None),
            error_code: Set(new.error_code),
            error_message: Set(new.error_message),
            scheduled_post_id: Set(None),
            created_at: Set(now),
            published_at: Set(new.published_at),
            updated_at: Set(now),
            ..Self::no_check()
        }
        .insert(&self.db)
        .await
    }

    /// A page of the user's history, newest first, and the total row count.
    pub async fn list_submissions(
        &self,
        user_id: Uuid,
        page: Page,
    ) -> Result<(Vec<post_submission::Model>, u64), DbErr> {
        let Page { limit, offset } = page;
        let query =
            post_submission::Entity::find().filter(post_submission::Column::UserId.eq(user_id));
        let total = query.clone().count(&self.db).await?;
        let rows = query
            .order_by_desc(post_submission::Column::CreatedAt)
            .order_by_desc(post_submission::Column::Id)
            .limit(limit)
            .offset(offset)
            .all(&self.db)
            .await?;
        Ok((rows, total))
    }

    /// A page of the user's history as the API lists it (see [`HistoryListing`]), newest
    /// first, and the total row count.
    pub async fn history_listing(
        &self,
        user_id: Uuid,
        page: Page,
    ) -> Result<(Vec<HistoryListing>, u64), DbErr> {
        let Page { limit, offset } = page;
        let query =
            post_submission::Entity::find().filter(post_submission::Column::UserId.eq(user_id));
        let total = query.clone().count(&self.db).await?;
        let rows = query
            .order_by_desc(post_submission::Column::CreatedAt)
            .order_by_desc(post_submission::Column::Id)
            .limit(limit)
            .offset(offset)
            .into_partial_model::<HistoryListing>()
            .all(&self.db)
            .await?;
        Ok((rows, total))
    }

    /// Saves the steps recorded so far of an in-progress publish.
    pub async fn record_submission_steps(
        &self,
        submission_id: Uuid,
        steps: PublishSteps,
    ) -> Result<(), DbErr> {
        post_submission::Entity::update_many()
            .col_expr(post_submission::Column::Steps, Expr::value(steps))
            .filter(post_submission::Column::Id.eq(submission_id))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    /// Starts a publish: the row exists (status `publishing`) before the first platform call.
    pub async fn start_submission(
        &self,
        id: Uuid,
        new: NewSubmission,
        scheduled_post_id: Option<Uuid>,
        now: DateTime<Utc>,
    ) -> Result<post_submission::Model, DbErr> {
        post_submission::ActiveModel {
            id: Set(id),
            user_id: Set(new.user_id),
            account_id: Set(new.account_id),
            platform: Set(new.platform),
            post_type: Set(new.post_type),
            post_id: Set(None),
            status: Set(SubmissionStatus::Publishing),
            page_name: Set(new.page_name),
            content: Set(new.content),
            result: Set(None),
            steps: Set(None),
            error_code: Set(None),
            error_message: Set(None),
            scheduled_post_id: Set(scheduled_post_id),
            created_at: Set(now),
            published_at: Set(None),
            updated_at: Set(now),
            ..Self::no_check()
        }
        .insert(&self.db)
        .await
    }

    /// Records a failed publish with the catalogue code and message.
    pub async fn finish_submission_failed(
        &self,
        id: Uuid,
        status: SubmissionStatus,
        error_code: &str,
        error_message: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let txn = self.db.begin().await?;
        let result = post_submission::Entity::update_many()
            .col_expr(
                post_submission::Column::Status,
                Expr::value(status.as_str()),
            )
            .col_expr(post_submission::Column::ErrorCode, Expr::value(error_code))
            .col_expr(
                post_submission::Column::ErrorMessage,
                Expr::value(error_message),
            )
            .col_expr(post_submission::Column::UpdatedAt, Expr::value(now))
            .filter(post_submission::Column::Id.eq(id))
            // Never overwrite an outcome already recorded (a settlement racing a late finish).
            .filter(post_submission::Column::Status.eq(SubmissionStatus::Publishing))
            .exec(&txn)
            .await?;
        // False: the attempt ended (or became a pending check) meanwhile.
        self.end_with_event(txn, id, result.rows_affected == 1)
            .await
    }

    /// One submission (tests and the operator view).
    pub async fn find_submission(&self, id: Uuid) -> Result<Option<post_submission::Model>, DbErr> {
        post_submission::Entity::find_by_id(id).one(&self.db).await
    }

    /// Immediate publishes still `publishing` that started before `before`, or whose instance
    /// has been silent for `takeover_ms` (it died with them in flight).
    pub async fn stale_publishing_submissions(
        &self,
        before: DateTime<Utc>,
        takeover_ms: i64,
    ) -> Result<Vec<post_submission::Model>, DbErr> {
        post_submission::Entity::find()
            .filter(post_submission::Column::Status.eq(SubmissionStatus::Publishing))
            .filter(post_submission::Column::ScheduledPostId.is_null())
            .filter(
                Condition::any()
                    .add(post_submission::Column::CreatedAt.lt(before))
                    .add(self.run_by_a_silent_instance(takeover_ms)),
            )
            .all(&self.db)
            .await
    }

    /// A publish the platform was still processing at our deadline: `publishing → unconfirmed`,
    /// with what is left to do (`reconcile`), the first check at `next_check_at` and the give-up
    /// time `check_until`. False when the row was no longer `publishing`.
    #[allow(clippy::too_many_arguments)]
    pub async fn mark_submission_pending(
        &self,
        id: Uuid,
        reconcile: serde_json::Value,
        steps: Option<PublishSteps>,
        error_code: &str,
        message: &str,
        next_check_at: DateTime<Utc>,
        check_until: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let txn = self.db.begin().await?;
        let mut update = post_submission::Entity::update_many();
        if let Some(steps) = steps {
            update = update.col_expr(post_submission::Column::Steps, Expr::value(steps));
        }
        let result = update
            .col_expr(
                post_submission::Column::Status,
                Expr::value(SubmissionStatus::Unconfirmed.as_str()),
            )
            .col_expr(post_submission::Column::ErrorCode, Expr::value(error_code))
            .col_expr(post_submission::Column::ErrorMessage, Expr::value(message))
            .col_expr(post_submission::Column::Reconcile, Expr::value(reconcile))
            .col_expr(
                post_submission::Column::NextCheckAt,
                Expr::value(next_check_at),
            )
            .col_expr(
                post_submission::Column::CheckUntil,
                Expr::value(check_until),
            )
            .col_expr(post_submission::Column::UpdatedAt, Expr::value(now))
            .filter(post_submission::Column::Id.eq(id))
            .filter(post_submission::Column::Status.eq(SubmissionStatus::Publishing))
            .exec(&txn)
            .await?;
        self.end_with_event(txn, id, result.rows_affected == 1)
            .await
    }

    /// The condition of a submission whose check is due at `now` and not held by a live claim.
    fn check_due(now: DateTime<Utc>) -> Condition {
        Condition::all()
            .add(post_submission::Column::Status.eq(SubmissionStatus::Unconfirmed))
            .add(post_submission::Column::NextCheckAt.lte(now))
            .add(
                Condition::any()
                    .add(post_submission::Column::CheckClaimedBy.is_null())
                    .add(post_submission::Column::CheckLeaseUntil.lt(now)),
            )
    }

    /// Unconfirmed submissions due for a check (and not being checked by a live instance),
    /// earliest first.
    pub async fn due_checks(
        &self,
        now: DateTime<Utc>,
        limit: u64,
    ) -> Result<Vec<post_submission::Model>, DbErr> {
        post_submission::Entity::find()
            .filter(Self::check_due(now))
            .order_by_asc(post_submission::Column::NextCheckAt)
            .limit(limit)
            .all(&self.db)
            .await
    }

    /// Claims a due check for `claimant` until `lease_until`, by one conditional update: of
    /// several instances (or a claim that lapsed and its taker) exactly one gets it.
    pub async fn claim_check(
        &self,
        id: Uuid,
        claimant: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let result = post_submission::Entity::update_many()
            .col_expr(
                post_submission::Column::CheckClaimedBy,
                Expr::value(claimant),
            )
            .col_expr(
                post_submission::Column::CheckLeaseUntil,
                Expr::value(lease_until),
            )
            .filter(post_submission::Column::Id.eq(id))
            .filter(Self::check_due(now))
            .exec(&self.db)
            .await?;
        Ok(result.rows_affected == 1)
    }

    /// The submission is being checked by `claimant`.
    fn check_held(id: Uuid, claimant: &str) -> Condition {
        Condition::all()
            .add(post_submission::Column::Id.eq(id))
            .add(post_submission::Column::Status.eq(SubmissionStatus::Unconfirmed))
            .add(post_submission::Column::NextCheckAt.is_not_null())
            .add(post_submission::Column::CheckClaimedBy.eq(claimant))
    }

    /// Renews `claimant`'s check claim (the fence before a final call a continuation makes).
    pub async fn renew_check_claim(
        &self,
        id: Uuid,
        claimant: &str,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let result = post_submission::Entity::update_many()
            .col_expr(
                post_submission::Column::CheckLeaseUntil,
                Expr::value(lease_until),
            )
            .filter(Self::check_held(id, claimant))
            .exec(&self.db)
            .await?;
        Ok(result.rows_affected == 1)
    }

    /// Ends `claimant`'s check without an outcome: the next one is due at `next_check_at`.
    pub async fn release_check(
        &self,
        id: Uuid,
        claimant: &str,
        next_check_at: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let result = post_submission::Entity::update_many()
            .col_expr(
                post_submission::Column::NextCheckAt,
                Expr::value(next_check_at),
            )
            .col_expr(
                post_submission::Column::CheckClaimedBy,
                Expr::value(None::<String>),
            )
            .col_expr(
                post_submission::Column::CheckLeaseUntil,
                Expr::value(None::<DateTime<Utc>>),
            )
            .filter(Self::check_held(id, claimant))
            .exec(&self.db)
            .await?;
        Ok(result.rows_affected == 1)
    }

    /// The checked publish went out: `unconfirmed → published`, by the claimant.
    pub async fn resolve_check_published(
        &self,
        id: Uuid,
        claimant: &str,
        post_id: &str,
        result: serde_json::Value,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let update = post_submission::Entity::update_many()
            .col_expr(
                post_submission::Column::Status,
                Expr::value(SubmissionStatus::Published.as_str()),
            )
            .col_expr(post_submission::Column::PostId, Expr::value(post_id))
            .col_expr(post_submission::Column::Result, Expr::value(result))
            .col_expr(post_submission::Column::PublishedAt, Expr::value(now))
            .col_expr(
                post_submission::Column::ErrorCode,
                Expr::value(None::<String>),
            )
            .col_expr(
                post_submission::Column::ErrorMessage,
                Expr::value(None::<String>),
            );
        let txn = self.db.begin().await?;
        let result = Self::end_check(update, now)
            .filter(Self::check_held(id, claimant))
            .exec(&txn)
            .await?;
        self.end_with_event(txn, id, result.rows_affected == 1)
            .await
    }

    /// The check ends without the post out: `failed` (it did not go out) or `unconfirmed` (no
    /// more checks; the message says why), by the claimant.
    pub async fn resolve_check(
        &self,
        id: Uuid,
        claimant: &str,
        status: SubmissionStatus,
        error_code: &str,
        message: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let update = post_submission::Entity::update_many()
            .col_expr(
                post_submission::Column::Status,
                Expr::value(status.as_str()),
            )
            .col_expr(post_submission::Column::ErrorCode, Expr::value(error_code))
            .col_expr(post_submission::Column::ErrorMessage, Expr::value(message));
        let txn = self.db.begin().await?;
        let result = Self::end_check(update, now)
            .filter(Self::check_held(id, claimant))
            .exec(&txn)
            .await?;
        self.end_with_event(txn, id, result.rows_affected == 1)
            .await
    }

    /// Commits an outcome's write, with its webhook event when it was written (`ended`).
    async fn end_with_event(
        &self,
        txn: sea_orm::DatabaseTransaction,
        id: Uuid,
        ended: bool,
    ) -> Result<bool, DbErr> {
        if ended {
            super::outbox::post_events(&txn, &[id]).await?;
        }
        txn.commit().await?;
        if ended {
            self.outbox_may_have_events();
        }
        Ok(ended)
    }

    fn end_check(
        update: sea_orm::UpdateMany<post_submission::Entity>,
        now: DateTime<Utc>,
    ) -> sea_orm::UpdateMany<post_submission::Entity> {
        update
            .col_expr(
                post_submission::Column::NextCheckAt,
                Expr::value(None::<DateTime<Utc>>),
            )
            .col_expr(
                post_submission::Column::CheckClaimedBy,
                Expr::value(None::<String>),
            )
            .col_expr(
                post_submission::Column::CheckLeaseUntil,
                Expr::value(None::<DateTime<Utc>>),
            )
            .col_expr(post_submission::Column::UpdatedAt, Expr::value(now))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use sea_orm::{ConnectionTrait, DbBackend, QueryTrait, Statement};

    use super::*;

    /// The reconciler's look for due checks is served by the index of due checks, and that
    /// index holds only rows under check: an ordinary history row (no `next_check_at`) costs
    /// its insert no write to it.
    #[tokio::test]
    async fn due_checks_use_an_index_of_only_the_rows_under_check() {
        let (_dir, store) = crate::store::temp_sqlite_store(1).await;
        let query = post_submission::Entity::find()
            .filter(Store::check_due(Utc::now()))
            .order_by_asc(post_submission::Column::NextCheckAt)
            .limit(10)
            .build(DbBackend::Sqlite);
        let plan = store
            .db
            .query_all_raw(Statement::from_sql_and_values(
                DbBackend::Sqlite,
                format!("EXPLAIN QUERY PLAN {}", query.sql),
                query.values.map(|values| values.0).unwrap_or_default(),
            ))
            .await
            .unwrap();
        let steps: Vec<String> = plan
            .iter()
            .map(|row| row.try_get_by_index::<String>(3).unwrap())
            .collect();
        assert!(
            steps
                .iter()
                .any(|step| step.contains("USING INDEX idx_post_submissions_due_checks")),
            "{steps:?}"
        );
        let definition = store
            .db
            .query_one_raw(Statement::from_string(
                DbBackend::Sqlite,
                "SELECT sql FROM sqlite_master WHERE name = 'idx_post_submissions_due_checks'",
            ))
            .await
            .unwrap()
            .unwrap()
            .try_get_by_index::<String>(0)
            .unwrap();
        assert!(
            definition.ends_with("WHERE next_check_at IS NOT NULL"),
            "{definition}"
        );
    }
}
