//! `service db copy --from URL --to URL`: every row of one database into a new, empty one, ids
//! and values as they are. The documented way is from the embedded SQLite database to
//! PostgreSQL (docs/operations.md); any pair of the store's databases works.

use std::path::PathBuf;

use crate::store::{CopySource, Store, TableCount};

/// Copies every table of the database at `from` into the one at `to`: `from` is only read
/// (never migrated), `to` is migrated, must hold no rows, and is written in one transaction.
/// Returns each table's row counts, equal on both sides.
pub async fn copy_database(from: &str, to: &str) -> Result<Vec<TableCount>, String> {
    if same_database(from, to) {
        return Err(format!(
            "--from and --to name the same database ({}): copy into another one",
            printable(to)
        ));
    }
    let source = CopySource::open(from)
        .await
        .map_err(|e| format!("cannot open the source {}: {e}", printable(from)))?;
    let result = copy_from(&source, to).await;
    let _ = source.close().await;
    result
}

async fn copy_from(source: &CopySource, to: &str) -> Result<Vec<TableCount>, String> {
    if let Some(problem) = source
        .schema_problem()
        .await
        .map_err(|e| format!("cannot read the source's migrations: {e}"))?
    {
        return Err(problem);
    }
    let target = Store::connect(to, 2, None)
        .await
        .map_err(|e| format!("cannot open the target {}: {e}", printable(to)))?;
    let result = async {
        target
            .migrate()
            .await
            .map_err(|e| format!("cannot migrate the target {}: {e}", printable(to)))?;
        target
            .copy_every_table_from(source)
            .await
            .map_err(|e| format!("{e}"))
    }
    .await;
    let _ = target.close().await;
    result
}

/// What a database URL is, for comparing two of them: a SQLite file by its canonical path (so
/// `./data/x.db` and `data/x.db?mode=rwc` are one file), a server's database by host, port and
/// name (the user, password and options do not make another database).
#[derive(Debug, PartialEq, Eq)]
enum Location {
    SqliteFile(PathBuf),
    Server {
        host: String,
        port: Option<u16>,
        database: String,
    },
    Other(String),
}

fn location(url: &str) -> Location {
    if let Some(rest) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    {
        let path = rest.split('?').next().unwrap_or(rest);
        let path = PathBuf::from(path);
        return Location::SqliteFile(std::fs::canonicalize(&path).unwrap_or(path));
    }
    match url::Url::parse(url) {
        Ok(parsed) if parsed.host_str().is_some() => Location::Server {
            host: parsed.host_str().unwrap_or_default().to_ascii_lowercase(),
            port: parsed.port().or(match parsed.scheme() {
                "postgres" | "postgresql" => Some(5432),
                _ => None,
            }),
            database: parsed.path().trim_start_matches('/').to_string(),
        },
        _ => Location::Other(url.to_string()),
    }
}

fn same_database(from: &str, to: &str) -> bool {
    location(from) == location(to)
}

/// `url` without its password, to be printed.
fn printable(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_spellings_of_one_database_are_the_same_database() {
        assert!(same_database(
            "postgres://app:pw@DB.internal/social",
            "postgresql://other@db.internal:5432/social?sslmode=require"
        ));
        assert!(!same_database(
            "postgres://db.internal/social",
            "postgres://db.internal/social_copy"
        ));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.db");
        std::fs::write(&file, b"").unwrap();
        let dotted = dir.path().join(".").join("s.db");
        assert!(same_database(
            &format!("sqlite://{}?mode=rwc", file.display()),
            &format!("sqlite:{}", dotted.display())
        ));
        assert!(!same_database(
            &format!("sqlite://{}", file.display()),
            "postgres://127.0.0.1/social"
        ));
    }

    #[test]
    fn a_printed_url_has_no_password() {
        let shown = printable("postgres://app:hunter2@db/social");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("db/social"), "{shown}");
    }
}
