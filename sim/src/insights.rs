//! What the simulated platforms report about performance: deterministic numbers (a hash of the
//! account, the metric, the post and the date, so the same question always gets the same
//! answer) and each account's posts (a few seeded ones over the last 30 days, plus what was
//! published through the simulator).
//!
//! The platform modules render these in their own wire formats.

use chrono::{DateTime, Duration, NaiveDate, TimeZone, Utc};

use super::state::{SimAccount, SimState};

/// Facebook metrics removed from the Graph API: asking for one is an invalid-metric error.
pub const FACEBOOK_DEPRECATED: [&str; 11] = [
    "page_impressions",
    "page_impressions_unique",
    "page_impressions_paid",
    "page_impressions_organic",
    "page_fan_adds",
    "page_fan_removes",
    "page_fans",
    "page_views_total",
    "page_engaged_users",
    "post_impressions",
    "post_impressions_unique",
];
pub const FACEBOOK_PAGE_METRICS: [&str; 6] = [
    "page_media_view",
    "page_total_media_view_unique",
    "page_post_engagements",
    "page_total_actions",
    "page_daily_follows",
    "page_follows",
];
pub const FACEBOOK_POST_METRICS: [&str; 4] = [
    "post_media_view",
    "post_total_media_view_unique",
    "post_reactions_by_type_total",
    "post_clicks",
];
pub const INSTAGRAM_USER_METRICS: [&str; 13] = [
    "reach",
    "views",
    "follower_count",
    "profile_views",
    "website_clicks",
    "accounts_engaged",
    "total_interactions",
    "likes",
    "comments",
    "shares",
    "saves",
    "replies",
    "profile_links_taps",
];
/// Instagram user metrics Meta serves only as a total over the range: asked without
/// `metric_type=total_value` they are refused with code 100 (IG User Insights reference, metric
/// table: only `reach` and `follower_count` come as time series).
pub const INSTAGRAM_TOTAL_VALUE_ONLY: [&str; 11] = [
    "views",
    "profile_views",
    "website_clicks",
    "accounts_engaged",
    "total_interactions",
    "likes",
    "comments",
    "shares",
    "saves",
    "replies",
    "profile_links_taps",
];
/// Metrics every instagram media type has.
pub const INSTAGRAM_MEDIA_METRICS: [&str; 7] = [
    "reach",
    "views",
    "likes",
    "comments",
    "shares",
    "saved",
    "total_interactions",
];
/// Metrics only reels have.
pub const INSTAGRAM_REELS_ONLY: [&str; 2] =
    ["ig_reels_avg_watch_time", "ig_reels_video_view_total_time"];
pub const THREADS_MEDIA_METRICS: [&str; 6] =
    ["views", "likes", "replies", "reposts", "quotes", "shares"];
pub const THREADS_USER_METRICS: [&str; 7] = [
    "views",
    "likes",
    "replies",
    "reposts",
    "quotes",
    "clicks",
    "followers_count",
];
pub const YOUTUBE_METRICS: [&str; 8] = [
    "views",
    "likes",
    "comments",
    "shares",
    "estimatedMinutesWatched",
    "averageViewDuration",
    "subscribersGained",
    "subscribersLost",
];

/// A post as the simulated platform lists it.
#[derive(Debug, Clone)]
pub struct SimPost {
    pub id: String,
    pub text: String,
    pub created: DateTime<Utc>,
    /// Platform kind: facebook `status`; instagram `IMAGE`/`CAROUSEL_ALBUM`/`REELS`; threads
    /// `TEXT_POST`/`IMAGE`/`CAROUSEL_ALBUM`/`VIDEO`; youtube/tiktok `VIDEO`.
    pub kind: String,
    pub is_reply: bool,
}

/// A number in `0..max` for this account, metric, object and date: the simulator's stand-in for
/// what the platform measured.
pub fn value(account: &str, metric: &str, object: &str, date: Option<NaiveDate>, max: u64) -> u64 {
    // FNV-1a: stable across runs and builds (the standard hasher is randomly seeded).
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let date = date.map(|d| d.to_string()).unwrap_or_default();
    for part in [account, metric, object, &date] {
        for byte in part.bytes().chain(std::iter::once(0)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash % max.max(1)
}

/// The usual size of a metric (so views outnumber likes, durations look like durations).
pub fn scale(metric: &str) -> u64 {
    match metric {
        "views"
        | "page_media_view"
        | "post_media_view"
        | "reach"
        | "view_count"
        | "page_total_media_view_unique"
        | "post_total_media_view_unique" => 5_000,
        "follower_count" | "followers_count" | "page_follows" => 20_000,
        "estimatedMinutesWatched" => 3_000,
        "averageViewDuration" => 300,
        "ig_reels_avg_watch_time" => 30_000,
        "ig_reels_video_view_total_time" => 5_000_000,
        _ => 400,
    }
}

/// A daily value of an account-level metric.
pub fn daily(account: &SimAccount, metric: &str, date: NaiveDate) -> u64 {
    value(&account.external_id, metric, "", Some(date), scale(metric))
}

/// A lifetime value of a post's metric.
pub fn lifetime(account: &SimAccount, metric: &str, post: &str) -> u64 {
    value(&account.external_id, metric, post, None, scale(metric))
}

/// The account's posts, newest first: six seeded over the last 30 days and those published
/// through the simulator (not replies for facebook/instagram, which have none).
pub fn posts(state: &SimState, account: &SimAccount) -> Vec<SimPost> {
    let today = Utc::now().date_naive();
    let mut posts: Vec<SimPost> = (0..6)
        .map(|i| {
            let day = today - Duration::days(1 + 5 * i64::from(i));
            let created = Utc.from_utc_datetime(&day.and_hms_opt(10, 0, 0).unwrap_or_default());
            SimPost {
                id: seeded_id(account, i),
                text: format!("{} post {}", account.name, i + 1),
                created,
                kind: seeded_kind(&account.platform, i).to_string(),
                is_reply: false,
            }
        })
        .collect();
    for item in state.published(Some(&account.platform), Some(&account.external_id)) {
        let kind = match (account.platform.as_str(), item.kind.as_str()) {
            ("instagram", "carousel") => "CAROUSEL_ALBUM",
            ("instagram", "reels") => "REELS",
            ("instagram", _) => "IMAGE",
            ("threads", "text") => "TEXT_POST",
            ("threads", "image") => "IMAGE",
            ("threads", "video") => "VIDEO",
            ("threads", "carousel") => "CAROUSEL_ALBUM",
            ("facebook", _) => "status",
            _ => "VIDEO",
        };
        posts.push(SimPost {
            id: item.id.clone(),
            // A youtube video's name is its title (its text is the description).
            text: item.extra["title"]
                .as_str()
                .map(str::to_string)
                .or_else(|| item.text.clone())
                .unwrap_or_default(),
            created: item.published_at,
            kind: kind.to_string(),
            is_reply: item.reply_to.is_some(),
        });
    }
    posts.sort_by(|a, b| b.created.cmp(&a.created).then(b.id.cmp(&a.id)));
    posts
}

/// One of the account's posts.
pub fn post(state: &SimState, account: &SimAccount, id: &str) -> Option<SimPost> {
    posts(state, account).into_iter().find(|p| p.id == id)
}

fn seeded_id(account: &SimAccount, index: u8) -> String {
    let ext = &account.external_id;
    match account.platform.as_str() {
        "facebook" => format!("{ext}_{}", 9_000_000 + u32::from(index)),
        // YouTube video ids are 11 characters.
        "youtube" => {
            let tag = value(ext, "video", "", None, 0xFFFF_FFFF);
            format!("sd{tag:08x}{index}")
        }
        // TikTok video ids are 19-digit 64-bit numbers starting with 7.
        "tiktok" => {
            let tag = value(ext, "video", "", None, 1_000_000_000_000_000);
            format!("7{tag:015}{index:03}")
        }
        // Graph ids (instagram, threads media): decimal.
        _ => format!("{ext}9{index:02}"),
    }
}

fn seeded_kind(platform: &str, index: u8) -> &'static str {
    match (platform, index % 3) {
        ("facebook", _) => "status",
        ("instagram", 0) => "IMAGE",
        ("instagram", 1) => "CAROUSEL_ALBUM",
        ("instagram", _) => "REELS",
        ("threads", 0) => "TEXT_POST",
        ("threads", 1) => "IMAGE",
        ("threads", _) => "CAROUSEL_ALBUM",
        _ => "VIDEO",
    }
}

/// The metrics of `requested` that this account's faults make fail, and the unknown ones.
pub fn refused<'a>(
    state: &SimState,
    account: &SimAccount,
    requested: &'a [String],
    valid: &[&str],
) -> Option<&'a str> {
    let failing = state.failing_metrics(&account.platform, &account.external_id);
    requested
        .iter()
        .find(|m| failing.contains(m) || !valid.contains(&m.as_str()))
        .map(String::as_str)
}

/// `since`/`until` as Meta takes them: a unix time or `YYYY-MM-DD`.
pub fn meta_date(raw: &str) -> Option<NaiveDate> {
    if let Ok(secs) = raw.parse::<i64>() {
        return DateTime::from_timestamp(secs, 0).map(|t| t.date_naive());
    }
    NaiveDate::parse_from_str(raw, "%Y-%m-%d").ok()
}

/// The comma-separated `metric` parameter.
pub fn metric_list(raw: Option<&str>) -> Vec<String> {
    raw.unwrap_or_default()
        .split(',')
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;

    /// Graph ids are decimal numbers.
    fn graph_id(id: &str) -> bool {
        !id.is_empty() && id.len() <= 32 && id.bytes().all(|b| b.is_ascii_digit())
    }

    /// The platforms' id shapes as their documentation shows them (not the service's parsers:
    /// the simulator shares no code with the adapters).
    #[test]
    fn seeded_ids_fit_the_platforms_grammars() {
        let state = SimState::new(Duration::from_millis(1));
        for platform in ["facebook", "instagram", "threads", "youtube", "tiktok"] {
            let account = state.create_account(platform, "seeded", None);
            assert!(graph_id(&account.external_id), "{platform}");
            let posts = posts(&state, &account);
            assert_eq!(posts.len(), 6, "{platform}");
            for post in posts {
                let fits = match platform {
                    // `{page-id}_{post-id}`.
                    "facebook" => post
                        .id
                        .split_once('_')
                        .is_some_and(|(page, id)| graph_id(page) && graph_id(id)),
                    // Eleven characters of URL-safe base64.
                    "youtube" => {
                        post.id.len() == 11
                            && post
                                .id
                                .bytes()
                                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                    }
                    // Nineteen digits starting with 7, as TikTok's video ids are.
                    "tiktok" => {
                        graph_id(&post.id) && post.id.len() == 19 && post.id.starts_with('7')
                    }
                    _ => graph_id(&post.id),
                };
                assert!(fits, "{platform}: {}", post.id);
            }
        }
    }
}
