//! Where each platform's API lives (`[platforms]`), and how long to wait for its processing.

use serde::{Deserialize, Serialize};

/// Where each platform's API lives, and how long to wait for its asynchronous processing.
/// Every base URL is configuration, so tests and the demo point them at the simulator.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct PlatformsConfig {
    /// Meta Graph API host (facebook pages and instagram with Facebook Login).
    pub graph_url: String,
    pub graph_version: String,
    /// Instagram API with Instagram Login host (`graph.instagram.com`): instagram accounts
    /// connected through Instagram Login publish and read insights here, and exchange and
    /// refresh their tokens at `{instagram_login_graph_url}/access_token` and
    /// `/refresh_access_token`. `graph_version` applies (Meta versions both hosts together).
    pub instagram_login_graph_url: String,
    /// Meta's video host: facebook page videos (`POST /{page}/videos`) are created there, as
    /// Meta asks for video uploads; `graph_version` applies.
    pub graph_video_url: String,
    /// Threads API host.
    pub threads_url: String,
    pub threads_version: String,
    /// TikTok Open API host.
    pub tiktok_url: String,
    /// Google API data host: `{youtube_url}/youtube/v3/...`.
    pub youtube_url: String,
    /// Google API upload host: `{youtube_upload_url}/upload/youtube/v3/...` (video resumable
    /// uploads and thumbnails); separate from the data host so either can be moved.
    pub youtube_upload_url: String,
    /// YouTube Analytics host: `{youtube_analytics_url}/v2/reports`.
    pub youtube_analytics_url: String,
    /// X API host.
    pub x_url: String,
    /// Pause between status polls of asynchronous processing (containers, uploads).
    pub poll_interval_ms: u64,
    /// Stop waiting for processing after this long: the publish is then `unconfirmed` (202
    /// `PublishUnconfirmed`) and checked in the background (`publishing.unconfirmed_check_*`).
    pub processing_timeout_secs: u64,
    /// Timeout of one HTTP call to a platform (uploads excluded).
    pub call_timeout_secs: u64,
    /// Bytes per upload chunk where a platform takes chunks (x append, tiktok FILE_UPLOAD).
    pub upload_chunk_bytes: u64,
    /// How tiktok gets a video: `FILE_UPLOAD` (we stream the bytes; works for any media host) or
    /// `PULL_FROM_URL` (tiktok fetches it; needs a domain verified with tiktok).
    pub tiktok_video_source: String,
}

impl Default for PlatformsConfig {
    fn default() -> Self {
        Self {
            graph_url: "https://graph.facebook.com".into(),
            graph_version: "v24.0".into(),
            graph_video_url: "https://graph-video.facebook.com".into(),
            instagram_login_graph_url: "https://graph.instagram.com".into(),
            threads_url: "https://graph.threads.net".into(),
            threads_version: "v1.0".into(),
            tiktok_url: "https://open.tiktokapis.com".into(),
            youtube_url: "https://www.googleapis.com".into(),
            youtube_upload_url: "https://www.googleapis.com".into(),
            youtube_analytics_url: "https://youtubeanalytics.googleapis.com".into(),
            x_url: "https://api.x.com".into(),
            poll_interval_ms: 3_000,
            processing_timeout_secs: 240,
            call_timeout_secs: 30,
            upload_chunk_bytes: 8 * 1024 * 1024,
            tiktok_video_source: "FILE_UPLOAD".into(),
        }
    }
}

impl PlatformsConfig {
    /// Every base URL pointed at one simulator (`http://127.0.0.1:PORT`).
    pub fn simulator(base_url: &str) -> Self {
        let base = base_url.trim_end_matches('/');
        Self {
            graph_url: format!("{base}/graph"),
            // The simulator serves video creation on its one graph mount.
            graph_video_url: format!("{base}/graph"),
            instagram_login_graph_url: format!("{base}/instagram"),
            threads_url: format!("{base}/threads"),
            tiktok_url: format!("{base}/tiktok"),
            youtube_url: format!("{base}/youtube"),
            youtube_upload_url: format!("{base}/youtube"),
            youtube_analytics_url: format!("{base}/youtubeanalytics"),
            x_url: format!("{base}/x"),
            poll_interval_ms: 100,
            ..Self::default()
        }
    }
}
