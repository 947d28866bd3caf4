//! The operator page's sign-in: `GET /admin/login` (a form), `POST /admin/login`, `POST
//! /admin/logout`.
//!
//! A browser cannot send the bearer header, and a token in the address ends up in the history,
//! in proxy logs and in `Referer` headers. So the page has a form that trades the operator token
//! for a cookie, which opens `GET /admin/actors` only (the JSON admin endpoints still take the
//! bearer header alone, so the cookie cannot drive them from another site).
//!
//! The cookie holds `<expiry>:<nonce>` signed with a key derived from the session key *and* the
//! operator token: it expires on the server's clock whatever the browser keeps, a dashboard
//! session cookie can never pass for it, and changing the operator token voids every operator
//! cookie at once. It is stateless, so signing out clears it from the browser; a copy taken
//! before lives until its expiry (or until the operator token changes).

use actix_web::{
    HttpResponse, HttpResponseBuilder,
    cookie::{Cookie, SameSite, time::Duration as CookieDuration},
    error::UrlencodedError,
    http::header,
    middleware::from_fn,
    web,
};
use chrono::Duration;
use secrecy::ExposeSecret;
use serde::Deserialize;

use crate::{
    AppState,
    crypto::{self, SessionSigner},
    error::{ApiError, ErrorCode},
    http::auth::{is_operator_token, require_same_origin},
};

/// The operator page's cookie.
pub const OPERATOR_COOKIE: &str = "service_operator";
/// Sent only to the operator pages, never to `/api/*`.
const OPERATOR_COOKIE_PATH: &str = "/admin";
/// A working day; the page refreshes itself, so a shorter life would sign the operator out
/// while they watch it.
const OPERATOR_COOKIE_TTL_HOURS: i64 = 8;
/// The form holds one token; anything much bigger is not a sign-in.
const FORM_LIMIT_BYTES: usize = 4096;

pub const LOGIN_PATH: &str = "/admin/login";
const PAGE_PATH: &str = "/admin/actors";

pub fn configure(cfg: &mut web::ServiceConfig) {
    let form_config = web::FormConfig::default()
        .limit(FORM_LIMIT_BYTES)
        .error_handler(|err, _req| form_error(err).into());
    // The origin check passes the GET (a safe method) and guards the two POSTs.
    cfg.service(
        web::resource(LOGIN_PATH)
            .app_data(form_config)
            .wrap(from_fn(require_same_origin))
            .route(web::get().to(login_page))
            .route(web::post().to(sign_in)),
    )
    .service(
        web::resource("/admin/logout")
            .wrap(from_fn(require_same_origin))
            .route(web::post().to(sign_out)),
    );
}

fn form_error(err: UrlencodedError) -> ApiError {
    match err {
        UrlencodedError::Overflow { .. } => {
            ApiError::new(ErrorCode::PayloadTooLarge, "Request body is too large")
        }
        UrlencodedError::ContentType => {
            ApiError::invalid_request("Content-Type must be application/x-www-form-urlencoded")
        }
        other => ApiError::invalid_request(format!("Invalid form: {other}")),
    }
}

/// The key operator cookies are signed with (see the module docs).
fn signer(state: &AppState) -> SessionSigner {
    state.signer.derive(&format!(
        "operator-cookie\0{}",
        state.operator_token.expose_secret()
    ))
}

/// `303 See Other` to a path of ours.
fn see_other(path: &'static str) -> HttpResponseBuilder {
    let mut response = HttpResponse::SeeOther();
    response
        .insert_header((header::LOCATION, path))
        .insert_header((header::CACHE_CONTROL, "no-store"));
    response
}

/// Headers of the operator's HTML pages: never cached, never framed (no clickjacking of the
/// sign-in or sign-out buttons), forms post only back here.
pub fn page_headers(response: &mut HttpResponseBuilder) {
    response
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ))
        .insert_header((header::REFERRER_POLICY, "no-referrer"));
}

#[derive(Deserialize)]
struct LoginPageQuery {
    /// Set by a refused sign-in (post → redirect → get).
    failed: Option<String>,
}

async fn login_page(query: web::Query<LoginPageQuery>) -> HttpResponse {
    let notice = if query.failed.is_some() {
        "<p role=alert class=failed>That is not the operator token.</p>"
    } else {
        ""
    };
    let html = format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8>\
         <title>Operator sign-in</title><style>body{{font:14px system-ui;margin:2em}}\
         .failed{{color:#a00}}label,input,button{{display:block;margin:.4em 0}}</style></head>\
         <body><h1>Operator sign-in</h1>{notice}\
         <form method=post action={LOGIN_PATH}>\
         <label for=token>Operator token</label>\
         <input id=token name=token type=password autocomplete=current-password required autofocus>\
         <button type=submit>Sign in</button></form></body></html>"
    );
    let mut response = HttpResponse::Ok();
    page_headers(&mut response);
    response.body(html)
}

#[derive(Deserialize)]
struct SignInForm {
    /// Absent is simply wrong.
    token: Option<String>,
}

/// Trades the operator token for the cookie. Both outcomes redirect (post → redirect → get): to
/// the page, or back to the form saying the token was wrong.
async fn sign_in(state: web::Data<AppState>, form: web::Form<SignInForm>) -> HttpResponse {
    let presented = form.token.as_deref().unwrap_or("");
    if !is_operator_token(presented, &state) {
        tracing::info!("operator sign-in refused: wrong token");
        return see_other("/admin/login?failed=1").finish();
    }
    let ttl = Duration::hours(OPERATOR_COOKIE_TTL_HOURS);
    let expires = state.clock.now() + ttl;
    let value = signer(&state).sign(&format!(
        "{}:{}",
        expires.timestamp(),
        crypto::random_token(16)
    ));
    let cookie = Cookie::build(OPERATOR_COOKIE, value)
        .path(OPERATOR_COOKIE_PATH)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(state.cookie_secure)
        .max_age(CookieDuration::seconds(ttl.num_seconds()))
        .finish();
    tracing::info!("operator signed in to the page");
    see_other(PAGE_PATH).cookie(cookie).finish()
}

/// Clears the cookie from the browser. Idempotent.
async fn sign_out(state: web::Data<AppState>) -> HttpResponse {
    let mut removal = Cookie::build(OPERATOR_COOKIE, "")
        .path(OPERATOR_COOKIE_PATH)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(state.cookie_secure)
        .finish();
    removal.make_removal();
    see_other(LOGIN_PATH).cookie(removal).finish()
}
