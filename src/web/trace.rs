//! Request tracing: the request id (`X-Request-Id`), a span per request, and the request
//! metrics by route pattern.

use actix_web::{
    HttpMessage,
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    middleware::Next,
    web,
};

use crate::AppState;

/// The request's id: the caller's `X-Request-Id` when it is sensible, else a fresh UUID.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// A `HeaderName`: a lookup by `&str` would build one on every request.
const REQUEST_ID: actix_web::http::header::HeaderName =
    actix_web::http::header::HeaderName::from_static("x-request-id");

fn request_id(req: &ServiceRequest) -> String {
    req.headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|id| {
            !id.is_empty()
                && id.len() <= 128
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
        })
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

thread_local! {
    /// Paths that are themselves a route's pattern (routes without parameters: the hot ones,
    /// `/v2/posts` among them). Finding a pattern walks the routes, matching each one's regex;
    /// these are found by a lookup instead. Bounded: a path gets in only by equalling one of
    /// the app's patterns.
    static PLAIN_ROUTES: std::cell::RefCell<std::collections::HashSet<String>> =
        std::cell::RefCell::new(std::collections::HashSet::new());
}

/// The pattern of the route `req` matched, or `unmatched`.
fn route_pattern(req: &ServiceRequest) -> String {
    let path = req.path();
    if PLAIN_ROUTES.with_borrow(|plain| plain.contains(path)) {
        return path.to_owned();
    }
    match req.match_pattern() {
        Some(pattern) => {
            if pattern == path {
                PLAIN_ROUTES.with_borrow_mut(|plain| plain.insert(pattern.clone()));
            }
            pattern
        }
        None => "unmatched".to_string(),
    }
}

/// An error reaching `trace_request` unanswered (actix turns it into the response): its own
/// response, plus the request id.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
struct WithRequestId {
    error: actix_web::Error,
    request_id: String,
}

impl actix_web::ResponseError for WithRequestId {
    fn status_code(&self) -> actix_web::http::StatusCode {
        self.error.as_response_error().status_code()
    }

    fn error_response(&self) -> actix_web::HttpResponse {
        let mut response = self.error.error_response();
        if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&self.request_id) {
            response.headers_mut().insert(REQUEST_ID, value);
        }
        response
    }
}

/// A span per request with its request id (echoed as `X-Request-Id`), request counts and
/// latencies by route pattern; failures are logged with their status.
pub async fn trace_request(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<actix_web::body::BoxBody>, actix_web::Error> {
    let request_id = request_id(&req);
    req.extensions_mut().insert(RequestId(request_id.clone()));
    // The route pattern, not the path: ids in paths would make unbounded label sets.
    let route = route_pattern(&req);
    // A standard method's clone copies nothing.
    let method = req.method().clone();
    let metrics = req
        .app_data::<web::Data<AppState>>()
        .map(|state| state.metrics.clone());
    let span = tracing::info_span!("request", request_id = %request_id, method = %method, path = %req.path());
    let started = std::time::Instant::now();
    let outcome = tracing::Instrument::instrument(next.call(req), span.clone()).await;
    let elapsed = started.elapsed();
    let elapsed_ms = elapsed.as_millis() as u64;
    let _entered = span.enter();
    // Our middlewares answer refusals as responses, so errors reaching here are actix's own.
    let mut response = match outcome {
        Ok(res) => res.map_into_boxed_body(),
        Err(err) => {
            tracing::debug!(error = %err, elapsed_ms, "request refused");
            // actix renders it after we are gone; it still carries the request id.
            return Err(WithRequestId {
                error: err,
                request_id,
            }
            .into());
        }
    };
    let status = response.status().as_u16();
    if status >= 500 {
        tracing::warn!(status, elapsed_ms, "request failed");
    } else {
        tracing::debug!(status, elapsed_ms, "request");
    }
    if let Some(metrics) = metrics {
        metrics.inc(
            "http_requests_total",
            &[
                ("route", &route),
                ("method", method.as_str()),
                ("status", response.status().as_str()),
            ],
        );
        metrics.observe(
            "http_request_duration_seconds",
            &[("route", &route)],
            elapsed.as_secs_f64(),
        );
    }
    if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    Ok(response)
}
