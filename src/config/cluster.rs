//! Several instances on one PostgreSQL database (`[cluster]`): how fast the others take over
//! from one that stops answering, and how this one names itself to operators.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ConfigError;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterConfig {
    /// An instance that has not renewed its membership for this long is dead: its accounts'
    /// publish leases, its scheduled-post claims, its checks of unconfirmed publishes and its
    /// webhook deliveries are taken over. It stops publishing itself before then.
    pub takeover_secs: u64,
    /// This instance's address as operators (and the other instances) see it; empty: the
    /// `server.public_url`.
    pub address: String,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            takeover_secs: 10,
            address: String::new(),
        }
    }
}

impl ClusterConfig {
    /// Refuses a takeover time under 3 s (renewals every third of it would crowd the database)
    /// or over an hour.
    pub fn check(&self) -> Result<(), ConfigError> {
        if !(3..=3_600).contains(&self.takeover_secs) {
            return Err(ConfigError::Invalid(
                "cluster.takeover_secs",
                "must be 3 to 3600".into(),
            ));
        }
        Ok(())
    }

    pub fn takeover(&self) -> Duration {
        Duration::from_secs(self.takeover_secs.max(3))
    }
}
