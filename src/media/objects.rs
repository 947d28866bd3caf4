//! Where uploaded files are kept: one [`ObjectStore`] (the `object_store` crate) over the local
//! filesystem or an S3-compatible bucket, chosen by `media.store`. Files are named by their
//! medium's id alone, so a path never carries anything a user sent.
//!
//! Writes go through [`ObjectWriter`]: bytes are handed on part by part as they arrive (a
//! multipart upload on S3, a staging file on disk), so an upload holds a few parts in memory,
//! never the file; the object appears only when the writer finishes. An aborted writer leaves
//! nothing behind. A file smaller than one part is written with a single request.

use std::{ops::Range, sync::Arc};

use bytes::Bytes;
use futures_util::{StreamExt, stream::BoxStream};
use object_store::{
    GetOptions, GetRange, ObjectStore, ObjectStoreExt, aws::AmazonS3Builder, buffered::BufWriter,
    local::LocalFileSystem, path::Path,
};
use tokio::io::AsyncWriteExt;
use uuid::Uuid;

use crate::config::{ConfigError, MediaConfig, MediaStoreKind};

/// What a store operation could not do.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    #[error("no such object")]
    NotFound,
    #[error("media store: {0}")]
    Store(String),
}

impl From<object_store::Error> for ObjectError {
    fn from(error: object_store::Error) -> Self {
        match error {
            object_store::Error::NotFound { .. } => Self::NotFound,
            other => Self::Store(other.to_string()),
        }
    }
}

impl From<std::io::Error> for ObjectError {
    fn from(error: std::io::Error) -> Self {
        Self::Store(error.to_string())
    }
}

/// An object's bytes as they are read, with the range they cover and the object's size.
pub struct ObjectRead {
    pub stream: BoxStream<'static, Result<Bytes, ObjectError>>,
    pub range: Range<u64>,
    pub size: u64,
}

/// The media store.
#[derive(Clone)]
pub struct MediaObjects {
    store: Arc<dyn ObjectStore>,
    /// Bytes a writer holds before it hands them on: one part of a multipart upload.
    part_bytes: usize,
}

/// A local file takes any piece size: an upload holds little memory.
const LOCAL_PART_BYTES: usize = 256 * 1024;
/// S3 refuses multipart parts under 5 MiB (but the last).
const S3_PART_BYTES: usize = 5 * 1024 * 1024;
/// Parts of one upload in flight at once: with the one being filled, an upload holds at most
/// three parts in memory.
const PARTS_IN_FLIGHT: usize = 2;

impl std::fmt::Debug for MediaObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MediaObjects({})", self.store)
    }
}

fn location(id: Uuid) -> Path {
    Path::from(id.simple().to_string())
}

impl MediaObjects {
    /// The store `config` names; the local directory is created if it is missing. S3
    /// credentials come from the standard `AWS_*` environment variables.
    pub fn open(config: &MediaConfig) -> Result<Self, ConfigError> {
        let part_bytes = match config.store {
            MediaStoreKind::Local => LOCAL_PART_BYTES,
            MediaStoreKind::S3 => S3_PART_BYTES,
        };
        let store: Arc<dyn ObjectStore> = match config.store {
            MediaStoreKind::Local => {
                std::fs::create_dir_all(&config.local_dir).map_err(|e| {
                    ConfigError::Invalid("media.local_dir", format!("cannot be created: {e}"))
                })?;
                // Synced before the upload is answered, as the database's commits are: a
                // `201` is a file that survives a power cut.
                let local = LocalFileSystem::new_with_prefix(&config.local_dir)
                    .map_err(|e| ConfigError::Invalid("media.local_dir", e.to_string()))?
                    .with_fsync(true);
                Arc::new(local)
            }
            MediaStoreKind::S3 => {
                let mut builder = AmazonS3Builder::from_env()
                    .with_bucket_name(config.s3_bucket.trim())
                    .with_region(config.s3_region.trim());
                let endpoint = config.s3_endpoint.trim();
                if !endpoint.is_empty() {
                    // S3-compatible servers (MinIO, Garage, moto) take path-style requests,
                    // and on a private network may speak plain http.
                    builder = builder
                        .with_endpoint(endpoint)
                        .with_allow_http(endpoint.starts_with("http://"))
                        .with_virtual_hosted_style_request(false);
                }
                let s3 = builder
                    .build()
                    .map_err(|e| ConfigError::Invalid("media.s3_bucket", e.to_string()))?;
                Arc::new(s3)
            }
        };
        Ok(Self { store, part_bytes })
    }

    /// A writer for medium `id`'s file.
    pub fn writer(&self, id: Uuid) -> ObjectWriter {
        ObjectWriter {
            inner: BufWriter::with_capacity(self.store.clone(), location(id), self.part_bytes)
                .with_max_concurrency(PARTS_IN_FLIGHT),
        }
    }

    /// Reads medium `id`'s file, or `range` of it (already checked against its size).
    pub async fn read(
        &self,
        id: Uuid,
        range: Option<Range<u64>>,
    ) -> Result<ObjectRead, ObjectError> {
        let options = GetOptions {
            range: range.map(GetRange::Bounded),
            ..GetOptions::default()
        };
        let got = self.store.get_opts(&location(id), options).await?;
        let (range, size) = (got.range.clone(), got.meta.size);
        let stream = got
            .into_stream()
            .map(|r| r.map_err(ObjectError::from))
            .boxed();
        Ok(ObjectRead {
            stream,
            range,
            size,
        })
    }

    /// The whole file, for a post that uses one of our own URLs.
    pub async fn read_all(&self, id: Uuid) -> Result<Bytes, ObjectError> {
        Ok(self.store.get(&location(id)).await?.bytes().await?)
    }

    /// Deletes medium `id`'s file; one already gone is not an error.
    pub async fn delete(&self, id: Uuid) -> Result<(), ObjectError> {
        match self.store.delete(&location(id)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(other) => Err(other.into()),
        }
    }

    /// The ids of every file in the store, with when each was written (the sweep's side of
    /// the reconciliation). Names that are no medium's id are skipped.
    pub async fn list(&self) -> Result<Vec<(Uuid, chrono::DateTime<chrono::Utc>)>, ObjectError> {
        let mut listed = self.store.list(None);
        let mut found = Vec::new();
        while let Some(meta) = listed.next().await {
            let meta = meta?;
            if let Some(id) = meta
                .location
                .filename()
                .and_then(|name| Uuid::try_parse(name).ok())
            {
                found.push((id, meta.last_modified));
            }
        }
        Ok(found)
    }
}

/// A file being written. Nothing is visible until [`ObjectWriter::finish`]; dropped or
/// [`ObjectWriter::abort`]ed, it leaves nothing behind.
pub struct ObjectWriter {
    inner: BufWriter,
}

impl ObjectWriter {
    pub async fn write(&mut self, bytes: &[u8]) -> Result<(), ObjectError> {
        self.inner.write_all(bytes).await?;
        Ok(())
    }

    pub async fn finish(mut self) -> Result<(), ObjectError> {
        self.inner.shutdown().await?;
        Ok(())
    }

    pub async fn abort(mut self) {
        if let Err(error) = self.inner.abort().await {
            tracing::warn!(%error, "media store: an unfinished upload could not be aborted");
        }
    }
}
