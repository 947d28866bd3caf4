//! Webhook endpoints and their delivery log. The delivery queue's queries are in
//! `webhook_queue.rs`; the outbox's event writes (`outbox.rs`) ride in other writes'
//! transactions.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use entity::{webhook_attempt, webhook_endpoint, webhook_event, webhook_message};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect, Set, Statement, TransactionTrait, Value, sea_query::Expr,
};
use uuid::Uuid;

use super::{Page, Store, placeholder};

/// A message's delivery state as stored.
pub const PENDING: &str = "pending";
pub const DELIVERED: &str = "delivered";
pub const FAILED: &str = "failed";

/// An endpoint about to be created.
#[derive(Debug, Clone)]
pub struct NewEndpoint {
    pub id: Uuid,
    pub user_id: Uuid,
    pub url: String,
    pub events: String,
    pub description: Option<String>,
    pub secret_enc: String,
}

/// What a change of an endpoint sets; `None` keeps a value.
#[derive(Debug, Clone, Default)]
pub struct EndpointChange {
    pub url: Option<String>,
    pub events: Option<String>,
    pub description: Option<Option<String>>,
    /// `true` enables it again (its reason and failure streak cleared); `false` disables it.
    pub is_active: Option<bool>,
}

/// The delivery log's view of one message.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub message: webhook_message::Model,
    pub attempts: Vec<webhook_attempt::Model>,
}

/// The operator's view of the delivery queue.
#[derive(Debug, Clone)]
pub struct QueueStats {
    pub queue_depth: u64,
    pub oldest_pending_at: Option<DateTime<Utc>>,
    pub events_waiting: u64,
    pub failing: Vec<webhook_endpoint::Model>,
}

impl Store {
    /// Creates an endpoint unless its user has `max` already; `None` then. One statement, so
    /// that concurrent creations cannot pass the bound together (on PostgreSQL the user's row is
    /// locked first, which orders them).
    pub async fn create_webhook_endpoint(
        &self,
        new: NewEndpoint,
        max: u64,
        now: DateTime<Utc>,
    ) -> Result<Option<webhook_endpoint::Model>, DbErr> {
        let backend = self.backend();
        let p = |n| placeholder(backend, n);
        let txn = self.db.begin().await?;
        if backend == DbBackend::Postgres {
            txn.execute_raw(Statement::from_sql_and_values(
                backend,
                "SELECT id FROM users WHERE id = $1 FOR UPDATE",
                [new.user_id.into()],
            ))
            .await?;
        }
        let sql = format!(
            "INSERT INTO webhook_endpoints (id, user_id, url, events, description, secret_enc, \
             is_active, created_at, updated_at) \
             SELECT {}, {}, {}, {}, {}, {}, {}, {}, {} \
             WHERE (SELECT COUNT(*) FROM webhook_endpoints WHERE user_id = {}) < {}",
            p(1),
            p(2),
            p(3),
            p(4),
            p(5),
            p(6),
            p(7),
            p(8),
            p(8),
            p(2),
            p(9)
        );
        let values: Vec<Value> = vec![
            new.id.into(),
            new.user_id.into(),
            new.url.into(),
            new.events.into(),
            new.description.into(),
            new.secret_enc.into(),
            true.into(),
            now.into(),
            (max as i64).into(),
        ];
        let inserted = txn
            .execute_raw(Statement::from_sql_and_values(backend, sql, values))
            .await?
            .rows_affected();
        txn.commit().await?;
        if inserted == 0 {
            return Ok(None);
        }
        webhook_endpoint::Entity::find_by_id(new.id)
            .one(&self.db)
            .await
    }

    /// A user's endpoints, newest first.
    pub async fn list_webhook_endpoints(
        &self,
        user_id: Uuid,
    ) -> Result<Vec<webhook_endpoint::Model>, DbErr> {
        webhook_endpoint::Entity::find()
            .filter(webhook_endpoint::Column::UserId.eq(user_id))
            .order_by_desc(webhook_endpoint::Column::CreatedAt)
            .order_by_desc(webhook_endpoint::Column::Id)
            .all(&self.db)
            .await
    }

    /// `user_id`'s endpoint `id`; `None` when there is none or it is another user's.
    pub async fn find_webhook_endpoint(
        &self,
        user_id: Uuid,
        id: Uuid,
    ) -> Result<Option<webhook_endpoint::Model>, DbErr> {
        webhook_endpoint::Entity::find_by_id(id)
            .filter(webhook_endpoint::Column::UserId.eq(user_id))
            .one(&self.db)
            .await
    }

    /// Deletes `user_id`'s endpoint `id`; its messages and their attempts go with it (their
    /// foreign keys cascade). One statement, a write from the start: on SQLite a transaction
    /// that read first could not take the write lock while another connection writes.
    pub async fn delete_webhook_endpoint(&self, user_id: Uuid, id: Uuid) -> Result<bool, DbErr> {
        let deleted = webhook_endpoint::Entity::delete_many()
            .filter(webhook_endpoint::Column::Id.eq(id))
            .filter(webhook_endpoint::Column::UserId.eq(user_id))
            .exec(&self.db)
            .await?
            .rows_affected;
        Ok(deleted == 1)
    }

    /// Changes `user_id`'s endpoint `id`; `None` when it is not theirs.
    pub async fn change_webhook_endpoint(
        &self,
        user_id: Uuid,
        id: Uuid,
        change: EndpointChange,
        now: DateTime<Utc>,
    ) -> Result<Option<webhook_endpoint::Model>, DbErr> {
        let Some(found) = self.find_webhook_endpoint(user_id, id).await? else {
            return Ok(None);
        };
        let mut row: webhook_endpoint::ActiveModel = found.into();
        if let Some(url) = change.url {
            row.url = Set(url);
        }
        if let Some(events) = change.events {
            row.events = Set(events);
        }
        if let Some(description) = change.description {
            row.description = Set(description);
        }
        match change.is_active {
            Some(true) => {
                row.is_active = Set(true);
                row.disabled_reason = Set(None);
                row.failing_since = Set(None);
            }
            Some(false) => {
                row.is_active = Set(false);
                row.disabled_reason = Set(Some("Disabled by its owner".into()));
            }
            None => {}
        }
        row.updated_at = Set(now);
        row.update(&self.db).await.map(Some)
    }

    /// Puts a new secret in place, the current one signing beside it until `previous_until`.
    pub async fn rotate_webhook_secret(
        &self,
        id: Uuid,
        secret_enc: String,
        previous_enc: String,
        previous_until: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<(), DbErr> {
        webhook_endpoint::Entity::update_many()
            .col_expr(webhook_endpoint::Column::SecretEnc, Expr::value(secret_enc))
            .col_expr(
                webhook_endpoint::Column::PreviousSecretEnc,
                Expr::value(previous_enc),
            )
            .col_expr(
                webhook_endpoint::Column::PreviousSecretUntil,
                Expr::value(previous_until),
            )
            .col_expr(webhook_endpoint::Column::UpdatedAt, Expr::value(now))
            .filter(webhook_endpoint::Column::Id.eq(id))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    /// A page of the delivery log of `user_id`'s endpoint `endpoint_id`, newest first, with
    /// the total; `None` when the endpoint is not theirs.
    pub async fn webhook_deliveries(
        &self,
        user_id: Uuid,
        endpoint_id: Uuid,
        page: Page,
    ) -> Result<Option<(Vec<Delivery>, u64)>, DbErr> {
        if self
            .find_webhook_endpoint(user_id, endpoint_id)
            .await?
            .is_none()
        {
            return Ok(None);
        }
        let query = webhook_message::Entity::find()
            .filter(webhook_message::Column::EndpointId.eq(endpoint_id));
        let total = query.clone().count(&self.db).await?;
        let messages = query
            .order_by_desc(webhook_message::Column::CreatedAt)
            .order_by_desc(webhook_message::Column::Id)
            .limit(page.limit)
            .offset(page.offset)
            .all(&self.db)
            .await?;
        let ids: Vec<String> = messages.iter().map(|m| m.id.clone()).collect();
        let mut attempts: HashMap<String, Vec<webhook_attempt::Model>> = HashMap::new();
        for attempt in webhook_attempt::Entity::find()
            .filter(webhook_attempt::Column::MessageId.is_in(ids))
            .order_by_asc(webhook_attempt::Column::AttemptedAt)
            .all(&self.db)
            .await?
        {
            attempts
                .entry(attempt.message_id.clone())
                .or_default()
                .push(attempt);
        }
        let deliveries = messages
            .into_iter()
            .map(|message| Delivery {
                attempts: attempts.remove(&message.id).unwrap_or_default(),
                message,
            })
            .collect();
        Ok(Some((deliveries, total)))
    }

    /// Sends message `message_id` of `user_id`'s endpoint `endpoint_id` again at `now`, its
    /// retry schedule started over. False when there is no such message of theirs. A message
    /// whose attempt is under way keeps it (that attempt's result stands).
    pub async fn replay_webhook_message(
        &self,
        user_id: Uuid,
        endpoint_id: Uuid,
        message_id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let owned = webhook_message::Entity::find_by_id(message_id.to_string())
            .filter(webhook_message::Column::EndpointId.eq(endpoint_id))
            .filter(webhook_message::Column::UserId.eq(user_id))
            .one(&self.db)
            .await?
            .is_some();
        if !owned {
            return Ok(false);
        }
        webhook_message::Entity::update_many()
            .col_expr(webhook_message::Column::Status, Expr::value(PENDING))
            .col_expr(webhook_message::Column::RetryIndex, Expr::value(0))
            .col_expr(webhook_message::Column::NextAttemptAt, Expr::value(now))
            .col_expr(webhook_message::Column::UpdatedAt, Expr::value(now))
            .filter(webhook_message::Column::Id.eq(message_id))
            .filter(
                sea_orm::Condition::any()
                    .add(webhook_message::Column::LeaseUntil.is_null())
                    .add(webhook_message::Column::LeaseUntil.lt(now)),
            )
            .exec(&self.db)
            .await?;
        self.outbox_may_have_events();
        Ok(true)
    }

    /// The delivery queue as the operator page shows it.
    pub async fn webhook_queue_stats(&self) -> Result<QueueStats, DbErr> {
        let pending =
            webhook_message::Entity::find().filter(webhook_message::Column::Status.eq(PENDING));
        let queue_depth = pending.clone().count(&self.db).await?;
        let oldest_pending_at = pending
            .order_by_asc(webhook_message::Column::CreatedAt)
            .one(&self.db)
            .await?
            .map(|m| m.created_at);
        let events_waiting = webhook_event::Entity::find().count(&self.db).await?;
        let failing = webhook_endpoint::Entity::find()
            .filter(
                sea_orm::Condition::any()
                    .add(webhook_endpoint::Column::FailingSince.is_not_null())
                    .add(webhook_endpoint::Column::IsActive.eq(false)),
            )
            .order_by_asc(webhook_endpoint::Column::FailingSince)
            .limit(50)
            .all(&self.db)
            .await?;
        Ok(QueueStats {
            queue_depth,
            oldest_pending_at,
            events_waiting,
            failing,
        })
    }
}
