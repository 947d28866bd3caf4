//! The post resource (`GET /v2/posts/{id}`, `GET /v2/posts`): a publish's history row as a
//! client polling for its outcome reads it. Only the caller's own rows exist for it: another
//! user's id, an unknown one and one that is not an id are all the same "not found".

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    domain::{
        plan::{Platform, PostType},
        post_status::PostStatus,
        text::parse_uuid,
        time::iso,
    },
    error::ApiError,
    platforms::{StepKind, reported_message},
    store::{Page, PostFilter, PostRecord, Store},
};

/// Which of the caller's posts to list (`GET /v2/posts`): `None` is "any".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostSelection {
    pub status: Option<PostStatus>,
    pub platform: Option<Platform>,
    pub page: Page,
}

/// One publish as its resource shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Post {
    pub post_submission_id: Uuid,
    pub status: PostStatus,
    pub platform: Platform,
    pub account_id: Uuid,
    pub page_name: String,
    pub post_type: Option<PostType>,
    pub post_id: Option<String>,
    /// Every post of it on the platform, in order: a thread's posts, or the one post.
    pub post_ids: Vec<String>,
    pub published_at: Option<DateTime<Utc>>,
    pub scheduled_post_id: Option<Uuid>,
    pub error: Option<PostError>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Why a post is not (or not surely) published, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostError {
    /// The catalogue code recorded.
    pub code: String,
    pub message: String,
    /// The platform's own words, where the record keeps them apart from the message.
    pub details: Option<String>,
}

/// The one answer for an id that names none of the caller's posts.
pub fn not_found() -> ApiError {
    ApiError::not_found("Post not found")
}

/// The caller's post `raw_id` (the path's text, not yet known to be an id).
pub async fn find(store: &Store, user_id: Uuid, raw_id: &str) -> Result<Post, ApiError> {
    let id = parse_uuid(raw_id).ok_or_else(not_found)?;
    let record = store
        .find_user_post(user_id, id)
        .await?
        .ok_or_else(not_found)?;
    Ok(Post::from(record))
}

/// A page of the caller's posts that `selection` picks, newest first, and how many it picks in
/// all.
pub async fn list(
    store: &Store,
    user_id: Uuid,
    selection: PostSelection,
) -> Result<(Vec<Post>, u64), ApiError> {
    let filter = PostFilter {
        status: selection.status.map(PostStatus::recorded_as),
        platform: selection.platform,
    };
    let (records, total) = store
        .list_user_posts(user_id, filter, selection.page)
        .await?;
    Ok((records.into_iter().map(Post::from).collect(), total))
}

impl From<PostRecord> for Post {
    fn from(record: PostRecord) -> Self {
        let post_ids = post_ids(&record);
        let error = record.error_code.map(|code| {
            let recorded = record.error_message.unwrap_or_default();
            let (message, details) = split_recorded(&code, recorded);
            PostError {
                code,
                message,
                details,
            }
        });
        Self {
            post_submission_id: record.id,
            status: record.status.into(),
            platform: record.platform,
            account_id: record.account_id,
            page_name: record.page_name,
            post_type: record.post_type,
            post_id: record.post_id,
            post_ids,
            published_at: record.published_at,
            scheduled_post_id: record.scheduled_post_id,
            error,
            created_at: record.created_at,
            updated_at: record.updated_at,
        }
    }
}

/// The published result's `post_ids` (a thread); otherwise the posts recorded as they went out
/// (a thread cut off part way); otherwise the one `post_id`, if any.
fn post_ids(record: &PostRecord) -> Vec<String> {
    #[derive(Deserialize)]
    struct Recorded {
        #[serde(default)]
        post_ids: Option<Vec<String>>,
    }
    let from_result = record.result.as_deref().and_then(|text| {
        serde_json::from_str::<Recorded>(text)
            .map_err(|e| {
                // Written by `publish::run::result_fields`; another shape is a bug there.
                tracing::warn!(error = %e, submission = %record.id, "unreadable publish result");
            })
            .ok()
            .and_then(|recorded| recorded.post_ids)
    });
    if let Some(ids) = from_result {
        return ids;
    }
    let posted = record
        .steps
        .as_ref()
        .map(|steps| steps.ids(StepKind::Post))
        .unwrap_or_default();
    if !posted.is_empty() {
        return posted;
    }
    record.post_id.iter().cloned().collect()
}

/// A failure is recorded as one text, `"<message>: <the platform's words>"`: split back where
/// the message is the one the code is reported with, else kept whole.
fn split_recorded(code: &str, recorded: String) -> (String, Option<String>) {
    if let Some(message) = reported_message(code)
        && let Some(details) = recorded
            .strip_prefix(message)
            .and_then(|rest| rest.strip_prefix(": "))
    {
        return (message.to_string(), Some(details.to_string()));
    }
    (recorded, None)
}

/// The post resource (`GET /v2/posts/{post_submission_id}`): one publish and where it stands.
/// Every member is always present, `null` where it does not apply.
#[derive(Debug, Serialize, ToSchema)]
pub struct PostResource {
    pub post_submission_id: Uuid,
    pub status: PostStatus,
    pub platform: Platform,
    pub account_id: Uuid,
    pub page_name: String,
    #[schema(required = true)]
    pub post_type: Option<PostType>,
    /// The platform's id of the post (a thread's first post); `null` until published.
    #[schema(required = true)]
    pub post_id: Option<String>,
    /// Every post on the platform, in order: a thread's posts (also those out before a thread
    /// failed), otherwise the one `post_id`; empty while there is none.
    pub post_ids: Vec<String>,
    #[schema(required = true, format = DateTime)]
    pub published_at: Option<String>,
    /// The scheduled post this publish came from; `null` for an immediate publish.
    #[schema(required = true)]
    pub scheduled_post_id: Option<Uuid>,
    /// Why it failed, or why it is `unconfirmed`; `null` otherwise.
    #[schema(required = true)]
    pub error: Option<PostResourceError>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

/// A post resource's `error`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PostResourceError {
    /// The catalogue code recorded.
    pub code: String,
    pub message: String,
    /// The platform's own words, when recorded apart from the message.
    #[schema(required = true)]
    pub details: Option<String>,
}

impl From<Post> for PostResource {
    fn from(post: Post) -> Self {
        Self {
            post_submission_id: post.post_submission_id,
            status: post.status,
            platform: post.platform,
            account_id: post.account_id,
            page_name: post.page_name,
            post_type: post.post_type,
            post_id: post.post_id,
            post_ids: post.post_ids,
            published_at: post.published_at.map(iso),
            scheduled_post_id: post.scheduled_post_id,
            error: post.error.map(|error| PostResourceError {
                code: error.code,
                message: error.message,
                details: error.details,
            }),
            created_at: iso(post.created_at),
            updated_at: iso(post.updated_at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_failure_splits_only_where_its_message_is_known() {
        assert_eq!(
            split_recorded(
                "PublishingFailed",
                "Failed to publish the post: (#100) Invalid parameter".into()
            ),
            (
                "Failed to publish the post".into(),
                Some("(#100) Invalid parameter".into())
            )
        );
        // The message of a failure after the final call started says more: kept whole.
        let whole = "Failed to publish the post during the final publish call; the post may have been published: check the platform: 502";
        assert_eq!(
            split_recorded("PublishingFailed", whole.into()),
            (whole.into(), None)
        );
        assert_eq!(
            split_recorded("PublishUnconfirmed", "still: processing".into()),
            ("still: processing".into(), None)
        );
    }
}
