//! The spec's resources (§2) as the wire shows them, with their conversions from the stored
//! rows. Entities never go on the wire directly.

use chrono::{DateTime, Utc};
use entity::{account, api_key, platform::Platform, post_submission, scheduled_post, user};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;
use uuid::Uuid;

use super::iso;
/// The post resource lives with its use case: webhook messages carry it too.
pub use crate::services::posts::{PostResource, PostResourceError};
use crate::{
    domain::token_status::{TokenStatus, token_expiry},
    store::{HistoryListing, ScheduledListing},
};

/// An API key (§2.1). Never includes the key itself.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKey {
    pub id: Uuid,
    pub name: String,
    /// The key's prefix and first characters, e.g. `service_AbC1...`.
    pub key_preview: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(required = true, format = DateTime)]
    pub last_used_at: Option<String>,
    pub is_active: bool,
}

impl From<&api_key::Model> for ApiKey {
    fn from(key: &api_key::Model) -> Self {
        Self {
            id: key.id,
            name: key.name.clone(),
            key_preview: key.key_preview.clone(),
            created_at: iso(key.created_at),
            last_used_at: key.last_used_at.map(iso),
            is_active: key.is_active,
        }
    }
}

/// A connected account (§2.2): the common fields plus the platform's own.
#[derive(Debug, Serialize, ToSchema)]
pub struct Account {
    pub account_id: Uuid,
    pub social_channel_type: Platform,
    pub account_name: String,
    pub is_valid: bool,
    /// When the token expires; `null` for facebook, whose page tokens do not.
    #[schema(required = true, format = DateTime)]
    pub expires_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    #[serde(flatten)]
    pub platform_fields: AccountPlatformFields,
}

/// The platform's own fields of an account (one set per platform).
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum AccountPlatformFields {
    Facebook(FacebookAccountFields),
    Instagram(InstagramAccountFields),
    Threads(ThreadsAccountFields),
    Tiktok(TiktokAccountFields),
    Youtube(YoutubeAccountFields),
    X(XAccountFields),
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FacebookAccountFields {
    pub page_name: String,
    pub page_id: String,
    /// When Meta's 90-day data access ends (§5.8).
    #[schema(required = true, format = DateTime)]
    pub data_access_expires_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InstagramAccountFields {
    pub ig_username: String,
    pub ig_account_id: String,
    /// `BUSINESS` or `CREATOR`.
    pub account_type: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ThreadsAccountFields {
    pub threads_username: String,
    pub threads_id: String,
    #[schema(required = true)]
    pub threads_profile_picture: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TiktokAccountFields {
    pub tiktok_username: String,
    pub tiktok_open_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct YoutubeAccountFields {
    pub channel_title: String,
    pub channel_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct XAccountFields {
    pub x_username: String,
    pub x_user_id: String,
}

impl From<&account::Model> for Account {
    fn from(account: &account::Model) -> Self {
        let username = account
            .username
            .clone()
            .unwrap_or_else(|| account.display_name.clone());
        let external_id = account.external_id.clone();
        let platform_fields = match account.platform {
            Platform::Facebook => AccountPlatformFields::Facebook(FacebookAccountFields {
                page_name: account.display_name.clone(),
                page_id: external_id,
                data_access_expires_at: account.data_access_expires_at.map(iso),
            }),
            Platform::Instagram => AccountPlatformFields::Instagram(InstagramAccountFields {
                ig_username: username,
                ig_account_id: external_id,
                account_type: account
                    .account_type
                    .clone()
                    .unwrap_or_else(|| "BUSINESS".to_string()),
            }),
            Platform::Threads => AccountPlatformFields::Threads(ThreadsAccountFields {
                threads_username: username,
                threads_id: external_id,
                threads_profile_picture: account.profile_picture_url.clone(),
            }),
            Platform::Tiktok => AccountPlatformFields::Tiktok(TiktokAccountFields {
                tiktok_username: username,
                tiktok_open_id: external_id,
            }),
            Platform::Youtube => AccountPlatformFields::Youtube(YoutubeAccountFields {
                channel_title: account.display_name.clone(),
                channel_id: external_id,
            }),
            Platform::X => AccountPlatformFields::X(XAccountFields {
                x_username: username,
                x_user_id: external_id,
            }),
        };
        Self {
            account_id: account.id,
            social_channel_type: account.platform,
            account_name: account.display_name.clone(),
            is_valid: account.is_valid,
            expires_at: token_expiry(account).map(iso),
            created_at: iso(account.created_at),
            updated_at: iso(account.updated_at),
            platform_fields,
        }
    }
}

/// `data` of `POST /api/token/info` (§4.9).
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenInfo {
    /// Valid and not expired.
    pub is_valid: bool,
    #[schema(required = true, format = DateTime)]
    pub expires_at: Option<String>,
    #[schema(required = true)]
    pub days_until_expiry: Option<i64>,
    pub platform: Platform,
    pub account_name: String,
    /// facebook only: when the 90-day data access ends (§5.8).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, format = DateTime, value_type = String)]
    pub data_access_expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = i64)]
    pub days_until_data_access_expiry: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = bool)]
    pub data_access_expired: Option<bool>,
    /// Why the account is invalid (only when it is).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = String)]
    pub invalid_reason: Option<String>,
}

impl TokenInfo {
    pub fn new(account: &account::Model, now: DateTime<Utc>) -> Self {
        let status = TokenStatus::of(account, now);
        Self {
            is_valid: status.is_valid,
            expires_at: status.expires_at.map(iso),
            days_until_expiry: status.expires_at.map(|at| (at - now).num_days()),
            platform: account.platform,
            account_name: account.display_name.clone(),
            data_access_expires_at: status.data_access_expires_at.map(iso),
            days_until_data_access_expiry: status
                .data_access_expires_at
                .map(|at| (at - now).num_days()),
            data_access_expired: status.data_access_expired,
            invalid_reason: status.invalid_reason,
        }
    }
}

// Read from the stored `content` text in one pass that keeps each value as its JSON text (no
// tree is built), and written out as it was stored; a missing `text` is `null` and missing
// media `[]`.
/// What was posted: the text (one string, or an array for a thread; `null` without text) and
/// the media URLs.
#[derive(Debug, ToSchema)]
pub struct PostContent {
    #[schema(required = true, value_type = Option<super::requests::TextOrTexts>)]
    text: Option<Box<RawValue>>,
    #[schema(required = true, value_type = Vec<String>)]
    media_urls: Option<Box<RawValue>>,
}

impl PostContent {
    /// From the stored `content` column's text (`{text, media_urls}`, written by the service).
    /// A column that is not that object is a bug where it was written: logged, and shown empty.
    pub fn from_stored(stored: &str) -> Self {
        serde_json::from_str(stored).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "unreadable stored post content");
            Self {
                text: None,
                media_urls: None,
            }
        })
    }
}

impl<'de> Deserialize<'de> for PostContent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Stored {
            #[serde(default)]
            text: Option<Box<RawValue>>,
            #[serde(default)]
            media_urls: Option<Box<RawValue>>,
        }
        let Stored { text, media_urls } = Stored::deserialize(deserializer)?;
        Ok(Self { text, media_urls })
    }
}

impl Serialize for PostContent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut content = serializer.serialize_struct("PostContent", 2)?;
        content.serialize_field("text", &self.text)?;
        match &self.media_urls {
            Some(urls) => content.serialize_field("media_urls", urls)?,
            None => content.serialize_field("media_urls", &[] as &[&str])?,
        }
        content.end()
    }
}

/// The extra fields a publish records beside the post id (albums, carousels, threads): the
/// publish receipt's own, as the history row stores them.
pub use crate::publish::run::ResultFields as PublishExtras;

/// A history item's error.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubmissionError {
    pub code: String,
    #[schema(required = true)]
    pub message: Option<String>,
}

/// A publishing-history item (§2.5; its fields are our decision, see docs/api-notes.md).
#[derive(Debug, Serialize, ToSchema)]
pub struct Submission {
    pub post_submission_id: Uuid,
    pub account_id: Uuid,
    pub platform: Platform,
    #[schema(required = true)]
    pub post_type: Option<post_submission::PostType>,
    #[schema(required = true)]
    pub post_id: Option<String>,
    pub page_name: String,
    pub status: post_submission::SubmissionStatus,
    pub content: PostContent,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(required = true, format = DateTime)]
    pub published_at: Option<String>,
    #[serde(flatten)]
    pub extras: PublishExtras,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = SubmissionError)]
    pub error: Option<SubmissionError>,
    /// The scheduled post this publish came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = Uuid)]
    pub scheduled_post_id: Option<Uuid>,
}

impl From<&HistoryListing> for Submission {
    fn from(row: &HistoryListing) -> Self {
        // Straight from the stored text into the typed fields (no intermediate tree).
        let extras = row
            .result
            .as_deref()
            .map(|result| {
                serde_json::from_str(result).unwrap_or_else(|e| {
                    // Written by `publish::run::result_fields`; another shape is a bug there.
                    tracing::warn!(error = %e, submission = %row.id, "unreadable publish result");
                    PublishExtras::default()
                })
            })
            .unwrap_or_default();
        Self {
            post_submission_id: row.id,
            account_id: row.account_id,
            platform: row.platform,
            post_type: row.post_type,
            post_id: row.post_id.clone(),
            page_name: row.page_name.clone(),
            status: row.status,
            content: PostContent::from_stored(&row.content),
            created_at: iso(row.created_at),
            published_at: row.published_at.map(iso),
            extras,
            error: row.error_code.as_ref().map(|code| SubmissionError {
                code: code.clone(),
                message: row.error_message.clone(),
            }),
            scheduled_post_id: row.scheduled_post_id,
        }
    }
}

/// A user as operators and `/auth/me` see it.
#[derive(Debug, Serialize, ToSchema)]
pub struct User {
    pub id: Uuid,
    #[schema(required = true)]
    pub email: Option<String>,
    #[schema(required = true)]
    pub name: Option<String>,
    pub plan: user::Plan,
    /// `monthly` or `annual`.
    #[schema(required = true)]
    pub plan_type: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub current_period_end: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl From<&user::Model> for User {
    fn from(user: &user::Model) -> Self {
        Self {
            id: user.id,
            email: user.email.clone(),
            name: user.display_name.clone(),
            plan: user.plan,
            plan_type: user.plan_type.clone(),
            current_period_end: user.current_period_end.map(iso),
            created_at: iso(user.created_at),
        }
    }
}

/// A scheduled post (§2.4).
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduledPost {
    pub scheduled_post_id: Uuid,
    pub account_id: Uuid,
    pub platform: Platform,
    pub page_name: String,
    pub content: PostContent,
    #[schema(format = DateTime)]
    pub scheduled_at: String,
    pub status: scheduled_post::ScheduledStatus,
    #[schema(format = DateTime)]
    pub created_at: String,
    pub attempts: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = String)]
    pub post_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = String, format = DateTime)]
    pub published_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = Uuid)]
    pub post_submission_id: Option<Uuid>,
    /// `failed` only: why (present, possibly `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = Option<String>)]
    pub error: Option<Option<String>>,
    /// `failed` only: the catalogue code (present, possibly `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = Option<String>)]
    pub error_code: Option<Option<String>>,
    /// `scheduled` with a retry pending: why the last attempt did not publish.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = String)]
    pub last_attempt_error: Option<String>,
    /// `scheduled` with a retry pending: when the next attempt is due.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = String, format = DateTime)]
    pub next_attempt_at: Option<String>,
}

impl From<&ScheduledListing> for ScheduledPost {
    fn from(row: &ScheduledListing) -> Self {
        use scheduled_post::ScheduledStatus;
        let failed = row.status == ScheduledStatus::Failed;
        // A retry is pending: say why the last attempt did not publish.
        let retrying = row.status == ScheduledStatus::Scheduled && row.error.is_some();
        Self {
            scheduled_post_id: row.id,
            account_id: row.account_id,
            platform: row.platform,
            page_name: row.page_name.clone(),
            content: PostContent::from_stored(&row.content),
            scheduled_at: iso(row.scheduled_at),
            status: row.status,
            created_at: iso(row.created_at),
            attempts: row.attempts,
            post_id: row.post_id.clone(),
            published_at: row.published_at.map(iso),
            post_submission_id: row.submission_id,
            error: failed.then(|| row.error.clone()),
            error_code: failed.then(|| row.error_code.clone()),
            last_attempt_error: row.error.clone().filter(|_| retrying),
            next_attempt_at: retrying.then(|| iso(row.next_attempt_at)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn stored_content_goes_on_the_wire_as_it_was_stored() {
        // A thread's text is an array; a post without text has `null`; no media is `[]`.
        for (stored, wire) in [
            (
                json!({"text": ["one", "two"], "media_urls": []}),
                json!({"text": ["one", "two"], "media_urls": []}),
            ),
            (
                json!({"text": "hi", "media_urls": ["https://x/a.jpg"]}),
                json!({"text": "hi", "media_urls": ["https://x/a.jpg"]}),
            ),
            (json!({}), json!({"text": null, "media_urls": []})),
            (
                json!({"text": null, "media_urls": []}),
                json!({"text": null, "media_urls": []}),
            ),
        ] {
            let content = PostContent::from_stored(&stored.to_string());
            assert_eq!(serde_json::to_value(&content).unwrap(), wire);
        }
    }

    #[test]
    fn publish_extras_keep_every_recorded_field() {
        let recorded = json!({"thread_count": 2, "post_ids": ["1", "2"], "warnings": ["w"],
                              "photo_count": 3, "item_count": 4});
        let extras: PublishExtras = serde_json::from_value(recorded.clone()).unwrap();
        assert_eq!(serde_json::to_value(&extras).unwrap(), recorded);
        let none = serde_json::to_value(PublishExtras::default()).unwrap();
        assert_eq!(none, json!({}));
    }
}
