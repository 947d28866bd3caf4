//! youtube insights (`platform-apis.md` §6.5–6.6): the channel from `channels?mine=true`, its
//! uploads from the uploads playlist, and every number from YouTube Analytics `reports`
//! (`ids=channel==MINE`; per video with `dimensions=video&filters=video==…`, one call for a
//! whole list).

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use super::{
    DailyMetrics, InsightsContext, InsightsQuery, MetricFailure, PostId,
    bodies::{
        AccountBody, DateRange, InsightsBody, PostBody, PostsBody, YoutubeAccountBody,
        YoutubeAccountData, YoutubePostBody, YoutubePostData, YoutubePostsBody, YoutubePostsData,
        YoutubeVideo, number_or_null,
    },
    each_metric, failed_as_null, has_failed,
};
use crate::{
    domain::plan::Platform,
    platforms::{
        PlatformError, SendTraced,
        ids::{ApiPath, InvalidId, YoutubeVideoId},
        youtube::{SCOPE_ANALYTICS, SCOPE_READONLY, classify, needs_scope},
    },
};

/// Channel metrics (spec §2.8).
pub const CHANNEL_METRICS: [&str; 8] = [
    "views",
    "likes",
    "comments",
    "shares",
    "estimatedMinutesWatched",
    "averageViewDuration",
    "subscribersGained",
    "subscribersLost",
];
/// The most rows Analytics answers for `dimensions=video` (the top-videos report's
/// `maxResults` limit); longer lists of videos are asked in parts of this size.
const MAX_VIDEO_ROWS: usize = 200;
/// Video metrics.
pub const VIDEO_METRICS: [&str; 6] = [
    "views",
    "likes",
    "comments",
    "shares",
    "estimatedMinutesWatched",
    "averageViewDuration",
];

async fn get(
    ctx: &InsightsContext<'_>,
    url: url::Url,
    params: &[(&str, &str)],
) -> Result<Value, PlatformError> {
    let url_is_analytics = url.path().ends_with("/v2/reports");
    let response = ctx
        .http
        .get(url)
        .query(params)
        .bearer_auth(ctx.credentials.access_token.expose_secret())
        .timeout(std::time::Duration::from_secs(
            ctx.config.call_timeout_secs.max(1),
        ))
        .send_traced("youtube")
        .await
        .map_err(PlatformError::from_reqwest)?;
    let status = response.status();
    let text = response.text().await.map_err(PlatformError::from_reqwest)?;
    if !status.is_success() {
        // Reports need the Analytics scope; channels, playlists and videos the read-only one.
        let scope = if url_is_analytics {
            SCOPE_ANALYTICS
        } else {
            SCOPE_READONLY
        };
        return Err(needs_scope(classify(status, &text, Utc::now()), scope));
    }
    serde_json::from_str(&text).map_err(|e| {
        PlatformError::Transient(format!("youtube answered something that is not JSON: {e}"))
    })
}

fn data_url(ctx: &InsightsContext<'_>, resource: &'static str) -> Result<url::Url, PlatformError> {
    ApiPath::fixed("youtube/v3")
        .then(resource)
        .on(&ctx.config.youtube_url)
}

/// The authorized channel: its id and uploads playlist.
async fn channel(ctx: &InsightsContext<'_>) -> Result<(String, String), PlatformError> {
    let body = get(
        ctx,
        data_url(ctx, "channels")?,
        &[("part", "id,contentDetails"), ("mine", "true")],
    )
    .await?;
    let item = &body["items"][0];
    let id = item["id"]
        .as_str()
        .ok_or_else(|| PlatformError::Rejected("the token has no youtube channel".into()))?;
    let uploads = item["contentDetails"]["relatedPlaylists"]["uploads"]
        .as_str()
        .unwrap_or_default();
    Ok((id.to_string(), uploads.to_string()))
}

/// A report: `dimension` (`None`, `day` or `video`) → rows as (dimension value, metric → value).
async fn report(
    ctx: &InsightsContext<'_>,
    metrics: &[&str],
    start: NaiveDate,
    end: NaiveDate,
    dimension: Option<&str>,
    videos: &[String],
) -> Result<(Vec<(String, BTreeMap<String, Value>)>, Vec<MetricFailure>), PlatformError> {
    let url = ApiPath::fixed("v2/reports").on(&ctx.config.youtube_analytics_url)?;
    let (start, end) = (start.to_string(), end.to_string());
    let filter = (!videos.is_empty()).then(|| format!("video=={}", videos.join(",")));
    let (tables, failures) = each_metric(metrics, |metrics| {
        let (url, start, end, filter) = (&url, &start, &end, &filter);
        async move {
            let mut params = vec![
                ("ids", "channel==MINE"),
                ("startDate", start.as_str()),
                ("endDate", end.as_str()),
                ("metrics", metrics.as_str()),
            ];
            if let Some(dimension) = dimension {
                params.push(("dimensions", dimension));
            }
            // The "top videos" report (`dimensions=video`) is only served with a row limit
            // (at most 200) and a descending sort on one of the requested metrics; without
            // them Google refuses the whole query. The first metric of this request is always
            // one it asks for, also when `each_metric` asks for the metrics one by one.
            let sort = format!("-{}", metrics.split(',').next().unwrap_or_default());
            let max_results = videos.len().clamp(1, MAX_VIDEO_ROWS).to_string();
            if dimension == Some("video") {
                params.push(("maxResults", max_results.as_str()));
                params.push(("sort", sort.as_str()));
            }
            if let Some(filter) = filter {
                params.push(("filters", filter.as_str()));
            }
            Ok(vec![get(ctx, url.clone(), &params).await?])
        }
    })
    .await?;
    // Merge the tables (one, or one per metric) by their dimension value.
    let mut rows: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for table in &tables {
        let headers: Vec<(String, bool)> = table["columnHeaders"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|h| {
                (
                    h["name"].as_str().unwrap_or_default().to_string(),
                    h["columnType"] == "DIMENSION",
                )
            })
            .collect();
        for row in table["rows"].as_array().into_iter().flatten() {
            let cells = row.as_array().cloned().unwrap_or_default();
            let key = headers
                .iter()
                .zip(&cells)
                .find(|((_, dim), _)| *dim)
                .map(|(_, cell)| cell.as_str().unwrap_or_default().to_string())
                .unwrap_or_default();
            let entry = rows.entry(key).or_default();
            for ((name, dim), cell) in headers.iter().zip(cells) {
                if !dim {
                    entry.insert(name.clone(), cell);
                }
            }
        }
    }
    // A metric that came back without rows is zero (nothing was measured in the range); a
    // failed one is unknown, so null.
    for entry in rows.values_mut() {
        for metric in metrics {
            if !has_failed(&failures, metric) {
                entry.entry((*metric).to_string()).or_insert(json!(0));
            }
        }
        entry.extend(failed_as_null(&failures));
    }
    if rows.is_empty() && dimension.is_none() {
        let zeros = metrics
            .iter()
            .filter(|m| !has_failed(&failures, m))
            .map(|m| ((*m).to_string(), json!(0)))
            .chain(failed_as_null(&failures))
            .collect();
        rows.insert(String::new(), zeros);
    }
    Ok((rows.into_iter().collect(), failures))
}

/// The channel's latest uploads: (video id, title, published at, thumbnail).
async fn uploads(
    ctx: &InsightsContext<'_>,
    playlist: &str,
    limit: u32,
) -> Result<Vec<(String, String, String, String)>, PlatformError> {
    let mut videos = Vec::new();
    let mut page_token: Option<String> = None;
    while videos.len() < limit as usize {
        let max = (limit as usize - videos.len()).min(50).to_string();
        let mut params = vec![
            ("part", "snippet,contentDetails"),
            ("playlistId", playlist),
            ("maxResults", max.as_str()),
        ];
        if let Some(token) = &page_token {
            params.push(("pageToken", token.as_str()));
        }
        let body = get(ctx, data_url(ctx, "playlistItems")?, &params).await?;
        for item in body["items"].as_array().into_iter().flatten() {
            let snippet = &item["snippet"];
            // The ids go into the report's `filters=video==a,b`: a `,` or `;` in one would
            // change the filter.
            let video_id = YoutubeVideoId::parse(
                item["contentDetails"]["videoId"]
                    .as_str()
                    .unwrap_or_default(),
            )
            .map_err(InvalidId::unexpected)?;
            videos.push((
                video_id.into(),
                snippet["title"].as_str().unwrap_or_default().to_string(),
                item["contentDetails"]["videoPublishedAt"]
                    .as_str()
                    .or(snippet["publishedAt"].as_str())
                    .unwrap_or_default()
                    .to_string(),
                snippet["thumbnails"]["high"]["url"]
                    .as_str()
                    .or(snippet["thumbnails"]["default"]["url"].as_str())
                    .unwrap_or_default()
                    .to_string(),
            ));
        }
        match body["nextPageToken"].as_str() {
            Some(token) => page_token = Some(token.to_string()),
            None => break,
        }
    }
    videos.truncate(limit as usize);
    Ok(videos)
}

fn published_day(published_at: &str) -> Option<NaiveDate> {
    DateTime::parse_from_rfc3339(published_at)
        .ok()
        .map(|t| t.with_timezone(&Utc).date_naive())
}

/// Lifetime video metrics of `videos`, one report.
async fn video_metrics(
    ctx: &InsightsContext<'_>,
    videos: &[(String, String, String, String)],
) -> Result<
    (
        BTreeMap<String, BTreeMap<String, Value>>,
        Vec<MetricFailure>,
    ),
    PlatformError,
> {
    if videos.is_empty() {
        return Ok((BTreeMap::new(), Vec::new()));
    }
    let today = Utc::now().date_naive();
    let start = videos
        .iter()
        .filter_map(|(_, _, at, _)| published_day(at))
        .min()
        .unwrap_or(today)
        .min(today);
    let ids: Vec<String> = videos.iter().map(|(id, ..)| id.clone()).collect();
    video_report(ctx, &VIDEO_METRICS, start, today, &ids).await
}

/// A `dimensions=video` report of `ids`, asked in parts of [`MAX_VIDEO_ROWS`] (the report's
/// row limit): video id → metric → value.
async fn video_report(
    ctx: &InsightsContext<'_>,
    metrics: &[&str],
    start: NaiveDate,
    end: NaiveDate,
    ids: &[String],
) -> Result<
    (
        BTreeMap<String, BTreeMap<String, Value>>,
        Vec<MetricFailure>,
    ),
    PlatformError,
> {
    let mut all = BTreeMap::new();
    let mut failures: Vec<MetricFailure> = Vec::new();
    for part in ids.chunks(MAX_VIDEO_ROWS) {
        let (rows, failed) = report(ctx, metrics, start, end, Some("video"), part).await?;
        all.extend(rows);
        for failure in failed {
            if !failures.iter().any(|f| f.metric == failure.metric) {
                failures.push(failure);
            }
        }
    }
    Ok((all, failures))
}

fn video_item(
    video: &(String, String, String, String),
    metrics: Option<&BTreeMap<String, Value>>,
    failures: &[MetricFailure],
) -> YoutubeVideo {
    let (id, title, published_at, thumbnail) = video;
    // A video without a row had nothing measured in the range (0); a failed metric is unknown
    // (null) whatever the rows say.
    let metrics = VIDEO_METRICS
        .iter()
        .map(|m| {
            let value = if has_failed(failures, m) {
                None
            } else {
                match metrics.and_then(|all| all.get(*m)) {
                    Some(cell) => number_or_null(cell),
                    None => Some(0.into()),
                }
            };
            ((*m).to_string(), value)
        })
        .collect();
    YoutubeVideo {
        video_id: id.clone(),
        title: title.clone(),
        published_at: published_at.clone(),
        thumbnail: thumbnail.clone(),
        metrics,
    }
}

pub async fn query(
    ctx: &InsightsContext<'_>,
    query: &InsightsQuery,
) -> Result<InsightsBody, PlatformError> {
    match query {
        InsightsQuery::Account { since, until, .. } => {
            let (channel_id, _) = channel(ctx).await?;
            let (rows, failures) = report(ctx, &CHANNEL_METRICS, *since, *until, None, &[]).await?;
            let metrics = rows
                .into_iter()
                .next()
                .map(|(_, m)| m)
                .unwrap_or_default()
                .into_iter()
                .map(|(name, value)| (name, number_or_null(&value)))
                .collect();
            Ok(InsightsBody::Account(AccountBody::Youtube(
                YoutubeAccountBody {
                    success: true,
                    data: YoutubeAccountData {
                        account_id: ctx.account.account_id,
                        account_name: ctx.account.name.clone(),
                        platform: Platform::Youtube,
                        channel_id,
                        date_range: DateRange {
                            start: *since,
                            end: *until,
                        },
                        metrics,
                    },
                    failed_metrics: failures,
                },
            )))
        }
        InsightsQuery::Posts { limit } => {
            let (_, playlist) = channel(ctx).await?;
            let videos = uploads(ctx, &playlist, *limit).await?;
            let (metrics, failures) = video_metrics(ctx, &videos).await?;
            let items: Vec<YoutubeVideo> = videos
                .iter()
                .map(|v| video_item(v, metrics.get(&v.0), &failures))
                .collect();
            Ok(InsightsBody::Posts(PostsBody::Youtube(YoutubePostsBody {
                success: true,
                data: YoutubePostsData {
                    account_id: ctx.account.account_id,
                    account_name: ctx.account.name.clone(),
                    platform: Platform::Youtube,
                    count: items.len(),
                    videos: items,
                },
                failed_metrics: failures,
            })))
        }
        InsightsQuery::Post { post_id } => {
            let PostId::Youtube(id) = post_id else {
                return Err(post_id.mismatch(Platform::Youtube));
            };
            let body = get(
                ctx,
                data_url(ctx, "videos")?,
                &[("part", "snippet"), ("id", id.as_str())],
            )
            .await?;
            // `videos.list` answers an id it has no video for with an empty `items`, not an
            // error.
            let item = &body["items"][0];
            if item.is_null() {
                return Err(PlatformError::NotFound(format!(
                    "youtube has no video {id} on this channel"
                )));
            }
            let snippet = &item["snippet"];
            let video = (
                id.to_string(),
                snippet["title"].as_str().unwrap_or_default().to_string(),
                snippet["publishedAt"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                snippet["thumbnails"]["high"]["url"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
            let (metrics, failures) = video_metrics(ctx, std::slice::from_ref(&video)).await?;
            let video = video_item(&video, metrics.get(id.as_str()), &failures);
            Ok(InsightsBody::Post(PostBody::Youtube(YoutubePostBody {
                success: true,
                data: YoutubePostData {
                    account_id: ctx.account.account_id,
                    account_name: ctx.account.name.clone(),
                    platform: Platform::Youtube,
                    video,
                },
                failed_metrics: failures,
            })))
        }
    }
}

pub async fn daily(
    ctx: &InsightsContext<'_>,
    date: NaiveDate,
) -> Result<DailyMetrics, PlatformError> {
    // The failed channel metrics are null in `page_metrics` (set by `report`); a failed
    // video `views` below only joins `failed_metrics`, the channel's own views stay.
    let (rows, mut failed_metrics) = report(ctx, &CHANNEL_METRICS, date, date, None, &[]).await?;
    let page_metrics = rows.into_iter().next().map(|(_, m)| m).unwrap_or_default();
    let (_, playlist) = channel(ctx).await?;
    let that_day: Vec<_> = uploads(ctx, &playlist, 50)
        .await?
        .into_iter()
        .filter(|(_, _, at, _)| published_day(at) == Some(date))
        .collect();
    let mut total_post_views = 0;
    if !that_day.is_empty() {
        let ids: Vec<String> = that_day.iter().map(|(id, ..)| id.clone()).collect();
        let (rows, failures) = video_report(ctx, &["views"], date, date, &ids).await?;
        total_post_views = rows
            .values()
            .map(|m| m.get("views").and_then(Value::as_u64).unwrap_or(0))
            .sum();
        failed_metrics.extend(failures);
    }
    Ok(DailyMetrics {
        page_metrics,
        posts_count: that_day.len() as u64,
        total_post_views: Some(total_post_views),
        failed_metrics,
    })
}
