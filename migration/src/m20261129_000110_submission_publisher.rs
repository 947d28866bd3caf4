//! The instance running an immediate publish, on its history row: when that instance goes
//! silent, the others settle the row within the takeover time instead of after
//! `scheduler.stale_publish_secs`. Rows written before have none and keep the old rule.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000110_submission_publisher"
    }
}

#[derive(DeriveIden)]
enum PostSubmissions {
    Table,
    Publisher,
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(PostSubmissions::Table)
                    .add_column(string_null(PostSubmissions::Publisher))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(PostSubmissions::Table)
                    .drop_column(PostSubmissions::Publisher)
                    .to_owned(),
            )
            .await
    }
}
