//! Publishes left `unconfirmed` because the platform was still processing them at our deadline:
//! what is left to do (`reconcile`), when to look next (`next_check_at`), until when
//! (`check_until`), and the claim of the instance checking now (`check_claimed_by`,
//! `check_lease_until`), so any instance, after a restart too, carries them on exactly once.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261124_000005_unconfirmed_checks"
    }
}

#[derive(DeriveIden)]
enum PostSubmissions {
    Table,
    Reconcile,
    NextCheckAt,
    CheckUntil,
    CheckClaimedBy,
    CheckLeaseUntil,
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite's ALTER TABLE adds one at a time.
        let columns = [
            json_null(PostSubmissions::Reconcile),
            timestamp_with_time_zone_null(PostSubmissions::NextCheckAt),
            timestamp_with_time_zone_null(PostSubmissions::CheckUntil),
            string_null(PostSubmissions::CheckClaimedBy),
            timestamp_with_time_zone_null(PostSubmissions::CheckLeaseUntil),
        ];
        for column in columns {
            manager
                .alter_table(
                    Table::alter()
                        .table(PostSubmissions::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        // The reconciler's look for due checks.
        manager
            .create_index(
                Index::create()
                    .name("idx_post_submissions_next_check_at")
                    .table(PostSubmissions::Table)
                    .col(PostSubmissions::NextCheckAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("idx_post_submissions_next_check_at")
                    .table(PostSubmissions::Table)
                    .to_owned(),
            )
            .await?;
        for column in [
            PostSubmissions::CheckLeaseUntil,
            PostSubmissions::CheckClaimedBy,
            PostSubmissions::CheckUntil,
            PostSubmissions::NextCheckAt,
            PostSubmissions::Reconcile,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(PostSubmissions::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
