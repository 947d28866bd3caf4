//! Uploaded media (`[media]`): where the files are kept (the local disk, or an S3-compatible
//! store that several instances share), how large a file and a user's whole library may be, how
//! long an upload may take, and how long an unused file is kept.

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Where uploaded files are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum MediaStoreKind {
    /// A directory on this machine (`media.local_dir`).
    #[default]
    Local,
    /// An S3-compatible bucket (`media.s3_*`, credentials from `AWS_ACCESS_KEY_ID` and
    /// `AWS_SECRET_ACCESS_KEY`).
    S3,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct MediaConfig {
    pub store: MediaStoreKind,
    /// The directory of `store = "local"`, created on first use.
    pub local_dir: String,
    pub s3_bucket: String,
    /// An S3-compatible server's address (MinIO, R2, Garage…); empty: AWS itself.
    pub s3_endpoint: String,
    pub s3_region: String,
    /// The largest file an upload may be.
    pub max_bytes: u64,
    /// What one user's files may take together.
    pub quota_bytes_per_user: u64,
    /// How long an upload's body may take to arrive: long enough for the largest file at a
    /// modest connection speed (every other route keeps `server.request_body_timeout_secs`).
    pub upload_timeout_secs: u64,
    /// Days an unused file is kept after its upload or its last use by a post.
    pub retention_days: u64,
}

impl Default for MediaConfig {
    fn default() -> Self {
        Self {
            store: MediaStoreKind::Local,
            local_dir: "data/media".into(),
            s3_bucket: String::new(),
            s3_endpoint: String::new(),
            s3_region: "us-east-1".into(),
            max_bytes: 100 * 1024 * 1024,
            quota_bytes_per_user: 1024 * 1024 * 1024,
            // 100 MB at 2 Mbit/s takes about 400 s.
            upload_timeout_secs: 600,
            retention_days: 7,
        }
    }
}

impl MediaConfig {
    /// `retention_days` as a duration.
    pub fn retention(&self) -> chrono::Duration {
        chrono::Duration::days(i64::try_from(self.retention_days.min(36_500)).unwrap_or(7))
    }

    /// Refuses values that cannot work.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.max_bytes == 0 {
            return Err(ConfigError::Invalid(
                "media.max_bytes",
                "must be at least 1".into(),
            ));
        }
        if self.upload_timeout_secs == 0 {
            return Err(ConfigError::Invalid(
                "media.upload_timeout_secs",
                "must be at least 1".into(),
            ));
        }
        if self.retention_days == 0 {
            return Err(ConfigError::Invalid(
                "media.retention_days",
                "must be at least 1".into(),
            ));
        }
        match self.store {
            MediaStoreKind::Local if self.local_dir.trim().is_empty() => Err(ConfigError::Invalid(
                "media.local_dir",
                "must name a directory".into(),
            )),
            MediaStoreKind::S3 if self.s3_bucket.trim().is_empty() => Err(ConfigError::Invalid(
                "media.s3_bucket",
                "must name a bucket when media.store is \"s3\"".into(),
            )),
            _ => Ok(()),
        }
    }
}
