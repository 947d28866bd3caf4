//! threads insights (Threads API, `platform-apis.md` §4.4): account metrics from
//! `/{user}/threads_insights` (`views` as a daily series, the others as totals over the range),
//! threads from `/{user}/threads`, and each thread's metrics from `/{media}/insights`.

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate};
use serde_json::{Value, json};

use super::{
    DailyMetrics, InsightsContext, InsightsQuery, MetricFailure, PostId,
    bodies::{
        AccountBody, InsightsBody, MetaPoint, MetricValues, PostBody, PostsBody,
        ThreadsAccountBody, ThreadsAccountData, ThreadsPost, ThreadsPostBody, ThreadsPostData,
        ThreadsPostsBody, ThreadsPostsData, ThreadsRawMetric, ThreadsSeriesMetric,
        ThreadsTotalMetric, TotalValue, text,
    },
    day_window, each_metric, failed_as_none, failed_as_null, has_failed, meta_value, unix_day,
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
pub const ACCOUNT_METRICS: [&str; 6] = [
    "views",
    "likes",
    "replies",
    "reposts",
    "quotes",
    "followers_count",
];
/// Thread metrics.
pub const THREAD_METRICS: [&str; 5] = ["views", "likes", "replies", "reposts", "quotes"];
/// Fields asked of `/{user}/threads` and `/{media}`: only fields those edges have (the Postman
/// collection's `fields_threads`). `is_reply` exists only on the reply edges (`/replies`,
/// `/conversation`); asking for it here makes Threads refuse the whole read.
const THREAD_FIELDS: &str = "id,text,timestamp,media_type,permalink";

fn graph<'a>(ctx: &'a InsightsContext<'a>) -> Graph<'a> {
    Graph::with_parts(
        ctx.http,
        ctx.config,
        &ctx.credentials.access_token,
        &ctx.config.threads_url,
        &ctx.config.threads_version,
    )
}

pub async fn query(
    ctx: &InsightsContext<'_>,
    query: &InsightsQuery,
) -> Result<InsightsBody, PlatformError> {
    match query {
        InsightsQuery::Account { since, until, .. } => {
            let (raw, failures) = account_raw(ctx, *since, *until).await?;
            // A failed `views` is unknown: null, and named in failed_metrics, never 0.
            let views = (!has_failed(&failures, "views")).then(|| {
                raw.iter()
                    .filter(|item| item["name"] == "views")
                    .map(total_of)
                    .sum::<u64>()
            });
            let raw_data = raw
                .iter()
                .map(|item| {
                    let (name, description) = (text(&item["name"]), text(&item["description"]));
                    if item.get("total_value").is_some() {
                        ThreadsRawMetric::Total(ThreadsTotalMetric {
                            name,
                            description,
                            total_value: TotalValue {
                                value: meta_value(&item["total_value"]["value"]),
                            },
                        })
                    } else {
                        ThreadsRawMetric::Series(ThreadsSeriesMetric {
                            name,
                            description,
                            period: text(&item["period"]),
                            values: item["values"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .map(|v| MetaPoint {
                                    value: meta_value(&v["value"]),
                                    end_time: text(&v["end_time"]),
                                })
                                .collect(),
                        })
                    }
                })
                .collect();
            Ok(InsightsBody::Account(AccountBody::Threads(
                ThreadsAccountBody {
                    success: true,
                    data: ThreadsAccountData {
                        account_id: ctx.account.account_id,
                        account_name: ctx.account.name.clone(),
                        platform: Platform::Threads,
                        views,
                        raw_data,
                    },
                    failed_metrics: failures,
                },
            )))
        }
        InsightsQuery::Posts { limit } => {
            let (threads, failures) = list_threads(ctx, &[("limit", &limit.to_string())]).await?;
            Ok(InsightsBody::Posts(PostsBody::Threads(ThreadsPostsBody {
                success: true,
                data: ThreadsPostsData {
                    account_id: ctx.account.account_id,
                    account_name: ctx.account.name.clone(),
                    platform: Platform::Threads,
                    count: threads.len(),
                    threads,
                },
                failed_metrics: failures,
            })))
        }
        InsightsQuery::Post { post_id } => {
            let PostId::Threads(id) = post_id else {
                return Err(post_id.mismatch(Platform::Threads));
            };
            let raw = graph(ctx)
                .get(&ApiPath::id(id), &[("fields", THREAD_FIELDS)])
                .await?;
            let (thread, failures) = thread_item(ctx, &raw).await?;
            Ok(InsightsBody::Post(PostBody::Threads(ThreadsPostBody {
                success: true,
                data: ThreadsPostData {
                    account_id: ctx.account.account_id,
                    account_name: ctx.account.name.clone(),
                    platform: Platform::Threads,
                    thread,
                },
                failed_metrics: failures,
            })))
        }
    }
}

/// A metric's value over the range: its total, or the sum of its daily values.
fn total_of(item: &Value) -> u64 {
    if let Some(total) = item.get("total_value") {
        return meta_value(&total["value"]);
    }
    item["values"]
        .as_array()
        .map(|values| values.iter().map(|v| meta_value(&v["value"])).sum())
        .unwrap_or(0)
}

async fn account_raw(
    ctx: &InsightsContext<'_>,
    since: NaiveDate,
    until: NaiveDate,
) -> Result<(Vec<Value>, Vec<MetricFailure>), PlatformError> {
    let graph = graph(ctx);
    let path = ApiPath::id(&ctx.credentials.graph_id()?).then("threads_insights");
    let since = unix_day(since).to_string();
    let until = unix_day(until + Duration::days(1)).to_string();
    each_metric(&ACCOUNT_METRICS, |metrics| {
        let (graph, path, since, until) = (&graph, &path, &since, &until);
        async move {
            let body = graph
                .get(
                    path,
                    &[
                        ("metric", metrics.as_str()),
                        ("since", since),
                        ("until", until),
                    ],
                )
                .await?;
            Ok(body["data"].as_array().cloned().unwrap_or_default())
        }
    })
    .await
}

/// A thread in the spec's shape with its insights (one call).
async fn thread_item(
    ctx: &InsightsContext<'_>,
    raw: &Value,
) -> Result<(ThreadsPost, Vec<MetricFailure>), PlatformError> {
    let id =
        GraphId::parse(raw["id"].as_str().unwrap_or_default()).map_err(InvalidId::unexpected)?;
    let graph = graph(ctx);
    let path = ApiPath::id(&id).then("insights");
    let (items, failures) = each_metric(&THREAD_METRICS, |metrics| {
        let (graph, path) = (&graph, &path);
        async move {
            let body = graph.get(path, &[("metric", metrics.as_str())]).await?;
            Ok(body["data"].as_array().cloned().unwrap_or_default())
        }
    })
    .await?;
    let mut insights = MetricValues::new();
    for item in &items {
        if let Some(name) = item["name"].as_str() {
            insights.insert(name.to_string(), Some(total_of(item)));
        }
    }
    // A failed metric is null, as on the other Meta platforms: unknown, not 0.
    insights.extend(failed_as_none(&failures));
    Ok((
        ThreadsPost {
            id: id.as_str().to_string(),
            text: raw["text"].as_str().unwrap_or_default().to_string(),
            timestamp: text(&raw["timestamp"]),
            media_type: text(&raw["media_type"]),
            permalink: text(&raw["permalink"]),
            // `/{user}/threads` lists the user's own threads, not their replies (those are on
            // `/{user}/replies`), so a listed thread is never a reply; a single post is read
            // with the same fields, which carry no reply flag (docs/platforms.md, threads).
            is_reply: false,
            insights,
        },
        failures,
    ))
}

async fn list_threads(
    ctx: &InsightsContext<'_>,
    extra: &[(&str, &str)],
) -> Result<(Vec<ThreadsPost>, Vec<MetricFailure>), PlatformError> {
    let path = ApiPath::id(&ctx.credentials.graph_id()?).then("threads");
    let mut params = vec![("fields", THREAD_FIELDS)];
    params.extend_from_slice(extra);
    let body = graph(ctx).get(&path, &params).await?;
    let mut threads = Vec::new();
    let mut failures: Vec<MetricFailure> = Vec::new();
    for raw in body["data"].as_array().into_iter().flatten() {
        let (thread, failed) = thread_item(ctx, raw).await?;
        for failure in failed {
            if !failures.iter().any(|f| f.metric == failure.metric) {
                failures.push(failure);
            }
        }
        threads.push(thread);
    }
    Ok((threads, failures))
}

pub async fn daily(
    ctx: &InsightsContext<'_>,
    date: NaiveDate,
) -> Result<DailyMetrics, PlatformError> {
    let (raw, mut failed_metrics) = account_raw(ctx, date, date).await?;
    let page_metrics: BTreeMap<String, Value> = raw
        .iter()
        .filter_map(|item| Some((item["name"].as_str()?.to_string(), json!(total_of(item)))))
        // A failed metric is null in the snapshot, and named in failed_metrics.
        .chain(failed_as_null(&failed_metrics))
        .collect();
    let (since, until) = day_window(date);
    let (threads, thread_failures) = list_threads(
        ctx,
        &[("since", &since), ("until", &until), ("limit", "25")],
    )
    .await?;
    failed_metrics.extend(thread_failures);
    Ok(DailyMetrics {
        page_metrics,
        posts_count: threads.len() as u64,
        // Unknown (None) when any thread's views failed: null there, listed in failed_metrics.
        total_post_views: threads
            .iter()
            .map(|t| t.insights.get("views").copied().flatten())
            .sum(),
        failed_metrics,
    })
}
