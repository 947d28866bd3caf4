//! Collecting chosen dates again for one account, and finding the dates an account has no
//! snapshot for: `GET /api/cron/check-missing`, `POST /api/cron/backfill` and the dashboard's
//! Performance page.

use std::collections::HashSet;

use chrono::{Duration, NaiveDate};

use super::{AccountOutcome, CollectionRun, CollectionService, Trigger, collectable};
use crate::error::ApiError;

/// Dates one backfill call may ask for.
pub const MAX_BACKFILL_DATES: usize = 90;

/// The latest day that can be collected (yesterday in the collector's zone): what a requested
/// date is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Yesterday(pub NaiveDate);

/// Dates to collect again: 1 to [`MAX_BACKFILL_DATES`] asked, each over already, distinct, in
/// the order asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackfillDates(pub(crate) Vec<NaiveDate>);

impl BackfillDates {
    /// Refused as a whole when the count is out of range or a date is unreadable or not over
    /// yet; the first bad date (in the order given) is the one reported.
    pub fn check(raw_dates: &[String], yesterday: Yesterday) -> Result<Self, ApiError> {
        if raw_dates.is_empty() || raw_dates.len() > MAX_BACKFILL_DATES {
            return Err(ApiError::invalid_request(format!(
                "missing_dates must hold 1 to {MAX_BACKFILL_DATES} dates"
            )));
        }
        let mut dates = Vec::with_capacity(raw_dates.len());
        for raw in raw_dates {
            let date = parse_date("missing_dates", raw)?;
            check_not_future(date, yesterday.0)?;
            if !dates.contains(&date) {
                dates.push(date);
            }
        }
        Ok(Self(dates))
    }

    pub fn as_slice(&self) -> &[NaiveDate] {
        &self.0
    }
}

/// One date of a backfill and what collecting it gave (`None`: the platform has no
/// performance reads).
#[derive(Debug)]
pub struct Backfilled {
    pub date: NaiveDate,
    pub outcome: Option<AccountOutcome>,
}

impl Backfilled {
    /// Whether the date was collected (in full or in part).
    pub fn succeeded(&self) -> bool {
        self.outcome
            .as_ref()
            .is_some_and(|o| matches!(o.status, "success" | "partial"))
    }
}

impl CollectionService {
    /// The dates (`YYYY-MM-DD`, oldest first) among the `days` ending yesterday for which the
    /// account has no collected snapshot (`GET /api/cron/check-missing`; the dashboard's
    /// Performance page lists the same).
    pub async fn missing_dates(
        &self,
        account: &entity::account::Model,
        days: i64,
    ) -> Result<Vec<String>, ApiError> {
        let schedule = &self.schedule;
        let yesterday = schedule.yesterday(self.clock.now());
        // Dates before the account was connected were never due.
        let connected_on = account
            .created_at
            .with_timezone(&schedule.zone())
            .date_naive();
        let from = (yesterday - Duration::days(days - 1)).max(connected_on);
        let collected: HashSet<String> = self
            .store
            .collected_dates(account.id, &date_text(from), &date_text(yesterday))
            .await?
            .into_iter()
            .collect();
        Ok(from
            .iter_days()
            .take_while(|date| *date <= yesterday)
            .map(date_text)
            .filter(|date| !collected.contains(date))
            .collect())
    }

    /// Collects the account's snapshots of `dates` again (`POST /api/cron/backfill`; the
    /// dashboard's Backfill button does the same): one result per date, in the order asked.
    pub async fn backfill(
        &self,
        account: entity::account::Model,
        dates: &BackfillDates,
    ) -> Vec<Backfilled> {
        let dates = dates.as_slice();
        let accounts = collectable(vec![account]);
        let mut results = Vec::with_capacity(dates.len());
        for date in dates {
            let report = self
                .collect(CollectionRun {
                    date: *date,
                    accounts: accounts.clone(),
                    recollect: true,
                    trigger: Trigger::Manual,
                })
                .await;
            results.push(Backfilled {
                date: *date,
                outcome: report.accounts.into_iter().next(),
            });
        }
        results
    }
}

pub fn parse_date(name: &str, raw: &str) -> Result<NaiveDate, ApiError> {
    NaiveDate::parse_from_str(raw.trim(), "%Y-%m-%d").map_err(|_| {
        ApiError::invalid_request(format!("{name} must hold dates YYYY-MM-DD, got {raw:?}"))
    })
}

pub fn check_not_future(date: NaiveDate, yesterday: NaiveDate) -> Result<(), ApiError> {
    if date > yesterday {
        return Err(ApiError::invalid_request(format!(
            "{} is not over yet; the latest date that can be collected is {}",
            date_text(date),
            date_text(yesterday)
        )));
    }
    Ok(())
}

pub fn date_text(date: NaiveDate) -> String {
    date.format("%Y-%m-%d").to_string()
}
