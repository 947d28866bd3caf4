//! The typed publish plan: what validation (`validate.rs`) turns a `POST /v2/posts` body into,
//! and what the platform adapters (`crate::platforms`) execute. Every value here has passed the
//! spec's rules (§4.1, §8), so adapters never re-check counts, lengths or media types.

use serde::Serialize;

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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    Image,
    Video,
}

/// `post_type` of spec §2.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PostType {
    Text,
    Photo,
    Album,
    Carousel,
    Video,
    Reels,
    Thread,
}

impl PostType {
    pub fn as_str(self) -> &'static str {
        match self {
            PostType::Text => "text",
            PostType::Photo => "photo",
            PostType::Album => "album",
            PostType::Carousel => "carousel",
            PostType::Video => "video",
            PostType::Reels => "reels",
            PostType::Thread => "thread",
        }
    }
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
