//! Instagram adapter (Instagram API with Facebook Login or with Instagram Login,
//! `../shared/design/platform-apis.md` §3; the host follows the account's login route, see
//! [`Graph::instagram`]):
//! containers on `POST /{ig-user}/media`, status polls on `GET /{container}?fields=status_code`,
//! then `POST /{ig-user}/media_publish?creation_id=` → `{"id"}`.
//!
//! - Image: `image_url` + `caption`;
//! - Carousel: one `is_carousel_item=true` container per item (`image_url`, or
//!   `media_type=VIDEO` + `video_url`), all FINISHED, then `media_type=CAROUSEL&children=a,b`;
//! - Reel: `media_type=REELS` + `video_url` (+ `cover_url`), `share_to_feed=true`.
//!
//! The publishing quota (`content_publishing_limit`) is read before publishing so that a used-up
//! quota fails fast instead of at the final call.

use super::{
    Pending, PlatformContext, PlatformError, Published, StepKind,
    ids::{ApiPath, GraphId, InvalidId},
    meta::{
        ContainerEnd, Graph, abandon, carousel_error, container_failure, graph_id_of, id_of,
        read_container, wait_container,
    },
};
use crate::domain::plan::{InstagramPost, MediaKind, MediaRef};

pub async fn publish(
    ctx: &PlatformContext<'_>,
    post: &InstagramPost,
) -> Result<Published, PlatformError> {
    let graph = Graph::instagram(ctx);
    let user = ctx.account.graph_id()?;
    let media_path = ApiPath::id(&user).then("media");
    let container = match post {
        InstagramPost::Image { image, caption } => {
            let body = graph
                .post(
                    &media_path,
                    &[("image_url", image.url.as_str()), ("caption", caption)],
                )
                .await?;
            let id = graph_id_of(&body)?;
            ctx.steps.record(StepKind::Container, id.as_str()).await?;
            wait(ctx, &graph, &id).await?;
            id
        }
        InstagramPost::Reel {
            video,
            cover_url,
            caption,
        } => {
            let mut params = vec![
                ("media_type", "REELS"),
                ("video_url", video.url.as_str()),
                ("caption", caption.as_str()),
                ("share_to_feed", "true"),
            ];
            if let Some(cover) = cover_url {
                params.push(("cover_url", cover.as_str()));
            }
            let body = graph.post(&media_path, &params).await?;
            let id = graph_id_of(&body)?;
            ctx.steps.record(StepKind::Container, id.as_str()).await?;
            wait(ctx, &graph, &id).await?;
            id
        }
        InstagramPost::Carousel { items, caption } => {
            carousel(ctx, &graph, &media_path, items, caption)
                .await
                .map_err(carousel_error)?
        }
    };
    publish_container(ctx, &graph, &user, &container).await
}

/// The quota check, then ★ `media_publish` of a FINISHED container.
async fn publish_container(
    ctx: &PlatformContext<'_>,
    graph: &Graph<'_>,
    user: &GraphId,
    container: &GraphId,
) -> Result<Published, PlatformError> {
    check_quota(graph, user).await?;
    ctx.steps.before_final().await?;
    let body = graph
        .post(
            &ApiPath::id(user).then("media_publish"),
            &[("creation_id", container.as_str())],
        )
        .await?;
    Ok(Published::single(id_of(&body)?))
}

/// One look at a container left processing at our deadline; once FINISHED, the rest of the
/// publish (quota check, ★ `media_publish`).
pub async fn resume(
    ctx: &PlatformContext<'_>,
    container: &str,
) -> Result<Option<Published>, PlatformError> {
    let graph = Graph::instagram(ctx);
    let user = ctx.account.graph_id()?;
    // Stored from the platform's own answer; still checked before it goes into a URL.
    let container = GraphId::parse(container).map_err(InvalidId::not_found)?;
    match read_container(&graph, &container, "status_code", "status").await? {
        None => Ok(None),
        Some(ContainerEnd::Finished) => publish_container(ctx, &graph, &user, &container)
            .await
            .map(Some),
        Some(end) => Err(container_failure(
            end,
            container.as_str(),
            ctx.config.processing_timeout_secs,
        )),
    }
}

/// Children, then the CAROUSEL parent; returns the parent's id once FINISHED.
async fn carousel(
    ctx: &PlatformContext<'_>,
    graph: &Graph<'_>,
    media_path: &ApiPath,
    items: &[MediaRef],
    caption: &str,
) -> Result<GraphId, PlatformError> {
    let mut children = Vec::with_capacity(items.len());
    for item in items {
        let params: Vec<(&str, &str)> = match item.kind {
            MediaKind::Image => vec![
                ("image_url", item.url.as_str()),
                ("is_carousel_item", "true"),
            ],
            MediaKind::Video => vec![
                ("media_type", "VIDEO"),
                ("video_url", item.url.as_str()),
                ("is_carousel_item", "true"),
            ],
        };
        let body = graph.post(media_path, &params).await?;
        let id = graph_id_of(&body)?;
        ctx.steps.record(StepKind::Child, id.as_str()).await?;
        children.push(id);
    }
    // A child still processing at the deadline cannot be carried on (the parent does not exist
    // yet): the carousel fails, and nothing was published.
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
    let body = graph
        .post(
            media_path,
            &[
                ("media_type", "CAROUSEL"),
                ("children", joined.as_str()),
                ("caption", caption),
            ],
        )
        .await?;
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
    let result = match wait_container(graph, id, "status_code", "status").await? {
        ContainerEnd::Finished => Ok(()),
        ContainerEnd::TimedOut => Err(PlatformError::StillProcessing(Box::new(
            Pending::InstagramContainer {
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

/// Fails fast with `RateLimited` when the 24 h publishing quota is used up. The check is
/// advisory: when the endpoint cannot be read, publishing goes ahead and the platform decides.
async fn check_quota(graph: &Graph<'_>, user: &GraphId) -> Result<(), PlatformError> {
    let body = match graph
        .get(
            &ApiPath::id(user).then("content_publishing_limit"),
            &[("fields", "quota_usage,config")],
        )
        .await
    {
        Ok(body) => body,
        Err(
            err @ (PlatformError::TokenExpired(_)
            | PlatformError::TokenInvalid(_)
            | PlatformError::RateLimited { .. }),
        ) => return Err(err),
        Err(_) => return Ok(()),
    };
    let entry = &body["data"][0];
    let (Some(used), Some(total)) = (
        entry["quota_usage"].as_u64(),
        entry["config"]["quota_total"].as_u64(),
    ) else {
        return Ok(());
    };
    if total > 0 && used >= total {
        // The window is a moving 24 h one; without the oldest post's time, an hour is a fair wait.
        return Err(PlatformError::RateLimited {
            retry_after: 3600,
            message: format!("instagram publishing limit reached ({used} of {total} in 24 h)"),
        });
    }
    Ok(())
}
