//! Daily performance collection (spec §2.7, §4.8): for a date, each account's numbers are read
//! through its account actor (so its limiter is respected) and stored as that date's snapshot.
//!
//! One [`CollectionService`] serves the collector actor's daily run, its catch-up after downtime,
//! and the manual `/api/cron/*` endpoints. Safety comes from the store: each account-date is claimed
//! by one conditional write before any platform call, so a restart or a second instance never
//! stores a date twice or fetches it twice at the same time. A failing account is recorded as
//! `failed` and the run goes on.

pub mod backfill;
pub mod schedule;

use std::{sync::Arc, time::Duration};

use chrono::{DateTime, NaiveDate, Utc};
use futures_util::{StreamExt, stream};
use serde::Serialize;
use uuid::Uuid;

use crate::{
    actors::{
        account::{InsightsOutput, InsightsWork},
        supervisor::Supervisor,
    },
    clock::SharedClock,
    config::CollectorConfig,
    domain::plan::Platform,
    error::{ApiError, ErrorCode},
    insights::{self, AccountSummary, DailyMetrics},
    metrics::Metrics,
    store::{SnapshotClaim, Store},
};
use schedule::DailySchedule;

/// What a collection uses: the snapshot table, the account actors (each account's numbers are
/// read through its own actor and limiter), the collector's settings and daily schedule, and
/// this instance's claimant id. The collector actor and the manual `/api/cron/*` runs share it.
pub struct CollectionService {
    store: Store,
    clock: SharedClock,
    supervisor: Arc<Supervisor>,
    config: CollectorConfig,
    /// When the daily collection runs (`collector.run_at` in `collector.time_zone`).
    schedule: DailySchedule,
    metrics: Arc<Metrics>,
    /// This process's id as a claimant of snapshots.
    instance: String,
}

/// Why a run started (the operator view shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The daily time came.
    Schedule,
    /// At start: the latest daily run was missed (service down) or left unfinished.
    CatchUp,
    /// A later look at the latest date for accounts still missing.
    Repair,
    /// `POST /api/cron/collect-performance` or `/api/cron/backfill`.
    Manual,
}

/// One account's outcome in a run (`POST /api/cron/collect-performance` answers it as is).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AccountOutcome {
    pub account_id: Uuid,
    pub page_name: String,
    pub platform: Platform,
    /// `success`, `partial` (some metrics failed), `failed`, or `skipped` (collected already,
    /// or another collector is on it).
    #[schema(value_type = String)]
    pub status: &'static str,
    #[schema(required = true)]
    pub data: Option<DailyMetrics>,
    #[schema(required = true)]
    pub error: Option<String>,
}

/// What a run did.
#[derive(Debug, Clone, Serialize)]
pub struct CollectionReport {
    pub target_date: NaiveDate,
    pub trigger: Trigger,
    pub total_accounts: usize,
    /// `success` and `partial` outcomes.
    pub success_count: usize,
    pub failed_count: usize,
    pub skipped_count: usize,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub accounts: Vec<AccountOutcome>,
}

/// A run to make.
pub struct CollectionRun {
    pub date: NaiveDate,
    pub accounts: Vec<entity::account::Model>,
    /// Re-collect dates already collected (manual runs); the automatic runs only fill gaps.
    pub recollect: bool,
    pub trigger: Trigger,
}

/// Keeps the accounts the collection covers (platforms with insights).
pub fn collectable(accounts: Vec<entity::account::Model>) -> Vec<entity::account::Model> {
    accounts
        .into_iter()
        .filter(|account| insights::supported(account.platform))
        .collect()
}

impl CollectionService {
    pub fn new(
        store: Store,
        clock: SharedClock,
        supervisor: Arc<Supervisor>,
        config: CollectorConfig,
        schedule: DailySchedule,
        metrics: Arc<Metrics>,
        instance: String,
    ) -> Self {
        Self {
            store,
            clock,
            supervisor,
            config,
            schedule,
            metrics,
            instance,
        }
    }

    /// When the daily collection runs.
    pub fn schedule(&self) -> &DailySchedule {
        &self.schedule
    }

    /// The collector's settings.
    pub fn config(&self) -> &CollectorConfig {
        &self.config
    }

    /// Where runs are counted.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The time source the collection reads.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// The accounts still missing `date` that an automatic pass may collect (not given up on).
    pub async fn accounts_missing(
        &self,
        date: NaiveDate,
    ) -> Result<Vec<entity::account::Model>, sea_orm::DbErr> {
        let date = date.format("%Y-%m-%d").to_string();
        let accounts = self
            .store
            .accounts_needing_collection(&date, self.config.max_attempts, self.clock.now())
            .await?;
        Ok(collectable(accounts))
    }

    /// Collects `run.date` for every account of the run, `collector.concurrency` at a time.
    pub async fn collect(&self, run: CollectionRun) -> CollectionReport {
        self.collect_with(run, self.config.concurrency).await
    }

    /// [`Self::collect`] with `concurrency` accounts at a time (the benchmark compares settings).
    pub async fn collect_with(&self, run: CollectionRun, concurrency: usize) -> CollectionReport {
        let started_at = self.clock.now();
        let concurrency = concurrency.max(1);
        let date = run.date;
        let recollect = run.recollect;
        let total_accounts = run.accounts.len();
        let mut accounts: Vec<AccountOutcome> = stream::iter(run.accounts)
            .map(|account| async move { self.collect_account(&account, date, recollect).await })
            .buffer_unordered(concurrency)
            .collect()
            .await;
        accounts.sort_by(|a, b| {
            a.page_name
                .cmp(&b.page_name)
                .then(a.account_id.cmp(&b.account_id))
        });
        let count = |statuses: &[&str]| {
            accounts
                .iter()
                .filter(|outcome| statuses.contains(&outcome.status))
                .count()
        };
        let report = CollectionReport {
            target_date: date,
            trigger: run.trigger,
            total_accounts,
            success_count: count(&["success", "partial"]),
            failed_count: count(&["failed"]),
            skipped_count: count(&["skipped"]),
            started_at,
            finished_at: self.clock.now(),
            accounts,
        };
        tracing::info!(
            date = %report.target_date,
            trigger = ?report.trigger,
            total = report.total_accounts,
            success = report.success_count,
            failed = report.failed_count,
            skipped = report.skipped_count,
            "performance collection finished"
        );
        report
    }

    async fn collect_account(
        &self,
        account: &entity::account::Model,
        date: NaiveDate,
        recollect: bool,
    ) -> AccountOutcome {
        let date_text = date.format("%Y-%m-%d").to_string();
        let mut outcome = AccountOutcome {
            account_id: account.id,
            page_name: account.display_name.clone(),
            platform: account.platform,
            status: "failed",
            data: None,
            error: None,
        };
        let config = &self.config;
        let now = self.clock.now();
        let claim = SnapshotClaim {
            account,
            date: &date_text,
            claimant: &self.instance,
            now,
            lease_until: now + chrono::Duration::seconds(config.lease_secs.max(1) as i64),
            recollect,
            max_attempts: (!recollect).then_some(config.max_attempts),
        };
        match self.store.claim_snapshot(claim).await {
            Ok(true) => {}
            Ok(false) => {
                outcome.status = "skipped";
                outcome.error = Some("already collected, or being collected by another run".into());
                return outcome;
            }
            Err(error) => {
                tracing::error!(%error, account = %account.id, "cannot claim a snapshot");
                outcome.error = Some("database error".into());
                return outcome;
            }
        }
        let result = self.read_daily(account, date).await.map_err(describe);
        let stored = self
            .store
            .finish_snapshot(
                account.id,
                &date_text,
                &self.instance,
                &account.display_name,
                &result,
                self.clock.now(),
            )
            .await;
        if let Err(error) = &stored {
            tracing::error!(%error, account = %account.id, "cannot store a snapshot");
        }
        match (result, stored) {
            (Ok(metrics), Ok(true)) => {
                outcome.status = if metrics.failed_metrics.is_empty() {
                    "success"
                } else {
                    "partial"
                };
                outcome.data = Some(metrics);
            }
            (Ok(_), _) => {
                outcome.error = Some("the snapshot could not be stored (claim lost)".into());
            }
            (Err(reason), _) => outcome.error = Some(reason),
        }
        self.metrics.inc(
            "collector_accounts_total",
            &[
                ("platform", account.platform.as_str()),
                ("status", outcome.status),
            ],
        );
        outcome
    }

    /// The account's numbers, through its actor. A limiter refusal that asks for a short wait is
    /// waited out; a busy actor is asked again a few times.
    async fn read_daily(
        &self,
        account: &entity::account::Model,
        date: NaiveDate,
    ) -> Result<DailyMetrics, ApiError> {
        let summary = AccountSummary::of(account);
        let max_wait = self.config.max_limiter_wait_secs;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let error = match self
                .supervisor
                .read_insights(account, &summary, InsightsWork::Daily(date))
                .await
            {
                Ok(InsightsOutput::Daily(metrics)) => return Ok(metrics),
                Ok(InsightsOutput::Body(_)) => {
                    return Err(ApiError::internal(
                        "the actor answered a daily read with a body",
                    ));
                }
                Err(error) => error,
            };
            let wait = match error.code {
                ErrorCode::RateLimitExceeded => error.retry_after.filter(|secs| *secs <= max_wait),
                ErrorCode::ServiceUnavailable => Some(1),
                _ => None,
            };
            match wait {
                Some(secs) if attempts < 4 => tokio::time::sleep(Duration::from_secs(secs)).await,
                _ => return Err(error),
            }
        }
    }
}

/// The stored reason of a failed account: the code, the message and the platform's words.
fn describe(error: ApiError) -> String {
    // The catalogue has one code for a platform's refusal, `PublishingFailed`, whose message
    // speaks of a post: a collection publishes nothing, so its record keeps the platform's words.
    if error.code == ErrorCode::PublishingFailed
        && let Some(details) = &error.details
    {
        return format!("the platform refused the read: {details}");
    }
    // The catalogue's message for a missing permission speaks of a post too: the record says
    // the read was refused and keeps the platform's words, which name the permission.
    if error.code == ErrorCode::InsufficientPermissions
        && let Some(details) = &error.details
    {
        return format!(
            "{}: the platform refused the read for a permission the account did not grant: \
             {details}",
            error.code.as_str()
        );
    }
    let mut text = format!("{}: {}", error.code.as_str(), error.message);
    if let Some(details) = &error.details {
        text.push_str(" (");
        text.push_str(details);
        text.push(')');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platforms::PlatformError;

    #[test]
    fn a_refused_read_keeps_the_platforms_words() {
        let permission = PlatformError::Permission(
            "(#10) This endpoint requires the 'read_insights' permission.".into(),
        )
        .into_api_error();
        let text = describe(permission);
        assert!(text.starts_with("InsufficientPermissions: "), "{text}");
        assert!(text.contains("refused the read"), "{text}");
        assert!(text.contains("'read_insights'"), "{text}");
        assert!(!text.contains("post"), "{text}");
        let refused = PlatformError::Rejected("(#100) Invalid parameter".into()).into_api_error();
        assert_eq!(
            describe(refused),
            "the platform refused the read: (#100) Invalid parameter"
        );
    }
}
