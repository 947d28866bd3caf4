//! instagram adapter: TODO (being written).

use super::{PlatformContext, PlatformError, Published};
use crate::publish::plan::InstagramPost;

pub async fn publish(
    _ctx: &PlatformContext<'_>,
    _post: &InstagramPost,
) -> Result<Published, PlatformError> {
    Err(PlatformError::Rejected(
        "instagram publishing is not built yet".into(),
    ))
}
