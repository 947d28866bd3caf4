//! Validation of `POST /v2/posts` (spec §4.1, §7, §8), as pure functions:
//!
//! 1. [`parse_request`]: the body's shape → [`PostRequest`] (missing parameters, types, platform);
//! 2. [`check_account`]: the request against the account row (disconnected, wrong platform, dead
//!    token);
//! 3. [`media_slots`]: counts and text rules that need no network, and what each media position
//!    accepts — the caller then probes each URL;
//! 4. [`build_plan`]: the request plus the probed media → a typed [`PublishPlan`].
//!
//! Nothing here touches the network or the database, so every row of the platform rules table
//! is covered by table-driven unit tests below.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use unicode_segmentation::UnicodeSegmentation;
use utoipa::ToSchema;
use uuid::Uuid;

use super::plan::{
    FacebookPost, InstagramPost, MediaKind, MediaRef, Platform, PublishPlan, ThreadsPost,
    TiktokContent, TiktokPost, XMedia, XPost, YoutubePost,
};
use crate::{
    error::{ApiError, ErrorCode},
    media::Accept,
};

/// Characters per tweet (spec §8); longer tweets are truncated.
pub const X_TWEET_MAX_CHARS: usize = 280;
/// Characters per threads post (spec §7 message form).
pub const THREADS_TEXT_MAX_CHARS: usize = 500;
const INSTAGRAM_CAPTION_MAX_CHARS: usize = 2_200;
const TIKTOK_CAPTION_MAX_CHARS: usize = 2_200;
const FACEBOOK_MESSAGE_MAX_CHARS: usize = 63_206;
const YOUTUBE_TITLE_MAX_CHARS: usize = 100;
const YOUTUBE_DESCRIPTION_MAX_BYTES: usize = 5_000;

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

/// What step 2 needs to know about the account.
#[derive(Debug, Clone)]
pub struct AccountFacts<'a> {
    pub platform: Platform,
    pub disabled: bool,
    pub is_valid: bool,
    pub token_expires_at: Option<DateTime<Utc>>,
    /// Why the token was marked invalid (`TokenExpired: …` or `InvalidToken: …`).
    pub invalid_reason: Option<&'a str>,
}

/// Step 2: the request against the account (already known to be the caller's).
pub fn check_account(
    request: &PostRequest,
    account: &AccountFacts<'_>,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    if account.disabled {
        return Err(ApiError::new(
            ErrorCode::AccountDisabled,
            "This account has been disconnected; reconnect it to publish",
        ));
    }
    if account.platform != request.platform {
        return Err(ApiError::new(
            ErrorCode::InvalidPlatform,
            format!(
                "Account {} is a {} account; content.platform is '{}'",
                request.account_id,
                account.platform,
                request.platform.as_str()
            ),
        ));
    }
    if account.token_expires_at.is_some_and(|at| at <= now) {
        return Err(ApiError::new(
            ErrorCode::TokenExpired,
            "The platform access token of this account has expired; reconnect the account",
        ));
    }
    if !account.is_valid
        && account
            .invalid_reason
            .is_some_and(|r| r.starts_with("TokenExpired"))
    {
        return Err(ApiError::new(
            ErrorCode::TokenExpired,
            "The platform access token of this account has expired; reconnect the account",
        ));
    }
    if !account.is_valid {
        return Err(ApiError::new(
            ErrorCode::InvalidToken,
            "The platform access token of this account is no longer valid; reconnect the account",
        ));
    }
    Ok(())
}

fn text_required(platform: Platform, why: &str) -> ApiError {
    ApiError::new(
        ErrorCode::TextRequired,
        format!("Text is required for {} {why}", platform.as_str()),
    )
}

fn media_required(message: &str) -> ApiError {
    ApiError::new(ErrorCode::MediaRequired, message)
}

fn too_many(message: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidCarouselSize, message)
}

fn too_long(message: String) -> ApiError {
    ApiError::new(ErrorCode::TextTooLong, message)
}

fn no_thread(platform: Platform) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidTextFormat,
        format!(
            "text must be a string for {}: an array of strings makes a thread, which only threads and x support",
            platform.as_str()
        ),
    )
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// The single text of a non-thread platform (`None` when absent or blank).
fn single_text(request: &PostRequest) -> Result<Option<&str>, ApiError> {
    match &request.text {
        Text::None => Ok(None),
        Text::One(s) if s.trim().is_empty() => Ok(None),
        Text::One(s) => Ok(Some(s)),
        Text::Many(_) => Err(no_thread(request.platform)),
    }
}

/// Every item of a thread must have text.
fn thread_texts(platform: Platform, texts: &[String]) -> Result<(), ApiError> {
    if texts.is_empty() {
        return Err(text_required(platform, "(the thread has no posts)"));
    }
    if let Some(i) = texts.iter().position(|t| t.trim().is_empty()) {
        return Err(text_required(
            platform,
            &format!("(thread item {i} is empty)"),
        ));
    }
    Ok(())
}

const IMAGES: Accept = Accept {
    images: true,
    videos: false,
    webp: false,
    png: true,
};
const IMAGES_AND_VIDEO: Accept = Accept {
    images: true,
    videos: true,
    webp: false,
    png: true,
};
const VIDEO: Accept = Accept {
    images: false,
    videos: true,
    webp: false,
    png: false,
};

/// Step 3: the rules that need no network, and what each media position accepts (the caller
/// probes `request.media_urls[i]` with `accept[i]`, and the cover with [`cover_accept`]).
pub fn media_slots(request: &PostRequest) -> Result<Vec<Accept>, ApiError> {
    let platform = request.platform;
    let count = request.media_urls.len();
    let uniform = |accept: Accept| vec![accept; count];
    match platform {
        Platform::Facebook => {
            let text = single_text(request)?;
            if count > 10 {
                return Err(too_many("facebook posts take 0-10 media items"));
            }
            let text = text.ok_or_else(|| text_required(platform, "posts"))?;
            if chars(text) > FACEBOOK_MESSAGE_MAX_CHARS {
                return Err(too_long(format!(
                    "Text exceeds {FACEBOOK_MESSAGE_MAX_CHARS} characters for facebook"
                )));
            }
            Ok(uniform(IMAGES_AND_VIDEO))
        }
        Platform::Instagram => {
            let text = single_text(request)?;
            if count == 0 {
                return Err(media_required(
                    "Media is required for instagram (text-only posts are not supported)",
                ));
            }
            if count > 10 {
                return Err(too_many("instagram carousels take 2-10 media items"));
            }
            let text = text.ok_or_else(|| text_required(platform, "posts (the caption)"))?;
            if chars(text) > INSTAGRAM_CAPTION_MAX_CHARS {
                return Err(too_long(format!(
                    "Text exceeds {INSTAGRAM_CAPTION_MAX_CHARS} characters for instagram"
                )));
            }
            Ok(uniform(IMAGES_AND_VIDEO))
        }
        Platform::Threads => {
            let threads_accept = Accept {
                webp: true,
                ..IMAGES_AND_VIDEO
            };
            let texts: Vec<&str> = match &request.text {
                Text::Many(texts) => {
                    thread_texts(platform, texts)?;
                    if count > 1 {
                        return Err(too_many(
                            "A threads thread takes at most one media item (on its first post)",
                        ));
                    }
                    texts.iter().map(String::as_str).collect()
                }
                Text::One(s) if !s.trim().is_empty() => vec![s.as_str()],
                _ => {
                    if count == 0 {
                        return Err(text_required(platform, "text posts"));
                    }
                    vec![]
                }
            };
            if count > 20 {
                return Err(too_many("threads carousels take 2-20 media items"));
            }
            if texts.iter().any(|t| chars(t) > THREADS_TEXT_MAX_CHARS) {
                return Err(too_long(format!(
                    "Text exceeds {THREADS_TEXT_MAX_CHARS} characters (threads limit per post)"
                )));
            }
            Ok(uniform(threads_accept))
        }
        Platform::X => {
            match &request.text {
                Text::Many(texts) => thread_texts(platform, texts)?,
                Text::One(s) if !s.trim().is_empty() => {}
                _ if count == 0 => return Err(text_required(platform, "posts without media")),
                _ => {}
            }
            if count > 4 {
                return Err(too_many("x posts take 1-4 images or 1 video"));
            }
            Ok(uniform(IMAGES_AND_VIDEO))
        }
        Platform::Tiktok => {
            let text = single_text(request)?;
            if count == 0 {
                return Err(media_required(
                    "Media is required for tiktok: one video or 1-35 images",
                ));
            }
            if count > 35 {
                return Err(too_many("tiktok photo posts take 1-35 images"));
            }
            if text.is_some_and(|t| chars(t) > TIKTOK_CAPTION_MAX_CHARS) {
                return Err(too_long(format!(
                    "Text exceeds {TIKTOK_CAPTION_MAX_CHARS} characters for tiktok"
                )));
            }
            // TikTok's photo mode takes JPEG and WEBP, not PNG.
            Ok(uniform(Accept {
                images: true,
                videos: true,
                webp: true,
                png: false,
            }))
        }
        Platform::Youtube => {
            let text = single_text(request)?;
            if count == 0 {
                return Err(media_required(
                    "Media is required for youtube: mediaUrls[0] must be the video",
                ));
            }
            if count > 2 {
                return Err(too_many(
                    "youtube takes a video and an optional thumbnail (at most 2 media URLs)",
                ));
            }
            let text = text.ok_or_else(|| text_required(platform, "videos (the title)"))?;
            let (title, description) = split_title(text);
            if title.is_empty() {
                return Err(text_required(platform, "videos (the title)"));
            }
            if chars(&title) > YOUTUBE_TITLE_MAX_CHARS {
                return Err(too_long(format!(
                    "The youtube title (text before the first blank line) exceeds {YOUTUBE_TITLE_MAX_CHARS} characters"
                )));
            }
            if description.len() > YOUTUBE_DESCRIPTION_MAX_BYTES {
                return Err(too_long(format!(
                    "The youtube description exceeds {YOUTUBE_DESCRIPTION_MAX_BYTES} bytes"
                )));
            }
            let mut slots = vec![VIDEO];
            if count == 2 {
                slots.push(IMAGES);
            }
            Ok(slots)
        }
    }
}

/// What an instagram reel cover may be: a JPG or PNG.
pub fn cover_accept() -> Accept {
    IMAGES
}

/// Splits youtube text into title and description at the first blank line.
pub fn split_title(text: &str) -> (String, String) {
    let lines: Vec<&str> = text.lines().collect();
    match lines.iter().position(|line| line.trim().is_empty()) {
        Some(blank) => (
            lines[..blank].join(" ").trim().to_string(),
            lines[blank + 1..].join("\n").trim().to_string(),
        ),
        None => (text.trim().to_string(), String::new()),
    }
}

/// Truncates a tweet to 280 characters without splitting a character (or a grapheme cluster
/// such as an emoji with modifiers).
pub fn truncate_tweet(text: &str) -> String {
    if chars(text) <= X_TWEET_MAX_CHARS {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for grapheme in text.graphemes(true) {
        let n = chars(grapheme);
        if used + n > X_TWEET_MAX_CHARS {
            break;
        }
        out.push_str(grapheme);
        used += n;
    }
    out
}

fn mixed(message: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidMediaType, message)
}

fn all_images(media: &[MediaRef]) -> bool {
    media.iter().all(|m| m.kind == MediaKind::Image)
}

/// Step 4: the request and its probed media (in `mediaUrls` order; the cover separately) → the
/// plan.
pub fn build_plan(
    request: &PostRequest,
    media: Vec<MediaRef>,
    cover: Option<MediaRef>,
) -> Result<PublishPlan, ApiError> {
    let text = || match &request.text {
        Text::One(s) => s.clone(),
        _ => String::new(),
    };
    let optional_text = || match &request.text {
        Text::One(s) if !s.trim().is_empty() => Some(s.clone()),
        _ => None,
    };
    if cover.is_some()
        && !(request.platform == Platform::Instagram
            && media.len() == 1
            && media[0].kind == MediaKind::Video)
    {
        return Err(ApiError::invalid_request(
            "coverUrl applies only to instagram reels (one video)",
        ));
    }
    let plan = match request.platform {
        Platform::Facebook => PublishPlan::Facebook(match media.len() {
            0 => FacebookPost::Text { message: text() },
            1 if media[0].kind == MediaKind::Video => FacebookPost::Video {
                video: media[0].clone(),
                description: text(),
            },
            1 => FacebookPost::Photo {
                image: media[0].clone(),
                caption: text(),
            },
            _ if all_images(&media) => FacebookPost::Album {
                images: media,
                message: text(),
            },
            _ => {
                return Err(mixed(
                    "facebook albums take images only; a video must be posted on its own",
                ));
            }
        }),
        Platform::Instagram => PublishPlan::Instagram(match media.len() {
            1 if media[0].kind == MediaKind::Video => InstagramPost::Reel {
                video: media[0].clone(),
                cover_url: cover.map(|c| c.url),
                caption: text(),
            },
            1 => InstagramPost::Image {
                image: media[0].clone(),
                caption: text(),
            },
            _ => InstagramPost::Carousel {
                items: media,
                caption: text(),
            },
        }),
        Platform::Threads => PublishPlan::Threads(match &request.text {
            Text::Many(texts) => ThreadsPost::Thread {
                texts: texts.clone(),
                media: media.into_iter().next(),
            },
            _ => match media.len() {
                0 => ThreadsPost::Text { text: text() },
                1 if media[0].kind == MediaKind::Video => ThreadsPost::Video {
                    video: media[0].clone(),
                    text: optional_text(),
                },
                1 => ThreadsPost::Image {
                    image: media[0].clone(),
                    text: optional_text(),
                },
                _ => ThreadsPost::Carousel {
                    items: media,
                    text: optional_text(),
                },
            },
        }),
        Platform::X => {
            let tweets = match &request.text {
                Text::Many(texts) => texts.iter().map(|t| truncate_tweet(t)).collect(),
                Text::One(s) => vec![truncate_tweet(s)],
                Text::None => vec![String::new()],
            };
            let media = if media.is_empty() {
                XMedia::None
            } else if all_images(&media) {
                XMedia::Images(media)
            } else if media.len() == 1 {
                XMedia::Video(media[0].clone())
            } else {
                return Err(mixed(
                    "x posts take 1-4 images or 1 video; images and video cannot be combined",
                ));
            };
            PublishPlan::X(XPost { tweets, media })
        }
        Platform::Tiktok => {
            let content = if all_images(&media) {
                TiktokContent::Photos(media)
            } else if media.len() == 1 {
                TiktokContent::Video(media[0].clone())
            } else {
                return Err(mixed(
                    "tiktok posts take one video or 1-35 images, not both",
                ));
            };
            PublishPlan::Tiktok(TiktokPost {
                caption: text(),
                content,
                draft: request.draft,
            })
        }
        Platform::Youtube => {
            let (title, description) = split_title(&text());
            let mut media = media.into_iter();
            let video = media
                .next()
                .ok_or_else(|| media_required("mediaUrls[0] must be the youtube video"))?;
            PublishPlan::Youtube(YoutubePost {
                title,
                description,
                video,
                thumbnail: media.next(),
            })
        }
    };
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(platform: &str, text: Value, media: Value) -> Value {
        json!({"post": {
            "accountId": "6f1c1d3e-8a49-4b1a-9a57-3f2b8c1d0e11",
            "content": {"text": text, "mediaUrls": media, "platform": platform},
            "target": {"targetType": platform}
        }})
    }

    fn code_of(result: Result<impl std::fmt::Debug, ApiError>) -> String {
        match result {
            Ok(v) => format!("ok {v:?}"),
            Err(e) => e.code.as_str().to_string(),
        }
    }

    fn media(kind: MediaKind, i: usize) -> MediaRef {
        let (ext, content_type) = match kind {
            MediaKind::Image => ("jpg", "image/jpeg"),
            MediaKind::Video => ("mp4", "video/mp4"),
        };
        MediaRef {
            url: format!("https://cdn.example.com/{i}.{ext}"),
            kind,
            content_type: content_type.into(),
            size: Some(1000),
        }
    }

    /// Runs steps 1, 3 and 4 with media of the given kinds (I = image, V = video).
    fn plan(platform: &str, text: Value, kinds: &str) -> Result<PublishPlan, ApiError> {
        let urls: Vec<String> = kinds
            .chars()
            .enumerate()
            .map(|(i, _)| format!("https://cdn.example.com/{i}"))
            .collect();
        let request = parse_request(&body(platform, text, json!(urls)))?;
        media_slots(&request)?;
        let media = kinds
            .chars()
            .enumerate()
            .map(|(i, k)| {
                media(
                    if k == 'V' {
                        MediaKind::Video
                    } else {
                        MediaKind::Image
                    },
                    i,
                )
            })
            .collect();
        build_plan(&request, media, None)
    }

    fn post_type(result: Result<PublishPlan, ApiError>) -> String {
        match result {
            Ok(plan) => plan.post_type().as_str().to_string(),
            Err(e) => e.code.as_str().to_string(),
        }
    }

    #[test]
    fn missing_parameters_are_named() {
        let cases = [
            (json!({}), "post"),
            (json!({"post": {}}), "accountId"),
            (json!({"post": {"accountId": "x"}}), "content"),
            (
                json!({"post": {"accountId": "x", "content": {}}}),
                "platform",
            ),
            (
                json!({"post": {"accountId": "x", "content": {"platform": "x"}}}),
                "target",
            ),
            (
                json!({"post": {"accountId": "x", "content": {"platform": "x"}, "target": {}}}),
                "targetType",
            ),
        ];
        for (body, name) in cases {
            let err = parse_request(&body).unwrap_err();
            assert_eq!(err.code, ErrorCode::MissingParameter, "{body}");
            assert!(err.message.ends_with(name), "{body}: {}", err.message);
        }
    }

    #[test]
    fn request_shape_errors() {
        let mut b = body("myspace", json!("hi"), json!([]));
        assert_eq!(code_of(parse_request(&b)), "InvalidPlatform");
        b = body("x", json!("hi"), json!([]));
        b["post"]["target"]["targetType"] = json!("threads");
        assert_eq!(code_of(parse_request(&b)), "InvalidRequest");
        b = body("x", json!(42), json!([]));
        assert_eq!(code_of(parse_request(&b)), "InvalidTextFormat");
        // NUL anywhere, unknown fields and keys included (the body is stored as it came).
        for nul in [
            json!({"extra": "a\u{0}b"}),
            json!({"a\u{0}": 1}),
            json!([["\u{0}"]]),
        ] {
            b = body("x", json!("hi"), json!([]));
            b["post"]["content"]["extra"] = nul;
            assert_eq!(code_of(parse_request(&b)), "InvalidRequest", "{b}");
        }
        b = body("x", json!(["ok", 1]), json!([]));
        assert_eq!(code_of(parse_request(&b)), "InvalidTextFormat");
        b = body("x", json!("hi"), json!(5));
        assert_eq!(code_of(parse_request(&b)), "InvalidRequest");
        b = body("x", json!("hi"), json!([]));
        b["post"]["accountId"] = json!("not-a-uuid");
        assert_eq!(code_of(parse_request(&b)), "InvalidAccountId");
        b = body("tiktok", json!("hi"), json!("https://a/b.mp4"));
        b["post"]["tiktokOptions"] = json!({"draft": "yes"});
        assert_eq!(code_of(parse_request(&b)), "InvalidRequest");
    }

    #[test]
    fn a_single_media_string_becomes_an_array() {
        let request =
            parse_request(&body("instagram", json!("c"), json!("https://a/1.jpg"))).unwrap();
        assert_eq!(request.media_urls, vec!["https://a/1.jpg".to_string()]);
    }

    #[test]
    fn account_checks() {
        let request = parse_request(&body("x", json!("hi"), json!([]))).unwrap();
        let now = Utc::now();
        let ok = AccountFacts {
            platform: Platform::X,
            disabled: false,
            is_valid: true,
            token_expires_at: None,
            invalid_reason: None,
        };
        assert!(check_account(&request, &ok, now).is_ok());
        let cases = [
            (
                AccountFacts {
                    disabled: true,
                    ..ok.clone()
                },
                "AccountDisabled",
            ),
            (
                AccountFacts {
                    platform: Platform::Threads,
                    ..ok.clone()
                },
                "InvalidPlatform",
            ),
            (
                AccountFacts {
                    is_valid: false,
                    ..ok.clone()
                },
                "InvalidToken",
            ),
            (
                AccountFacts {
                    is_valid: false,
                    invalid_reason: Some("TokenExpired: platform said so"),
                    ..ok.clone()
                },
                "TokenExpired",
            ),
            (
                AccountFacts {
                    token_expires_at: Some(now - chrono::Duration::seconds(1)),
                    ..ok.clone()
                },
                "TokenExpired",
            ),
        ];
        for (facts, code) in cases {
            assert_eq!(code_of(check_account(&request, &facts, now)), code);
        }
    }

    /// Every row of the platform rules table (spec §4.1) and the media counts of §8.
    #[test]
    fn platform_rules_table() {
        let many = |n: usize| "I".repeat(n);
        let cases: Vec<(&str, Value, String, &str)> = vec![
            // facebook: 0 media = text; 1 image = photo; 2-10 images = album; 1 video = video
            ("facebook", json!("hi"), String::new(), "text"),
            ("facebook", json!("hi"), "I".into(), "photo"),
            ("facebook", json!("hi"), many(2), "album"),
            ("facebook", json!("hi"), many(10), "album"),
            ("facebook", json!("hi"), many(11), "InvalidCarouselSize"),
            ("facebook", json!("hi"), "V".into(), "video"),
            ("facebook", json!("hi"), "IV".into(), "InvalidMediaType"),
            ("facebook", Value::Null, String::new(), "TextRequired"),
            ("facebook", json!(""), "I".into(), "TextRequired"),
            (
                "facebook",
                json!(["a", "b"]),
                String::new(),
                "InvalidTextFormat",
            ),
            // instagram: media required; 1 image = photo; 2-10 = carousel; 1 video = reels
            ("instagram", json!("hi"), String::new(), "MediaRequired"),
            ("instagram", json!("hi"), "I".into(), "photo"),
            ("instagram", json!("hi"), many(2), "carousel"),
            ("instagram", json!("hi"), "IVI".into(), "carousel"),
            ("instagram", json!("hi"), many(10), "carousel"),
            ("instagram", json!("hi"), many(11), "InvalidCarouselSize"),
            ("instagram", json!("hi"), "V".into(), "reels"),
            ("instagram", Value::Null, "I".into(), "TextRequired"),
            // threads: string text + 0 media = text; 1 image; 2-20 = carousel; 1 video;
            // array text with 0-1 media = thread
            ("threads", json!("hi"), String::new(), "text"),
            ("threads", Value::Null, String::new(), "TextRequired"),
            ("threads", json!("hi"), "I".into(), "photo"),
            ("threads", Value::Null, "I".into(), "photo"),
            ("threads", json!("hi"), many(2), "carousel"),
            ("threads", json!("hi"), many(20), "carousel"),
            ("threads", json!("hi"), many(21), "InvalidCarouselSize"),
            ("threads", json!("hi"), "V".into(), "video"),
            ("threads", json!(["a", "b", "c"]), String::new(), "thread"),
            ("threads", json!(["a", "b"]), "I".into(), "thread"),
            ("threads", json!(["a", "b"]), many(2), "InvalidCarouselSize"),
            ("threads", json!(["a", ""]), String::new(), "TextRequired"),
            (
                "threads",
                json!("a".repeat(501)),
                String::new(),
                "TextTooLong",
            ),
            ("threads", json!("a".repeat(500)), String::new(), "text"),
            (
                "threads",
                json!(["ok", "a".repeat(501)]),
                String::new(),
                "TextTooLong",
            ),
            // x: string text 0 media = tweet; 1-4 images; or 1 video; array = thread
            ("x", json!("hi"), String::new(), "text"),
            ("x", json!("hi"), "I".into(), "photo"),
            ("x", json!("hi"), many(4), "photo"),
            ("x", json!("hi"), many(5), "InvalidCarouselSize"),
            ("x", json!("hi"), "V".into(), "video"),
            ("x", json!("hi"), "IV".into(), "InvalidMediaType"),
            ("x", json!("hi"), "VV".into(), "InvalidMediaType"),
            ("x", json!(["a", "b"]), String::new(), "thread"),
            ("x", Value::Null, String::new(), "TextRequired"),
            ("x", Value::Null, "I".into(), "photo"),
            // tiktok: 1 video = video post; 1-35 images = photo carousel
            ("tiktok", json!("hi"), "V".into(), "video"),
            ("tiktok", Value::Null, "V".into(), "video"),
            ("tiktok", json!("hi"), "I".into(), "carousel"),
            ("tiktok", json!("hi"), many(35), "carousel"),
            ("tiktok", json!("hi"), many(36), "InvalidCarouselSize"),
            ("tiktok", json!("hi"), String::new(), "MediaRequired"),
            ("tiktok", json!("hi"), "VI".into(), "InvalidMediaType"),
            ("tiktok", json!(["a", "b"]), "V".into(), "InvalidTextFormat"),
            // youtube: mediaUrls[0] the video; optional [1] thumbnail; title/description in text
            (
                "youtube",
                json!("Title\n\nDescription"),
                "V".into(),
                "video",
            ),
            (
                "youtube",
                json!("Title\n\nDescription"),
                "VI".into(),
                "video",
            ),
            ("youtube", json!("Title"), String::new(), "MediaRequired"),
            (
                "youtube",
                json!("Title"),
                "VII".into(),
                "InvalidCarouselSize",
            ),
            ("youtube", Value::Null, "V".into(), "TextRequired"),
            ("youtube", json!("t".repeat(101)), "V".into(), "TextTooLong"),
        ];
        for (platform, text, kinds, expected) in cases {
            assert_eq!(
                post_type(plan(platform, text.clone(), &kinds)),
                expected,
                "{platform} text={text} media={kinds}"
            );
        }
    }

    #[test]
    fn media_positions_accept_the_platform_formats() {
        let request = |platform: &str, media: Value| {
            parse_request(&body(platform, json!("T\n\nD"), media)).unwrap()
        };
        let threads = media_slots(&request("threads", json!(["a"]))).unwrap();
        assert!(threads[0].webp && threads[0].videos);
        let facebook = media_slots(&request("facebook", json!(["a"]))).unwrap();
        assert!(!facebook[0].webp);
        let tiktok = media_slots(&request("tiktok", json!(["a"]))).unwrap();
        assert!(tiktok[0].webp && !tiktok[0].png);
        let youtube = media_slots(&request("youtube", json!(["v", "t"]))).unwrap();
        assert!(youtube[0].videos && !youtube[0].images);
        assert!(youtube[1].images && !youtube[1].videos);
    }

    #[test]
    fn youtube_title_and_description_split_at_the_first_blank_line() {
        assert_eq!(
            split_title("My title\n\nLine one\n\nLine two"),
            ("My title".into(), "Line one\n\nLine two".into())
        );
        assert_eq!(
            split_title("Only a title"),
            ("Only a title".into(), String::new())
        );
        assert_eq!(
            split_title("Title\r\n  \r\nDesc"),
            ("Title".into(), "Desc".into())
        );
    }

    #[test]
    fn tweets_are_truncated_by_characters_never_splitting_one() {
        let ascii = "a".repeat(300);
        assert_eq!(truncate_tweet(&ascii).chars().count(), 280);
        let cjk = "漢".repeat(300);
        assert_eq!(truncate_tweet(&cjk), "漢".repeat(280));
        // 279 characters, then a family emoji of 7 code points: it does not fit and is dropped
        // whole rather than split.
        let family = "👨\u{200d}👩\u{200d}👧\u{200d}👦";
        let text = format!("{}{family}tail", "b".repeat(279));
        assert_eq!(truncate_tweet(&text), "b".repeat(279));
        assert_eq!(truncate_tweet("short"), "short");
    }

    #[test]
    fn tiktok_draft_and_instagram_cover() {
        let mut b = body("tiktok", json!("c"), json!(["https://a/v.mp4"]));
        b["post"]["tiktokOptions"] = json!({"draft": true});
        let request = parse_request(&b).unwrap();
        let plan = build_plan(&request, vec![media(MediaKind::Video, 0)], None).unwrap();
        assert!(matches!(
            plan,
            PublishPlan::Tiktok(TiktokPost { draft: true, .. })
        ));

        let request =
            parse_request(&body("instagram", json!("c"), json!(["https://a/v.mp4"]))).unwrap();
        let cover = media(MediaKind::Image, 9);
        let plan = build_plan(
            &request,
            vec![media(MediaKind::Video, 0)],
            Some(cover.clone()),
        )
        .unwrap();
        assert!(
            matches!(plan, PublishPlan::Instagram(InstagramPost::Reel { cover_url: Some(ref u), .. }) if *u == cover.url)
        );
        let request =
            parse_request(&body("instagram", json!("c"), json!(["https://a/i.jpg"]))).unwrap();
        assert_eq!(
            code_of(build_plan(
                &request,
                vec![media(MediaKind::Image, 0)],
                Some(cover)
            )),
            "InvalidRequest"
        );
    }
}
