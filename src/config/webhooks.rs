//! Webhooks (`[webhooks]`): how long a delivery attempt may take, the retry schedule, the
//! hosts exempt from the private-address guard, and how the delivery actor paces itself.

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// The longest delay one step of the retry schedule may have: a week.
const MAX_RETRY_DELAY_SECS: u64 = 7 * 86_400;
/// The most attempts a schedule may list.
const MAX_ATTEMPTS: usize = 30;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct WebhooksConfig {
    /// An attempt with no complete answer after this long has failed (and is retried).
    pub timeout_secs: u64,
    /// The delay before each attempt, the first included, in seconds. Each delay after the
    /// first moves by up to a tenth either way, so that messages failing together spread out.
    pub retry_schedule_secs: Vec<u64>,
    /// `host:port` pairs endpoint URLs may use although they resolve to a loopback or private
    /// address, plain `http` included (a receiver on a private network, tests). Empty by
    /// default: endpoints must be public `https` URLs.
    pub allow_hosts: Vec<String>,
    /// How often each instance looks for messages due; its own events wake it at once.
    pub poll_interval_ms: u64,
    /// Attempts in flight at once, per instance.
    pub max_in_flight: usize,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        Self {
            timeout_secs: 15,
            retry_schedule_secs: vec![0, 5, 300, 1_800, 7_200, 18_000, 36_000, 36_000],
            allow_hosts: Vec::new(),
            poll_interval_ms: 500,
            max_in_flight: 256,
        }
    }
}

impl WebhooksConfig {
    /// Refuses values that cannot work: no attempt at all, a delay over a week, a timeout of
    /// zero or over two minutes, no attempts in flight.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.retry_schedule_secs.is_empty() || self.retry_schedule_secs.len() > MAX_ATTEMPTS {
            return Err(ConfigError::Invalid(
                "webhooks.retry_schedule_secs",
                format!("must list 1 to {MAX_ATTEMPTS} delays"),
            ));
        }
        if self
            .retry_schedule_secs
            .iter()
            .any(|delay| *delay > MAX_RETRY_DELAY_SECS)
        {
            return Err(ConfigError::Invalid(
                "webhooks.retry_schedule_secs",
                format!("a delay may be at most {MAX_RETRY_DELAY_SECS} seconds"),
            ));
        }
        if !(1..=120).contains(&self.timeout_secs) {
            return Err(ConfigError::Invalid(
                "webhooks.timeout_secs",
                "must be 1 to 120".into(),
            ));
        }
        if self.max_in_flight == 0 || self.poll_interval_ms == 0 {
            return Err(ConfigError::Invalid(
                "webhooks.max_in_flight",
                "max_in_flight and poll_interval_ms must be at least 1".into(),
            ));
        }
        Ok(())
    }
}
