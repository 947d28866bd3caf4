//! Several instances on one PostgreSQL database (`[cluster]`): how fast the others take over
//! from one that stops answering, and how this one names itself to operators.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ConfigError;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterConfig {
    /// Within this long of an instance's death, its accounts' publish leases, its scheduled-post
    /// claims, its checks of unconfirmed publishes and its webhook deliveries are taken over
    /// by the others (see [`ClusterConfig::silence`] for the steps).
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
    /// Refuses a takeover time under 3 s (membership renewals every fifth of it would crowd
    /// the database) or over an hour.
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

    /// How often an instance renews its membership: a fifth of the takeover time.
    pub fn renew_every(&self) -> Duration {
        self.takeover() / 5
    }

    /// How long after sending its latest successful renewal an instance trusts its own
    /// membership (and makes final publish calls): half the takeover time, two renewals.
    pub fn trust(&self) -> Duration {
        self.takeover() / 2
    }

    /// An instance silent this long is dead: three fifths of the takeover time, later than its
    /// own trust ends (by a tenth), so it stopped publishing before anyone takes over.
    pub fn silence(&self) -> Duration {
        self.takeover() * 3 / 5
    }

    /// How often instances look for the work of dead ones and settle it: a tenth of the
    /// takeover time, so that silence, a look and a settlement fit in it.
    pub fn look_every(&self) -> Duration {
        self.takeover() / 10
    }
}
