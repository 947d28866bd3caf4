//! `GET /2/users/{id}/tweets`: a user's posts, newest first, as X lists them (§7.6): `id`,
//! `text` and `edit_history_tweet_ids` unless `tweet.fields` (or `post.fields`) asks for more,
//! `max_results` 5..=100 (10 by default), `start_time`/`end_time` bounds, `exclude` of
//! `replies` and `retweets`, and a `next_token` while more remain.

use actix_web::{HttpRequest, HttpResponse, http::StatusCode, web};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::{Endpoint, NOT_FOUND, PLATFORM, admit, live_tweet};
use crate::state::{PublishedItem, SimState};

/// `max_results` when the query leaves it out.
const DEFAULT_RESULTS: usize = 10;

/// What the query asks for (its names, types and bounds were checked against the spec).
struct Query {
    max_results: usize,
    start: Option<DateTime<Utc>>,
    end: Option<DateTime<Utc>>,
    replies: bool,
    retweets: bool,
    created_at: bool,
    /// Where the page starts among the posts, newest first (from `pagination_token`).
    offset: usize,
}

impl Query {
    fn parse(req: &HttpRequest) -> Result<Self, (&'static str, String)> {
        let mut query = Query {
            max_results: DEFAULT_RESULTS,
            start: None,
            end: None,
            replies: true,
            retweets: true,
            created_at: false,
            offset: 0,
        };
        let time = |name: &'static str, value: &str| {
            DateTime::parse_from_rfc3339(value)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| (name, value.to_string()))
        };
        for (name, value) in url::form_urlencoded::parse(req.query_string().as_bytes()) {
            match name.as_ref() {
                "max_results" => {
                    query.max_results = value
                        .parse()
                        .map_err(|_| ("max_results", value.to_string()))?;
                }
                "start_time" => query.start = Some(time("start_time", &value)?),
                "end_time" => query.end = Some(time("end_time", &value)?),
                "exclude" => {
                    for item in value.split(',') {
                        match item {
                            "replies" => query.replies = false,
                            "retweets" => query.retweets = false,
                            _ => {}
                        }
                    }
                }
                "tweet.fields" | "post.fields" => {
                    query.created_at |= value.split(',').any(|f| f == "created_at");
                }
                "pagination_token" => {
                    query.offset = value
                        .strip_prefix('p')
                        .and_then(|n| n.parse().ok())
                        .ok_or(("pagination_token", value.to_string()))?;
                }
                _ => {}
            }
        }
        Ok(query)
    }

    fn lists(&self, tweet: &PublishedItem) -> bool {
        (self.replies || tweet.reply_to.is_none())
            && self.start.is_none_or(|start| tweet.published_at >= start)
            && self.end.is_none_or(|end| tweet.published_at <= end)
    }
}

/// X escapes these three in a post's `text`.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn item(state: &SimState, tweet: &PublishedItem, created_at: bool) -> Option<Value> {
    let tweet = live_tweet(state, &tweet.id)?;
    let mut data = json!({
        "id": tweet.id,
        "text": escaped(tweet.text.as_deref().unwrap_or_default()),
        "edit_history_tweet_ids": [tweet.id],
    });
    if created_at {
        data["created_at"] = json!(
            tweet
                .published_at
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        );
    }
    Some(data)
}

pub(super) async fn user_tweets(
    req: HttpRequest,
    state: web::Data<SimState>,
    id: web::Path<String>,
) -> HttpResponse {
    let call = match admit(&state, &req, Endpoint::UserTweets).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let query = match Query::parse(&req) {
        Ok(query) => query,
        Err((name, value)) => {
            return call.bad(
                name,
                &value,
                &format!("The `{name}` query parameter value [{value}] is not valid"),
            );
        }
    };
    if state.account(PLATFORM, &id).is_none() {
        // An unknown user is a 200 with a partial error, as X answers lookups.
        return call.respond(StatusCode::OK).json(json!({"errors": [{
            "value": id.as_str(),
            "detail": format!("Could not find user with id: [{}].", id.as_str()),
            "title": "Not Found Error",
            "resource_type": "user",
            "parameter": "id",
            "resource_id": id.as_str(),
            "type": NOT_FOUND,
        }]}));
    }
    let mut listed: Vec<Value> = state
        .published(Some(PLATFORM), Some(&id))
        .iter()
        .rev()
        .filter(|tweet| query.lists(tweet))
        .filter_map(|tweet| item(&state, tweet, query.created_at))
        .skip(query.offset)
        .collect();
    let more = listed.len() > query.max_results;
    listed.truncate(query.max_results);
    let mut meta = json!({"result_count": listed.len()});
    if let (Some(newest), Some(oldest)) = (listed.first(), listed.last()) {
        meta["newest_id"] = newest["id"].clone();
        meta["oldest_id"] = oldest["id"].clone();
    }
    if more {
        meta["next_token"] = json!(format!("p{}", query.offset + query.max_results));
    }
    let body = if listed.is_empty() {
        json!({ "meta": meta })
    } else {
        json!({ "data": listed, "meta": meta })
    };
    call.respond(StatusCode::OK).json(body)
}
