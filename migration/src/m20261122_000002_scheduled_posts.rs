//! Scheduled posts (spec §2.4, §3.1): durable until published, failed or cancelled. A due post is
//! claimed by one conditional update (`scheduled → publishing`) carrying the claimant and a lease,
//! so two instances on one database never both publish it, and a claim left by a crashed process
//! is found and settled once its lease has passed.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261122_000002_scheduled_posts"
    }
}

#[derive(DeriveIden)]
enum ScheduledPosts {
    Table,
    Id,
    UserId,
    AccountId,
    Platform,
    PageName,
    Request,
    Content,
    ScheduledAt,
    Status,
    Attempts,
    NextAttemptAt,
    ClaimedBy,
    ClaimedAt,
    LeaseUntil,
    SubmissionId,
    PostId,
    ErrorCode,
    Error,
    CreatedAt,
    UpdatedAt,
    PublishedAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Accounts {
    Table,
    Id,
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ScheduledPosts::Table)
                    .col(pk_uuid(ScheduledPosts::Id))
                    .col(uuid(ScheduledPosts::UserId))
                    .col(uuid(ScheduledPosts::AccountId))
                    .col(string(ScheduledPosts::Platform))
                    .col(string(ScheduledPosts::PageName))
                    .col(json(ScheduledPosts::Request))
                    .col(json(ScheduledPosts::Content))
                    .col(timestamp_with_time_zone(ScheduledPosts::ScheduledAt))
                    .col(string(ScheduledPosts::Status))
                    .col(integer(ScheduledPosts::Attempts).default(0))
                    .col(timestamp_with_time_zone(ScheduledPosts::NextAttemptAt))
                    .col(string_null(ScheduledPosts::ClaimedBy))
                    .col(timestamp_with_time_zone_null(ScheduledPosts::ClaimedAt))
                    .col(timestamp_with_time_zone_null(ScheduledPosts::LeaseUntil))
                    .col(uuid_null(ScheduledPosts::SubmissionId))
                    .col(string_null(ScheduledPosts::PostId))
                    .col(string_null(ScheduledPosts::ErrorCode))
                    .col(text_null(ScheduledPosts::Error))
                    .col(timestamp_with_time_zone(ScheduledPosts::CreatedAt))
                    .col(timestamp_with_time_zone(ScheduledPosts::UpdatedAt))
                    .col(timestamp_with_time_zone_null(ScheduledPosts::PublishedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_scheduled_posts_user")
                            .from(ScheduledPosts::Table, ScheduledPosts::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_scheduled_posts_account")
                            .from(ScheduledPosts::Table, ScheduledPosts::AccountId)
                            .to(Accounts::Table, Accounts::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        // The scheduler looks for the earliest due `scheduled` post.
        manager
            .create_index(
                Index::create()
                    .name("ix_scheduled_posts_due")
                    .table(ScheduledPosts::Table)
                    .col(ScheduledPosts::Status)
                    .col(ScheduledPosts::NextAttemptAt)
                    .to_owned(),
            )
            .await?;
        // Users list their posts by scheduled time.
        manager
            .create_index(
                Index::create()
                    .name("ix_scheduled_posts_user")
                    .table(ScheduledPosts::Table)
                    .col(ScheduledPosts::UserId)
                    .col(ScheduledPosts::ScheduledAt)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(ScheduledPosts::Table).to_owned())
            .await
    }
}
