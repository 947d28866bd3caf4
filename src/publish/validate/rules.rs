//! Step 3: each platform's counts and text rules that need no network, what each media position
//! accepts, and the text shaping the rules imply (youtube titles, tweet truncation).

use unicode_segmentation::UnicodeSegmentation;

use super::{PostRequest, Text};
use crate::{
    domain::plan::Platform,
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

fn text_required(platform: Platform, why: &str) -> ApiError {
    ApiError::new(
        ErrorCode::TextRequired,
        format!("Text is required for {} {why}", platform.as_str()),
    )
}

pub(super) fn media_required(message: &str) -> ApiError {
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
