//! Work an account actor runs beside its publishes, through its limiter and token state:
//! insights reads and checks of publishes left unconfirmed.

use actix::prelude::*;
use chrono::NaiveDate;
use futures_util::FutureExt;
use tokio::sync::oneshot;

use super::{AccountActor, in_runtime, reply_after};
use crate::{
    domain::plan::Platform,
    error::ApiError,
    insights::{self, AccountSummary, DailyMetrics, InsightsContext, InsightsQuery},
    platforms::PlatformError,
    publish::reconcile::{CheckOutcome, CheckReport, CheckSpec, run_check},
};

/// What an insights read asks for.
#[derive(Debug, Clone)]
pub enum InsightsWork {
    /// A `GET /api/performance/*` query.
    Query(InsightsQuery),
    /// The numbers of one date, for a daily snapshot.
    Daily(NaiveDate),
}

impl InsightsWork {
    /// The units of the account's platform budget this read costs (none on tiktok, whose
    /// limit is on publish inits; the read still goes through the actor for its token state).
    pub fn units(&self, platform: Platform) -> u32 {
        match self {
            InsightsWork::Query(query) => insights::estimated_calls(platform, query),
            InsightsWork::Daily(_) => insights::estimated_daily_calls(platform),
        }
    }
}

/// The units of the account's platform budget one check of an unconfirmed publish costs: one
/// status read, except on tiktok, whose limit is on publish inits, which a read is not.
pub fn check_units(platform: Platform) -> u32 {
    u32::from(platform != Platform::Tiktok)
}

/// What an insights read returns.
#[derive(Debug, Clone)]
pub enum InsightsOutput {
    /// The whole response body of a query.
    Body(crate::insights::bodies::InsightsBody),
    Daily(DailyMetrics),
}

/// Reads insights through the account's limiter. Answers at once with the receiver of the
/// result (or the refusal: token dead, limiter empty, too many reads in flight); the platform
/// calls run in a spawned future, beside any publish in flight (reads need no ordering).
pub struct ReadInsights {
    pub work: InsightsWork,
    pub account: AccountSummary,
}

/// The result of an insights read.
pub type InsightsResult = Result<InsightsOutput, ApiError>;

impl Message for ReadInsights {
    type Result = Result<oneshot::Receiver<InsightsResult>, ApiError>;
}

/// Reads one actor runs at the same time; more are refused with 503 (the collector and
/// dashboards retry).
const MAX_READS_IN_FLIGHT: u16 = 8;

impl Handler<ReadInsights> for AccountActor {
    type Result = Result<oneshot::Receiver<InsightsResult>, ApiError>;

    fn handle(&mut self, msg: ReadInsights, ctx: &mut Self::Context) -> Self::Result {
        let _span = tracing::debug_span!("account_actor", account = %self.seat.account_id, message = "insights").entered();
        self.touch();
        self.refuse_dead_token()?;
        if self.reads_in_flight >= MAX_READS_IN_FLIGHT {
            return Err(ApiError::service_unavailable(
                "This account is already answering other performance queries; retry in a moment",
            ));
        }
        let platform = msg.account.platform;
        let units = msg.work.units(platform);
        if units > 0
            && let Err(refused) = self.limiter.admit_units(units)
        {
            self.back_off(refused.retry_after);
            self.deps().metrics.inc(
                "limiter_rejections_total",
                &[("platform", platform.as_str())],
            );
            return Err(refused);
        }
        self.reads_in_flight += 1;
        let deps = self.deps().clone();
        let credentials = self.token.credentials.clone();
        let work = async move {
            let http = deps.http();
            let ctx = InsightsContext {
                http: &http,
                config: &deps.platforms,
                credentials: &credentials,
                account: &msg.account,
            };
            match &msg.work {
                InsightsWork::Query(query) => {
                    insights::query(&ctx, query).await.map(InsightsOutput::Body)
                }
                InsightsWork::Daily(date) => insights::daily(&ctx, *date)
                    .await
                    .map(InsightsOutput::Daily),
            }
        };
        let work = std::panic::AssertUnwindSafe(work)
            .catch_unwind()
            .map(|result| {
                result.unwrap_or_else(|_| {
                    Err(PlatformError::Rejected("the insights read panicked".into()))
                })
            });
        let (reply, receiver) = oneshot::channel();
        ctx.spawn(
            in_runtime(work)
                .into_actor(self)
                .map(move |result, actor, _ctx| {
                    actor.reads_in_flight = actor.reads_in_flight.saturating_sub(1);
                    actor.touch();
                    let (result, recorded) = match result {
                        Ok(output) => (Ok(output), None),
                        Err(error) => {
                            let (error, recorded) = actor.absorb_platform_error(error);
                            (Err(error), recorded)
                        }
                    };
                    actor.post_health();
                    reply_after(recorded, move || {
                        let _ = reply.send(result);
                    });
                }),
        );
        Ok(receiver)
    }
}

/// Checks once a publish the platform was still processing at our deadline (the reconciler
/// sends it, holding the submission's check claim). Answers at once with the receiver of the
/// report, or the refusal (token dead, limiter empty). The platform calls run in a spawned
/// future beside any publish in flight: a status read needs no ordering, and a continuation's
/// final call was admitted (and counted) with its publish.
pub struct CheckUnconfirmed {
    pub spec: CheckSpec,
}

impl Message for CheckUnconfirmed {
    type Result = Result<oneshot::Receiver<CheckReport>, ApiError>;
}

impl Handler<CheckUnconfirmed> for AccountActor {
    type Result = Result<oneshot::Receiver<CheckReport>, ApiError>;

    fn handle(&mut self, msg: CheckUnconfirmed, ctx: &mut Self::Context) -> Self::Result {
        let _span = tracing::debug_span!("account_actor", account = %self.seat.account_id, message = "check").entered();
        self.touch();
        self.refuse_dead_token()?;
        let units = check_units(self.platform);
        if units > 0
            && let Err(refused) = self.limiter.admit_units(units)
        {
            self.back_off(refused.retry_after);
            self.deps().metrics.inc(
                "limiter_rejections_total",
                &[("platform", self.platform.as_str())],
            );
            return Err(refused);
        }
        if self.refresh_is_due() {
            self.start_refresh(ctx);
        }
        let deps = self.deps().clone();
        let credentials = self.token.credentials.clone();
        let submission_id = msg.spec.submission.id;
        let work = std::panic::AssertUnwindSafe(run_check(deps, credentials, msg.spec))
            .catch_unwind()
            .map(move |result| {
                result.unwrap_or_else(|_| {
                    tracing::error!(submission = %submission_id, "publish check panicked");
                    // The claim lapses and another check is made.
                    CheckReport {
                        outcome: CheckOutcome::Lost,
                        error: None,
                    }
                })
            });
        let (reply, receiver) = oneshot::channel();
        self.checks_in_flight += 1;
        ctx.spawn(
            in_runtime(work)
                .into_actor(self)
                .map(move |mut report, actor, _ctx| {
                    actor.checks_in_flight = actor.checks_in_flight.saturating_sub(1);
                    actor.touch();
                    if let Some(error) = report.error.take()
                        && let (_, Some(recorded)) = actor.absorb_platform_error(error)
                    {
                        actix::spawn(recorded);
                    }
                    let outcome = report.outcome;
                    actor.update_health(|activity| match outcome {
                        CheckOutcome::Published => activity.published += 1,
                        CheckOutcome::Failed => activity.failed += 1,
                        _ => {}
                    });
                    let _ = reply.send(report);
                }),
        );
        Ok(receiver)
    }
}
