//! Webhooks: a user's endpoints; the outbox of events, written in the transaction of the state
//! change each reports; the messages fanned out from them, one per endpoint, with their delivery
//! state and claim; every delivery attempt. The accounts table remembers which token expiry it
//! has warned about, so that a warning goes out once per expiry.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000080_webhooks"
    }
}

#[derive(DeriveIden)]
enum WebhookEndpoints {
    Table,
    Id,
    UserId,
    Url,
    Events,
    Description,
    SecretEnc,
    PreviousSecretEnc,
    PreviousSecretUntil,
    IsActive,
    DisabledReason,
    FailingSince,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum WebhookEvents {
    Table,
    Id,
    UserId,
    EventType,
    SubjectId,
    Status,
    PostId,
    Result,
    PublishedAt,
    ErrorCode,
    ErrorMessage,
    Reason,
    ExpiresAt,
    OccurredAt,
}

#[derive(DeriveIden)]
enum WebhookMessages {
    Table,
    Id,
    EndpointId,
    UserId,
    EventType,
    Payload,
    OccurredAt,
    Status,
    Attempts,
    RetryIndex,
    NextAttemptAt,
    ClaimToken,
    LeaseUntil,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum WebhookAttempts {
    Table,
    Id,
    MessageId,
    AttemptedAt,
    HttpStatus,
    Response,
    DurationMs,
    Error,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Accounts {
    Table,
    ExpiryNoticeFor,
    DataAccessNoticeFor,
}

async fn index(
    manager: &SchemaManager<'_>,
    name: &str,
    table: impl IntoIden,
    cols: &[&str],
) -> Result<(), DbErr> {
    let mut create = Index::create();
    create.name(name).table(table);
    for col in cols {
        create.col(Alias::new(*col));
    }
    manager.create_index(create.to_owned()).await
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(WebhookEndpoints::Table)
                    .col(uuid(WebhookEndpoints::Id).primary_key())
                    .col(uuid(WebhookEndpoints::UserId))
                    .col(text(WebhookEndpoints::Url))
                    .col(text(WebhookEndpoints::Events))
                    .col(text_null(WebhookEndpoints::Description))
                    .col(text(WebhookEndpoints::SecretEnc))
                    .col(text_null(WebhookEndpoints::PreviousSecretEnc))
                    .col(timestamp_with_time_zone_null(
                        WebhookEndpoints::PreviousSecretUntil,
                    ))
                    .col(boolean(WebhookEndpoints::IsActive))
                    .col(text_null(WebhookEndpoints::DisabledReason))
                    .col(timestamp_with_time_zone_null(
                        WebhookEndpoints::FailingSince,
                    ))
                    .col(timestamp_with_time_zone(WebhookEndpoints::CreatedAt))
                    .col(timestamp_with_time_zone(WebhookEndpoints::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .from(WebhookEndpoints::Table, WebhookEndpoints::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "idx_webhook_endpoints_user",
            WebhookEndpoints::Table,
            &["user_id", "is_active"],
        )
        .await?;
        manager
            .create_table(
                Table::create()
                    .table(WebhookEvents::Table)
                    .col(uuid(WebhookEvents::Id).primary_key())
                    .col(uuid(WebhookEvents::UserId))
                    .col(string(WebhookEvents::EventType))
                    .col(uuid(WebhookEvents::SubjectId))
                    .col(string_null(WebhookEvents::Status))
                    .col(string_null(WebhookEvents::PostId))
                    .col(text_null(WebhookEvents::Result))
                    .col(timestamp_with_time_zone_null(WebhookEvents::PublishedAt))
                    .col(string_null(WebhookEvents::ErrorCode))
                    .col(text_null(WebhookEvents::ErrorMessage))
                    .col(text_null(WebhookEvents::Reason))
                    .col(timestamp_with_time_zone_null(WebhookEvents::ExpiresAt))
                    .col(timestamp_with_time_zone(WebhookEvents::OccurredAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(WebhookMessages::Table)
                    .col(string_len(WebhookMessages::Id, 40).primary_key())
                    .col(uuid(WebhookMessages::EndpointId))
                    .col(uuid(WebhookMessages::UserId))
                    .col(string(WebhookMessages::EventType))
                    .col(text(WebhookMessages::Payload))
                    .col(timestamp_with_time_zone(WebhookMessages::OccurredAt))
                    .col(string(WebhookMessages::Status))
                    .col(integer(WebhookMessages::Attempts))
                    .col(integer(WebhookMessages::RetryIndex))
                    .col(timestamp_with_time_zone_null(
                        WebhookMessages::NextAttemptAt,
                    ))
                    .col(string_null(WebhookMessages::ClaimToken))
                    .col(timestamp_with_time_zone_null(WebhookMessages::LeaseUntil))
                    .col(timestamp_with_time_zone(WebhookMessages::CreatedAt))
                    .col(timestamp_with_time_zone(WebhookMessages::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .from(WebhookMessages::Table, WebhookMessages::EndpointId)
                            .to(WebhookEndpoints::Table, WebhookEndpoints::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "idx_webhook_messages_due",
            WebhookMessages::Table,
            &["status", "next_attempt_at"],
        )
        .await?;
        index(
            manager,
            "idx_webhook_messages_endpoint",
            WebhookMessages::Table,
            &["endpoint_id", "created_at"],
        )
        .await?;
        manager
            .create_table(
                Table::create()
                    .table(WebhookAttempts::Table)
                    .col(uuid(WebhookAttempts::Id).primary_key())
                    .col(string_len(WebhookAttempts::MessageId, 40))
                    .col(timestamp_with_time_zone(WebhookAttempts::AttemptedAt))
                    .col(integer_null(WebhookAttempts::HttpStatus))
                    .col(text_null(WebhookAttempts::Response))
                    .col(integer(WebhookAttempts::DurationMs))
                    .col(text_null(WebhookAttempts::Error))
                    .foreign_key(
                        ForeignKey::create()
                            .from(WebhookAttempts::Table, WebhookAttempts::MessageId)
                            .to(WebhookMessages::Table, WebhookMessages::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "idx_webhook_attempts_message",
            WebhookAttempts::Table,
            &["message_id", "attempted_at"],
        )
        .await?;
        for col in [Accounts::ExpiryNoticeFor, Accounts::DataAccessNoticeFor] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Accounts::Table)
                        .add_column(timestamp_with_time_zone_null(col))
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for col in [Accounts::ExpiryNoticeFor, Accounts::DataAccessNoticeFor] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Accounts::Table)
                        .drop_column(col)
                        .to_owned(),
                )
                .await?;
        }
        for table in [
            WebhookAttempts::Table.into_iden(),
            WebhookMessages::Table.into_iden(),
            WebhookEvents::Table.into_iden(),
            WebhookEndpoints::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
