//! The reconciler's index of due checks holds only the rows being checked. An index of every
//! history row (almost all with a NULL key) would make every publish's insert write an index
//! page it never needs; the reconciler's look (`next_check_at <= now`) implies
//! `next_check_at IS NOT NULL`, which lets SQLite and PostgreSQL use the partial index.

use sea_orm_migration::prelude::*;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261125_000009_partial_check_index"
    }
}

/// The index it replaces, which held every row.
const OLD: &str = "idx_post_submissions_next_check_at";
const NEW: &str = "idx_post_submissions_due_checks";

// Created under a new name before the old one is dropped: the statements may run on different
// pool connections, and on a pool of two SQLite connections, re-creating the index under its
// old name right after dropping it failed with "already exists". `IF NOT EXISTS`: SQLite runs
// a migration outside a transaction, so one cut off between the two statements is run again.
#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        // The same statements on SQLite and PostgreSQL.
        db.execute_unprepared(&format!(
            "CREATE INDEX IF NOT EXISTS {NEW} ON post_submissions (next_check_at) \
             WHERE next_check_at IS NOT NULL"
        ))
        .await?;
        db.execute_unprepared(&format!("DROP INDEX IF EXISTS {OLD}"))
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared(&format!(
            "CREATE INDEX {OLD} ON post_submissions (next_check_at)"
        ))
        .await?;
        db.execute_unprepared(&format!("DROP INDEX IF EXISTS {NEW}"))
            .await?;
        Ok(())
    }
}
