//! Response shapes of the spec's resources (§2). Entities never go on the wire directly.

use chrono::{DateTime, SecondsFormat, Utc};
use entity::{account, api_key, platform::Platform, post_submission, user};
use serde_json::{Value, json};

/// ISO 8601 / RFC 3339 in UTC with milliseconds, e.g. `2026-11-22T08:00:00.000Z`.
pub fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// An API key (§2.1). Never includes the key itself.
pub fn api_key(key: &api_key::Model) -> Value {
    json!({
        "id": key.id,
        "name": key.name,
        "key_preview": key.key_preview,
        "created_at": iso(key.created_at),
        "last_used_at": key.last_used_at.map(iso),
        "is_active": key.is_active,
    })
}

/// A connected account (§2.2): the common fields plus the platform's own.
pub fn account(account: &account::Model) -> Value {
    let mut body = json!({
        "account_id": account.id,
        "social_channel_type": account.platform,
        "account_name": account.display_name,
        "is_valid": account.is_valid,
        "expires_at": token_expiry(account).map(iso),
        "created_at": iso(account.created_at),
        "updated_at": iso(account.updated_at),
    });
    let username = account
        .username
        .clone()
        .unwrap_or_else(|| account.display_name.clone());
    let extra = match account.platform {
        Platform::Facebook => json!({
            "page_name": account.display_name,
            "page_id": account.external_id,
            "data_access_expires_at": account.data_access_expires_at.map(iso),
        }),
        Platform::Instagram => json!({
            "ig_username": username,
            "ig_account_id": account.external_id,
            "account_type": account.account_type.as_deref().unwrap_or("BUSINESS"),
        }),
        Platform::Threads => json!({
            "threads_username": username,
            "threads_id": account.external_id,
            "threads_profile_picture": account.profile_picture_url,
        }),
        Platform::Tiktok => json!({
            "tiktok_username": username,
            "tiktok_open_id": account.external_id,
        }),
        Platform::Youtube => json!({
            "channel_title": account.display_name,
            "channel_id": account.external_id,
        }),
        Platform::X => json!({
            "x_username": username,
            "x_user_id": account.external_id,
        }),
    };
    merge(&mut body, extra);
    body
}

/// When the account's token expires; `None` for facebook, whose page tokens do not (§2.2).
fn token_expiry(account: &account::Model) -> Option<DateTime<Utc>> {
    if account.platform == Platform::Facebook {
        None
    } else {
        account.token_expires_at
    }
}

/// `data` of `POST /api/token/info` (§4.9).
pub fn token_info(account: &account::Model, now: DateTime<Utc>) -> Value {
    let expires_at = token_expiry(account);
    let expired = expires_at.is_some_and(|at| at <= now);
    let mut body = json!({
        "is_valid": account.is_valid && !expired,
        "expires_at": expires_at.map(iso),
        "days_until_expiry": expires_at.map(|at| (at - now).num_days()),
        "platform": account.platform,
        "account_name": account.display_name,
    });
    // facebook page tokens do not expire, but data access must be renewed every 90 days
    // (spec §5.8): say when, and whether the user must reconnect for it.
    if account.platform == Platform::Facebook
        && let Some(data_access) = account.data_access_expires_at
    {
        body["data_access_expires_at"] = json!(iso(data_access));
        body["days_until_data_access_expiry"] = json!((data_access - now).num_days());
        body["data_access_expired"] = json!(data_access <= now);
    }
    if let Some(reason) = account.last_error.as_deref().filter(|_| !account.is_valid) {
        body["invalid_reason"] = json!(reason);
    }
    body
}

/// A publishing-history item (§2.5; its fields are our decision, see the README).
pub fn submission(row: &post_submission::Model) -> Value {
    let content = &row.content;
    let mut body = json!({
        "post_submission_id": row.id,
        "account_id": row.account_id,
        "platform": row.platform,
        "post_type": row.post_type,
        "post_id": row.post_id,
        "page_name": row.page_name,
        "status": row.status,
        "content": {
            "text": content.get("text").cloned().unwrap_or(Value::Null),
            "media_urls": content.get("media_urls").cloned().unwrap_or_else(|| json!([])),
        },
        "created_at": iso(row.created_at),
        "published_at": row.published_at.map(iso),
    });
    if let Some(result) = &row.result {
        merge(&mut body, result.clone());
    }
    if let Some(code) = &row.error_code {
        body["error"] = json!({"code": code, "message": row.error_message});
    }
    if let Some(id) = row.scheduled_post_id {
        body["scheduled_post_id"] = json!(id);
    }
    body
}

/// A user as operators and `/auth/me` see it.
pub fn user(user: &user::Model) -> Value {
    json!({
        "id": user.id,
        "email": user.email,
        "name": user.display_name,
        "plan": user.plan,
        "plan_type": user.plan_type,
        "current_period_end": user.current_period_end.map(iso),
        "created_at": iso(user.created_at),
    })
}

fn merge(target: &mut Value, extra: Value) {
    if let (Some(target), Value::Object(extra)) = (target.as_object_mut(), extra) {
        target.extend(extra);
    }
}

/// A scheduled post (§2.4).
pub fn scheduled_post(row: &entity::scheduled_post::Model) -> Value {
    let mut body = json!({
        "scheduled_post_id": row.id,
        "account_id": row.account_id,
        "platform": row.platform,
        "page_name": row.page_name,
        "content": {
            "text": row.content.get("text").cloned().unwrap_or(Value::Null),
            "media_urls": row.content.get("media_urls").cloned().unwrap_or_else(|| json!([])),
        },
        "scheduled_at": iso(row.scheduled_at),
        "status": row.status,
        "created_at": iso(row.created_at),
        "attempts": row.attempts,
    });
    if let Some(post_id) = &row.post_id {
        body["post_id"] = json!(post_id);
    }
    if let Some(at) = row.published_at {
        body["published_at"] = json!(iso(at));
    }
    if let Some(id) = row.submission_id {
        body["post_submission_id"] = json!(id);
    }
    match row.status.as_str() {
        "failed" => {
            body["error"] = json!(row.error);
            body["error_code"] = json!(row.error_code);
        }
        // A retry is pending: say why the last attempt did not publish.
        "scheduled" if row.error.is_some() => {
            body["last_attempt_error"] = json!(row.error);
            body["next_attempt_at"] = json!(iso(row.next_attempt_at));
        }
        _ => {}
    }
    body
}
