//! The operator role granted per user by the `service user operator` CLI (it opens the
//! dashboard's operator pages). Existing users are not operators; the configuration's `auth.operator_emails` grants
//! the role without this column.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261124_000008_operator_role"
    }
}

#[derive(DeriveIden)]
enum Users {
    Table,
    IsOperator,
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .add_column(boolean(Users::IsOperator).default(false).to_owned())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .drop_column(Users::IsOperator)
                    .to_owned(),
            )
            .await
    }
}
