//! The messages an event makes: one per active endpoint of its user that takes it, each with
//! the body every attempt will send, `{type, timestamp, data}`. A post event's `data` is the
//! post resource (`GET /v2/posts/{id}`) as it stood at the event: the outbox row carries the
//! columns that change, the history row the rest.

use chrono::{DateTime, Utc};
use entity::{post_submission::SubmissionStatus, scheduled_post, webhook_endpoint, webhook_event};
use sea_orm::ActiveEnum;
use serde::Serialize;
use serde_json::{Value, json};

use crate::{
    domain::{
        post_status::PostStatus,
        time::iso,
        webhook::{EventSet, WebhookEvent, attempt_due, message_id_for, new_message_id},
    },
    services::posts::{Post, PostError, PostResource},
    store::{FanOutContext, NewMessage},
};

#[derive(Serialize)]
struct Body<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    timestamp: String,
    data: Value,
}

fn body(event: WebhookEvent, at: DateTime<Utc>, data: Value) -> String {
    serde_json::to_string(&Body {
        kind: event.as_str(),
        timestamp: iso(at),
        data,
    })
    .unwrap_or_default()
}

/// The `webhook.test` message to `endpoint`, due at once.
pub(super) fn test_message(endpoint: &webhook_endpoint::Model, now: DateTime<Utc>) -> NewMessage {
    let event = WebhookEvent::WebhookTest;
    NewMessage {
        id: new_message_id(),
        endpoint_id: endpoint.id,
        user_id: endpoint.user_id,
        event_type: event.as_str().into(),
        payload: body(event, now, json!({ "webhook_id": endpoint.id })),
        occurred_at: now,
        next_attempt_at: now,
    }
}

/// The messages of `events`: for each, its name and body, then one message per endpoint of its
/// user that takes it. An event whose subject is gone (a deleted account) makes none.
pub(super) fn fan_out(
    events: &[webhook_event::Model],
    context: &FanOutContext,
    schedule: &[u64],
    now: DateTime<Utc>,
) -> Vec<NewMessage> {
    let first_due = attempt_due(schedule, 0, now, 0.0).unwrap_or(now);
    let takes: Vec<(&webhook_endpoint::Model, EventSet)> = context
        .endpoints
        .iter()
        .map(|endpoint| (endpoint, EventSet::from_stored(&endpoint.events)))
        .collect();
    let mut messages = Vec::new();
    for event in events {
        let Some((kind, data)) = describe(event, context) else {
            continue;
        };
        let payload = body(kind, event.occurred_at, data);
        for (endpoint, events) in &takes {
            if endpoint.user_id != event.user_id || !events.contains(kind) {
                continue;
            }
            messages.push(NewMessage {
                id: message_id_for(event.id, endpoint.id),
                endpoint_id: endpoint.id,
                user_id: endpoint.user_id,
                event_type: kind.as_str().into(),
                payload: payload.clone(),
                occurred_at: event.occurred_at,
                next_attempt_at: first_due,
            });
        }
    }
    messages
}

/// An event's name and `data`.
fn describe(
    event: &webhook_event::Model,
    context: &FanOutContext,
) -> Option<(WebhookEvent, Value)> {
    match event.event_type.as_str() {
        "post" => {
            let kind = WebhookEvent::of_post_status(event.status.as_deref()?)?;
            let mut record = context.posts.get(&event.subject_id)?.clone();
            record.status = SubmissionStatus::try_from_value(&event.status.clone()?).ok()?;
            record.post_id = event.post_id.clone();
            record.result = event.result.clone();
            record.published_at = event.published_at;
            record.error_code = event.error_code.clone();
            record.error_message = event.error_message.clone();
            record.updated_at = event.occurred_at;
            let resource = PostResource::from(Post::from(record));
            Some((kind, serde_json::to_value(resource).ok()?))
        }
        "scheduled" => {
            let post = context.scheduled.get(&event.subject_id)?;
            Some((WebhookEvent::PostFailed, scheduled_failure(post, event)))
        }
        name => {
            let kind = WebhookEvent::parse(name)?;
            let account = context.accounts.get(&event.subject_id)?;
            let mut data = json!({
                "account_id": account.id,
                "platform": account.platform,
                "page_name": account.display_name,
                "reason": event.reason,
            });
            if kind == WebhookEvent::AccountTokenExpiring {
                data["expires_at"] = json!(event.expires_at.map(iso));
            }
            Some((kind, data))
        }
    }
}

/// A scheduled post that failed before any publish of it was recorded: the post resource's
/// form with no `post_submission_id` (there is no history row to read).
fn scheduled_failure(post: &scheduled_post::Model, event: &webhook_event::Model) -> Value {
    let error = PostError {
        code: event.error_code.clone().unwrap_or_default(),
        message: event.error_message.clone().unwrap_or_default(),
        details: None,
    };
    let resource = PostResource::from(Post {
        post_submission_id: uuid::Uuid::nil(),
        status: PostStatus::Failed,
        platform: post.platform,
        account_id: post.account_id,
        page_name: post.page_name.clone(),
        post_type: None,
        post_id: None,
        post_ids: Vec::new(),
        published_at: None,
        scheduled_post_id: Some(post.id),
        error: Some(error),
        created_at: post.created_at,
        updated_at: event.occurred_at,
    });
    let mut data = serde_json::to_value(resource).unwrap_or_default();
    data["post_submission_id"] = Value::Null;
    data
}
