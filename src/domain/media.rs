//! Uploaded media: the kinds the service accepts, told from a file's first bytes (never from its
//! name or declared type), an image's size from its header, and the ids and tokens of the
//! public URLs they are served at.

use serde::{Deserialize, Serialize};

/// How many leading bytes the type is decided from.
pub const SNIFF_BYTES: usize = 64;

/// How much of a file's start is kept to read an image's size from: a JPEG's frame header may
/// follow large metadata segments (EXIF thumbnails), each up to 64 KiB.
pub const HEADER_BYTES: usize = 512 * 1024;

/// The media an upload may be: the spec's image and video formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MediaFormat {
    Jpeg,
    Png,
    Webp,
    Mp4,
    Mov,
}

impl MediaFormat {
    pub const ALL: [MediaFormat; 5] = [Self::Jpeg, Self::Png, Self::Webp, Self::Mp4, Self::Mov];

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Jpeg => "image/jpeg",
            Self::Png => "image/png",
            Self::Webp => "image/webp",
            Self::Mp4 => "video/mp4",
            Self::Mov => "video/quicktime",
        }
    }

    /// The extension of its public URL.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Jpeg => "jpg",
            Self::Png => "png",
            Self::Webp => "webp",
            Self::Mp4 => "mp4",
            Self::Mov => "mov",
        }
    }

    pub fn is_video(self) -> bool {
        matches!(self, Self::Mp4 | Self::Mov)
    }

    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let kind = match essence.as_str() {
            "image/jpeg" | "image/jpg" | "image/pjpeg" => Self::Jpeg,
            "image/png" => Self::Png,
            "image/webp" => Self::Webp,
            "video/mp4" => Self::Mp4,
            "video/quicktime" => Self::Mov,
            _ => return None,
        };
        Some(kind)
    }

    pub fn from_extension(extension: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.extension() == extension)
    }

    /// The kind `head` (a file's first bytes) is, by its magic numbers; `None` for anything
    /// else (SVG, HTML, GIF, text…).
    pub fn sniff(head: &[u8]) -> Option<Self> {
        let found = infer::get(head)?;
        match found.mime_type() {
            "image/jpeg" => Some(Self::Jpeg),
            "image/png" => Some(Self::Png),
            "image/webp" => Some(Self::Webp),
            "video/mp4" => Some(Self::Mp4),
            "video/quicktime" => Some(Self::Mov),
            _ => None,
        }
    }

    /// Whether a declared content type agrees with the bytes: the same kind, or a type that
    /// says nothing (`application/octet-stream`, none at all).
    pub fn agrees_with(self, declared: Option<&str>) -> bool {
        match declared.map(str::trim).filter(|d| !d.is_empty()) {
            None => true,
            Some(d) if d.starts_with("application/octet-stream") => true,
            Some(d) => Self::from_content_type(d) == Some(self),
        }
    }
}

/// An image's width and height in pixels, from the header in `head`; `None` for videos and for
/// a header that cannot be read.
pub fn image_dimensions(kind: MediaFormat, head: &[u8]) -> Option<(u32, u32)> {
    if kind.is_video() {
        return None;
    }
    let size = imagesize::blob_size(head).ok()?;
    Some((
        u32::try_from(size.width).ok()?,
        u32::try_from(size.height).ok()?,
    ))
}

/// Whether `token` has the form of a served medium's token (so that a malformed one never
/// reaches the database).
pub fn is_token(token: &str) -> bool {
    token.len() == TOKEN_CHARS
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A token is 32 random bytes in URL-safe base64 without padding.
pub const TOKEN_CHARS: usize = 43;

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        bytes.extend_from_slice(&width.to_be_bytes());
        bytes.extend_from_slice(&height.to_be_bytes());
        bytes.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        bytes
    }

    #[test]
    fn kinds_come_from_the_bytes_not_the_declared_type() {
        assert_eq!(MediaFormat::sniff(&png(2, 3)), Some(MediaFormat::Png));
        assert_eq!(
            MediaFormat::sniff(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]),
            Some(MediaFormat::Jpeg)
        );
        assert_eq!(
            MediaFormat::sniff(b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom"),
            Some(MediaFormat::Mp4)
        );
        assert_eq!(
            MediaFormat::sniff(b"\0\0\0\x14ftypqt  \0\0\0\0qt  "),
            Some(MediaFormat::Mov)
        );
        assert_eq!(
            MediaFormat::sniff(b"<svg xmlns='http://www.w3.org/2000/svg'/>"),
            None
        );
        assert_eq!(MediaFormat::sniff(b"<!DOCTYPE html><html></html>"), None);
        assert_eq!(MediaFormat::sniff(b"GIF89a\x01\0\x01\0"), None);
        assert_eq!(MediaFormat::sniff(b""), None);
    }

    #[test]
    fn a_declared_type_must_agree_or_say_nothing() {
        assert!(MediaFormat::Png.agrees_with(Some("image/png")));
        assert!(MediaFormat::Png.agrees_with(Some("application/octet-stream")));
        assert!(MediaFormat::Png.agrees_with(None));
        assert!(MediaFormat::Jpeg.agrees_with(Some("image/jpg; charset=binary")));
        assert!(!MediaFormat::Png.agrees_with(Some("image/jpeg")));
        assert!(!MediaFormat::Mp4.agrees_with(Some("text/html")));
    }

    #[test]
    fn image_sizes_come_from_the_header() {
        assert_eq!(
            image_dimensions(MediaFormat::Png, &png(1080, 1350)),
            Some((1080, 1350))
        );
        assert_eq!(image_dimensions(MediaFormat::Mp4, &png(1, 1)), None);
        assert_eq!(image_dimensions(MediaFormat::Png, b"\x89PNG"), None);
    }

    #[test]
    fn tokens_have_one_form() {
        assert!(is_token(&"a".repeat(TOKEN_CHARS)));
        assert!(!is_token(&"a".repeat(TOKEN_CHARS - 1)));
        assert!(!is_token(&format!("{}/", "a".repeat(TOKEN_CHARS - 1))));
    }
}
