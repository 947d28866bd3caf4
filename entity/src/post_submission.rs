use sea_orm::entity::prelude::*;

/// One publish attempt of one post (the publishing history).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "post_submissions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub user_id: Uuid,
    pub account_id: Uuid,
    pub platform: String,
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
    pub steps: Option<Json>,
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
}

/// `post_type` of spec §2.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, serde::Serialize)]
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

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
