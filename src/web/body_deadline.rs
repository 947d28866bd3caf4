//! The request-body deadline (`server.request_body_timeout_secs`; `media.upload_timeout_secs`
//! for uploads, [`is_upload`]), and what an upload's handler makes of a body that fails.
//!
//! actix-http times out a stalled request *head* (`server.request_head_timeout_ms`) but not a
//! stalled body: a handler awaiting `web::Json` would wait for the rest of a `Content-Length: 200`
//! body forever, holding the connection and a worker's memory. [`body_deadline`] (registered once,
//! for every route) wraps each request's payload in a [`DeadlinePayload`], which fails the read
//! with a timeout once the deadline has passed while waiting on the client. The request then
//! gets `408 RequestTimeout` in catalogue form, whichever extractor was reading.
//!
//! Closing the connection afterwards is actix-http's part, and it needs our help: it closes after
//! a response only when the body is unfinished *and* the request's payload object is still alive.
//! A chunked body whose payload was dropped is instead drained, with no deadline at all. So while
//! a body is unfinished, the response carries the payload along (in its extensions) until actix
//! has looked at it: the connection is then closed after `server.client_disconnect_timeout_ms`
//! of reading and discarding. The same holds for handlers that answer without reading the body.

use std::{
    cell::{Cell, RefCell},
    io,
    pin::Pin,
    rc::Rc,
    task::{Context, Poll},
    time::Duration,
};

use actix_web::{
    Error, HttpMessage, ResponseError,
    body::{BodySize, BoxBody, MessageBody},
    dev::{Payload, ServiceRequest, ServiceResponse},
    error::PayloadError,
    http::{ConnectionType, Method},
    middleware::Next,
    web,
};
use bytes::Bytes;
use futures_util::Stream;
use tokio::time::{Instant, Sleep};

use crate::{
    AppState,
    error::{ApiError, ErrorCode},
};

/// The API's upload route (`POST /v2/media`).
pub const UPLOAD_PATH: &str = "/v2/media";
/// The Compose page's upload form, for browsers without scripts.
pub const COMPOSE_UPLOAD_PATH: &str = "/dashboard/compose/media";

/// Whether a request is an upload, whose body deadline is `media.upload_timeout_secs`: a large
/// file at a modest speed. The one list of upload routes.
pub fn is_upload(method: &Method, path: &str) -> bool {
    *method == Method::POST && (path == UPLOAD_PATH || path == COMPOSE_UPLOAD_PATH)
}

/// The cause inside the `PayloadError` a [`DeadlinePayload`] fails with, so that extractor
/// error handlers can tell it from other read errors by type.
#[derive(Debug, thiserror::Error)]
#[error("the request body was not received within {0:?}")]
pub struct BodyDeadlineExceeded(pub Duration);

/// Whether a payload error is the body deadline passing.
pub fn is_deadline_error(err: &PayloadError) -> bool {
    matches!(err, PayloadError::Io(io) if io
        .get_ref()
        .is_some_and(|inner| inner.is::<BodyDeadlineExceeded>()))
}

/// The catalogue answer to a body that did not arrive in time.
pub fn body_timeout_error() -> ApiError {
    ApiError::new(
        ErrorCode::RequestTimeout,
        "The request body was not received in time",
    )
}

/// A failed read of an upload's body: the deadline's 408, or a 400.
pub fn payload_error(error: PayloadError) -> ApiError {
    if is_deadline_error(&error) {
        body_timeout_error()
    } else {
        ApiError::invalid_request("The upload's body could not be read")
    }
}

/// A failed read of a `multipart/form-data` body: its payload's error, or a malformed form.
pub fn multipart_error(error: actix_multipart::MultipartError) -> ApiError {
    match error {
        actix_multipart::MultipartError::Payload(error) => payload_error(error),
        other => ApiError::invalid_request(format!("The multipart body is malformed: {other}")),
    }
}

/// How far a request's body got, shared between the payload wrapper and the middleware.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyProgress {
    Reading,
    Complete,
    TimedOut,
}

/// Keeps an unfinished request payload alive while actix decides what to do with the
/// connection (see the module docs). Never read; only held.
#[derive(Clone)]
struct UnfinishedBody(#[allow(dead_code)] Rc<RefCell<Payload>>);

/// A response body that holds an [`UnfinishedBody`] until the body has been written: actix
/// looks at the request payload again once the last byte is out, and by then the response head
/// (whose extensions hold it for empty bodies) is gone.
struct HoldingBody {
    body: BoxBody,
    _held: UnfinishedBody,
}

impl MessageBody for HoldingBody {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_next(cx)
    }
}

/// A request payload that fails with [`BodyDeadlineExceeded`] when the client has not delivered
/// the body by the deadline. Data already received is always handed out, so a slow handler
/// never turns a punctual client's body into a timeout.
pub struct DeadlinePayload {
    inner: Rc<RefCell<Payload>>,
    deadline: Instant,
    limit: Duration,
    /// Created on the first wait for the client (most bodies are in at once).
    timer: Option<Pin<Box<Sleep>>>,
    progress: Rc<Cell<BodyProgress>>,
}

impl Stream for DeadlinePayload {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.progress.get() != BodyProgress::Reading {
            return Poll::Ready(None);
        }
        let polled = Pin::new(&mut *self.inner.borrow_mut()).poll_next(cx);
        match polled {
            Poll::Ready(None) => {
                self.progress.set(BodyProgress::Complete);
                Poll::Ready(None)
            }
            Poll::Ready(Some(item)) => Poll::Ready(Some(item)),
            Poll::Pending => {
                let deadline = self.deadline;
                let timer = self
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                if timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.progress.set(BodyProgress::TimedOut);
                Poll::Ready(Some(Err(PayloadError::Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    BodyDeadlineExceeded(self.limit),
                )))))
            }
        }
    }
}

/// Middleware: puts every request body under the body deadline, answers `408 RequestTimeout`
/// when it passed, and lets actix close connections whose body was not read to the end.
pub async fn body_deadline(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let payload = req.take_payload();
    if matches!(payload, Payload::None) {
        // No body (actix saw neither Content-Length nor Transfer-Encoding): nothing to wait for.
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let upload = is_upload(req.method(), req.path());
    let limit = req
        .app_data::<web::Data<AppState>>()
        .map(|state| {
            Duration::from_secs(if upload {
                state.config.media.upload_timeout_secs
            } else {
                state.config.server.request_body_timeout_secs
            })
        })
        .unwrap_or(Duration::from_secs(30));
    let inner = Rc::new(RefCell::new(payload));
    let progress = Rc::new(Cell::new(BodyProgress::Reading));
    req.set_payload(Payload::Stream {
        payload: Box::pin(DeadlinePayload {
            inner: inner.clone(),
            // Now is when actix has just read the head: it calls the service at once.
            deadline: Instant::now() + limit,
            limit,
            timer: None,
            progress: progress.clone(),
        }),
    });
    let response = next.call(req).await?;
    let mut response = match progress.get() {
        BodyProgress::Complete => return Ok(response.map_into_boxed_body()),
        BodyProgress::Reading => response.map_into_boxed_body(),
        // Whatever the reader made of the error, the answer is the timeout.
        BodyProgress::TimedOut => {
            tracing::debug!(?limit, "request body not received in time");
            let (req, _) = response.into_parts();
            let mut timed_out = body_timeout_error().error_response();
            timed_out
                .head_mut()
                .set_connection_type(ConnectionType::Close);
            ServiceResponse::new(req, timed_out)
        }
    };
    let held = UnfinishedBody(inner);
    // Empty bodies: actix decides from the head, so the head's extensions hold it.
    response
        .response_mut()
        .extensions_mut()
        .insert(held.clone());
    Ok(response.map_body(|_, body| BoxBody::new(HoldingBody { body, _held: held })))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use futures_util::StreamExt;

    use super::*;

    fn wrap(payload: Payload, limit: Duration) -> (DeadlinePayload, Rc<Cell<BodyProgress>>) {
        let progress = Rc::new(Cell::new(BodyProgress::Reading));
        let wrapped = DeadlinePayload {
            inner: Rc::new(RefCell::new(payload)),
            deadline: Instant::now() + limit,
            limit,
            timer: None,
            progress: progress.clone(),
        };
        (wrapped, progress)
    }

    fn stalled_after(first: &'static [u8]) -> Payload {
        let stream = futures_util::stream::once(async move { Ok(Bytes::from_static(first)) })
            .chain(futures_util::stream::pending());
        Payload::Stream {
            payload: Box::pin(stream),
        }
    }

    #[actix_web::test]
    async fn a_stalled_body_fails_with_the_deadline_error_after_what_arrived() {
        let (mut body, progress) = wrap(stalled_after(b"{\"name\""), Duration::from_millis(50));
        assert_eq!(
            body.next().await.unwrap().unwrap(),
            Bytes::from_static(b"{\"name\"")
        );
        let err = body.next().await.unwrap().unwrap_err();
        assert!(is_deadline_error(&err), "{err}");
        assert_eq!(progress.get(), BodyProgress::TimedOut);
        assert!(body.next().await.is_none(), "nothing after the timeout");
    }

    #[actix_web::test]
    async fn a_body_already_received_is_read_whole_even_after_the_deadline() {
        let stream = futures_util::stream::iter([
            Ok(Bytes::from_static(b"ab")),
            Ok(Bytes::from_static(b"cd")),
        ]);
        let (mut body, progress) = wrap(
            Payload::Stream {
                payload: Box::pin(stream),
            },
            Duration::from_millis(1),
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut read = Vec::new();
        while let Some(chunk) = body.next().await {
            read.extend_from_slice(&chunk.unwrap());
        }
        assert_eq!(read, b"abcd");
        assert_eq!(progress.get(), BodyProgress::Complete);
    }

    #[test]
    fn both_upload_routes_and_nothing_else_get_the_upload_deadline() {
        let cases = [
            ("the API's uploads", Method::POST, "/v2/media", true),
            (
                "the Compose page's form",
                Method::POST,
                "/dashboard/compose/media",
                true,
            ),
            ("reading the library", Method::GET, "/v2/media", false),
            (
                "the Compose form",
                Method::POST,
                "/dashboard/compose",
                false,
            ),
            ("one medium", Method::DELETE, "/v2/media/1", false),
            (
                "a longer path",
                Method::POST,
                "/dashboard/compose/media/x",
                false,
            ),
        ];
        for (name, method, path, want) in cases {
            assert_eq!(is_upload(&method, path), want, "{name}");
        }
    }

    #[test]
    fn other_payload_errors_are_not_the_deadline() {
        assert!(!is_deadline_error(&PayloadError::Incomplete(None)));
        assert!(!is_deadline_error(&PayloadError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            "a socket timeout"
        ))));
    }
}
