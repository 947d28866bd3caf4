//! Whether the identity provider vouched for a user's e-mail address (`email_verified` in the
//! ID token), recorded at each sign-in. `auth.operator_emails` grants the operator role only on
//! a verified address. Existing users start unverified; their next sign-in sets it.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261128_000020_user_email_verified"
    }
}

#[derive(DeriveIden)]
enum Users {
    Table,
    EmailVerified,
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .add_column(boolean(Users::EmailVerified).default(false).to_owned())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .drop_column(Users::EmailVerified)
                    .to_owned(),
            )
            .await
    }
}
