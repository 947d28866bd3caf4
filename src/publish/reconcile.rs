//! Publishes the platform was still processing at our deadline (a facebook video still
//! `processing`, a tiktok post in `PROCESSING_*`, a youtube video still `uploaded`, an instagram,
//! threads or x container/media not ready yet). Such a publish is not a failure: the platform may
//! still publish it (or, before the final call, we still can), so a client that retried a
//! "failed" one could post twice. Instead its history row is `unconfirmed` with what is left to do
//! ([`Reconcile`]), and it is checked again in the background until the platform says:
//!
//! - the reconciler actor finds due checks and claims each with a conditional update (one
//!   instance at a time, across instances; a claim that lapsed is taken over);
//! - it asks the submission's account actor to run one check ([`run_check`]), which goes through
//!   the account's limiter and token state and runs in a future spawned by that actor;
//! - the check looks once ([`platforms::resume`]): still processing → the next check is due one
//!   interval later; finished → `published` with the post id (for instagram, threads and x the
//!   check first makes the final call itself, marked with `before_final` under the check claim,
//!   exactly once); failed → `failed` with the platform's words;
//! - past `publishing.unconfirmed_check_horizon_secs` it stops checking ([`give_up`]).
//!
//! A scheduled post whose attempt is being checked stays `publishing` and ends with it.

use entity::post_submission::SubmissionStatus;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use entity::post_submission;

use serde_json::{Value, json};
use uuid::Uuid;

use super::run::PublishDeps;
use crate::{
    error::ErrorCode,
    platforms::{self, AccountCredentials, PlatformContext, PlatformError, Published},
    publish::steps::{CheckFence, Reconcile, ReservedCounter, StepRecorder},
    store::{AttemptEnd, Store},
};

/// The history's message once the service stopped checking a post the platform may still
/// publish.
pub const STOPPED_CHECKING_MESSAGE: &str = "The platform was still processing this post when the service stopped checking it, so whether it was published is unconfirmed: check the platform before posting it again";

/// The history's message when a continuation's own final call may have been cut off (the
/// instance making it stopped).
pub const FINAL_CALL_CUT_OFF_MESSAGE: &str = "The service stopped while this post's final publish call was in progress, so whether it was published is unconfirmed: check the platform before posting it again";

/// The history's message while a cut-off final call is looked for on the platform.
pub const LOOKING_UP_MESSAGE: &str = "The service stopped while this post's final publish call was in progress; the platform is being asked whether it was published";

/// The history's message when the platform shows no post from a cut-off final call.
pub const NOT_OUT_MESSAGE: &str = "The service stopped while this post's final publish call was in progress, and the platform shows no such post: it was not published";

/// One check, as the reconciler hands it to the account actor.
#[derive(Debug, Clone)]
pub struct CheckSpec {
    pub submission: post_submission::Model,
    /// The instance holding the check claim.
    pub claimant: String,
    /// How long the claim holds (renewed before a final call).
    pub lease: chrono::Duration,
}

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckOutcome {
    Published,
    Failed,
    /// Still processing (or the platform could not be asked): checked again later.
    StillProcessing,
    /// No more checks; the post stays `unconfirmed`.
    Unconfirmed,
    /// The claim was lost to another instance (this one was presumed dead); nothing written.
    Lost,
}

/// What the account actor learns from a check.
pub struct CheckReport {
    pub outcome: CheckOutcome,
    /// A platform failure that says something about the account (dead token, rate limit).
    pub error: Option<PlatformError>,
}

/// How a check resolves the row.
enum Resolution {
    Published(Published),
    Failed {
        code: String,
        message: String,
    },
    Unconfirmed {
        message: String,
    },
    /// Nothing went out (a cut-off final call the platform shows no post of): the history
    /// row is failed, and a scheduled post is given another attempt.
    NotOut,
    Later,
}

/// Runs one check of a claimed unconfirmed submission and records what it found. Called by the
/// account actor from a spawned future, like a publish.
pub async fn run_check(
    deps: Arc<PublishDeps>,
    credentials: AccountCredentials,
    spec: CheckSpec,
) -> CheckReport {
    let row = &spec.submission;
    let store = &deps.store;
    let record = match row
        .reconcile
        .clone()
        .map(serde_json::from_value::<Reconcile>)
    {
        Some(Ok(record)) => record,
        _ => {
            // Without it nothing more can be learned; say what is known.
            let outcome = resolve(
                &deps,
                row,
                &spec.claimant,
                None,
                Resolution::Unconfirmed {
                    message: STOPPED_CHECKING_MESSAGE.into(),
                },
            )
            .await;
            return CheckReport {
                outcome,
                error: None,
            };
        }
    };
    let steps = StepRecorder::resume(
        store.clone(),
        row.id,
        row.steps.clone(),
        CheckFence {
            claimant: spec.claimant.clone(),
            lease: spec.lease,
            clock: deps.clock.clone(),
        },
    )
    .with_clock(deps.clock.clone());
    let ours_final = !record.pending.final_call_made();
    // A continuation whose own final call started in an earlier check that never reported
    // (its instance stopped): it may have gone out, and it is never made twice.
    if ours_final && steps.final_started() {
        let outcome = resolve(
            &deps,
            row,
            &spec.claimant,
            Some(&record),
            Resolution::Unconfirmed {
                message: FINAL_CALL_CUT_OFF_MESSAGE.into(),
            },
        )
        .await;
        return CheckReport {
            outcome,
            error: None,
        };
    }
    let http = deps.http();
    let ctx = PlatformContext {
        http: &http,
        media: &deps.media,
        config: &deps.platforms,
        account: &credentials,
        steps: &steps,
    };
    let span = tracing::info_span!("publish_check", submission = %row.id, platform = %row.platform, object = %record.pending.object_id());
    let result =
        tracing::Instrument::instrument(platforms::resume(&ctx, &record.pending), span).await;
    let looked_up = record.pending.cut_off();
    let (resolution, error) = match result {
        Ok(Some(published)) => (Resolution::Published(published), None),
        // A lookup's answer, read in full: the post is not on the platform.
        Ok(None) if looked_up => (Resolution::NotOut, None),
        Ok(None) => (Resolution::Later, None),
        Err(error) if looked_up => (judge_lookup(&error), Some(error)),
        Err(error) => (judge(&error, ours_final, &steps), Some(error)),
    };
    let outcome = resolve(&deps, row, &spec.claimant, Some(&record), resolution).await;
    CheckReport { outcome, error }
}

/// What a failed check means for the post.
fn judge(error: &PlatformError, ours_final: bool, steps: &StepRecorder) -> Resolution {
    let final_started = ours_final && steps.final_started();
    if final_started {
        // The continuation's own final call failed: as in a publish, only a definite refusal
        // means nothing went out (a thread already partly out is out).
        let posted = !steps.ids(crate::platforms::StepKind::Post).is_empty();
        return if error.outcome_unknown() || posted {
            Resolution::Unconfirmed {
                message: format!(
                    "{}: the final publish call failed without a definite answer, so whether it was published is unconfirmed: check the platform before posting it again",
                    error
                ),
            }
        } else {
            failed(error.clone())
        };
    }
    match error {
        // Failures of asking, not of the post: ask again at the next check.
        PlatformError::Transient(_)
        | PlatformError::RateLimited { .. }
        | PlatformError::TokenExpired(_)
        | PlatformError::TokenInvalid(_)
        | PlatformError::Permission(_)
        | PlatformError::StillProcessing(_) => Resolution::Later,
        // The platform's own words about the object: it will not be published.
        PlatformError::ProcessingFailed(_)
        | PlatformError::MediaFetch(_)
        | PlatformError::CarouselFailed(_) => failed(error.clone()),
        // Any other refusal. Before our final call nothing went out; after the platform's
        // (facebook, tiktok, youtube) it no longer tells us, so the outcome stays unknown.
        // A vanished object says as little: a container never published is not out; a video
        // the platform no longer shows may have been published and removed.
        PlatformError::Rejected(message) | PlatformError::NotFound(message) => {
            if ours_final {
                failed(error.clone())
            } else {
                Resolution::Unconfirmed {
                    message: format!(
                        "The platform no longer answers about this post ({message}), so whether it was published is unconfirmed: check the platform before posting it again"
                    ),
                }
            }
        }
    }
}

/// What a failed lookup of a cut-off final call means: not being able to ask, or a completed
/// upload still processing, means asking again; the platform failing the post means it did not
/// go out; anything else, a missing account, listing or upload session included (it proves
/// nothing about the post), leaves the outcome unknown. Only a listing read in full, or an
/// upload session holding part of the file, says nothing went out.
fn judge_lookup(error: &PlatformError) -> Resolution {
    match error {
        PlatformError::Transient(_)
        | PlatformError::RateLimited { .. }
        | PlatformError::TokenExpired(_)
        | PlatformError::TokenInvalid(_)
        | PlatformError::Permission(_)
        | PlatformError::StillProcessing(_) => Resolution::Later,
        PlatformError::ProcessingFailed(_) => failed(error.clone()),
        other => Resolution::Unconfirmed {
            message: format!(
                "{FINAL_CALL_CUT_OFF_MESSAGE} (the platform could not be asked: {other})"
            ),
        },
    }
}

/// Hands a publish whose final call was cut off (its instance stopped before the answer) to
/// the reconciler, which asks the platform whether it went out ([`cut_off_check`]). False when
/// the platform cannot be asked, part of the post is known to be out already, or the row is no
/// longer `publishing`.
pub async fn look_up_cut_off(
    store: &Store,
    publishing: &crate::config::PublishingConfig,
    row: &post_submission::Model,
    now: DateTime<Utc>,
) -> Result<bool, sea_orm::DbErr> {
    let Some(pending) = cut_off_check(row) else {
        return Ok(false);
    };
    let record = Reconcile {
        pending,
        fields: json!({}),
        reserved_counter: x_post_counter(store, row).await?,
    };
    let until = now + chrono::Duration::seconds(publishing.unconfirmed_check_horizon_secs as i64);
    let Ok(value) = serde_json::to_value(&record) else {
        return Ok(false);
    };
    store
        .mark_submission_pending(
            row.id,
            value,
            None,
            ErrorCode::PublishUnconfirmed.as_str(),
            LOOKING_UP_MESSAGE,
            now,
            until,
            now,
        )
        .await
}

/// How the platform can be asked about a final call cut off mid-flight:
/// - tiktok, when the final call was the last chunk of an upload TikTok had already given a
///   `publish_id` (recorded before the call): the post's status, as for one still processing;
/// - youtube: the upload session (recorded before the call) says whether the upload completed
///   ([`platforms::Pending::YoutubeUpload`]);
/// - facebook, instagram, threads and x: the account's newest posts searched for the post's
///   text (a thread's first part; see [`platforms::can_look_up`]).
///
/// `None` when it cannot be asked: no text to look for, a platform whose posts cannot be told
/// apart, or part of the post already out (a thread is never sent again from its start).
fn cut_off_check(row: &post_submission::Model) -> Option<platforms::Pending> {
    use crate::platforms::StepKind;
    let steps = row.steps.as_ref();
    let recorded =
        |kind: StepKind| steps.and_then(|steps| steps.steps.iter().find(|step| step.kind == kind));
    if recorded(StepKind::Post).is_some() {
        return None;
    }
    match row.platform {
        entity::platform::Platform::Tiktok => {
            return recorded(StepKind::PublishId).map(|step| platforms::Pending::TiktokPublish {
                publish_id: step.id.clone(),
            });
        }
        entity::platform::Platform::Youtube => {
            return recorded(StepKind::UploadSession).map(|step| {
                platforms::Pending::YoutubeUpload {
                    session: step.id.clone(),
                }
            });
        }
        _ => {}
    }
    // The first post's text (a thread's first part), as its final call sent it.
    let text = match &row.content["text"] {
        Value::String(text) => Some(text.as_str()),
        Value::Array(parts) => parts.first().and_then(Value::as_str),
        _ => None,
    }?;
    let has_media = row.content["media_urls"]
        .as_array()
        .is_some_and(|media| !media.is_empty());
    if text.trim().is_empty() || !platforms::can_look_up(row.platform, text, has_media) {
        return None;
    }
    Some(platforms::Pending::Lookup {
        platform: row.platform,
        text: text.to_string(),
        since: steps
            .and_then(|steps| steps.final_started_at)
            .unwrap_or(row.created_at),
    })
}

/// The monthly x post count an x publish reserved (that of the month its history row was
/// written in): given back if the lookup finds nothing went out.
async fn x_post_counter(
    store: &Store,
    row: &post_submission::Model,
) -> Result<Option<ReservedCounter>, sea_orm::DbErr> {
    if row.platform != entity::platform::Platform::X {
        return Ok(None);
    }
    Ok(store.find_user(row.user_id).await?.map(|user| {
        let period = crate::usage::usage_period(user.created_at, row.created_at);
        ReservedCounter {
            user_id: row.user_id,
            key: format!("x-posts:{}", period.key()),
        }
    }))
}

/// Gives back the x post count the publish reserved: nothing went out.
async fn give_back_counter(store: &Store, record: Option<&Reconcile>) {
    if let Some(counter) = record.and_then(|r| r.reserved_counter.as_ref())
        && let Err(e) = store.release_call(counter.user_id, &counter.key).await
    {
        tracing::error!(error = %e, "cannot give back a reserved post count");
    }
}

fn failed(error: PlatformError) -> Resolution {
    let api_error = error.into_api_error();
    let message = match &api_error.details {
        Some(details) => format!("{}: {details}", api_error.message),
        None => api_error.message.clone(),
    };
    Resolution::Failed {
        code: api_error.code.as_str().to_string(),
        message,
    }
}

/// The service stops checking a submission past its horizon: before our own final call nothing
/// was published and nothing will be (`failed`); after the platform's it stays `unconfirmed`.
pub async fn give_up(
    deps: &PublishDeps,
    row: &post_submission::Model,
    claimant: &str,
) -> CheckOutcome {
    let record = row
        .reconcile
        .clone()
        .and_then(|r| serde_json::from_value::<Reconcile>(r).ok());
    let resolution = match &record {
        Some(record) if record.pending.cut_off() => Resolution::Unconfirmed {
            message: FINAL_CALL_CUT_OFF_MESSAGE.into(),
        },
        Some(record) if !record.pending.final_call_made() => {
            let steps_final = row.steps.as_ref().is_some_and(|s| s.final_started);
            if steps_final {
                Resolution::Unconfirmed {
                    message: FINAL_CALL_CUT_OFF_MESSAGE.into(),
                }
            } else {
                Resolution::Failed {
                    code: ErrorCode::VideoProcessingFailed.as_str().to_string(),
                    message: format!(
                        "The platform did not finish processing {} before the service stopped checking; the post was not published",
                        record.pending.object_id()
                    ),
                }
            }
        }
        _ => Resolution::Unconfirmed {
            message: STOPPED_CHECKING_MESSAGE.into(),
        },
    };
    resolve(deps, row, claimant, record.as_ref(), resolution).await
}

/// Writes a check's resolution: the history row (conditional on the claim), then the scheduled
/// post it is an attempt of. Database failures are logged; the claim lapses and the check is
/// made again.
async fn resolve(
    deps: &PublishDeps,
    row: &post_submission::Model,
    claimant: &str,
    record: Option<&Reconcile>,
    resolution: Resolution,
) -> CheckOutcome {
    let now = deps.clock.now();
    let store = &deps.store;
    let written = match &resolution {
        Resolution::Later => {
            let interval = chrono::Duration::milliseconds(
                deps.publishing.unconfirmed_check_interval_ms as i64,
            );
            store.release_check(row.id, claimant, now + interval).await
        }
        Resolution::Published(published) => {
            let fields = published_fields(record.map(|r| &r.fields), published);
            store
                .resolve_check_published(row.id, claimant, &published.post_id, fields, now)
                .await
        }
        Resolution::Failed { code, message } => {
            store
                .resolve_check(
                    row.id,
                    claimant,
                    SubmissionStatus::Failed,
                    code,
                    message,
                    now,
                )
                .await
        }
        Resolution::Unconfirmed { message } => {
            store
                .resolve_check(
                    row.id,
                    claimant,
                    SubmissionStatus::Unconfirmed,
                    ErrorCode::PublishUnconfirmed.as_str(),
                    message,
                    now,
                )
                .await
        }
        Resolution::NotOut => {
            give_back_counter(store, record).await;
            store
                .resolve_check(
                    row.id,
                    claimant,
                    SubmissionStatus::Failed,
                    ErrorCode::ServiceUnavailable.as_str(),
                    NOT_OUT_MESSAGE,
                    now,
                )
                .await
        }
    };
    match written {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(submission = %row.id, "the check claim was taken over; nothing recorded");
            return CheckOutcome::Lost;
        }
        Err(e) => {
            tracing::error!(error = %e, submission = %row.id, "cannot record a check");
            return CheckOutcome::Lost;
        }
    }
    let (outcome, scheduled) = match &resolution {
        Resolution::Later => return CheckOutcome::StillProcessing,
        Resolution::Published(published) => {
            tracing::info!(submission = %row.id, post_id = %published.post_id, "the platform shows the post published");
            (
                CheckOutcome::Published,
                AttemptEnd::Published {
                    post_id: published.post_id.clone(),
                },
            )
        }
        Resolution::Failed { code, message } => {
            tracing::warn!(submission = %row.id, %message, "failed on the platform after our deadline");
            give_back_counter(store, record).await;
            (
                CheckOutcome::Failed,
                AttemptEnd::Failed {
                    code: code.clone(),
                    error: message.clone(),
                },
            )
        }
        Resolution::NotOut => {
            tracing::warn!(submission = %row.id, "a cut-off final call did not publish; a scheduled post is tried again");
            (
                CheckOutcome::Failed,
                AttemptEnd::Rescheduled {
                    next_attempt_at: now,
                    error: NOT_OUT_MESSAGE.to_string(),
                },
            )
        }
        Resolution::Unconfirmed { message } => {
            tracing::warn!(submission = %row.id, %message, "no more checks; stays unconfirmed");
            (
                CheckOutcome::Unconfirmed,
                AttemptEnd::Failed {
                    code: ErrorCode::PublishingUnconfirmed.as_str().to_string(),
                    error: message.clone(),
                },
            )
        }
    };
    if let Some(scheduled_post_id) = row.scheduled_post_id {
        finish_scheduled(store, scheduled_post_id, row.id, &scheduled, now).await;
    }
    outcome
}

/// The scheduled post ends with its attempt. A failure here is repaired by the scheduler's
/// settlement once the post's lease has passed (it reads the resolved history row).
async fn finish_scheduled(
    store: &Store,
    scheduled_post_id: Uuid,
    submission_id: Uuid,
    outcome: &AttemptEnd,
    now: DateTime<Utc>,
) {
    if let Err(e) = store
        .finish_scheduled_checked(scheduled_post_id, submission_id, outcome, now)
        .await
    {
        tracing::error!(error = %e, scheduled_post = %scheduled_post_id, "cannot record a scheduled post's outcome; settlement repairs it");
    }
}

/// The history's result fields: what was known before, plus what the outcome adds.
fn published_fields(known: Option<&Value>, published: &Published) -> Value {
    let mut fields = match known {
        Some(Value::Object(map)) => Value::Object(map.clone()),
        _ => json!({}),
    };
    if !published.post_ids.is_empty() {
        fields["thread_count"] = json!(published.post_ids.len());
        fields["post_ids"] = json!(published.post_ids);
    }
    if !published.warnings.is_empty() {
        fields["warnings"] = json!(published.warnings);
    }
    fields
}

/// Whether a history row is being carried on by the reconciler (the scheduler's settlement
/// leaves its scheduled post alone meanwhile).
pub fn is_being_checked(row: &post_submission::Model) -> bool {
    row.status == SubmissionStatus::Unconfirmed && row.next_check_at.is_some()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{platforms::Pending, publish::steps::ReservedCounter};

    #[test]
    fn the_record_round_trips_through_json() {
        let record = Reconcile {
            pending: Pending::XMedia {
                media_id: "2".into(),
                media_ids: vec!["1".into(), "2".into()],
                tweets: vec!["a".into(), "b".into()],
            },
            fields: json!({}),
            reserved_counter: Some(ReservedCounter {
                user_id: Uuid::nil(),
                key: "x-posts:2026-11".into(),
            }),
        };
        let value = serde_json::to_value(&record).unwrap();
        assert_eq!(value["pending"]["kind"], "x_media");
        assert_eq!(serde_json::from_value::<Reconcile>(value).unwrap(), record);
    }

    /// A lookup that could not read the listing (the page gone, the edge refused) proves
    /// nothing about the post: never "not out", which would publish it again.
    #[test]
    fn a_refused_lookup_is_never_read_as_nothing_went_out() {
        let unknown = |e: PlatformError| matches!(judge_lookup(&e), Resolution::Unconfirmed { .. });
        assert!(unknown(PlatformError::NotFound(
            "code 100 subcode 33".into()
        )));
        assert!(unknown(PlatformError::Rejected("refused".into())));
        assert!(matches!(
            judge_lookup(&PlatformError::Transient("503".into())),
            Resolution::Later
        ));
        // A completed upload still processing is asked about again; one the platform failed
        // did not go out.
        let processing = Pending::YoutubeVideo {
            video_id: "dQw4w9WgXcQ".into(),
            thumbnail: None,
        };
        assert!(matches!(
            judge_lookup(&PlatformError::StillProcessing(Box::new(processing))),
            Resolution::Later
        ));
        assert!(matches!(
            judge_lookup(&PlatformError::ProcessingFailed("rejected".into())),
            Resolution::Failed { .. }
        ));
    }

    #[test]
    fn failures_are_judged_by_who_made_the_final_call() {
        let steps = StepRecorder::in_memory();
        let later =
            |e: PlatformError, ours: bool| matches!(judge(&e, ours, &steps), Resolution::Later);
        let is_failed = |e: PlatformError, ours: bool| {
            matches!(judge(&e, ours, &steps), Resolution::Failed { .. })
        };
        let unconfirmed = |e: PlatformError, ours: bool| {
            matches!(judge(&e, ours, &steps), Resolution::Unconfirmed { .. })
        };
        assert!(later(PlatformError::Transient("503".into()), false));
        assert!(later(PlatformError::TokenInvalid("revoked".into()), true));
        assert!(is_failed(
            PlatformError::ProcessingFailed("error".into()),
            false
        ));
        assert!(is_failed(PlatformError::MediaFetch("404".into()), true));
        // After the platform's final call, an unexplained refusal leaves the outcome unknown.
        assert!(unconfirmed(PlatformError::Rejected("gone".into()), false));
        assert!(is_failed(PlatformError::Rejected("gone".into()), true));
    }

    #[actix_web::test]
    async fn a_failed_final_call_of_our_own_is_failed_only_when_the_platform_said_no() {
        let steps = StepRecorder::in_memory();
        steps.before_final().await.unwrap();
        // No definite answer: it may be out.
        assert!(matches!(
            judge(&PlatformError::Transient("timed out".into()), true, &steps),
            Resolution::Unconfirmed { .. }
        ));
        // A refusal: nothing went out.
        assert!(matches!(
            judge(&PlatformError::Rejected("duplicate".into()), true, &steps),
            Resolution::Failed { .. }
        ));
        // Part of a thread already out: out.
        steps
            .record(crate::platforms::StepKind::Post, "1")
            .await
            .unwrap();
        assert!(matches!(
            judge(&PlatformError::Rejected("duplicate".into()), true, &steps),
            Resolution::Unconfirmed { .. }
        ));
    }
}
