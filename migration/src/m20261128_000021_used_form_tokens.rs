//! One-time tokens of dashboard forms that have been spent, so that a double click or a
//! browser's resubmission of the Compose form publishes nothing the second time, on any instance.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261128_000021_used_form_tokens"
    }
}

#[derive(DeriveIden)]
enum UsedFormTokens {
    Table,
    Token,
    UserId,
    UsedAt,
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(UsedFormTokens::Table)
                    .col(string(UsedFormTokens::Token).primary_key())
                    .col(uuid(UsedFormTokens::UserId))
                    .col(timestamp_with_time_zone(UsedFormTokens::UsedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_used_form_tokens_used_at")
                    .table(UsedFormTokens::Table)
                    .col(UsedFormTokens::UsedAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(UsedFormTokens::Table).to_owned())
            .await
    }
}
