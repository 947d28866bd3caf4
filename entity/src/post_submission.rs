use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

use crate::platform::Platform;

/// One publish attempt of one post (the publishing history).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "post_submissions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub user_id: Uuid,
    pub account_id: Uuid,
    pub platform: Platform,
    pub post_type: Option<PostType>,
    /// The platform's id of the published post.
    pub post_id: Option<String>,
    pub status: SubmissionStatus,
    pub page_name: String,
    /// `{text, media_urls}` as submitted.
    pub content: Json,
    /// Type-specific result fields (`photo_count`, `item_count`, `thread_count`, `post_ids`).
    pub result: Option<Json>,
    /// Remote ids recorded step by step while publishing.
    pub steps: Option<PublishSteps>,
    pub error_code: Option<String>,
    #[sea_orm(column_type = "Text", nullable)]
    pub error_message: Option<String>,
    pub scheduled_post_id: Option<Uuid>,
    pub created_at: DateTimeUtc,
    pub published_at: Option<DateTimeUtc>,
    pub updated_at: DateTimeUtc,
    /// A publish the platform was still processing at our deadline: what is left to do
    /// (`publish::reconcile::Reconcile`). Kept once resolved, as a record.
    pub reconcile: Option<Json>,
    /// When an `unconfirmed` submission is next checked; null once it is resolved.
    pub next_check_at: Option<DateTimeUtc>,
    /// When the service stops checking (it then stays `unconfirmed`, saying so).
    pub check_until: Option<DateTimeUtc>,
    /// The instance checking it now, and until when its claim holds.
    pub check_claimed_by: Option<String>,
    pub check_lease_until: Option<DateTimeUtc>,
    /// The instance running an immediate publish (`publishing`): a silent one's rows are settled
    /// by the others.
    pub publisher: Option<String>,
}

/// `post_type` of spec §2.3.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "lowercase")]
pub enum PostType {
    #[sea_orm(string_value = "text")]
    Text,
    #[sea_orm(string_value = "photo")]
    Photo,
    #[sea_orm(string_value = "album")]
    Album,
    #[sea_orm(string_value = "carousel")]
    Carousel,
    #[sea_orm(string_value = "video")]
    Video,
    #[sea_orm(string_value = "reels")]
    Reels,
    #[sea_orm(string_value = "thread")]
    Thread,
}

impl PostType {
    pub fn as_str(self) -> &'static str {
        match self {
            PostType::Text => "text",
            PostType::Photo => "photo",
            PostType::Album => "album",
            PostType::Carousel => "carousel",
            PostType::Video => "video",
            PostType::Reels => "reels",
            PostType::Thread => "thread",
        }
    }
}

/// Where one publish attempt stands (the history's `status`). Stored as its text; a stored
/// value that is none of these fails to load (an error, never a guess).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, serde::Serialize)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "snake_case")]
pub enum SubmissionStatus {
    /// The publish is running (or its process died: the reconciler looks at it).
    #[sea_orm(string_value = "publishing")]
    Publishing,
    #[sea_orm(string_value = "published")]
    Published,
    #[sea_orm(string_value = "failed")]
    Failed,
    /// The outcome is not known (the final call may or may not have happened); it is checked.
    #[sea_orm(string_value = "unconfirmed")]
    Unconfirmed,
}

impl SubmissionStatus {
    /// The status as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Publishing => "publishing",
            Self::Published => "published",
            Self::Failed => "failed",
            Self::Unconfirmed => "unconfirmed",
        }
    }
}

impl std::fmt::Display for SubmissionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a publish has done so far, recorded as it goes (`post_submissions.steps`), so that an
/// interrupted publish can be settled from it and the history can show its timeline. Stored
/// as JSON: `{"steps":[{"name","id","outcome"?,"at"?},..],"final_started":bool,
/// "final_started_at"?}`. A document that does not read as this fails to load the row.
///
/// The fields of this type and of [`Step`] are declared in the order of their keys: serialized
/// directly, they give the text SeaORM stores (it goes through a `serde_json::Value`, whose
/// objects sort their keys), so the group commit's writer skips building that tree (a test
/// holds the two texts equal).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, FromJsonQueryResult)]
pub struct PublishSteps {
    /// The irreversible call has started: from then on the post may be out, so an interrupted
    /// publish is never simply retried.
    #[serde(default)]
    pub final_started: bool,
    /// When it started (absent on rows recorded without a clock).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "iso_millis")]
    pub final_started_at: Option<DateTimeUtc>,
    /// In the order they were recorded.
    #[serde(default)]
    pub steps: Vec<Step>,
}

impl PublishSteps {
    /// Ids recorded as `kind`, in order.
    pub fn ids(&self, kind: StepKind) -> Vec<String> {
        self.steps
            .iter()
            .filter(|step| step.kind == kind)
            .map(|step| step.id.clone())
            .collect()
    }
}

/// One recorded step: a remote id the publish made (a container, an upload session, a
/// published post…), or how the platform's processing of one ended. Its fields are declared
/// in the order of their keys (see [`PublishSteps`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// When it was recorded (absent on steps recorded without a clock).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "iso_millis")]
    pub at: Option<DateTimeUtc>,
    pub id: String,
    /// What the id is. Stored under the key `name`.
    #[serde(rename = "name")]
    pub kind: StepKind,
    /// Only on `processing` steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<ProcessingOutcome>,
}

/// What a recorded id is, as the adapter that made it reports it. Stored as its snake_case
/// text; a name that is none of these fails to load the row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A media container (instagram, threads), published by the final call.
    Container,
    /// A carousel item's container (instagram, threads).
    Child,
    /// An uploaded media id (x).
    Media,
    /// An unpublished photo of a facebook album.
    Photo,
    /// An uploaded video (facebook, youtube).
    Video,
    /// A published post: a threads or x post, or one post of a thread.
    Post,
    /// A TikTok publish.
    PublishId,
    /// A YouTube resumable upload session.
    UploadSession,
    /// How the platform's processing of an object ended (the step's `outcome`).
    Processing,
}

/// How the platform's processing of an object ended, as a step records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessingOutcome {
    Finished,
    Failed,
    /// At our deadline (a later check goes on).
    StillProcessing,
}

impl ProcessingOutcome {
    /// The step's `outcome`, as the history stores it.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessingOutcome::Finished => "finished",
            ProcessingOutcome::Failed => "failed",
            ProcessingOutcome::StillProcessing => "still_processing",
        }
    }
}

/// Step times as the service writes every time (RFC 3339, milliseconds, `Z`).
mod iso_millis {
    use chrono::{DateTime, SecondsFormat, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        at: &Option<DateTime<Utc>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match at {
            Some(at) => serializer.serialize_str(&at.to_rfc3339_opts(SecondsFormat::Millis, true)),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|text| {
                DateTime::parse_from_rfc3339(&text)
                    .map(|at| at.with_timezone(&Utc))
                    .map_err(serde::de::Error::custom)
            })
            .transpose()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Documents as the recorder writes them, with and without step times: they load, and
    /// write back unchanged.
    #[test]
    fn stored_steps_documents_still_read_and_write_back_the_same() {
        let documents = [
            r#"{"final_started":false,"steps":[]}"#,
            r#"{"final_started":false,"steps":[{"id":"1","name":"container"}]}"#,
            r#"{"final_started":true,"final_started_at":"2026-11-24T06:00:01.250Z","steps":[{"at":"2026-11-24T06:00:00.000Z","id":"17890","name":"container"},{"at":"2026-11-24T06:00:00.500Z","id":"17890","name":"processing","outcome":"finished"},{"at":"2026-11-24T06:00:02.000Z","id":"1800","name":"post"}]}"#,
            r#"{"final_started":false,"steps":[{"at":"2026-11-24T06:00:00.000Z","id":"v1","name":"processing","outcome":"still_processing"}]}"#,
        ];
        for text in documents {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            let steps: PublishSteps = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(serde_json::to_value(&steps).unwrap(), value, "{text}");
            assert_eq!(serde_json::to_string(&value).unwrap(), text);
            // Serialized directly (as the group commit's writer does), the same text.
            assert_eq!(serde_json::to_string(&steps).unwrap(), text);
        }
        let steps: PublishSteps = serde_json::from_str(documents[2]).unwrap();
        assert!(steps.final_started);
        assert_eq!(steps.ids(StepKind::Container), ["17890"]);
        assert_eq!(steps.steps[1].kind, StepKind::Processing);
        assert_eq!(steps.steps[1].outcome, Some(ProcessingOutcome::Finished));
        assert_eq!(
            steps.final_started_at.unwrap().to_rfc3339(),
            "2026-11-24T06:00:01.250+00:00"
        );
    }

    #[test]
    fn a_steps_document_that_is_not_one_is_an_error() {
        for text in [
            r#"{"steps":{},"final_started":false}"#,
            r#"{"steps":[{"name":"post"}],"final_started":false}"#,
            r#"{"steps":[],"final_started":"yes"}"#,
            r#"{"steps":[{"name":"processing","id":"1","outcome":"exploded"}]}"#,
            r#"{"steps":[{"name":"teleport","id":"1"}],"final_started":false}"#,
        ] {
            assert!(
                serde_json::from_str::<PublishSteps>(text).is_err(),
                "{text}"
            );
        }
    }
}
