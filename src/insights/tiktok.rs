//! tiktok insights (our decision; the spec shows none): TikTok's Display API
//! (`platform-apis.md` §5.8). The account's numbers come from `/v2/user/info/` (cumulative
//! counts as of now: TikTok keeps no daily history there), videos from `/v2/video/list/`, one
//! video from `/v2/video/query/`.

use chrono::{DateTime, NaiveDate, Utc};
use reqwest::Method;
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use super::{
    DailyMetrics, InsightsContext, InsightsQuery, MetricFailure, PostId,
    bodies::{
        AccountBody, InsightsBody, PostBody, PostsBody, TiktokAccountBody, TiktokAccountData,
        TiktokPostBody, TiktokPostData, TiktokPostsBody, TiktokPostsData, TiktokVideo, text,
    },
    has_failed,
};
use crate::{
    domain::plan::Platform,
    platforms::{
        PlatformError, SendTraced,
        ids::ApiPath,
        tiktok::{classify, scopes_for_user_fields, unexpected},
    },
};

/// Account metrics.
pub const ACCOUNT_METRICS: [&str; 4] = [
    "follower_count",
    "following_count",
    "likes_count",
    "video_count",
];
/// Video metrics.
pub const VIDEO_METRICS: [&str; 4] = ["view_count", "like_count", "comment_count", "share_count"];
const VIDEO_FIELDS: &str = "id,title,create_time,share_url,cover_image_url,view_count,like_count,comment_count,share_count";
/// Videos one list call returns at most.
const PAGE: u32 = 20;

async fn call(
    ctx: &InsightsContext<'_>,
    method: Method,
    path: &'static str,
    fields: &str,
    body: Option<Value>,
) -> Result<Value, PlatformError> {
    let url = ApiPath::fixed(path).on(&ctx.config.tiktok_url)?;
    let mut request = ctx
        .http
        .request(method, url)
        .query(&[("fields", fields)])
        .bearer_auth(ctx.credentials.access_token.expose_secret())
        .timeout(std::time::Duration::from_secs(
            ctx.config.call_timeout_secs.max(1),
        ));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request
        .send_traced("tiktok")
        .await
        .map_err(PlatformError::from_reqwest)?;
    let status = response.status();
    let text = response.text().await.map_err(PlatformError::from_reqwest)?;
    let Ok(envelope) = serde_json::from_str::<Value>(&text) else {
        return Err(unexpected(status, &text));
    };
    match envelope["error"]["code"].as_str() {
        Some("ok") if status.is_success() => Ok(envelope["data"].clone()),
        Some(code) => Err(
            match classify(
                status,
                code,
                envelope["error"]["message"].as_str().unwrap_or_default(),
            ) {
                // TikTok does not say which scope is missing: name the ones this call needs, so
                // the user knows what to grant on reconnecting. Not a dead token: the account
                // stays valid for what it did grant.
                PlatformError::Permission(detail) => {
                    let needed = if path == "/v2/user/info/" {
                        scopes_for_user_fields(fields)
                    } else {
                        vec!["video.list"]
                    };
                    PlatformError::Permission(format!(
                        "{detail} (this read needs the scopes {})",
                        needed.join(", ")
                    ))
                }
                other => other,
            },
        ),
        None => Err(unexpected(status, &text)),
    }
}

async fn user(ctx: &InsightsContext<'_>) -> Result<Value, PlatformError> {
    let fields = format!(
        "open_id,display_name,username,{}",
        ACCOUNT_METRICS.join(",")
    );
    Ok(call(ctx, Method::GET, "/v2/user/info/", &fields, None).await?["user"].clone())
}

/// `metrics` of a TikTok object: each a number, or null and listed in `failures` when TikTok
/// left it out (or sent something else): unknown, never a measured 0.
fn metrics_of(
    raw: &Value,
    metrics: &[&str],
    failures: &mut Vec<MetricFailure>,
) -> serde_json::Map<String, Value> {
    metrics
        .iter()
        .map(|m| {
            let value = match raw[*m].as_u64() {
                Some(n) => json!(n),
                None => {
                    if !has_failed(failures, m) {
                        failures.push(MetricFailure {
                            metric: (*m).to_string(),
                            error: format!("tiktok did not return {m}"),
                        });
                    }
                    Value::Null
                }
            };
            ((*m).to_string(), value)
        })
        .collect()
}

fn video_item(raw: &Value, failures: &mut Vec<MetricFailure>) -> TiktokVideo {
    let published = raw["create_time"]
        .as_i64()
        .and_then(|t| DateTime::from_timestamp(t, 0))
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    TiktokVideo {
        video_id: text(&raw["id"]),
        title: raw["title"].as_str().unwrap_or_default().to_string(),
        published_at: published,
        thumbnail: text(&raw["cover_image_url"]),
        share_url: text(&raw["share_url"]),
        metrics: metrics_of(raw, &VIDEO_METRICS, failures)
            .into_iter()
            .map(|(name, value)| (name, value.as_u64()))
            .collect(),
    }
}

/// The latest videos, newest first, following the cursor until `limit` or `older_than_day`.
async fn videos(
    ctx: &InsightsContext<'_>,
    limit: u32,
    stop_before: Option<NaiveDate>,
) -> Result<Vec<Value>, PlatformError> {
    let mut out = Vec::new();
    let mut cursor: Option<i64> = None;
    loop {
        let mut body =
            json!({"max_count": PAGE.min(limit.saturating_sub(out.len() as u32)).max(1)});
        if let Some(cursor) = cursor {
            body["cursor"] = json!(cursor);
        }
        let data = call(
            ctx,
            Method::POST,
            "/v2/video/list/",
            VIDEO_FIELDS,
            Some(body),
        )
        .await?;
        let page = data["videos"].as_array().cloned().unwrap_or_default();
        let mut older = false;
        for raw in page {
            let day = raw["create_time"]
                .as_i64()
                .and_then(|t| DateTime::from_timestamp(t, 0))
                .map(|t| t.date_naive());
            if stop_before.is_some_and(|stop| day.is_some_and(|d| d < stop)) {
                older = true;
                break;
            }
            out.push(raw);
        }
        if older || out.len() as u32 >= limit || data["has_more"] != true {
            break;
        }
        cursor = data["cursor"].as_i64();
    }
    out.truncate(limit as usize);
    Ok(out)
}

pub async fn query(
    ctx: &InsightsContext<'_>,
    query: &InsightsQuery,
) -> Result<InsightsBody, PlatformError> {
    let mut failures = Vec::new();
    match query {
        InsightsQuery::Account { .. } => {
            let user = user(ctx).await?;
            let metrics = metrics_of(&user, &ACCOUNT_METRICS, &mut failures)
                .into_iter()
                .map(|(name, value)| (name, value.as_u64()))
                .collect();
            Ok(InsightsBody::Account(AccountBody::Tiktok(
                TiktokAccountBody {
                    success: true,
                    data: TiktokAccountData {
                        account_id: ctx.account.account_id,
                        account_name: ctx.account.name.clone(),
                        platform: Platform::Tiktok,
                        username: user["username"].as_str().map(str::to_string),
                        as_of: Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                        metrics,
                    },
                    failed_metrics: failures,
                },
            )))
        }
        InsightsQuery::Posts { limit } => {
            let items: Vec<TiktokVideo> = videos(ctx, *limit, None)
                .await?
                .iter()
                .map(|raw| video_item(raw, &mut failures))
                .collect();
            Ok(InsightsBody::Posts(PostsBody::Tiktok(TiktokPostsBody {
                success: true,
                data: TiktokPostsData {
                    account_id: ctx.account.account_id,
                    account_name: ctx.account.name.clone(),
                    platform: Platform::Tiktok,
                    count: items.len(),
                    videos: items,
                },
                failed_metrics: failures,
            })))
        }
        InsightsQuery::Post { post_id } => {
            let PostId::Tiktok(id) = post_id else {
                return Err(post_id.mismatch(Platform::Tiktok));
            };
            let body = json!({"filters": {"video_ids": [id.as_str()]}});
            let found = call(
                ctx,
                Method::POST,
                "/v2/video/query/",
                VIDEO_FIELDS,
                Some(body),
            )
            .await?;
            // TikTok answers an id it has no video for (or not this user's) with no video.
            let Some(raw) = found["videos"].as_array().and_then(|v| v.first()).cloned() else {
                return Err(PlatformError::NotFound(format!(
                    "tiktok has no video {id} on this account"
                )));
            };
            let video = video_item(&raw, &mut failures);
            Ok(InsightsBody::Post(PostBody::Tiktok(TiktokPostBody {
                success: true,
                data: TiktokPostData {
                    account_id: ctx.account.account_id,
                    account_name: ctx.account.name.clone(),
                    platform: Platform::Tiktok,
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
    let user = user(ctx).await?;
    let mut failed_metrics = Vec::new();
    let page_metrics = metrics_of(&user, &ACCOUNT_METRICS, &mut failed_metrics)
        .into_iter()
        .collect();
    let that_day: Vec<Value> = videos(ctx, 100, Some(date))
        .await?
        .into_iter()
        .filter(|v| {
            v["create_time"]
                .as_i64()
                .and_then(|t| DateTime::from_timestamp(t, 0))
                .map(|t| t.date_naive())
                == Some(date)
        })
        .collect();
    // A video whose views TikTok left out makes the sum unknown: listed as failed (the sum
    // is of the views it did give).
    let mut view_failures = Vec::new();
    let total_post_views: u64 = that_day
        .iter()
        .filter_map(|v| metrics_of(v, &["view_count"], &mut view_failures)["view_count"].as_u64())
        .sum();
    let view_failures_empty = view_failures.is_empty();
    failed_metrics.extend(view_failures);
    Ok(DailyMetrics {
        page_metrics,
        posts_count: that_day.len() as u64,
        total_post_views: view_failures_empty.then_some(total_post_views),
        failed_metrics,
    })
}
