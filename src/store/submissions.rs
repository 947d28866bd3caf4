//! The publishing history: one row per publish attempt.

use chrono::{DateTime, Utc};
use entity::post_submission;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DbErr, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect, Set, sea_query::Expr,
};
use uuid::Uuid;

use super::Store;

/// A history row as the publisher records it.
#[derive(Debug, Clone)]
pub struct NewSubmission {
    pub user_id: Uuid,
    pub account_id: Uuid,
    pub platform: String,
    pub post_type: Option<String>,
    pub post_id: Option<String>,
    pub status: String,
    pub page_name: String,
    pub content: serde_json::Value,
    pub result: Option<serde_json::Value>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub published_at: Option<DateTime<Utc>>,
}

impl Store {
    pub async fn insert_submission(
        &self,
        new: NewSubmission,
        now: DateTime<Utc>,
    ) -> Result<post_submission::Model, DbErr> {
        post_submission::ActiveModel {
            id: Set(Uuid::new_v4()),
            user_id: Set(new.user_id),
            account_id: Set(new.account_id),
            platform: Set(new.platform),
            post_type: Set(new.post_type),
            post_id: Set(new.post_id),
            status: Set(new.status),
            page_name: Set(new.page_name),
            content: Set(new.content),
            result: Set(new.result),
            steps: Set(None),
            error_code: Set(new.error_code),
            error_message: Set(new.error_message),
            scheduled_post_id: Set(None),
            created_at: Set(now),
            published_at: Set(new.published_at),
            updated_at: Set(now),
        }
        .insert(&self.db)
        .await
    }

    /// A page of the user's history, newest first, and the total row count.
    pub async fn list_submissions(
        &self,
        user_id: Uuid,
        limit: u64,
        offset: u64,
    ) -> Result<(Vec<post_submission::Model>, u64), DbErr> {
        let query =
            post_submission::Entity::find().filter(post_submission::Column::UserId.eq(user_id));
        let total = query.clone().count(&self.db).await?;
        let rows = query
            .order_by_desc(post_submission::Column::CreatedAt)
            .order_by_desc(post_submission::Column::Id)
            .limit(limit)
            .offset(offset)
            .all(&self.db)
            .await?;
        Ok((rows, total))
    }

    /// Saves the steps recorded so far of an in-progress publish.
    pub async fn record_submission_steps(
        &self,
        submission_id: Uuid,
        steps: serde_json::Value,
    ) -> Result<(), DbErr> {
        post_submission::Entity::update_many()
            .col_expr(post_submission::Column::Steps, Expr::value(steps))
            .filter(post_submission::Column::Id.eq(submission_id))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    /// Starts a publish: the row exists (status `publishing`) before the first platform call.
    pub async fn start_submission(
        &self,
        id: Uuid,
        new: NewSubmission,
        scheduled_post_id: Option<Uuid>,
        now: DateTime<Utc>,
    ) -> Result<post_submission::Model, DbErr> {
        post_submission::ActiveModel {
            id: Set(id),
            user_id: Set(new.user_id),
            account_id: Set(new.account_id),
            platform: Set(new.platform),
            post_type: Set(new.post_type),
            post_id: Set(None),
            status: Set("publishing".into()),
            page_name: Set(new.page_name),
            content: Set(new.content),
            result: Set(None),
            steps: Set(None),
            error_code: Set(None),
            error_message: Set(None),
            scheduled_post_id: Set(scheduled_post_id),
            created_at: Set(now),
            published_at: Set(None),
            updated_at: Set(now),
        }
        .insert(&self.db)
        .await
    }

    /// Records a successful publish.
    pub async fn finish_submission_published(
        &self,
        id: Uuid,
        post_id: &str,
        result: serde_json::Value,
        now: DateTime<Utc>,
    ) -> Result<(), DbErr> {
        post_submission::Entity::update_many()
            .col_expr(post_submission::Column::Status, Expr::value("published"))
            .col_expr(post_submission::Column::PostId, Expr::value(post_id))
            .col_expr(post_submission::Column::Result, Expr::value(result))
            .col_expr(post_submission::Column::PublishedAt, Expr::value(now))
            .col_expr(post_submission::Column::UpdatedAt, Expr::value(now))
            .filter(post_submission::Column::Id.eq(id))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    /// Records a failed publish with the catalogue code and message.
    pub async fn finish_submission_failed(
        &self,
        id: Uuid,
        status: &str,
        error_code: &str,
        error_message: &str,
        now: DateTime<Utc>,
    ) -> Result<(), DbErr> {
        post_submission::Entity::update_many()
            .col_expr(post_submission::Column::Status, Expr::value(status))
            .col_expr(post_submission::Column::ErrorCode, Expr::value(error_code))
            .col_expr(
                post_submission::Column::ErrorMessage,
                Expr::value(error_message),
            )
            .col_expr(post_submission::Column::UpdatedAt, Expr::value(now))
            .filter(post_submission::Column::Id.eq(id))
            // Never overwrite an outcome already recorded (a settlement racing a late finish).
            .filter(post_submission::Column::Status.eq("publishing"))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    /// One submission (tests and the operator view).
    pub async fn find_submission(&self, id: Uuid) -> Result<Option<post_submission::Model>, DbErr> {
        post_submission::Entity::find_by_id(id).one(&self.db).await
    }

    /// Immediate publishes still `publishing` that started before `before`.
    pub async fn stale_publishing_submissions(
        &self,
        before: DateTime<Utc>,
    ) -> Result<Vec<post_submission::Model>, DbErr> {
        post_submission::Entity::find()
            .filter(post_submission::Column::Status.eq("publishing"))
            .filter(post_submission::Column::ScheduledPostId.is_null())
            .filter(post_submission::Column::CreatedAt.lt(before))
            .all(&self.db)
            .await
    }
}
