//! Per-account rate limiters (spec §8), one governor GCRA limiter per account. They live in the
//! supervisor, not in the actor, so an actor that stops when idle and starts again keeps its
//! account's budget.
//!
//! Limits: facebook 200 calls/h per page, instagram 200/h, threads 250/h, x 300 per 3 h, tiktok
//! 6 inits/min (TikTok's own limit; the spec gives none), youtube 10,000 quota units a day with
//! configurable costs per operation.

use std::{
    num::NonZeroU32,
    sync::Mutex,
    time::{Duration, Instant},
};

use governor::{
    Quota, RateLimiter,
    clock::{Clock, MonotonicClock},
    middleware::StateInformationMiddleware,
    state::{InMemoryState, NotKeyed},
};
use serde::Serialize;

use crate::{
    cluster::Budget,
    config::PublishingConfig,
    domain::plan::{Platform, PublishPlan, YoutubePost},
    error::ApiError,
};

/// A limiter with what it needs to describe itself. One per account that had an actor in this
/// process, so kept compact: the clock is the governor limiter's own, and std's monotonic clock
/// (nothing to store) rather than governor's default quanta clock (its calibration, in every
/// limiter); the period in seconds.
pub struct AccountLimiter {
    limiter: RateLimiter<NotKeyed, InMemoryState, MonotonicClock, StateInformationMiddleware>,
    /// Units left after the latest admission, and when (governor cannot be asked without
    /// spending; the operator view extrapolates from this).
    last: Mutex<Option<(u32, Instant)>>,
    /// Units in one full period (the `X-RateLimit-Limit` value).
    capacity: u32,
    /// Length of the period the capacity refills over, in seconds.
    period_secs: u32,
    youtube_costs: (u32, u32),
    /// Whether the units are youtube quota units (otherwise API calls).
    quota_units: bool,
}

/// The limiter as the operator view shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LimiterState {
    pub capacity: u32,
    pub period_secs: u64,
    /// `calls` or `quota units`.
    #[schema(value_type = String)]
    pub unit: &'static str,
    /// Units available now (estimated from the latest admission).
    pub remaining: u32,
    /// Seconds until the bucket is full again.
    pub full_in_secs: u64,
}

impl AccountLimiter {
    pub fn for_platform(platform: Platform, config: &PublishingConfig) -> Self {
        let (capacity, period_secs) = match platform {
            Platform::Facebook => (config.facebook_calls_per_hour, 3_600),
            Platform::Instagram => (config.instagram_calls_per_hour, 3_600),
            Platform::Threads => (config.threads_calls_per_hour, 3_600),
            Platform::X => (config.x_calls_per_3_hours, 3 * 3_600),
            Platform::Tiktok => (config.tiktok_calls_per_minute, 60),
            Platform::Youtube => (config.youtube_daily_units, 86_400),
        };
        let capacity = capacity.max(1);
        let period = Duration::from_secs(u64::from(period_secs));
        let burst = NonZeroU32::new(capacity).unwrap_or(NonZeroU32::MIN);
        // One unit comes back every period/capacity; a full bucket holds `capacity`.
        let quota = Quota::with_period(period / capacity)
            .unwrap_or_else(|| Quota::per_second(burst))
            .allow_burst(burst);
        Self {
            limiter: RateLimiter::direct_with_clock(quota, MonotonicClock)
                .with_middleware::<StateInformationMiddleware>(),
            last: Mutex::new(None),
            capacity,
            period_secs,
            youtube_costs: (
                config.youtube_video_insert_cost,
                config.youtube_thumbnail_set_cost,
            ),
            quota_units: platform == Platform::Youtube,
        }
    }

    /// Units in one full period.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    pub fn period(&self) -> Duration {
        Duration::from_secs(u64::from(self.period_secs))
    }

    /// What the units are: `calls` or `quota units`.
    fn unit(&self) -> &'static str {
        if self.quota_units {
            "quota units"
        } else {
            "calls"
        }
    }

    /// Units a plan takes: API calls, or youtube quota units by operation cost.
    pub fn cost(&self, plan: &PublishPlan) -> u32 {
        match plan {
            PublishPlan::Youtube(YoutubePost { thumbnail, .. }) => {
                let (insert, thumbnail_cost) = self.youtube_costs;
                // + 1 for each status poll list call is small next to these; count two.
                insert
                    + if thumbnail.is_some() {
                        thumbnail_cost
                    } else {
                        0
                    }
                    + 2
            }
            _ => plan.estimated_calls(),
        }
    }

    /// Takes the plan's units, or refuses with 429 `RateLimitExceeded`, `retry_after` and the
    /// limiter's headers.
    pub fn admit(&self, plan: &PublishPlan) -> Result<(), ApiError> {
        self.admit_units(self.cost(plan))
    }

    /// Takes `units` (API calls, or youtube quota units), or refuses like [`Self::admit`].
    pub fn admit_units(&self, units: u32) -> Result<(), ApiError> {
        let cost = units.clamp(1, self.capacity);
        let n = NonZeroU32::new(cost).unwrap_or(NonZeroU32::MIN);
        let wait = match self.limiter.check_n(n) {
            Ok(Ok(snapshot)) => {
                *self.last.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some((snapshot.remaining_burst_capacity(), Instant::now()));
                return Ok(());
            }
            Ok(Err(not_until)) => not_until.wait_time_from(self.limiter.clock().now()),
            // Cannot happen: cost is clamped to the capacity.
            Err(_) => self.period(),
        };
        Err(self.refusal(wait.as_secs().max(1) + u64::from(wait.subsec_nanos() > 0)))
    }

    /// `units` of this limiter's budget, as the instances share it.
    pub fn budget(&self, units: u32) -> Budget {
        Budget {
            units,
            capacity: self.capacity,
            period: self.period(),
            unit: self.unit(),
        }
    }

    /// The 429 `RateLimitExceeded` of an empty bucket, with `retry_after` and the limiter's
    /// headers (this instance's limiter, or the budget the instances share).
    pub fn refusal(&self, retry_after: u64) -> ApiError {
        self.budget(0).refusal(retry_after)
    }

    pub fn state(&self) -> LimiterState {
        let per_unit = self.period() / self.capacity;
        let remaining = match *self.last.lock().unwrap_or_else(|p| p.into_inner()) {
            None => self.capacity,
            Some((left, at)) => {
                let regained = (at.elapsed().as_nanos() / per_unit.as_nanos().max(1)) as u64;
                (u64::from(left) + regained).min(u64::from(self.capacity)) as u32
            }
        };
        LimiterState {
            capacity: self.capacity,
            period_secs: u64::from(self.period_secs),
            unit: self.unit(),
            remaining,
            full_in_secs: (per_unit * (self.capacity - remaining)).as_secs(),
        }
    }
}
