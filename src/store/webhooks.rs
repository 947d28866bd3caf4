//! Webhook endpoints, their messages and attempts: every query of the webhooks, except the
//! outbox's event writes (`outbox.rs`), which ride in other writes' transactions.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use entity::{
    account, scheduled_post, webhook_attempt, webhook_endpoint, webhook_event, webhook_message,
};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect, Set, Statement, TransactionTrait, Value, sea_query::Expr,
};
// `add` on the attempt counter's expression.
use sea_orm::sea_query::ExprTrait as _;
use uuid::Uuid;

use super::{Page, PostRecord, Store};

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

/// A message about to be queued.
#[derive(Debug, Clone)]
pub struct NewMessage {
    pub id: String,
    pub endpoint_id: Uuid,
    pub user_id: Uuid,
    pub event_type: String,
    pub payload: String,
    pub occurred_at: DateTime<Utc>,
    pub next_attempt_at: DateTime<Utc>,
}

/// What the events being fanned out refer to, read in the fan-out's transaction.
#[derive(Debug, Default)]
pub struct FanOutContext {
    /// The active endpoints of the events' users.
    pub endpoints: Vec<webhook_endpoint::Model>,
    /// The history rows of post events, by id.
    pub posts: HashMap<Uuid, PostRecord>,
    /// The scheduled posts of failures with no history row, by id.
    pub scheduled: HashMap<Uuid, scheduled_post::Model>,
    /// The accounts of account events, by id.
    pub accounts: HashMap<Uuid, account::Model>,
}

/// How one attempt ended, to be recorded.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub message_id: String,
    pub endpoint_id: Uuid,
    pub claim_token: String,
    pub attempted_at: DateTime<Utc>,
    pub http_status: Option<i32>,
    pub response: Option<String>,
    pub duration_ms: i32,
    pub error: Option<String>,
    pub next: AttemptNext,
}

/// What becomes of a message after an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptNext {
    Delivered,
    /// Failed; tried again at this time, as attempt `retry_index`.
    Retry {
        at: DateTime<Utc>,
        retry_index: i32,
    },
    /// Failed, and no attempt is left.
    GiveUp,
    /// The endpoint answered `410 Gone`: it is disabled, with this reason.
    Gone {
        reason: String,
    },
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

fn param(backend: DbBackend, n: usize) -> String {
    match backend {
        DbBackend::Postgres => format!("${n}"),
        _ => format!("?{n}"),
    }
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
        let p = |n| param(backend, n);
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

    /// Queues messages outside a fan-out (a test message).
    pub async fn queue_webhook_messages(
        &self,
        messages: Vec<NewMessage>,
        now: DateTime<Utc>,
    ) -> Result<(), DbErr> {
        insert_messages(&self.db, messages, now).await?;
        self.outbox_may_have_events();
        Ok(())
    }

    /// Whether any event waits to be fanned out: a read, so that a look that finds nothing
    /// takes no write lock (on SQLite, the publish path's writer would wait for it).
    pub async fn webhook_events_waiting(&self) -> Result<bool, DbErr> {
        Ok(webhook_event::Entity::find()
            .select_only()
            .column(webhook_event::Column::Id)
            .into_tuple::<Uuid>()
            .one(&self.db)
            .await?
            .is_some())
    }

    /// Whether a message may be due at `now` (one under an attempt counts too): a read, for
    /// the same reason.
    pub async fn webhook_messages_due(&self, now: DateTime<Utc>) -> Result<bool, DbErr> {
        Ok(webhook_message::Entity::find()
            .select_only()
            .column(webhook_message::Column::Id)
            .filter(webhook_message::Column::Status.eq(PENDING))
            .filter(webhook_message::Column::NextAttemptAt.lte(now))
            .into_tuple::<String>()
            .one(&self.db)
            .await?
            .is_some())
    }

    /// Fans out up to `limit` events: each is removed from the outbox and `build` turns it into
    /// messages (none when nobody takes it), all in one transaction. Of several instances each
    /// event goes to the one whose `DELETE` removed it. Answers how many events it took.
    pub async fn fan_out_webhook_events(
        &self,
        limit: u64,
        now: DateTime<Utc>,
        build: impl FnOnce(&[webhook_event::Model], &FanOutContext) -> Vec<NewMessage>,
    ) -> Result<usize, DbErr> {
        let backend = self.backend();
        let txn = self.db.begin().await?;
        let skip_locked = if backend == DbBackend::Postgres {
            " FOR UPDATE SKIP LOCKED"
        } else {
            ""
        };
        let sql = format!(
            "DELETE FROM webhook_events WHERE id IN \
             (SELECT id FROM webhook_events LIMIT {}{skip_locked}) RETURNING *",
            param(backend, 1)
        );
        let events = webhook_event::Entity::find()
            .from_raw_sql(Statement::from_sql_and_values(
                backend,
                sql,
                [(limit as i64).into()],
            ))
            .all(&txn)
            .await?;
        if events.is_empty() {
            return Ok(0);
        }
        let context = fan_out_context(&txn, &events).await?;
        let messages = build(&events, &context);
        insert_messages(&txn, messages, now).await?;
        txn.commit().await?;
        Ok(events.len())
    }

    /// Claims up to `limit` messages due at `now` for one pass of this instance, until
    /// `lease_until`: a message is claimed by one instance at a time, and taken again only once
    /// its lease has run out (its instance died during the attempt).
    pub async fn claim_webhook_messages(
        &self,
        claim_token: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: u64,
    ) -> Result<Vec<webhook_message::Model>, DbErr> {
        let backend = self.backend();
        let p = |n| param(backend, n);
        let skip_locked = if backend == DbBackend::Postgres {
            " FOR UPDATE SKIP LOCKED"
        } else {
            ""
        };
        let due = format!(
            "status = 'pending' AND next_attempt_at <= {now} \
             AND (lease_until IS NULL OR lease_until < {now})",
            now = p(3)
        );
        let sql = format!(
            "UPDATE webhook_messages SET claim_token = {}, lease_until = {} \
             WHERE {due} AND id IN (SELECT id FROM webhook_messages WHERE {due} \
             ORDER BY next_attempt_at LIMIT {}{skip_locked}) RETURNING *",
            p(1),
            p(2),
            p(4)
        );
        let values: Vec<Value> = vec![
            claim_token.into(),
            lease_until.into(),
            now.into(),
            (limit as i64).into(),
        ];
        webhook_message::Entity::find()
            .from_raw_sql(Statement::from_sql_and_values(backend, sql, values))
            .all(&self.db)
            .await
    }

    /// The secrets (sealed) of endpoints `ids`, with their URLs: what an attempt needs.
    pub async fn webhook_endpoints_by_id(
        &self,
        ids: &HashSet<Uuid>,
    ) -> Result<Vec<webhook_endpoint::Model>, DbErr> {
        webhook_endpoint::Entity::find()
            .filter(webhook_endpoint::Column::Id.is_in(ids.iter().copied()))
            .all(&self.db)
            .await
    }

    /// Records attempts and what becomes of their messages and endpoints, in one transaction.
    /// A message is only changed while it is still claimed by the attempt's pass. An endpoint
    /// failing since before `disable_before` is disabled; answers the endpoints disabled.
    pub async fn record_webhook_attempts(
        &self,
        records: &[AttemptRecord],
        disable_before: DateTime<Utc>,
    ) -> Result<Vec<Uuid>, DbErr> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let txn = self.db.begin().await?;
        let mut disabled = Vec::new();
        for record in records {
            if !record_attempt(&txn, record).await? {
                continue;
            }
            if let Some(reason) = streak(&txn, record, disable_before).await? {
                disable_endpoint(&txn, record.endpoint_id, &reason, record.attempted_at).await?;
                disabled.push(record.endpoint_id);
            }
        }
        txn.commit().await?;
        Ok(disabled)
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

async fn insert_messages<C: ConnectionTrait>(
    db: &C,
    messages: Vec<NewMessage>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let rows: Vec<webhook_message::ActiveModel> = messages
        .into_iter()
        .map(|m| webhook_message::ActiveModel {
            id: Set(m.id),
            endpoint_id: Set(m.endpoint_id),
            user_id: Set(m.user_id),
            event_type: Set(m.event_type),
            payload: Set(m.payload),
            occurred_at: Set(m.occurred_at),
            status: Set(PENDING.into()),
            attempts: Set(0),
            retry_index: Set(0),
            next_attempt_at: Set(Some(m.next_attempt_at)),
            claim_token: Set(None),
            lease_until: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        })
        .collect();
    // Chunks well under SQLite's bound on variables (14 columns a row).
    for chunk in rows.chunks(64) {
        webhook_message::Entity::insert_many(chunk.to_vec())
            .exec_without_returning(db)
            .await?;
    }
    Ok(())
}

async fn fan_out_context<C: ConnectionTrait>(
    db: &C,
    events: &[webhook_event::Model],
) -> Result<FanOutContext, DbErr> {
    let users: HashSet<Uuid> = events.iter().map(|e| e.user_id).collect();
    let of_type = |kind: &str| -> Vec<Uuid> {
        events
            .iter()
            .filter(|e| e.event_type == kind)
            .map(|e| e.subject_id)
            .collect()
    };
    let (posts, scheduled) = (of_type("post"), of_type("scheduled"));
    let accounts: Vec<Uuid> = events
        .iter()
        .filter(|e| e.event_type.starts_with("account."))
        .map(|e| e.subject_id)
        .collect();
    let endpoints = webhook_endpoint::Entity::find()
        .filter(webhook_endpoint::Column::UserId.is_in(users))
        .filter(webhook_endpoint::Column::IsActive.eq(true))
        .all(db)
        .await?;
    let posts = entity::post_submission::Entity::find()
        .filter(entity::post_submission::Column::Id.is_in(posts))
        .into_partial_model::<PostRecord>()
        .all(db)
        .await?
        .into_iter()
        .map(|p| (p.id, p))
        .collect();
    let scheduled = scheduled_post::Entity::find()
        .filter(scheduled_post::Column::Id.is_in(scheduled))
        .all(db)
        .await?
        .into_iter()
        .map(|s| (s.id, s))
        .collect();
    let accounts = account::Entity::find()
        .filter(account::Column::Id.is_in(accounts))
        .all(db)
        .await?
        .into_iter()
        .map(|a| (a.id, a))
        .collect();
    Ok(FanOutContext {
        endpoints,
        posts,
        scheduled,
        accounts,
    })
}

/// Records one attempt and its message's next state; false (nothing written) when the message
/// is no longer claimed by the attempt's pass.
async fn record_attempt<C: ConnectionTrait>(db: &C, record: &AttemptRecord) -> Result<bool, DbErr> {
    use webhook_message::Column;
    let mut update = webhook_message::Entity::update_many()
        .col_expr(Column::Attempts, Expr::col(Column::Attempts).add(1))
        .col_expr(Column::ClaimToken, Expr::value(None::<String>))
        .col_expr(Column::LeaseUntil, Expr::value(None::<DateTime<Utc>>))
        .col_expr(Column::UpdatedAt, Expr::value(record.attempted_at));
    update = match &record.next {
        AttemptNext::Delivered => update
            .col_expr(Column::Status, Expr::value(DELIVERED))
            .col_expr(Column::NextAttemptAt, Expr::value(None::<DateTime<Utc>>)),
        AttemptNext::Retry { at, retry_index } => update
            .col_expr(Column::NextAttemptAt, Expr::value(*at))
            .col_expr(Column::RetryIndex, Expr::value(*retry_index)),
        AttemptNext::GiveUp | AttemptNext::Gone { .. } => update
            .col_expr(Column::Status, Expr::value(FAILED))
            .col_expr(Column::NextAttemptAt, Expr::value(None::<DateTime<Utc>>)),
    };
    let changed = update
        .filter(Column::Id.eq(record.message_id.as_str()))
        .filter(Column::ClaimToken.eq(record.claim_token.as_str()))
        .exec(db)
        .await?
        .rows_affected;
    if changed == 0 {
        return Ok(false);
    }
    webhook_attempt::ActiveModel {
        id: Set(super::new_row_id()),
        message_id: Set(record.message_id.clone()),
        attempted_at: Set(record.attempted_at),
        http_status: Set(record.http_status),
        response: Set(record.response.clone()),
        duration_ms: Set(record.duration_ms),
        error: Set(record.error.clone()),
    }
    .insert(db)
    .await?;
    Ok(true)
}

/// Keeps the endpoint's failure streak: a success ends it, a failure starts it (or goes on).
/// Answers the reason to disable the endpoint: it answered `410 Gone`, or has failed since
/// before `disable_before`.
async fn streak<C: ConnectionTrait>(
    db: &C,
    record: &AttemptRecord,
    disable_before: DateTime<Utc>,
) -> Result<Option<String>, DbErr> {
    use webhook_endpoint::Column;
    let endpoint = webhook_endpoint::Entity::find_by_id(record.endpoint_id);
    if record.next == AttemptNext::Delivered {
        webhook_endpoint::Entity::update_many()
            .col_expr(Column::FailingSince, Expr::value(None::<DateTime<Utc>>))
            .filter(Column::Id.eq(record.endpoint_id))
            .filter(Column::FailingSince.is_not_null())
            .exec(db)
            .await?;
        return Ok(None);
    }
    if let AttemptNext::Gone { reason } = &record.next {
        return Ok(Some(reason.clone()));
    }
    let Some(row) = endpoint.one(db).await? else {
        return Ok(None);
    };
    match row.failing_since {
        Some(since) if since < disable_before && row.is_active => Ok(Some(format!(
            "Its deliveries have failed since {} with no success",
            crate::domain::time::iso(since)
        ))),
        Some(_) => Ok(None),
        None => {
            webhook_endpoint::Entity::update_many()
                .col_expr(Column::FailingSince, Expr::value(record.attempted_at))
                .filter(Column::Id.eq(record.endpoint_id))
                .exec(db)
                .await?;
            Ok(None)
        }
    }
}

/// Disables an endpoint: it takes no events, and its pending messages fail.
async fn disable_endpoint<C: ConnectionTrait>(
    db: &C,
    id: Uuid,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    webhook_endpoint::Entity::update_many()
        .col_expr(webhook_endpoint::Column::IsActive, Expr::value(false))
        .col_expr(
            webhook_endpoint::Column::DisabledReason,
            Expr::value(reason),
        )
        .col_expr(webhook_endpoint::Column::UpdatedAt, Expr::value(now))
        .filter(webhook_endpoint::Column::Id.eq(id))
        .exec(db)
        .await?;
    webhook_message::Entity::update_many()
        .col_expr(webhook_message::Column::Status, Expr::value(FAILED))
        .col_expr(
            webhook_message::Column::NextAttemptAt,
            Expr::value(None::<DateTime<Utc>>),
        )
        // Those in flight too: their claim ends here, so their attempt's result is not
        // written and they are not retried.
        .col_expr(
            webhook_message::Column::ClaimToken,
            Expr::value(None::<String>),
        )
        .col_expr(
            webhook_message::Column::LeaseUntil,
            Expr::value(None::<DateTime<Utc>>),
        )
        .col_expr(webhook_message::Column::UpdatedAt, Expr::value(now))
        .filter(webhook_message::Column::EndpointId.eq(id))
        .filter(webhook_message::Column::Status.eq(PENDING))
        .exec(db)
        .await?;
    Ok(())
}
