//! The foundation tables: users, dashboard sessions, sign-in states, API keys, connected accounts,
//! the publishing history and the monthly usage counters.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261122_000001_foundation"
    }
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
    Email,
    DisplayName,
    OidcIssuer,
    OidcSubject,
    Plan,
    PlanType,
    CurrentPeriodEnd,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Sessions {
    Table,
    Id,
    TokenHash,
    UserId,
    CreatedAt,
    ExpiresAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum LoginStates {
    Table,
    State,
    Purpose,
    PkceVerifier,
    Nonce,
    ReturnTo,
    CreatedAt,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
    UserId,
    Name,
    KeyHash,
    LookupPrefix,
    KeyPreview,
    CreatedAt,
    LastUsedAt,
    IsActive,
    DeletedAt,
}

#[derive(DeriveIden)]
enum Accounts {
    Table,
    Id,
    UserId,
    Platform,
    ExternalId,
    DisplayName,
    Username,
    AccountType,
    ProfilePictureUrl,
    AccessTokenEnc,
    RefreshTokenEnc,
    TokenExpiresAt,
    DataAccessExpiresAt,
    IsValid,
    Disabled,
    DisabledAt,
    LastError,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum PostSubmissions {
    Table,
    Id,
    UserId,
    AccountId,
    Platform,
    PostType,
    PostId,
    Status,
    PageName,
    Content,
    Result,
    Steps,
    ErrorCode,
    ErrorMessage,
    ScheduledPostId,
    CreatedAt,
    PublishedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum UsageCounters {
    Table,
    UserId,
    PeriodStart,
    CallCount,
    UpdatedAt,
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Users::Table)
                    .col(pk_uuid(Users::Id))
                    .col(string_null(Users::Email))
                    .col(string_null(Users::DisplayName))
                    .col(string(Users::OidcIssuer))
                    .col(string(Users::OidcSubject))
                    .col(string(Users::Plan))
                    .col(string_null(Users::PlanType))
                    .col(timestamp_with_time_zone_null(Users::CurrentPeriodEnd))
                    .col(timestamp_with_time_zone(Users::CreatedAt))
                    .col(timestamp_with_time_zone(Users::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        // One user per identity-provider account: the first sign-in creates it, later ones find it.
        manager
            .create_index(
                Index::create()
                    .name("ux_users_oidc_identity")
                    .table(Users::Table)
                    .col(Users::OidcIssuer)
                    .col(Users::OidcSubject)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Sessions::Table)
                    .col(pk_uuid(Sessions::Id))
                    .col(string_uniq(Sessions::TokenHash))
                    .col(uuid(Sessions::UserId))
                    .col(timestamp_with_time_zone(Sessions::CreatedAt))
                    .col(timestamp_with_time_zone(Sessions::ExpiresAt))
                    .col(timestamp_with_time_zone_null(Sessions::RevokedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_sessions_user")
                            .from(Sessions::Table, Sessions::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(LoginStates::Table)
                    .col(string(LoginStates::State).primary_key())
                    .col(string(LoginStates::Purpose))
                    .col(string(LoginStates::PkceVerifier))
                    .col(string(LoginStates::Nonce))
                    .col(string_null(LoginStates::ReturnTo))
                    .col(timestamp_with_time_zone(LoginStates::CreatedAt))
                    .col(timestamp_with_time_zone(LoginStates::ExpiresAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ApiKeys::Table)
                    .col(pk_uuid(ApiKeys::Id))
                    .col(uuid(ApiKeys::UserId))
                    .col(string(ApiKeys::Name))
                    .col(string_uniq(ApiKeys::KeyHash))
                    .col(string(ApiKeys::LookupPrefix))
                    .col(string(ApiKeys::KeyPreview))
                    .col(timestamp_with_time_zone(ApiKeys::CreatedAt))
                    .col(timestamp_with_time_zone_null(ApiKeys::LastUsedAt))
                    .col(boolean(ApiKeys::IsActive))
                    .col(timestamp_with_time_zone_null(ApiKeys::DeletedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_api_keys_user")
                            .from(ApiKeys::Table, ApiKeys::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_api_keys_lookup_prefix")
                    .table(ApiKeys::Table)
                    .col(ApiKeys::LookupPrefix)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_api_keys_user")
                    .table(ApiKeys::Table)
                    .col(ApiKeys::UserId)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Accounts::Table)
                    .col(pk_uuid(Accounts::Id))
                    .col(uuid(Accounts::UserId))
                    .col(string(Accounts::Platform))
                    .col(string(Accounts::ExternalId))
                    .col(string(Accounts::DisplayName))
                    .col(string_null(Accounts::Username))
                    .col(string_null(Accounts::AccountType))
                    .col(string_null(Accounts::ProfilePictureUrl))
                    .col(text(Accounts::AccessTokenEnc))
                    .col(text_null(Accounts::RefreshTokenEnc))
                    .col(timestamp_with_time_zone_null(Accounts::TokenExpiresAt))
                    .col(timestamp_with_time_zone_null(Accounts::DataAccessExpiresAt))
                    .col(boolean(Accounts::IsValid))
                    .col(boolean(Accounts::Disabled))
                    .col(timestamp_with_time_zone_null(Accounts::DisabledAt))
                    .col(text_null(Accounts::LastError))
                    .col(timestamp_with_time_zone(Accounts::CreatedAt))
                    .col(timestamp_with_time_zone(Accounts::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_accounts_user")
                            .from(Accounts::Table, Accounts::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_accounts_user")
                    .table(Accounts::Table)
                    .col(Accounts::UserId)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(PostSubmissions::Table)
                    .col(pk_uuid(PostSubmissions::Id))
                    .col(uuid(PostSubmissions::UserId))
                    .col(uuid(PostSubmissions::AccountId))
                    .col(string(PostSubmissions::Platform))
                    .col(string_null(PostSubmissions::PostType))
                    .col(string_null(PostSubmissions::PostId))
                    .col(string(PostSubmissions::Status))
                    .col(string(PostSubmissions::PageName))
                    .col(json(PostSubmissions::Content))
                    .col(json_null(PostSubmissions::Result))
                    .col(json_null(PostSubmissions::Steps))
                    .col(string_null(PostSubmissions::ErrorCode))
                    .col(text_null(PostSubmissions::ErrorMessage))
                    .col(uuid_null(PostSubmissions::ScheduledPostId))
                    .col(timestamp_with_time_zone(PostSubmissions::CreatedAt))
                    .col(timestamp_with_time_zone_null(PostSubmissions::PublishedAt))
                    .col(timestamp_with_time_zone(PostSubmissions::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_post_submissions_user")
                            .from(PostSubmissions::Table, PostSubmissions::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_post_submissions_account")
                            .from(PostSubmissions::Table, PostSubmissions::AccountId)
                            .to(Accounts::Table, Accounts::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        // The history is read newest first per user.
        manager
            .create_index(
                Index::create()
                    .name("ix_post_submissions_user_created")
                    .table(PostSubmissions::Table)
                    .col(PostSubmissions::UserId)
                    .col(PostSubmissions::CreatedAt)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(UsageCounters::Table)
                    .col(uuid(UsageCounters::UserId))
                    .col(string(UsageCounters::PeriodStart))
                    .col(big_integer(UsageCounters::CallCount))
                    .col(timestamp_with_time_zone(UsageCounters::UpdatedAt))
                    .primary_key(
                        Index::create()
                            .col(UsageCounters::UserId)
                            .col(UsageCounters::PeriodStart),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_usage_counters_user")
                            .from(UsageCounters::Table, UsageCounters::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            UsageCounters::Table.into_iden(),
            PostSubmissions::Table.into_iden(),
            Accounts::Table.into_iden(),
            ApiKeys::Table.into_iden(),
            LoginStates::Table.into_iden(),
            Sessions::Table.into_iden(),
            Users::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
