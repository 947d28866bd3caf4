//! Copying every table of one database into another, rows as they are (`service db copy`):
//! the way from the embedded SQLite database to PostgreSQL.
//!
//! The tables are those of [`entity::for_every_table`], in its order (a table after the tables
//! its foreign keys point at). Rows travel as the entities' models: read with the source's
//! types and written with the target's, as the service itself would write them, so a uuid, a
//! timestamp, a JSON document or a sealed token means the same on both sides. The source is
//! read in one read-only transaction (one snapshot) and the target written in one transaction:
//! a copy that fails anywhere leaves the target as it was.

use futures_util::TryStreamExt;
use migration::{Migrator, MigratorTrait};
use sea_orm::{
    AccessMode, ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction,
    DbBackend, DbErr, EntityName, EntityTrait, IntoActiveModel, IsolationLevel, Iterable,
    PaginatorTrait, Statement, TransactionTrait,
};

use super::Store;

/// The most rows one `INSERT` carries.
const ROWS_PER_INSERT: usize = 500;
/// The most values one statement binds: PostgreSQL's limit is 65,535, SQLite's 32,766.
const VALUES_PER_INSERT: usize = 30_000;

/// How many rows of one table the source had and the target has after the copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCount {
    pub table: &'static str,
    pub source: u64,
    pub target: u64,
}

/// Why a copy wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// The target already holds rows in these tables (with their counts).
    #[error(
        "the target database is not empty ({}): copy into a new, empty database",
        describe_rows(.0)
    )]
    TargetNotEmpty(Vec<(&'static str, u64)>),
    /// The target's counts after the copy differ from the source's in these tables.
    #[error(
        "row counts differ after the copy ({}): nothing was written",
        describe_mismatches(.0)
    )]
    CountMismatch(Vec<TableCount>),
    #[error(transparent)]
    Database(#[from] DbErr),
}

fn describe_rows(tables: &[(&'static str, u64)]) -> String {
    tables
        .iter()
        .map(|(table, rows)| format!("{table}: {rows} rows"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe_mismatches(tables: &[TableCount]) -> String {
    tables
        .iter()
        .map(|t| {
            format!(
                "{}: {} in the source, {} copied",
                t.table, t.source, t.target
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The names of the tables a copy carries, in the order it copies them.
pub fn copied_tables() -> Vec<&'static str> {
    macro_rules! names {
        ($($module:ident),* $(,)?) => {
            vec![$(entity::$module::Entity.table_name()),*]
        };
    }
    entity::for_every_table!(names)
}

/// A database opened to be copied: read only, never migrated, never created.
#[derive(Debug)]
pub struct CopySource {
    db: DatabaseConnection,
}

impl CopySource {
    /// Opens the database at `url`. A SQLite file is opened read-only (whatever `mode=` the URL
    /// names), and a missing one is an error rather than a new empty database; PostgreSQL is
    /// read in a read-only transaction.
    pub async fn open(url: &str) -> Result<Self, DbErr> {
        let mut options = ConnectOptions::new(url.to_string());
        options
            .max_connections(1)
            .sqlx_logging(false)
            .map_sqlx_sqlite_opts(|opts| opts.read_only(true).create_if_missing(false));
        Ok(Self {
            db: Database::connect(options).await?,
        })
    }

    /// Why the source's schema is not the one this binary copies, if it is not: it must have
    /// applied exactly the migrations the binary knows (the copy reads every column of the
    /// entities, and would leave out a column only a newer binary knows).
    pub async fn schema_problem(&self) -> Result<Option<String>, DbErr> {
        let pending = Migrator::get_pending_migrations_read_only(&self.db).await?;
        if pending.len() == Migrator::migrations().len() {
            return Ok(Some(
                "the source has none of the service's tables: is it the service's database?".into(),
            ));
        }
        if !pending.is_empty() {
            return Ok(Some(format!(
                "the source has {} migrations to apply ({}): run `service migrate` on it with \
                 this version first (a copy of it, or with the service stopped)",
                pending.len(),
                pending
                    .iter()
                    .map(|m| m.name().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let known: Vec<String> = Migrator::get_migration_files()
            .iter()
            .map(|m| m.name().to_string())
            .collect();
        let applied = self
            .db
            .query_all_raw(Statement::from_string(
                self.db.get_database_backend(),
                "SELECT version FROM seaql_migrations",
            ))
            .await?;
        let mut unknown = Vec::new();
        for row in applied {
            let version: String = row.try_get_by_index(0)?;
            if !known.contains(&version) {
                unknown.push(version);
            }
        }
        Ok((!unknown.is_empty()).then(|| {
            format!(
                "the source has migrations this version does not know ({}): copy it with the \
                 version that wrote it",
                unknown.join(", ")
            )
        }))
    }

    /// One snapshot of the whole source, which nothing can write through.
    async fn begin_reading(&self) -> Result<DatabaseTransaction, DbErr> {
        match self.db.get_database_backend() {
            // A SQLite read transaction sees one snapshot from its first read to its end.
            DbBackend::Sqlite => self.db.begin().await,
            _ => {
                self.db
                    .begin_with_config(
                        Some(IsolationLevel::RepeatableRead),
                        Some(AccessMode::ReadOnly),
                    )
                    .await
            }
        }
    }

    pub async fn close(self) -> Result<(), DbErr> {
        self.db.close().await
    }
}

impl Store {
    /// Copies every table of `source` into this database, which must be migrated and have no
    /// row in any of those tables, in one transaction; returns each table's counts, checked
    /// equal before the commit.
    pub async fn copy_every_table_from(
        &self,
        source: &CopySource,
    ) -> Result<Vec<TableCount>, CopyError> {
        let read = source.begin_reading().await?;
        let write = self.db.begin().await?;
        // Checked in the transaction that writes: a refusal ends it with nothing written.
        let occupied = rows_in_tables(&write).await?;
        if !occupied.is_empty() {
            return Err(CopyError::TargetNotEmpty(occupied));
        }
        let mut counts = Vec::new();
        macro_rules! copy_each {
            ($($module:ident),* $(,)?) => {
                $(counts.push(copy_table::<entity::$module::Entity>(&read, &write).await?);)*
            };
        }
        entity::for_every_table!(copy_each);
        let mismatches: Vec<TableCount> = counts
            .iter()
            .filter(|count| count.source != count.target)
            .cloned()
            .collect();
        if !mismatches.is_empty() {
            return Err(CopyError::CountMismatch(mismatches));
        }
        reset_sequences(&write, &copied_tables()).await?;
        write.commit().await?;
        read.commit().await?;
        Ok(counts)
    }
}

async fn rows_in_tables<C: ConnectionTrait>(db: &C) -> Result<Vec<(&'static str, u64)>, DbErr> {
    let mut occupied = Vec::new();
    macro_rules! count_each {
        ($($module:ident),* $(,)?) => {
            $(
                let rows = entity::$module::Entity::find().count(db).await?;
                if rows > 0 {
                    occupied.push((entity::$module::Entity.table_name(), rows));
                }
            )*
        };
    }
    entity::for_every_table!(count_each);
    Ok(occupied)
}

/// Copies one table from `read` to `write` in multi-row inserts, reading row by row so that
/// a table of any size is never held in memory whole.
async fn copy_table<E>(
    read: &DatabaseTransaction,
    write: &DatabaseTransaction,
) -> Result<TableCount, DbErr>
where
    E: EntityTrait,
    E::Model: IntoActiveModel<E::ActiveModel> + Send + Sync,
    E::ActiveModel: Send,
{
    let columns = E::Column::iter().count().max(1);
    let batch_size = (VALUES_PER_INSERT / columns).clamp(1, ROWS_PER_INSERT);
    let source = E::find().count(read).await?;
    let mut batch: Vec<E::ActiveModel> = Vec::with_capacity(batch_size);
    {
        // The stream holds the reading transaction's connection until it is dropped.
        let mut rows = std::pin::pin!(E::find().stream(read).await?);
        while let Some(model) = rows.try_next().await? {
            batch.push(model.into_active_model());
            if batch.len() == batch_size {
                E::insert_many(std::mem::take(&mut batch))
                    .exec_without_returning(write)
                    .await?;
            }
        }
    }
    if !batch.is_empty() {
        E::insert_many(batch).exec_without_returning(write).await?;
    }
    Ok(TableCount {
        table: E::default().table_name(),
        source,
        target: E::find().count(write).await?,
    })
}

/// On PostgreSQL, moves every sequence that feeds a column of `tables` (serial or identity
/// ids) past the largest value copied, so that the next row the service inserts does not
/// collide with a copied one. The tables' ids are uuids and strings, so this finds none; it
/// keeps the copy correct for any table with a generated id. SQLite needs nothing: its
/// autoincrement follows the largest rowid.
async fn reset_sequences(db: &DatabaseTransaction, tables: &[&str]) -> Result<(), DbErr> {
    if db.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    for table in tables {
        let sequences = db
            .query_all_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                "SELECT column_name::text, seq::text FROM ( \
                   SELECT column_name, pg_get_serial_sequence(quote_ident(table_name), \
                          column_name) AS seq \
                   FROM information_schema.columns \
                   WHERE table_schema = current_schema() AND table_name = $1) AS c \
                 WHERE seq IS NOT NULL",
                [(*table).into()],
            ))
            .await?;
        for row in sequences {
            let column: String = row.try_get_by_index(0)?;
            let sequence: String = row.try_get_by_index(1)?;
            let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
            // `setval(seq, max + 1, false)`: the next value is max + 1, and 1 on an empty table.
            let sql = format!(
                "SELECT setval($1::regclass, COALESCE((SELECT MAX({column}) FROM {table}), 0) \
                 + 1, false)",
                column = quote(&column),
                table = quote(table),
            );
            db.execute_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                &sql,
                [sequence.into()],
            ))
            .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tables a copy leaves out: the live coordination of the instances running on the source
    /// (who is alive, who holds which account's publish lease and its limiter's state), which
    /// means nothing to a database no instance has run on yet.
    const NOT_COPIED: [&str; 2] = ["account_leases", "cluster_members"];

    /// The tables of a database the migrations built, less SQLite's own and the migrator's.
    async fn migrated_tables(store: &Store) -> Vec<String> {
        let rows = store
            .db
            .query_all_raw(Statement::from_string(
                DbBackend::Sqlite,
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' AND name <> 'seaql_migrations' ORDER BY name",
            ))
            .await
            .unwrap();
        rows.iter()
            .map(|row| row.try_get_by_index::<String>(0).unwrap())
            .collect()
    }

    async fn table_columns(store: &Store, table: &str) -> Vec<String> {
        let rows = store
            .db
            .query_all_raw(Statement::from_string(
                DbBackend::Sqlite,
                format!("SELECT name FROM pragma_table_info('{table}') ORDER BY name"),
            ))
            .await
            .unwrap();
        rows.iter()
            .map(|row| row.try_get_by_index::<String>(0).unwrap())
            .collect()
    }

    /// A big table goes in a few multi-row statements, not a statement per row, and arrives
    /// whole.
    #[tokio::test]
    async fn rows_are_inserted_in_batches_and_counted_on_both_sides() {
        let (source_dir, source) = crate::store::temp_sqlite_store(1).await;
        let now = chrono::Utc::now();
        let users: Vec<entity::user::ActiveModel> = (0..1_234)
            .map(|i| {
                entity::user::Model {
                    id: uuid::Uuid::new_v4(),
                    email: (i % 2 == 0).then(|| format!("u{i}@example.com")),
                    email_verified: i % 3 == 0,
                    display_name: None,
                    oidc_issuer: "https://idp.example".into(),
                    oidc_subject: format!("subject-{i}"),
                    plan: entity::user::Plan::Free,
                    plan_type: None,
                    current_period_end: None,
                    is_operator: i == 7,
                    disabled_at: (i % 5 == 0).then_some(now),
                    created_at: now,
                    updated_at: now,
                }
                .into_active_model()
            })
            .collect();
        for chunk in users.chunks(400) {
            entity::user::Entity::insert_many(chunk.to_vec())
                .exec_without_returning(&source.db)
                .await
                .unwrap();
        }
        let source_url = format!("sqlite://{}/t.db", source_dir.path().display());
        let (_target_dir, target) = crate::store::temp_sqlite_store(1).await;
        let copy_source = CopySource::open(&source_url).await.unwrap();
        let before = target.db_counts();
        let counts = target.copy_every_table_from(&copy_source).await.unwrap();
        let writes = target.db_counts().since(before).writes;
        let users_count = counts.iter().find(|c| c.table == "users").unwrap();
        assert_eq!((users_count.source, users_count.target), (1_234, 1_234));
        assert_eq!(writes, 3, "1,234 rows in statements of 500");
    }

    /// A table the migrations create without a line in `entity::for_every_table!` (or in
    /// [`NOT_COPIED`]) would be left out of every copy unnoticed: this fails first.
    #[tokio::test]
    async fn the_copy_carries_every_table_the_migrations_create() {
        let (_dir, store) = crate::store::temp_sqlite_store(1).await;
        let mut listed: Vec<String> = copied_tables().iter().map(|t| t.to_string()).collect();
        listed.extend(NOT_COPIED.iter().map(|t| t.to_string()));
        listed.sort();
        assert_eq!(listed, migrated_tables(&store).await);
    }

    /// A column the migrations add without a field in its entity would be left out of every
    /// copy: this fails first.
    #[tokio::test]
    async fn every_column_of_every_table_has_a_field_in_its_entity() {
        let (_dir, store) = crate::store::temp_sqlite_store(1).await;
        macro_rules! check_each {
            ($($module:ident),* $(,)?) => {
                $(
                    let table = entity::$module::Entity.table_name();
                    let mut fields: Vec<String> =
                        <entity::$module::Entity as EntityTrait>::Column::iter()
                            .map(|c| sea_orm::IdenStatic::as_str(&c).to_string())
                            .collect();
                    fields.sort();
                    assert_eq!(fields, table_columns(&store, table).await, "{table}");
                )*
            };
        }
        entity::for_every_table!(check_each);
    }

    /// Each table comes after every table its foreign keys point at, so that the copy inserts
    /// a row after the row it refers to.
    #[tokio::test]
    async fn the_copy_order_puts_each_table_after_those_it_refers_to() {
        let (_dir, store) = crate::store::temp_sqlite_store(1).await;
        let order = copied_tables();
        for (position, table) in order.iter().enumerate() {
            let rows = store
                .db
                .query_all_raw(Statement::from_string(
                    DbBackend::Sqlite,
                    format!("SELECT \"table\" FROM pragma_foreign_key_list('{table}')"),
                ))
                .await
                .unwrap();
            for row in rows {
                let parent: String = row.try_get_by_index(0).unwrap();
                let parent_position = order.iter().position(|t| *t == parent);
                assert!(
                    parent_position.is_some_and(|p| p < position),
                    "{table} refers to {parent}, which the copy does not fill before it"
                );
            }
        }
    }
}
