//! facebook adapter: TODO (being written).

use super::{PlatformContext, PlatformError, Published};
use crate::publish::plan::FacebookPost;

pub async fn publish(
    _ctx: &PlatformContext<'_>,
    _post: &FacebookPost,
) -> Result<Published, PlatformError> {
    Err(PlatformError::Rejected(
        "facebook publishing is not built yet".into(),
    ))
}
