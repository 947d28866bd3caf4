//! facebook page insights (Graph API, `platform-apis.md` §2.5–2.6): page metrics from
//! `/{page}/insights` (period `day` by default), posts from `/{page}/posts` with their
//! `post_media_view` through field expansion (one call for the whole list). The deprecated
//! impressions metrics are never requested.

use chrono::{Duration, NaiveDate};
use serde_json::Value;

use super::{
    DailyMetrics, InsightsContext, InsightsQuery, MetricFailure, PostId,
    bodies::{
        AccountBody, DateRange, DatedValue, FacebookAccountBody, FacebookAccountData, FacebookPost,
        FacebookPostBody, FacebookPostInsights, FacebookPostsBody, InsightsBody, MetricValues,
        PostBody, PostsBody, TimeSeries, text,
    },
    day_window, each_metric, failed_as_none, failed_as_null, meta_day, meta_value, values_on,
};
use crate::{
    domain::plan::Platform,
    platforms::{
        PlatformError,
        ids::{ApiPath, FacebookPostId},
        meta::Graph,
    },
};

/// Page metrics (spec §2.8; `page_media_view` replaces `page_impressions`).
pub const PAGE_METRICS: [&str; 3] = [
    "page_media_view",
    "page_post_engagements",
    "page_total_actions",
];
/// Post metrics (`post_media_view` replaces `post_impressions`).
pub const POST_METRICS: [&str; 1] = ["post_media_view"];
const POST_FIELDS: &str = "id,message,created_time,permalink_url,shares,reactions.summary(total_count).limit(0),comments.summary(true).limit(0)";

fn graph<'a>(ctx: &'a InsightsContext<'a>) -> Graph<'a> {
    Graph::with_parts(
        ctx.http,
        ctx.config,
        &ctx.credentials.access_token,
        &ctx.config.graph_url,
        &ctx.config.graph_version,
    )
}

pub async fn query(
    ctx: &InsightsContext<'_>,
    query: &InsightsQuery,
) -> Result<InsightsBody, PlatformError> {
    let page_id = &ctx.credentials.external_id;
    match query {
        InsightsQuery::Account {
            period,
            since,
            until,
        } => {
            let (series, failures) = page_series(ctx, period, *since, *until).await?;
            let mut metrics = MetricValues::new();
            let mut time_series = TimeSeries::new();
            for (name, points) in series {
                // A daily value adds up over the range; a rolling one (week, days_28) is read
                // at the range's end.
                let total = if period == "day" {
                    points.iter().map(|(_, v)| v).sum()
                } else {
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
            // A failed metric is null here and has no time series.
            metrics.extend(failed_as_none(&failures));
            Ok(InsightsBody::Account(AccountBody::Facebook(
                FacebookAccountBody {
                    success: true,
                    account_id: ctx.account.account_id,
                    page_name: ctx.account.name.clone(),
                    platform: Platform::Facebook,
                    page_id: page_id.clone(),
                    data: FacebookAccountData {
                        page_id: page_id.clone(),
                        platform: Platform::Facebook,
                        data_type: "page",
                        period: period.clone(),
                        date_range: DateRange {
                            start: *since,
                            end: *until,
                        },
                        metrics,
                        time_series,
                    },
                    failed_metrics: failures,
                },
            )))
        }
        InsightsQuery::Posts { limit } => {
            let (posts, failures) = list_posts(ctx, &[("limit", &limit.to_string())]).await?;
            Ok(InsightsBody::Posts(PostsBody::Facebook(
                FacebookPostsBody {
                    success: true,
                    account_id: ctx.account.account_id,
                    page_name: ctx.account.name.clone(),
                    platform: Platform::Facebook,
                    total_posts: posts.len(),
                    posts,
                    failed_metrics: failures,
                },
            )))
        }
        InsightsQuery::Post { post_id } => {
            let PostId::Facebook(id) = post_id else {
                return Err(post_id.mismatch(Platform::Facebook));
            };
            let (post, failures) = each_post(ctx, id).await?;
            Ok(InsightsBody::Post(PostBody::Facebook(FacebookPostBody {
                success: true,
                account_id: ctx.account.account_id,
                page_name: ctx.account.name.clone(),
                platform: Platform::Facebook,
                post,
                failed_metrics: failures,
            })))
        }
    }
}

/// Each page metric's daily points over `since..=until`.
async fn page_series(
    ctx: &InsightsContext<'_>,
    period: &str,
    since: NaiveDate,
    until: NaiveDate,
) -> Result<(Vec<(String, Vec<(NaiveDate, u64)>)>, Vec<MetricFailure>), PlatformError> {
    let graph = graph(ctx);
    let path = ApiPath::id(&ctx.credentials.graph_id()?).then("insights");
    let since = since.to_string();
    let until = (until + Duration::days(1)).to_string();
    each_metric(&PAGE_METRICS, |metrics| {
        let (graph, path, since, until) = (&graph, &path, &since, &until);
        async move {
            let body = graph
                .get(
                    path,
                    &[
                        ("metric", metrics.as_str()),
                        ("period", period),
                        ("since", since),
                        ("until", until),
                    ],
                )
                .await?;
            Ok(series_of(&body))
        }
    })
    .await
}

/// `data[]` of a Graph insights answer → (metric, [(day, value)]).
pub(crate) fn series_of(body: &Value) -> Vec<(String, Vec<(NaiveDate, u64)>)> {
    body["data"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    let name = item["name"].as_str()?.to_string();
                    let points = item["values"]
                        .as_array()
                        .map(|values| {
                            values
                                .iter()
                                .filter_map(|v| {
                                    Some((
                                        meta_day(v["end_time"].as_str()?)?,
                                        meta_value(&v["value"]),
                                    ))
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    Some((name, points))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A post of the list in the spec's shape (§4.6); the metrics of `failures` are null.
fn post_item(raw: &Value, failures: &[MetricFailure]) -> FacebookPost {
    let count = |v: &Value| v.as_u64().unwrap_or(0);
    let mut metrics = MetricValues::new();
    for item in raw["insights"]["data"].as_array().into_iter().flatten() {
        if let Some(name) = item["name"].as_str() {
            metrics.insert(
                name.to_string(),
                Some(meta_value(&item["values"][0]["value"])),
            );
        }
    }
    metrics.extend(failed_as_none(failures));
    FacebookPost {
        post_id: text(&raw["id"]),
        message: raw["message"].as_str().unwrap_or_default().to_string(),
        created_time: text(&raw["created_time"]),
        reactions: count(&raw["reactions"]["summary"]["total_count"]),
        comments: count(&raw["comments"]["summary"]["total_count"]),
        // Graph leaves `shares` out when there are none.
        shares: count(&raw["shares"]["count"]),
        insights: FacebookPostInsights { metrics },
    }
}

fn expanded_fields() -> String {
    format!("{POST_FIELDS},insights.metric({})", POST_METRICS.join(","))
}

/// The page's posts (newest first) with their insights; if the insights expansion is refused,
/// the posts without it and the metric named as failed.
async fn list_posts(
    ctx: &InsightsContext<'_>,
    extra: &[(&str, &str)],
) -> Result<(Vec<FacebookPost>, Vec<MetricFailure>), PlatformError> {
    let graph = graph(ctx);
    let path = ApiPath::id(&ctx.credentials.graph_id()?).then("posts");
    let fields = expanded_fields();
    let mut params = vec![("fields", fields.as_str())];
    params.extend_from_slice(extra);
    let (body, failures) = match graph.get(&path, &params).await {
        Ok(body) => (body, Vec::new()),
        Err(PlatformError::Rejected(error)) => {
            params[0] = ("fields", POST_FIELDS);
            let body = graph.get(&path, &params).await?;
            let failures = POST_METRICS
                .iter()
                .map(|m| MetricFailure {
                    metric: (*m).to_string(),
                    error: error.clone(),
                })
                .collect();
            (body, failures)
        }
        Err(other) => return Err(other),
    };
    let posts = body["data"]
        .as_array()
        .map(|posts| posts.iter().map(|p| post_item(p, &failures)).collect())
        .unwrap_or_default();
    Ok((posts, failures))
}

async fn each_post(
    ctx: &InsightsContext<'_>,
    post_id: &FacebookPostId,
) -> Result<(FacebookPost, Vec<MetricFailure>), PlatformError> {
    let graph = graph(ctx);
    let path = ApiPath::id(post_id);
    let fields = expanded_fields();
    match graph.get(&path, &[("fields", fields.as_str())]).await {
        Ok(raw) => Ok((post_item(&raw, &[]), Vec::new())),
        Err(PlatformError::Rejected(error)) => {
            let raw = graph.get(&path, &[("fields", POST_FIELDS)]).await?;
            let failures = vec![MetricFailure {
                metric: POST_METRICS.join(","),
                error,
            }];
            Ok((post_item(&raw, &failures), failures))
        }
        Err(other) => Err(other),
    }
}

pub async fn daily(
    ctx: &InsightsContext<'_>,
    date: NaiveDate,
) -> Result<DailyMetrics, PlatformError> {
    let (series, mut failed_metrics) = page_series(ctx, "day", date, date).await?;
    let mut page_metrics = values_on(series, date);
    page_metrics.extend(failed_as_null(&failed_metrics));
    let (since, until) = day_window(date);
    let (posts, post_failures) = list_posts(
        ctx,
        &[("since", &since), ("until", &until), ("limit", "100")],
    )
    .await?;
    failed_metrics.extend(post_failures);
    Ok(DailyMetrics {
        page_metrics,
        posts_count: posts.len() as u64,
        // Unknown (None) when any post's views failed: null there, listed in failed_metrics.
        total_post_views: posts
            .iter()
            .map(|p| p.insights.metrics.get("post_media_view").copied().flatten())
            .sum(),
        failed_metrics,
    })
}
