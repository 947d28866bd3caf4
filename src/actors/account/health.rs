//! An account actor's health: the record the supervisor's roster keeps for the operator view,
//! how the actor keeps it current, and the [`GetHealth`] question.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use actix::prelude::*;
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::{AccountActor, AccountToken};
use crate::{
    actors::limiter::{AccountLimiter, LimiterState},
    domain::plan::Platform,
};

/// The operator view's copy of an actor's health. It lives in the actor's entry of the
/// supervisor's [`Roster`](super::roster::Roster) (one map for addresses and
/// health, not two), and the actor keeps it current at every change, so the view reads it
/// without messaging thousands of actors.
///
/// One per live actor, so it is kept small (the budget is ≤ 2 KB per idle actor): the token (with
/// the name and the token's expiry) and the limiter are the actor's own shared pointers; the state,
/// the limiter's figures and the durations are computed on read; and what an actor that has done
/// nothing yet has at its defaults (queue, publish in flight, back-off, counters, last error) sits
/// in a box that idle actors do not allocate. The counters, the last error and the back-off are
/// kept here only: the actor itself needs none of them to decide anything.
pub struct HealthRecord {
    limiter: Arc<AccountLimiter>,
    token: Arc<AccountToken>,
    started_at: DateTime<Utc>,
    platform: Platform,
    token_valid: bool,
    activity: Option<Box<Activity>>,
}

/// The part of a [`HealthRecord`] that is at its defaults for an actor that has done nothing.
#[derive(Default, PartialEq)]
pub(super) struct Activity {
    queue_depth: usize,
    in_flight: Option<(Uuid, Instant)>,
    pub(super) backoff_until: Option<Instant>,
    pub(super) last_error: Option<(String, DateTime<Utc>)>,
    pub(super) published: u32,
    pub(super) failed: u32,
}

impl HealthRecord {
    /// The record of an actor that has just started, with a usable token.
    pub fn starting(
        platform: Platform,
        token: Arc<AccountToken>,
        limiter: Arc<AccountLimiter>,
        started_at: DateTime<Utc>,
    ) -> Self {
        Self {
            limiter,
            token,
            started_at,
            platform,
            token_valid: true,
            activity: None,
        }
    }

    /// The health as of now (state, durations and the limiter read at call time).
    pub fn health(&self, account_id: Uuid) -> ActorHealth {
        let activity = self.activity.as_deref();
        let in_flight = activity.and_then(|a| a.in_flight);
        let backoff_until = activity.and_then(|a| a.backoff_until);
        let last_error = activity.and_then(|a| a.last_error.as_ref());
        ActorHealth {
            account_id,
            platform: self.platform,
            name: self.token.credentials.display_name.clone(),
            state: actor_state(self.token_valid, in_flight.is_some(), backoff_until),
            queue_depth: activity.map_or(0, |a| a.queue_depth),
            in_flight_submission: in_flight.map(|(id, _)| id),
            in_flight_ms: in_flight.map(|(_, at)| at.elapsed().as_millis() as u64),
            limiter: self.limiter.state(),
            token_valid: self.token_valid,
            token_expires_at: self.token.expires_at,
            last_error: last_error.map(|(e, _)| e.clone()),
            last_error_at: last_error.map(|(_, at)| *at),
            published: activity.map_or(0, |a| a.published.into()),
            failed: activity.map_or(0, |a| a.failed.into()),
            started_at: self.started_at,
        }
    }
}

/// An actor's state from what it holds.
fn actor_state(token_valid: bool, publishing: bool, backoff_until: Option<Instant>) -> ActorState {
    if !token_valid {
        ActorState::TokenInvalid
    } else if publishing {
        ActorState::Publishing
    } else if backoff_until.is_some_and(|until| until > Instant::now()) {
        ActorState::BackingOff
    } else {
        ActorState::Idle
    }
}

/// What the actor is doing (the operator view's `state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActorState {
    Idle,
    Publishing,
    /// Waiting out a rate limit: its limiter is empty or the platform said "too many".
    BackingOff,
    TokenInvalid,
}

impl ActorState {
    pub fn as_str(self) -> &'static str {
        match self {
            ActorState::Idle => "idle",
            ActorState::Publishing => "publishing",
            ActorState::BackingOff => "backing_off",
            ActorState::TokenInvalid => "token_invalid",
        }
    }
}

/// The answer to [`GetHealth`].
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(description = "One account actor in the operator's view.")]
pub struct ActorHealth {
    pub account_id: Uuid,
    pub platform: Platform,
    // Shared with the actor: the view copies a pointer, not the text.
    /// The account's name.
    #[schema(value_type = String)]
    pub name: Arc<str>,
    pub state: ActorState,
    pub queue_depth: usize,
    /// The submission being published and for how long (absent when idle: the view of
    /// 10,000 actors stays small).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight_submission: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight_ms: Option<u64>,
    pub limiter: LimiterState,
    pub token_valid: bool,
    #[schema(required = true)]
    pub token_expires_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error_at: Option<DateTime<Utc>>,
    pub published: u64,
    pub failed: u64,
    pub started_at: DateTime<Utc>,
}

impl AccountActor {
    /// Copies the current health to the actor's record in the roster.
    pub(super) fn post_health(&self) {
        self.update_health(|_| {});
    }

    /// Copies the current health to the actor's record, with `change` made to the part only
    /// the record keeps (counters, last error, back-off). Nothing when the roster no longer
    /// holds this actor: a retired actor finishing what it was given is no longer in the
    /// operator view (its publishes' outcomes are in the history), and a replaced one's record
    /// belongs to its successor.
    pub(super) fn update_health(&self, change: impl FnOnce(&mut Activity)) {
        let Some(mut entry) = self.seat.roster.actors.get_mut(&self.seat.account_id) else {
            return;
        };
        if entry.generation != self.seat.generation {
            return;
        }
        let record = &mut entry.health;
        record.token_valid = self.token_failure().is_none();
        if !Arc::ptr_eq(&record.token, &self.token) {
            record.token = self.token.clone();
        }
        let activity = record.activity.get_or_insert_with(Box::default);
        activity.queue_depth = self.queue_len();
        activity.in_flight = self.in_flight().map(|f| (f.submission_id, f.started));
        change(activity);
        if **activity == Activity::default() {
            record.activity = None;
        }
    }

    pub(super) fn back_off(&self, retry_after: Option<u64>) {
        if let Some(secs) = retry_after {
            let until = Instant::now().checked_add(Duration::from_secs(secs.min(31 * 86_400)));
            self.update_health(|activity| activity.backoff_until = until);
        }
    }

    /// Records the latest error in the health record.
    pub(super) fn note_error(&self, error: String) {
        let at = self.deps().clock.now();
        self.update_health(|activity| activity.last_error = Some((error, at)));
    }

    /// The actor's health, from its record in the roster; `None` once the roster no longer
    /// holds this actor (retired or replaced: the caller asks the current one).
    fn health(&self) -> Option<ActorHealth> {
        let entry = self.seat.roster.actors.get(&self.seat.account_id)?;
        (entry.generation == self.seat.generation)
            .then(|| entry.health.health(self.seat.account_id))
    }
}

/// The actor's health, answered at once even while a publish is in flight; `None` from an
/// actor the roster no longer holds (retired or replaced: ask the current one).
pub struct GetHealth;

impl Message for GetHealth {
    type Result = Option<ActorHealth>;
}

impl Handler<GetHealth> for AccountActor {
    type Result = MessageResult<GetHealth>;

    fn handle(&mut self, _msg: GetHealth, _ctx: &mut Self::Context) -> Self::Result {
        let _span = tracing::trace_span!("account_actor", account = %self.seat.account_id, message = "health").entered();
        MessageResult(self.health())
    }
}
