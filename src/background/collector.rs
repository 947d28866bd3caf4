//! The collector actor: takes the daily performance snapshot of every account.
//!
//! It keeps one question answered: "is the latest date that should be collected by now
//! collected?" The latest date changes at the daily run time (02:00 Asia/Taipei by default), so
//! the daily run, the catch-up after downtime (asked at start) and the later repair passes (for
//! accounts that failed, were connected since, or were held by a dead instance) are the same
//! operation. Each pass only takes the accounts still missing; the store's per-account-date
//! claim keeps restarts and other instances from duplicating anything.
//!
//! The clock is read at every look and the actor never sleeps longer than
//! `collector.max_sleep_ms`, so a test moving a manual clock past 02:00 sees the run within it.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use actix::prelude::*;
use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;

use crate::services::collection::{CollectionReport, CollectionRun, CollectionService, Trigger};
use crate::store::in_runtime::in_runtime;

/// A finished run, as the operator view shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunSummary {
    pub trigger: Trigger,
    pub target_date: NaiveDate,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub total_accounts: usize,
    pub success_count: usize,
    pub failed_count: usize,
    pub skipped_count: usize,
}

impl From<&CollectionReport> for RunSummary {
    fn from(report: &CollectionReport) -> Self {
        Self {
            trigger: report.trigger,
            target_date: report.target_date,
            started_at: report.started_at,
            finished_at: report.finished_at,
            total_accounts: report.total_accounts,
            success_count: report.success_count,
            failed_count: report.failed_count,
            skipped_count: report.skipped_count,
        }
    }
}

/// What the operator view shows of the collector.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CollectorStatus {
    pub running: bool,
    /// The next daily run.
    pub next_run: DateTime<Utc>,
    /// The date the latest due run collects.
    pub current_target: NaiveDate,
    #[schema(required = true)]
    pub last_run: Option<RunSummary>,
    #[schema(required = true)]
    pub last_error: Option<String>,
    /// Looks that were free to decide whether a pass is due (no pass running), whatever they
    /// decided: a waiter that sees it advance twice knows one such look read the clock after it.
    pub looks: u64,
}

pub struct CollectorActor {
    service: Arc<CollectionService>,
    /// The latest date a pass finished for.
    done_for: Option<NaiveDate>,
    last_pass: Option<Instant>,
    running: bool,
    last_run: Option<RunSummary>,
    last_error: Option<String>,
    looks: u64,
}

impl CollectorActor {
    pub fn new(service: Arc<CollectionService>) -> Self {
        Self {
            service,
            done_for: None,
            last_pass: None,
            running: false,
            last_run: None,
            last_error: None,
            looks: 0,
        }
    }

    fn look(&mut self, ctx: &mut Context<Self>) {
        let now = self.service.clock().now();
        let schedule = self.service.schedule();
        if !self.running {
            let target = schedule.latest_target(now);
            let repair_every = Duration::from_secs(self.service.config().repair_interval_secs);
            let trigger = match (self.done_for, self.last_pass) {
                (None, _) => Some(Trigger::CatchUp),
                (Some(done), _) if done != target => Some(Trigger::Schedule),
                (_, Some(at)) if at.elapsed() >= repair_every => Some(Trigger::Repair),
                _ => None,
            };
            if let Some(trigger) = trigger {
                self.pass(ctx, target, trigger);
            }
            self.looks += 1;
        }
        let until_next = (self.service.schedule().next_run_after(now) - now)
            .to_std()
            .unwrap_or_default();
        let wait = until_next
            .min(Duration::from_millis(
                self.service.config().max_sleep_ms.max(10),
            ))
            .max(Duration::from_millis(10));
        ctx.run_later(wait, |actor, ctx| actor.look(ctx));
    }

    /// Collects `target` for the accounts still missing it.
    fn pass(&mut self, ctx: &mut Context<Self>, target: NaiveDate, trigger: Trigger) {
        self.running = true;
        let service = self.service.clone();
        let work = async move {
            let run = CollectionRun {
                date: target,
                accounts: service.accounts_missing(target).await?,
                recollect: false,
                trigger,
            };
            Ok::<_, sea_orm::DbErr>(service.collect(run).await)
        };
        ctx.spawn(
            in_runtime(work)
                .into_actor(self)
                .map(move |result, actor, _ctx| {
                    actor.running = false;
                    actor.last_pass = Some(Instant::now());
                    let metrics = actor.service.metrics();
                    match result {
                        Ok(report) => {
                            actor.done_for = Some(target);
                            // A pass with nothing to do is not worth showing as the last run.
                            if report.total_accounts > 0 || actor.last_run.is_none() {
                                actor.last_run = Some(RunSummary::from(&report));
                            }
                            let outcome = if report.failed_count == 0 {
                                "ok"
                            } else {
                                "partial"
                            };
                            metrics.inc("collector_runs_total", &[("outcome", outcome)]);
                        }
                        Err(error) => {
                            tracing::error!(%error, "collection pass failed");
                            actor.last_error = Some(format!("database: {error}"));
                            metrics.inc("collector_runs_total", &[("outcome", "error")]);
                        }
                    }
                }),
        );
    }

    fn status(&self) -> CollectorStatus {
        let now = self.service.clock().now();
        let schedule = self.service.schedule();
        CollectorStatus {
            running: self.running,
            next_run: schedule.next_run_after(now),
            current_target: schedule.latest_target(now),
            last_run: self.last_run.clone(),
            last_error: self.last_error.clone(),
            looks: self.looks,
        }
    }
}

impl Actor for CollectorActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        tracing::info!(
            next_run = %self.service.schedule().next_run_after(self.service.clock().now()),
            "collector started"
        );
        self.look(ctx);
    }
}

/// The collector's status, answered at once (a pass runs in a spawned future).
pub struct GetCollectorStatus;

impl Message for GetCollectorStatus {
    type Result = CollectorStatus;
}

impl Handler<GetCollectorStatus> for CollectorActor {
    type Result = MessageResult<GetCollectorStatus>;

    fn handle(&mut self, _msg: GetCollectorStatus, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.status())
    }
}
