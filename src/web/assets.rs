//! Our own CSS and JS, embedded in the binary and served at `/static/{name}`, and the favicon.
//!
//! Pages link them with `?v=<content hash>` and they are served with a year-long, immutable
//! cache lifetime: a new build changes the hash, so browsers fetch the new file. The hash is
//! also the `ETag`, so a revalidation costs a 304.

use std::sync::LazyLock;

use actix_web::{HttpRequest, HttpResponse, http::header, web};

use crate::crypto;

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
    /// The first 16 hex digits of the body's SHA-256.
    hash: String,
    /// `/static/{name}?v={hash}`, as pages link it.
    href: String,
}

impl Asset {
    fn new(name: &'static str, content_type: &'static str, body: &'static str) -> Self {
        let hash: String = crypto::sha256_hex(body).chars().take(16).collect();
        let href = format!("/static/{name}?v={hash}");
        Self {
            name,
            content_type,
            body,
            hash,
            href,
        }
    }
}

static ASSETS: LazyLock<[Asset; 2]> = LazyLock::new(|| {
    [
        Asset::new(
            "app.css",
            "text/css; charset=utf-8",
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/static/app.css")),
        ),
        Asset::new(
            "app.js",
            "text/javascript; charset=utf-8",
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/static/app.js")),
        ),
    ]
});

pub fn css_href() -> &'static str {
    &ASSETS[0].href
}

pub fn js_href() -> &'static str {
    &ASSETS[1].href
}

/// `GET /static/{name}`.
pub async fn serve(req: HttpRequest, name: web::Path<String>) -> HttpResponse {
    let Some(asset) = ASSETS.iter().find(|asset| asset.name == name.as_str()) else {
        // Answered as JSON by the catalogue's error handlers, like any unknown route.
        return HttpResponse::NotFound().finish();
    };
    let etag = format!("\"{}\"", asset.hash);
    let cache = (header::CACHE_CONTROL, "public, max-age=31536000, immutable");
    let matches = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|tag| tag.trim() == etag || tag.trim() == "*")
        });
    if matches {
        return HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .insert_header(cache)
            .finish();
    }
    HttpResponse::Ok()
        .content_type(asset.content_type)
        .insert_header((header::ETAG, etag))
        .insert_header(cache)
        .body(asset.body)
}

/// The favicon (a 32×32 PNG in an ICO container), for the browsers' own request.
const FAVICON: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/static/favicon.ico"));

/// `GET /favicon.ico`. Browsers ask for it on every site unasked, so without it each page
/// logged a failed request. Its address cannot carry a content hash, hence a day's cache
/// rather than a year's.
pub async fn favicon() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("image/x-icon")
        .insert_header((header::CACHE_CONTROL, "public, max-age=86400"))
        .body(FAVICON)
}
