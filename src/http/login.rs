//! Dashboard sign-in through the OpenID Connect provider, and sign-out.
//!
//! `GET /auth/login` → provider → `GET /auth/callback` (creates the user on first sign-in and a
//! session) → redirect to `return_to` (a same-site path, see [`safe_return_to`]).
//! `POST /auth/logout` revokes the session server-side (a browser's sign-out form, whose `Accept`
//! names `text/html`, is sent on to the sign-in page; anything else gets JSON).
//! `GET /auth/me` shows who is signed in.

use actix_web::{
    HttpRequest, HttpResponse,
    cookie::{Cookie, SameSite, time::Duration as CookieDuration},
    http::header,
    middleware::from_fn,
    web,
};
use chrono::Duration;
use serde::Deserialize;

use url::{Position, Url};

use super::dto::{
    resources::User,
    responses::{Done, UserResponse},
    schema::ErrorBody,
};
use crate::web::auth::{SESSION_COOKIE, SessionUser, require_same_origin, require_session};
use crate::{
    AppState,
    crypto::{self, Pkce},
    error::ApiError,
    oidc::OidcError,
};

/// How long a sign-in may take between `/auth/login` and the callback.
const LOGIN_STATE_TTL_MINUTES: i64 = 10;
/// Where a sign-in lands without a (usable) `return_to`: the dashboard's overview (a page, not
/// JSON; a script that wants `/auth/me` asks for it with `return_to`).
const DEFAULT_LANDING: &str = "/dashboard";
/// Longest `return_to` kept; a longer one is no page of ours.
const MAX_RETURN_TO_LEN: usize = 2048;
/// Longest `state` looked up; ours are 32 characters.
const MAX_STATE_LEN: usize = 128;
/// The cookie that binds a sign-in to the browser that started it: the `state` it was given,
/// signed. Scoped to `/auth`, so it travels to the callback and nowhere else.
pub const LOGIN_COOKIE: &str = "service_login";
const LOGIN_COOKIE_PATH: &str = "/auth";
/// The signing purpose of [`LOGIN_COOKIE`], so that no other signed value of ours can stand in.
const LOGIN_COOKIE_PURPOSE: &str = "login-state";
/// Why the callback refuses a user an operator disabled (`service user disable`).
pub const DISABLED_MESSAGE: &str =
    "Sign-in refused: this user has been disabled by the operator of this service";

pub fn configure(cfg: &mut web::ServiceConfig) {
    // A browser on its way through sign-in gets a page, even for an error.
    cfg.service(
        web::resource("/auth/login")
            .wrap(from_fn(crate::web::signin_limit::limit_signin))
            .wrap(from_fn(crate::web::html_errors))
            .route(web::get().to(login)),
    )
    .service(
        web::resource("/auth/callback")
            .wrap(from_fn(crate::web::signin_limit::limit_signin))
            .wrap(from_fn(crate::web::html_errors))
            .route(web::get().to(callback)),
    )
    .service(
        web::resource("/auth/logout")
            .wrap(from_fn(require_same_origin))
            .route(web::post().to(logout)),
    )
    .service(
        web::resource("/auth/me")
            .wrap(from_fn(require_session))
            .route(web::get().to(me)),
    );
}

impl From<OidcError> for ApiError {
    fn from(err: OidcError) -> Self {
        match err {
            OidcError::NotConfigured => ApiError::service_unavailable(err.to_string()),
            OidcError::Unreachable(_) => {
                tracing::warn!(error = %err, "identity provider unreachable");
                ApiError::service_unavailable("The identity provider is unreachable")
            }
            OidcError::Rejected(_) | OidcError::InvalidIdToken(_) => {
                tracing::info!(error = %err, "sign-in refused");
                ApiError::unauthorized(format!("Sign-in failed: {err}"))
            }
        }
    }
}

#[derive(Deserialize)]
struct LoginQuery {
    return_to: Option<String>,
    login_hint: Option<String>,
}

/// The path to land on after sign-in, if `raw` is a same-site absolute path; `None` (the default
/// landing) otherwise, never an error.
///
/// Browsers forgive a lot in a `Location`: they drop tabs and newlines (`/\t/evil.example` becomes
/// `//evil.example`, another host), read `\` as `/`, and some decode once more. So anything that
/// holds a control character, a backslash or `//` in its path, as such or percent-encoded, here or
/// after one or two rounds of decoding, is refused before the URL is even parsed. What is left is
/// resolved against the public URL and kept only if it stays on that origin; the result is the
/// parser's own serialization (path, query, fragment), which is plain ASCII and a valid header.
pub(crate) fn safe_return_to(raw: &str, public_url: &str) -> Option<String> {
    if raw.len() > MAX_RETURN_TO_LEN || !raw.starts_with('/') {
        return None;
    }
    let once = percent_decode(raw.as_bytes());
    let twice = percent_decode(&once);
    if [raw.as_bytes(), &once, &twice].into_iter().any(is_hostile) {
        return None;
    }
    let base = Url::parse(public_url).ok()?;
    let target = base.join(raw).ok()?;
    (target.origin().is_tuple() && target.origin() == base.origin())
        .then(|| target[Position::BeforePath..].to_string())
}

/// A control character or a backslash anywhere, or `//` in the path.
fn is_hostile(candidate: &[u8]) -> bool {
    let path_end = candidate
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(candidate.len());
    candidate
        .iter()
        .any(|&b| b.is_ascii_control() || b == b'\\')
        || candidate[..path_end].windows(2).any(|pair| pair == b"//")
}

/// One round of percent-decoding; a `%` not followed by two hex digits stays as it is.
fn percent_decode(input: &[u8]) -> Vec<u8> {
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        let escaped = match input.get(i..i + 3) {
            Some([b'%', high, low]) => hex(*high).zip(hex(*low)),
            _ => None,
        };
        match escaped {
            // Two hex digits make at most 0xff.
            Some((high, low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            None => {
                out.push(input[i]);
                i += 1;
            }
        }
    }
    out
}

fn redirect_uri(state: &AppState) -> String {
    format!("{}/auth/callback", state.public_url)
}

#[tracing::instrument(skip_all)]
async fn login(
    state: web::Data<AppState>,
    query: web::Query<LoginQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.into_inner();
    let endpoints = state.oidc.endpoints().await?;
    let now = state.clock.now();
    let pkce = Pkce::generate();
    let login_state = entity::login_state::Model {
        state: crypto::random_token(24),
        purpose: "login".into(),
        pkce_verifier: pkce.verifier,
        nonce: crypto::random_token(16),
        return_to: query
            .return_to
            .and_then(|raw| safe_return_to(&raw, &state.public_url)),
        created_at: now,
        expires_at: now + Duration::minutes(LOGIN_STATE_TTL_MINUTES),
    };
    let url = state.oidc.authorization_url(
        endpoints,
        &redirect_uri(&state),
        &login_state.state,
        &login_state.nonce,
        &pkce.challenge,
        query.login_hint.as_deref(),
    )?;
    let binding = login_cookie(
        &state,
        state
            .signer
            .derive(LOGIN_COOKIE_PURPOSE)
            .sign(&login_state.state),
        CookieDuration::minutes(LOGIN_STATE_TTL_MINUTES),
    );
    state.store.insert_login_state(login_state).await?;
    Ok(HttpResponse::Found()
        .cookie(binding)
        .insert_header((header::LOCATION, url.to_string()))
        .finish())
}

/// The sign-in binding cookie: HttpOnly, and `SameSite=Lax` so that the provider's top-level
/// redirect back to the callback carries it while no cross-site subrequest does.
fn login_cookie(state: &AppState, value: String, max_age: CookieDuration) -> Cookie<'static> {
    Cookie::build(LOGIN_COOKIE, value)
        .path(LOGIN_COOKIE_PATH)
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(state.cookie_secure)
        .max_age(max_age)
        .finish()
}

/// Whether the browser presenting the callback is the one that started this sign-in: it holds
/// the signed `state` that `/auth/login` gave it. A link to our callback made by someone else's
/// sign-in (login CSRF: the victim would be signed in as the attacker) carries no such cookie.
fn started_in_this_browser(state: &AppState, req: &HttpRequest, expected: &str) -> bool {
    req.cookie(LOGIN_COOKIE).is_some_and(|cookie| {
        state
            .signer
            .derive(LOGIN_COOKIE_PURPOSE)
            .verify(cookie.value())
            .is_some_and(|bound| crypto::constant_time_eq(bound, expected))
    })
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

#[tracing::instrument(skip_all)]
async fn callback(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<CallbackQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.into_inner();
    if let Some(error) = query.error {
        let description = query.error_description.unwrap_or_default();
        return Err(ApiError::unauthorized(format!(
            "Sign-in was not completed: {error} {description}"
        )));
    }
    let code = query
        .code
        .ok_or_else(|| ApiError::missing_parameter("code"))?;
    let state_value = query
        .state
        .ok_or_else(|| ApiError::missing_parameter("state"))?;
    let unknown_state = || {
        ApiError::invalid_request("Unknown or expired sign-in state; start again at /auth/login")
    };
    // Ours are base64url: anything else is unknown without asking the database (PostgreSQL
    // refuses a NUL byte in text with an error, which would otherwise surface as a 500).
    if !is_state_shaped(&state_value) {
        return Err(unknown_state());
    }
    let now = state.clock.now();
    let login_state = state
        .store
        .take_login_state(&state_value, now)
        .await?
        .filter(|s| s.purpose == "login")
        .ok_or_else(unknown_state)?;
    // Checked after the state is taken, so a link that fails here cannot be tried again.
    if !started_in_this_browser(&state, &req, &login_state.state) {
        tracing::warn!("sign-in callback from a browser that did not start it");
        return Err(ApiError::invalid_request(
            "This sign-in was started in another browser; start again at /auth/login",
        ));
    }
    let identity = state
        .oidc
        .exchange_code(
            &code,
            &login_state.pkce_verifier,
            &redirect_uri(&state),
            &login_state.nonce,
            now,
        )
        .await?;
    if state
        .store
        .sign_in_refused(
            &identity.issuer,
            &identity.subject,
            identity.email.as_deref(),
        )
        .await?
    {
        return Err(ApiError::unauthorized(DISABLED_MESSAGE));
    }
    let user = state.store.record_sign_in(&identity, now).await?;
    let token = crypto::random_token(32);
    let ttl = Duration::hours(state.config.auth.session_ttl_hours.max(1));
    state
        .store
        .create_session(user.id, crypto::sha256_hex(&token), now, now + ttl)
        .await?;
    tracing::info!(user_id = %user.id, "dashboard sign-in");
    let cookie = Cookie::build(SESSION_COOKIE, state.signer.sign(&token))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(state.cookie_secure)
        .max_age(CookieDuration::seconds(ttl.num_seconds()))
        .finish();
    // Checked again: a sign-in started before an upgrade may carry a path stored unchecked.
    let target = login_state
        .return_to
        .and_then(|raw| safe_return_to(&raw, &state.public_url))
        .unwrap_or_else(|| DEFAULT_LANDING.into());
    let mut binding_removal = login_cookie(&state, String::new(), CookieDuration::ZERO);
    binding_removal.make_removal();
    Ok(HttpResponse::SeeOther()
        .cookie(cookie)
        .cookie(binding_removal)
        .insert_header((header::LOCATION, target))
        .finish())
}

/// Whether `value` could be a `state` we issued (base64url, not too long).
fn is_state_shaped(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= MAX_STATE_LEN
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Revokes the session (if any) and clears the cookie. Idempotent.
async fn logout(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    if let Some(cookie) = req.cookie(SESSION_COOKIE)
        && let Some(token) = state.signer.verify(cookie.value())
    {
        state
            .store
            .revoke_session(&crypto::sha256_hex(token), state.clock.now())
            .await?;
    }
    let mut removal = Cookie::build(SESSION_COOKIE, "")
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(state.cookie_secure)
        .finish();
    removal.make_removal();
    if crate::web::wants_html(req.headers()) {
        return Ok(HttpResponse::SeeOther()
            .cookie(removal)
            .insert_header((header::LOCATION, crate::web::SIGN_IN_PATH))
            .finish());
    }
    Ok(HttpResponse::Ok()
        .cookie(removal)
        .json(Done::new("Signed out")))
}

/// The signed-in user.
#[utoipa::path(get, path = "/auth/me", tag = "auth", security(("session" = [])),
    responses(
        (status = 200, description = "The signed-in user", body = UserResponse),
        (status = 401, description = "No valid session", body = ErrorBody),
    ))]
pub async fn me(session: SessionUser) -> HttpResponse {
    HttpResponse::Ok().json(UserResponse {
        success: true,
        user: User::from(&session.user),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PUBLIC: &str = "https://social.example.com";

    #[test]
    fn same_site_paths_are_kept_in_their_normal_form() {
        let cases = [
            ("a plain path", "/api/keys", "/api/keys"),
            (
                "a path with its query",
                "/api/keys?page=2&x=y",
                "/api/keys?page=2&x=y",
            ),
            (
                "a query holding a URL",
                "/r?next=https://a.example/b",
                "/r?next=https://a.example/b",
            ),
            ("a fragment", "/docs#keys", "/docs#keys"),
            (
                "an encoded slash inside a segment",
                "/files/a%2Fb",
                "/files/a%2Fb",
            ),
            ("dot segments resolve", "/a/../b/./c", "/b/c"),
            ("climbing above the root stays at it", "/../../etc", "/etc"),
            ("a space is encoded", "/a b", "/a%20b"),
            ("non-ASCII is encoded", "/café", "/caf%C3%A9"),
            (
                "an at sign is only a path",
                "/@evil.example",
                "/@evil.example",
            ),
            ("the root", "/", "/"),
        ];
        for (name, raw, kept) in cases {
            assert_eq!(safe_return_to(raw, PUBLIC).as_deref(), Some(kept), "{name}");
        }
    }

    #[test]
    fn anything_that_could_leave_the_site_is_refused() {
        let long = format!("/{}", "a".repeat(MAX_RETURN_TO_LEN));
        let cases = [
            ("empty", ""),
            ("relative", "api/keys"),
            ("absolute URL", "https://evil.example/"),
            (
                "same origin spelled out",
                "https://social.example.com/api/keys",
            ),
            ("scheme-relative", "//evil.example"),
            ("triple slash", "///evil.example"),
            ("backslash", "/\\evil.example"),
            ("backslash later", "/a\\b"),
            ("tab", "/\t/evil.example"),
            ("newline", "/\n/evil.example"),
            ("carriage return", "/\r/evil.example"),
            ("NUL", "/\0/evil.example"),
            ("DEL", "/a\x7f"),
            ("encoded tab", "/%09/evil.example"),
            ("encoded newline", "/%0A/evil.example"),
            ("encoded carriage return", "/%0d/evil.example"),
            ("encoded NUL", "/%00"),
            ("encoded backslash", "/%5Cevil.example"),
            ("encoded slash after a slash", "/%2F/evil.example"),
            ("encoded slash before a slash", "/%2f/evil.example"),
            ("two encoded slashes", "/%2F%2Fevil.example"),
            ("only encoded slashes", "%2F%2Fevil.example"),
            ("double-encoded tab", "/%2509/evil.example"),
            ("double-encoded slash", "/%252F/evil.example"),
            ("double-encoded backslash", "/%255Cevil.example"),
            ("double slash inside the path", "/a//b"),
            ("control character in the query", "/a?x=\n"),
            (
                "encoded control character in the query",
                "/a?x=%0D%0ASet-Cookie:x=y",
            ),
            ("too long", long.as_str()),
        ];
        for (name, raw) in cases {
            assert_eq!(safe_return_to(raw, PUBLIC), None, "{name}: {raw:?}");
        }
    }

    #[test]
    fn without_a_usable_public_url_nothing_is_kept() {
        assert_eq!(safe_return_to("/api/keys", "not a url"), None);
        assert_eq!(safe_return_to("/api/keys", "file:///srv"), None);
    }

    #[test]
    fn percent_decoding_leaves_stray_percent_signs_alone() {
        assert_eq!(percent_decode(b"%41%zz%4"), b"A%zz%4".to_vec());
        assert_eq!(percent_decode(b"%2f%2F"), b"//".to_vec());
    }

    #[test]
    fn only_state_shaped_values_are_looked_up() {
        assert!(is_state_shaped(&crypto::random_token(24)));
        for bad in ["", "a\0b", "a b", "a.b", &"a".repeat(MAX_STATE_LEN + 1)] {
            assert!(!is_state_shaped(bad), "{bad:?}");
        }
    }
}
