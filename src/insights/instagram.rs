//! instagram insights (Graph API, `platform-apis.md` §3.4–3.6): account metrics from
//! `/{ig-user}/insights` as daily series, media from `/{ig-user}/media`, and each media's
//! metrics from `/{media}/insights` with the metrics its type has (spec §2.8: reels have more).

use chrono::{Duration, NaiveDate};
use serde_json::{Value, json};

use super::{
    DailyMetrics, InsightsContext, InsightsQuery, MetricFailure, PostId,
    bodies::{
        AccountBody, DateRange, DatedValue, IgAccountId, InsightsBody, InstagramAccountBody,
        InstagramAccountData, InstagramMedia, InstagramMediaInsights, InstagramMediaList,
        InstagramPostBody, InstagramPostsBody, MetricValues, PostBody, PostsBody, TimeSeries, text,
    },
    day_window, each_metric,
    facebook::series_of,
    failed_as_none, failed_as_null, meta_value, unix_day, values_on,
};
use crate::{
    domain::plan::Platform,
    platforms::{
        PlatformError,
        ids::{ApiPath, GraphId, InvalidId},
        meta::Graph,
    },
};

/// Account metrics (spec §2.8).
pub const ACCOUNT_METRICS: [&str; 4] =
    ["reach", "follower_count", "profile_views", "website_clicks"];
/// The account metrics Meta serves as daily series (`metric_type=time_series`).
const SERIES_METRICS: [&str; 2] = ["reach", "follower_count"];
/// The account metrics Meta serves only as a total over the range: asked without
/// `metric_type=total_value` they are refused with code 100, so they are asked apart.
const TOTAL_METRICS: [&str; 2] = ["profile_views", "website_clicks"];
/// Metrics of IMAGE, VIDEO and CAROUSEL_ALBUM media.
pub const MEDIA_METRICS: [&str; 2] = ["reach", "total_interactions"];
/// Metrics of REELS.
pub const REELS_METRICS: [&str; 8] = [
    "reach",
    "total_interactions",
    "likes",
    "comments",
    "shares",
    "saved",
    "ig_reels_avg_watch_time",
    "ig_reels_video_view_total_time",
];
const MEDIA_FIELDS: &str =
    "id,caption,media_type,media_product_type,permalink,timestamp,like_count,comments_count";

/// graph.facebook.com or graph.instagram.com, by the account's login route. No metric asked
/// for here is one of the Facebook-Login-only ones (`total_likes`, `total_comments`,
/// `total_views`), so both hosts get the same requests.
fn graph<'a>(ctx: &'a InsightsContext<'a>) -> Graph<'a> {
    Graph::instagram_for(ctx.http, ctx.config, ctx.credentials)
}

/// The spec's media type: REELS for reels (their `media_type` is VIDEO), else `media_type`.
fn media_type(raw: &Value) -> String {
    if raw["media_product_type"] == "REELS" {
        "REELS".into()
    } else {
        raw["media_type"].as_str().unwrap_or("IMAGE").to_string()
    }
}

fn metrics_for(media_type: &str) -> &'static [&'static str] {
    if media_type == "REELS" {
        &REELS_METRICS
    } else {
        &MEDIA_METRICS
    }
}

/// The username, or the account's name where there is none.
fn ig_username(ctx: &InsightsContext<'_>) -> String {
    ctx.account
        .username
        .clone()
        .unwrap_or_else(|| ctx.account.name.clone())
}

pub async fn query(
    ctx: &InsightsContext<'_>,
    query: &InsightsQuery,
) -> Result<InsightsBody, PlatformError> {
    match query {
        InsightsQuery::Account {
            period,
            since,
            until,
        } => {
            let insights = account_insights(ctx, period, *since, *until).await?;
            let mut metrics = MetricValues::new();
            let mut time_series = TimeSeries::new();
            for (name, points) in insights.series {
                let total: u64 = if period == "day" && name != "follower_count" {
                    points.iter().map(|(_, v)| v).sum()
                } else {
                    // Follower counts and rolling periods are levels, not flows.
                    points.last().map(|(_, v)| *v).unwrap_or(0)
                };
                metrics.insert(name.clone(), Some(total));
                time_series.insert(
                    name,
                    points
                        .iter()
                        .map(|(date, value)| DatedValue {
                            date: *date,
                            value: *value,
                        })
                        .collect(),
                );
            }
            // Totals over the range have no series of their own.
            metrics.extend(insights.totals.into_iter().map(|(n, v)| (n, Some(v))));
            metrics.extend(failed_as_none(&insights.failures));
            Ok(InsightsBody::Account(AccountBody::Instagram(
                InstagramAccountBody {
                    success: true,
                    account_id: ctx.account.account_id,
                    ig_username: ig_username(ctx),
                    platform: Platform::Instagram,
                    ig_account_id: ctx.credentials.external_id.clone(),
                    data: InstagramAccountData {
                        ig_account_id: IgAccountId::of(&ctx.credentials.external_id),
                        platform: Platform::Instagram,
                        data_type: "account",
                        period: period.clone(),
                        date_range: DateRange {
                            start: *since,
                            end: *until,
                        },
                        metrics,
                        time_series,
                    },
                    failed_metrics: insights.failures,
                },
            )))
        }
        InsightsQuery::Posts { limit } => {
            let (media, failures) = list_media(ctx, &[("limit", &limit.to_string())]).await?;
            Ok(InsightsBody::Posts(PostsBody::Instagram(
                InstagramPostsBody {
                    success: true,
                    account_id: ctx.account.account_id,
                    ig_username: ig_username(ctx),
                    platform: Platform::Instagram,
                    data: InstagramMediaList {
                        total: media.len(),
                        media,
                    },
                    failed_metrics: failures,
                },
            )))
        }
        InsightsQuery::Post { post_id } => {
            let PostId::Instagram(id) = post_id else {
                return Err(post_id.mismatch(Platform::Instagram));
            };
            let raw = graph(ctx)
                .get(
                    &ApiPath::id(id),
                    &[("fields", "id,media_type,media_product_type")],
                )
                .await?;
            let (metrics, failures) = media_metrics(ctx, id, &media_type(&raw)).await?;
            Ok(InsightsBody::Post(PostBody::Instagram(InstagramPostBody {
                success: true,
                account_id: ctx.account.account_id,
                ig_username: ig_username(ctx),
                platform: Platform::Instagram,
                data: InstagramMediaInsights {
                    platform: Platform::Instagram,
                    data_type: "media",
                    metrics,
                },
                failed_metrics: failures,
            })))
        }
    }
}

/// The account's insights over `since..=until`: the series metrics day by day, the
/// total-value metrics as one total each, and the metrics Meta would not give.
struct AccountInsights {
    series: Vec<(String, Vec<(NaiveDate, u64)>)>,
    totals: Vec<(String, u64)>,
    failures: Vec<MetricFailure>,
}

/// Two calls: [`SERIES_METRICS`] with `metric_type=time_series` and `period`, then
/// [`TOTAL_METRICS`] with `metric_type=total_value` (Meta serves totals only per `day`, added
/// up over `since..until`).
async fn account_insights(
    ctx: &InsightsContext<'_>,
    period: &str,
    since: NaiveDate,
    until: NaiveDate,
) -> Result<AccountInsights, PlatformError> {
    let graph = graph(ctx);
    let path = ApiPath::id(&ctx.credentials.graph_id()?).then("insights");
    let since = unix_day(since).to_string();
    let until = unix_day(until + Duration::days(1)).to_string();
    let ask = |metrics: String, total: bool| {
        let (graph, path, since, until) = (&graph, &path, &since, &until);
        let (period, metric_type) = if total {
            ("day", "total_value")
        } else {
            (period, "time_series")
        };
        async move {
            graph
                .get(
                    path,
                    &[
                        ("metric", metrics.as_str()),
                        ("period", period),
                        ("metric_type", metric_type),
                        ("since", since),
                        ("until", until),
                    ],
                )
                .await
        }
    };
    let (series, mut failures) = each_metric(&SERIES_METRICS, |metrics| async move {
        Ok(series_of(&ask(metrics, false).await?))
    })
    .await?;
    let (totals, total_failures) = each_metric(&TOTAL_METRICS, |metrics| async move {
        let body = ask(metrics, true).await?;
        Ok(body["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| {
                Some((
                    item["name"].as_str()?.to_string(),
                    meta_value(&item["total_value"]["value"]),
                ))
            })
            .collect())
    })
    .await?;
    failures.extend(total_failures);
    Ok(AccountInsights {
        series,
        totals,
        failures,
    })
}

/// One media's lifetime metrics for its type.
async fn media_metrics(
    ctx: &InsightsContext<'_>,
    media_id: &GraphId,
    media_type: &str,
) -> Result<(MetricValues, Vec<MetricFailure>), PlatformError> {
    let graph = graph(ctx);
    let path = ApiPath::id(media_id).then("insights");
    let (items, failures) = each_metric(metrics_for(media_type), |metrics| {
        let (graph, path) = (&graph, &path);
        async move {
            let body = graph.get(path, &[("metric", metrics.as_str())]).await?;
            Ok(body["data"].as_array().cloned().unwrap_or_default())
        }
    })
    .await?;
    let metrics = items
        .iter()
        .filter_map(|item| {
            Some((
                item["name"].as_str()?.to_string(),
                // "Unavailable" comes as an empty `values` array, not 0.
                item["values"][0].get("value").map(meta_value),
            ))
        })
        .chain(failed_as_none(&failures))
        .collect();
    Ok((metrics, failures))
}

/// Media (newest first) with their insights; one call per media, metrics by media type.
async fn list_media(
    ctx: &InsightsContext<'_>,
    extra: &[(&str, &str)],
) -> Result<(Vec<InstagramMedia>, Vec<MetricFailure>), PlatformError> {
    let path = ApiPath::id(&ctx.credentials.graph_id()?).then("media");
    let mut params = vec![("fields", MEDIA_FIELDS)];
    params.extend_from_slice(extra);
    let body = graph(ctx).get(&path, &params).await?;
    let mut media = Vec::new();
    let mut failures: Vec<MetricFailure> = Vec::new();
    for raw in body["data"].as_array().into_iter().flatten() {
        let id = GraphId::parse(raw["id"].as_str().unwrap_or_default())
            .map_err(InvalidId::unexpected)?;
        let kind = media_type(raw);
        let (metrics, failed) = media_metrics(ctx, &id, &kind).await?;
        for failure in failed {
            if !failures.iter().any(|f| f.metric == failure.metric) {
                failures.push(failure);
            }
        }
        media.push(InstagramMedia {
            media_id: id.as_str().to_string(),
            caption: raw["caption"].as_str().unwrap_or_default().to_string(),
            media_type: kind,
            permalink: text(&raw["permalink"]),
            timestamp: text(&raw["timestamp"]),
            like_count: raw["like_count"].as_u64().unwrap_or(0),
            comments_count: raw["comments_count"].as_u64().unwrap_or(0),
            insights: InstagramMediaInsights {
                platform: Platform::Instagram,
                data_type: "media",
                metrics,
            },
        });
    }
    Ok((media, failures))
}

pub async fn daily(
    ctx: &InsightsContext<'_>,
    date: NaiveDate,
) -> Result<DailyMetrics, PlatformError> {
    let insights = account_insights(ctx, "day", date, date).await?;
    let mut failed_metrics = insights.failures;
    let mut page_metrics = values_on(insights.series, date);
    // One day's range: each total is that day's value.
    page_metrics.extend(insights.totals.into_iter().map(|(n, v)| (n, json!(v))));
    page_metrics.extend(failed_as_null(&failed_metrics));
    let (since, until) = day_window(date);
    let (media, media_failures) = list_media(
        ctx,
        &[("since", &since), ("until", &until), ("limit", "25")],
    )
    .await?;
    failed_metrics.extend(media_failures);
    Ok(DailyMetrics {
        page_metrics,
        posts_count: media.len() as u64,
        // Reach is what every media type reports: the day's posts' views.
        // Unknown (None) when any media's reach failed: null there, listed in failed_metrics.
        total_post_views: media
            .iter()
            .map(|m| m.insights.metrics.get("reach").copied().flatten())
            .sum(),
        failed_metrics,
    })
}
