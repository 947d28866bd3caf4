//! The static media host under `/media`: files with the content types and sizes platforms and
//! the service check.
//!
//! - `sample.jpg`, `sample.png`, `sample.webp`: 1080x1080 images (square, inside every
//!   platform's aspect-ratio range);
//! - `sample.mp4` and `sample.mov` (QuickTime, brand `qt  `): 720x1280 (9:16, the vertical
//!   format of reels, TikTok and Shorts), one second of H.264 at 30 fps without sound;
//! - `large.mp4`: 150 MB by `Content-Length` (streamed on GET);
//! - `sized/{bytes}.mp4`: an MP4 of exactly that many bytes (streamed);
//! - `image/{width}x{height}.png`: a PNG whose header says that size (for aspect-ratio checks;
//!   nothing after the header decodes);
//! - `wrong-type.jpg`: answers `text/html`;
//! - `missing.jpg`: 404;
//! - `redirect?to=URL`: 302 to `URL` (for redirect checks).
//!
//! The samples are real files, kept in `assets/media/` and compiled in, so whatever reads their
//! headers (a platform, a browser, a media probe) finds a valid file of the stated dimensions.
//! Each is a few tens of kilobytes, so tests and the demo move little data and every platform
//! takes a sample in one upload chunk. The large and sized files only need a size: their bodies
//! are zeros streamed in pieces, so a file of any size costs nothing to keep.

use actix_web::{HttpResponse, http::header, web};
use bytes::Bytes;
use serde::Deserialize;

/// Size of `large.mp4`: over the 100 MB limit.
pub const LARGE_VIDEO_BYTES: u64 = 150 * 1024 * 1024;

/// `sample.jpg`: a baseline JPEG, 1080x1080.
pub const SAMPLE_JPG: &[u8] = include_bytes!("../assets/media/sample.jpg");
/// `sample.png`: an RGB PNG, 1080x1080.
pub const SAMPLE_PNG: &[u8] = include_bytes!("../assets/media/sample.png");
/// `sample.webp`: a lossy (VP8) WebP, 1080x1080.
pub const SAMPLE_WEBP: &[u8] = include_bytes!("../assets/media/sample.webp");
/// `sample.mp4`: H.264, 720x1280, one second, `moov` ahead of `mdat` so playback can start
/// while it downloads.
pub const SAMPLE_MP4: &[u8] = include_bytes!("../assets/media/sample.mp4");
/// `sample.mov`: the same video in a QuickTime file.
pub const SAMPLE_MOV: &[u8] = include_bytes!("../assets/media/sample.mov");

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/redirect", web::get().to(redirect))
        .route("/sized/{bytes}.mp4", web::get().to(sized_video))
        .route("/image/{width}x{height}.png", web::get().to(sized_image))
        .route("/{name}", web::get().to(file));
}

/// The sample files the demo lists in `sample_media`, by purpose.
pub fn sample_media(base_url: &str) -> serde_json::Value {
    let m = |name: &str| format!("{base_url}/media/{name}");
    serde_json::json!({
        "jpeg": m("sample.jpg"),
        "png": m("sample.png"),
        "webp": m("sample.webp"),
        "mp4": m("sample.mp4"),
        "mov": m("sample.mov"),
        "too_large": m("large.mp4"),
        "wrong_content_type": m("wrong-type.jpg"),
        "not_found": m("missing.jpg"),
    })
}

async fn file(name: web::Path<String>) -> HttpResponse {
    let (content_type, body): (&str, &'static [u8]) = match name.as_str() {
        "sample.jpg" => ("image/jpeg", SAMPLE_JPG),
        "sample.png" => ("image/png", SAMPLE_PNG),
        "sample.webp" => ("image/webp", SAMPLE_WEBP),
        "sample.mp4" => ("video/mp4", SAMPLE_MP4),
        "sample.mov" => ("video/quicktime", SAMPLE_MOV),
        "wrong-type.jpg" => ("text/html", b"<html><body>not an image</body></html>"),
        "large.mp4" => return streamed("video/mp4", LARGE_VIDEO_BYTES),
        _ => {
            return HttpResponse::NotFound()
                .content_type("text/plain")
                .body("not found");
        }
    };
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, content_type))
        .body(body)
}

/// The start of a PNG of `width` × `height`: the signature and its `IHDR` chunk (8-bit RGBA).
pub fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend_from_slice(&13u32.to_be_bytes());
    bytes.extend_from_slice(&ihdr);
    // The CRC is not checked by header readers; zero marks it as not computed.
    bytes.extend_from_slice(&[0, 0, 0, 0]);
    bytes
}

async fn sized_image(size: web::Path<(u32, u32)>) -> HttpResponse {
    let (width, height) = size.into_inner();
    let mut body = png_header(width, height);
    body.resize(4 * 1024, 0);
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "image/png"))
        .body(body)
}

async fn sized_video(bytes: web::Path<u64>) -> HttpResponse {
    streamed("video/mp4", *bytes)
}

/// A body of `size` bytes produced in 64 KiB pieces, with an exact `Content-Length`.
fn streamed(content_type: &str, size: u64) -> HttpResponse {
    const PIECE: u64 = 64 * 1024;
    let stream = futures_util::stream::unfold(0u64, move |sent| async move {
        if sent >= size {
            return None;
        }
        let n = PIECE.min(size - sent);
        let piece = Bytes::from(vec![0u8; n as usize]);
        Some((Ok::<_, std::io::Error>(piece), sent + n))
    });
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, content_type.to_string()))
        .no_chunking(size)
        .streaming(stream)
}

#[derive(Deserialize)]
struct RedirectQuery {
    to: String,
}

async fn redirect(query: web::Query<RedirectQuery>) -> HttpResponse {
    HttpResponse::Found()
        .insert_header((header::LOCATION, query.to.clone()))
        .finish()
}

#[cfg(test)]
mod tests {
    //! The samples checked from their headers, by small parsers written against the formats'
    //! specifications rather than against the files.

    use super::*;

    fn be16(b: &[u8], at: usize) -> u32 {
        u32::from(u16::from_be_bytes([b[at], b[at + 1]]))
    }

    fn be32(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
    }

    fn le16(b: &[u8], at: usize) -> u32 {
        u32::from(u16::from_le_bytes([b[at], b[at + 1]]))
    }

    fn le24(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes([b[at], b[at + 1], b[at + 2], 0])
    }

    fn le32(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    /// Width and height from a JPEG's start-of-frame segment (SOF0 baseline or SOF2
    /// progressive), walking the marker segments from SOI.
    fn jpeg_size(b: &[u8]) -> (u32, u32) {
        assert_eq!(&b[..2], [0xFF, 0xD8], "SOI");
        let mut at = 2;
        loop {
            assert_eq!(b[at], 0xFF, "a marker at {at}");
            while b[at] == 0xFF {
                at += 1;
            }
            let marker = b[at];
            at += 1;
            // Markers without a length: TEM and RST0..RST7.
            if marker == 0x01 || (0xD0..=0xD7).contains(&marker) {
                continue;
            }
            assert!(
                marker != 0xD9 && marker != 0xDA,
                "no SOF before {marker:#04X}"
            );
            let length = be16(b, at) as usize;
            if marker == 0xC0 || marker == 0xC2 {
                // Length, sample precision, then height and width.
                return (be16(b, at + 5), be16(b, at + 3));
            }
            at += length;
        }
    }

    /// Width and height from a PNG's IHDR, which must be its first chunk.
    fn png_size(b: &[u8]) -> (u32, u32) {
        assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "signature");
        assert_eq!(be32(b, 8), 13, "IHDR length");
        assert_eq!(&b[12..16], b"IHDR");
        (be32(b, 16), be32(b, 20))
    }

    /// Width and height from a WebP's first chunk: VP8 (lossy), VP8L (lossless) or VP8X
    /// (extended).
    fn webp_size(b: &[u8]) -> (u32, u32) {
        assert_eq!(&b[..4], b"RIFF");
        assert_eq!(le32(b, 4) as usize, b.len() - 8, "RIFF size");
        assert_eq!(&b[8..12], b"WEBP");
        let data = 20;
        match &b[12..16] {
            b"VP8 " => {
                // A 3-byte frame tag, the start code, then 14-bit width and height.
                assert_eq!(&b[data + 3..data + 6], [0x9D, 0x01, 0x2A], "VP8 start code");
                (le16(b, data + 6) & 0x3FFF, le16(b, data + 8) & 0x3FFF)
            }
            b"VP8L" => {
                assert_eq!(b[data], 0x2F, "VP8L signature");
                let bits = le32(b, data + 1);
                ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
            }
            b"VP8X" => (le24(b, data + 4) + 1, le24(b, data + 7) + 1),
            other => panic!("unknown WebP chunk {other:?}"),
        }
    }

    /// The ISO-BMFF boxes in `b`, as `(type, payload)`.
    fn boxes(b: &[u8]) -> Vec<([u8; 4], &[u8])> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < b.len() {
            let size = be32(b, at) as usize;
            let kind: [u8; 4] = b[at + 4..at + 8].try_into().unwrap();
            let (header, size) = match size {
                0 => (8, b.len() - at),
                1 => {
                    let large = u64::from(be32(b, at + 8)) << 32 | u64::from(be32(b, at + 12));
                    (16, usize::try_from(large).unwrap())
                }
                n => (8, n),
            };
            assert!(size >= header && at + size <= b.len(), "box {kind:?} fits");
            out.push((kind, &b[at + header..at + size]));
            at += size;
        }
        out
    }

    fn child<'a>(b: &'a [u8], kind: &[u8; 4]) -> Option<&'a [u8]> {
        boxes(b)
            .into_iter()
            .find(|(k, _)| k == kind)
            .map(|(_, payload)| payload)
    }

    /// What a video file's header says: major brand, top-level boxes, the duration in seconds
    /// from `mvhd`, and the video track's sample format and `tkhd` width and height (16.16).
    struct Movie {
        brand: [u8; 4],
        top: Vec<[u8; 4]>,
        seconds: f64,
        codec: [u8; 4],
        width: u32,
        height: u32,
    }

    fn movie(b: &[u8]) -> Movie {
        let top = boxes(b);
        let ftyp = child(b, b"ftyp").expect("ftyp");
        let moov = child(b, b"moov").expect("moov");
        let mvhd = child(moov, b"mvhd").expect("mvhd");
        // Version 0 holds 32-bit times, version 1 64-bit ones.
        let (timescale, duration) = match mvhd[0] {
            0 => (be32(mvhd, 12), u64::from(be32(mvhd, 16))),
            _ => (
                be32(mvhd, 20),
                u64::from(be32(mvhd, 24)) << 32 | u64::from(be32(mvhd, 28)),
            ),
        };
        let video = boxes(moov)
            .into_iter()
            .filter(|(k, _)| k == b"trak")
            .map(|(_, trak)| trak)
            .find(|trak| {
                let hdlr = child(trak, b"mdia").and_then(|m| child(m, b"hdlr"));
                hdlr.is_some_and(|h| &h[8..12] == b"vide")
            })
            .expect("a video trak");
        let tkhd = child(video, b"tkhd").expect("tkhd");
        // After the times and duration: 8 reserved bytes, layer, group, volume, 2 reserved
        // and the 36-byte matrix, then width and height.
        let size_at = if tkhd[0] == 0 {
            4 + 20 + 52
        } else {
            4 + 32 + 52
        };
        let stsd = [b"mdia", b"minf", b"stbl", b"stsd"]
            .into_iter()
            .try_fold(video, child)
            .expect("stsd");
        Movie {
            brand: ftyp[..4].try_into().unwrap(),
            top: top.iter().map(|(k, _)| *k).collect(),
            seconds: duration as f64 / f64::from(timescale),
            // Version and flags, the entry count, then the first entry's size and format.
            codec: stsd[12..16].try_into().unwrap(),
            width: be32(tkhd, size_at),
            height: be32(tkhd, size_at + 4),
        }
    }

    #[test]
    fn the_sample_images_are_1080_square() {
        assert_eq!(jpeg_size(SAMPLE_JPG), (1080, 1080));
        assert_eq!(&SAMPLE_JPG[SAMPLE_JPG.len() - 2..], [0xFF, 0xD9], "EOI");
        assert_eq!(png_size(SAMPLE_PNG), (1080, 1080));
        assert_eq!(
            &SAMPLE_PNG[SAMPLE_PNG.len() - 8..SAMPLE_PNG.len() - 4],
            b"IEND"
        );
        assert_eq!(webp_size(SAMPLE_WEBP), (1080, 1080));
    }

    #[test]
    fn the_sample_videos_are_one_second_of_vertical_h264() {
        for (name, bytes, brand) in [("mp4", SAMPLE_MP4, b"isom"), ("mov", SAMPLE_MOV, b"qt  ")] {
            let movie = movie(bytes);
            assert_eq!(&movie.brand, brand, "{name}");
            assert_eq!(movie.top[0], *b"ftyp", "{name}");
            for kind in [b"moov", b"mdat"] {
                assert!(movie.top.contains(kind), "{name}: {:?}", movie.top);
            }
            assert_eq!(&movie.codec, b"avc1", "{name}");
            assert_eq!(
                (movie.width, movie.height),
                (720 << 16, 1280 << 16),
                "{name}"
            );
            assert!(
                (0.9..=1.1).contains(&movie.seconds),
                "{name}: {}",
                movie.seconds
            );
        }
    }

    #[test]
    fn the_samples_are_small() {
        for bytes in [SAMPLE_JPG, SAMPLE_PNG, SAMPLE_WEBP, SAMPLE_MP4, SAMPLE_MOV] {
            assert!(bytes.len() < 64 * 1024, "{} bytes", bytes.len());
        }
    }
}
