//! The middleware stack every request goes through, outermost first: the idle-connection
//! watch, request tracing (request id, span, metrics), the body deadline, and the safety net
//! that turns actix's own error responses into catalogue JSON. [`app`] assembles the routes
//! under it; `Application::build` gives it to each HTTP worker.

use actix_web::{
    App, HttpResponse,
    body::{BoxBody, EitherBody, MessageBody},
    dev::{ServiceFactory, ServiceRequest, ServiceResponse},
    http::{StatusCode, header},
    middleware::{ErrorHandlerResponse, ErrorHandlers, from_fn},
    web,
};

use super::{body_deadline, idle_watch, trace};
use crate::{
    AppState,
    error::{ApiError, ErrorCode},
};

/// One worker's application: the shared state (cloned, never rebuilt per worker), every route,
/// the catalogue's answer for unknown routes, and the middleware stack.
pub fn app(
    state: web::Data<AppState>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .app_data(state)
        .configure(super::configure)
        .default_service(web::to(super::not_found))
        .wrap(json_error_handlers())
        // Inside `trace_request`, so a 408 carries the request id and is counted.
        .wrap(from_fn(body_deadline::body_deadline))
        .wrap(from_fn(trace::trace_request))
        .wrap(from_fn(idle_watch::watch_requests))
}

/// Safety net for responses actix builds itself (wrong method, malformed headers, …): any error
/// response that is not already JSON is replaced by a catalogue body for its status.
pub fn json_error_handlers<B: MessageBody + 'static>() -> ErrorHandlers<B> {
    ErrorHandlers::new().default_handler(|res: ServiceResponse<B>| {
        // JSON is already the catalogue's; HTML is an error page the dashboard rendered on
        // purpose (actix's own error responses are never HTML).
        let is_json_or_page = res
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/html"));
        if is_json_or_page {
            return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
        }
        let status = res.status();
        let error =
            catalogue_error_for_status(status, res.request().method(), res.request().path());
        let (req, _) = res.into_parts();
        let mut response = actix_web::ResponseError::error_response(&error);
        *response.status_mut() = status;
        let response: HttpResponse<EitherBody<B, BoxBody>> = response.map_into_right_body();
        Ok(ErrorHandlerResponse::Response(ServiceResponse::new(
            req, response,
        )))
    })
}

pub fn catalogue_error_for_status(
    status: StatusCode,
    method: &actix_web::http::Method,
    path: &str,
) -> ApiError {
    match status {
        StatusCode::NOT_FOUND => ApiError::not_found(format!("No route for {method} {path}")),
        StatusCode::METHOD_NOT_ALLOWED => ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("Method {method} is not allowed on {path}"),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::new(ErrorCode::PayloadTooLarge, "Request body is too large")
        }
        StatusCode::UNAUTHORIZED => ApiError::unauthorized("Authentication required"),
        StatusCode::TOO_MANY_REQUESTS => ApiError::rate_limited(60, None),
        StatusCode::SERVICE_UNAVAILABLE => {
            ApiError::service_unavailable("Service temporarily unavailable")
        }
        StatusCode::GATEWAY_TIMEOUT => ApiError::new(ErrorCode::Timeout, "The request timed out"),
        StatusCode::REQUEST_TIMEOUT => body_deadline::body_timeout_error(),
        s if s.is_client_error() => ApiError::invalid_request("Invalid request"),
        _ => ApiError::new(
            ErrorCode::InternalServerError,
            "An unexpected error occurred. Please try again later.",
        ),
    }
}
