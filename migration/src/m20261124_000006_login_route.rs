//! How an account was connected (`login_route`) and when its current token was issued
//! (`token_issued_at`). instagram accounts connect through Facebook Login (graph.facebook.com,
//! a 60-day user token with no refresh grant) or Instagram Login (graph.instagram.com, a 60-day
//! token refreshed once it is at least 24 h old): the route picks the host and the token
//! policy. Existing rows were all connected through Facebook Login; other platforms carry the
//! same default, unused.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261124_000006_login_route"
    }
}

#[derive(DeriveIden)]
enum Accounts {
    Table,
    LoginRoute,
    TokenIssuedAt,
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite's ALTER TABLE adds one at a time.
        let columns = [
            string_len(Accounts::LoginRoute, 32)
                .default("facebook_login")
                .to_owned(),
            timestamp_with_time_zone_null(Accounts::TokenIssuedAt),
        ];
        for column in columns {
            manager
                .alter_table(
                    Table::alter()
                        .table(Accounts::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [Accounts::TokenIssuedAt, Accounts::LoginRoute] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Accounts::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
