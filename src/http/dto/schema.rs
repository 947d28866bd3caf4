//! Schema-only types: the wire strings' enums and the error bodies (spec §7).

use serde::Serialize;
use utoipa::ToSchema;

/// A platform name as it appears on the wire.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PlatformName {
    Facebook,
    Instagram,
    Threads,
    Tiktok,
    Youtube,
    X,
}

/// The kind of post published (history and publish receipts).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PostTypeName {
    Text,
    Photo,
    Album,
    Carousel,
    Video,
    Reels,
    Thread,
}

/// A publishing-history item's status.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubmissionStatusName {
    Publishing,
    Published,
    Failed,
    Unconfirmed,
}

/// A scheduled post's status.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScheduledStatusName {
    Scheduled,
    Publishing,
    Published,
    Failed,
    Cancelled,
}

/// A subscription plan.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanName {
    Free,
    Pro,
    Ultra,
}

// The error bodies are defined beside the catalogue that renders them.
pub use crate::error::{ErrorBody, PerformanceErrorBody, QuotaExceeded as QuotaExceededBody};
