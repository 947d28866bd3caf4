//! youtube adapter: TODO (being written).

use super::{PlatformContext, PlatformError, Published};
use crate::publish::plan::YoutubePost;

pub async fn publish(
    _ctx: &PlatformContext<'_>,
    _post: &YoutubePost,
) -> Result<Published, PlatformError> {
    Err(PlatformError::Rejected(
        "youtube publishing is not built yet".into(),
    ))
}
