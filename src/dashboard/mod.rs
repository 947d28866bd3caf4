//! The dashboard: server-rendered HTML pages for the signed-in user (sign-in, Overview,
//! Accounts, API keys, Webhooks with each endpoint's delivery log, Compose, Scheduled, History,
//! Performance, and the operator pages).
//!
//! - Templates live in `templates/` (askama: compiled and type-checked with the crate); view
//!   models are built here from the same store and services the JSON handlers call; the page
//!   frame, strings and middlewares are [`crate::web`]'s.
//! - Every page but `/signin` needs the session. The JSON session check
//!   ([`require_session`]) is reused as is, and its 401 is turned into a 303 to `/signin`
//!   ([`to_sign_in`]): a person gets a page, never JSON. Its cross-site check also guards
//!   every form POST (same rule as `require_same_origin`).
//! - Every response of these routes carries a strict CSP, `nosniff` and `Referrer-Policy`
//!   ([`page_headers`]). Templates have no inline script, style attribute or event handler.
//! - Nothing here changes state on a GET: each change is a POST answered with a 303.
//! - Forms post `application/x-www-form-urlencoded`, except Compose's upload form
//!   ([`compose_media`]), whose `multipart/form-data` body streams each file to the media service.

pub mod accounts;
pub mod compose;
pub mod compose_media;
mod form_token;
pub mod history;
pub mod keys;
pub mod operator;
pub mod overview;
pub mod performance;
pub mod scheduled;
pub mod webhook_log;
pub mod webhooks;

use actix_web::{HttpRequest, HttpResponse, Responder, middleware::from_fn, web};
use askama::Template;

// The page frame and helpers every page uses, named here so the pages name them once.
pub(crate) use crate::web::{
    Layout, Nav, When, i18n, plan_name, preference_cookie, render, see_other, usage_text,
};
use crate::web::{
    SIGN_IN_PATH, assets,
    auth::require_session,
    html_errors,
    i18n::{Msg, T},
    locale_of, page_headers, to_sign_in,
};

/// Registers the pages and the static files.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/")
            .wrap(from_fn(require_session))
            .wrap(from_fn(to_sign_in))
            .wrap(from_fn(html_errors))
            .wrap(from_fn(page_headers))
            .route(web::get().to(root)),
    )
    .service(
        web::resource(SIGN_IN_PATH)
            .wrap(from_fn(page_headers))
            .route(web::get().to(sign_in)),
    )
    .service(
        web::resource("/static/{name}")
            .wrap(from_fn(page_headers))
            .route(web::get().to(assets::serve)),
    )
    .service(
        web::resource("/favicon.ico")
            .wrap(from_fn(page_headers))
            .route(web::get().to(assets::favicon)),
    )
    .service(
        web::scope("/dashboard")
            .wrap(from_fn(require_session))
            .wrap(from_fn(to_sign_in))
            .wrap(from_fn(html_errors))
            .wrap(from_fn(page_headers))
            .route("", web::get().to(overview::page))
            .configure(accounts::configure)
            .configure(keys::configure)
            .configure(webhooks::configure)
            .configure(webhook_log::configure)
            // Compose and Scheduled pages.
            .configure(compose::configure)
            .configure(compose_media::configure)
            .configure(scheduled::configure)
            .configure(history::configure)
            .configure(performance::configure)
            // Operator pages.
            .configure(operator::configure),
    );
}

/// `GET /`: signed in (the session middleware let us through) → the overview.
async fn root() -> HttpResponse {
    see_other("/dashboard")
}

#[derive(Template)]
#[template(path = "signin.html")]
struct SignInPage {
    layout: Layout,
}

/// `GET /signin`: the one page without a session.
async fn sign_in(req: HttpRequest) -> impl Responder {
    let page = SignInPage {
        layout: Layout::anonymous(T(locale_of(&req))),
    };
    render(&req, page)
}
