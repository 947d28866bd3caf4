//! The static media host under `/media`: files with the content types and sizes platforms and
//! the service check. Bodies are generated (a format's magic bytes, then filler), so nothing is
//! stored and a file of any size costs nothing.
//!
//! - `sample.jpg`, `sample.png`, `sample.webp`, `sample.mp4`, `sample.mov`: small valid-typed files;
//! - `large.mp4`: 150 MB by `Content-Length` (streamed on GET);
//! - `sized/{bytes}.mp4`: an MP4 of exactly that many bytes (streamed);
//! - `wrong-type.jpg`: answers `text/html`;
//! - `missing.jpg`: 404;
//! - `redirect?to=URL`: 302 to `URL` (for redirect checks).

use actix_web::{HttpResponse, http::header, web};
use bytes::Bytes;
use serde::Deserialize;

/// Size of `large.mp4`: over the 100 MB limit.
pub const LARGE_VIDEO_BYTES: u64 = 150 * 1024 * 1024;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/redirect", web::get().to(redirect))
        .route("/sized/{bytes}.mp4", web::get().to(sized_video))
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

fn body_of(magic: &[u8], size: usize) -> Vec<u8> {
    let mut body = magic.to_vec();
    body.resize(size.max(magic.len()), 0x20);
    body
}

async fn file(name: web::Path<String>) -> HttpResponse {
    let (content_type, body): (&str, Vec<u8>) = match name.as_str() {
        "sample.jpg" => ("image/jpeg", body_of(&[0xFF, 0xD8, 0xFF, 0xE0], 48 * 1024)),
        "sample.png" => ("image/png", body_of(b"\x89PNG\r\n\x1a\n", 32 * 1024)),
        "sample.webp" => ("image/webp", body_of(b"RIFF\0\0\0\0WEBPVP8 ", 24 * 1024)),
        "sample.mp4" => ("video/mp4", body_of(b"\0\0\0\x18ftypmp42", 512 * 1024)),
        "sample.mov" => (
            "video/quicktime",
            body_of(b"\0\0\0\x14ftypqt  ", 512 * 1024),
        ),
        "wrong-type.jpg" => (
            "text/html",
            b"<html><body>not an image</body></html>".to_vec(),
        ),
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
