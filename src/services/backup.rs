//! `service backup`: a consistent copy of a live SQLite database, or, on PostgreSQL, how to
//! take one with `pg_dump` (the service has no business holding a server's dump tools).

use std::path::{Path, PathBuf};

use crate::store::Store;

/// What `service backup` did.
#[derive(Debug)]
pub enum BackupOutcome {
    /// The SQLite database was copied to this file.
    Written(PathBuf),
    /// The database is PostgreSQL: nothing was written; these are the instructions to print.
    PostgresInstructions(String),
}

/// Copies the database at `database_url` to `path` (SQLite), or says how to dump it
/// (PostgreSQL). Safe with the service running: the copy is one read snapshot.
pub async fn backup(database_url: &str, path: &Path) -> Result<BackupOutcome, String> {
    if database_url.starts_with("postgres:") || database_url.starts_with("postgresql:") {
        return Ok(BackupOutcome::PostgresInstructions(pg_dump_instructions(
            database_url,
            path,
        )));
    }
    if path.exists() {
        return Err(format!(
            "{} already exists: give a path that does not",
            path.display()
        ));
    }
    // One connection: the copy is a single statement, and the command must not migrate (it
    // would write to the database it was asked to copy).
    let store = Store::connect(database_url, 1, None)
        .await
        .map_err(|e| format!("cannot open the database: {e}"))?;
    let result = store.backup_sqlite_into(path).await;
    let _ = store.close().await;
    result.map_err(|e| format!("backup to {} failed: {e}", path.display()))?;
    Ok(BackupOutcome::Written(path.to_path_buf()))
}

/// The `pg_dump` command for this database, without its password (which `pg_dump` reads from
/// `PGPASSWORD` or `~/.pgpass`, so that it never lands in a shell history).
fn pg_dump_instructions(database_url: &str, path: &Path) -> String {
    let Ok(url) = url::Url::parse(database_url) else {
        return "the database is PostgreSQL: back it up with pg_dump (the URL could not be read)"
            .into();
    };
    let host = url.host_str().unwrap_or("localhost");
    let port = url.port().unwrap_or(5432);
    let user = url.username();
    let database = url.path().trim_start_matches('/');
    let user_arg = if user.is_empty() {
        String::new()
    } else {
        format!(" --username {user}")
    };
    format!(
        "the database is PostgreSQL ({host}:{port}/{database}); nothing was written. Back it up \
         with pg_dump, giving the password in PGPASSWORD or ~/.pgpass:\n  pg_dump --host {host} \
         --port {port}{user_arg} --format custom --file {} {database}\nand restore with \
         pg_restore --clean --dbname {database} (service stopped).",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pg_dump_instructions_name_host_and_database_and_never_the_password() {
        let text = pg_dump_instructions(
            "postgres://app:hunter2@db.internal:6543/social?sslmode=require",
            Path::new("/backups/social.dump"),
        );
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.contains(
                "pg_dump --host db.internal --port 6543 --username app --format custom \
                 --file /backups/social.dump social"
            ),
            "{text}"
        );
    }
}
