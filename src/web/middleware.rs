//! The safety net of the middleware stack: actix's own error responses become catalogue JSON.
//! The stack itself (idle watch, request tracing, body deadline, this) is assembled by
//! [`crate::startup::app`].

use actix_web::{
    HttpResponse,
    body::{BoxBody, EitherBody, MessageBody},
    dev::ServiceResponse,
    http::{StatusCode, header},
    middleware::{ErrorHandlerResponse, ErrorHandlers},
};

use super::body_deadline;
use crate::error::{ApiError, ErrorCode};

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
