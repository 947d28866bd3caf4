//! Our own media URLs (`{server.public_url}/media/{id}/{token}.{ext}`): telling them from
//! others, finding the medium one names, and reading its file from the media store. Serving
//! uses it, and so does the fetcher: a post that uses one of our files reads it from the store
//! rather than fetching our own URL over the network (which the private-address guard would
//! refuse on a private network anyway).

use chrono::Duration;
use entity::medium;
use sea_orm::DbErr;
use subtle::ConstantTimeEq;
use url::Url;
use uuid::Uuid;

use super::objects::MediaObjects;
use crate::{
    clock::SharedClock,
    domain::media::{MediaFormat, is_token},
    store::Store,
};

/// The parts of a file URL's path: `{id}/{token}.{extension}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePath {
    pub id: String,
    pub token: String,
    pub extension: String,
}

impl FilePath {
    /// `file` is the last segment, `{token}.{extension}`.
    pub fn new(id: &str, file: &str) -> Option<Self> {
        let (token, extension) = file.rsplit_once('.')?;
        Some(Self {
            id: id.to_string(),
            token: token.to_string(),
            extension: extension.to_string(),
        })
    }
}

/// The media this service hosts.
#[derive(Clone)]
pub struct OwnMedia {
    store: Store,
    objects: MediaObjects,
    /// `server.public_url`, parsed; `None` when it does not parse (then no URL is ours).
    base: Option<Url>,
    clock: SharedClock,
    /// How long a file is kept after a post uses it (`media.retention_days`).
    retention: Duration,
}

impl std::fmt::Debug for OwnMedia {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnMedia")
            .field("objects", &self.objects)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl OwnMedia {
    pub fn new(
        store: Store,
        objects: MediaObjects,
        public_url: &str,
        clock: SharedClock,
        retention: Duration,
    ) -> Self {
        Self {
            store,
            objects,
            base: Url::parse(&format!("{}/", public_url.trim_end_matches('/'))).ok(),
            clock,
            retention,
        }
    }

    /// A post uses medium `id`: it is kept `media.retention_days` from now at least. A failure
    /// is logged, not raised: the post goes on, and the file is kept at least as long as before.
    pub async fn touch(&self, id: Uuid) {
        let now = self.clock.now();
        if let Err(error) = self.store.touch_medium(id, now, now + self.retention).await {
            tracing::warn!(%error, %id, "media: a use could not be recorded");
        }
    }

    pub fn objects(&self) -> &MediaObjects {
        &self.objects
    }

    /// The file path of `url` when it is one of our media URLs (same scheme, host and port as
    /// the public URL, under its path).
    pub fn file_path(&self, url: &Url) -> Option<FilePath> {
        let base = self.base.as_ref()?;
        let same_origin = url.scheme() == base.scheme()
            && url.host_str().map(str::to_ascii_lowercase)
                == base.host_str().map(str::to_ascii_lowercase)
            && url.port_or_known_default() == base.port_or_known_default();
        if !same_origin || url.query().is_some() {
            return None;
        }
        let rest = url
            .path()
            .strip_prefix(base.path())?
            .strip_prefix("media/")?;
        let (id, file) = rest.split_once('/')?;
        if file.contains('/') {
            return None;
        }
        FilePath::new(id, file)
    }

    /// The medium `path` names, with its format; `None` when the id, the token or the extension
    /// does not match one (all the same to the caller). The token is compared in constant time.
    pub async fn find(
        &self,
        path: &FilePath,
    ) -> Result<Option<(medium::Model, MediaFormat)>, DbErr> {
        let (Ok(id), true, Some(format)) = (
            Uuid::try_parse(&path.id),
            is_token(&path.token),
            MediaFormat::from_extension(&path.extension),
        ) else {
            return Ok(None);
        };
        let Some(row) = self.store.find_medium(id).await? else {
            return Ok(None);
        };
        let matches: bool = row.token.as_bytes().ct_eq(path.token.as_bytes()).into();
        let same_format = MediaFormat::from_content_type(&row.content_type) == Some(format);
        Ok((matches && same_format).then_some((row, format)))
    }
}
