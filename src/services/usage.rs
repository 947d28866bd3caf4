//! Metering calls against a plan's monthly allowance (spec §8) and reading a user's usage: the
//! API key's middleware and the dashboard's compose form meter alike, so a post sent from a page
//! costs what the same post sent with a key costs.

use crate::{
    clock::SharedClock,
    error::{ApiError, QuotaExceeded, RateLimitHeaders},
    store::{Reservation, Store, last_used::LastUsedRecorder},
    usage::{self, Plan, UsagePeriod},
};

/// What metering and usage reads work with.
pub struct UsageService {
    store: Store,
    clock: SharedClock,
    /// Unlimited plans' calls are counted here and written in batches.
    last_used: LastUsedRecorder,
    /// The free plan's monthly allowance (`usage.free_monthly_limit`).
    free_monthly_limit: i64,
}

/// A user's usage of the current period, as `GET /api/subscription/status` and the dashboard
/// show it.
pub struct UsageNow {
    pub period: UsagePeriod,
    /// Calls counted this period.
    pub used: i64,
    /// The plan's allowance; -1 for unlimited.
    pub limit: i64,
    /// What is left; -1 for unlimited.
    pub remaining: i64,
}

impl UsageNow {
    fn new(free_monthly_limit: i64, plan: Plan, period: UsagePeriod, used: i64) -> Self {
        let (limit, remaining) = match plan.monthly_limit(free_monthly_limit) {
            Some(limit) => (limit, (limit - used).max(0)),
            None => (-1, -1),
        };
        Self {
            period,
            used,
            limit,
            remaining,
        }
    }
}

impl UsageService {
    pub fn new(
        store: Store,
        clock: SharedClock,
        last_used: LastUsedRecorder,
        free_monthly_limit: i64,
    ) -> Self {
        Self {
            store,
            clock,
            last_used,
            free_monthly_limit,
        }
    }

    /// Counts one call against `user`'s monthly allowance (spec §8), refusing with the quota body
    /// when it is used up. Shared by the API key's middleware and the dashboard's compose form, so a
    /// post sent from a page costs what the same post sent with a key costs. `accept_language`
    /// picks the language of the quota message.
    pub async fn meter(
        &self,
        user: &entity::user::Model,
        accept_language: Option<&str>,
    ) -> Result<(Plan, RateLimitHeaders), ApiError> {
        let now = self.clock.now();
        let plan = user.plan;
        let period = usage::usage_period(user.created_at, now);
        let limit = plan.monthly_limit(self.free_monthly_limit);
        // A limited plan is admitted by one atomic conditional write; an unlimited one has nothing
        // to refuse, so its call is counted in memory and written in batches.
        let reservation = if limit.is_some() {
            self.store
                .reserve_call(user.id, &period.key(), limit, now)
                .await?
        } else {
            self.last_used.count_call(user.id, period.key());
            Reservation {
                admitted: true,
                count: 0,
            }
        };
        let reset = period.end.timestamp();
        if !reservation.admitted {
            let limit = limit.unwrap_or(-1);
            let locale = usage::negotiate_locale(accept_language);
            let resets_on = period.end.format("%Y-%m-%d").to_string();
            let (error, error_en) = usage::quota_messages(locale, limit, &resets_on);
            let quota = QuotaExceeded {
                error,
                error_en,
                current_usage: reservation.count,
                limit,
                plan: plan.as_str().to_string(),
            };
            let headers = RateLimitHeaders {
                limit,
                remaining: 0,
                reset,
            };
            return Err(ApiError::quota_exceeded(quota, headers));
        }
        let allowance = match limit {
            Some(limit) => RateLimitHeaders {
                limit,
                remaining: (limit - reservation.count).max(0),
                reset,
            },
            None => RateLimitHeaders {
                limit: -1,
                remaining: -1,
                reset,
            },
        };
        Ok((plan, allowance))
    }

    /// The allowance of `user` as it stands, counting nothing: for the calls that are not
    /// metered (reading a post's outcome), which still carry the `X-RateLimit-*` values. One
    /// read on a limited plan (whose counts are always written); none on an unlimited one.
    pub async fn peek(
        &self,
        user: &entity::user::Model,
    ) -> Result<(Plan, RateLimitHeaders), ApiError> {
        let plan = user.plan;
        let period = usage::usage_period(user.created_at, self.clock.now());
        let reset = period.end.timestamp();
        let allowance = match plan.monthly_limit(self.free_monthly_limit) {
            Some(limit) => {
                let used = self.store.period_usage(user.id, &period.key()).await?;
                RateLimitHeaders {
                    limit,
                    remaining: (limit - used).max(0),
                    reset,
                }
            }
            None => RateLimitHeaders {
                limit: -1,
                remaining: -1,
                reset,
            },
        };
        Ok((plan, allowance))
    }

    /// Reads the current period's usage of `user`.
    pub async fn now(&self, user: &entity::user::Model) -> Result<UsageNow, ApiError> {
        let period = usage::usage_period(user.created_at, self.clock.now());
        // Written counts plus this instance's counts not yet written (unlimited plans), read
        // while no flush is moving counts from one to the other.
        let used = {
            let _reading = self.last_used.reading_usage().await;
            self.store.period_usage(user.id, &period.key()).await?
                + self.last_used.pending_calls(user.id, &period.key())
        };
        Ok(UsageNow::new(
            self.free_monthly_limit,
            user.plan,
            period,
            used,
        ))
    }

    /// [`Self::now`] for many users with one query (the operator's usage table, which refreshes
    /// itself: a query per user would be hundreds every few seconds).
    pub async fn of_users(&self, users: &[entity::user::Model]) -> Result<Vec<UsageNow>, ApiError> {
        let now = self.clock.now();
        let periods: Vec<_> = users
            .iter()
            .map(|user| usage::usage_period(user.created_at, now))
            .collect();
        let keys: Vec<_> = users
            .iter()
            .zip(&periods)
            .map(|(user, period)| (user.id, period.key()))
            .collect();
        let _reading = self.last_used.reading_usage().await;
        let written = self.store.periods_usage(&keys).await?;
        Ok(users
            .iter()
            .zip(periods)
            .zip(keys)
            .map(|((user, period), key)| {
                let used = written.get(&key).copied().unwrap_or(0)
                    + self.last_used.pending_calls(user.id, &key.1);
                UsageNow::new(self.free_monthly_limit, user.plan, period, used)
            })
            .collect())
    }
}
