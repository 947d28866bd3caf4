//! threads adapter: TODO (being written).

use super::{PlatformContext, PlatformError, Published};
use crate::publish::plan::ThreadsPost;

pub async fn publish(
    _ctx: &PlatformContext<'_>,
    _post: &ThreadsPost,
) -> Result<Published, PlatformError> {
    Err(PlatformError::Rejected(
        "threads publishing is not built yet".into(),
    ))
}
