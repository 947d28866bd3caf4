//! tiktok adapter: TODO (being written).

use super::{PlatformContext, PlatformError, Published};
use crate::publish::plan::TiktokPost;

pub async fn publish(
    _ctx: &PlatformContext<'_>,
    _post: &TiktokPost,
) -> Result<Published, PlatformError> {
    Err(PlatformError::Rejected(
        "tiktok publishing is not built yet".into(),
    ))
}
