//! `Idempotency-Key`s of `POST /v2/posts`: one row per key a user sent, holding the request's
//! fingerprint, the claim's lease while the first request runs, and the answer it got, so a
//! retry with the same key is answered from here on any instance (24 hours).

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000070_idempotency_keys"
    }
}

#[derive(DeriveIden)]
enum IdempotencyKeys {
    Table,
    Id,
    UserId,
    IdempotencyKey,
    Fingerprint,
    PostSubmissionId,
    LockedUntil,
    ResponseStatus,
    ResponseBody,
    CreatedAt,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(IdempotencyKeys::Table)
                    .col(uuid(IdempotencyKeys::Id).primary_key())
                    .col(uuid(IdempotencyKeys::UserId))
                    .col(string_len(IdempotencyKeys::IdempotencyKey, 255))
                    .col(string(IdempotencyKeys::Fingerprint))
                    .col(uuid(IdempotencyKeys::PostSubmissionId))
                    .col(timestamp_with_time_zone_null(IdempotencyKeys::LockedUntil))
                    .col(integer_null(IdempotencyKeys::ResponseStatus))
                    .col(text_null(IdempotencyKeys::ResponseBody))
                    .col(timestamp_with_time_zone(IdempotencyKeys::CreatedAt))
                    .col(timestamp_with_time_zone(IdempotencyKeys::ExpiresAt))
                    .foreign_key(
                        ForeignKey::create()
                            .from(IdempotencyKeys::Table, IdempotencyKeys::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_idempotency_keys_user_key")
                    .table(IdempotencyKeys::Table)
                    .col(IdempotencyKeys::UserId)
                    .col(IdempotencyKeys::IdempotencyKey)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_idempotency_keys_expires_at")
                    .table(IdempotencyKeys::Table)
                    .col(IdempotencyKeys::ExpiresAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(IdempotencyKeys::Table).to_owned())
            .await
    }
}
