//! The plumbing both front ends stand on: the HTTP state ([`state::AppState`]), the three
//! authentication modes ([`auth`]), the middleware stack's parts (request ids and tracing,
//! deadlines, the idle watch, the catalogue's answer for actix's own errors), the sign-in rate
//! limit, and what every page shares: the frame ([`Layout`]), the strings in both languages
//! ([`i18n`]), the embedded assets, error pages for browsers ([`html_errors`]) and the security
//! headers of every page ([`page_headers`]).

pub mod assets;
pub mod auth;
pub mod body_deadline;
pub mod connect_landing;
pub mod i18n;
pub mod idle_watch;
pub mod middleware;
pub mod signin_limit;
pub mod state;
pub mod trace;

use actix_web::{
    HttpRequest, HttpResponse, Responder,
    body::{EitherBody, MessageBody},
    cookie::{Cookie, SameSite, time::Duration as CookieDuration},
    dev::{ServiceRequest, ServiceResponse},
    http::{
        StatusCode,
        header::{self, HeaderMap, HeaderValue},
    },
    middleware::Next,
    web,
};
use askama::Template;
use askama_web::WebTemplateExt;
use chrono::{DateTime, Utc};

use crate::usage::{self, Locale};
use auth::SessionUser;
use i18n::{Msg, T};
use state::AppState;

/// The sign-in page, where every page sends a visitor without a session.
pub const SIGN_IN_PATH: &str = "/signin";
/// The cookie that remembers the language picked with `?lang=`.
const LANG_COOKIE: &str = "service_lang";
/// The Content-Security-Policy of every page: our own files only, nothing inline.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'";

/// Whether the client explicitly accepts HTML (a browser navigating). `*/*` alone does not
/// count: scripts send it, and they keep getting JSON.
pub fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|range| {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim();
            // `q=0` means "not acceptable".
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            media.eq_ignore_ascii_case("text/html") && !refused
        })
}

/// Middleware: the security headers of every page (and, for `?lang=`, the language cookie).
pub(crate) async fn page_headers(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody + 'static>, actix_web::Error> {
    let picked = lang_from_query(req.query_string());
    let secure = req
        .app_data::<web::Data<AppState>>()
        .is_some_and(|state| state.cookie_secure);
    let mut response = next.call(req).await?;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if let Some(locale) = picked {
        let cookie = preference_cookie(LANG_COOKIE, T(locale).lang(), secure);
        response.response_mut().add_cookie(&cookie)?;
    }
    Ok(response)
}

/// A cookie that remembers a person's choice (language, time zone) for a year: not a
/// credential, but still `HttpOnly` (no script needs it) and `SameSite=Lax`.
pub fn preference_cookie(name: &'static str, value: &str, secure: bool) -> Cookie<'static> {
    Cookie::build(name, value.to_string())
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(secure)
        .max_age(CookieDuration::days(365))
        .finish()
}

/// Middleware (outside [`auth::require_session`]): a page asked for without a live session is sent
/// to the sign-in page instead of getting the JSON 401.
pub async fn to_sign_in(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody + 'static>>, actix_web::Error> {
    let response = next.call(req).await?;
    if response.status() != StatusCode::UNAUTHORIZED {
        return Ok(response.map_into_left_body());
    }
    let (req, _) = response.into_parts();
    let redirect = HttpResponse::SeeOther()
        .insert_header((header::LOCATION, SIGN_IN_PATH))
        .finish();
    Ok(ServiceResponse::new(req, redirect).map_into_right_body())
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    layout: Layout,
    title: &'static str,
    message: String,
    code: String,
    status: u16,
}

/// Middleware (outside [`to_sign_in`]): a browser whose page or form ends in an error gets that
/// error as a page (the catalogue's code and message, the same status) instead of the JSON
/// body scripts get. Only when the client explicitly accepts HTML ([`wants_html`]).
///
/// It keeps no `HttpRequest` clone across the call: the routing inside a scope needs the
/// request to itself, and takes what it needs (language, method, path) beforehand.
pub async fn html_errors(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody + 'static>>, actix_web::Error> {
    if !wants_html(req.headers()) {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body);
    }
    let locale = locale_of(req.request());
    let (method, path) = (req.method().clone(), req.path().to_string());
    let fallback = |status: StatusCode| {
        crate::web::middleware::catalogue_error_for_status(status, &method, &path)
    };
    match next.call(req).await {
        Ok(response) => {
            let status = response.status();
            let is_html = response
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/html"));
            if status.as_u16() < 400 || is_html {
                return Ok(response.map_into_left_body());
            }
            let error = response
                .response()
                .error()
                .and_then(|e| e.as_error::<crate::error::ApiError>())
                .cloned()
                .unwrap_or_else(|| fallback(status));
            let (request, _) = response.into_parts();
            let page = ErrorPage::response(locale, status, &error);
            Ok(ServiceResponse::new(request, page).map_into_right_body())
        }
        // An error a middleware returned: answered as a page through the error itself.
        Err(error) => {
            let status = error.as_response_error().status_code();
            let api = error
                .as_error::<crate::error::ApiError>()
                .cloned()
                .unwrap_or_else(|| fallback(status));
            match ErrorPage::html(locale, status, &api) {
                Some(page) => Err(page.into()),
                None => Err(error),
            }
        }
    }
}

impl ErrorPage {
    /// The page for `error`, or the catalogue's JSON if the template cannot render (a bug).
    fn response(
        locale: Locale,
        status: StatusCode,
        error: &crate::error::ApiError,
    ) -> HttpResponse {
        match Self::html(locale, status, error) {
            Some(page) => page.response(),
            None => actix_web::ResponseError::error_response(error),
        }
    }

    fn html(
        locale: Locale,
        status: StatusCode,
        error: &crate::error::ApiError,
    ) -> Option<HtmlError> {
        let t = T(locale);
        let title = match status {
            StatusCode::NOT_FOUND => t.s(Msg::ErrorTitleNotFound),
            s if s.is_server_error() => t.s(Msg::ErrorTitleServer),
            _ => t.s(Msg::ErrorTitle),
        };
        let page = ErrorPage {
            layout: Layout::anonymous(t),
            title,
            message: error.message.clone(),
            code: error.code.as_str().to_string(),
            status: status.as_u16(),
        };
        Some(HtmlError {
            status,
            html: page.render().ok()?,
            retry_after: error.retry_after,
        })
    }
}

/// A rendered error page, also usable as an error (see [`html_errors`]).
#[derive(Debug)]
struct HtmlError {
    status: StatusCode,
    html: String,
    retry_after: Option<u64>,
}

impl HtmlError {
    fn response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        response
            .content_type("text/html; charset=utf-8")
            // Also outside the page scopes (the OAuth routes), the pages' headers.
            .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
        if let Some(seconds) = self.retry_after {
            response.insert_header((header::RETRY_AFTER, seconds.to_string()));
        }
        response.body(self.html.clone())
    }
}

impl std::fmt::Display for HtmlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error page ({})", self.status)
    }
}

impl actix_web::ResponseError for HtmlError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        self.response()
    }
}

/// `?lang=en|zh-TW`, when given and known.
fn lang_from_query(query: &str) -> Option<Locale> {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "lang")
        .and_then(|(_, value)| parse_lang(&value))
}

fn parse_lang(value: &str) -> Option<Locale> {
    match value {
        "en" => Some(Locale::En),
        "zh-TW" => Some(Locale::ZhTw),
        _ => None,
    }
}

/// The page's language: `?lang=`, then the remembered choice, then `Accept-Language`.
pub fn locale_of(req: &HttpRequest) -> Locale {
    lang_from_query(req.query_string())
        .or_else(|| {
            req.cookie(LANG_COOKIE)
                .and_then(|cookie| parse_lang(cookie.value()))
        })
        .unwrap_or_else(|| {
            usage::negotiate_locale(
                req.headers()
                    .get(header::ACCEPT_LANGUAGE)
                    .and_then(|v| v.to_str().ok()),
            )
        })
}

/// Which navigation entry a page belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Overview,
    Accounts,
    Keys,
    Webhooks,
    // Compose and Scheduled pages.
    Compose,
    Scheduled,
    History,
    Performance,
    // Operator pages.
    Operator,
    /// The sign-in page: no navigation.
    None,
}

/// What the page frame (`templates/base.html`) shows around every page.
pub struct Layout {
    pub t: T,
    /// The signed-in user's e-mail (or name); `None` on the sign-in page.
    pub who: Option<String>,
    pub active: Nav,
    /// A confirmation of what just happened (after a redirect).
    pub notice: Option<String>,
    /// What went wrong (after a redirect or a refused form).
    pub error: Option<String>,
    /// Whether the signed-in user is an operator (shows the operator pages' navigation link).
    pub operator: bool,
}

impl Layout {
    /// The frame of a page seen without a session (sign-in, error pages, the API reference):
    /// no user, no navigation highlighted, no operator links.
    pub fn anonymous(t: T) -> Self {
        Self {
            t,
            who: None,
            active: Nav::None,
            notice: None,
            error: None,
            operator: false,
        }
    }

    /// The frame of a signed-in page.
    pub fn signed_in(req: &HttpRequest, session: &SessionUser, active: Nav) -> Self {
        let user = &session.user;
        let who = user
            .email
            .clone()
            .or_else(|| user.display_name.clone())
            .unwrap_or_else(|| user.id.to_string());
        let operator = req
            .app_data::<web::Data<AppState>>()
            .is_some_and(|state| crate::services::operator::is_operator(&state.config, user));
        Self {
            t: T(locale_of(req)),
            who: Some(who),
            active,
            notice: None,
            error: None,
            operator,
        }
    }

    pub fn css_href(&self) -> &'static str {
        assets::css_href()
    }

    pub fn js_href(&self) -> &'static str {
        assets::js_href()
    }
}

/// A moment, for `<time>`: in words relative to now, and exactly (UTC) for the `title`.
pub struct When {
    pub relative: String,
    pub exact: String,
    pub iso: String,
}

impl When {
    pub fn new(t: T, at: DateTime<Utc>, now: DateTime<Utc>) -> Self {
        Self {
            relative: t.relative(at, now),
            exact: at.format("%Y-%m-%d %H:%M UTC").to_string(),
            iso: crate::domain::time::iso(at),
        }
    }
}

/// A usage line in words: "n calls, no limit" or "n of m calls, r left".
pub fn usage_text(t: T, usage: &crate::services::usage::UsageNow) -> String {
    if usage.limit < 0 {
        t.fill(Msg::UsageUnlimited, &[("used", &usage.used.to_string())])
    } else {
        t.fill(
            Msg::UsageLimited,
            &[
                ("used", &usage.used.to_string()),
                ("limit", &usage.limit.to_string()),
                ("remaining", &usage.remaining.to_string()),
            ],
        )
    }
}

/// A plan's name in words.
pub fn plan_name(t: T, plan: crate::usage::Plan) -> &'static str {
    use crate::usage::Plan;
    match plan {
        Plan::Free => t.s(Msg::PlanFree),
        Plan::Pro => t.s(Msg::PlanPro),
        Plan::Ultra => t.s(Msg::PlanUltra),
    }
}

/// Renders a page as an HTML response (askama_web; a template that fails to render is a bug,
/// answered 500).
pub fn render(req: &HttpRequest, page: impl Template) -> HttpResponse {
    page.into_web_template().respond_to(req)
}

/// A 303 to `location` (POST → redirect → GET).
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location))
        .finish()
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::HeaderName;

    use super::*;

    #[test]
    fn only_an_explicit_text_html_counts_as_a_browser() {
        let cases: [(&str, &[&str], bool); 7] = [
            ("no header", &[], false),
            ("any", &["*/*"], false),
            ("json", &["application/json"], false),
            (
                "a browser's navigation",
                &["text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"],
                true,
            ),
            (
                "upper case, spaces",
                &["application/json, TEXT/HTML ;q=0.5"],
                true,
            ),
            (
                "refused with q=0",
                &["text/html;q=0, application/json"],
                false,
            ),
            ("second header", &["application/json", "text/html"], true),
        ];
        for (name, values, want) in cases {
            let mut headers = HeaderMap::new();
            for value in values {
                headers.append(
                    HeaderName::from_static("accept"),
                    HeaderValue::from_str(value).unwrap(),
                );
            }
            assert_eq!(wants_html(&headers), want, "{name}");
        }
    }

    #[test]
    fn lang_query() {
        assert_eq!(lang_from_query("lang=zh-TW"), Some(Locale::ZhTw));
        assert_eq!(lang_from_query("a=1&lang=en"), Some(Locale::En));
        assert_eq!(lang_from_query("lang=fr"), None);
        assert_eq!(lang_from_query(""), None);
    }
}
