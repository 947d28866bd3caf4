//! Migrations under a lock on PostgreSQL, so that instances starting together migrate one
//! after the other: the first applies the pending migrations, the others then find none.
//! Without it, two instances on a fresh database both see no migration table and race to
//! create the same tables, and one of them fails to start.
//!
//! The lock is a session-level advisory lock (`pg_advisory_lock`) held on a connection of its
//! own, outside the store's pool: the migration's statements run on the pool (whose size may
//! be one, see `Application::build`), and a process that dies while holding the lock loses its
//! connection and with it the lock, so nobody waits forever for a dead instance. SQLite needs
//! none: one process owns the file, and its writes are serialized anyway.

use sea_orm::{
    DbErr,
    sqlx::{self, Connection, PgConnection, postgres::PgPool},
};
use sha2::{Digest, Sha256};

/// The advisory lock's key for the schema whose notification channel is `channel` (one per
/// schema: tests migrate many schemas of one database at once, and need not wait for each
/// other). Derived from a digest so that no other user of advisory locks picks it by chance.
pub(super) fn lock_key(channel: &str) -> i64 {
    let digest = Sha256::digest(format!("social-service migrations {channel}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// The held lock; [`MigrationLock::release`] gives it back (dropping it unreleased closes its
/// connection, which releases it too).
pub(super) struct MigrationLock {
    connection: PgConnection,
    key: i64,
}

impl MigrationLock {
    /// Waits for the lock on a new connection made with `pool`'s options.
    pub(super) async fn acquire(pool: &PgPool, key: i64) -> Result<Self, DbErr> {
        let options = pool.connect_options().as_ref().clone();
        let mut connection = PgConnection::connect_with(&options)
            .await
            .map_err(|e| DbErr::Custom(format!("migration lock: cannot connect: {e}")))?;
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(key)
            .fetch_one(&mut connection)
            .await
            .map_err(|e| DbErr::Custom(format!("migration lock: {e}")))?;
        if !taken {
            tracing::info!("another instance is migrating the database; waiting for it");
            sqlx::query("SELECT pg_advisory_lock($1)")
                .bind(key)
                .execute(&mut connection)
                .await
                .map_err(|e| DbErr::Custom(format!("migration lock: {e}")))?;
        }
        Ok(Self { connection, key })
    }

    /// Releases the lock and closes its connection. A failure is only logged: closing the
    /// connection (which happens either way) releases a session's advisory locks.
    pub(super) async fn release(mut self) {
        if let Err(error) = sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(self.key)
            .execute(&mut self.connection)
            .await
        {
            tracing::warn!(%error, "migration lock: unlock failed; closing its connection");
        }
        if let Err(error) = self.connection.close().await {
            tracing::debug!(%error, "migration lock: closing its connection failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_schema_has_its_own_stable_key() {
        assert_eq!(lock_key("service_access"), lock_key("service_access"));
        assert_ne!(lock_key("service_access"), lock_key("service_access_t_1"));
    }
}
