//! The persistence layer: every query the service runs lives under this module, as methods on
//! [`Store`]. Handlers and actors call these; nothing else builds SQL.

mod accounts;
mod api_keys;
mod login_states;
mod oauth_states;
mod scheduled;
mod sessions;
mod snapshots;
mod submissions;
mod usage;
mod users;

use std::time::Duration;

use migration::{Migrator, MigratorTrait};
use sea_orm::{ConnectOptions, Database, DatabaseConnection, DbBackend, DbErr};

pub use accounts::{NewAccount, NewTokens, ReEncryptError};
pub use oauth_states::StateOwner;
pub use scheduled::{CancelOutcome, NewScheduledPost, ScheduledFilter};
pub use snapshots::SnapshotClaim;
pub use submissions::{NewSubmission, Page};
pub use usage::Reservation;
pub use users::UserSearch;

/// Handle to the database; cheap to clone (it wraps a connection pool).
#[derive(Clone, Debug)]
pub struct Store {
    db: DatabaseConnection,
}

impl Store {
    /// Connects to `url` (SQLite or PostgreSQL). For a SQLite file the parent directory is
    /// created; the file itself is created by `mode=rwc`. `pg_schema` selects a PostgreSQL schema
    /// (tests use one fresh schema each).
    pub async fn connect(
        url: &str,
        max_connections: u32,
        pg_schema: Option<&str>,
    ) -> Result<Self, DbErr> {
        if let Some(path) = sqlite_file_path(url)
            && let Some(parent) = std::path::Path::new(path).parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent)
                .map_err(|e| DbErr::Custom(format!("cannot create {}: {e}", parent.display())))?;
        }
        let mut options = ConnectOptions::new(url.to_string());
        options
            .max_connections(max_connections.max(1))
            .acquire_timeout(Duration::from_secs(10))
            .sqlx_logging(false)
            .map_sqlx_sqlite_opts(|opts| {
                use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
                // WAL lets readers proceed during a write; writers queue on the busy timeout
                // instead of failing with SQLITE_BUSY.
                opts.journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    .busy_timeout(Duration::from_secs(15))
                    .foreign_keys(true)
            });
        if let Some(schema) = pg_schema {
            options.set_schema_search_path(schema.to_string());
        }
        let db = Database::connect(options).await?;
        Ok(Self { db })
    }

    /// Applies every pending migration.
    pub async fn migrate(&self) -> Result<(), DbErr> {
        Migrator::up(&self.db, None).await
    }

    /// Closes the pool (the migration's own connection, see `Application::build`).
    pub async fn close(self) -> Result<(), DbErr> {
        self.db.close().await
    }

    /// Runs a trivial query (health checks).
    pub async fn ping(&self) -> Result<(), DbErr> {
        self.db.ping().await
    }

    pub fn backend(&self) -> DbBackend {
        self.db.get_database_backend()
    }

    /// Migrations known to the binary but not applied to the database.
    pub async fn pending_migrations(&self) -> Result<usize, DbErr> {
        Ok(Migrator::get_pending_migrations(&self.db).await?.len())
    }

    /// Connections in the pool: `(open, idle)`.
    pub fn pool_stats(&self) -> (u32, usize) {
        match self.backend() {
            DbBackend::Postgres => {
                let pool = self.db.get_postgres_connection_pool();
                (pool.size(), pool.num_idle())
            }
            DbBackend::Sqlite => {
                let pool = self.db.get_sqlite_connection_pool();
                (pool.size(), pool.num_idle())
            }
            _ => (0, 0),
        }
    }

    /// The underlying connection, for tests that need to inspect rows directly.
    pub fn connection(&self) -> &DatabaseConnection {
        &self.db
    }
}

/// The file path of a `sqlite://PATH?…` URL, unless it is in-memory.
fn sqlite_file_path(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    if path.is_empty() || path == ":memory:" || rest.contains("mode=memory") {
        None
    } else {
        Some(path)
    }
}

/// Placeholder `n` (1-based) in the backend's raw SQL dialect.
fn placeholder(backend: DbBackend, n: usize) -> String {
    match backend {
        DbBackend::Postgres => format!("${n}"),
        _ => "?".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_paths() {
        assert_eq!(
            sqlite_file_path("sqlite://data/x.db?mode=rwc"),
            Some("data/x.db")
        );
        assert_eq!(sqlite_file_path("sqlite::memory:"), None);
        assert_eq!(sqlite_file_path("postgres://h/db"), None);
    }
}
