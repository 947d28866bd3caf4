//! Daily performance snapshots. The row for `(account, date)` is unique and doubles as the
//! collection claim: it is inserted (or taken over) as `collecting` with a lease by one
//! conditional statement, so two collectors never fetch the same date, and a claim left by a
//! crashed process is taken over once its lease has passed.

use chrono::{DateTime, Utc};
use entity::{account, performance_snapshot as snapshot};
use sea_orm::{
    ColumnTrait, Condition, DbErr, EntityTrait, QueryFilter, QueryOrder, Set,
    sea_query::{Expr, ExprTrait, OnConflict},
};
use serde_json::json;
use uuid::Uuid;

use super::Store;
use crate::domain::daily::DailyMetrics;

/// Statuses of a finished snapshot (the `collecting` claim is not one).
pub const FINISHED: [&str; 3] = ["success", "partial", "failed"];
/// Statuses that hold the date's numbers.
pub const COLLECTED: [&str; 2] = ["success", "partial"];

/// Who wants to collect which date of which account.
#[derive(Debug, Clone)]
pub struct SnapshotClaim<'a> {
    pub account: &'a account::Model,
    /// `YYYY-MM-DD`.
    pub date: &'a str,
    pub claimant: &'a str,
    pub now: DateTime<Utc>,
    pub lease_until: DateTime<Utc>,
    /// Also take a date that is already collected (backfill and manual collection re-collect;
    /// the daily run does not).
    pub recollect: bool,
    /// A `failed` date is taken again only while it has had fewer attempts than this
    /// (`None`: always).
    pub max_attempts: Option<i32>,
}

impl Store {
    /// Accounts the daily collection covers: connected (not disconnected) ones, oldest first.
    pub async fn collectable_accounts(
        &self,
        account_id: Option<Uuid>,
        user_id: Option<Uuid>,
    ) -> Result<Vec<account::Model>, DbErr> {
        let mut query = account::Entity::find().filter(account::Column::Disabled.eq(false));
        if let Some(id) = account_id {
            query = query.filter(account::Column::Id.eq(id));
        }
        if let Some(user) = user_id {
            query = query.filter(account::Column::UserId.eq(user));
        }
        query
            .order_by_asc(account::Column::CreatedAt)
            .order_by_asc(account::Column::Id)
            .all(&self.db)
            .await
    }

    /// Takes the collection of one date for `claimant`. True when the caller should collect it;
    /// false when it is collected already (and `recollect` is off) or another collector holds a
    /// live claim.
    pub async fn claim_snapshot(&self, claim: SnapshotClaim<'_>) -> Result<bool, DbErr> {
        let inserted = snapshot::Entity::insert(snapshot::ActiveModel {
            id: Set(Uuid::new_v4()),
            account_id: Set(claim.account.id),
            user_id: Set(claim.account.user_id),
            platform: Set(claim.account.platform),
            snapshot_date: Set(claim.date.to_string()),
            page_name: Set(claim.account.display_name.clone()),
            posts_count: Set(0),
            total_post_views: Set(None),
            page_metrics: Set(json!({})),
            failed_metrics: Set(json!([])),
            status: Set("collecting".into()),
            error: Set(None),
            attempts: Set(1),
            claimed_by: Set(Some(claim.claimant.to_string())),
            lease_until: Set(Some(claim.lease_until)),
            collected_at: Set(None),
            created_at: Set(claim.now),
            updated_at: Set(claim.now),
        })
        .on_conflict(
            OnConflict::columns([snapshot::Column::AccountId, snapshot::Column::SnapshotDate])
                .do_nothing()
                .to_owned(),
        )
        .exec_without_returning(&self.db)
        .await?;
        if inserted == 1 {
            return Ok(true);
        }
        // The row exists: take it over if it failed, if its claim is dead, or on request.
        let mut retry_failed = Condition::all().add(snapshot::Column::Status.eq("failed"));
        if let Some(max) = claim.max_attempts {
            retry_failed = retry_failed.add(snapshot::Column::Attempts.lt(max));
        }
        let mut takeable = Condition::any().add(retry_failed).add(
            Condition::all()
                .add(snapshot::Column::Status.eq("collecting"))
                .add(snapshot::Column::LeaseUntil.lt(claim.now)),
        );
        if claim.recollect {
            takeable = takeable.add(snapshot::Column::Status.is_in(COLLECTED));
        }
        let taken = snapshot::Entity::update_many()
            .col_expr(snapshot::Column::Status, Expr::value("collecting"))
            .col_expr(
                snapshot::Column::ClaimedBy,
                Expr::value(claim.claimant.to_string()),
            )
            .col_expr(snapshot::Column::LeaseUntil, Expr::value(claim.lease_until))
            .col_expr(
                snapshot::Column::Attempts,
                Expr::col(snapshot::Column::Attempts).add(1),
            )
            .col_expr(snapshot::Column::UpdatedAt, Expr::value(claim.now))
            .filter(snapshot::Column::AccountId.eq(claim.account.id))
            .filter(snapshot::Column::SnapshotDate.eq(claim.date))
            .filter(takeable)
            .exec(&self.db)
            .await?;
        Ok(taken.rows_affected == 1)
    }

    /// Stores what a claimed collection got, if `claimant` still holds the claim. `Err` is the
    /// reason the account could not be collected.
    pub async fn finish_snapshot(
        &self,
        account_id: Uuid,
        date: &str,
        claimant: &str,
        page_name: &str,
        result: &Result<DailyMetrics, String>,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let mut update = snapshot::Entity::update_many()
            .col_expr(
                snapshot::Column::ClaimedBy,
                Expr::value(Option::<String>::None),
            )
            .col_expr(
                snapshot::Column::LeaseUntil,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .col_expr(
                snapshot::Column::PageName,
                Expr::value(page_name.to_string()),
            )
            .col_expr(snapshot::Column::UpdatedAt, Expr::value(now));
        update = match result {
            Ok(metrics) => {
                let status = if metrics.failed_metrics.is_empty() {
                    "success"
                } else {
                    "partial"
                };
                update
                    .col_expr(snapshot::Column::Status, Expr::value(status))
                    .col_expr(
                        snapshot::Column::PageMetrics,
                        Expr::value(json!(metrics.page_metrics)),
                    )
                    .col_expr(
                        snapshot::Column::FailedMetrics,
                        Expr::value(json!(metrics.failed_metrics)),
                    )
                    .col_expr(
                        snapshot::Column::PostsCount,
                        Expr::value(i64::try_from(metrics.posts_count).unwrap_or(i64::MAX)),
                    )
                    .col_expr(
                        snapshot::Column::TotalPostViews,
                        Expr::value(
                            metrics
                                .total_post_views
                                .map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
                        ),
                    )
                    .col_expr(snapshot::Column::Error, Expr::value(Option::<String>::None))
                    .col_expr(snapshot::Column::CollectedAt, Expr::value(now))
            }
            // A failure keeps numbers an earlier collection got (a re-collect that fails does
            // not erase them) but says it failed.
            Err(reason) => update
                .col_expr(snapshot::Column::Status, Expr::value("failed"))
                .col_expr(snapshot::Column::Error, Expr::value(reason.clone()))
                .col_expr(snapshot::Column::CollectedAt, Expr::value(now)),
        };
        let result = update
            .filter(snapshot::Column::AccountId.eq(account_id))
            .filter(snapshot::Column::SnapshotDate.eq(date))
            .filter(snapshot::Column::Status.eq("collecting"))
            .filter(snapshot::Column::ClaimedBy.eq(claimant))
            .exec(&self.db)
            .await?;
        Ok(result.rows_affected == 1)
    }

    /// Finished snapshots dated `from` or later, newest date first; only `user_id`'s when given.
    pub async fn snapshots_since(
        &self,
        from: &str,
        user_id: Option<Uuid>,
    ) -> Result<Vec<snapshot::Model>, DbErr> {
        let mut query = snapshot::Entity::find()
            .filter(snapshot::Column::SnapshotDate.gte(from))
            .filter(snapshot::Column::Status.is_in(FINISHED));
        if let Some(user) = user_id {
            query = query.filter(snapshot::Column::UserId.eq(user));
        }
        query
            .order_by_desc(snapshot::Column::SnapshotDate)
            .order_by_asc(snapshot::Column::PageName)
            .all(&self.db)
            .await
    }

    /// The account's collected snapshots (`success` or `partial`) dated `from..=to`, oldest
    /// first (the dashboard's Performance charts).
    pub async fn account_snapshots(
        &self,
        account_id: Uuid,
        from: &str,
        to: &str,
    ) -> Result<Vec<snapshot::Model>, DbErr> {
        snapshot::Entity::find()
            .filter(snapshot::Column::AccountId.eq(account_id))
            .filter(snapshot::Column::SnapshotDate.gte(from))
            .filter(snapshot::Column::SnapshotDate.lte(to))
            .filter(snapshot::Column::Status.is_in(COLLECTED))
            .order_by_asc(snapshot::Column::SnapshotDate)
            .all(&self.db)
            .await
    }

    /// Dates in `from..=to` for which the account has its numbers (`success` or `partial`).
    pub async fn collected_dates(
        &self,
        account_id: Uuid,
        from: &str,
        to: &str,
    ) -> Result<Vec<String>, DbErr> {
        let rows = snapshot::Entity::find()
            .filter(snapshot::Column::AccountId.eq(account_id))
            .filter(snapshot::Column::SnapshotDate.gte(from))
            .filter(snapshot::Column::SnapshotDate.lte(to))
            .filter(snapshot::Column::Status.is_in(COLLECTED))
            .all(&self.db)
            .await?;
        Ok(rows.into_iter().map(|row| row.snapshot_date).collect())
    }

    /// Connected accounts whose snapshot of `date` is still to be made: none yet, failed with
    /// attempts left, or claimed by a collector whose lease has passed.
    pub async fn accounts_needing_collection(
        &self,
        date: &str,
        max_attempts: i32,
        now: DateTime<Utc>,
    ) -> Result<Vec<account::Model>, DbErr> {
        let settled = Condition::any()
            .add(snapshot::Column::Status.is_in(COLLECTED))
            .add(
                Condition::all()
                    .add(snapshot::Column::Status.eq("failed"))
                    .add(snapshot::Column::Attempts.gte(max_attempts)),
            )
            .add(
                Condition::all()
                    .add(snapshot::Column::Status.eq("collecting"))
                    .add(snapshot::Column::LeaseUntil.gte(now)),
            );
        let done: std::collections::HashSet<Uuid> = snapshot::Entity::find()
            .filter(snapshot::Column::SnapshotDate.eq(date))
            .filter(settled)
            .all(&self.db)
            .await?
            .into_iter()
            .map(|row| row.account_id)
            .collect();
        Ok(self
            .collectable_accounts(None, None)
            .await?
            .into_iter()
            .filter(|account| !done.contains(&account.id))
            .collect())
    }

    /// One snapshot (tests and the backfill response read it back).
    pub async fn find_snapshot(
        &self,
        account_id: Uuid,
        date: &str,
    ) -> Result<Option<snapshot::Model>, DbErr> {
        snapshot::Entity::find()
            .filter(snapshot::Column::AccountId.eq(account_id))
            .filter(snapshot::Column::SnapshotDate.eq(date))
            .one(&self.db)
            .await
    }

    /// How many snapshot rows the account has for `date` (tests check it is never above one).
    pub async fn count_snapshots(&self, date: &str) -> Result<u64, DbErr> {
        use sea_orm::PaginatorTrait;
        snapshot::Entity::find()
            .filter(snapshot::Column::SnapshotDate.eq(date))
            .count(&self.db)
            .await
    }
}
