//! Coordination of the instances sharing the database: their membership rows, and per account
//! the publish lease (one holder at a time, fenced by an epoch) and the platform limiter's
//! state (GCRA: one timestamp). Times are the database's clock, in milliseconds since the Unix
//! epoch, so the instances' own clocks may disagree without effect.

use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, Statement, Value};
use uuid::Uuid;

use super::{Store, placeholder};

/// A running instance as its membership row says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRow {
    pub instance: String,
    pub address: String,
    pub started_at: DateTime<Utc>,
    /// Milliseconds since the latest renewal, by the database's clock.
    pub silent_ms: i64,
    /// Account publish leases it holds.
    pub leases: i64,
}

/// What an attempt to take an account's publish lease found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseGrant {
    /// Held now, under this epoch; `taken_over` names the silent instance that held it, and
    /// `token_expires_at` is the account's stored token expiry (a refresh elsewhere moved it).
    Held {
        epoch: i64,
        taken_over: Option<String>,
        token_expires_at: Option<DateTime<Utc>>,
    },
    /// Another live instance holds it.
    Busy { holder: String },
    /// It is free, but the account's platform budget lacks the units asked for; enough are
    /// back after this many milliseconds.
    OverBudget { retry_after_ms: i64 },
}

/// One account's publish lease asked for, with units of its platform budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseAsk {
    pub account_id: Uuid,
    /// The units' GCRA cost in milliseconds (0: none).
    pub cost_ms: i64,
    /// The bucket: capacity × one unit's interval, in milliseconds.
    pub period_ms: i64,
}

/// What an attempt to take units of an account's platform budget found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetGrant {
    Admitted,
    /// Refused; enough units are back after this many milliseconds.
    Refused {
        retry_after_ms: i64,
    },
}

/// The database's clock in milliseconds since the Unix epoch, as an SQL expression.
fn now_ms(backend: DbBackend) -> &'static str {
    match backend {
        DbBackend::Postgres => "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint",
        _ => "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
    }
}

/// Whether the lease in the row aliased `row` is free for `instance` (a placeholder): nobody
/// holds it, `instance` does, or its holder has been silent for `takeover` (a placeholder)
/// milliseconds or more.
fn lease_free(backend: DbBackend, row: &str, instance: &str, takeover: &str) -> String {
    format!(
        "({row}.holder IS NULL OR {row}.holder = {instance} \
         OR NOT EXISTS (SELECT 1 FROM cluster_members m \
           WHERE m.instance = {row}.holder AND m.heartbeat_ms > {now} - {takeover}))",
        now = now_ms(backend),
    )
}

/// The larger of two SQL expressions.
fn greatest(backend: DbBackend, a: &str, b: &str) -> String {
    match backend {
        DbBackend::Postgres => format!("GREATEST({a}, {b})"),
        _ => format!("max({a}, {b})"),
    }
}

impl Store {
    /// Writes this instance's membership row, renewed now.
    pub async fn renew_membership(
        &self,
        instance: &str,
        address: &str,
        started_at: DateTime<Utc>,
    ) -> Result<(), DbErr> {
        let backend = self.backend();
        let p = |n| placeholder(backend, n);
        let sql = format!(
            "INSERT INTO cluster_members (instance, address, started_at, heartbeat_ms) \
             VALUES ({}, {}, {}, {now}) ON CONFLICT (instance) DO UPDATE \
             SET address = excluded.address, heartbeat_ms = excluded.heartbeat_ms",
            p(1),
            p(2),
            p(3),
            now = now_ms(backend),
        );
        let values: Vec<Value> = vec![instance.into(), address.into(), started_at.into()];
        self.db
            .execute_raw(Statement::from_sql_and_values(backend, sql, values))
            .await?;
        Ok(())
    }

    /// Removes this instance's membership row (a clean stop): what it held is free at once.
    pub async fn leave_cluster(&self, instance: &str) -> Result<(), DbErr> {
        let backend = self.backend();
        let sql = format!(
            "DELETE FROM cluster_members WHERE instance = {}",
            placeholder(backend, 1)
        );
        self.db
            .execute_raw(Statement::from_sql_and_values(
                backend,
                sql,
                [instance.into()],
            ))
            .await?;
        Ok(())
    }

    /// Every membership row, live or not, the most recently renewed first; rows silent for
    /// over `forget_after_ms` are deleted first.
    pub async fn members(&self, forget_after_ms: i64) -> Result<Vec<MemberRow>, DbErr> {
        let backend = self.backend();
        let now = now_ms(backend);
        self.db
            .execute_raw(Statement::from_sql_and_values(
                backend,
                format!(
                    "DELETE FROM cluster_members WHERE heartbeat_ms < {now} - {}",
                    placeholder(backend, 1)
                ),
                [forget_after_ms.into()],
            ))
            .await?;
        let rows = self
            .db
            .query_all_raw(Statement::from_string(
                backend,
                format!(
                    "SELECT instance, address, started_at, {now} - heartbeat_ms AS silent_ms, \
                     (SELECT count(*) FROM account_leases l WHERE l.holder = m.instance) AS leases \
                     FROM cluster_members m ORDER BY heartbeat_ms DESC, instance"
                ),
            ))
            .await?;
        rows.iter()
            .map(|row| {
                Ok(MemberRow {
                    instance: row.try_get("", "instance")?,
                    address: row.try_get("", "address")?,
                    started_at: row.try_get("", "started_at")?,
                    silent_ms: row.try_get("", "silent_ms")?,
                    leases: row.try_get("", "leases")?,
                })
            })
            .collect()
    }

    /// Takes, for `instance`, the publish lease of each account `asks` names, each with
    /// `cost_ms` of that account's platform budget (GCRA over `period_ms`, as
    /// [`Store::take_account_budget`]; 0 takes none): both or neither. One statement (per
    /// power-of-two chunk, so that a handful of statement texts serve every batch size) and
    /// one commit for the whole batch; a refusal's reason is read after it. A lease is free
    /// when nobody holds it, `instance` itself does, or its holder's membership has been
    /// silent for `takeover_ms` or more (it is dead, and stopped publishing before then).
    /// Every grant raises the epoch. The accounts must be distinct. PostgreSQL only (the one
    /// store several instances share).
    pub async fn take_account_leases(
        &self,
        instance: &str,
        takeover_ms: i64,
        asks: &[LeaseAsk],
    ) -> Result<Vec<LeaseGrant>, DbErr> {
        let mut grants = Vec::with_capacity(asks.len());
        let mut rest = asks;
        while !rest.is_empty() {
            let (chunk, after) = rest.split_at(1 << rest.len().ilog2());
            rest = after;
            let mut held = self.grant_leases(instance, takeover_ms, chunk).await?;
            for ask in chunk {
                grants.push(match held.remove(&ask.account_id) {
                    Some(grant) => grant,
                    None => self.lease_refusal(instance, takeover_ms, ask).await?,
                });
            }
        }
        Ok(grants)
    }

    /// The grants of one chunk, by account (those refused are absent).
    async fn grant_leases(
        &self,
        instance: &str,
        takeover_ms: i64,
        asks: &[LeaseAsk],
    ) -> Result<std::collections::HashMap<Uuid, LeaseGrant>, DbErr> {
        let backend = self.backend();
        let p = |n| placeholder(backend, n);
        let now = now_ms(backend);
        let rows: Vec<String> = (0..asks.len())
            .map(|i| format!("({}, {}, {})", p(3 * i + 3), p(3 * i + 4), p(3 * i + 5)))
            .collect();
        let ask = |column: &str| {
            format!("(SELECT {column} FROM ask WHERE ask.account_id = l.account_id)")
        };
        let start = greatest(backend, "l.tat_ms", now);
        // The statement's snapshot shows the rows as they were: `before` names the holders
        // the leases were taken from.
        let sql = format!(
            "WITH ask (account_id, cost, period) AS (VALUES {rows}), \
             before AS (SELECT account_id, holder FROM account_leases \
               WHERE account_id IN (SELECT account_id FROM ask)) \
             INSERT INTO account_leases AS l (account_id, holder, epoch, tat_ms) \
             SELECT account_id, {i}, 1, {now} + cost FROM ask WHERE cost <= period \
             ON CONFLICT (account_id) DO UPDATE \
             SET holder = excluded.holder, epoch = l.epoch + 1, tat_ms = {start} + {cost} \
             WHERE {free} AND ({cost} = 0 OR {start} + {cost} - {period} <= {now}) \
             RETURNING l.account_id, l.epoch, \
             (SELECT holder FROM before b WHERE b.account_id = l.account_id) AS previous, \
             (SELECT token_expires_at FROM accounts a WHERE a.id = l.account_id) AS token_expires_at",
            rows = rows.join(", "),
            i = p(1),
            cost = ask("cost"),
            period = ask("period"),
            free = lease_free(backend, "l", &p(1), &p(2)),
        );
        let mut values: Vec<Value> = vec![instance.into(), takeover_ms.into()];
        for ask in asks {
            values.push(ask.account_id.into());
            values.push(ask.cost_ms.into());
            values.push(ask.period_ms.into());
        }
        let rows = self
            .db
            .query_all_raw(Statement::from_sql_and_values(backend, sql, values))
            .await?;
        rows.iter()
            .map(|row| {
                let previous: Option<String> = row.try_get("", "previous")?;
                Ok((
                    row.try_get::<Uuid>("", "account_id")?,
                    LeaseGrant::Held {
                        epoch: row.try_get("", "epoch")?,
                        taken_over: previous.filter(|holder| holder != instance),
                        token_expires_at: row.try_get("", "token_expires_at")?,
                    },
                ))
            })
            .collect()
    }

    /// Why an ask was refused: a live holder, or (the lease being free) the budget.
    async fn lease_refusal(
        &self,
        instance: &str,
        takeover_ms: i64,
        ask: &LeaseAsk,
    ) -> Result<LeaseGrant, DbErr> {
        let backend = self.backend();
        let p = |n| placeholder(backend, n);
        let now = now_ms(backend);
        let start = greatest(backend, "l.tat_ms", now);
        let sql = format!(
            "SELECT holder, {free} AS free, {start} + {c} - {period} - {now} AS wait_ms \
             FROM account_leases l WHERE account_id = {a}",
            free = lease_free(backend, "l", &p(1), &p(2)),
            a = p(3),
            c = p(4),
            period = p(5),
        );
        let values: Vec<Value> = vec![
            instance.into(),
            takeover_ms.into(),
            ask.account_id.into(),
            ask.cost_ms.into(),
            ask.period_ms.into(),
        ];
        let why = self
            .db
            .query_one_raw(Statement::from_sql_and_values(backend, sql, values))
            .await?;
        let seen = match why {
            None => None,
            Some(row) => Some(Refused {
                holder: row.try_get("", "holder")?,
                free: row.try_get("", "free")?,
                wait_ms: row.try_get("", "wait_ms")?,
            }),
        };
        Ok(refusal(ask, seen))
    }

    /// Gives back the leases `instance` holds of these (account, epoch) pairs, unless a later
    /// epoch has taken one meanwhile: one statement per chunk (powers of two, so that a
    /// handful of statement texts serve every batch size).
    pub async fn release_account_leases(
        &self,
        instance: &str,
        leases: &[(Uuid, i64)],
    ) -> Result<(), DbErr> {
        let backend = self.backend();
        let mut rest = leases;
        while !rest.is_empty() {
            let (chunk, after) = rest.split_at(1 << rest.len().ilog2());
            rest = after;
            let pairs: Vec<String> = (0..chunk.len())
                .map(|i| {
                    format!(
                        "({}, {})",
                        placeholder(backend, 2 * i + 2),
                        placeholder(backend, 2 * i + 3)
                    )
                })
                .collect();
            let sql = format!(
                "UPDATE account_leases SET holder = NULL \
                 WHERE holder = {} AND (account_id, epoch) IN (VALUES {})",
                placeholder(backend, 1),
                pairs.join(", ")
            );
            let mut values: Vec<Value> = vec![instance.into()];
            for (account_id, epoch) in chunk {
                values.push((*account_id).into());
                values.push((*epoch).into());
            }
            self.db
                .execute_raw(Statement::from_sql_and_values(backend, sql, values))
                .await?;
        }
        Ok(())
    }

    /// Takes `cost_ms` of the account's budget (GCRA: units × the interval one unit takes to
    /// come back) if the bucket of `period_ms` holds it; one statement, so instances sharing
    /// the database share the budget exactly.
    pub async fn take_account_budget(
        &self,
        account_id: Uuid,
        cost_ms: i64,
        period_ms: i64,
    ) -> Result<BudgetGrant, DbErr> {
        let backend = self.backend();
        let p = |n| placeholder(backend, n);
        let now = now_ms(backend);
        let start = greatest(backend, "account_leases.tat_ms", now);
        let sql = format!(
            "INSERT INTO account_leases (account_id, holder, epoch, tat_ms) \
             SELECT {a}, NULL, 0, {now} + {c} WHERE {c} <= {period} \
             ON CONFLICT (account_id) DO UPDATE SET tat_ms = {start} + {c} \
             WHERE {start} + {c} - {period} <= {now} \
             RETURNING tat_ms",
            a = p(1),
            c = p(2),
            period = p(3),
        );
        let values: Vec<Value> = vec![account_id.into(), cost_ms.into(), period_ms.into()];
        let admitted = self
            .db
            .query_one_raw(Statement::from_sql_and_values(backend, sql, values))
            .await?
            .is_some();
        if admitted {
            return Ok(BudgetGrant::Admitted);
        }
        let start = greatest(backend, "tat_ms", now);
        let wait = self
            .db
            .query_one_raw(Statement::from_sql_and_values(
                backend,
                format!(
                    "SELECT {start} + {c} - {period} - {now} AS wait_ms \
                     FROM account_leases WHERE account_id = {a}",
                    a = p(1),
                    c = p(2),
                    period = p(3),
                ),
                [account_id.into(), cost_ms.into(), period_ms.into()],
            ))
            .await?
            .map(|row| row.try_get::<i64>("", "wait_ms"))
            .transpose()?
            .unwrap_or(period_ms);
        Ok(BudgetGrant::Refused {
            retry_after_ms: wait.max(1),
        })
    }
}

/// Claims of instances gone silent, handed back by [`Store::expire_silent_claims`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SilentClaims {
    pub scheduled: u64,
    pub checks: u64,
    pub webhooks: u64,
}

impl Store {
    /// Ends, as of `now`, the leases of claims held by instances whose membership has been
    /// silent for `takeover_ms` or more: scheduled posts being published, checks of
    /// unconfirmed publishes, webhook messages being delivered. Their usual takers (the
    /// settlement of expired claims, the reconciler, the delivery pass) then take them over
    /// as they would a lease that ran out, with the fences they already have.
    pub async fn expire_silent_claims(
        &self,
        now: DateTime<Utc>,
        takeover_ms: i64,
    ) -> Result<SilentClaims, DbErr> {
        let backend = self.backend();
        let p = |n| placeholder(backend, n);
        let live = |claimant: &str| {
            format!(
                "NOT EXISTS (SELECT 1 FROM cluster_members m WHERE m.heartbeat_ms > {now_ms} - {t} \
                 AND {claimant})",
                now_ms = now_ms(backend),
                t = p(3),
            )
        };
        let statements = [
            format!(
                "UPDATE scheduled_posts SET lease_until = {past} WHERE status = 'publishing' \
                 AND claimed_by IS NOT NULL AND lease_until >= {now} AND {}",
                live("m.instance = scheduled_posts.claimed_by"),
                past = p(1),
                now = p(2),
            ),
            format!(
                "UPDATE post_submissions SET check_lease_until = {past} \
                 WHERE status = 'unconfirmed' AND check_claimed_by IS NOT NULL \
                 AND check_lease_until >= {now} AND {}",
                live("m.instance = post_submissions.check_claimed_by"),
                past = p(1),
                now = p(2),
            ),
            // A delivery pass's claim token starts with its instance and a space.
            format!(
                "UPDATE webhook_messages SET lease_until = {past} WHERE status = 'pending' \
                 AND claim_token IS NOT NULL AND lease_until >= {now} AND {}",
                live(
                    "substr(webhook_messages.claim_token, 1, length(m.instance) + 1) = m.instance || ' '"
                ),
                past = p(1),
                now = p(2),
            ),
        ];
        let past = now - chrono::Duration::seconds(1);
        let mut counts = [0; 3];
        for (sql, count) in statements.into_iter().zip(counts.iter_mut()) {
            let values: Vec<Value> = vec![past.into(), now.into(), takeover_ms.into()];
            *count = self
                .db
                .execute_raw(Statement::from_sql_and_values(backend, sql, values))
                .await?
                .rows_affected();
        }
        Ok(SilentClaims {
            scheduled: counts[0],
            checks: counts[1],
            webhooks: counts[2],
        })
    }
}

impl Store {
    /// An immediate publish's history row whose instance (`post_submissions.publisher`) has not
    /// renewed its membership for `takeover_ms`: nobody runs it any more.
    pub(super) fn run_by_a_silent_instance(&self, takeover_ms: i64) -> sea_orm::Condition {
        let backend = self.backend();
        let sql = format!(
            "post_submissions.publisher IS NOT NULL AND NOT EXISTS (SELECT 1 FROM cluster_members m \
             WHERE m.instance = post_submissions.publisher AND m.heartbeat_ms > {} - {takeover_ms})",
            now_ms(backend)
        );
        sea_orm::Condition::all().add(sea_orm::sea_query::Expr::cust(sql))
    }
}

/// A refused ask's lease row, read just after the refusal.
struct Refused {
    holder: Option<String>,
    free: bool,
    wait_ms: i64,
}

/// Why an ask was refused, from its lease row as read after the refusal (`None`: no row).
/// The row may have changed in between (its holder gave it back): only a budget that is
/// still short refuses as over budget; anything else is busy, and the ask is made again.
fn refusal(ask: &LeaseAsk, seen: Option<Refused>) -> LeaseGrant {
    match seen {
        // No row, and the ask was not inserted: the cost exceeds the whole budget.
        None if ask.cost_ms > ask.period_ms => LeaseGrant::OverBudget {
            retry_after_ms: ask.period_ms.max(1),
        },
        Some(Refused {
            free: true,
            wait_ms,
            ..
        }) if wait_ms > 0 => LeaseGrant::OverBudget {
            retry_after_ms: wait_ms,
        },
        seen => LeaseGrant::Busy {
            holder: seen.and_then(|row| row.holder).unwrap_or_default(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(cost_ms: i64, period_ms: i64) -> LeaseAsk {
        LeaseAsk {
            account_id: Uuid::nil(),
            cost_ms,
            period_ms,
        }
    }

    fn row(holder: &str, free: bool, wait_ms: i64) -> Option<Refused> {
        Some(Refused {
            holder: Some(holder.into()),
            free,
            wait_ms,
        })
    }

    /// A holder that gave the lease back between the refusal and its reading leaves a free
    /// lease with budget to spare: that is asked again, never answered as a rate limit.
    #[test]
    fn a_lease_freed_after_its_refusal_is_asked_again_not_over_budget() {
        let freed = refusal(&ask(18_000, 3_600_000), row("other", true, -3_000));
        assert_eq!(
            freed,
            LeaseGrant::Busy {
                holder: "other".into()
            }
        );
        let just_enough = refusal(&ask(18_000, 3_600_000), row("other", true, 0));
        assert!(matches!(just_enough, LeaseGrant::Busy { .. }));
    }

    #[test]
    fn a_free_lease_short_of_budget_says_when_it_is_back() {
        let short = refusal(&ask(18_000, 3_600_000), row("me", true, 2_500));
        assert_eq!(
            short,
            LeaseGrant::OverBudget {
                retry_after_ms: 2_500
            }
        );
    }

    #[test]
    fn a_lease_held_elsewhere_is_busy_whatever_the_budget() {
        let held = refusal(&ask(18_000, 3_600_000), row("other", false, 2_500));
        assert_eq!(
            held,
            LeaseGrant::Busy {
                holder: "other".into()
            }
        );
    }

    #[test]
    fn a_cost_beyond_the_whole_budget_is_over_budget_and_a_vanished_row_is_asked_again() {
        let impossible = refusal(&ask(5_000, 1_000), None);
        assert_eq!(
            impossible,
            LeaseGrant::OverBudget {
                retry_after_ms: 1_000
            }
        );
        let vanished = refusal(&ask(18_000, 3_600_000), None);
        assert_eq!(
            vanished,
            LeaseGrant::Busy {
                holder: String::new()
            }
        );
    }
}
