//! Copies of the database as it stands, and which migrations it has: what `service backup`
//! and `service migrate status` read.

use std::path::Path;

use migration::{Migrator, MigratorTrait};
use sea_orm::{ConnectionTrait, DbBackend, DbErr};

use super::Store;

impl Store {
    /// Writes a consistent copy of this SQLite database to `path` with `VACUUM INTO`, which
    /// reads one snapshot of the database in a single read transaction: writers carry on
    /// meanwhile, and what they commit after the copy starts is not in it. Refuses an existing
    /// `path` (SQLite would too, but less clearly) and a database that is not SQLite.
    pub async fn backup_sqlite_into(&self, path: &Path) -> Result<(), DbErr> {
        if self.backend() != DbBackend::Sqlite {
            return Err(DbErr::Custom(
                "VACUUM INTO copies SQLite databases only".into(),
            ));
        }
        if path.exists() {
            return Err(DbErr::Custom(format!(
                "{} already exists: give a path that does not",
                path.display()
            )));
        }
        let target = path
            .to_str()
            .ok_or_else(|| DbErr::Custom(format!("{} is not valid UTF-8", path.display())))?;
        // A string literal, not a bound parameter: SQLite takes VACUUM INTO's file name as an
        // expression, and quoting (doubling `'`) keeps any path a single literal.
        let sql = format!("VACUUM INTO '{}'", target.replace('\'', "''"));
        self.db.execute_unprepared(&sql).await?;
        Ok(())
    }

    /// Every migration the binary knows, in order, with whether the database has applied it.
    /// Reads only: a database without the migrations table has every migration pending.
    pub async fn migration_status(&self) -> Result<Vec<(String, bool)>, DbErr> {
        let pending: Vec<String> = Migrator::get_pending_migrations_read_only(&self.db)
            .await?
            .iter()
            .map(|m| m.name().to_string())
            .collect();
        Ok(Migrator::get_migration_files()
            .iter()
            .map(|m| (m.name().to_string(), !pending.iter().any(|p| p == m.name())))
            .collect())
    }
}
