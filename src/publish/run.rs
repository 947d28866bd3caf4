//! Running one publish job: the history row, the adapter, and the recorded outcome. Called by
//! the account actor from a spawned future (never inside a message handler), so the actor keeps
//! answering while a long video upload runs.

use entity::post_submission::SubmissionStatus;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::{
    clock::SharedClock,
    config::{PlatformsConfig, PublishingConfig},
    crypto::TokenCipher,
    domain::plan::{
        FacebookPost, InstagramPost, Platform, PostType, PublishPlan, ThreadsPost, XPost,
    },
    error::{ApiError, ErrorCode, PUBLISH_UNCONFIRMED_MESSAGE},
    media::MediaFetcher,
    platforms::{self, AccountCredentials, Pending, PlatformContext, PlatformError, Published},
    publish::steps::{ClaimFence, FinalProbe, Reconcile, ReservedCounter, StepRecorder},
    store::{NewSubmission, PublishWrite, Store, SubmissionRow},
};

/// What every account actor shares.
pub struct PublishDeps {
    pub store: Store,
    pub clock: SharedClock,
    pub cipher: TokenCipher,
    /// Client for platform API calls.
    pub http: reqwest::Client,
    pub media: MediaFetcher,
    pub platforms: PlatformsConfig,
    pub publishing: PublishingConfig,
    /// OAuth apps, for refreshing tokens.
    pub oauth: crate::config::OAuthConfig,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// This instance among the others: account leases and the budgets they share.
    pub cluster: Arc<crate::cluster::Cluster>,
}

thread_local! {
    /// This actor thread's own platform client (see [`PublishDeps::http`]).
    static THREAD_HTTP: std::cell::RefCell<Option<reqwest::Client>> =
        const { std::cell::RefCell::new(None) };
}

/// Gives the current thread (one that runs account actors: a supervisor arbiter, or an HTTP
/// worker) a platform client of its own. Should it not build (not expected: the shared client
/// was built with the same settings), the thread uses the shared one.
pub fn use_own_client(config: &PlatformsConfig) {
    match platforms::client(config) {
        Ok(client) => THREAD_HTTP.with_borrow_mut(|own| *own = Some(client)),
        Err(error) => tracing::warn!(%error, "no platform client of this thread's own"),
    }
}

impl PublishDeps {
    /// The platform client to call with on this thread: on a thread that runs account actors,
    /// its own, else the shared one. reqwest drives a connection's I/O on the runtime that
    /// opened it, so with one shared pool a call from one thread would often go out, and come
    /// back, on a connection another thread drives: two more thread hand-overs per call, each
    /// a wait for a core on a busy machine. With a pool per thread, a call's connection is on
    /// its own thread.
    pub fn http(&self) -> reqwest::Client {
        THREAD_HTTP
            .with_borrow(|own| own.clone())
            .unwrap_or_else(|| self.http.clone())
    }
}

/// One publish, as queued on an account actor.
pub struct JobSpec {
    pub submission_id: Uuid,
    pub user_id: Uuid,
    pub account_id: Uuid,
    pub page_name: String,
    pub plan: PublishPlan,
    /// `{text, media_urls}` as submitted (for the history).
    pub content: Value,
    /// A counter reserved for this post (x monthly posts) to give back if nothing went out.
    pub reserved_counter: Option<(Uuid, String)>,
    /// The scheduled post this publish is an attempt of, and the claim it runs under.
    pub claim: Option<ClaimFence>,
    /// A waiting caller gave up (`POST /v2/posts` past its time limit) and tells its client to
    /// look for the history row: a request to write the row now rather than at the final call,
    /// answered once it is written (see [`StepRecorder::announce`]).
    pub announce: Option<oneshot::Receiver<oneshot::Sender<()>>>,
    /// The account's publish lease, once held (see [`super::leased`]).
    pub lease: Option<Arc<crate::cluster::AccountLease>>,
    /// The units of the account's shared platform budget the publish takes with its lease.
    pub budget: Option<crate::cluster::Budget>,
}

/// How a job ended.
pub struct JobResult {
    /// The receipt of the published post or the error for the caller.
    pub outcome: Result<PublishReceipt, ApiError>,
    /// Set when the platform said the token is dead: the code and the platform's message.
    pub token_failure: Option<(ErrorCode, String)>,
    /// A failure that another attempt may cure (5xx, timeout, platform rate limit) and that
    /// happened before the irreversible call: safe to retry.
    pub retryable: bool,
}

/// What a publish gives back: the `data` of a `POST /v2/posts` answer (spec §2.3). The
/// scheduler takes the post id from it and the compose page its link; the API serializes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PublishReceipt {
    pub post_submission_id: Uuid,
    /// The platform's id of the post (the first one of a thread).
    pub post_id: String,
    pub post_type: PostType,
    pub platform: Platform,
    pub page_name: String,
    /// Written as the API writes every time (milliseconds, `Z`).
    #[serde(with = "iso_millis")]
    #[schema(value_type = String, format = DateTime)]
    pub published_at: DateTime<Utc>,
    /// What the post type adds; absent fields are left out of the answer.
    #[serde(flatten)]
    pub fields: ResultFields,
}

/// Fields that depend on the post type (spec §2.3), in the answer and in the history's
/// `result`. Each is left out when it does not apply (never written as `null`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ResultFields {
    /// A facebook album's photos.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = u64)]
    pub photo_count: Option<usize>,
    /// A carousel's items (instagram, threads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = u64)]
    pub item_count: Option<usize>,
    /// A thread's posts (threads, x), with their ids in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = u64)]
    pub thread_count: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = Vec<String>)]
    pub post_ids: Option<Vec<String>>,
    /// What went wrong after the post was out; only when something did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(required = false, value_type = Vec<String>)]
    pub warnings: Option<Vec<String>>,
}

impl ResultFields {
    /// The fields as the history row stores them (`post_submissions.result`).
    pub fn to_json(&self) -> Value {
        // Plain numbers and strings under string keys: serializing cannot fail.
        json!(self)
    }
}

/// `published_at` in the API's one time format ([`crate::domain::time::iso`]), read back from it too.
pub(crate) mod iso_millis {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(at: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&crate::domain::time::iso(*at))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(deserializer)?;
        DateTime::parse_from_rfc3339(&text)
            .map(|at| at.with_timezone(&Utc))
            .map_err(serde::de::Error::custom)
    }
}

/// Fields that depend on the post type (spec §2.3).
pub fn result_fields(plan: &PublishPlan, published: &Published) -> ResultFields {
    let thread = || ResultFields {
        thread_count: Some(published.post_ids.len()),
        post_ids: Some(published.post_ids.clone()),
        ..ResultFields::default()
    };
    let mut fields = match plan {
        PublishPlan::Facebook(FacebookPost::Album { images, .. }) => ResultFields {
            photo_count: Some(images.len()),
            ..ResultFields::default()
        },
        PublishPlan::Instagram(InstagramPost::Carousel { items, .. })
        | PublishPlan::Threads(ThreadsPost::Carousel { items, .. }) => ResultFields {
            item_count: Some(items.len()),
            ..ResultFields::default()
        },
        PublishPlan::Threads(ThreadsPost::Thread { .. }) => thread(),
        PublishPlan::X(XPost { tweets, .. }) if tweets.len() > 1 => thread(),
        _ => ResultFields::default(),
    };
    if !published.warnings.is_empty() {
        fields.warnings = Some(published.warnings.clone());
    }
    fields
}

/// Runs a job to its end and records it. Never panics; every path ends the history row.
///
/// The history row costs one write before the irreversible call and one after it: the steps
/// before the final call stay in memory and are written with the row when the final call is
/// cleared ([`StepRecorder::before_final`]); a publish that ends before it writes its row once,
/// already ended. Both writes go through the store's group commit.
pub async fn run_job(
    deps: Arc<PublishDeps>,
    credentials: AccountCredentials,
    job: JobSpec,
) -> JobResult {
    run_job_probed(deps, credentials, job, None).await
}

/// [`run_job`], calling `probe` when the final call is cleared to go (tests count the writes
/// made before it).
pub async fn run_job_probed(
    deps: Arc<PublishDeps>,
    credentials: AccountCredentials,
    mut job: JobSpec,
    probe: Option<FinalProbe>,
) -> JobResult {
    let announce = job.announce.take();
    let now = deps.clock.now();
    let platform = job.plan.platform();
    let row = new_row(&job, platform, now, deps.cluster.instance());
    let steps = StepRecorder::for_new_submission(deps.store.clone(), row)
        .with_fence(job.claim.clone())
        .with_lease(job.lease.clone())
        .with_clock(deps.clock.clone())
        .with_final_probe(probe);
    let http = deps.http();
    let ctx = PlatformContext {
        http: &http,
        media: &deps.media,
        config: &deps.platforms,
        account: &credentials,
        steps: &steps,
    };
    let span = tracing::info_span!("publish", submission = %job.submission_id, platform = platform.as_str(), account = %job.account_id);
    let publish = tracing::Instrument::instrument(platforms::publish(&ctx, &job.plan), span);
    let mut publish = std::pin::pin!(publish);
    let result = match announce {
        // Whichever comes first: the publish ends, or the caller asks for the row now (then
        // the publish goes on). A caller that got its answer drops the request: `Err`, no row.
        Some(mut asked) => tokio::select! {
            biased;
            result = &mut publish => result,
            Ok(written) = &mut asked => {
                steps.announce().await;
                let _ = written.send(());
                publish.await
            }
        },
        None => publish.await,
    };
    let finished_at = deps.clock.now();
    match result {
        Ok(published) => record_published(&deps, &job, &steps, published, finished_at).await,
        Err(PlatformError::StillProcessing(pending)) => {
            Box::pin(still_processing(&deps, &job, &steps, *pending, finished_at)).await
        }
        Err(error) => record_failure(&deps, &job, &steps, error, finished_at).await,
    }
}

/// The history row of a job about to start: `publishing`, no steps yet.
fn new_row(
    job: &JobSpec,
    platform: Platform,
    now: DateTime<Utc>,
    publisher: &str,
) -> SubmissionRow {
    SubmissionRow {
        id: job.submission_id,
        new: NewSubmission {
            user_id: job.user_id,
            account_id: job.account_id,
            platform,
            post_type: Some(job.plan.post_type()),
            post_id: None,
            status: SubmissionStatus::Publishing,
            page_name: job.page_name.clone(),
            content: job.content.clone(),
            result: None,
            error_code: None,
            error_message: None,
            published_at: None,
        },
        steps: Default::default(),
        scheduled_post_id: job.claim.as_ref().map(|c| c.scheduled_post_id),
        created_at: now,
        updated_at: now,
        publisher: Some(publisher.to_string()),
    }
}

/// The platform published the post: the history row says so, and the caller gets the receipt.
async fn record_published(
    deps: &PublishDeps,
    job: &JobSpec,
    steps: &StepRecorder,
    published: Published,
    finished_at: DateTime<Utc>,
) -> JobResult {
    let platform = job.plan.platform();
    let fields = result_fields(&job.plan, &published);
    let write = match steps.take_unwritten() {
        // Published without announcing a final call: the whole row at once.
        Some(mut row) => {
            row.new.status = SubmissionStatus::Published;
            row.new.post_id = Some(published.post_id.clone());
            row.new.result = Some(fields.to_json());
            row.new.published_at = Some(finished_at);
            row.updated_at = finished_at;
            PublishWrite::Ended {
                row,
                claim: job.claim.as_ref().map(ClaimFence::attempt_claim),
            }
        }
        None => PublishWrite::Published {
            id: job.submission_id,
            post_id: published.post_id.clone(),
            result: fields.to_json(),
            steps: Some(steps.snapshot()),
            now: finished_at,
        },
    };
    if let Err(e) = deps.store.publish_write(write).await {
        // The post is out; failing the request would invite a duplicate retry.
        tracing::error!(error = %e, submission = %job.submission_id, "published, but the history row could not be updated");
    }
    tracing::info!(submission = %job.submission_id, platform = platform.as_str(), post_id = %published.post_id, "published");
    JobResult {
        outcome: Ok(PublishReceipt {
            post_submission_id: job.submission_id,
            post_id: published.post_id,
            post_type: job.plan.post_type(),
            platform,
            page_name: job.page_name.clone(),
            published_at: finished_at,
            fields,
        }),
        token_failure: None,
        retryable: false,
    }
}

/// The publish failed: the history row says `failed`, or `unconfirmed` when the post may be out
/// (the final call started and its answer was lost); the caller learns whether a retry is safe.
async fn record_failure(
    deps: &PublishDeps,
    job: &JobSpec,
    steps: &StepRecorder,
    error: PlatformError,
    finished_at: DateTime<Utc>,
) -> JobResult {
    let platform = job.plan.platform();
    let final_started = steps.final_started();
    // Whether the post may be out: only if the irreversible call started and then
    // failed without a definite answer (a 5xx, a timeout, a broken connection).
    // Part of a thread already out counts as published: the rest must not be re-sent
    // from the start, and the allowance stays used.
    let posted = !steps.ids(platforms::StepKind::Post).is_empty();
    let maybe_published = final_started && (error.outcome_unknown() || posted);
    let token_failure = error.invalidates_token().then(|| {
        let code = match &error {
            PlatformError::TokenExpired(_) => ErrorCode::TokenExpired,
            _ => ErrorCode::InvalidToken,
        };
        (code, error.to_string())
    });
    tracing::warn!(submission = %job.submission_id, platform = platform.as_str(), error = %error, final_started, "publish failed");
    // Safe to try again only if the platform surely did not publish: it refused with a
    // rate limit, or a transient failure came before the irreversible call.
    let retryable = match &error {
        // A refusal: nothing went out, unless earlier posts of a thread did.
        PlatformError::RateLimited { .. } => !posted,
        PlatformError::Transient(_) => !final_started,
        _ => false,
    };
    let mut api_error = error.into_api_error();
    if maybe_published {
        api_error.message = format!(
            "{} during the final publish call; the post may have been published: check the platform (and the publishing history) before retrying",
            api_error.message
        );
    }
    let message = match &api_error.details {
        Some(details) => format!("{}: {details}", api_error.message),
        None => api_error.message.clone(),
    };
    let status = if maybe_published {
        SubmissionStatus::Unconfirmed
    } else {
        SubmissionStatus::Failed
    };
    let write = match steps.take_unwritten() {
        // Ended before the final call: the row's one write, already failed.
        Some(mut row) => {
            row.new.status = status;
            row.new.error_code = Some(api_error.code.as_str().to_string());
            row.new.error_message = Some(message.clone());
            row.updated_at = finished_at;
            PublishWrite::Ended {
                row,
                claim: job.claim.as_ref().map(ClaimFence::attempt_claim),
            }
        }
        None => PublishWrite::Failed {
            id: job.submission_id,
            status,
            error_code: api_error.code.as_str().to_string(),
            message: message.clone(),
            steps: Some(steps.snapshot()),
            now: finished_at,
            // A final call refused outright (a rate limit) is retried; the retry must
            // not be settled from this attempt's `final_started` should it be cut off
            // before its own final call.
            unlink: job
                .claim
                .as_ref()
                .filter(|_| retryable && final_started)
                .map(ClaimFence::attempt_claim),
        },
    };
    match deps.store.publish_write(write).await {
        // The client is told where the failure is recorded.
        Ok(_) => api_error = api_error.for_submission(job.submission_id),
        Err(e) => {
            tracing::error!(error = %e, submission = %job.submission_id, "cannot record the failure");
        }
    }
    if !maybe_published {
        release_counter(deps, job).await;
    }
    JobResult {
        outcome: Err(api_error),
        token_failure,
        retryable,
    }
}

/// The platform was still processing the post at our deadline: it may yet go out, so the
/// history says `unconfirmed` (not `failed`) and keeps what is left to do for the reconciler,
/// and the caller is told not to retry.
async fn still_processing(
    deps: &PublishDeps,
    job: &JobSpec,
    steps: &StepRecorder,
    pending: Pending,
    now: chrono::DateTime<chrono::Utc>,
) -> JobResult {
    let platform = job.plan.platform().as_str();
    tracing::warn!(submission = %job.submission_id, platform, object = %pending.object_id(), final_started = steps.final_started(), "still processing at our deadline; checked in the background");
    let record = Reconcile {
        // What the post type adds (a carousel's item count), known before the outcome.
        fields: result_fields(&job.plan, &Published::single("")).to_json(),
        pending,
        reserved_counter: job
            .reserved_counter
            .as_ref()
            .map(|(user_id, key)| ReservedCounter {
                user_id: *user_id,
                key: key.clone(),
            }),
    };
    let publishing = &deps.publishing;
    let next_check =
        now + chrono::Duration::milliseconds(publishing.unconfirmed_check_interval_ms as i64);
    let until = now + chrono::Duration::seconds(publishing.unconfirmed_check_horizon_secs as i64);
    // Processing outlasted our deadline before the final call (a video container): the row was
    // never written. The long wait pays for a second write; the check needs the row and its
    // steps (the object to look at) before it can be marked pending.
    if let Some(mut row) = steps.take_unwritten() {
        row.updated_at = now;
        let write = PublishWrite::Ended {
            row,
            claim: job.claim.as_ref().map(ClaimFence::attempt_claim),
        };
        if let Err(e) = deps.store.publish_write(write).await {
            tracing::error!(error = %e, submission = %job.submission_id, "cannot record the pending publish");
        }
    }
    let marked = match serde_json::to_value(&record) {
        Ok(value) => deps
            .store
            .mark_submission_pending(
                job.submission_id,
                value,
                // The steps after the final call (kept in memory): what the check carries on from.
                Some(steps.snapshot()),
                ErrorCode::PublishUnconfirmed.as_str(),
                PUBLISH_UNCONFIRMED_MESSAGE,
                next_check,
                until,
                now,
            )
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = marked {
        // The row stays `publishing`; the stale-publish settlement says `unconfirmed` later if
        // the platform's final call was made. Still not a failure for the caller.
        tracing::error!(error = %e, submission = %job.submission_id, "cannot record the pending check");
    }
    JobResult {
        outcome: Err(ApiError::publish_unconfirmed(job.submission_id)),
        token_failure: None,
        retryable: false,
    }
}

pub(crate) async fn release_counter(deps: &PublishDeps, job: &JobSpec) {
    if let Some((user_id, key)) = &job.reserved_counter
        && let Err(e) = deps.store.release_call(*user_id, key).await
    {
        tracing::error!(error = %e, "cannot give back a reserved post count");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use chrono::TimeZone;

    use super::*;
    use crate::domain::plan::ThreadsPost;

    /// The receipt serializes to the `data` the service wrote by hand before it was a type:
    /// the same keys, values and types, the type-specific ones left out when they do not apply.
    #[test]
    fn a_receipt_is_the_data_of_the_publish_answer() {
        let id = Uuid::new_v4();
        let at = Utc.with_ymd_and_hms(2026, 11, 24, 6, 0, 0).unwrap();
        let thread = PublishPlan::Threads(ThreadsPost::Thread {
            texts: vec!["one".into(), "two".into()],
            media: None,
        });
        let published = Published {
            post_id: "p1".into(),
            post_ids: vec!["p1".into(), "p2".into()],
            warnings: vec!["the thumbnail was refused".into()],
        };
        let receipt = PublishReceipt {
            post_submission_id: id,
            post_id: "p1".into(),
            post_type: thread.post_type(),
            platform: thread.platform(),
            page_name: "Page".into(),
            published_at: at,
            fields: result_fields(&thread, &published),
        };
        let expected = json!({
            "post_submission_id": id,
            "post_id": "p1",
            "post_type": "thread",
            "platform": "threads",
            "page_name": "Page",
            "published_at": "2026-11-24T06:00:00.000Z",
            "thread_count": 2,
            "post_ids": ["p1", "p2"],
            "warnings": ["the thumbnail was refused"],
        });
        assert_eq!(serde_json::to_value(&receipt).unwrap(), expected);
        // The compose page reads it back from the answer.
        assert_eq!(
            serde_json::from_value::<PublishReceipt>(expected).unwrap(),
            receipt
        );

        let text = PublishPlan::Threads(ThreadsPost::Text { text: "hi".into() });
        let fields = result_fields(&text, &Published::single("p"));
        assert_eq!(fields, ResultFields::default());
        assert_eq!(fields.to_json(), json!({}));
    }
}
