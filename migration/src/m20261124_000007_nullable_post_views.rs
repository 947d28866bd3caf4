//! A snapshot's `total_post_views` may be unknown: when the platform would not give the views of
//! the day's posts (the metric failed and is listed in `failed_metrics`), the column is NULL,
//! never a 0 that would read as measured. Existing rows keep their numbers.
//!
//! PostgreSQL drops the NOT NULL and the default in place. SQLite cannot change a column, so the
//! table is rebuilt with the same columns (the nullable one without its default), the rows copied
//! in column order, and the two indexes created again
//! (<https://www.sqlite.org/lang_altertable.html#otheralter>).

use sea_orm_migration::{
    prelude::*,
    schema::*,
    sea_orm::{ConnectionTrait, DbBackend},
};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261124_000007_nullable_post_views"
    }
}

#[derive(DeriveIden, Clone, Copy)]
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
enum PerformanceSnapshotsRebuild {
    Table,
}

#[derive(DeriveIden)]
enum Accounts {
    Table,
    Id,
}

/// The snapshots table as `m20261123_000003_snapshots` made it, under `table`, with
/// `total_post_views` nullable (`nullable`) or as it was.
fn snapshots_table(table: impl IntoIden, nullable: bool) -> TableCreateStatement {
    use PerformanceSnapshots as S;
    let views = if nullable {
        big_integer_null(S::TotalPostViews)
    } else {
        big_integer(S::TotalPostViews).default(0).to_owned()
    };
    Table::create()
        .table(table)
        .col(pk_uuid(S::Id))
        .col(uuid(S::AccountId))
        .col(uuid(S::UserId))
        .col(string(S::Platform))
        .col(string(S::SnapshotDate))
        .col(string(S::PageName))
        .col(big_integer(S::PostsCount).default(0))
        .col(views)
        .col(json(S::PageMetrics))
        .col(json(S::FailedMetrics))
        .col(string(S::Status))
        .col(text_null(S::Error))
        .col(integer(S::Attempts).default(0))
        .col(string_null(S::ClaimedBy))
        .col(timestamp_with_time_zone_null(S::LeaseUntil))
        .col(timestamp_with_time_zone_null(S::CollectedAt))
        .col(timestamp_with_time_zone(S::CreatedAt))
        .col(timestamp_with_time_zone(S::UpdatedAt))
        .foreign_key(
            ForeignKey::create()
                .name("fk_performance_snapshots_account")
                .from(S::Table, S::AccountId)
                .to(Accounts::Table, Accounts::Id)
                .on_delete(ForeignKeyAction::Cascade),
        )
        .to_owned()
}

/// SQLite: rebuild the table with `total_post_views` nullable or not.
async fn rebuild_sqlite(manager: &SchemaManager<'_>, nullable: bool) -> Result<(), DbErr> {
    let db = manager.get_connection();
    manager
        .create_table(snapshots_table(
            PerformanceSnapshotsRebuild::Table,
            nullable,
        ))
        .await?;
    // Back to NOT NULL, an unknown total becomes the 0 the old schema stored.
    let views = if nullable {
        "total_post_views"
    } else {
        "COALESCE(total_post_views, 0)"
    };
    db.execute_unprepared(&format!(
        "INSERT INTO performance_snapshots_rebuild SELECT id, account_id, user_id, platform, \
         snapshot_date, page_name, posts_count, {views}, page_metrics, failed_metrics, status, \
         error, attempts, claimed_by, lease_until, collected_at, created_at, updated_at \
         FROM performance_snapshots"
    ))
    .await?;
    manager
        .drop_table(Table::drop().table(PerformanceSnapshots::Table).to_owned())
        .await?;
    manager
        .rename_table(
            Table::rename()
                .table(
                    PerformanceSnapshotsRebuild::Table,
                    PerformanceSnapshots::Table,
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
    manager
        .create_index(
            Index::create()
                .name("ix_performance_snapshots_date")
                .table(PerformanceSnapshots::Table)
                .col(PerformanceSnapshots::SnapshotDate)
                .to_owned(),
        )
        .await
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    /// One transaction on every backend: the SQLite rebuild is all or nothing, and its
    /// statements share one connection (on separate pool connections the rename did not see
    /// the drop).
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        match manager.get_database_backend() {
            DbBackend::Sqlite => rebuild_sqlite(manager, true).await,
            _ => {
                manager
                    .get_connection()
                    .execute_unprepared(
                        "ALTER TABLE performance_snapshots \
                         ALTER COLUMN total_post_views DROP NOT NULL, \
                         ALTER COLUMN total_post_views DROP DEFAULT",
                    )
                    .await?;
                Ok(())
            }
        }
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        match manager.get_database_backend() {
            DbBackend::Sqlite => rebuild_sqlite(manager, false).await,
            _ => {
                manager
                    .get_connection()
                    .execute_unprepared(
                        "UPDATE performance_snapshots SET total_post_views = 0 \
                         WHERE total_post_views IS NULL; \
                         ALTER TABLE performance_snapshots \
                         ALTER COLUMN total_post_views SET DEFAULT 0, \
                         ALTER COLUMN total_post_views SET NOT NULL",
                    )
                    .await?;
                Ok(())
            }
        }
    }
}
