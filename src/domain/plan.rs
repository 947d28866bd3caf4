//! The typed publish plan: what validation (`validate.rs`) turns a `POST /v2/posts` body into,
//! and what the platform adapters (`crate::platforms`) execute. Every value here has passed the
//! spec's rules (§4.1, §8), so adapters never re-check counts, lengths or media types.

use serde::Serialize;

/// `post_type` of spec §2.3: stored on the history row, so defined with the entity.
pub use entity::post_submission::PostType;

/// The six platforms: stored in every table that names one, so defined with the entities.
pub use entity::platform::Platform;

/// A media file that passed the probe (status 200, accepted type, size within the limit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MediaRef {
    /// The URL to hand to the platform (http upgraded to https unless the host is allow-listed).
    pub url: String,
    pub kind: MediaKind,
    /// The content type the probe saw, e.g. `image/jpeg`, `video/mp4`.
    pub content_type: String,
    /// `Content-Length` as the probe saw it, when the server sent one.
    pub size: Option<u64>,
    /// An image's width and height, when known (our own uploads).
    pub dimensions: Option<(u32, u32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    Image,
    Video,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FacebookPost {
    /// `POST /{page}/feed` with `message`.
    Text { message: String },
    /// `POST /{page}/photos` with `url` and `message`.
    Photo { image: MediaRef, caption: String },
    /// Each image `POST /{page}/photos` with `published=false`, then `/{page}/feed` with
    /// `attached_media`.
    Album {
        images: Vec<MediaRef>,
        message: String,
    },
    /// `POST /{page}/videos` with `file_url` and `description`.
    Video {
        video: MediaRef,
        description: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstagramPost {
    Image {
        image: MediaRef,
        caption: String,
    },
    /// 2-10 items; children may be images or videos.
    Carousel {
        items: Vec<MediaRef>,
        caption: String,
    },
    Reel {
        video: MediaRef,
        cover_url: Option<String>,
        caption: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadsPost {
    Text {
        text: String,
    },
    Image {
        image: MediaRef,
        text: Option<String>,
    },
    Video {
        video: MediaRef,
        text: Option<String>,
    },
    /// 2-20 items.
    Carousel {
        items: Vec<MediaRef>,
        text: Option<String>,
    },
    /// Several posts, each a reply to the one before; `media` (at most one) goes on the first.
    Thread {
        texts: Vec<String>,
        media: Option<MediaRef>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TiktokContent {
    Video(MediaRef),
    /// 1-35 images, shown as a photo carousel.
    Photos(Vec<MediaRef>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TiktokPost {
    pub caption: String,
    pub content: TiktokContent,
    /// `true`: send to the creator's inbox as a draft instead of posting.
    pub draft: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YoutubePost {
    pub title: String,
    pub description: String,
    pub video: MediaRef,
    pub thumbnail: Option<MediaRef>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum XMedia {
    None,
    /// 1-4 images.
    Images(Vec<MediaRef>),
    Video(MediaRef),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XPost {
    /// One tweet per item (each at most 280 characters after truncation); more than one makes a
    /// reply chain.
    pub tweets: Vec<String>,
    /// Attached to the first tweet.
    pub media: XMedia,
}

/// What one publish will do, per platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishPlan {
    Facebook(FacebookPost),
    Instagram(InstagramPost),
    Threads(ThreadsPost),
    Tiktok(TiktokPost),
    Youtube(YoutubePost),
    X(XPost),
}

impl PublishPlan {
    pub fn platform(&self) -> Platform {
        match self {
            PublishPlan::Facebook(_) => Platform::Facebook,
            PublishPlan::Instagram(_) => Platform::Instagram,
            PublishPlan::Threads(_) => Platform::Threads,
            PublishPlan::Tiktok(_) => Platform::Tiktok,
            PublishPlan::Youtube(_) => Platform::Youtube,
            PublishPlan::X(_) => Platform::X,
        }
    }

    /// `post_type` of the result (spec §2.3).
    pub fn post_type(&self) -> PostType {
        match self {
            PublishPlan::Facebook(FacebookPost::Text { .. }) => PostType::Text,
            PublishPlan::Facebook(FacebookPost::Photo { .. }) => PostType::Photo,
            PublishPlan::Facebook(FacebookPost::Album { .. }) => PostType::Album,
            PublishPlan::Facebook(FacebookPost::Video { .. }) => PostType::Video,
            PublishPlan::Instagram(InstagramPost::Image { .. }) => PostType::Photo,
            PublishPlan::Instagram(InstagramPost::Carousel { .. }) => PostType::Carousel,
            PublishPlan::Instagram(InstagramPost::Reel { .. }) => PostType::Reels,
            PublishPlan::Threads(ThreadsPost::Text { .. }) => PostType::Text,
            PublishPlan::Threads(ThreadsPost::Image { .. }) => PostType::Photo,
            PublishPlan::Threads(ThreadsPost::Video { .. }) => PostType::Video,
            PublishPlan::Threads(ThreadsPost::Carousel { .. }) => PostType::Carousel,
            PublishPlan::Threads(ThreadsPost::Thread { .. }) => PostType::Thread,
            PublishPlan::Tiktok(TiktokPost {
                content: TiktokContent::Video(_),
                ..
            }) => PostType::Video,
            PublishPlan::Tiktok(TiktokPost {
                content: TiktokContent::Photos(_),
                ..
            }) => PostType::Carousel,
            PublishPlan::Youtube(_) => PostType::Video,
            PublishPlan::X(post) if post.tweets.len() > 1 => PostType::Thread,
            PublishPlan::X(XPost {
                media: XMedia::Video(_),
                ..
            }) => PostType::Video,
            PublishPlan::X(XPost {
                media: XMedia::Images(_),
                ..
            }) => PostType::Photo,
            PublishPlan::X(_) => PostType::Text,
        }
    }

    /// Whether the plan moves a video (the longer request time limit applies).
    pub fn has_video(&self) -> bool {
        match self {
            PublishPlan::Facebook(FacebookPost::Video { .. })
            | PublishPlan::Instagram(InstagramPost::Reel { .. })
            | PublishPlan::Threads(ThreadsPost::Video { .. })
            | PublishPlan::Youtube(_)
            | PublishPlan::Tiktok(TiktokPost {
                content: TiktokContent::Video(_),
                ..
            })
            | PublishPlan::X(XPost {
                media: XMedia::Video(_),
                ..
            }) => true,
            PublishPlan::Instagram(InstagramPost::Carousel { items, .. })
            | PublishPlan::Threads(ThreadsPost::Carousel { items, .. }) => {
                items.iter().any(|m| m.kind == MediaKind::Video)
            }
            PublishPlan::Threads(ThreadsPost::Thread { media, .. }) => {
                media.as_ref().is_some_and(|m| m.kind == MediaKind::Video)
            }
            _ => false,
        }
    }

    /// Posts in a thread (1 for anything else).
    pub fn thread_len(&self) -> usize {
        match self {
            PublishPlan::Threads(ThreadsPost::Thread { texts, .. }) => texts.len(),
            PublishPlan::X(post) => post.tweets.len(),
            _ => 1,
        }
    }

    /// Platform API calls the publish will make, status polls aside: what it takes from the
    /// account's limiter (spec §8 counts API calls per account).
    pub fn estimated_calls(&self) -> u32 {
        let n = |v: usize| v as u32;
        match self {
            PublishPlan::Facebook(FacebookPost::Album { images, .. }) => n(images.len()) + 1,
            PublishPlan::Facebook(_) => 1,
            // container, status, publish
            PublishPlan::Instagram(InstagramPost::Carousel { items, .. }) => n(items.len()) * 2 + 3,
            PublishPlan::Instagram(_) => 3,
            PublishPlan::Threads(ThreadsPost::Carousel { items, .. }) => n(items.len()) * 2 + 3,
            PublishPlan::Threads(ThreadsPost::Thread { texts, .. }) => n(texts.len()) * 3,
            PublishPlan::Threads(_) => 3,
            // one init per publish (tiktok limits inits per minute)
            PublishPlan::Tiktok(_) => 1,
            // youtube counts quota units, not calls: see the supervisor's cost model
            PublishPlan::Youtube(_) => 1,
            PublishPlan::X(post) => {
                let media = match &post.media {
                    XMedia::None => 0,
                    XMedia::Images(images) => n(images.len()) * 3,
                    XMedia::Video(_) => 4,
                };
                media + n(post.tweets.len())
            }
        }
    }
}
