//! x adapter: TODO (being written).

use super::{PlatformContext, PlatformError, Published};
use crate::publish::plan::XPost;

pub async fn publish(
    _ctx: &PlatformContext<'_>,
    _post: &XPost,
) -> Result<Published, PlatformError> {
    Err(PlatformError::Rejected(
        "x publishing is not built yet".into(),
    ))
}
