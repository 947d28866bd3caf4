//! The webhook delivery queue: the outbox's events fanned out into messages, messages claimed
//! for attempts, and the attempts' results recorded.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use entity::{
    account, scheduled_post, webhook_attempt, webhook_endpoint, webhook_event, webhook_message,
};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter, QuerySelect,
    QueryTrait, Set, Statement, TransactionTrait, Value,
    sea_query::{Expr, OnConflict},
};
// `add` on the attempt counter's expression.
use sea_orm::sea_query::ExprTrait as _;
use uuid::Uuid;

use super::{
    IDS_PER_STATEMENT, PostRecord, Store, placeholder,
    webhooks::{DELIVERED, FAILED, PENDING},
};

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

/// A pass's claim on messages: theirs until `lease_until`, at most `max` of them.
#[derive(Debug, Clone)]
pub struct Claim<'a> {
    pub token: &'a str,
    pub lease_until: DateTime<Utc>,
    pub max: usize,
}

/// What a fan-out did.
#[derive(Debug, Default)]
pub struct FannedOut {
    /// Events taken from the outbox.
    pub events: usize,
    /// The messages created under the pass's claim, each with its endpoint.
    pub claimed: Vec<(webhook_endpoint::Model, webhook_message::Model)>,
    /// Messages due at once were left unclaimed: the claim had no room for them.
    pub unclaimed_due: bool,
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

impl Store {
    /// Queues messages outside a fan-out (a test message).
    pub async fn queue_webhook_messages(
        &self,
        messages: Vec<NewMessage>,
        now: DateTime<Utc>,
    ) -> Result<(), DbErr> {
        insert_messages(&self.db, messages, now, None).await?;
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

    /// Whether a message is due at `now` and not under an attempt: a read, for the same
    /// reason.
    pub async fn webhook_messages_due(&self, now: DateTime<Utc>) -> Result<bool, DbErr> {
        use webhook_message::Column;
        Ok(webhook_message::Entity::find()
            .select_only()
            .column(Column::Id)
            .filter(Column::Status.eq(PENDING))
            .filter(Column::NextAttemptAt.lte(now))
            .filter(
                sea_orm::Condition::any()
                    .add(Column::LeaseUntil.is_null())
                    .add(Column::LeaseUntil.lt(now)),
            )
            .into_tuple::<String>()
            .one(&self.db)
            .await?
            .is_some())
    }

    /// Fans out up to `limit` events: `build` turns each into messages (none when nobody takes
    /// it), which are written, and then the events are removed from the outbox. A message's id
    /// is derived from its event and endpoint, and a message already written is skipped, so an
    /// event fanned out again (a fan-out cut off between its writes, or two instances at once)
    /// still makes each message once. The messages due at once are created under `claim`, as
    /// many as it takes, so that their first attempts need no claim of their own.
    ///
    /// On PostgreSQL this is one transaction, whose row locks let other instances take other
    /// events. On SQLite each statement is a transaction of its own: the one write lock is then
    /// held only while a statement runs, never across the round trips of a longer transaction,
    /// during which the publish path's writes would wait.
    pub async fn fan_out_webhook_events(
        &self,
        limit: u64,
        now: DateTime<Utc>,
        claim: &Claim<'_>,
        build: impl FnOnce(&[webhook_event::Model], &FanOutContext) -> Vec<NewMessage>,
    ) -> Result<FannedOut, DbErr> {
        if self.backend() != DbBackend::Postgres {
            return fan_out_on(&self.db, limit, now, claim, build).await;
        }
        let txn = self.db.begin().await?;
        let fanned = fan_out_on(&txn, limit, now, claim, build).await?;
        txn.commit().await?;
        Ok(fanned)
    }

    /// Claims up to `limit` messages due at `now` for one pass of this instance, until
    /// `lease_until`: a message is claimed by one instance at a time, and taken again only once
    /// its lease has run out (its instance died during the attempt).
    pub async fn claim_webhook_messages(
        &self,
        claim: &Claim<'_>,
        now: DateTime<Utc>,
    ) -> Result<Vec<webhook_message::Model>, DbErr> {
        let backend = self.backend();
        let p = |n| placeholder(backend, n);
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
        // The pick is a materialized CTE, run once: as a subquery of `IN`, PostgreSQL may run
        // it again for each row it updates, and with rows that tie on `next_attempt_at` each run
        // can pick another, so that the update takes more than the limit.
        let sql = format!(
            "WITH picked AS MATERIALIZED (SELECT id FROM webhook_messages WHERE {due} \
             ORDER BY next_attempt_at LIMIT {}{skip_locked}) \
             UPDATE webhook_messages SET claim_token = {}, lease_until = {} \
             WHERE {due} AND id IN (SELECT id FROM picked) RETURNING *",
            p(4),
            p(1),
            p(2)
        );
        let values: Vec<Value> = vec![
            claim.token.into(),
            claim.lease_until.into(),
            now.into(),
            (claim.max as i64).into(),
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

    /// Records attempts and what becomes of their messages and endpoints. A message is only
    /// changed while it is still claimed by the attempt's pass. An endpoint failing since before
    /// `disable_before` is disabled; answers the endpoints disabled.
    ///
    /// Deliveries, the common case, take a few statements per batch: the messages still
    /// claimed are read, their attempts written, then the messages marked delivered and their
    /// endpoints' failure streaks ended. On SQLite these are transactions of their own, so
    /// that the one write lock is never held across round trips (see
    /// [`Store::fan_out_webhook_events`]); one cut off between them leaves the message claimed,
    /// to be attempted again once its lease runs out, and the attempt logged: at least once.
    /// Failures, which may disable an endpoint, are one transaction.
    pub async fn record_webhook_attempts(
        &self,
        records: &[AttemptRecord],
        disable_before: DateTime<Utc>,
    ) -> Result<Vec<Uuid>, DbErr> {
        let (delivered, failed): (Vec<&AttemptRecord>, Vec<&AttemptRecord>) = records
            .iter()
            .partition(|r| r.next == AttemptNext::Delivered);
        if self.backend() == DbBackend::Postgres {
            let txn = self.db.begin().await?;
            record_deliveries(&txn, &delivered).await?;
            let disabled = record_failures(&txn, &failed, disable_before).await?;
            txn.commit().await?;
            return Ok(disabled);
        }
        record_deliveries(&self.db, &delivered).await?;
        if failed.is_empty() {
            return Ok(Vec::new());
        }
        let txn = self.db.begin().await?;
        let disabled = record_failures(&txn, &failed, disable_before).await?;
        txn.commit().await?;
        Ok(disabled)
    }
}

async fn fan_out_on<C: ConnectionTrait>(
    db: &C,
    limit: u64,
    now: DateTime<Utc>,
    claim: &Claim<'_>,
    build: impl FnOnce(&[webhook_event::Model], &FanOutContext) -> Vec<NewMessage>,
) -> Result<FannedOut, DbErr> {
    let backend = db.get_database_backend();
    let skip_locked = if backend == DbBackend::Postgres {
        " FOR UPDATE SKIP LOCKED"
    } else {
        ""
    };
    let sql = format!(
        "SELECT * FROM webhook_events LIMIT {}{skip_locked}",
        placeholder(backend, 1)
    );
    let events = webhook_event::Entity::find()
        .from_raw_sql(Statement::from_sql_and_values(
            backend,
            sql,
            [(limit as i64).into()],
        ))
        .all(db)
        .await?;
    if events.is_empty() {
        return Ok(FannedOut::default());
    }
    let context = fan_out_context(db, &events).await?;
    let messages = build(&events, &context);
    let (claimed, unclaimed_due) = insert_messages(db, messages, now, Some(claim)).await?;
    let ids: Vec<Uuid> = events.iter().map(|e| e.id).collect();
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        webhook_event::Entity::delete_many()
            .filter(webhook_event::Column::Id.is_in(chunk.iter().copied()))
            .exec(db)
            .await?;
    }
    let endpoints: HashMap<Uuid, webhook_endpoint::Model> =
        context.endpoints.into_iter().map(|e| (e.id, e)).collect();
    let claimed = claimed
        .into_iter()
        .filter_map(|m| Some((endpoints.get(&m.endpoint_id)?.clone(), m)))
        .collect();
    Ok(FannedOut {
        events: events.len(),
        claimed,
        unclaimed_due,
    })
}

async fn insert_messages<C: ConnectionTrait>(
    db: &C,
    messages: Vec<NewMessage>,
    now: DateTime<Utc>,
    claim: Option<&Claim<'_>>,
) -> Result<(Vec<webhook_message::Model>, bool), DbErr> {
    let mut room = claim.map_or(0, |c| c.max);
    let mut unclaimed_due = false;
    let rows: Vec<webhook_message::Model> = messages
        .into_iter()
        .map(|m| {
            let due = m.next_attempt_at <= now;
            let claimed = match claim {
                Some(claim) if due && room > 0 => {
                    room -= 1;
                    Some(claim)
                }
                _ => {
                    unclaimed_due |= due;
                    None
                }
            };
            webhook_message::Model {
                id: m.id,
                endpoint_id: m.endpoint_id,
                user_id: m.user_id,
                event_type: m.event_type,
                payload: m.payload,
                occurred_at: m.occurred_at,
                status: PENDING.into(),
                attempts: 0,
                retry_index: 0,
                next_attempt_at: Some(m.next_attempt_at),
                claim_token: claimed.map(|c| c.token.to_string()),
                lease_until: claimed.map(|c| c.lease_until),
                created_at: now,
                updated_at: now,
            }
        })
        .collect();
    // Chunks well under the bounds on bound values (14 columns a row).
    let mut written = HashSet::with_capacity(rows.len());
    for chunk in rows.chunks(256) {
        let chunk: Vec<webhook_message::ActiveModel> =
            chunk.iter().cloned().map(Into::into).collect();
        let mut insert = webhook_message::Entity::insert_many(chunk)
            .on_conflict(
                OnConflict::column(webhook_message::Column::Id)
                    .do_nothing()
                    .to_owned(),
            )
            .into_query();
        insert.returning_col(webhook_message::Column::Id);
        let statement = db.get_database_backend().build(&insert);
        for row in db.query_all_raw(statement).await? {
            written.insert(row.try_get::<String>("", "id")?);
        }
    }
    // A message written before (this event fanned out again) is not this pass's to attempt.
    let mut claimed = Vec::new();
    for message in rows {
        match message.claim_token {
            Some(_) if written.contains(&message.id) => claimed.push(message),
            Some(_) => unclaimed_due = true,
            None => {}
        }
    }
    Ok((claimed, unclaimed_due))
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

/// Records a failed attempt and its message's next state (retried later, or ended); `false`
/// (nothing written) when the message is no longer claimed by the attempt's pass.
async fn record_failure<C: ConnectionTrait>(db: &C, record: &AttemptRecord) -> Result<bool, DbErr> {
    use webhook_message::Column;
    let mut update = webhook_message::Entity::update_many()
        .col_expr(Column::Attempts, Expr::col(Column::Attempts).add(1))
        .col_expr(Column::ClaimToken, Expr::value(None::<String>))
        .col_expr(Column::LeaseUntil, Expr::value(None::<DateTime<Utc>>))
        .col_expr(Column::UpdatedAt, Expr::value(record.attempted_at));
    update = match &record.next {
        AttemptNext::Retry { at, retry_index } => update
            .col_expr(Column::NextAttemptAt, Expr::value(*at))
            .col_expr(Column::RetryIndex, Expr::value(*retry_index)),
        AttemptNext::Delivered | AttemptNext::GiveUp | AttemptNext::Gone { .. } => update
            .col_expr(
                Column::Status,
                Expr::value(if record.next == AttemptNext::Delivered {
                    DELIVERED
                } else {
                    FAILED
                }),
            )
            .col_expr(Column::NextAttemptAt, Expr::value(None::<DateTime<Utc>>)),
    };
    let changed = update
        .filter(Column::Id.eq(record.message_id.as_str()))
        .filter(Column::ClaimToken.eq(record.claim_token.as_str()))
        .exec(db)
        .await?
        .rows_affected;
    Ok(changed > 0)
}

/// Delivered messages still claimed by their attempts' passes: each one's attempt written,
/// the message marked delivered, and its endpoint's failure streak ended.
async fn record_deliveries<C: ConnectionTrait>(
    db: &C,
    records: &[&AttemptRecord],
) -> Result<(), DbErr> {
    use webhook_message::Column;
    let mut by_claim: HashMap<&str, Vec<&AttemptRecord>> = HashMap::new();
    for record in records {
        by_claim
            .entry(record.claim_token.as_str())
            .or_default()
            .push(record);
    }
    for (token, group) in by_claim {
        for chunk in group.chunks(IDS_PER_STATEMENT) {
            let held: HashSet<String> = webhook_message::Entity::find()
                .select_only()
                .column(Column::Id)
                .filter(Column::ClaimToken.eq(token))
                .filter(Column::Id.is_in(chunk.iter().map(|r| r.message_id.as_str())))
                .into_tuple::<String>()
                .all(db)
                .await?
                .into_iter()
                .collect();
            let held: Vec<&AttemptRecord> = chunk
                .iter()
                .copied()
                .filter(|r| held.contains(&r.message_id))
                .collect();
            let Some(at) = held.iter().map(|r| r.attempted_at).max() else {
                continue;
            };
            insert_attempts(db, &held).await?;
            webhook_message::Entity::update_many()
                .col_expr(Column::Status, Expr::value(DELIVERED))
                .col_expr(Column::Attempts, Expr::col(Column::Attempts).add(1))
                .col_expr(Column::ClaimToken, Expr::value(None::<String>))
                .col_expr(Column::LeaseUntil, Expr::value(None::<DateTime<Utc>>))
                .col_expr(Column::NextAttemptAt, Expr::value(None::<DateTime<Utc>>))
                .col_expr(Column::UpdatedAt, Expr::value(at))
                .filter(Column::ClaimToken.eq(token))
                .filter(Column::Id.is_in(held.iter().map(|r| r.message_id.as_str())))
                .exec(db)
                .await?;
            let endpoints: HashSet<Uuid> = held.iter().map(|r| r.endpoint_id).collect();
            webhook_endpoint::Entity::update_many()
                .col_expr(
                    webhook_endpoint::Column::FailingSince,
                    Expr::value(None::<DateTime<Utc>>),
                )
                .filter(webhook_endpoint::Column::Id.is_in(endpoints))
                .filter(webhook_endpoint::Column::FailingSince.is_not_null())
                .exec(db)
                .await?;
        }
    }
    Ok(())
}

/// Failed attempts, one by one: each message retried later or ended, its endpoint's failure
/// streak started or judged. Answers the endpoints disabled.
async fn record_failures<C: ConnectionTrait>(
    db: &C,
    records: &[&AttemptRecord],
    disable_before: DateTime<Utc>,
) -> Result<Vec<Uuid>, DbErr> {
    let mut recorded = Vec::new();
    let mut disabled = Vec::new();
    for record in records.iter().copied() {
        if !record_failure(db, record).await? {
            continue;
        }
        recorded.push(record);
        if let Some(reason) = streak(db, record, disable_before).await? {
            disable_endpoint(db, record.endpoint_id, &reason, record.attempted_at).await?;
            disabled.push(record.endpoint_id);
        }
    }
    insert_attempts(db, &recorded).await?;
    Ok(disabled)
}

async fn insert_attempts<C: ConnectionTrait>(
    db: &C,
    records: &[&AttemptRecord],
) -> Result<(), DbErr> {
    // Chunks well under SQLite's bound on variables (7 columns a row).
    for chunk in records.chunks(128) {
        let rows = chunk.iter().map(|record| webhook_attempt::ActiveModel {
            id: Set(super::new_row_id()),
            message_id: Set(record.message_id.clone()),
            attempted_at: Set(record.attempted_at),
            http_status: Set(record.http_status),
            response: Set(record.response.clone()),
            duration_ms: Set(record.duration_ms),
            error: Set(record.error.clone()),
        });
        webhook_attempt::Entity::insert_many(rows)
            .exec_without_returning(db)
            .await?;
    }
    Ok(())
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
