//! The work the service does for accounts: publishing through the account actors
//! (`[publishing]`), publishing due scheduled posts (`[scheduler]`) and the daily performance
//! snapshots (`[collector]`).

use std::num::NonZeroUsize;

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Publishing: account actors, their limiters and queues, media checks and request time limits.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct PublishingConfig {
    /// Publishes waiting per account (the one in flight not counted); more answer 503.
    pub queue_capacity: usize,
    /// An account actor with nothing to do stops after this long; the next request restarts it.
    pub actor_idle_secs: u64,
    /// Threads (actix arbiters) the account actors are spread over, chosen by a hash of the
    /// account id, so one account's heavy upload only delays the accounts sharing its thread.
    /// With `actors_on_http_workers`, these host every actor not started by a publish request.
    /// Unset: one per core. See [`Self::actor_arbiters`].
    pub actor_arbiters: Option<usize>,
    /// An actor started by a publish request (`POST /v2/posts`) runs on the HTTP worker thread
    /// serving it, so that worker's requests for the account reach it without a thread hand-over (a
    /// wait for a core on a busy machine). Off: every actor runs on the `actor_arbiters` threads.
    pub actors_on_http_workers: bool,
    /// Time limits of `POST /v2/posts` (spec §8); past them the caller gets 504 `Timeout` and the
    /// publish goes on and lands in the history.
    pub request_timeout_secs: u64,
    pub video_timeout_secs: u64,
    pub thread_timeout_secs: u64,
    /// Platform API calls allowed per account (spec §8).
    pub facebook_calls_per_hour: u32,
    pub instagram_calls_per_hour: u32,
    pub threads_calls_per_hour: u32,
    pub x_calls_per_3_hours: u32,
    /// TikTok's limit is not in the spec; 6 video inits per minute per token is TikTok's own.
    pub tiktok_calls_per_minute: u32,
    /// YouTube's daily quota and what each operation costs of it.
    pub youtube_daily_units: u32,
    pub youtube_video_insert_cost: u32,
    pub youtube_thumbnail_set_cost: u32,
    /// x posts per user per usage month, across all of the user's x accounts (spec §8).
    pub x_monthly_posts: i64,
    /// Largest accepted media file.
    pub max_media_bytes: u64,
    /// `host:port` pairs media URLs may use even though they resolve to a loopback or private
    /// address (and may stay on plain http). Empty in production.
    pub media_allow_hosts: Vec<String>,
    /// A publish the platform was still processing at `platforms.processing_timeout_secs` is
    /// `unconfirmed` and checked again this often (through its account's limiter) until the
    /// platform says published or failed.
    pub unconfirmed_check_interval_ms: u64,
    /// After this long the service stops checking; the post stays `unconfirmed`, saying so.
    pub unconfirmed_check_horizon_secs: u64,
}

impl Default for PublishingConfig {
    fn default() -> Self {
        Self {
            queue_capacity: 32,
            actor_idle_secs: 600,
            actor_arbiters: None,
            actors_on_http_workers: true,
            request_timeout_secs: 60,
            video_timeout_secs: 300,
            thread_timeout_secs: 360,
            facebook_calls_per_hour: 200,
            instagram_calls_per_hour: 200,
            threads_calls_per_hour: 250,
            x_calls_per_3_hours: 300,
            tiktok_calls_per_minute: 6,
            youtube_daily_units: 10_000,
            youtube_video_insert_cost: 1_600,
            youtube_thumbnail_set_cost: 50,
            x_monthly_posts: 60,
            max_media_bytes: 100 * 1024 * 1024,
            media_allow_hosts: Vec::new(),
            unconfirmed_check_interval_ms: 30_000,
            // Instagram and Threads containers expire unpublished after 24 h.
            unconfirmed_check_horizon_secs: 86_400,
        }
    }
}

/// Most arbiter threads `publishing.actor_arbiters` may ask for: more than this is a typo, not
/// a deployment (each is an OS thread with its own runtime).
pub const MAX_ACTOR_ARBITERS: usize = 256;

impl PublishingConfig {
    /// How many arbiters the account actors run on, checked: unset means one per core (1 when
    /// the core count is unknown); 0 would leave the actors nowhere to run, and more than
    /// [`MAX_ACTOR_ARBITERS`] is refused rather than spawning that many threads.
    pub fn actor_arbiters(&self) -> Result<NonZeroUsize, ConfigError> {
        const KEY: &str = "publishing.actor_arbiters";
        match self.actor_arbiters {
            None => Ok(std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN)),
            Some(n) if n > MAX_ACTOR_ARBITERS => Err(ConfigError::Invalid(
                KEY,
                format!("{n} is more than the {MAX_ACTOR_ARBITERS} allowed (one thread each)"),
            )),
            Some(n) => NonZeroUsize::new(n).ok_or_else(|| {
                ConfigError::Invalid(
                    KEY,
                    "must be at least 1 (leave it unset for one per core)".into(),
                )
            }),
        }
    }
}

/// The scheduler actor: publishes due scheduled posts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SchedulerConfig {
    /// Whether this instance publishes due posts (several instances may, on one PostgreSQL).
    pub enabled: bool,
    /// Scheduled posts publishing at once on this instance (at most one per account, so this is
    /// also how many accounts publish at once). Claimed posts beyond it wait, claimed, in the
    /// scheduler's per-account queues (see `max_claimed`).
    pub max_in_flight: usize,
    /// Due posts claimed per statement; the scheduler claims batch after batch while more are
    /// due and `max_claimed` allows, without waiting for publishes to finish.
    pub claim_batch: usize,
    /// Posts this instance may hold claimed and not yet ended (queued, publishing, or ended and
    /// not yet written). Their leases are renewed together; past it, claiming waits for ends.
    pub max_claimed: usize,
    /// Ended attempts written per transaction (outcomes that end together are written
    /// together).
    pub settle_batch: usize,
    /// How long a claim holds without renewal; a claim older than this belongs to a process that
    /// died, and its post is settled from its recorded steps.
    pub lease_secs: u64,
    /// Publish attempts of one post before a transient failure becomes final.
    pub max_attempts: i32,
    /// First retry delay; doubles with each attempt (at least the platform's `retry_after`).
    pub retry_base_secs: u64,
    /// Longest sleep between looks at the table (posts scheduled by other instances are seen
    /// within this).
    pub max_sleep_ms: u64,
    /// On shutdown, how long in-flight publishes may take to finish.
    pub shutdown_grace_secs: u64,
    /// An immediate publish still `publishing` in the history after this long was cut off by a
    /// stopped process; it is settled like a scheduled one (failed, or unconfirmed).
    pub stale_publish_secs: u64,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_in_flight: 256,
            claim_batch: 500,
            max_claimed: 20_000,
            settle_batch: 500,
            lease_secs: 120,
            max_attempts: 5,
            retry_base_secs: 30,
            max_sleep_ms: 5_000,
            shutdown_grace_secs: 30,
            stale_publish_secs: 1_800,
        }
    }
}

/// The collector actor: daily performance snapshots of every account (spec §2.7, §4.8).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct CollectorConfig {
    /// Whether this instance runs the daily collection (several may, on one database).
    pub enabled: bool,
    /// Local time of the daily run, `HH:MM`, in `time_zone`.
    pub run_at: String,
    /// IANA time zone of `run_at`; the run collects the previous day of this zone.
    pub time_zone: String,
    /// Accounts collected at the same time.
    pub concurrency: usize,
    /// How long a claimed account-date stays claimed without finishing; after that another
    /// collector may take it over (its collector died).
    pub lease_secs: u64,
    /// Automatic attempts per account and date; backfill and manual collection always try.
    pub max_attempts: i32,
    /// How often the latest date is looked at again for accounts still missing (failed ones,
    /// ones connected since, ones a dead instance held).
    pub repair_interval_secs: u64,
    /// A limiter refusal asking to wait at most this long is waited out; longer ones fail the
    /// account for this pass (a later pass retries).
    pub max_limiter_wait_secs: u64,
    /// Longest sleep between looks at the clock.
    pub max_sleep_ms: u64,
}

impl Default for CollectorConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            run_at: "02:00".into(),
            time_zone: "Asia/Taipei".into(),
            concurrency: 16,
            lease_secs: 600,
            max_attempts: 3,
            repair_interval_secs: 1_800,
            max_limiter_wait_secs: 60,
            max_sleep_ms: 5_000,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    #[test]
    fn actor_arbiters_default_to_the_cores_and_refuse_zero_and_absurd_counts() {
        let with = |n| PublishingConfig {
            actor_arbiters: n,
            ..PublishingConfig::default()
        };
        let cores = std::thread::available_parallelism().unwrap();
        assert_eq!(with(None).actor_arbiters().unwrap(), cores);
        assert_eq!(with(Some(1)).actor_arbiters().unwrap().get(), 1);
        assert_eq!(
            with(Some(MAX_ACTOR_ARBITERS))
                .actor_arbiters()
                .unwrap()
                .get(),
            MAX_ACTOR_ARBITERS
        );
        for bad in [0, MAX_ACTOR_ARBITERS + 1, usize::MAX] {
            assert!(
                matches!(
                    with(Some(bad)).actor_arbiters(),
                    Err(ConfigError::Invalid("publishing.actor_arbiters", _))
                ),
                "{bad}"
            );
        }
    }
}
