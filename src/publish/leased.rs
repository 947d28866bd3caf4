//! A publish run under the account's publish lease: at most one publish per account is in
//! flight across every instance sharing the database, and the token it goes out with is the
//! stored one, whichever instance refreshed it last.

use std::{sync::Arc, time::Duration};

use super::run::{JobResult, JobSpec, PublishDeps, release_counter, run_job};
use crate::{cluster::LeaseError, error::ApiError, platforms::AccountCredentials};
use chrono::{DateTime, Utc};

/// Runs `job` once the account's publish lease is held, then gives the lease back (when the
/// job and its recorder let go of it). `token_expires_at` is the expiry of the token in
/// `credentials`: another stored since is read and used instead.
pub async fn run_leased_job(
    deps: Arc<PublishDeps>,
    credentials: AccountCredentials,
    token_expires_at: Option<DateTime<Utc>>,
    mut job: JobSpec,
) -> JobResult {
    // A live holder finishes its publish; a dead one loses the lease within the takeover time.
    let wait = deps.cluster.takeover() * 2;
    let lease = match deps.cluster.hold(job.account_id, wait, job.budget).await {
        Ok(lease) => lease,
        Err(LeaseError::OverBudget { retry_after_secs }) => {
            deps.metrics.inc(
                "limiter_rejections_total",
                &[("platform", job.plan.platform().as_str())],
            );
            release_counter(&deps, &job).await;
            let refusal = job.budget.map_or_else(
                || ApiError::rate_limited(retry_after_secs, None),
                |budget| budget.refusal(retry_after_secs),
            );
            return JobResult {
                outcome: Err(refusal),
                token_failure: None,
                retryable: true,
            };
        }
        Err(error) => {
            tracing::warn!(%error, account = %job.account_id, submission = %job.submission_id, "publish not started: no publish lease");
            release_counter(&deps, &job).await;
            return refused(&error, wait);
        }
    };
    let credentials = if lease.token_changed(token_expires_at) {
        match stored_credentials(&deps, &job).await {
            Ok(fresh) => fresh,
            Err(error) => {
                release_counter(&deps, &job).await;
                return JobResult {
                    outcome: Err(error),
                    token_failure: None,
                    retryable: true,
                };
            }
        }
    } else {
        credentials
    };
    job.lease = Some(Arc::new(lease));
    run_job(deps, credentials, job).await
}

/// The refusal of a publish that could not get its lease: nothing was sent, so a retry is safe.
fn refused(error: &LeaseError, waited: Duration) -> JobResult {
    let message = match error {
        LeaseError::Busy { .. } => format!(
            "Another instance has been publishing to this account for over {} s; retry in a moment",
            waited.as_secs()
        ),
        LeaseError::NotMember | LeaseError::Db(_) | LeaseError::OverBudget { .. } => {
            "This instance cannot reach its database; retry in a moment".to_string()
        }
    };
    JobResult {
        outcome: Err(ApiError::service_unavailable(message)),
        token_failure: None,
        retryable: true,
    }
}

/// The account's credentials as stored now (another instance refreshed the token).
async fn stored_credentials(
    deps: &PublishDeps,
    job: &JobSpec,
) -> Result<AccountCredentials, ApiError> {
    let row = deps
        .store
        .find_account(job.account_id)
        .await?
        .ok_or_else(|| ApiError::service_unavailable("The account is gone"))?;
    AccountCredentials::open(&deps.cipher, &row).map_err(|e| {
        tracing::warn!(account = %row.id, error = %e, "the account's stored token does not open");
        ApiError::service_unavailable("The account's stored token could not be read; retry")
    })
}
