//! Uploaded media: taking an upload in (its type from its bytes, its size and its owner's
//! quota checked as it streams, nothing kept when it is refused), listing, reading and deleting
//! a user's files, and opening one for its public URL.

use std::{ops::Range, sync::Arc};

use bytes::Bytes;
use chrono::{DateTime, Duration, Utc};
use entity::medium;
use futures_util::{Stream, StreamExt};
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    clock::SharedClock,
    config::MediaConfig,
    domain::media::{HEADER_BYTES, MediaFormat, SNIFF_BYTES, image_dimensions},
    error::{ApiError, ErrorCode},
    media::{
        objects::{ObjectError, ObjectRead, ObjectWriter},
        own::{FilePath, OwnMedia},
    },
    metrics::Metrics,
    store::{Page, Store},
};

/// A medium as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Medium {
    pub id: Uuid,
    /// Its public URL, for `mediaUrls` and `coverUrl`: no authentication, so platforms can
    /// fetch it.
    pub url: String,
    /// Decided from the file's bytes.
    pub content_type: String,
    /// Bytes.
    pub size: u64,
    /// Lowercase hex SHA-256 of the file.
    pub sha256: String,
    /// Pixels, read from an image's header; `null` for videos.
    pub width: Option<u32>,
    pub height: Option<u32>,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When it is deleted unless a post uses it before then (each use moves this on; a
    /// scheduled post keeps it until the post has ended).
    #[schema(format = DateTime)]
    pub expires_at: String,
}

/// A medium a public URL names, with what its response headers need.
pub struct ServedMedium {
    pub id: Uuid,
    pub format: MediaFormat,
    pub size: u64,
    pub sha256: String,
}

/// What a request for part of a file asks for, already parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `bytes=a-b` or `bytes=a-` (`None`: to the end).
    From(u64, Option<u64>),
    /// `bytes=-n`: the last `n` bytes.
    Last(u64),
}

impl ByteRange {
    /// The bytes it covers of a file of `size` bytes; `None` when it covers none (416).
    pub fn within(self, size: u64) -> Option<Range<u64>> {
        match self {
            Self::From(start, end) if start < size => {
                let end = end.map_or(size, |e| e.saturating_add(1).min(size));
                (end > start).then_some(start..end)
            }
            Self::Last(n) if n > 0 && size > 0 => Some(size.saturating_sub(n)..size),
            _ => None,
        }
    }
}

pub struct MediaService {
    store: Store,
    own: Arc<OwnMedia>,
    metrics: Arc<Metrics>,
    clock: SharedClock,
    config: MediaConfig,
    public_url: String,
}

fn time(at: DateTime<Utc>) -> String {
    crate::domain::time::iso(at)
}

fn too_large(max: u64) -> ApiError {
    ApiError::new(
        ErrorCode::MediaTooLarge,
        format!("The file exceeds the maximum size of {max} bytes"),
    )
}

fn over_quota(quota: u64, used: u64) -> ApiError {
    ApiError::new(
        ErrorCode::MediaQuotaExceeded,
        format!(
            "The file does not fit in your media storage: {used} of {quota} bytes are in use; delete media to make room"
        ),
    )
}

fn not_media() -> ApiError {
    ApiError::new(
        ErrorCode::InvalidMediaType,
        "The file is not a JPEG, PNG, WEBP, MP4 or MOV file",
    )
}

fn store_error(error: ObjectError) -> ApiError {
    tracing::error!(%error, "media store");
    ApiError::service_unavailable("Media storage is unavailable; try again later")
}

/// An upload under way: what has been read so far, and the file being written once its type
/// is known.
struct Intake {
    head: Vec<u8>,
    hasher: Sha256,
    size: u64,
    writer: Option<(MediaFormat, ObjectWriter)>,
}

impl MediaService {
    pub fn new(
        store: Store,
        own: Arc<OwnMedia>,
        metrics: Arc<Metrics>,
        clock: SharedClock,
        config: MediaConfig,
        public_url: String,
    ) -> Self {
        Self {
            store,
            own,
            metrics,
            clock,
            config,
            public_url,
        }
    }

    pub fn config(&self) -> &MediaConfig {
        &self.config
    }

    /// The public URL of `row`.
    pub fn url_of(&self, row: &medium::Model) -> String {
        let extension =
            MediaFormat::from_content_type(&row.content_type).map_or("bin", MediaFormat::extension);
        format!(
            "{}/media/{}/{}.{extension}",
            self.public_url,
            row.id.simple(),
            row.token
        )
    }

    fn shown(&self, row: &medium::Model) -> Medium {
        Medium {
            id: row.id,
            url: self.url_of(row),
            content_type: row.content_type.clone(),
            size: u64::try_from(row.size).unwrap_or(0),
            sha256: row.sha256.clone(),
            width: row.width.and_then(|w| u32::try_from(w).ok()),
            height: row.height.and_then(|h| u32::try_from(h).ok()),
            created_at: time(row.created_at),
            expires_at: time(row.expires_at),
        }
    }

    /// Takes in `body`, a file whose declared type is `declared`, for `user_id`. The type is
    /// decided from the first bytes; the size and the quota are checked as the bytes arrive,
    /// and a refusal comes as soon as a limit is crossed. Whatever refuses it, nothing is kept.
    pub async fn upload<S>(
        &self,
        user_id: Uuid,
        declared: Option<&str>,
        body: S,
    ) -> Result<Medium, ApiError>
    where
        S: Stream<Item = Result<Bytes, ApiError>>,
    {
        let used = self.store.media_bytes(user_id).await?;
        let room = self.config.quota_bytes_per_user.saturating_sub(used);
        let id = Uuid::new_v4();
        let mut intake = Intake {
            head: Vec::new(),
            hasher: Sha256::new(),
            size: 0,
            writer: None,
        };
        let read = self
            .take(&mut intake, id, declared, (room, used), body)
            .await;
        let finished = match (read, intake.writer.take()) {
            (Ok(()), Some((format, writer))) => match writer.finish().await {
                Ok(()) => Ok(format),
                Err(error) => Err(store_error(error)),
            },
            (Ok(()), None) => Err(not_media()),
            (Err(error), writer) => {
                if let Some((_, writer)) = writer {
                    writer.abort().await;
                }
                Err(error)
            }
        };
        let format = match finished {
            Ok(format) => format,
            Err(error) => {
                self.count_upload(&error);
                return Err(error);
            }
        };
        let now = self.clock.now();
        let dimensions = image_dimensions(format, &intake.head);
        let row = medium::Model {
            id,
            user_id,
            token: new_token(),
            content_type: format.content_type().to_string(),
            size: i64::try_from(intake.size).unwrap_or(i64::MAX),
            sha256: format!("{:x}", intake.hasher.finalize()),
            width: dimensions.and_then(|(w, _)| i32::try_from(w).ok()),
            height: dimensions.and_then(|(_, h)| i32::try_from(h).ok()),
            created_at: now,
            last_used_at: None,
            expires_at: now + self.retention(),
        };
        let recorded = self
            .store
            .insert_medium(row.clone(), self.config.quota_bytes_per_user)
            .await;
        match recorded {
            Ok(true) => {
                self.metrics
                    .inc("media_uploads_total", &[("outcome", "stored")]);
                Ok(self.shown(&row))
            }
            Ok(false) | Err(_) => {
                if let Err(error) = self.own.objects().delete(id).await {
                    tracing::warn!(%error, %id, "media store: a refused upload's file stays until the sweep");
                }
                let error = match recorded {
                    Ok(_) => {
                        let used = self.store.media_bytes(user_id).await.unwrap_or(used);
                        over_quota(self.config.quota_bytes_per_user, used)
                    }
                    Err(error) => error.into(),
                };
                self.count_upload(&error);
                Err(error)
            }
        }
    }

    fn count_upload(&self, error: &ApiError) {
        let outcome = if error.code.status().is_server_error() {
            "failed"
        } else {
            "refused"
        };
        self.metrics
            .inc("media_uploads_total", &[("outcome", outcome)]);
    }

    /// Reads `body` into `intake`: the type from the first bytes, then each piece into the
    /// file. `room` is what the quota leaves, `used` what is in use already.
    async fn take<S>(
        &self,
        intake: &mut Intake,
        id: Uuid,
        declared: Option<&str>,
        (room, used): (u64, u64),
        body: S,
    ) -> Result<(), ApiError>
    where
        S: Stream<Item = Result<Bytes, ApiError>>,
    {
        let mut body = std::pin::pin!(body);
        while let Some(piece) = body.next().await {
            let piece = piece?;
            intake.size += piece.len() as u64;
            if intake.size > self.config.max_bytes {
                return Err(too_large(self.config.max_bytes));
            }
            if intake.size > room {
                return Err(over_quota(self.config.quota_bytes_per_user, used));
            }
            intake.hasher.update(&piece);
            let kept = HEADER_BYTES
                .saturating_sub(intake.head.len())
                .min(piece.len());
            intake.head.extend_from_slice(&piece[..kept]);
            match &mut intake.writer {
                Some((_, writer)) => writer.write(&piece).await.map_err(store_error)?,
                None if intake.head.len() >= SNIFF_BYTES => {
                    self.start(intake, id, declared).await?
                }
                None => {}
            }
        }
        if intake.writer.is_none() && !intake.head.is_empty() {
            self.start(intake, id, declared).await?;
        }
        Ok(())
    }

    /// Decides the type from the bytes read so far and starts the file with them.
    async fn start(
        &self,
        intake: &mut Intake,
        id: Uuid,
        declared: Option<&str>,
    ) -> Result<(), ApiError> {
        let format = MediaFormat::sniff(&intake.head).ok_or_else(not_media)?;
        if !format.agrees_with(declared) {
            return Err(ApiError::new(
                ErrorCode::InvalidMediaType,
                format!(
                    "The file's bytes are {}, not the declared {}",
                    format.content_type(),
                    declared.unwrap_or_default()
                ),
            ));
        }
        let mut writer = self.own.objects().writer(id);
        writer.write(&intake.head).await.map_err(store_error)?;
        intake.writer = Some((format, writer));
        Ok(())
    }

    fn retention(&self) -> Duration {
        self.config.retention()
    }

    /// `user_id`'s media, newest first, with their count.
    pub async fn list(&self, user_id: Uuid, page: Page) -> Result<(Vec<Medium>, u64), ApiError> {
        let (rows, total) = self.store.list_media(user_id, page).await?;
        Ok((rows.iter().map(|row| self.shown(row)).collect(), total))
    }

    fn not_found() -> ApiError {
        ApiError::not_found("Medium not found")
    }

    /// `user_id`'s medium `id`; another user's is the same 404 as an unknown one.
    pub async fn get(&self, user_id: Uuid, id: &str) -> Result<Medium, ApiError> {
        let id = Uuid::try_parse(id).map_err(|_| Self::not_found())?;
        match self.store.find_medium(id).await? {
            Some(row) if row.user_id == user_id => Ok(self.shown(&row)),
            _ => Err(Self::not_found()),
        }
    }

    /// Deletes `user_id`'s medium `id`: its row at once, then its file.
    pub async fn delete(&self, user_id: Uuid, id: &str) -> Result<(), ApiError> {
        let id = Uuid::try_parse(id).map_err(|_| Self::not_found())?;
        let deleted = self.store.delete_medium(Some(user_id), id).await?;
        if deleted.is_none() {
            return Err(Self::not_found());
        }
        if let Err(error) = self.own.objects().delete(id).await {
            tracing::warn!(%error, %id, "media store: a deleted medium's file stays until the sweep");
        }
        Ok(())
    }

    /// The medium that `/media/{id}/{token}.{extension}` names, or `None` when the id, the
    /// token or the extension does not match one (all the same to the caller).
    async fn served_row(
        &self,
        id: &str,
        token: &str,
        extension: &str,
    ) -> Result<Option<(medium::Model, MediaFormat)>, ApiError> {
        let path = FilePath {
            id: id.to_string(),
            token: token.to_string(),
            extension: extension.to_string(),
        };
        Ok(self.own.find(&path).await?)
    }

    /// The medium a public URL names (its format, size and hash), or `None`.
    pub async fn served(
        &self,
        id: &str,
        token: &str,
        extension: &str,
    ) -> Result<Option<ServedMedium>, ApiError> {
        Ok(self
            .served_row(id, token, extension)
            .await?
            .map(|(row, format)| ServedMedium {
                id: row.id,
                format,
                size: u64::try_from(row.size).unwrap_or(0),
                sha256: row.sha256,
            }))
    }

    /// Reads `medium`'s file, or `range` of it (checked by the caller against its size);
    /// `None` when the file is gone.
    pub async fn read(
        &self,
        medium: &ServedMedium,
        range: Option<Range<u64>>,
    ) -> Result<Option<ObjectRead>, ApiError> {
        match self.own.objects().read(medium.id, range).await {
            Ok(read) => Ok(Some(read)),
            Err(ObjectError::NotFound) => Ok(None),
            Err(error) => Err(store_error(error)),
        }
    }
}

/// What one sweep of the media did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MediaSweep {
    /// Media past their time, deleted.
    pub expired: u64,
    /// Media past their time kept for a scheduled post that still names them.
    pub kept: u64,
    /// Files with no medium (an upload cut off before its row, a row deleted while its file
    /// could not be), deleted.
    pub objects_without_row: u64,
    /// Media whose file was gone, deleted.
    pub rows_without_object: u64,
}

/// Expired media deleted per sweep at most.
const SWEEP_LIMIT: u64 = 10_000;
/// A file or row younger than this is left out of the reconciliation: an upload writes its
/// file before its row, and a listing may miss a file written while it runs.
const RECONCILE_GRACE: Duration = Duration::hours(1);

impl MediaService {
    /// Deletes media past their time (unless a scheduled post still names them: those are kept
    /// another `media.retention_days`), then reconciles the store's files with the media rows.
    pub async fn sweep(&self) -> Result<MediaSweep, ApiError> {
        let now = self.clock.now();
        let mut report = MediaSweep {
            kept: self
                .store
                .keep_media_of_scheduled_posts(now, now + self.retention())
                .await?,
            ..MediaSweep::default()
        };
        for id in self.store.expired_media(now, SWEEP_LIMIT).await? {
            if self.store.delete_expired_medium(id, now).await?.is_some() {
                report.expired += 1;
                self.forget_file(id, "expired").await;
            }
        }
        let files = self.own.objects().list().await.map_err(store_error)?;
        let cutoff = now - RECONCILE_GRACE;
        let listed: Vec<Uuid> = files.iter().map(|(id, _)| *id).collect();
        let with_rows = self.store.media_exist(&listed).await?;
        for (id, written) in &files {
            if *written < cutoff && !with_rows.contains(id) {
                report.objects_without_row += 1;
                self.forget_file(*id, "object_without_row").await;
            }
        }
        let listed: std::collections::HashSet<Uuid> = listed.into_iter().collect();
        for id in self.store.media_created_before(cutoff).await? {
            if !listed.contains(&id) && self.store.delete_medium(None, id).await?.is_some() {
                report.rows_without_object += 1;
                self.metrics
                    .inc("media_swept_total", &[("reason", "row_without_object")]);
            }
        }
        Ok(report)
    }

    /// Deletes medium `id`'s file and counts why.
    async fn forget_file(&self, id: Uuid, reason: &str) {
        match self.own.objects().delete(id).await {
            Ok(()) => self.metrics.inc("media_swept_total", &[("reason", reason)]),
            Err(error) => {
                tracing::warn!(%error, %id, "media sweep: a file could not be deleted; the next sweep tries again");
            }
        }
    }
}

/// 32 random bytes, URL-safe base64 without padding.
fn new_token() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_what_they_ask_within_the_file() {
        assert_eq!(ByteRange::From(0, Some(9)).within(100), Some(0..10));
        assert_eq!(ByteRange::From(90, None).within(100), Some(90..100));
        assert_eq!(ByteRange::From(90, Some(500)).within(100), Some(90..100));
        assert_eq!(ByteRange::Last(10).within(100), Some(90..100));
        assert_eq!(ByteRange::Last(500).within(100), Some(0..100));
        assert_eq!(ByteRange::From(100, None).within(100), None);
        assert_eq!(ByteRange::From(5, Some(4)).within(100), None);
        assert_eq!(ByteRange::Last(0).within(100), None);
    }

    #[test]
    fn tokens_are_long_and_url_safe() {
        let token = new_token();
        assert!(crate::domain::media::is_token(&token), "{token}");
        assert_ne!(token, new_token());
    }
}
