//! Where a post stands, as `GET /v2/posts/{id}` tells a client polling it: the publishing
//! history's own status (`post_submissions.status`), named for a client that does not know how
//! the service records a publish.

use entity::post_submission::SubmissionStatus;
use serde::Serialize;

/// A post's status on the post resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PostStatus {
    /// The publish is under way: its platform calls have not finished.
    Processing,
    /// Out on the platform (`post_id` is its id).
    Published,
    /// Not published; `error` says why.
    Failed,
    /// The outcome is not known yet (the platform was still processing at our deadline, or the
    /// final call's answer was lost): the service checks and records `published` or `failed`;
    /// it stays `unconfirmed` when the service has stopped checking, saying so in `error`.
    Unconfirmed,
}

impl PostStatus {
    /// Every status, in the order a publish moves through them.
    pub const ALL: [Self; 4] = [
        Self::Processing,
        Self::Published,
        Self::Failed,
        Self::Unconfirmed,
    ];

    /// The status as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Processing => "processing",
            Self::Published => "published",
            Self::Failed => "failed",
            Self::Unconfirmed => "unconfirmed",
        }
    }

    /// The status a query names (`?status=`), if it is one.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == raw)
    }

    /// The history's status this one is recorded as.
    pub fn recorded_as(self) -> SubmissionStatus {
        match self {
            Self::Processing => SubmissionStatus::Publishing,
            Self::Published => SubmissionStatus::Published,
            Self::Failed => SubmissionStatus::Failed,
            Self::Unconfirmed => SubmissionStatus::Unconfirmed,
        }
    }
}

impl From<SubmissionStatus> for PostStatus {
    fn from(recorded: SubmissionStatus) -> Self {
        match recorded {
            SubmissionStatus::Publishing => Self::Processing,
            SubmissionStatus::Published => Self::Published,
            SubmissionStatus::Failed => Self::Failed,
            SubmissionStatus::Unconfirmed => Self::Unconfirmed,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use sea_orm::Iterable;

    use super::*;

    #[test]
    fn every_recorded_status_maps_and_maps_back() {
        for recorded in SubmissionStatus::iter() {
            let status = PostStatus::from(recorded);
            assert_eq!(status.recorded_as(), recorded);
            assert_eq!(PostStatus::parse(status.as_str()), Some(status));
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::json!(status.as_str())
            );
        }
        assert_eq!(PostStatus::parse("publishing"), None);
        assert_eq!(PostStatus::parse(""), None);
    }
}
