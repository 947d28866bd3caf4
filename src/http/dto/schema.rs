//! Schema-only types: the error bodies (spec §7). The domain enums (platform, post type, the
//! statuses, plan) are the entity crate's own, which derive their schemas there.

// The error bodies are defined beside the catalogue that renders them.
pub use crate::error::{ErrorBody, PerformanceErrorBody, QuotaExceeded as QuotaExceededBody};
