//! Step 4: a checked request and its probed media become a typed [`PublishPlan`], refusing the
//! media mixes a platform cannot publish.

use super::{PostRequest, Text, rules::media_required, split_title, truncate_tweet};
use crate::{
    domain::plan::{
        FacebookPost, InstagramPost, MediaKind, MediaRef, Platform, PublishPlan, ThreadsPost,
        TiktokContent, TiktokPost, XMedia, XPost, YoutubePost,
    },
    error::{ApiError, ErrorCode},
};

fn mixed(message: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidMediaType, message)
}

fn all_images(media: &[MediaRef]) -> bool {
    media.iter().all(|m| m.kind == MediaKind::Image)
}

/// Instagram's feed takes images from 4:5 (portrait) to 1.91:1 (landscape); it refuses others
/// when the container is created (error 36003). Checked where the size is known: our uploads.
fn instagram_aspect(media: &[MediaRef]) -> Result<(), ApiError> {
    for image in media.iter().filter(|m| m.kind == MediaKind::Image) {
        let Some((width, height)) = image.dimensions else {
            continue;
        };
        let (w, h) = (u64::from(width), u64::from(height));
        // 4:5 ≤ w:h ≤ 1.91:1, in integers: 4h ≤ 5w and 100w ≤ 191h.
        if h == 0 || 4 * h > 5 * w || 100 * w > 191 * h {
            return Err(ApiError::new(
                ErrorCode::InvalidMediaType,
                format!(
                    "instagram takes images with an aspect ratio from 4:5 to 1.91:1; {} is {width}x{height}",
                    image.url
                ),
            ));
        }
    }
    Ok(())
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
    if request.platform == Platform::Instagram {
        instagram_aspect(&media)?;
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
