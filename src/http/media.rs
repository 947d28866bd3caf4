//! Uploaded media: `/v2/media…` (an API key or a dashboard session; not metered, the publish
//! that uses a file is) and the public file URLs `/media/{id}/{token}.{ext}` that platforms
//! fetch, with no authentication. The use cases are [`crate::services::media`]'s.

use actix_multipart::Multipart;
use actix_web::{HttpRequest, HttpResponse, http::header, middleware::from_fn, web};
use bytes::Bytes;
use futures_util::{Stream, StreamExt, TryStreamExt};
use serde::Serialize;
use utoipa::ToSchema;

use super::dto::{requests::HistoryQuery, schema::ErrorBody};
use crate::{
    AppState,
    error::{ApiError, ErrorCode},
    services::media::{ByteRange, Medium},
    store::Page,
    web::{
        auth::{Owner, require_session_or_api_key},
        body_deadline::{multipart_error, payload_error},
    },
};

pub fn configure(cfg: &mut web::ServiceConfig) {
    // `HEAD` is answered like `GET`: actix sends the head alone, with the body's length.
    cfg.service(
        web::resource("/media/{id}/{file}")
            .route(web::get().to(serve_medium))
            .route(web::head().to(serve_medium)),
    )
    .service(
        // An upload route of the body deadline (`is_upload`).
        web::scope("/v2/media")
            .wrap(from_fn(require_session_or_api_key))
            .route("", web::post().to(upload_media))
            .route("", web::get().to(list_media))
            .route("/{id}", web::get().to(get_medium))
            .route("/{id}", web::delete().to(delete_medium)),
    );
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MediumFound {
    pub success: bool,
    pub media: Medium,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MediaList {
    pub success: bool,
    pub media: Vec<Medium>,
    pub total: u64,
    pub limit: u64,
    pub offset: u64,
}

/// `POST /v2/media` as a form: other parts are skipped.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The file, with its `Content-Type` (optional: the bytes decide).
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MediumDeleted {
    pub success: bool,
}

/// Uploads one file: a `multipart/form-data` body with a `file` part, or the file itself as
/// the body with its `Content-Type`. The type is decided from the bytes.
#[utoipa::path(post, path = "/v2/media", tag = "media",
    security(("api_key" = []), ("session" = [])),
    request_body(description = "`multipart/form-data` with a `file` part, or the raw file (`image/jpeg`, `image/png`, `image/webp`, `video/mp4`, `video/quicktime`)", content(
        (UploadForm = "multipart/form-data"),
        (Vec<u8> = "application/octet-stream"),
        (Vec<u8> = "image/jpeg"),
        (Vec<u8> = "image/png"),
        (Vec<u8> = "image/webp"),
        (Vec<u8> = "video/mp4"),
        (Vec<u8> = "video/quicktime"),
    )),
    responses(
        (status = 201, description = "Stored", body = MediumFound),
        (status = 400, description = "`InvalidMediaType` (not a JPEG, PNG, WEBP, MP4 or MOV file, or bytes that disagree with the declared type), `MediaTooLarge` (over `media.max_bytes`), `MediaQuotaExceeded`, `MissingParameter` (no `file` part) or `InvalidRequest`", body = ErrorBody),
        (status = 401, description = "`Unauthorized` or `InvalidApiKey`", body = ErrorBody),
        (status = 408, description = "`RequestTimeout`: the body did not arrive within `media.upload_timeout_secs`", body = ErrorBody),
    ))]
pub async fn upload_media(
    state: web::Data<AppState>,
    owner: Owner,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let is_form = declared.as_deref().is_some_and(|d| {
        d.trim_start()
            .to_ascii_lowercase()
            .starts_with("multipart/form-data")
    });
    let medium = if is_form {
        upload_form(&state, owner, &req, payload).await?
    } else {
        let body = payload.map_err(payload_error);
        state
            .media
            .upload(owner.user_id, declared.as_deref(), body)
            .await?
    };
    Ok(HttpResponse::Created().json(MediumFound {
        success: true,
        media: medium,
    }))
}

/// The `file` part of a form; other parts are skipped.
async fn upload_form(
    state: &AppState,
    owner: Owner,
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<Medium, ApiError> {
    let mut form = Multipart::new(req.headers(), payload);
    while let Some(field) = form.next().await {
        let mut field = field.map_err(multipart_error)?;
        if field.name() != Some("file") {
            while let Some(piece) = field.next().await {
                piece.map_err(multipart_error)?;
            }
            continue;
        }
        let declared = field.content_type().map(|m| m.essence_str().to_string());
        let body = field_stream(field);
        return state
            .media
            .upload(owner.user_id, declared.as_deref(), body)
            .await;
    }
    Err(ApiError::missing_parameter("file"))
}

fn field_stream(
    field: actix_multipart::Field,
) -> impl Stream<Item = Result<Bytes, ApiError>> + 'static {
    field.map_err(multipart_error)
}

/// The caller's media, newest first.
#[utoipa::path(get, path = "/v2/media", tag = "media",
    security(("api_key" = []), ("session" = [])),
    params(HistoryQuery),
    responses(
        (status = 200, description = "A page of the caller's media", body = MediaList),
        (status = 400, description = "`limit` below 1, negative `offset`, or not a number", body = ErrorBody),
        (status = 401, description = "`Unauthorized` or `InvalidApiKey`", body = ErrorBody),
    ))]
pub async fn list_media(
    state: web::Data<AppState>,
    owner: Owner,
    query: web::Query<HistoryQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = Page::try_from(query.into_inner())?;
    let (media, total) = state.media.list(owner.user_id, page).await?;
    Ok(HttpResponse::Ok().json(MediaList {
        success: true,
        media,
        total,
        limit: page.limit,
        offset: page.offset,
    }))
}

/// One of the caller's media.
#[utoipa::path(get, path = "/v2/media/{id}", tag = "media",
    security(("api_key" = []), ("session" = [])),
    params(("id" = String, Path, description = "The medium's id")),
    responses(
        (status = 200, description = "The medium", body = MediumFound),
        (status = 401, description = "`Unauthorized` or `InvalidApiKey`", body = ErrorBody),
        (status = 404, description = "`NotFound`: not one of the caller's media", body = ErrorBody),
    ))]
pub async fn get_medium(
    state: web::Data<AppState>,
    owner: Owner,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let media = state.media.get(owner.user_id, &id).await?;
    Ok(HttpResponse::Ok().json(MediumFound {
        success: true,
        media,
    }))
}

/// Deletes one of the caller's media: its URL stops working at once.
#[utoipa::path(delete, path = "/v2/media/{id}", tag = "media",
    security(("api_key" = []), ("session" = [])),
    params(("id" = String, Path, description = "The medium's id")),
    responses(
        (status = 200, description = "Deleted", body = MediumDeleted),
        (status = 401, description = "`Unauthorized` or `InvalidApiKey`", body = ErrorBody),
        (status = 404, description = "`NotFound`: not one of the caller's media", body = ErrorBody),
    ))]
pub async fn delete_medium(
    state: web::Data<AppState>,
    owner: Owner,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state.media.delete(owner.user_id, &id).await?;
    Ok(HttpResponse::Ok().json(MediumDeleted { success: true }))
}

/// `Range: bytes=…` with one range; anything else (several ranges, another unit, a malformed
/// value) is ignored and the whole file is served, as RFC 9110 allows.
fn byte_range(req: &HttpRequest) -> Option<ByteRange> {
    let value = req.headers().get(header::RANGE)?.to_str().ok()?;
    let spec = value.trim().strip_prefix("bytes=")?.trim();
    if spec.contains(',') {
        return None;
    }
    let (start, end) = spec.split_once('-')?;
    let number = |s: &str| -> Option<u64> {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (start.trim().is_empty(), end.trim().is_empty()) {
        (true, false) => Some(ByteRange::Last(number(end)?)),
        (false, true) => Some(ByteRange::From(number(start)?, None)),
        (false, false) => Some(ByteRange::From(number(start)?, Some(number(end)?))),
        (true, true) => None,
    }
}

/// Whether a conditional header lists `etag` (or `*`).
fn lists_etag(req: &HttpRequest, name: header::HeaderName, etag: &str) -> Option<bool> {
    let value = req.headers().get(name)?.to_str().ok()?;
    Some(value.split(',').any(|tag| {
        let tag = tag.trim();
        tag == "*" || tag.trim_start_matches("W/") == etag
    }))
}

/// `416`, in catalogue form, with the file's size in `Content-Range` as RFC 9110 asks.
fn range_not_satisfiable(size: u64) -> HttpResponse {
    let error = ApiError::new(
        ErrorCode::InvalidRequest,
        format!("The range covers none of the file's {size} bytes"),
    );
    let mut response = actix_web::ResponseError::error_response(&error);
    *response.status_mut() = actix_web::http::StatusCode::RANGE_NOT_SATISFIABLE;
    if let Ok(value) = header::HeaderValue::from_str(&format!("bytes */{size}")) {
        response.headers_mut().insert(header::CONTENT_RANGE, value);
    }
    response
}

fn not_served() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "No such media file")
}

/// A file, for platforms and browsers to fetch: its exact type and length, byte ranges, an
/// `ETag`, and headers that keep a browser from running anything in it.
#[utoipa::path(get, path = "/media/{id}/{file}", tag = "media",
    params(("id" = String, Path, description = "The medium's id"),
        ("file" = String, Path, description = "`{token}.{ext}`, as in the medium's `url`")),
    responses(
        (status = 200, description = "The file", content(
            (Vec<u8> = "image/jpeg"), (Vec<u8> = "image/png"), (Vec<u8> = "image/webp"),
            (Vec<u8> = "video/mp4"), (Vec<u8> = "video/quicktime"))),
        (status = 206, description = "The range asked for by `Range: bytes=…`"),
        (status = 304, description = "`If-None-Match` named its `ETag`"),
        (status = 404, description = "`NotFound`: no medium with that id, token and extension", body = ErrorBody),
        (status = 416, description = "`InvalidRequest`: the range covers none of the file (`Content-Range: bytes */{size}`)", body = ErrorBody),
    ))]
pub async fn serve_medium(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, file) = path.into_inner();
    let (token, extension) = file.rsplit_once('.').ok_or_else(not_served)?;
    let served = state
        .media
        .served(&id, token, extension)
        .await?
        .ok_or_else(not_served)?;
    let (format, size) = (served.format, served.size);
    let etag = format!("\"{}\"", served.sha256);
    let mut response = HttpResponse::Ok();
    response
        .insert_header((header::CONTENT_TYPE, format.content_type()))
        .insert_header((header::ETAG, etag.clone()))
        .insert_header((header::ACCEPT_RANGES, "bytes"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CONTENT_SECURITY_POLICY, "sandbox"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"));
    if lists_etag(&req, header::IF_NONE_MATCH, &etag) == Some(true) {
        return Ok(response
            .status(actix_web::http::StatusCode::NOT_MODIFIED)
            .finish());
    }
    // `If-Range` with another validator asks for the whole (changed) file.
    let range = match lists_etag(&req, header::IF_RANGE, &etag) {
        Some(false) => None,
        _ => byte_range(&req),
    };
    let range = match range {
        None => None,
        Some(asked) => match asked.within(size) {
            Some(covered) => Some(covered),
            None => return Ok(range_not_satisfiable(size)),
        },
    };
    if let Some(covered) = &range {
        response
            .status(actix_web::http::StatusCode::PARTIAL_CONTENT)
            .insert_header((
                header::CONTENT_RANGE,
                format!("bytes {}-{}/{size}", covered.start, covered.end - 1),
            ));
    }
    let length = range.as_ref().map_or(size, |r| r.end - r.start);
    let read = state
        .media
        .read(&served, range)
        .await?
        .ok_or_else(not_served)?;
    let stream = read.stream.map(|piece| {
        piece.map_err(|error| {
            tracing::warn!(%error, "media: a file could not be read to its end");
            std::io::Error::other(error.to_string())
        })
    });
    Ok(response.no_chunking(length).streaming(stream))
}
