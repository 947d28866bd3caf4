//! Coordination of several instances on one database: the instances that are alive (each
//! renews its row), and one row per account holding its publish lease and the state of its
//! platform limiter, so that both hold across instances.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000100_cluster"
    }
}

#[derive(DeriveIden)]
enum ClusterMembers {
    Table,
    Instance,
    Address,
    StartedAt,
    /// Milliseconds since the Unix epoch of the latest renewal.
    HeartbeatMs,
}

#[derive(DeriveIden)]
enum AccountLeases {
    Table,
    AccountId,
    /// The instance holding the publish lease, or none. A holder whose membership row has
    /// gone silent for the takeover time has lost it.
    Holder,
    /// Raised by every acquisition: the fencing token of the holder.
    Epoch,
    /// The limiter's theoretical arrival time (GCRA), in milliseconds since the Unix epoch.
    TatMs,
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
                    .table(ClusterMembers::Table)
                    .col(string(ClusterMembers::Instance).primary_key())
                    .col(string(ClusterMembers::Address))
                    .col(timestamp_with_time_zone(ClusterMembers::StartedAt))
                    .col(big_integer(ClusterMembers::HeartbeatMs))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(AccountLeases::Table)
                    .col(uuid(AccountLeases::AccountId).primary_key())
                    .col(string_null(AccountLeases::Holder))
                    .col(big_integer(AccountLeases::Epoch))
                    .col(big_integer(AccountLeases::TatMs))
                    .foreign_key(
                        ForeignKey::create()
                            .from(AccountLeases::Table, AccountLeases::AccountId)
                            .to(Accounts::Table, Accounts::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            AccountLeases::Table.into_iden(),
            ClusterMembers::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
