//! Media URLs: normalisation, the SSRF guard, the probe and the download for uploads.
//!
//! A module of its own, below both `publish` (the probe at validation) and `platforms` (the
//! uploads): it reports [`MediaError`], which the adapters convert at their boundary
//! (`impl From<MediaError> for PlatformError` in `platforms`), so it depends on neither.
//!
//! Every fetch of a user-supplied URL goes through [`MediaFetcher`]. It refuses URLs whose host
//! resolves to a loopback, private, link-local, unique-local, unspecified (or otherwise
//! non-public) address, unless `publishing.media_allow_hosts` names that `host:port`. The check is
//! made on the *resolved* addresses (a custom DNS resolver for names, a direct check for IP
//! literals), and redirects are followed by hand so that every hop is checked again.

use std::{
    collections::HashSet,
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::{
    Method, StatusCode,
    dns::{Addrs, Name, Resolve, Resolving},
    header,
    redirect::Policy,
};
use url::Url;

use crate::{
    domain::media::{HEADER_BYTES, MediaFormat, image_dimensions},
    error::{ApiError, ErrorCode},
};

/// How many redirects a media URL may take.
const MAX_REDIRECTS: usize = 5;
/// How long a probe may take in all.
const PROBE_DEADLINE: Duration = Duration::from_secs(30);

pub mod objects;
pub mod own;

pub use crate::domain::plan::{MediaKind, MediaRef};
use own::OwnMedia;

/// Why a media URL was refused, or a download for an upload failed. Every variant displays its
/// message alone: the probe maps it to the catalogue ([`MediaError::into_api_error`]), an
/// upload to the platform error for media that could not be fetched (in `platforms`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MediaError {
    #[error("{0}")]
    InvalidUrl(String),
    #[error("{0}")]
    DownloadFailed(String),
    #[error("{0}")]
    InvalidType(String),
    #[error("{0}")]
    TooLarge(String),
}

impl MediaError {
    pub fn into_api_error(self) -> ApiError {
        match self {
            MediaError::InvalidUrl(m) => ApiError::new(ErrorCode::InvalidMediaUrl, m),
            MediaError::DownloadFailed(m) => ApiError::new(ErrorCode::MediaDownloadFailed, m),
            MediaError::InvalidType(m) => ApiError::new(ErrorCode::InvalidMediaType, m),
            MediaError::TooLarge(m) => ApiError::new(ErrorCode::MediaTooLarge, m),
        }
    }
}

/// Which media types a post accepts at one position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accept {
    pub images: bool,
    pub videos: bool,
    /// WEBP images (the spec names WEBP for threads; tiktok photo mode takes it too).
    pub webp: bool,
    /// PNG images (everywhere but tiktok photo mode).
    pub png: bool,
}

/// Whether an address is one the public internet could have given us.
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            let v4_at = |hi: u16, lo: u16| {
                Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)
            };
            // Forms that embed an IPv4 address: NAT64 64:ff9b::/96 and IPv4-compatible ::/96.
            if (s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0]) || s[0..6] == [0; 6] {
                return is_public_v4(v4_at(s[6], s[7]));
            }
            // 6to4 (2002::/16) carries an IPv4 address in segments 1-2.
            if s[0] == 0x2002 {
                return is_public_v4(v4_at(s[1], s[2]));
            }
            // Teredo (2001::/32) and local-use NAT64 (64:ff9b:1::/48) tunnel to addresses we
            // cannot check: refuse.
            if (s[0] == 0x2001 && s[1] == 0) || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1) {
                return false;
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link local fe80::/10
                || (s[0] & 0xffc0) == 0xfec0 // site local (deprecated) fec0::/10
                || v6 == Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1)
                || (s[0] == 0x2001 && s[1] == 0x0db8)) // documentation
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && ip.octets()[2] == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240) // reserved
}

/// A DNS resolver that refuses names resolving to any non-public address.
pub(crate) struct PublicOnlyResolver;

impl Resolve for PublicOnlyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addrs.is_empty() {
                return Err(format!("{host} does not resolve").into());
            }
            if let Some(bad) = addrs.iter().find(|a| !is_public_ip(a.ip())) {
                return Err(Box::new(PrivateAddress(format!(
                    "{host} resolves to a non-public address ({})",
                    bad.ip()
                )))
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[derive(Debug)]
struct PrivateAddress(String);

impl std::fmt::Display for PrivateAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PrivateAddress {}

/// Fetches user-supplied media URLs safely.
#[derive(Clone)]
pub struct MediaFetcher {
    /// For any host: resolves through [`PublicOnlyResolver`].
    guarded: reqwest::Client,
    /// For allow-listed `host:port` pairs only.
    trusted: reqwest::Client,
    allow: Arc<HashSet<String>>,
    max_bytes: u64,
    /// Our own media URLs, read from the media store rather than over the network.
    own: Option<Arc<OwnMedia>>,
}

/// An open download: headers read, body not yet.
pub struct MediaDownload {
    pub url: String,
    pub content_type: String,
    pub content_length: Option<u64>,
    body: BodyStream,
}

/// A download's body, from the network or from the media store.
type BodyStream = futures_util::stream::BoxStream<'static, Result<Bytes, std::io::Error>>;

impl MediaDownload {
    /// The body as a streaming request body for an upload.
    pub fn into_body(self) -> reqwest::Body {
        reqwest::Body::wrap_stream(self.body)
    }

    /// Reads the body in pieces of at most `chunk_bytes` (one piece in memory at a time).
    pub fn into_chunks(self, chunk_bytes: usize) -> ChunkReader {
        ChunkReader {
            stream: self.body,
            pending: Vec::new(),
            chunk_bytes: chunk_bytes.max(1),
            done: false,
        }
    }
}

/// Re-chunks a byte stream into pieces of a fixed size (the last may be shorter).
pub struct ChunkReader {
    stream: BodyStream,
    pending: Vec<u8>,
    chunk_bytes: usize,
    done: bool,
}

impl ChunkReader {
    /// The next piece, or `None` at the end.
    pub async fn next_chunk(&mut self) -> Result<Option<Bytes>, MediaError> {
        while !self.done && self.pending.len() < self.chunk_bytes {
            match self.stream.next().await {
                Some(Ok(bytes)) => self.pending.extend_from_slice(&bytes),
                Some(Err(e)) => {
                    return Err(MediaError::DownloadFailed(format!(
                        "media download broke off: {e}"
                    )));
                }
                None => self.done = true,
            }
        }
        if self.pending.is_empty() {
            return Ok(None);
        }
        let take = self.pending.len().min(self.chunk_bytes);
        let rest = self.pending.split_off(take);
        let chunk = std::mem::replace(&mut self.pending, rest);
        Ok(Some(Bytes::from(chunk)))
    }
}

impl MediaFetcher {
    pub fn new(allow_hosts: &[String], max_bytes: u64) -> Result<Self, reqwest::Error> {
        // No proxies: a proxy would resolve the name itself, past our resolver.
        let guarded = reqwest::Client::builder()
            .no_proxy()
            .redirect(Policy::none())
            .dns_resolver(Arc::new(PublicOnlyResolver))
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(60))
            .build()?;
        let trusted = reqwest::Client::builder()
            .no_proxy()
            .redirect(Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(60))
            .build()?;
        let allow = allow_hosts
            .iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        Ok(Self {
            guarded,
            trusted,
            allow: Arc::new(allow),
            max_bytes,
            own: None,
        })
    }

    /// Reads our own media URLs from `own`'s store.
    pub fn with_own(mut self, own: Arc<OwnMedia>) -> Self {
        self.own = Some(own);
        self
    }

    /// The medium behind `url` when it is one of ours: `Ok(None)` for other URLs.
    async fn own_medium(
        &self,
        url: &Url,
    ) -> Result<
        Option<(
            Arc<OwnMedia>,
            entity::medium::Model,
            crate::domain::media::MediaFormat,
        )>,
        MediaError,
    > {
        let Some((own, path)) = self
            .own
            .as_ref()
            .and_then(|own| Some((own.clone(), own.file_path(url)?)))
        else {
            return Ok(None);
        };
        let found = own.find(&path).await.map_err(|e| {
            MediaError::DownloadFailed(format!("Media URL {url} could not be looked up: {e}"))
        })?;
        match found {
            Some((row, format)) => Ok(Some((own, row, format))),
            None => Err(MediaError::DownloadFailed(format!(
                "Media URL {url} answered HTTP 404; it must answer 200"
            ))),
        }
    }

    /// One of our own files, opened from the media store.
    async fn open_own(&self, url: &Url) -> Result<Option<MediaDownload>, MediaError> {
        let Some((own, row, format)) = self.own_medium(url).await? else {
            return Ok(None);
        };
        let read = own.objects().read(row.id, None).await.map_err(|e| {
            MediaError::DownloadFailed(format!("Media URL {url} could not be read: {e}"))
        })?;
        let body = read
            .stream
            .map(|piece| piece.map_err(|e| std::io::Error::other(e.to_string())))
            .boxed();
        Ok(Some(MediaDownload {
            url: url.to_string(),
            content_type: format.content_type().to_string(),
            content_length: Some(read.size),
            body,
        }))
    }

    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    fn allow_key(url: &Url) -> Option<String> {
        let host = url.host_str()?.to_ascii_lowercase();
        let port = url.port_or_known_default()?;
        Some(format!("{host}:{port}"))
    }

    fn is_allow_listed(&self, url: &Url) -> bool {
        Self::allow_key(url).is_some_and(|k| self.allow.contains(&k))
    }

    /// Parses a user-supplied media URL: http or https with a host; http is upgraded to https
    /// unless the host is allow-listed (a local simulator may stay on plain http).
    pub fn normalize(&self, raw: &str) -> Result<Url, MediaError> {
        let trimmed = raw.trim();
        let invalid =
            |why: &str| MediaError::InvalidUrl(format!("Invalid media URL '{raw}': {why}"));
        if trimmed.is_empty() {
            return Err(invalid("empty"));
        }
        let mut url = Url::parse(trimmed).map_err(|_| invalid("not an absolute URL"))?;
        match url.scheme() {
            "https" => {}
            "http" => {
                if !self.is_allow_listed(&url) {
                    url.set_scheme("https")
                        .map_err(|_| invalid("cannot upgrade to https"))?;
                    if url.port() == Some(80) {
                        let _ = url.set_port(None);
                    }
                }
            }
            "file" => return Err(invalid("local file paths are not accepted")),
            _ => return Err(invalid("only http and https URLs are accepted")),
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(invalid("no host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid("credentials in URLs are not accepted"));
        }
        Ok(url)
    }

    /// Checks one hop: allow-listed, or (for IP literals) a public address. Names are checked by
    /// the resolver when connecting.
    fn check_hop(&self, url: &Url) -> Result<&reqwest::Client, MediaError> {
        if self.is_allow_listed(url) {
            return Ok(&self.trusted);
        }
        let refuse = |ip: IpAddr| {
            MediaError::InvalidUrl(format!(
                "Media URL {url} points to a non-public address ({ip}); it must be publicly reachable"
            ))
        };
        match url.host() {
            Some(url::Host::Ipv4(ip)) if !is_public_ip(IpAddr::V4(ip)) => Err(refuse(ip.into())),
            Some(url::Host::Ipv6(ip)) if !is_public_ip(IpAddr::V6(ip)) => Err(refuse(ip.into())),
            Some(_) => Ok(&self.guarded),
            None => Err(MediaError::InvalidUrl(format!(
                "Media URL {url} has no host"
            ))),
        }
    }

    /// Opens a media URL: follows up to five redirects, checking every hop, and returns once the
    /// headers of a 200 response are in.
    pub async fn open(&self, url: &Url) -> Result<MediaDownload, MediaError> {
        if let Some(own) = self.open_own(url).await? {
            return Ok(own);
        }
        let mut current = url.clone();
        for _ in 0..=MAX_REDIRECTS {
            let client = self.check_hop(&current)?;
            let response = client
                .request(Method::GET, current.clone())
                .send()
                .await
                .map_err(|e| describe_send_error(&current, e))?;
            let status = response.status();
            if status.is_redirection() {
                let location = response
                    .headers()
                    .get(header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| {
                        MediaError::DownloadFailed(format!(
                            "Media URL {current} redirected without a Location"
                        ))
                    })?;
                let next = current.join(location).map_err(|_| {
                    MediaError::DownloadFailed(format!(
                        "Media URL {current} redirected to an invalid location"
                    ))
                })?;
                if !matches!(next.scheme(), "http" | "https") {
                    return Err(MediaError::InvalidUrl(format!(
                        "Media URL {current} redirected to a non-http location"
                    )));
                }
                // The same rule as for the URL given: https unless the host is allow-listed.
                current = self.normalize(next.as_str())?;
                continue;
            }
            if status != StatusCode::OK {
                return Err(MediaError::DownloadFailed(format!(
                    "Media URL {current} answered HTTP {}; it must answer 200",
                    status.as_u16()
                )));
            }
            let content_type = response
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(|v| {
                    v.split(';')
                        .next()
                        .unwrap_or_default()
                        .trim()
                        .to_ascii_lowercase()
                })
                .unwrap_or_default();
            let content_length = response.content_length();
            let body = response
                .bytes_stream()
                .map(|piece| piece.map_err(std::io::Error::other))
                .boxed();
            return Ok(MediaDownload {
                url: current.to_string(),
                content_type,
                content_length,
                body,
            });
        }
        Err(MediaError::DownloadFailed(format!(
            "Media URL {url} redirected more than {MAX_REDIRECTS} times"
        )))
    }

    /// Opens a media URL (one that passed the probe) for an upload. The URL is taken as stored,
    /// not normalised again; one that does not parse is an [`MediaError::InvalidUrl`] with the
    /// parser's message alone.
    pub async fn open_for_upload(&self, url: &str) -> Result<MediaDownload, MediaError> {
        let parsed = Url::parse(url).map_err(|e| MediaError::InvalidUrl(e.to_string()))?;
        self.open(&parsed).await
    }

    /// The probe: the URL answers 200 with an accepted content type and a size within the
    /// limit. Nothing is downloaded beyond the headers.
    pub async fn probe(&self, raw: &str, accept: Accept) -> Result<MediaRef, MediaError> {
        // Our own files are looked up, not fetched, at the URL as given (the public URL may be
        // plain http on a private network).
        if let Ok(url) = Url::parse(raw.trim())
            && let Some((own, row, format)) = self.own_medium(&url).await?
        {
            own.touch(row.id).await;
            let kind = classify(format.content_type(), accept).ok_or_else(|| {
                MediaError::InvalidType(format!(
                    "Unsupported media type '{}' at {url}; accepted: {}",
                    format.content_type(),
                    accepted_list(accept)
                ))
            })?;
            let dimensions = row
                .width
                .zip(row.height)
                .and_then(|(w, h)| Some((u32::try_from(w).ok()?, u32::try_from(h).ok()?)));
            return Ok(MediaRef {
                url: url.to_string(),
                kind,
                content_type: format.content_type().to_string(),
                size: u64::try_from(row.size).ok(),
                dimensions,
            });
        }
        let url = self.normalize(raw)?;
        // One deadline for the whole probe, redirects included (read timeouts restart per read).
        let download = tokio::time::timeout(PROBE_DEADLINE, self.open(&url))
            .await
            .map_err(|_| {
                MediaError::DownloadFailed(format!(
                    "Media URL {url} did not answer within {} s",
                    PROBE_DEADLINE.as_secs()
                ))
            })??;
        let kind = classify(&download.content_type, accept).ok_or_else(|| {
            let shown = if download.content_type.is_empty() {
                "none".to_string()
            } else {
                download.content_type.clone()
            };
            MediaError::InvalidType(format!(
                "Unsupported media type '{shown}' at {url}; accepted: {}",
                accepted_list(accept)
            ))
        })?;
        if let Some(size) = download.content_length
            && size > self.max_bytes
        {
            return Err(MediaError::TooLarge(format!(
                "Media file at {url} is {size} bytes; the maximum is {}MB",
                self.max_bytes / (1024 * 1024)
            )));
        }
        let (content_type, size) = (download.content_type.clone(), download.content_length);
        let dimensions = match kind {
            // Within the probe's deadline; a size that cannot be read is left to the platform.
            MediaKind::Image => tokio::time::timeout(PROBE_DEADLINE, image_size(download))
                .await
                .ok()
                .flatten(),
            MediaKind::Video => None,
        };
        Ok(MediaRef {
            url: url.to_string(),
            kind,
            content_type,
            size,
            dimensions,
        })
    }
}

/// An image's width and height from the header at the start of its body: pieces are read until
/// the header is whole, [`HEADER_BYTES`] at most.
async fn image_size(download: MediaDownload) -> Option<(u32, u32)> {
    let format = MediaFormat::from_content_type(&download.content_type)?;
    let mut body = download.body;
    let mut head = Vec::new();
    while head.len() < HEADER_BYTES {
        head.extend_from_slice(&body.next().await?.ok()?);
        if let Some(size) = image_dimensions(format, &head) {
            return Some(size);
        }
    }
    None
}

fn describe_send_error(url: &Url, err: reqwest::Error) -> MediaError {
    let mut source: Option<&dyn std::error::Error> = Some(&err);
    while let Some(e) = source {
        if let Some(private) = e.downcast_ref::<PrivateAddress>() {
            return MediaError::InvalidUrl(format!(
                "Media URL {url} is not publicly reachable: {private}"
            ));
        }
        source = e.source();
    }
    MediaError::DownloadFailed(format!("Media URL {url} could not be fetched: {err}"))
}

/// The media kind of a content type, if the position accepts it.
pub fn classify(content_type: &str, accept: Accept) -> Option<MediaKind> {
    match content_type {
        "image/jpeg" | "image/jpg" | "image/pjpeg" if accept.images => Some(MediaKind::Image),
        "image/png" if accept.images && accept.png => Some(MediaKind::Image),
        "image/webp" if accept.images && accept.webp => Some(MediaKind::Image),
        "video/mp4" | "video/quicktime" if accept.videos => Some(MediaKind::Video),
        _ => None,
    }
}

fn accepted_list(accept: Accept) -> String {
    let mut names = Vec::new();
    if accept.images {
        names.push("JPG/JPEG");
        if accept.png {
            names.push("PNG");
        }
        if accept.webp {
            names.push("WEBP");
        }
    }
    if accept.videos {
        names.push("MP4, MOV");
    }
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_public_addresses_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "64:ff9b::a00:1",
            "::7f00:1",
            "2002:7f00:1::1",
            "2002:a00:1::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "64:ff9b:1::a00:1",
        ] {
            let parsed: IpAddr = ip.parse().unwrap();
            assert!(!is_public_ip(parsed), "{ip} must not count as public");
        }
        for ip in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
            let parsed: IpAddr = ip.parse().unwrap();
            assert!(is_public_ip(parsed), "{ip} is public");
        }
    }

    #[test]
    fn http_is_upgraded_unless_allow_listed() {
        let fetcher = MediaFetcher::new(&["127.0.0.1:9000".into()], 100).unwrap();
        assert_eq!(
            fetcher
                .normalize("http://cdn.example.com/a.jpg")
                .unwrap()
                .as_str(),
            "https://cdn.example.com/a.jpg"
        );
        assert_eq!(
            fetcher
                .normalize("http://127.0.0.1:9000/a.jpg")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:9000/a.jpg"
        );
        for bad in [
            "",
            "ftp://x/a.jpg",
            "file:///etc/passwd",
            "/tmp/a.jpg",
            "https://u:p@x.com/a",
        ] {
            assert!(
                matches!(fetcher.normalize(bad), Err(MediaError::InvalidUrl(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn content_types_follow_the_accepted_formats() {
        let images = Accept {
            images: true,
            videos: false,
            webp: false,
            png: true,
        };
        let threads = Accept {
            images: true,
            videos: true,
            webp: true,
            png: true,
        };
        assert_eq!(classify("image/png", images), Some(MediaKind::Image));
        assert_eq!(classify("image/webp", images), None);
        assert_eq!(classify("image/webp", threads), Some(MediaKind::Image));
        assert_eq!(classify("video/quicktime", threads), Some(MediaKind::Video));
        assert_eq!(classify("video/mp4", images), None);
        assert_eq!(classify("text/html", threads), None);
    }
}
