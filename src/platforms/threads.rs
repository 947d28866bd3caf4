//! Threads adapter (`../shared/design/platform-apis.md` §4): containers on
//! `POST /{user}/threads`, status polls on `GET /{container}?fields=id,status,error_message`,
//! then `POST /{user}/threads_publish?creation_id=` → `{"id"}`.
//!
//! - Text: one call, `media_type=TEXT&text=&auto_publish_text=true`, which creates and publishes
//!   the post (the documented shortcut for text posts: no container to wait on, and two calls
//!   fewer against the app's call budget); it is then the irreversible call;
//! - Image/Video: `image_url`/`video_url` (+ `text`);
//! - Carousel: `is_carousel_item=true` children, then `media_type=CAROUSEL&children=a,b`;
//! - Thread: one post per text, each later one with `reply_to_id` = the post published before
//!   it; the media (if any) goes on the first (a container + publish), text-only posts are
//!   published in one call as above.
//!
//! Every published id is recorded as a `post` step, so a thread interrupted halfway can be
//! settled from what went out.

use super::{
    Pending, PlatformContext, PlatformError, Published, StepKind,
    ids::{ApiPath, GraphId, InvalidId},
    meta::{
        ContainerEnd, Graph, abandon, carousel_error, container_failure, graph_id_of,
        read_container, wait_container,
    },
};
use crate::domain::plan::{MediaKind, MediaRef, ThreadsPost};

pub async fn publish(
    ctx: &PlatformContext<'_>,
    post: &ThreadsPost,
) -> Result<Published, PlatformError> {
    let graph = Graph::threads(ctx);
    match post {
        ThreadsPost::Text { text } => publish_text(ctx, &graph, text, None, true)
            .await
            .map(Published::single),
        ThreadsPost::Image { image, text } | ThreadsPost::Video { video: image, text } => {
            let container = create(ctx, &graph, text.as_deref(), image, None).await?;
            publish_container(ctx, &graph, &container, true)
                .await
                .map(Published::single)
        }
        ThreadsPost::Carousel { items, text } => {
            let container = carousel(ctx, &graph, items, text.as_deref())
                .await
                .map_err(carousel_error)?;
            publish_container(ctx, &graph, &container, true)
                .await
                .map(Published::single)
        }
        ThreadsPost::Thread { texts, media } => {
            let mut ids: Vec<String> = Vec::with_capacity(texts.len());
            for (i, text) in texts.iter().enumerate() {
                let media = if i == 0 { media.as_ref() } else { None };
                let reply_to = ids.last().map(String::as_str);
                let id = match media {
                    None => publish_text(ctx, &graph, text, reply_to, i == 0).await?,
                    Some(media) => {
                        // A post of a thread still processing cannot be carried on alone (the
                        // posts after it would never follow): `abandon` fails it as not published.
                        let container = create(ctx, &graph, Some(text), media, reply_to)
                            .await
                            .map_err(|e| abandon(e, ctx.config.processing_timeout_secs))?;
                        publish_container(ctx, &graph, &container, i == 0).await?
                    }
                };
                ids.push(id);
            }
            let first = ids.first().cloned().ok_or_else(|| {
                PlatformError::Rejected("a thread needs at least one post".into())
            })?;
            Ok(Published {
                post_id: first,
                post_ids: ids,
                warnings: Vec::new(),
            })
        }
    }
}

/// One IMAGE or VIDEO container, waited on until FINISHED; returns its id.
async fn create(
    ctx: &PlatformContext<'_>,
    graph: &Graph<'_>,
    text: Option<&str>,
    media: &MediaRef,
    reply_to: Option<&str>,
) -> Result<GraphId, PlatformError> {
    let mut params: Vec<(&str, &str)> = match media.kind {
        MediaKind::Image => vec![("media_type", "IMAGE"), ("image_url", media.url.as_str())],
        MediaKind::Video => vec![("media_type", "VIDEO"), ("video_url", media.url.as_str())],
    };
    if let Some(text) = text.filter(|t| !t.is_empty()) {
        params.push(("text", text));
    }
    let id = post_threads(ctx, graph, params, reply_to).await?;
    ctx.steps.record(StepKind::Container, id.as_str()).await?;
    wait(ctx, graph, &id).await?;
    Ok(id)
}

/// Children, then the CAROUSEL parent; returns the parent's id once FINISHED.
async fn carousel(
    ctx: &PlatformContext<'_>,
    graph: &Graph<'_>,
    items: &[MediaRef],
    text: Option<&str>,
) -> Result<GraphId, PlatformError> {
    let threads = ApiPath::id(&ctx.account.graph_id()?).then("threads");
    let mut children = Vec::with_capacity(items.len());
    for item in items {
        let params: Vec<(&str, &str)> = match item.kind {
            MediaKind::Image => vec![
                ("media_type", "IMAGE"),
                ("image_url", item.url.as_str()),
                ("is_carousel_item", "true"),
            ],
            MediaKind::Video => vec![
                ("media_type", "VIDEO"),
                ("video_url", item.url.as_str()),
                ("is_carousel_item", "true"),
            ],
        };
        let body = graph.post(&threads, &params).await?;
        let id = graph_id_of(&body)?;
        ctx.steps.record(StepKind::Child, id.as_str()).await?;
        children.push(id);
    }
    // The docs require every child to be FINISHED before the parent is created. A child still
    // processing at the deadline fails the carousel (nothing was published).
    for child in &children {
        wait(ctx, graph, child)
            .await
            .map_err(|e| abandon(e, ctx.config.processing_timeout_secs))?;
    }
    let joined = children
        .iter()
        .map(GraphId::as_str)
        .collect::<Vec<_>>()
        .join(",");
    let mut params = vec![("media_type", "CAROUSEL"), ("children", joined.as_str())];
    if let Some(text) = text.filter(|t| !t.is_empty()) {
        params.push(("text", text));
    }
    let body = graph.post(&threads, &params).await?;
    let id = graph_id_of(&body)?;
    ctx.steps.record(StepKind::Container, id.as_str()).await?;
    wait(ctx, graph, &id).await?;
    Ok(id)
}

/// Waits for a container; one still in progress at the deadline is
/// [`PlatformError::StillProcessing`] (a continuation publishes it once FINISHED).
async fn wait(
    ctx: &PlatformContext<'_>,
    graph: &Graph<'_>,
    id: &GraphId,
) -> Result<(), PlatformError> {
    let result = match wait_container(graph, id, "status", "error_message").await? {
        ContainerEnd::Finished => Ok(()),
        ContainerEnd::TimedOut => Err(PlatformError::StillProcessing(Box::new(
            Pending::ThreadsContainer {
                container_id: id.to_string(),
            },
        ))),
        end => Err(container_failure(
            end,
            id.as_str(),
            ctx.config.processing_timeout_secs,
        )),
    };
    ctx.steps.processed(id.as_str(), &result).await;
    result
}

/// One look at a container left processing at our deadline; once FINISHED, ★ `threads_publish`.
pub async fn resume(
    ctx: &PlatformContext<'_>,
    container: &str,
) -> Result<Option<Published>, PlatformError> {
    let graph = Graph::threads(ctx);
    // Stored from the platform's own answer; still checked before it goes into a URL.
    let container = GraphId::parse(container).map_err(InvalidId::not_found)?;
    match read_container(&graph, &container, "status", "error_message").await? {
        None => Ok(None),
        Some(ContainerEnd::Finished) => publish_container(ctx, &graph, &container, true)
            .await
            .map(|id| Some(Published::single(id))),
        Some(end) => Err(container_failure(
            end,
            container.as_str(),
            ctx.config.processing_timeout_secs,
        )),
    }
}

/// ★ A text-only post in one call: `POST /{user}/threads` with `auto_publish_text=true` creates
/// and publishes it, so the call is the irreversible one (never retried); marks the final step
/// first when `first` is set and records the published id.
async fn publish_text(
    ctx: &PlatformContext<'_>,
    graph: &Graph<'_>,
    text: &str,
    reply_to: Option<&str>,
    first: bool,
) -> Result<String, PlatformError> {
    if first {
        ctx.steps.before_final().await?;
    }
    let params = vec![
        ("media_type", "TEXT"),
        ("text", text),
        ("auto_publish_text", "true"),
    ];
    // The published id is the next reply's `reply_to_id`.
    let id = post_threads(ctx, graph, params, reply_to).await?;
    ctx.steps.record(StepKind::Post, id.as_str()).await?;
    Ok(id.into())
}

/// `POST /{user}/threads` with `params` (and `reply_to_id` when replying); the id it answers.
async fn post_threads<'a>(
    ctx: &PlatformContext<'_>,
    graph: &Graph<'_>,
    mut params: Vec<(&'a str, &'a str)>,
    reply_to: Option<&'a str>,
) -> Result<GraphId, PlatformError> {
    if let Some(parent) = reply_to {
        params.push(("reply_to_id", parent));
    }
    let body = graph
        .post(
            &ApiPath::id(&ctx.account.graph_id()?).then("threads"),
            &params,
        )
        .await?;
    graph_id_of(&body)
}

/// `threads_publish` (never retried); marks the final step first when `first` is set and
/// records the published id.
async fn publish_container(
    ctx: &PlatformContext<'_>,
    graph: &Graph<'_>,
    container: &GraphId,
    first: bool,
) -> Result<String, PlatformError> {
    if first {
        ctx.steps.before_final().await?;
    }
    let body = graph
        .post(
            &ApiPath::id(&ctx.account.graph_id()?).then("threads_publish"),
            &[("creation_id", container.as_str())],
        )
        .await?;
    // The published id is the next reply's `reply_to_id`.
    let id = graph_id_of(&body)?;
    ctx.steps.record(StepKind::Post, id.as_str()).await?;
    Ok(id.into())
}
