//! Plans and the monthly usage period (spec §8). Pure functions: no I/O, no clock.
//!
//! The usage month is anchored to the user's registration date (in UTC): a user registered on
//! the 15th has periods 15th → 15th. When the anchor day does not exist in a month the period
//! starts on that month's last day instead: registered on the 31st, the periods are
//! … Jan 31 → Feb 28 → Mar 31 → Apr 30 → May 31 … (Feb 29 in leap years). Periods start at
//! 00:00 UTC of the anchor date.

use chrono::{DateTime, Datelike, NaiveDate, Utc};

/// The subscription plan: stored on the user's row, so it is defined with the entity (an unknown
/// stored plan fails to load instead of reading as Free).
pub use entity::user::Plan;

/// One usage month: `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsagePeriod {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

impl UsagePeriod {
    /// The key of the period's counter row (`YYYY-MM-DD` of its start).
    pub fn key(&self) -> String {
        // Written out: every metered call names its counter, and chrono's `format` parses
        // its pattern anew each time, a cost that shows in a profile of the publish path.
        format!(
            "{:04}-{:02}-{:02}",
            self.start.year(),
            self.start.month(),
            self.start.day()
        )
    }

    /// `api_usage.current_month`: the month the period started in, `YYYY-MM`.
    pub fn month_label(&self) -> String {
        self.start.format("%Y-%m").to_string()
    }
}

/// The usage period containing `now` for a user registered at `registered_at`.
pub fn usage_period(registered_at: DateTime<Utc>, now: DateTime<Utc>) -> UsagePeriod {
    let anchor_day = registered_at.day();
    let today = now.date_naive();
    let this_month = anchor_date(today.year(), today.month(), anchor_day);
    let start = if today >= this_month {
        this_month
    } else {
        let (year, month) = previous_month(today.year(), today.month());
        anchor_date(year, month, anchor_day)
    };
    let (next_year, next_month) = next_month(start.year(), start.month());
    let end = anchor_date(next_year, next_month, anchor_day);
    UsagePeriod {
        start: midnight_utc(start),
        end: midnight_utc(end),
    }
}

/// The anchor day in the given month, clamped to the month's last day.
fn anchor_date(year: i32, month: u32, day: u32) -> NaiveDate {
    let last = last_day_of_month(year, month);
    NaiveDate::from_ymd_opt(year, month, day.min(last)).unwrap_or(NaiveDate::MIN)
}

fn last_day_of_month(year: i32, month: u32) -> u32 {
    let (next_year, next_month) = next_month(year, month);
    NaiveDate::from_ymd_opt(next_year, next_month, 1)
        .and_then(|first| first.pred_opt())
        .map(|last| last.day())
        .unwrap_or(28)
}

fn next_month(year: i32, month: u32) -> (i32, u32) {
    if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    }
}

fn previous_month(year: i32, month: u32) -> (i32, u32) {
    if month == 1 {
        (year - 1, 12)
    } else {
        (year, month - 1)
    }
}

fn midnight_utc(date: NaiveDate) -> DateTime<Utc> {
    date.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc()
}

/// Languages the quota message is available in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locale {
    En,
    ZhTw,
}

/// Picks the locale from an `Accept-Language` header: the highest-weighted tag that is English
/// or Chinese; English otherwise.
pub fn negotiate_locale(accept_language: Option<&str>) -> Locale {
    let Some(header) = accept_language else {
        return Locale::En;
    };
    let mut tags: Vec<(f32, &str)> = header
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.trim().split(';');
            let tag = pieces.next()?.trim();
            let weight = pieces
                .find_map(|p| p.trim().strip_prefix("q="))
                .and_then(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            Some((weight, tag))
        })
        .collect();
    tags.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, tag) in tags {
        let tag = tag.to_ascii_lowercase();
        if tag.starts_with("zh") {
            return Locale::ZhTw;
        }
        if tag.starts_with("en") {
            return Locale::En;
        }
    }
    Locale::En
}

/// The quota-refusal message in English and in `locale`.
pub fn quota_messages(locale: Locale, limit: i64, resets_on: &str) -> (String, String) {
    let english = format!(
        "Monthly API call limit reached ({limit} calls on the free plan). \
         Upgrade your plan or wait until your usage resets on {resets_on}."
    );
    let localized = match locale {
        Locale::En => english.clone(),
        Locale::ZhTw => format!(
            "已達到本月 API 呼叫上限（免費方案每月 {limit} 次）。請升級方案，或等待用量於 {resets_on} 重置。"
        ),
    };
    (localized, english)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(y: i32, m: u32, d: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, h, 0, 0).unwrap()
    }

    #[test]
    fn usage_period_table() {
        // (name, registered, now, expected start, expected end)
        let cases = [
            (
                "mid-month anchor, after anchor",
                at(2026, 1, 15, 9),
                at(2026, 3, 20, 0),
                at(2026, 3, 15, 0),
                at(2026, 4, 15, 0),
            ),
            (
                "mid-month anchor, before anchor",
                at(2026, 1, 15, 9),
                at(2026, 3, 14, 23),
                at(2026, 2, 15, 0),
                at(2026, 3, 15, 0),
            ),
            (
                "exactly at the anchor midnight",
                at(2026, 1, 15, 9),
                at(2026, 3, 15, 0),
                at(2026, 3, 15, 0),
                at(2026, 4, 15, 0),
            ),
            (
                "registration day itself",
                at(2026, 1, 31, 10),
                at(2026, 1, 31, 12),
                at(2026, 1, 31, 0),
                at(2026, 2, 28, 0),
            ),
            (
                "31st in February (non-leap)",
                at(2026, 1, 31, 10),
                at(2026, 3, 5, 0),
                at(2026, 2, 28, 0),
                at(2026, 3, 31, 0),
            ),
            (
                "31st in February (leap)",
                at(2027, 12, 31, 10),
                at(2028, 3, 1, 0),
                at(2028, 2, 29, 0),
                at(2028, 3, 31, 0),
            ),
            (
                "31st in April",
                at(2026, 1, 31, 10),
                at(2026, 5, 10, 0),
                at(2026, 4, 30, 0),
                at(2026, 5, 31, 0),
            ),
            (
                "30th in February",
                at(2026, 1, 30, 10),
                at(2026, 2, 28, 5),
                at(2026, 2, 28, 0),
                at(2026, 3, 30, 0),
            ),
            (
                "year boundary",
                at(2025, 6, 20, 10),
                at(2027, 1, 5, 0),
                at(2026, 12, 20, 0),
                at(2027, 1, 20, 0),
            ),
            (
                "1st of the month",
                at(2026, 3, 1, 23),
                at(2026, 3, 31, 23),
                at(2026, 3, 1, 0),
                at(2026, 4, 1, 0),
            ),
        ];
        for (name, registered, now, start, end) in cases {
            let period = usage_period(registered, now);
            assert_eq!(period, UsagePeriod { start, end }, "{name}");
            assert!(
                period.start <= now && now < period.end,
                "{name}: now inside period"
            );
        }
    }

    #[test]
    fn period_labels() {
        let period = usage_period(at(2026, 1, 31, 10), at(2026, 3, 5, 0));
        assert_eq!(period.key(), "2026-02-28");
        assert_eq!(period.month_label(), "2026-02");
    }

    #[test]
    fn plans_and_limits() {
        assert_eq!(Plan::Free.monthly_limit(10), Some(10));
        assert_eq!(Plan::Pro.monthly_limit(10), None);
        assert_eq!(Plan::Ultra.monthly_limit(10), None);
        assert_eq!(Plan::Free.subscription_status(), "free");
        assert_eq!(Plan::Pro.subscription_status(), "active");
        assert_eq!(Plan::parse("ultra"), Some(Plan::Ultra));
        assert_eq!(Plan::parse("gold"), None);
    }

    #[test]
    fn locale_negotiation() {
        let cases = [
            (None, Locale::En),
            (Some("zh-TW,zh;q=0.9,en;q=0.8"), Locale::ZhTw),
            (Some("en-US,en;q=0.9"), Locale::En),
            (Some("fr, en;q=0.5, zh;q=0.7"), Locale::ZhTw),
            (Some("de"), Locale::En),
        ];
        for (header, expected) in cases {
            assert_eq!(negotiate_locale(header), expected, "{header:?}");
        }
    }
}
