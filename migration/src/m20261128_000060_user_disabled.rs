//! Users an operator disabled (`service user disable EMAIL`): their sessions and API keys are
//! refused and they cannot sign in until `service user enable EMAIL` clears the column. No
//! existing user is disabled.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261128_000060_user_disabled"
    }
}

#[derive(DeriveIden)]
enum Users {
    Table,
    DisabledAt,
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .add_column(timestamp_with_time_zone_null(Users::DisabledAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .drop_column(Users::DisabledAt)
                    .to_owned(),
            )
            .await
    }
}
