//! `POST /dashboard/compose/media`: the Compose page's upload form, for browsers without
//! scripts (with scripts, the page sends each file to `POST /v2/media` itself and never posts
//! this form).
//!
//! - The body is `multipart/form-data` with the parts `form_token`, `media` (the media field as
//!   the page rendered it) and one `file` part per chosen file, in that order: a browser sends a
//!   form's fields in the order of the document.
//! - The cross-site check is the session middleware's, as for every dashboard POST. The form's
//!   one-time token ([`super::form_token`]) is spent when the first file begins, before any of
//!   its bytes is read: a form without a valid token, or sent a second time, stores nothing.
//! - Each file streams into [`MediaService::upload`](crate::services::media::MediaService::upload),
//!   which types it by its bytes and enforces the size limit and the quota as they arrive; no
//!   file is held whole. Its body deadline is the uploads' (`web::body_deadline::is_upload`).
//! - Stored: a 303 back to Compose with the media field holding what it held plus each new URL
//!   (`?media=`), and how many came in (`?uploaded=`). Refused: Compose again with the reason by
//!   the upload form, keeping the URLs of the files stored before the refusal.

use actix_multipart::{Field, Multipart};
use actix_web::{HttpRequest, HttpResponse, ResponseError, http::StatusCode, web};
use futures_util::{StreamExt, TryStreamExt};

use super::{
    Layout, Nav,
    compose::{ComposeForm, Field as At, Problem, render_in},
    form_token::{self, Spent},
    i18n::Msg,
    scheduled::zone_of,
    see_other,
};
use crate::{
    AppState,
    error::{ApiError, ErrorCode},
    web::{auth::SessionUser, body_deadline::multipart_error},
};

/// Where both outcomes lead.
const COMPOSE_PATH: &str = "/dashboard/compose";
/// Longest `form_token` part read; ours are about 110 characters.
const MAX_TOKEN_BYTES: usize = 512;
/// Longest `media` part read: the media field's URLs, a few dozen at most.
const MAX_MEDIA_BYTES: usize = 8 * 1024;

/// Routes inside the `/dashboard` scope.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/compose/media").route(web::post().to(upload)));
}

/// Why the form stored no more files.
enum Refusal {
    /// The media service or the body said no (not media, too large, past the quota, late…).
    Refused(ApiError),
    /// No token, a forged or another user's one, or one left too long.
    Expired,
    /// This rendering of the form was sent before.
    AlreadySent,
    /// No file was chosen.
    NoFile,
}

impl From<ApiError> for Refusal {
    fn from(error: ApiError) -> Self {
        Self::Refused(error)
    }
}

/// What the form brought: the media field as rendered, and the URL of each file stored.
#[derive(Default)]
struct Received {
    media: String,
    stored: Vec<String>,
}

impl Received {
    /// The media field after the upload: its lines, then each new URL in the order sent.
    fn media_field(&self) -> String {
        self.media
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .chain(self.stored.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `POST /dashboard/compose/media`.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn upload(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut received = Received::default();
    let outcome = take_form(&req, &state, &session, payload, &mut received).await;
    let media = received.media_field();
    let refusal = match outcome {
        Ok(()) => return Ok(see_other(&back_to_compose(&media, received.stored.len()))),
        Err(refusal) => refusal,
    };
    let form = ComposeForm::with_media(media, zone_of(&req));
    let mut layout = Layout::signed_in(&req, &session, Nav::Compose);
    let t = layout.t;
    let (status, problem) = match refusal {
        // Ours, not the file's: the error page, as for any other page.
        Refusal::Refused(error) if error.status_code().is_server_error() => return Err(error),
        Refusal::Refused(error) => (error.status_code(), Problem::of(&error)),
        Refusal::Expired => (
            StatusCode::BAD_REQUEST,
            shown(ErrorCode::InvalidRequest, t.s(Msg::ErrorFormExpired)),
        ),
        Refusal::NoFile => (
            StatusCode::BAD_REQUEST,
            shown(ErrorCode::MissingParameter, t.s(Msg::ComposeUploadNoFile)),
        ),
        // Nothing was stored again; what the first sending stored is in the user's library.
        Refusal::AlreadySent => {
            layout.notice = Some(t.s(Msg::NoticeFormAlreadySent).to_string());
            let mut response = render_in(&req, &state, &session, layout, form, None, None).await?;
            *response.status_mut() = StatusCode::CONFLICT;
            return Ok(response);
        }
    };
    let refused = Some((At::Upload, problem));
    let mut response = render_in(&req, &state, &session, layout, form, None, refused).await?;
    *response.status_mut() = status;
    Ok(response)
}

/// A refusal of this form's own, shown as the catalogue's are.
fn shown(code: ErrorCode, message: &str) -> Problem {
    Problem {
        code: code.as_str().to_string(),
        message: message.to_string(),
        details: None,
        submission_id: None,
    }
}

/// Reads the form part by part, storing each file as it streams in.
async fn take_form(
    req: &HttpRequest,
    state: &AppState,
    session: &SessionUser,
    payload: web::Payload,
    received: &mut Received,
) -> Result<(), Refusal> {
    let mut form = Multipart::new(req.headers(), payload);
    let mut token = String::new();
    let mut spent = false;
    while let Some(field) = form.next().await {
        let field = field.map_err(multipart_error)?;
        match field.name() {
            Some("form_token") => token = read_text(field, MAX_TOKEN_BYTES).await?,
            Some("media") => received.media = read_text(field, MAX_MEDIA_BYTES).await?,
            Some("file") => {
                // A file input left empty still sends its part: no file name, no bytes.
                let named = field
                    .content_disposition()
                    .and_then(|disposition| disposition.get_filename())
                    .is_some_and(|name| !name.is_empty());
                if !named {
                    drain(field).await?;
                    continue;
                }
                if !spent {
                    let now = state.clock.now();
                    let user = session.user.id;
                    match form_token::spend(&state.store, &state.signer, &token, user, now).await {
                        Ok(Spent::Now) => spent = true,
                        Ok(Spent::Before) => return Err(Refusal::AlreadySent),
                        Ok(Spent::Unusable) => return Err(Refusal::Expired),
                        Err(error) => return Err(ApiError::from(error).into()),
                    }
                }
                let declared = field.content_type().map(|m| m.essence_str().to_string());
                let body = field.map_err(multipart_error);
                let medium = state
                    .media
                    .upload(session.user.id, declared.as_deref(), body)
                    .await?;
                received.stored.push(medium.url);
            }
            _ => drain(field).await?,
        }
    }
    if received.stored.is_empty() {
        return Err(Refusal::NoFile);
    }
    Ok(())
}

/// A text part of at most `limit` bytes.
async fn read_text(mut field: Field, limit: usize) -> Result<String, ApiError> {
    let name = field.name().unwrap_or_default().to_string();
    let mut bytes = Vec::new();
    while let Some(piece) = field.next().await {
        let piece = piece.map_err(multipart_error)?;
        if bytes.len() + piece.len() > limit {
            return Err(ApiError::invalid_request(format!(
                "The form's {name} field is longer than {limit} bytes"
            )));
        }
        bytes.extend_from_slice(&piece);
    }
    String::from_utf8(bytes)
        .map_err(|_| ApiError::invalid_request(format!("The form's {name} field is not UTF-8")))
}

/// Reads a part this form does not use to its end (the next one starts after it).
async fn drain(mut field: Field) -> Result<(), ApiError> {
    while let Some(piece) = field.next().await {
        piece.map_err(multipart_error)?;
    }
    Ok(())
}

/// Compose, with `media` in its media field and a notice of `uploaded` files. Only ever a path
/// of ours: what the form sent goes into the query, encoded.
fn back_to_compose(media: &str, uploaded: usize) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("media", media)
        .append_pair("uploaded", &uploaded.to_string())
        .finish();
    format!("{COMPOSE_PATH}?{query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_urls_follow_the_fields_lines_in_the_order_sent() {
        let received = Received {
            media: "https://a.example/1.jpg\r\n\r\n  https://a.example/2.mp4  \n".into(),
            stored: vec!["https://us/m/3.png".into(), "https://us/m/4.jpg".into()],
        };
        assert_eq!(
            received.media_field(),
            "https://a.example/1.jpg\nhttps://a.example/2.mp4\nhttps://us/m/3.png\nhttps://us/m/4.jpg"
        );
        assert_eq!(Received::default().media_field(), "");
    }

    #[test]
    fn the_way_back_is_our_compose_page_whatever_the_field_held() {
        let back = back_to_compose("//evil.example/x\nhttps://us/m/1.jpg?a=1&b=2", 1);
        assert_eq!(
            back,
            "/dashboard/compose?media=%2F%2Fevil.example%2Fx%0Ahttps%3A%2F%2Fus%2Fm%2F1.jpg%3Fa%3D1%26b%3D2&uploaded=1"
        );
    }
}
