//! Connecting accounts over OAuth: the single-use `state` of each connection in progress (bound to
//! the user and the session that started it), and a refresh lease on accounts so that only one
//! instance refreshes a token at a time (TikTok and X rotate refresh tokens: a second refresh with
//! the old one would fail and lose the account).

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261123_000004_oauth"
    }
}

#[derive(DeriveIden)]
enum OauthStates {
    Table,
    StateHash,
    UserId,
    SessionHash,
    Platform,
    CodeVerifierEnc,
    CreatedAt,
    ExpiresAt,
    UsedAt,
}

#[derive(DeriveIden)]
enum Accounts {
    Table,
    RefreshLeaseUntil,
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(OauthStates::Table)
                    .col(string(OauthStates::StateHash).primary_key())
                    .col(uuid(OauthStates::UserId))
                    .col(string(OauthStates::SessionHash))
                    .col(string(OauthStates::Platform))
                    .col(text(OauthStates::CodeVerifierEnc))
                    .col(timestamp_with_time_zone(OauthStates::CreatedAt))
                    .col(timestamp_with_time_zone(OauthStates::ExpiresAt))
                    .col(timestamp_with_time_zone_null(OauthStates::UsedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Accounts::Table)
                    .add_column(timestamp_with_time_zone_null(Accounts::RefreshLeaseUntil))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Accounts::Table)
                    .drop_column(Accounts::RefreshLeaseUntil)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(OauthStates::Table).to_owned())
            .await
    }
}
