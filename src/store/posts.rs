//! The post resource's reads (`GET /v2/posts/{id}`, `GET /v2/posts`): a user's own history
//! rows, one by id or a filtered page of them.

use chrono::{DateTime, Utc};
use entity::platform::Platform;
use entity::post_submission::{self, PostType, PublishSteps, SubmissionStatus};
use sea_orm::{
    ColumnTrait, DbErr, DerivePartialModel, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect, sea_query::Expr,
};
// `cast_as` in the column expression of `result`.
use sea_orm::sea_query::ExprTrait as _;
use uuid::Uuid;

use super::{Page, Store};

/// A history row as the post resource reads it: what it shows, not the check columns nor the
/// content.
#[derive(Debug, Clone, DerivePartialModel)]
#[sea_orm(entity = "post_submission::Entity", from_query_result)]
pub struct PostRecord {
    pub id: Uuid,
    pub account_id: Uuid,
    pub platform: Platform,
    pub post_type: Option<PostType>,
    pub post_id: Option<String>,
    pub status: SubmissionStatus,
    pub page_name: String,
    /// The publish's result fields as stored (JSON text; cast, since PostgreSQL's column is
    /// `json`), when it published.
    #[sea_orm(from_expr = "Expr::col(post_submission::Column::Result).cast_as(\"text\")")]
    pub result: Option<String>,
    /// The remote ids recorded so far (the posts of a thread already out).
    pub steps: Option<PublishSteps>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub scheduled_post_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub published_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

/// Which of a user's history rows to list: `None` is "any".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PostFilter {
    pub status: Option<SubmissionStatus>,
    pub platform: Option<Platform>,
}

impl Store {
    /// `user_id`'s history row `id`; `None` when there is none or it is another user's.
    pub async fn find_user_post(
        &self,
        user_id: Uuid,
        id: Uuid,
    ) -> Result<Option<PostRecord>, DbErr> {
        post_submission::Entity::find_by_id(id)
            .filter(post_submission::Column::UserId.eq(user_id))
            .into_partial_model::<PostRecord>()
            .one(&self.db)
            .await
    }

    /// A page of `user_id`'s history rows that pass `filter`, newest first, and how many pass
    /// it in all.
    pub async fn list_user_posts(
        &self,
        user_id: Uuid,
        filter: PostFilter,
        page: Page,
    ) -> Result<(Vec<PostRecord>, u64), DbErr> {
        let mut query =
            post_submission::Entity::find().filter(post_submission::Column::UserId.eq(user_id));
        if let Some(status) = filter.status {
            query = query.filter(post_submission::Column::Status.eq(status));
        }
        if let Some(platform) = filter.platform {
            query = query.filter(post_submission::Column::Platform.eq(platform));
        }
        let total = query.clone().count(&self.db).await?;
        let rows = query
            .order_by_desc(post_submission::Column::CreatedAt)
            .order_by_desc(post_submission::Column::Id)
            .limit(page.limit)
            .offset(page.offset)
            .into_partial_model::<PostRecord>()
            .all(&self.db)
            .await?;
        Ok((rows, total))
    }
}
