//! Daily performance snapshots (spec §2.7): one row per account per date, unique in the database,
//! so a collection interrupted by a restart, or run by two instances at once, can never store a
//! date twice. The row is also the claim: a collector inserts it as `collecting` with a lease
//! before asking the platform, so a second collector skips it instead of fetching it again.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261123_000003_snapshots"
    }
}

#[derive(DeriveIden)]
enum PerformanceSnapshots {
    Table,
    Id,
    AccountId,
    UserId,
    Platform,
    SnapshotDate,
    PageName,
    PostsCount,
    TotalPostViews,
    PageMetrics,
    FailedMetrics,
    Status,
    Error,
    Attempts,
    ClaimedBy,
    LeaseUntil,
    CollectedAt,
    CreatedAt,
    UpdatedAt,
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
                    .table(PerformanceSnapshots::Table)
                    .col(pk_uuid(PerformanceSnapshots::Id))
                    .col(uuid(PerformanceSnapshots::AccountId))
                    .col(uuid(PerformanceSnapshots::UserId))
                    .col(string(PerformanceSnapshots::Platform))
                    // `YYYY-MM-DD`: compares in date order as text on every backend.
                    .col(string(PerformanceSnapshots::SnapshotDate))
                    .col(string(PerformanceSnapshots::PageName))
                    .col(big_integer(PerformanceSnapshots::PostsCount).default(0))
                    .col(big_integer(PerformanceSnapshots::TotalPostViews).default(0))
                    .col(json(PerformanceSnapshots::PageMetrics))
                    .col(json(PerformanceSnapshots::FailedMetrics))
                    .col(string(PerformanceSnapshots::Status))
                    .col(text_null(PerformanceSnapshots::Error))
                    .col(integer(PerformanceSnapshots::Attempts).default(0))
                    .col(string_null(PerformanceSnapshots::ClaimedBy))
                    .col(timestamp_with_time_zone_null(
                        PerformanceSnapshots::LeaseUntil,
                    ))
                    .col(timestamp_with_time_zone_null(
                        PerformanceSnapshots::CollectedAt,
                    ))
                    .col(timestamp_with_time_zone(PerformanceSnapshots::CreatedAt))
                    .col(timestamp_with_time_zone(PerformanceSnapshots::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_performance_snapshots_account")
                            .from(PerformanceSnapshots::Table, PerformanceSnapshots::AccountId)
                            .to(Accounts::Table, Accounts::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_performance_snapshots_account_date")
                    .table(PerformanceSnapshots::Table)
                    .col(PerformanceSnapshots::AccountId)
                    .col(PerformanceSnapshots::SnapshotDate)
                    .unique()
                    .to_owned(),
            )
            .await?;
        // The status listing reads the latest dates across accounts.
        manager
            .create_index(
                Index::create()
                    .name("ix_performance_snapshots_date")
                    .table(PerformanceSnapshots::Table)
                    .col(PerformanceSnapshots::SnapshotDate)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(PerformanceSnapshots::Table).to_owned())
            .await
    }
}
