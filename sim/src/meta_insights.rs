//! Insights and read endpoints of the Meta hosts (Graph for facebook pages and instagram,
//! graph.threads.net for Threads), per `platform-apis.md` §2.5–2.6, §3.4–3.6 and §4.4:
//! page/user insights (time series or total values over `since..until`), post and media
//! insights (lifetime), and post/media/thread lists with cursors. Numbers come from
//! [`super::insights`].

use actix_web::HttpResponse;
use chrono::{Duration, NaiveDate, TimeZone, Utc};
use serde_json::{Map, Value, json};

use super::{
    graph::{MetaError, Params, meta_time, ok},
    insights::{self, SimPost},
    state::{SimAccount, SimState},
};

/// Answers the read and insights calls of an account's own node or of one of its posts;
/// `None` when the call is not one of these (the caller handles it).
pub(crate) fn answer(
    state: &SimState,
    account: &SimAccount,
    node: &str,
    edge: Option<&str>,
    params: &Params,
) -> Result<Option<HttpResponse>, MetaError> {
    let platform = account.platform.as_str();
    if node == account.external_id {
        let body = match (platform, edge) {
            ("facebook", Some("insights")) => {
                user_insights(state, account, params, &insights::FACEBOOK_PAGE_METRICS)?
            }
            ("facebook", Some("posts" | "published_posts")) => post_list(state, account, params)?,
            ("instagram", Some("insights")) => {
                user_insights(state, account, params, &insights::INSTAGRAM_USER_METRICS)?
            }
            ("instagram", Some("media")) => post_list(state, account, params)?,
            ("threads", Some("threads")) => post_list(state, account, params)?,
            ("threads", Some("threads_insights")) => {
                user_insights(state, account, params, &insights::THREADS_USER_METRICS)?
            }
            _ => return Ok(None),
        };
        return Ok(Some(ok(account, body)));
    }
    // Containers, uploads and videos in processing answer as themselves.
    if edge.is_none() && state.object(node).is_some() {
        return Ok(None);
    }
    let Some(post) = insights::post(state, account, node) else {
        return Ok(None);
    };
    let body = match edge {
        None => post_fields(state, account, &post, &params.fields())?,
        Some("insights") => post_insights(state, account, &post, params)?,
        Some(_) => return Ok(None),
    };
    Ok(Some(ok(account, body)))
}

fn invalid_metric(metric: &str) -> MetaError {
    MetaError::param(format!(
        "The value must be a valid insights metric (metric[0] = {metric})"
    ))
    .violation("unknown_metric")
}

/// [`invalid_metric`] for a metric [`insights::refused`] named: an injected failure
/// (`fail_metrics`) is a fault, not the client's violation.
fn refused_metric(state: &SimState, account: &SimAccount, metric: &str) -> MetaError {
    let error = invalid_metric(metric);
    if state
        .failing_metrics(&account.platform, &account.external_id)
        .iter()
        .any(|m| m == metric)
    {
        error.legitimate()
    } else {
        error
    }
}

/// `metric` → title and description, as Meta sends them with each item.
fn described(metric: &str) -> (String, String) {
    let title = metric
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ");
    (title.clone(), format!("{title} (simulated)"))
}

/// Page, IG user and Threads user insights over `since..until` (`until` exclusive, as Meta
/// reads it: the first value's `end_time` is `since` + 1 day).
fn user_insights(
    state: &SimState,
    account: &SimAccount,
    params: &Params,
    valid: &[&str],
) -> Result<Value, MetaError> {
    let metrics = insights::metric_list(params.get("metric"));
    if metrics.is_empty() {
        return Err(
            MetaError::param("The parameter metric is required").violation("missing_parameter")
        );
    }
    if account.platform == "facebook"
        && let Some(dead) = metrics
            .iter()
            .find(|m| insights::FACEBOOK_DEPRECATED.contains(&m.as_str()))
    {
        return Err(invalid_metric(dead).violation("retired_metric"));
    }
    if let Some(bad) = insights::refused(state, account, &metrics, valid) {
        return Err(refused_metric(state, account, bad));
    }
    let metric_type = params.get("metric_type").unwrap_or("default");
    if !["default", "time_series", "total_value"].contains(&metric_type) {
        return Err(MetaError::param(format!(
            "metric_type must be one of the following values: default, time_series, total_value (got {metric_type})"
        ))
        .violation("invalid_metric_type"));
    }
    if account.platform == "instagram" && metric_type != "total_value" {
        let totals_only: Vec<&str> = metrics
            .iter()
            .map(String::as_str)
            .filter(|m| insights::INSTAGRAM_TOTAL_VALUE_ONLY.contains(m))
            .collect();
        if !totals_only.is_empty() {
            return Err(MetaError::param(format!(
                "The following metrics ({}) should be specified with parameter metric_type=total_value",
                totals_only.join(", ")
            ))
            .violation("total_value_required"));
        }
    }
    let period = params.get("period").unwrap_or("day");
    if ![
        "day",
        "week",
        "days_28",
        "month",
        "lifetime",
        "total_over_range",
    ]
    .contains(&period)
    {
        return Err(MetaError::param(format!(
            "period must be one of day, week, days_28, month, lifetime, total_over_range (got {period})"
        ))
        .violation("invalid_period"));
    }
    let today = Utc::now().date_naive();
    let until = params
        .get("until")
        .and_then(insights::meta_date)
        .unwrap_or(today);
    let since = params
        .get("since")
        .and_then(insights::meta_date)
        .unwrap_or(until - Duration::days(2));
    if since >= until {
        return Err(MetaError::param("since must be before until").violation("invalid_range"));
    }
    if (until - since).num_days() > 93 {
        return Err(MetaError::param(
            "There cannot be more than 93 days (8035200 s) between since and until",
        )
        .violation("invalid_range"));
    }
    let days: Vec<NaiveDate> = since.iter_days().take_while(|d| *d < until).collect();
    let total_value = metric_type == "total_value";
    let data: Vec<Value> = metrics
        .iter()
        .map(|metric| {
            let (title, description) = described(metric);
            let mut item = json!({
                "name": metric,
                "period": period,
                "title": title,
                "description": description,
                "id": format!("{}/insights/{metric}/{period}", account.external_id),
            });
            // Threads reports only `views` as a daily series; the rest as totals.
            let as_total = total_value || (account.platform == "threads" && metric != "views");
            if as_total {
                let sum: u64 = days.iter().map(|d| insights::daily(account, metric, *d)).sum();
                item["total_value"] = json!({ "value": sum });
            } else {
                item["values"] = days
                    .iter()
                    .map(|d| {
                        let end = *d + Duration::days(1);
                        let end_time = Utc.from_utc_datetime(&end.and_hms_opt(8, 0, 0).unwrap_or_default());
                        json!({"value": insights::daily(account, metric, *d), "end_time": meta_time(end_time)})
                    })
                    .collect();
            }
            item
        })
        .collect();
    Ok(json!({
        "data": data,
        "paging": {
            "previous": format!("{}?since={}&until={}", account.external_id, (since - (until - since)).and_hms_opt(0, 0, 0).unwrap_or_default().and_utc().timestamp(), since.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc().timestamp()),
        },
    }))
}

/// The requested field names (`reactions.summary(total_count).limit(0)` → `reactions`).
fn field_names(fields: &[String]) -> Vec<String> {
    fields
        .iter()
        .map(|f| {
            f.split(['.', '{', '('])
                .next()
                .unwrap_or_default()
                .trim()
                .to_string()
        })
        .filter(|f| !f.is_empty())
        .collect()
}

/// A post, media or thread object with the fields asked for.
fn post_fields(
    state: &SimState,
    account: &SimAccount,
    post: &SimPost,
    fields: &[String],
) -> Result<Value, MetaError> {
    let ext = &account.external_id;
    let count = |metric: &str| insights::lifetime(account, metric, &post.id);
    let (all, default) = match account.platform.as_str() {
        "facebook" => {
            let shares = count("shares");
            let mut all = json!({
                "id": post.id,
                "message": post.text,
                "created_time": meta_time(post.created),
                "permalink_url": format!("https://www.facebook.com/{}", post.id),
                "reactions": {"data": [], "summary": {"total_count": count("reactions")}},
                "comments": {"data": [], "summary": {"total_count": count("comments"), "order": "ranked", "can_comment": true}},
            });
            // Meta leaves `shares` out when nobody shared.
            if shares > 0 {
                all["shares"] = json!({ "count": shares });
            }
            (all, vec!["created_time", "message", "id"])
        }
        "instagram" => {
            let (media_type, product) = match post.kind.as_str() {
                "REELS" => ("VIDEO", "REELS"),
                "CAROUSEL_ALBUM" => ("CAROUSEL_ALBUM", "FEED"),
                _ => ("IMAGE", "FEED"),
            };
            (
                json!({
                    "id": post.id,
                    "caption": post.text,
                    "media_type": media_type,
                    "media_product_type": product,
                    "media_url": format!("https://scontent.cdninstagram.com/{}.jpg", post.id),
                    "permalink": format!("https://www.instagram.com/p/{}/", post.id),
                    "timestamp": meta_time(post.created),
                    "like_count": count("likes"),
                    "comments_count": count("comments"),
                    "username": account.username,
                    "shortcode": post.id,
                }),
                vec!["id"],
            )
        }
        _ => (
            json!({
                "id": post.id,
                "media_product_type": "THREADS",
                "media_type": post.kind,
                "permalink": format!("https://www.threads.net/@{}/post/{}", account.username, post.id),
                "username": account.username,
                "owner": {"id": ext},
                "text": post.text,
                "timestamp": meta_time(post.created),
                "shortcode": post.id,
                "is_quote_post": false,
            }),
            vec!["id"],
        ),
    };
    let Value::Object(all) = all else {
        return Ok(all);
    };
    let wanted = if fields.is_empty() {
        default.iter().map(|s| s.to_string()).collect()
    } else {
        field_names(fields)
    };
    let mut out = Map::new();
    // Field expansion: `insights.metric(a,b)` answers the post's insights inline.
    if let Some(expansion) = fields
        .iter()
        .find_map(|f| f.strip_prefix("insights.metric("))
    {
        let metrics = insights::metric_list(expansion.split(')').next());
        out.insert(
            "insights".into(),
            lifetime_insights(state, account, post, &metrics)?,
        );
    }
    // Whether each field exists on the node was checked against the spec at the entry point
    // (`graph::check_graph_request`, `threads::check_threads_request`); one the node has but the
    // simulator does not model (`gif_url`, `poll_attachment`…) or without a value (facebook
    // `shares` at 0) is left out, as Graph leaves out fields without a value.
    for field in wanted.into_iter().filter(|f| f != "insights") {
        if let Some(value) = all.get(&field) {
            out.insert(field, value.clone());
        }
    }
    out.insert("id".into(), json!(post.id));
    Ok(Value::Object(out))
}

/// Posts, media or threads, newest first, `limit` per page (≤ 100) after the `after` cursor,
/// within `since..until` when given.
fn post_list(state: &SimState, account: &SimAccount, params: &Params) -> Result<Value, MetaError> {
    let limit = params
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(25)
        .clamp(1, 100);
    let start = params
        .get("after")
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(0);
    let since = params.get("since").and_then(|s| s.parse::<i64>().ok());
    let until = params.get("until").and_then(|s| s.parse::<i64>().ok());
    let posts: Vec<SimPost> = insights::posts(state, account)
        .into_iter()
        // `/{user}/threads` lists the user's threads; their replies are on `/{user}/replies`.
        .filter(|p| !p.is_reply)
        .filter(|p| since.is_none_or(|s| p.created.timestamp() >= s))
        .filter(|p| until.is_none_or(|u| p.created.timestamp() < u))
        .collect();
    let fields = params.fields();
    let page: Vec<Value> = posts
        .iter()
        .skip(start)
        .take(limit)
        .map(|post| post_fields(state, account, post, &fields))
        .collect::<Result<_, _>>()?;
    let end = start + page.len();
    let mut paging = json!({"cursors": {"before": start.to_string(), "after": end.to_string()}});
    if end < posts.len() {
        paging["next"] = json!(format!("?limit={limit}&after={end}"));
    }
    Ok(json!({"data": page, "paging": paging}))
}

/// Lifetime insights of one post, media or thread.
fn post_insights(
    state: &SimState,
    account: &SimAccount,
    post: &SimPost,
    params: &Params,
) -> Result<Value, MetaError> {
    let metrics = insights::metric_list(params.get("metric"));
    lifetime_insights(state, account, post, &metrics)
}

/// `{"data": [...]}` of `metrics` for one post; an invalid, retired or (instagram) media-type
/// mismatched metric fails the whole answer, as on the Graph API.
fn lifetime_insights(
    state: &SimState,
    account: &SimAccount,
    post: &SimPost,
    metrics: &[String],
) -> Result<Value, MetaError> {
    if metrics.is_empty() {
        return Err(
            MetaError::param("The parameter metric is required").violation("missing_parameter")
        );
    }
    let mut valid: Vec<&str> = match account.platform.as_str() {
        "facebook" => insights::FACEBOOK_POST_METRICS.to_vec(),
        "instagram" => insights::INSTAGRAM_MEDIA_METRICS.to_vec(),
        _ => insights::THREADS_MEDIA_METRICS.to_vec(),
    };
    if account.platform == "instagram" {
        if post.kind == "REELS" {
            valid.extend(insights::INSTAGRAM_REELS_ONLY);
        } else if let Some(reels_only) = metrics
            .iter()
            .find(|m| insights::INSTAGRAM_REELS_ONLY.contains(&m.as_str()))
        {
            return Err(MetaError::param(format!(
                "The Media Insights API does not support the {reels_only} metric for this media product type."
            ))
            .violation("metric_media_type_mismatch"));
        }
    }
    if let Some(bad) = insights::refused(state, account, metrics, &valid) {
        return Err(refused_metric(state, account, bad));
    }
    let data: Vec<Value> = metrics
        .iter()
        .map(|metric| {
            let (title, description) = described(metric);
            json!({
                "name": metric,
                "period": "lifetime",
                "values": [{"value": insights::lifetime(account, metric, &post.id)}],
                "title": title,
                "description": description,
                "id": format!("{}/insights/{metric}/lifetime", post.id),
            })
        })
        .collect();
    Ok(json!({ "data": data }))
}
