//! Uploaded media: one row per file, with the token of its public URL and what was read from
//! its bytes; and each user's total, so that a storage quota is one conditional write.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000090_media"
    }
}

#[derive(DeriveIden)]
enum Media {
    Table,
    Id,
    UserId,
    Token,
    ContentType,
    Size,
    Sha256,
    Width,
    Height,
    CreatedAt,
    LastUsedAt,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum MediaUsage {
    Table,
    UserId,
    Bytes,
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
                    .table(Media::Table)
                    .col(uuid(Media::Id).primary_key())
                    .col(uuid(Media::UserId))
                    .col(string(Media::Token))
                    .col(string(Media::ContentType))
                    .col(big_integer(Media::Size))
                    .col(string(Media::Sha256))
                    .col(integer_null(Media::Width))
                    .col(integer_null(Media::Height))
                    .col(timestamp_with_time_zone(Media::CreatedAt))
                    .col(timestamp_with_time_zone_null(Media::LastUsedAt))
                    .col(timestamp_with_time_zone(Media::ExpiresAt))
                    .foreign_key(
                        ForeignKey::create()
                            .from(Media::Table, Media::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_media_user_created")
                    .table(Media::Table)
                    .col(Media::UserId)
                    .col(Media::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_media_expires")
                    .table(Media::Table)
                    .col(Media::ExpiresAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(MediaUsage::Table)
                    .col(uuid(MediaUsage::UserId).primary_key())
                    .col(big_integer(MediaUsage::Bytes))
                    .foreign_key(
                        ForeignKey::create()
                            .from(MediaUsage::Table, MediaUsage::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [MediaUsage::Table.into_iden(), Media::Table.into_iden()] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
