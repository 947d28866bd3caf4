//! Step 1: the `POST /v2/posts` body's shape, read loosely and converted into a [`PostRequest`]
//! with each refusal naming the field and the rule it broke.

use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    domain::plan::Platform,
    error::{ApiError, ErrorCode},
};

/// `post.content.text`: absent, one string, or an array (a thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text {
    None,
    One(String),
    Many(Vec<String>),
}

/// A `POST /v2/posts` body whose shape is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostRequest {
    pub account_id: Uuid,
    pub platform: Platform,
    pub text: Text,
    /// Always an array (a single string is converted).
    pub media_urls: Vec<String>,
    pub cover_url: Option<String>,
    /// Present: schedule instead of publishing.
    pub scheduled_at: Option<String>,
    /// `tiktokOptions.draft`.
    pub draft: bool,
}

impl PostRequest {
    /// The content as the history keeps it: `{text, media_urls}`.
    pub fn content_json(&self) -> Value {
        let text = match &self.text {
            Text::None => Value::Null,
            Text::One(text) => json!(text),
            Text::Many(texts) => json!(texts),
        };
        json!({"text": text, "media_urls": self.media_urls})
    }
}

fn object<'a>(
    value: Option<&'a Value>,
    name: &str,
) -> Result<&'a serde_json::Map<String, Value>, ApiError> {
    match value {
        None | Some(Value::Null) => Err(ApiError::missing_parameter(name)),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(ApiError::invalid_request(format!(
            "{name} must be an object"
        ))),
    }
}

fn string<'a>(value: Option<&'a Value>, name: &str) -> Result<Option<&'a str>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::invalid_request(format!(
            "{name} must be a string"
        ))),
    }
}

fn required_string<'a>(value: Option<&'a Value>, name: &str) -> Result<&'a str, ApiError> {
    match string(value, name)? {
        Some(s) if !s.trim().is_empty() => Ok(s),
        _ => Err(ApiError::missing_parameter(name)),
    }
}

/// Whether any key or string in `value` holds a NUL character (the body is stored as it came, and
/// PostgreSQL's `jsonb` refuses `\u0000`). serde_json's recursion limit bounds the depth.
fn has_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(has_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// `POST /v2/posts` (spec §4.1).
///
/// Read loosely: each member is kept as the JSON it came as, and
/// [`parse_request`] converts it (`TryFrom`) into the domain's `PostRequest`,
/// naming the exact field and rule in each refusal (`MissingParameter` for an absent or `null`
/// member, `InvalidRequest` / `InvalidTextFormat` for a wrong type). The schema states the types
/// a valid request has.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CreatePostRequest {
    #[schema(required = true, value_type = CreatePost)]
    pub post: Option<Value>,
}

/// The `post` member of `POST /v2/posts`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CreatePost {
    /// The connected account to publish with.
    #[serde(rename = "accountId")]
    #[schema(required = true, value_type = String, format = Uuid)]
    pub account_id: Option<Value>,
    #[schema(required = true, value_type = CreatePostContent)]
    pub content: Option<Value>,
    #[schema(required = true, value_type = CreatePostTarget)]
    pub target: Option<Value>,
    /// TikTok only.
    #[serde(rename = "tiktokOptions")]
    #[schema(required = false, value_type = TiktokOptions)]
    pub tiktok_options: Option<Value>,
}

/// What to publish.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CreatePostContent {
    /// `facebook`, `instagram`, `threads`, `tiktok`, `youtube` or `x`.
    #[schema(required = true, value_type = String)]
    pub platform: Option<Value>,
    /// A string, or an array of strings (a thread on threads and X).
    #[schema(required = false, value_type = Option<TextOrTexts>)]
    pub text: Option<Value>,
    /// One URL, or an array of URLs.
    #[serde(rename = "mediaUrls")]
    #[schema(required = false, value_type = Option<TextOrTexts>)]
    pub media_urls: Option<Value>,
    /// A video's cover image URL.
    #[serde(rename = "coverUrl")]
    #[schema(required = false, value_type = Option<String>)]
    pub cover_url: Option<Value>,
    /// When to publish (RFC 3339); absent: now.
    #[serde(rename = "scheduledAt")]
    #[schema(required = false, value_type = Option<String>, format = DateTime)]
    pub scheduled_at: Option<Value>,
}

/// A string or an array of strings.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum TextOrTexts {
    One(String),
    Many(Vec<String>),
}

/// Where to publish: `targetType` equals `content.platform`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CreatePostTarget {
    /// The same platform name as `content.platform`.
    #[serde(rename = "targetType")]
    #[schema(required = true, value_type = String)]
    pub target_type: Option<Value>,
}

/// TikTok's options.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct TiktokOptions {
    /// Send to the creator's drafts instead of publishing.
    #[schema(required = false, value_type = Option<bool>)]
    pub draft: Option<Value>,
}

/// Reads a JSON object into one of the loose request types above. Every member is an
/// `Option<Value>` (unknown members are ignored), so no object can fail to convert.
fn loose<'a, T: serde::Deserialize<'a> + Default>(object: &'a serde_json::Map<String, Value>) -> T {
    // Read from the map in place: only the members kept are copied, not the whole object
    // (which `from_value` would need, once per level of the body).
    T::deserialize(object).unwrap_or_default()
}

/// Step 1: the body's shape.
pub fn parse_request(body: &Value) -> Result<PostRequest, ApiError> {
    if !body.is_object() {
        return Err(ApiError::invalid_request(
            "The request body must be a JSON object",
        ));
    }
    if has_nul(body) {
        return Err(ApiError::invalid_request(
            "The request body must not contain NUL characters (\\u0000)",
        ));
    }
    let body: CreatePostRequest = body.as_object().map(loose).unwrap_or_default();
    PostRequest::try_from(body)
}

impl TryFrom<CreatePostRequest> for PostRequest {
    type Error = ApiError;

    /// The checks in the order the refusals are given (the first failing one answers).
    fn try_from(body: CreatePostRequest) -> Result<Self, ApiError> {
        let post: CreatePost = loose(object(body.post.as_ref(), "post")?);
        let account_id = required_string(post.account_id.as_ref(), "accountId")?;
        let content: CreatePostContent = loose(object(post.content.as_ref(), "content")?);
        let platform_name = required_string(content.platform.as_ref(), "platform")?;
        let target: CreatePostTarget = loose(object(post.target.as_ref(), "target")?);
        let target_type = required_string(target.target_type.as_ref(), "targetType")?;

        let platform = Platform::parse(platform_name).ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidPlatform,
            format!(
                "Invalid platform '{platform_name}'. Supported platforms: facebook, instagram, threads, tiktok, youtube, x"
            ),
        )
    })?;
        if target_type != platform_name {
            return Err(ApiError::invalid_request(format!(
                "target.targetType ('{target_type}') must equal content.platform ('{platform_name}')"
            )));
        }
        let account_id = Uuid::parse_str(account_id.trim()).map_err(|_| {
            ApiError::new(
                ErrorCode::InvalidAccountId,
                format!("Account '{account_id}' not found"),
            )
        })?;

        let text = match &content.text {
            None | Some(Value::Null) => Text::None,
            Some(Value::String(s)) => Text::One(s.clone()),
            Some(Value::Array(items)) => Text::Many(
                items
                    .iter()
                    .map(|item| item.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        ApiError::new(
                            ErrorCode::InvalidTextFormat,
                            "text must be a string or an array of strings",
                        )
                    })?,
            ),
            Some(_) => {
                return Err(ApiError::new(
                    ErrorCode::InvalidTextFormat,
                    "text must be a string or an array of strings",
                ));
            }
        };
        let media_urls = match &content.media_urls {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) if s.trim().is_empty() => Vec::new(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    ApiError::invalid_request("mediaUrls must be a string or an array of strings")
                })?,
            Some(_) => {
                return Err(ApiError::invalid_request(
                    "mediaUrls must be a string or an array of strings",
                ));
            }
        };
        let cover_url = string(content.cover_url.as_ref(), "coverUrl")?
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string);
        let scheduled_at = string(content.scheduled_at.as_ref(), "scheduledAt")?
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string);
        let draft = match &post.tiktok_options {
            None | Some(Value::Null) => false,
            Some(Value::Object(options)) => match loose::<TiktokOptions>(options).draft {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => b,
                Some(_) => {
                    return Err(ApiError::invalid_request(
                        "tiktokOptions.draft must be a boolean",
                    ));
                }
            },
            Some(_) => return Err(ApiError::invalid_request("tiktokOptions must be an object")),
        };
        Ok(PostRequest {
            account_id,
            platform,
            text,
            media_urls,
            cover_url,
            scheduled_at,
            draft,
        })
    }
}
