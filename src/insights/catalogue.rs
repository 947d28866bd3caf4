//! The metric identifiers each platform offers (spec §2.8), as `GET /api/performance/metrics`
//! lists them (spec §4.4). No platform call.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{AccountSummary, facebook, instagram, threads, tiktok, youtube};
use crate::domain::plan::Platform;

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

/// Metric names as the platform writes them.
type Names = &'static [&'static str];

/// A metric with what it counts and its level (`GET /api/performance/metrics`: threads,
/// youtube, tiktok).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DescribedMetric {
    pub name: &'static str,
    /// Empty where there is no description.
    pub description: &'static str,
    /// `account`, `thread`, `channel` or `video`.
    pub level: &'static str,
}

/// `GET /api/performance/metrics`: the platform's metric identifiers (spec §4.4). Each
/// platform's body has its own shape, so the variants are untagged.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum MetricsBody {
    Facebook(FacebookMetricsBody),
    Instagram(InstagramMetricsBody),
    Threads(ThreadsMetricsBody),
    Youtube(YoutubeMetricsBody),
    Tiktok(TiktokMetricsBody),
}

/// Facebook's metric catalogue.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FacebookMetricsBody {
    /// Always `true`.
    pub success: bool,
    pub account_id: Uuid,
    pub platform: Platform,
    pub page_name: String,
    pub metrics: FacebookMetricNames,
    /// The Meta deprecations behind the list.
    pub note: &'static str,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FacebookMetricNames {
    #[schema(value_type = Vec<String>)]
    pub page_metrics: Names,
    #[schema(value_type = Vec<String>)]
    pub post_metrics: Names,
}

/// Instagram's metric catalogue.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InstagramMetricsBody {
    /// Always `true`.
    pub success: bool,
    pub account_id: Uuid,
    pub platform: Platform,
    /// The username, or the account's name where there is none.
    pub ig_username: String,
    pub metrics: InstagramMetricNames,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InstagramMetricNames {
    #[schema(value_type = Vec<String>)]
    pub account_metrics: Names,
    /// By media type.
    pub media_metrics: InstagramMediaMetricNames,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[allow(non_snake_case)] // The media types as Graph writes them.
pub struct InstagramMediaMetricNames {
    #[schema(value_type = Vec<String>)]
    pub IMAGE: Names,
    #[schema(value_type = Vec<String>)]
    pub VIDEO: Names,
    #[schema(value_type = Vec<String>)]
    pub REELS: Names,
    #[schema(value_type = Vec<String>)]
    pub CAROUSEL_ALBUM: Names,
}

/// Threads's metric catalogue: `{success, data}` with described metrics.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadsMetricsBody {
    /// Always `true`.
    pub success: bool,
    pub data: ThreadsMetrics,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ThreadsMetrics {
    pub account_id: Uuid,
    pub account_name: String,
    pub platform: Platform,
    pub account_metrics: Vec<DescribedMetric>,
    pub thread_metrics: Vec<DescribedMetric>,
}

/// Youtube's metric catalogue: `{success, data}` with described metrics.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct YoutubeMetricsBody {
    /// Always `true`.
    pub success: bool,
    pub data: YoutubeMetrics,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct YoutubeMetrics {
    pub account_id: Uuid,
    pub account_name: String,
    pub platform: Platform,
    pub channel_metrics: Vec<DescribedMetric>,
    pub video_metrics: Vec<DescribedMetric>,
}

/// Tiktok's metric catalogue: `{success, data}` with described metrics.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TiktokMetricsBody {
    /// Always `true`.
    pub success: bool,
    pub data: TiktokMetrics,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TiktokMetrics {
    pub account_id: Uuid,
    pub account_name: String,
    pub platform: Platform,
    pub account_metrics: Vec<DescribedMetric>,
    pub video_metrics: Vec<DescribedMetric>,
}

fn described(metrics: &[&'static str], level: &'static str) -> Vec<DescribedMetric> {
    metrics
        .iter()
        .map(|name| DescribedMetric {
            name,
            description: description(name),
            level,
        })
        .collect()
}

/// The `GET /api/performance/metrics` body for the account; `None` where the platform has no
/// performance metrics (x).
pub fn metrics_body(account: &AccountSummary) -> Option<MetricsBody> {
    Some(match account.platform {
        Platform::Facebook => MetricsBody::Facebook(FacebookMetricsBody {
            success: true,
            account_id: account.account_id,
            platform: account.platform,
            page_name: account.name.clone(),
            metrics: FacebookMetricNames {
                page_metrics: &facebook::PAGE_METRICS,
                post_metrics: &facebook::POST_METRICS,
            },
            note: "page_impressions, page_impressions_unique, page_fan_adds, page_fan_removes and page_views_total were deprecated by Meta on 2025-11-15, and post_impressions and post_impressions_unique with them; page_media_view replaces page_impressions and post_media_view replaces post_impressions.",
        }),
        Platform::Instagram => MetricsBody::Instagram(InstagramMetricsBody {
            success: true,
            account_id: account.account_id,
            platform: account.platform,
            ig_username: account
                .username
                .clone()
                .unwrap_or_else(|| account.name.clone()),
            metrics: InstagramMetricNames {
                account_metrics: &instagram::ACCOUNT_METRICS,
                media_metrics: InstagramMediaMetricNames {
                    IMAGE: &instagram::MEDIA_METRICS,
                    VIDEO: &instagram::MEDIA_METRICS,
                    REELS: &instagram::REELS_METRICS,
                    CAROUSEL_ALBUM: &instagram::MEDIA_METRICS,
                },
            },
        }),
        Platform::Threads => MetricsBody::Threads(ThreadsMetricsBody {
            success: true,
            data: ThreadsMetrics {
                account_id: account.account_id,
                account_name: account.name.clone(),
                platform: account.platform,
                account_metrics: described(&threads::ACCOUNT_METRICS, "account"),
                thread_metrics: described(&threads::THREAD_METRICS, "thread"),
            },
        }),
        Platform::Youtube => MetricsBody::Youtube(YoutubeMetricsBody {
            success: true,
            data: YoutubeMetrics {
                account_id: account.account_id,
                account_name: account.name.clone(),
                platform: account.platform,
                channel_metrics: described(&youtube::CHANNEL_METRICS, "channel"),
                video_metrics: described(&youtube::VIDEO_METRICS, "video"),
            },
        }),
        Platform::Tiktok => MetricsBody::Tiktok(TiktokMetricsBody {
            success: true,
            data: TiktokMetrics {
                account_id: account.account_id,
                account_name: account.name.clone(),
                platform: account.platform,
                account_metrics: described(&tiktok::ACCOUNT_METRICS, "account"),
                video_metrics: described(&tiktok::VIDEO_METRICS, "video"),
            },
        }),
        Platform::X => return None,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::{Value, json};

    use super::*;

    // The `json!` bodies this module answered before they were typed, kept as the reference
    // the typed bodies must equal member for member.
    fn described_json(metrics: &[&str], level: &str) -> Vec<Value> {
        metrics
            .iter()
            .map(|m| json!({"name": m, "description": description(m), "level": level}))
            .collect()
    }

    fn metrics_json(account: &AccountSummary) -> Option<Value> {
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
                    described_json(&threads::ACCOUNT_METRICS, "account"),
                ),
                (
                    "thread_metrics",
                    described_json(&threads::THREAD_METRICS, "thread"),
                ),
            ),
            Platform::Youtube => data(
                (
                    "channel_metrics",
                    described_json(&youtube::CHANNEL_METRICS, "channel"),
                ),
                (
                    "video_metrics",
                    described_json(&youtube::VIDEO_METRICS, "video"),
                ),
            ),
            Platform::Tiktok => data(
                (
                    "account_metrics",
                    described_json(&tiktok::ACCOUNT_METRICS, "account"),
                ),
                (
                    "video_metrics",
                    described_json(&tiktok::VIDEO_METRICS, "video"),
                ),
            ),
            Platform::X => return None,
        })
    }

    #[test]
    fn typed_catalogue_equals_the_json_bodies() {
        for platform in [
            Platform::Facebook,
            Platform::Instagram,
            Platform::Threads,
            Platform::Youtube,
            Platform::Tiktok,
            Platform::X,
        ] {
            for username in [None, Some("handle".to_string())] {
                let account = AccountSummary {
                    account_id: Uuid::new_v4(),
                    platform,
                    name: "Name".into(),
                    username,
                };
                let typed = metrics_body(&account).map(|body| serde_json::to_value(body).unwrap());
                assert_eq!(typed, metrics_json(&account), "{platform:?}");
            }
        }
    }
}
