//! Facebook Pages adapter (`../shared/design/platform-apis.md` §2), with the Page token:
//!
//! - Text: `POST /{page}/feed` `message` → `{"id":"{page}_{post}"}`;
//! - Photo: `POST /{page}/photos` `url`, `message` → `{"id","post_id"}`;
//! - Album: each image `POST /{page}/photos` `published=false` → photo id, then
//!   `POST /{page}/feed` `message` + `attached_media[i]={"media_fbid":..}`;
//! - Video: `POST /{page}/videos` `file_url`, `description` on the video host
//!   (`graph_video_url`) → video id, then `GET /{video}?fields=status` on the Graph host until
//!   ready (the video goes out when processing completes).

use serde_json::{Value, json};

use super::{
    Pending, PlatformContext, PlatformError, Published, StepKind,
    ids::{ApiPath, GraphId, InvalidId},
    meta::{Graph, graph_id_of, id_of},
    poll_pause, processing_deadline,
};
use crate::domain::plan::FacebookPost;

pub async fn publish(
    ctx: &PlatformContext<'_>,
    post: &FacebookPost,
) -> Result<Published, PlatformError> {
    let graph = Graph::facebook(ctx);
    let page = ctx.account.graph_id()?;
    let feed = ApiPath::id(&page).then("feed");
    let photos = ApiPath::id(&page).then("photos");
    match post {
        FacebookPost::Text { message } => {
            ctx.steps.before_final().await?;
            let body = graph.post(&feed, &[("message", message)]).await?;
            Ok(Published::single(id_of(&body)?))
        }
        FacebookPost::Photo { image, caption } => {
            ctx.steps.before_final().await?;
            let body = graph
                .post(
                    &photos,
                    &[
                        ("url", image.url.as_str()),
                        ("message", caption),
                        ("published", "true"),
                    ],
                )
                .await?;
            // The post id is what the Page shows; the photo id is a fallback.
            match body["post_id"].as_str() {
                Some(post_id) if !post_id.is_empty() => Ok(Published::single(post_id)),
                _ => Ok(Published::single(id_of(&body)?)),
            }
        }
        FacebookPost::Album { images, message } => {
            let mut photo_ids = Vec::with_capacity(images.len());
            for image in images {
                // Unpublished photos are invisible until attached; they are safe to redo.
                let body = graph
                    .post(
                        &photos,
                        &[("url", image.url.as_str()), ("published", "false")],
                    )
                    .await?;
                let id = graph_id_of(&body)?;
                ctx.steps.record(StepKind::Photo, id.as_str()).await?;
                photo_ids.push(id);
            }
            let attached: Vec<(String, String)> = photo_ids
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    (
                        format!("attached_media[{i}]"),
                        json!({ "media_fbid": id.as_str() }).to_string(),
                    )
                })
                .collect();
            let mut params: Vec<(&str, &str)> = vec![("message", message.as_str())];
            params.extend(attached.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            ctx.steps.before_final().await?;
            let body = graph.post(&feed, &params).await?;
            Ok(Published::single(id_of(&body)?))
        }
        FacebookPost::Video { video, description } => {
            // Creating the video by URL publishes it once processed: this is the final call.
            ctx.steps.before_final().await?;
            let body = Graph::facebook_video(ctx)
                .post(
                    &ApiPath::id(&page).then("videos"),
                    &[
                        ("file_url", video.url.as_str()),
                        ("description", description),
                    ],
                )
                .await?;
            let video_id = graph_id_of(&body)?;
            ctx.steps.record(StepKind::Video, video_id.as_str()).await?;
            let waited = wait_video(ctx, &graph, &video_id).await;
            ctx.steps.processed(video_id.as_str(), &waited).await;
            waited?;
            Ok(Published::single(video_id))
        }
    }
}

/// Polls `GET /{video}?fields=status` until the video is ready (or published) or failed. Still
/// processing at the deadline is [`PlatformError::StillProcessing`]: the video exists and may
/// yet go out, so it is not a failure.
async fn wait_video(
    ctx: &PlatformContext<'_>,
    graph: &Graph<'_>,
    video_id: &GraphId,
) -> Result<(), PlatformError> {
    let deadline = processing_deadline(ctx.config);
    loop {
        match read_video(graph, video_id).await {
            Ok(VideoState::Ready) => return Ok(()),
            Ok(VideoState::Failed(message)) => {
                return Err(PlatformError::ProcessingFailed(message));
            }
            Ok(VideoState::Processing) => {}
            // A status read changes nothing: a passing outage only costs a poll.
            Err(PlatformError::Transient(_)) => {}
            Err(other) => return Err(other),
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(PlatformError::StillProcessing(Box::new(
                Pending::FacebookVideo {
                    video_id: video_id.to_string(),
                },
            )));
        }
        poll_pause(ctx.config).await;
    }
}

/// One look at a video left processing at our deadline: `Some` once it is ready.
pub async fn resume(
    ctx: &PlatformContext<'_>,
    video_id: &str,
) -> Result<Option<Published>, PlatformError> {
    let graph = Graph::facebook(ctx);
    // Stored from the platform's own answer; still checked before it goes into a URL.
    let video_id = GraphId::parse(video_id).map_err(InvalidId::not_found)?;
    match read_video(&graph, &video_id).await? {
        VideoState::Ready => Ok(Some(Published::single(video_id))),
        VideoState::Failed(message) => Err(PlatformError::ProcessingFailed(message)),
        VideoState::Processing => Ok(None),
    }
}

/// What one status read says about a video.
enum VideoState {
    Ready,
    /// Failed processing, with the platform's words.
    Failed(String),
    Processing,
}

/// `GET /{video}?fields=status`, read.
async fn read_video(graph: &Graph<'_>, video_id: &GraphId) -> Result<VideoState, PlatformError> {
    let body = graph
        .get(&ApiPath::id(video_id), &[("fields", "status")])
        .await?;
    let status = &body["status"];
    Ok(match status["video_status"].as_str().unwrap_or_default() {
        "ready" | "upload_complete" | "published" => VideoState::Ready,
        "error" | "expired" => VideoState::Failed(format!(
            "video {video_id} failed processing: {}",
            video_errors(status)
        )),
        _ if status["publishing_phase"]["status"] == "complete" => VideoState::Ready,
        _ => VideoState::Processing,
    })
}

/// The error messages of a failed video's phases.
fn video_errors(status: &Value) -> String {
    let messages: Vec<String> = ["processing_phase", "publishing_phase", "uploading_phase"]
        .iter()
        .filter_map(|phase| status[phase]["errors"].as_array())
        .flatten()
        .filter_map(|e| e["message"].as_str().map(str::to_string))
        .collect();
    if messages.is_empty() {
        "video_status error".into()
    } else {
        messages.join("; ")
    }
}
