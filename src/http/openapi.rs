//! The OpenAPI 3.1 document of the whole HTTP surface, derived with utoipa from the handlers'
//! `#[utoipa::path]` annotations and the DTOs in [`super::dto`]. Served at `GET /openapi.json`,
//! rendered for people at `GET /docs/api`, committed as `docs/openapi.json` (a test keeps the
//! three in step).
//!
//! Routes are registered with `web::resource(..)`, so each path is listed here by hand;
//! `tests/api/openapi.rs` checks that every registered route is documented and that every
//! documented one answers. The dashboard's pages and the browser redirects are documented by
//! the small functions in [`pages`], which only carry their annotations.

use std::sync::LazyLock;

use actix_web::{HttpResponse, web};
use utoipa::{
    Modify, OpenApi,
    openapi::{
        Content, OpenApi as Document, Ref, RefOr, ResponseBuilder,
        schema::{AnyOf, Schema},
        security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
    },
};

use super::{
    accounts, admin, connect, cron, dto, history, keys, login, media, ops, performance, posts,
    scheduled, subscription, webhooks,
};
use crate::crypto::API_KEY_PREFIX;
use crate::web::auth::SESSION_COOKIE;

/// The document's description, in Markdown.
const DESCRIPTION: &str = "The social publishing service: publish and schedule posts on \
facebook, instagram, threads, tiktok, youtube and x, read their performance, and manage the \
keys and accounts behind them.\n\n\
Errors use one catalogue (`ErrorBody`: `{success: false, error: <code>, message}`), except the \
Free plan's quota refusal (`QuotaExceededBody`) and the performance endpoints \
(`PerformanceErrorBody`: `{success: false, error: <message>}`). Every operation may also answer \
500 (`InternalServerError`) and 503 (`ServiceUnavailable`); an unknown route answers 404 \
(`NotFound`) and a known route with another method 405 (`MethodNotAllowed`).\n\n\
Calls with an API key carry `X-RateLimit-Limit`, `X-RateLimit-Remaining` and \
`X-RateLimit-Reset` headers; a 429 carries `Retry-After`.";

#[derive(OpenApi)]
#[openapi(
    info(title = "Social publishing service", description = DESCRIPTION),
    paths(
        super::health,
        ops::healthz,
        ops::readyz,
        ops::metrics,
        ops::actors,
        ops::actors_page,
        posts::create_post,
        posts::get_post,
        posts::list_posts,
        webhooks::create_webhook,
        webhooks::list_webhooks,
        webhooks::delete_webhook,
        webhooks::change_webhook,
        webhooks::test_webhook,
        webhooks::rotate_webhook_secret,
        webhooks::list_deliveries,
        webhooks::replay_delivery,
        webhooks::webhook_queue,
        media::upload_media,
        media::list_media,
        media::get_medium,
        media::delete_medium,
        media::serve_medium,
        accounts::list_accounts_for_key,
        scheduled::list,
        scheduled::cancel,
        performance::metrics,
        performance::account,
        performance::posts,
        performance::post,
        cron::collection_status,
        cron::check_missing,
        cron::backfill,
        cron::collect_performance,
        keys::list_keys,
        keys::create_key,
        keys::delete_key,
        accounts::list_accounts,
        accounts::disconnect_account,
        accounts::token_info,
        connect::start,
        connect::callback,
        subscription::subscription_status,
        history::published_posts,
        login::me,
        pages::login,
        pages::login_callback,
        pages::logout,
        admin::find_users,
        admin::set_plan,
        admin::add_account,
        pages::openapi_json,
        pages::api_reference,
        pages::root,
        pages::sign_in,
        pages::static_file,
        pages::favicon,
        pages::overview,
        pages::accounts,
        pages::account_disconnect_confirm,
        pages::account_disconnect,
        pages::account_token,
        pages::keys,
        pages::key_create,
        pages::key_delete_confirm,
        pages::key_delete,
        pages::webhooks,
        pages::webhook_create,
        pages::webhook_log,
        pages::webhook_test,
        pages::webhook_rotate,
        pages::webhook_enable,
        pages::webhook_disable,
        pages::webhook_delete_confirm,
        pages::webhook_delete,
        pages::webhook_replay,
        pages::compose,
        pages::compose_submit,
        pages::compose_media,
        pages::scheduled,
        pages::scheduled_cancel_confirm,
        pages::scheduled_cancel,
        pages::history,
        pages::history_item,
        pages::performance,
        pages::performance_backfill,
        pages::operator,
        pages::operator_plan,
    ),
    components(schemas(
        dto::schema::ErrorBody,
        dto::schema::QuotaExceededBody,
        dto::schema::PerformanceErrorBody,
        // Named by `PerformanceErrors` (an `IntoResponses`), whose bodies utoipa does not collect.
        dto::responses::PerformanceError,
        entity::platform::Platform,
    )),
    modifiers(&SecuritySchemes, &CommonResponses, &UntaggedAsAnyOf),
    tags(
        (name = "posts", description = "Publishing and scheduling (API key)"),
        (name = "accounts", description = "Connected accounts"),
        (name = "scheduled", description = "Scheduled posts (API key)"),
        (name = "webhooks", description = "Webhook endpoints and their delivery log (API key or session). Events: `post.published`, `post.failed`, `post.unconfirmed`, `account.token_expiring`, `account.invalid`, `webhook.test`. Messages follow the Standard Webhooks specification: headers `webhook-id`, `webhook-timestamp`, `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the secret's base64-decoded key); body `{type, timestamp, data}`."),
        (name = "media", description = "Uploaded media (API key or session): JPEG, PNG, WEBP, MP4 and MOV files, typed by their bytes, served at unguessable public URLs for `mediaUrls` and `coverUrl`"),
        (name = "performance", description = "Platform figures (API key)"),
        (name = "cron", description = "Collection jobs (operator token or API key)"),
        (name = "keys", description = "API keys (session)"),
        (name = "history", description = "Publishing history (session)"),
        (name = "account", description = "Plan and usage (session)"),
        (name = "auth", description = "Sign-in (OpenID Connect) and the session"),
        (name = "operator", description = "Operator endpoints (operator token)"),
        (name = "ops", description = "Health, readiness, metrics, actors"),
        (name = "pages", description = "The dashboard's HTML pages and forms (session cookie)"),
        (name = "docs", description = "This document and its reference page"),
    )
)]
pub struct ApiDoc;

/// The three ways to authenticate.
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut Document) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "service-api-key".to_string(),
                format!(
                    "An API key from `POST /api/keys` or the dashboard: `{API_KEY_PREFIX}` \
                     followed by 40 letters and digits (pattern \
                     `^{API_KEY_PREFIX}[A-Za-z0-9]{{40}}$`)."
                ),
            ))),
        );
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                SESSION_COOKIE.to_string(),
                "The dashboard's session cookie, set by `GET /auth/callback` after sign-in \
                 (HttpOnly, SameSite=Lax). State-changing requests carrying it must come from \
                 the same site (`Origin` / `Sec-Fetch-Site`), else 403 `CrossSiteRequest`."
                    .to_string(),
            ))),
        );
        components.add_security_scheme(
            "operator_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The operator token (`secrets.operator_token`): \
                         `Authorization: Bearer <token>`.",
                    ))
                    .build(),
            ),
        );
    }
}

/// Adds the answers every JSON operation can give beside its own: 500 and 503 in the
/// catalogue's form (performance endpoints: their own form).
/// utoipa writes a serde `untagged` enum of structs as `oneOf`, which says a value matches
/// exactly one of the shapes. Ours do not promise that: serde takes the first shape that fits,
/// and two platforms' bodies can fit each other's (a TikTok and a YouTube list of videos, the
/// members the other leaves out being optional), which schemathesis caught as a live body "valid
/// under more than one" shape. `anyOf` states what the wire guarantees: one of these shapes.
struct UntaggedAsAnyOf;

impl Modify for UntaggedAsAnyOf {
    fn modify(&self, openapi: &mut Document) {
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        for schema in components.schemas.values_mut() {
            let RefOr::T(Schema::OneOf(one)) = schema else {
                continue;
            };
            if one.discriminator.is_some() || !one.items.iter().all(|i| matches!(i, RefOr::Ref(_)))
            {
                continue;
            }
            let mut any = AnyOf::new();
            any.items = std::mem::take(&mut one.items);
            any.description = one.description.take();
            any.schema_type = one.schema_type.clone();
            *schema = RefOr::T(Schema::AnyOf(any));
        }
    }
}

struct CommonResponses;

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut Document) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with("/api/")
                && !path.starts_with("/v2/")
                && !path.starts_with("/admin/")
                && path != "/auth/me"
            {
                continue;
            }
            let body = if path.starts_with("/api/performance/") {
                "PerformanceError"
            } else {
                "ErrorBody"
            };
            for operation in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                let json = operation.responses.responses.values().any(
                    |r| matches!(r, RefOr::T(r) if r.content.contains_key("application/json")),
                );
                if !json {
                    continue;
                }
                for (status, description) in [
                    ("500", "`InternalServerError`"),
                    ("503", "`ServiceUnavailable`"),
                ] {
                    operation
                        .responses
                        .responses
                        .entry(status.to_string())
                        .or_insert_with(|| {
                            RefOr::T(
                                ResponseBuilder::new()
                                    .description(description)
                                    .content(
                                        "application/json",
                                        Content::new(Some(Ref::from_schema_name(body))),
                                    )
                                    .build(),
                            )
                        });
                }
            }
        }
    }
}

/// The document, built once.
pub fn document() -> &'static Document {
    static DOCUMENT: LazyLock<Document> = LazyLock::new(ApiDoc::openapi);
    &DOCUMENT
}

/// The document as served and committed: pretty JSON with a final newline.
pub fn document_json() -> &'static str {
    static JSON: LazyLock<String> = LazyLock::new(|| {
        // A tree of strings, maps and numbers: serializing it cannot fail.
        let mut text = serde_json::to_string_pretty(document()).unwrap_or_default();
        text.push('\n');
        text
    });
    &JSON
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/openapi.json").route(web::get().to(openapi_json)));
}

async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(document_json())
}

/// Annotations for the routes whose answers are pages, redirects or files; the handlers live in
/// `dashboard/` and `http/login.rs`. These functions are never called.
#[allow(dead_code)]
pub mod pages {
    use super::dto::schema::ErrorBody;

    /// The OpenAPI document (this one).
    #[utoipa::path(get, path = "/openapi.json", tag = "docs",
        responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = Object)))]
    pub fn openapi_json() {}

    /// A readable reference of this document.
    #[utoipa::path(get, path = "/docs/api", tag = "docs",
        responses((status = 200, description = "The reference page", content_type = "text/html", body = String)))]
    pub fn api_reference() {}

    /// Starts signing in with the identity provider.
    #[utoipa::path(get, path = "/auth/login", tag = "auth",
        params(
            ("return_to" = Option<String>, Query, description = "A same-site path to land on after sign-in"),
            ("login_hint" = Option<String>, Query, description = "Passed to the identity provider"),
        ),
        responses(
            (status = 302, description = "To the identity provider", headers(("location" = String))),
            (status = 400, description = "An error page (browsers) or the catalogue body", content((ErrorBody = "application/json"), (String = "text/html"))),
            (status = 429, description = "`RateLimitExceeded`: this client address's sign-in budget (`auth.signin_rate_per_minute`, shared with the callback) is spent; `retry_after` and `Retry-After` say when to come back", headers(("retry-after" = u64)), content((ErrorBody = "application/json"), (String = "text/html"))),
            (status = 503, description = "The identity provider is unreachable", content((ErrorBody = "application/json"), (String = "text/html"))),
        ))]
    pub fn login() {}

    /// Where the identity provider sends the browser back; creates the session.
    #[utoipa::path(get, path = "/auth/callback", tag = "auth",
        params(
            ("code" = Option<String>, Query), ("state" = Option<String>, Query),
            ("error" = Option<String>, Query), ("error_description" = Option<String>, Query),
        ),
        responses(
            (status = 303, description = "Signed in: to `return_to` (sets the session cookie)", headers(("location" = String), ("set-cookie" = String))),
            (status = 400, description = "Missing `code`; unknown, expired or used `state`", content((ErrorBody = "application/json"), (String = "text/html"))),
            (status = 401, description = "Sign-in refused or not completed at the identity provider", content((ErrorBody = "application/json"), (String = "text/html"))),
            (status = 429, description = "`RateLimitExceeded`: this client address's sign-in budget (shared with `/auth/login`) is spent; `retry_after` and `Retry-After` say when to come back", headers(("retry-after" = u64)), content((ErrorBody = "application/json"), (String = "text/html"))),
            (status = 503, description = "The identity provider is unreachable", content((ErrorBody = "application/json"), (String = "text/html"))),
        ))]
    pub fn login_callback() {}

    /// Signs out: revokes the session and clears the cookie. Idempotent.
    #[utoipa::path(post, path = "/auth/logout", tag = "auth",
        responses(
            (status = 200, description = "Signed out (JSON clients)", body = super::dto::responses::Done),
            (status = 303, description = "Browsers (`Accept: text/html`): to the sign-in page", headers(("location" = String))),
            (status = 403, description = "`CrossSiteRequest`", body = ErrorBody),
        ))]
    pub fn logout() {}

    /// The landing page: the dashboard, or sign-in.
    #[utoipa::path(get, path = "/", tag = "pages", security(("session" = [])),
        responses(
            (status = 303, description = "To `/dashboard`, or to sign in", headers(("location" = String))),
        ))]
    pub fn root() {}

    /// The sign-in page.
    #[utoipa::path(get, path = "/signin", tag = "pages",
        responses((status = 200, description = "The page", content_type = "text/html", body = String)))]
    pub fn sign_in() {}

    /// The dashboard's stylesheet and script (content-hashed names).
    #[utoipa::path(get, path = "/static/{name}", tag = "pages",
        params(("name" = String, Path, description = "The file's name")),
        responses(
            (status = 200, description = "The file", content_type = "text/css", body = String),
            (status = 404, description = "No such file", body = ErrorBody),
        ))]
    pub fn static_file() {}

    /// The favicon (cached for a day).
    #[utoipa::path(get, path = "/favicon.ico", tag = "pages",
        responses((status = 200, description = "The icon", content_type = "image/x-icon", body = inline(Binary))))]
    pub fn favicon() {}

    /// A file's bytes.
    #[derive(utoipa::ToSchema)]
    #[schema(value_type = String, format = Binary)]
    pub struct Binary(Vec<u8>);

    macro_rules! page {
        ($name:ident, $path:literal, $summary:literal $(, $param:literal)?) => {
            #[doc = $summary]
            #[utoipa::path(get, path = $path, tag = "pages", security(("session" = [])),
                $(params(($param = String, Path)),)?
                responses(
                    (status = 200, description = "The page", content_type = "text/html", body = String),
                    (status = 303, description = "No session: to sign in", headers(("location" = String))),
                    (status = 400, description = "An error page (browsers) or the catalogue body", content((ErrorBody = "application/json"), (String = "text/html"))),
                    (status = 404, description = "Not found (an error page)", content((ErrorBody = "application/json"), (String = "text/html"))),
                ))]
            pub fn $name() {}
        };
    }

    macro_rules! form {
        ($name:ident, $path:literal, $summary:literal $(, $param:literal)?) => {
            #[doc = $summary]
            #[utoipa::path(post, path = $path, tag = "pages", security(("session" = [])),
                $(params(($param = String, Path)),)?
                request_body(content_type = "application/x-www-form-urlencoded", content = Object),
                responses(
                    (status = 200, description = "The page again, with the outcome or the errors", content_type = "text/html", body = String),
                    (status = 303, description = "Done: to the page that shows it; or no session: to sign in", headers(("location" = String))),
                    (status = 400, description = "An error page (browsers) or the catalogue body", content((ErrorBody = "application/json"), (String = "text/html"))),
                    (status = 403, description = "A cross-site form post (an error page)", content((ErrorBody = "application/json"), (String = "text/html"))),
                    (status = 404, description = "Not found (an error page)", content((ErrorBody = "application/json"), (String = "text/html"))),
                    (status = 415, description = "Not a form body", body = ErrorBody),
                ))]
            pub fn $name() {}
        };
    }

    page!(overview, "/dashboard", "Overview: plan, usage, accounts.");
    page!(accounts, "/dashboard/accounts", "Connected accounts.");
    page!(
        account_disconnect_confirm,
        "/dashboard/accounts/{account_id}/disconnect",
        "Confirm disconnecting an account.",
        "account_id"
    );
    form!(
        account_disconnect,
        "/dashboard/accounts/{account_id}/disconnect",
        "Disconnect an account.",
        "account_id"
    );
    page!(
        account_token,
        "/dashboard/accounts/{account_id}/token",
        "An account's token state.",
        "account_id"
    );
    page!(keys, "/dashboard/keys", "API keys.");
    form!(key_create, "/dashboard/keys", "Create an API key.");
    page!(
        key_delete_confirm,
        "/dashboard/keys/{id}/delete",
        "Confirm deleting an API key.",
        "id"
    );
    form!(
        key_delete,
        "/dashboard/keys/{id}/delete",
        "Delete an API key.",
        "id"
    );
    page!(webhooks, "/dashboard/webhooks", "Webhook endpoints.");
    form!(
        webhook_create,
        "/dashboard/webhooks",
        "Add a webhook endpoint (the answer shows its secret once)."
    );
    page!(
        webhook_log,
        "/dashboard/webhooks/{id}",
        "A webhook endpoint's delivery log.",
        "id"
    );
    form!(
        webhook_test,
        "/dashboard/webhooks/{id}/test",
        "Send a test message to a webhook endpoint.",
        "id"
    );
    form!(
        webhook_rotate,
        "/dashboard/webhooks/{id}/rotate-secret",
        "Rotate a webhook endpoint's secret (the answer shows the new one once).",
        "id"
    );
    form!(
        webhook_enable,
        "/dashboard/webhooks/{id}/enable",
        "Enable a webhook endpoint.",
        "id"
    );
    form!(
        webhook_disable,
        "/dashboard/webhooks/{id}/disable",
        "Disable a webhook endpoint.",
        "id"
    );
    page!(
        webhook_delete_confirm,
        "/dashboard/webhooks/{id}/delete",
        "Confirm deleting a webhook endpoint.",
        "id"
    );
    form!(
        webhook_delete,
        "/dashboard/webhooks/{id}/delete",
        "Delete a webhook endpoint.",
        "id"
    );
    form!(
        webhook_replay,
        "/dashboard/webhooks/{id}/replay",
        "Replay one message of a webhook endpoint's log (`message_id` in the form).",
        "id"
    );
    /// Compose a post; after the upload form, with the uploaded files' URLs in the media field.
    #[utoipa::path(get, path = "/dashboard/compose", tag = "pages", security(("session" = [])),
        params(
            ("media" = Option<String>, Query, description = "The media field's text (one URL per line), as the upload form sends it back"),
            ("uploaded" = Option<u32>, Query, description = "How many files the upload form just stored (a notice says so)"),
        ),
        responses(
            (status = 200, description = "The page", content_type = "text/html", body = String),
            (status = 303, description = "No session: to sign in", headers(("location" = String))),
            (status = 400, description = "An error page (browsers) or the catalogue body", content((ErrorBody = "application/json"), (String = "text/html"))),
            (status = 404, description = "Not found (an error page)", content((ErrorBody = "application/json"), (String = "text/html"))),
        ))]
    pub fn compose() {}
    form!(
        compose_submit,
        "/dashboard/compose",
        "Publish or schedule the composed post."
    );
    /// Compose's upload form, for browsers without scripts: stores the files, back to Compose.
    ///
    /// Each `file` part streams to the media service, which types it by its bytes; the redirect
    /// puts each stored file's URL into the media field.
    #[utoipa::path(post, path = "/dashboard/compose/media", tag = "pages", security(("session" = [])),
        request_body(description = "`multipart/form-data`: `form_token` (the rendered form's one-time token), `media` (the media field's text), then one `file` part per file (JPEG, PNG, WEBP, MP4 or MOV); in that order", content_type = "multipart/form-data", content = Object),
        responses(
            (status = 303, description = "Stored: to `/dashboard/compose?media=…&uploaded=…` (the media field with each new URL added); or no session: to sign in", headers(("location" = String))),
            (status = 400, description = "Compose again with the reason by the upload form, nothing more stored: `InvalidMediaType`, `MediaTooLarge`, `MediaQuotaExceeded`, no file chosen, or a missing or expired form token", content_type = "text/html", body = String),
            (status = 403, description = "A cross-site form post (an error page)", content((ErrorBody = "application/json"), (String = "text/html"))),
            (status = 408, description = "`RequestTimeout`: the body did not arrive within `media.upload_timeout_secs` (an error page)", content((ErrorBody = "application/json"), (String = "text/html"))),
            (status = 409, description = "This rendering of the form was sent before: Compose again, nothing stored", content_type = "text/html", body = String),
        ))]
    pub fn compose_media() {}
    page!(scheduled, "/dashboard/scheduled", "Scheduled posts.");
    page!(
        scheduled_cancel_confirm,
        "/dashboard/scheduled/{id}/cancel",
        "Confirm cancelling a scheduled post.",
        "id"
    );
    form!(
        scheduled_cancel,
        "/dashboard/scheduled/{id}/cancel",
        "Cancel a scheduled post.",
        "id"
    );
    page!(history, "/dashboard/history", "Publishing history.");
    page!(
        history_item,
        "/dashboard/history/{id}",
        "One publish's timeline.",
        "id"
    );
    page!(
        performance,
        "/dashboard/performance",
        "Performance figures."
    );
    form!(
        performance_backfill,
        "/dashboard/performance/backfill",
        "Collect missing dates again."
    );
    page!(
        operator,
        "/dashboard/operator",
        "Operators: users, plans, actors."
    );
    form!(
        operator_plan,
        "/dashboard/operator/users/{id}/plan",
        "Operators: set a user's plan.",
        "id"
    );
}
