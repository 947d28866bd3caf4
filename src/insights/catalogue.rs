//! The metric identifiers each platform offers (spec §2.8), as `GET /api/performance/metrics`
//! lists them (spec §4.4). No platform call.

use serde_json::{Value, json};

use super::{AccountSummary, facebook, instagram, threads, tiktok, youtube};
use crate::publish::plan::Platform;

fn description(metric: &str) -> &'static str {
    match metric {
        "views" => "Times the content was viewed",
        "likes" => "Likes",
        "replies" => "Replies",
        "reposts" => "Reposts",
        "quotes" => "Quotes",
        "followers_count" => "Followers (total at the end of the range)",
        "comments" => "Comments",
        "shares" => "Shares",
        "estimatedMinutesWatched" => "Minutes watched (minutes)",
        "averageViewDuration" => "Average view duration (seconds)",
        "subscribersGained" => "Subscribers gained",
        "subscribersLost" => "Subscribers lost",
        "follower_count" => "Followers",
        "following_count" => "Accounts followed",
        "likes_count" => "Likes received across all videos",
        "video_count" => "Public videos",
        "view_count" => "Video views",
        "like_count" => "Video likes",
        "comment_count" => "Video comments",
        "share_count" => "Video shares",
        _ => "",
    }
}

fn described(metrics: &[&str], level: &str) -> Vec<Value> {
    metrics
        .iter()
        .map(|m| json!({"name": m, "description": description(m), "level": level}))
        .collect()
}

/// The `GET /api/performance/metrics` body for the account; `None` where the platform has no
/// performance metrics (x).
pub fn metrics_body(account: &AccountSummary) -> Option<Value> {
    let head = |extra: Value| {
        let mut body = json!({
            "success": true,
            "account_id": account.account_id,
            "platform": account.platform.as_str(),
        });
        if let (Value::Object(body), Value::Object(extra)) = (&mut body, extra) {
            body.extend(extra);
        }
        body
    };
    let data = |first: (&str, Vec<Value>), second: (&str, Vec<Value>)| {
        json!({"success": true, "data": {
            "account_id": account.account_id,
            "account_name": account.name,
            "platform": account.platform.as_str(),
            first.0: first.1,
            second.0: second.1,
        }})
    };
    Some(match account.platform {
        Platform::Facebook => head(json!({
            "page_name": account.name,
            "metrics": {
                "page_metrics": facebook::PAGE_METRICS,
                "post_metrics": facebook::POST_METRICS,
            },
            "note": "page_impressions, page_impressions_unique, page_fan_adds, page_fan_removes and page_views_total were deprecated by Meta on 2025-11-15, and post_impressions and post_impressions_unique with them; page_media_view replaces page_impressions and post_media_view replaces post_impressions.",
        })),
        Platform::Instagram => head(json!({
            "ig_username": account.username.clone().unwrap_or_else(|| account.name.clone()),
            "metrics": {
                "account_metrics": instagram::ACCOUNT_METRICS,
                "media_metrics": {
                    "IMAGE": instagram::MEDIA_METRICS,
                    "VIDEO": instagram::MEDIA_METRICS,
                    "REELS": instagram::REELS_METRICS,
                    "CAROUSEL_ALBUM": instagram::MEDIA_METRICS,
                },
            },
        })),
        Platform::Threads => data(
            (
                "account_metrics",
                described(&threads::ACCOUNT_METRICS, "account"),
            ),
            (
                "thread_metrics",
                described(&threads::THREAD_METRICS, "thread"),
            ),
        ),
        Platform::Youtube => data(
            (
                "channel_metrics",
                described(&youtube::CHANNEL_METRICS, "channel"),
            ),
            ("video_metrics", described(&youtube::VIDEO_METRICS, "video")),
        ),
        Platform::Tiktok => data(
            (
                "account_metrics",
                described(&tiktok::ACCOUNT_METRICS, "account"),
            ),
            ("video_metrics", described(&tiktok::VIDEO_METRICS, "video")),
        ),
        Platform::X => return None,
    })
}
