//! When the daily collection runs, and which date a run collects. Pure functions of a UTC
//! instant, so the answer does not depend on the host's time zone.

use chrono::{DateTime, Duration, NaiveDate, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

/// "Every day at `at` in `zone`".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DailySchedule {
    zone: Tz,
    at: NaiveTime,
}

impl DailySchedule {
    /// `time_zone` is an IANA name (`Asia/Taipei`), `run_at` is `HH:MM`.
    pub fn parse(time_zone: &str, run_at: &str) -> Result<Self, String> {
        let zone: Tz = time_zone
            .parse()
            .map_err(|_| format!("unknown time zone {time_zone:?}"))?;
        let at = NaiveTime::parse_from_str(run_at, "%H:%M")
            .map_err(|_| format!("run_at must be HH:MM, got {run_at:?}"))?;
        Ok(Self { zone, at })
    }

    pub fn zone(&self) -> Tz {
        self.zone
    }

    /// The run of local date `date`. A time skipped by a DST change happens at the first
    /// instant after the gap; a time that happens twice runs at its first occurrence.
    pub fn run_on(&self, date: NaiveDate) -> DateTime<Utc> {
        let local = date.and_time(self.at);
        // DST gaps are at most a few hours; step over them a quarter-hour at a time.
        for quarter in 0..=16 {
            let candidate = local + Duration::minutes(15 * quarter);
            if let Some(instant) = self.zone.from_local_datetime(&candidate).earliest() {
                return instant.with_timezone(&Utc);
            }
        }
        // Unreachable for real zones; fall back to reading the local time as UTC.
        local.and_utc()
    }

    /// The first run strictly after `now`.
    pub fn next_run_after(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        let today = now.with_timezone(&self.zone).date_naive();
        (-1..=2)
            .filter_map(|offset| today.checked_add_signed(Duration::days(offset)))
            .map(|date| self.run_on(date))
            .find(|run| *run > now)
            .unwrap_or_else(|| now + Duration::days(1))
    }

    /// The latest run at or before `now` (the one a service that was down has missed).
    pub fn last_run_at_or_before(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        let today = now.with_timezone(&self.zone).date_naive();
        (-2..=1)
            .rev()
            .filter_map(|offset| today.checked_add_signed(Duration::days(offset)))
            .map(|date| self.run_on(date))
            .find(|run| *run <= now)
            .unwrap_or_else(|| now - Duration::days(1))
    }

    /// The date a run collects: the day before the run's local date.
    pub fn target_date(&self, run: DateTime<Utc>) -> NaiveDate {
        let local = run.with_timezone(&self.zone).date_naive();
        local.pred_opt().unwrap_or(local)
    }

    /// The date the latest run due by `now` collects (what should be collected by now).
    pub fn latest_target(&self, now: DateTime<Utc>) -> NaiveDate {
        self.target_date(self.last_run_at_or_before(now))
    }

    /// Yesterday in the schedule's zone (the default date of a manual collection).
    pub fn yesterday(&self, now: DateTime<Utc>) -> NaiveDate {
        let today = now.with_timezone(&self.zone).date_naive();
        today.pred_opt().unwrap_or(today)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn date(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn next_run_is_02_00_taipei_from_a_utc_clock() {
        let taipei = DailySchedule::parse("Asia/Taipei", "02:00").unwrap();
        // (now, next run, date that run collects). 02:00 Taipei = 18:00 UTC the day before.
        let cases = [
            // Just before 02:00 Taipei (01:59:59 on Nov 23 local).
            ("2026-11-22T17:59:59Z", "2026-11-22T18:00:00Z", "2026-11-22"),
            // Exactly at 02:00: that run is now, the next is tomorrow's.
            ("2026-11-22T18:00:00Z", "2026-11-23T18:00:00Z", "2026-11-23"),
            // Just after.
            ("2026-11-22T18:00:01Z", "2026-11-23T18:00:00Z", "2026-11-23"),
            // Midday UTC: already the next local day in Taipei's evening.
            ("2026-11-22T12:00:00Z", "2026-11-22T18:00:00Z", "2026-11-22"),
            // Local midnight passed, 02:00 not yet (00:30 Taipei on Nov 23).
            ("2026-11-22T16:30:00Z", "2026-11-22T18:00:00Z", "2026-11-22"),
            // Month end: 01:00 Taipei on Feb 1 collects Jan 31.
            ("2026-01-31T17:00:00Z", "2026-01-31T18:00:00Z", "2026-01-31"),
            // Leap-year February end: 01:00 Taipei on Mar 1 2028 collects Feb 29.
            ("2028-02-29T17:00:00Z", "2028-02-29T18:00:00Z", "2028-02-29"),
            // Year end: 01:30 Taipei on Jan 1 2027 collects Dec 31 2026.
            ("2026-12-31T17:30:00Z", "2026-12-31T18:00:00Z", "2026-12-31"),
            // Just after the year's first run.
            ("2026-12-31T18:00:01Z", "2027-01-01T18:00:00Z", "2027-01-01"),
            // UTC New Year's Eve at 23:00 is already 07:00 Jan 1 in Taipei.
            ("2026-12-31T23:00:00Z", "2027-01-01T18:00:00Z", "2027-01-01"),
        ];
        for (now, next, collects) in cases {
            let run = taipei.next_run_after(utc(now));
            assert_eq!(run, utc(next), "next run after {now}");
            assert_eq!(
                taipei.target_date(run),
                date(collects),
                "date collected by {next}"
            );
        }
    }

    #[test]
    fn the_missed_run_is_the_latest_one_due() {
        let taipei = DailySchedule::parse("Asia/Taipei", "02:00").unwrap();
        let cases = [
            ("2026-11-22T17:59:59Z", "2026-11-21T18:00:00Z", "2026-11-21"),
            ("2026-11-22T18:00:00Z", "2026-11-22T18:00:00Z", "2026-11-22"),
            ("2026-11-23T09:00:00Z", "2026-11-22T18:00:00Z", "2026-11-22"),
            ("2027-01-01T00:00:00Z", "2026-12-31T18:00:00Z", "2026-12-31"),
        ];
        for (now, last, collects) in cases {
            let run = taipei.last_run_at_or_before(utc(now));
            assert_eq!(run, utc(last), "last run at or before {now}");
            assert_eq!(taipei.latest_target(utc(now)), date(collects));
        }
    }

    #[test]
    fn dst_changes_elsewhere_neither_skip_nor_repeat_a_run() {
        // New York: 02:00 does not exist on 2026-03-08 (clocks jump 02:00 → 03:00 EDT).
        let new_york = DailySchedule::parse("America/New_York", "02:00").unwrap();
        let run = new_york.next_run_after(utc("2026-03-08T05:00:00Z"));
        assert_eq!(
            run,
            utc("2026-03-08T07:00:00Z"),
            "03:00 EDT, right after the gap"
        );
        let after = new_york.next_run_after(run);
        assert_eq!(after, utc("2026-03-09T06:00:00Z"), "02:00 EDT the next day");
        // 01:30 happens twice on 2026-11-01 (EDT, then EST): it runs once, at the first.
        let half_past_one = DailySchedule::parse("America/New_York", "01:30").unwrap();
        let run = half_past_one.next_run_after(utc("2026-11-01T04:00:00Z"));
        assert_eq!(run, utc("2026-11-01T05:30:00Z"));
        assert_eq!(
            half_past_one.next_run_after(run),
            utc("2026-11-02T06:30:00Z"),
            "the second 01:30 (EST) is not another run"
        );
    }

    #[test]
    fn bad_settings_are_refused_by_name() {
        assert!(DailySchedule::parse("Mars/Olympus", "02:00").is_err());
        assert!(DailySchedule::parse("Asia/Taipei", "2am").is_err());
    }
}
