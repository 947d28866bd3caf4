//! Uploaded media's rows and each user's storage total. A medium's row and its owner's total
//! change in one transaction, each opened by a write: on SQLite a transaction that read first
//! could not take the write lock while another connection writes.

use chrono::{DateTime, Utc};
use entity::{media_usage, medium};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, DbErr, DeleteMany, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect, Statement, TransactionTrait, Value, sea_query::Expr,
};
use uuid::Uuid;

use super::{Page, Store, placeholder};

impl Store {
    /// Records `row` if its owner's files, with it, stay within `quota` bytes; `false` (and
    /// nothing written) when they would not. The check and the count are one conditional
    /// write, so concurrent uploads cannot pass the quota together.
    pub async fn insert_medium(&self, row: medium::Model, quota: u64) -> Result<bool, DbErr> {
        let txn = self.db.begin().await?;
        let backend = txn.get_database_backend();
        let p = |n| placeholder(backend, n);
        let counted = txn
            .query_one_raw(Statement::from_sql_and_values(
                backend,
                format!(
                    "INSERT INTO media_usage (user_id, bytes) SELECT {user}, {size} WHERE {size} <= {quota} \
                     ON CONFLICT (user_id) DO UPDATE SET bytes = media_usage.bytes + excluded.bytes \
                     WHERE media_usage.bytes + excluded.bytes <= {quota} RETURNING bytes",
                    user = p(1),
                    size = p(2),
                    quota = p(3),
                ),
                [
                    Value::from(row.user_id),
                    Value::from(row.size),
                    Value::from(i64::try_from(quota).unwrap_or(i64::MAX)),
                ],
            ))
            .await?;
        if counted.is_none() {
            txn.rollback().await?;
            return Ok(false);
        }
        medium::Entity::insert(medium::ActiveModel::from(row))
            .exec_without_returning(&txn)
            .await?;
        txn.commit().await?;
        Ok(true)
    }

    /// The bytes `user_id`'s files take together.
    pub async fn media_bytes(&self, user_id: Uuid) -> Result<u64, DbErr> {
        let found = media_usage::Entity::find_by_id(user_id)
            .one(&self.db)
            .await?;
        Ok(found.map_or(0, |row| u64::try_from(row.bytes).unwrap_or(0)))
    }

    /// `user_id`'s files, newest first, and how many there are.
    pub async fn list_media(
        &self,
        user_id: Uuid,
        page: Page,
    ) -> Result<(Vec<medium::Model>, u64), DbErr> {
        let query = medium::Entity::find().filter(medium::Column::UserId.eq(user_id));
        let total = query.clone().count(&self.db).await?;
        let rows = query
            .order_by_desc(medium::Column::CreatedAt)
            .order_by_desc(medium::Column::Id)
            .limit(page.limit)
            .offset(page.offset)
            .all(&self.db)
            .await?;
        Ok((rows, total))
    }

    /// Medium `id`, whoever owns it (serving checks its token; users' reads check the owner).
    pub async fn find_medium(&self, id: Uuid) -> Result<Option<medium::Model>, DbErr> {
        medium::Entity::find_by_id(id).one(&self.db).await
    }

    /// Deletes `user_id`'s medium `id` (any owner's with `None`) and takes its size off its
    /// owner's total; the deleted row, or `None` when there was none.
    pub async fn delete_medium(
        &self,
        user_id: Option<Uuid>,
        id: Uuid,
    ) -> Result<Option<medium::Model>, DbErr> {
        self.delete_medium_where(id, |delete| match user_id {
            Some(user_id) => delete.filter(medium::Column::UserId.eq(user_id)),
            None => delete,
        })
        .await
    }

    /// Deletes medium `id` if `narrow` still lets it, and takes its size off its owner's total,
    /// in one transaction.
    async fn delete_medium_where(
        &self,
        id: Uuid,
        narrow: impl FnOnce(DeleteMany<medium::Entity>) -> DeleteMany<medium::Entity>,
    ) -> Result<Option<medium::Model>, DbErr> {
        let txn = self.db.begin().await?;
        let delete = narrow(medium::Entity::delete_many().filter(medium::Column::Id.eq(id)));
        let Some(deleted) = delete.exec_with_returning(&txn).await?.into_iter().next() else {
            txn.rollback().await?;
            return Ok(None);
        };
        let backend = txn.get_database_backend();
        txn.execute_raw(Statement::from_sql_and_values(
            backend,
            format!(
                "UPDATE media_usage SET bytes = CASE WHEN bytes > {size} THEN bytes - {size} ELSE 0 END \
                 WHERE user_id = {user}",
                size = placeholder(backend, 1),
                user = placeholder(backend, 2),
            ),
            [Value::from(deleted.size), Value::from(deleted.user_id)],
        ))
        .await?;
        txn.commit().await?;
        Ok(Some(deleted))
    }

    /// A post used medium `id` at `now`: it is kept until `expires_at` at least.
    pub async fn touch_medium(
        &self,
        id: Uuid,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<(), DbErr> {
        medium::Entity::update_many()
            .col_expr(medium::Column::LastUsedAt, Expr::value(now))
            .col_expr(medium::Column::ExpiresAt, Expr::value(expires_at))
            .filter(medium::Column::Id.eq(id))
            .filter(medium::Column::ExpiresAt.lt(expires_at))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    /// Moves on to `until` the expiry of media whose time is up at `now` but that a scheduled
    /// post still waiting or publishing names (its `request` holds the medium's URL, whose
    /// token is unique); answers how many.
    pub async fn keep_media_of_scheduled_posts(
        &self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<u64, DbErr> {
        let backend = self.db.get_database_backend();
        let contains = match backend {
            DbBackend::Postgres => "strpos(CAST(s.request AS TEXT), m.token) > 0",
            _ => "instr(s.request, m.token) > 0",
        };
        let sql = format!(
            "UPDATE media SET expires_at = {until} WHERE expires_at <= {now} AND id IN (\
             SELECT m.id FROM media m WHERE m.expires_at <= {now} AND EXISTS (\
             SELECT 1 FROM scheduled_posts s WHERE s.user_id = m.user_id \
             AND s.status IN ('scheduled', 'publishing') AND {contains}))",
            until = placeholder(backend, 1),
            now = placeholder(backend, 2),
        );
        let kept = self
            .db
            .execute_raw(Statement::from_sql_and_values(
                backend,
                sql,
                [Value::from(until), Value::from(now)],
            ))
            .await?;
        Ok(kept.rows_affected())
    }

    /// Ids of media whose time is up at `now`, at most `limit`.
    pub async fn expired_media(&self, now: DateTime<Utc>, limit: u64) -> Result<Vec<Uuid>, DbErr> {
        medium::Entity::find()
            .select_only()
            .column(medium::Column::Id)
            .filter(medium::Column::ExpiresAt.lte(now))
            .order_by_asc(medium::Column::ExpiresAt)
            .limit(limit)
            .into_tuple()
            .all(&self.db)
            .await
    }

    /// Deletes medium `id` if its time is still up at `now` (a post may have used it since it
    /// was found), taking its size off its owner's total; the deleted row.
    pub async fn delete_expired_medium(
        &self,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Option<medium::Model>, DbErr> {
        self.delete_medium_where(id, |delete| {
            delete.filter(medium::Column::ExpiresAt.lte(now))
        })
        .await
    }

    /// Ids of every medium created before `before` (the reconciliation's side of the rows).
    pub async fn media_created_before(&self, before: DateTime<Utc>) -> Result<Vec<Uuid>, DbErr> {
        medium::Entity::find()
            .select_only()
            .column(medium::Column::Id)
            .filter(medium::Column::CreatedAt.lt(before))
            .into_tuple()
            .all(&self.db)
            .await
    }

    /// Whether any of `ids` has a row.
    pub async fn media_exist(
        &self,
        ids: &[Uuid],
    ) -> Result<std::collections::HashSet<Uuid>, DbErr> {
        let mut found = std::collections::HashSet::new();
        for chunk in ids.chunks(super::IDS_PER_STATEMENT) {
            let rows: Vec<Uuid> = medium::Entity::find()
                .select_only()
                .column(medium::Column::Id)
                .filter(medium::Column::Id.is_in(chunk.iter().copied()))
                .into_tuple()
                .all(&self.db)
                .await?;
            found.extend(rows);
        }
        Ok(found)
    }
}
