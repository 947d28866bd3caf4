//! Monthly usage counters. Admission is one atomic statement, so the count is exact under any
//! concurrency and across instances sharing one database: a call is admitted only if the
//! increment happened, and a refused call leaves the counter untouched.

use chrono::{DateTime, Utc};
use entity::usage_counter;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Statement, Value};
use uuid::Uuid;

use super::{Store, placeholder};

/// The outcome of trying to count one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    pub admitted: bool,
    /// Calls counted in the period, including this one when admitted.
    pub count: i64,
}

impl Store {
    /// Counts one call in `period_key` if the count is below `limit` (`None`: no limit).
    #[tracing::instrument(skip(self, now))]
    pub async fn reserve_call(
        &self,
        user_id: Uuid,
        period_key: &str,
        limit: Option<i64>,
        now: DateTime<Utc>,
    ) -> Result<Reservation, DbErr> {
        let cap = limit.unwrap_or(i64::MAX);
        if cap <= 0 {
            let count = self.period_usage(user_id, period_key).await?;
            return Ok(Reservation {
                admitted: false,
                count,
            });
        }
        let backend = self.backend();
        let p = |n| placeholder(backend, n);
        // Insert-or-increment, guarded by the cap: when the guard fails no row is returned.
        let sql = format!(
            "INSERT INTO usage_counters (user_id, period_start, call_count, updated_at) \
             VALUES ({}, {}, 1, {}) \
             ON CONFLICT (user_id, period_start) DO UPDATE \
             SET call_count = usage_counters.call_count + 1, updated_at = excluded.updated_at \
             WHERE usage_counters.call_count < {} \
             RETURNING call_count",
            p(1),
            p(2),
            p(3),
            p(4)
        );
        let values: Vec<Value> = vec![
            user_id.into(),
            period_key.to_string().into(),
            now.into(),
            cap.into(),
        ];
        let row = self
            .db
            .query_one_raw(Statement::from_sql_and_values(backend, sql, values))
            .await?;
        match row {
            Some(row) => Ok(Reservation {
                admitted: true,
                count: row.try_get::<i64>("", "call_count")?,
            }),
            None => Ok(Reservation {
                admitted: false,
                count: self.period_usage(user_id, period_key).await?,
            }),
        }
    }

    /// Calls counted in a period (0 when none).
    /// The written counts of several users' periods, in one query: `(user, period key)` →
    /// count; a period without a row is absent (0 calls).
    pub async fn periods_usage(
        &self,
        periods: &[(Uuid, String)],
    ) -> Result<std::collections::HashMap<(Uuid, String), i64>, DbErr> {
        if periods.is_empty() {
            return Ok(Default::default());
        }
        let wanted: std::collections::HashSet<&(Uuid, String)> = periods.iter().collect();
        let rows = usage_counter::Entity::find()
            .filter(usage_counter::Column::UserId.is_in(periods.iter().map(|(user, _)| *user)))
            .all(&self.db)
            .await?;
        Ok(rows
            .into_iter()
            .map(|row| ((row.user_id, row.period_start), row.call_count))
            .filter(|(key, _)| wanted.contains(key))
            .collect())
    }

    pub async fn period_usage(&self, user_id: Uuid, period_key: &str) -> Result<i64, DbErr> {
        let row = usage_counter::Entity::find()
            .filter(usage_counter::Column::UserId.eq(user_id))
            .filter(usage_counter::Column::PeriodStart.eq(period_key))
            .one(&self.db)
            .await?;
        Ok(row.map(|r| r.call_count).unwrap_or(0))
    }

    /// Gives back a call counted by [`Store::reserve_call`] (a reserved publish that failed).
    pub async fn release_call(&self, user_id: Uuid, period_key: &str) -> Result<(), DbErr> {
        use sea_orm::sea_query::{Expr, ExprTrait};
        usage_counter::Entity::update_many()
            .col_expr(
                usage_counter::Column::CallCount,
                Expr::col(usage_counter::Column::CallCount).sub(1),
            )
            .filter(usage_counter::Column::UserId.eq(user_id))
            .filter(usage_counter::Column::PeriodStart.eq(period_key))
            .filter(usage_counter::Column::CallCount.gt(0))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    /// Adds `n` calls to a period's count (unlimited plans, written in batches).
    pub async fn add_usage(
        &self,
        user_id: Uuid,
        period_key: &str,
        n: i64,
        now: DateTime<Utc>,
    ) -> Result<(), DbErr> {
        let backend = self.backend();
        let p = |i| placeholder(backend, i);
        let sql = format!(
            "INSERT INTO usage_counters (user_id, period_start, call_count, updated_at) \
             VALUES ({}, {}, {}, {}) \
             ON CONFLICT (user_id, period_start) DO UPDATE \
             SET call_count = usage_counters.call_count + excluded.call_count, updated_at = excluded.updated_at",
            p(1),
            p(2),
            p(3),
            p(4)
        );
        let values: Vec<Value> = vec![
            user_id.into(),
            period_key.to_string().into(),
            n.into(),
            now.into(),
        ];
        self.db
            .execute_raw(Statement::from_sql_and_values(backend, sql, values))
            .await?;
        Ok(())
    }
}
