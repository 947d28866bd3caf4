//! A small OpenID Connect identity provider for tests and the demo (authorization code flow,
//! PKCE S256 required). ID tokens are signed with RS256, as real providers sign them, and the
//! public key is published as a JWKS at `/oidc/jwks` (named by the discovery document's `jwks_uri`).
//!
//! `GET /oidc/authorize` signs in whoever `login_hint` names (an e-mail address) without a
//! password; without a hint it shows a one-field form. Everything is kept in memory.
//!
//! ID tokens carry `email_verified: true` unless the address was marked unverified with
//! `PUT /_sim/idp/unverified/{email}` (`DELETE` the same path marks it verified again).
//! `POST /_sim/idp/rotate-key` switches to a new signing key under a new `kid`; the JWKS then
//! lists only the new key, so a client must fetch it again to verify the next ID token.
//!
//! The keys are fixed and embedded (`sim/keys/`): a simulator needs no secrecy, and generating
//! 2048-bit RSA keys in a debug build would cost every test's simulator seconds. A rotation takes
//! the next embedded key, in turn, under a `kid` never used before.

use std::{
    sync::{
        Arc, RwLock,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use actix_web::{HttpRequest, HttpResponse, http::header, web};
use base64::{Engine, engine::general_purpose::STANDARD};
use chrono::Utc;
use dashmap::DashMap;
use jsonwebtoken::{
    Algorithm, EncodingKey, Header,
    jwk::{Jwk, JwkSet, PublicKeyUse},
};
use serde::Deserialize;
use serde_json::json;
use url::Url;

use crate::util;

const CODE_TTL: Duration = Duration::from_secs(120);

/// The embedded RSA signing keys (PKCS#1 PEM), used in turn.
const SIGNING_KEYS: [&str; 2] = [
    include_str!("../keys/rsa1.pem"),
    include_str!("../keys/rsa2.pem"),
];

/// The key ID tokens are signed with now, and its public half as a JWK.
struct SigningKey {
    kid: String,
    key: EncodingKey,
    jwk: Jwk,
}

impl SigningKey {
    /// The key of rotation number `generation` (0 at start).
    fn nth(generation: u64) -> std::io::Result<Self> {
        let pem = SIGNING_KEYS[(generation % SIGNING_KEYS.len() as u64) as usize];
        let key = EncodingKey::from_rsa_pem(pem.as_bytes()).map_err(std::io::Error::other)?;
        let mut jwk =
            Jwk::from_encoding_key(&key, Algorithm::RS256).map_err(std::io::Error::other)?;
        let kid = format!("sim-key-{generation}");
        jwk.common.key_id = Some(kid.clone());
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        Ok(Self { kid, key, jwk })
    }
}

struct Grant {
    client_id: String,
    redirect_uri: String,
    code_challenge: String,
    nonce: Option<String>,
    email: String,
    name: String,
    issued: Instant,
}

/// The provider's in-memory state.
pub struct IdpState {
    issuer: String,
    clients: DashMap<String, String>,
    codes: DashMap<String, Grant>,
    access_tokens: DashMap<String, (String, String)>,
    /// Rotations so far; the current key is this generation's.
    generation: AtomicU64,
    signing: RwLock<Arc<SigningKey>>,
    /// Lower-cased addresses whose ID tokens say `email_verified: false`.
    unverified: DashMap<String, ()>,
}

impl IdpState {
    /// Fails only if an embedded key does not parse.
    pub fn new(issuer: String) -> std::io::Result<Self> {
        Ok(Self {
            issuer,
            clients: DashMap::new(),
            codes: DashMap::new(),
            access_tokens: DashMap::new(),
            generation: AtomicU64::new(0),
            signing: RwLock::new(Arc::new(SigningKey::nth(0)?)),
            unverified: DashMap::new(),
        })
    }

    fn signing_key(&self) -> Arc<SigningKey> {
        // A poisoned lock still holds a whole key: the writer only swaps an `Arc`.
        self.signing
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Signs with a new key under a new `kid` from now on; returns the `kid`.
    pub fn rotate_key(&self) -> std::io::Result<String> {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let next = Arc::new(SigningKey::nth(generation)?);
        let kid = next.kid.clone();
        *self
            .signing
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = next;
        Ok(kid)
    }

    /// Whether ID tokens for `email` say the address is verified (the default).
    pub fn set_email_verified(&self, email: &str, verified: bool) {
        let email = email.trim().to_ascii_lowercase();
        if verified {
            self.unverified.remove(&email);
        } else {
            self.unverified.insert(email, ());
        }
    }

    fn email_verified(&self, email: &str) -> bool {
        !self
            .unverified
            .contains_key(&email.trim().to_ascii_lowercase())
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Whether `client_id` is registered (the platforms' OAuth apps share this list).
    pub fn knows_client(&self, client_id: &str) -> bool {
        self.clients.contains_key(client_id)
    }

    /// Whether `secret` is `client_id`'s secret (compared in constant time).
    pub fn client_secret_matches(&self, client_id: &str, secret: &str) -> bool {
        self.clients
            .get(client_id)
            .is_some_and(|known| crate::util::constant_time_eq(known.value(), secret))
    }

    pub fn register_client(&self, client_id: String, secret: String) {
        self.clients.insert(client_id, secret);
    }
}

/// The stable subject the provider gives an e-mail address.
pub fn subject_for_email(email: &str) -> String {
    format!(
        "sim-{}",
        &util::sha256_hex(&email.to_ascii_lowercase())[..16]
    )
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(
        "/.well-known/openid-configuration",
        web::get().to(discovery),
    )
    .route("/authorize", web::get().to(authorize))
    .route("/token", web::post().to(token))
    .route("/userinfo", web::get().to(userinfo))
    .route("/jwks", web::get().to(jwks));
}

/// The public key ID tokens are signed with now.
async fn jwks(state: web::Data<IdpState>) -> HttpResponse {
    HttpResponse::Ok().json(JwkSet {
        keys: vec![state.signing_key().jwk.clone()],
    })
}

async fn discovery(state: web::Data<IdpState>) -> HttpResponse {
    let issuer = &state.issuer;
    HttpResponse::Ok().json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "userinfo_endpoint": format!("{issuer}/userinfo"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "scopes_supported": ["openid", "email", "profile"],
    }))
}

#[derive(Deserialize)]
struct AuthorizeQuery {
    response_type: Option<String>,
    client_id: Option<String>,
    redirect_uri: Option<String>,
    scope: Option<String>,
    state: Option<String>,
    nonce: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    login_hint: Option<String>,
    name: Option<String>,
}

/// Marks `response` as refusing a protocol violation of `rule` (see
/// [`super::state::Violation`]).
fn violated(response: HttpResponse, rule: &str, detail: &str) -> HttpResponse {
    super::state::violation(response, "oidc", rule, detail)
}

fn bad_request(message: &str) -> HttpResponse {
    HttpResponse::BadRequest()
        .content_type("text/plain; charset=utf-8")
        .body(message.to_string())
}

/// Redirects back to the client with query parameters (RFC 6749 §4.1.2).
fn redirect_back(redirect_uri: &Url, params: &[(&str, &str)]) -> HttpResponse {
    let mut url = redirect_uri.clone();
    url.query_pairs_mut().extend_pairs(params);
    HttpResponse::Found()
        .insert_header((header::LOCATION, url.to_string()))
        .finish()
}

async fn authorize(state: web::Data<IdpState>, req: HttpRequest) -> HttpResponse {
    let Ok(query) = web::Query::<AuthorizeQuery>::from_query(req.query_string()) else {
        let detail = "malformed authorization request";
        return violated(bad_request(detail), "malformed_request", detail);
    };
    let query = query.into_inner();
    // Errors about the client or redirect URI must not redirect (RFC 6749 §4.1.2.1).
    let Some(client_id) = query
        .client_id
        .clone()
        .filter(|c| state.clients.contains_key(c))
    else {
        // An unknown client id is configuration; none at all is the client's mistake.
        let detail = "unknown client_id";
        return match query.client_id {
            None => violated(bad_request(detail), "missing_parameter", detail),
            Some(_) => bad_request(detail),
        };
    };
    let Some(redirect_uri) = query
        .redirect_uri
        .as_deref()
        .and_then(|u| Url::parse(u).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
    else {
        let detail = "missing or invalid redirect_uri";
        return violated(bad_request(detail), "invalid_redirect_uri", detail);
    };
    let client_state = query.state.clone().unwrap_or_default();
    // Every refusal redirected back here is a violation of the client's (consent is never
    // refused by this provider): `rule` names it for the log.
    let fail = |error: &str, description: &str, rule: &str| {
        violated(
            redirect_back(
                &redirect_uri,
                &[
                    ("error", error),
                    ("error_description", description),
                    ("state", &client_state),
                ],
            ),
            rule,
            description,
        )
    };
    if query.response_type.as_deref() != Some("code") {
        return fail(
            "unsupported_response_type",
            "only response_type=code is supported",
            "unsupported_response_type",
        );
    }
    if !query
        .scope
        .as_deref()
        .unwrap_or("")
        .split(' ')
        .any(|s| s == "openid")
    {
        return fail(
            "invalid_scope",
            "the openid scope is required",
            "missing_openid_scope",
        );
    }
    let Some(code_challenge) = query.code_challenge.clone() else {
        return fail(
            "invalid_request",
            "PKCE code_challenge is required",
            "pkce_required",
        );
    };
    if query.code_challenge_method.as_deref() != Some("S256") {
        return fail(
            "invalid_request",
            "code_challenge_method must be S256",
            "pkce_method",
        );
    }
    let Some(email) = query.login_hint.clone().filter(|e| e.contains('@')) else {
        return sign_in_form(req.query_string());
    };
    let name = query
        .name
        .clone()
        .unwrap_or_else(|| email.split('@').next().unwrap_or("user").to_string());
    let code = util::random_token(24);
    state.codes.insert(
        code.clone(),
        Grant {
            client_id,
            redirect_uri: redirect_uri.to_string(),
            code_challenge,
            nonce: query.nonce,
            email,
            name,
            issued: Instant::now(),
        },
    );
    redirect_back(&redirect_uri, &[("code", &code), ("state", &client_state)])
}

/// The sign-in page: one e-mail field; submitting repeats the request with `login_hint`.
fn sign_in_form(query_string: &str) -> HttpResponse {
    let hidden: String = url::form_urlencoded::parse(query_string.as_bytes())
        .filter(|(k, _)| k != "login_hint")
        .map(|(k, v)| {
            format!(
                r#"<input type="hidden" name="{}" value="{}">"#,
                html_escape(&k),
                html_escape(&v)
            )
        })
        .collect();
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(format!(
            "<!doctype html><title>Simulator sign-in</title><h1>Sign in (simulated identity provider)</h1>\
             <form method=\"get\" action=\"authorize\">{hidden}\
             <label>E-mail <input name=\"login_hint\" type=\"email\" required></label>\
             <button type=\"submit\">Sign in</button></form>"
        ))
}

fn html_escape(raw: &str) -> String {
    raw.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[derive(Deserialize)]
struct TokenForm {
    grant_type: Option<String>,
    code: Option<String>,
    redirect_uri: Option<String>,
    code_verifier: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

fn token_error(status: u16, error: &str) -> HttpResponse {
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap_or_default())
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({ "error": error }))
}

/// The client credentials from HTTP Basic or the form body (RFC 6749 §2.3.1).
fn client_credentials(req: &HttpRequest, form: &TokenForm) -> Option<(String, String)> {
    if let Some(basic) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
    {
        let decoded = String::from_utf8(STANDARD.decode(basic).ok()?).ok()?;
        let (id, secret) = decoded.split_once(':')?;
        let unescape = |s: &str| {
            url::form_urlencoded::parse(format!("x={s}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        return Some((unescape(id), unescape(secret)));
    }
    Some((form.client_id.clone()?, form.client_secret.clone()?))
}

async fn token(
    state: web::Data<IdpState>,
    req: HttpRequest,
    form: web::Form<TokenForm>,
) -> HttpResponse {
    let form = form.into_inner();
    let Some((client_id, secret)) = client_credentials(&req, &form) else {
        return violated(
            token_error(401, "invalid_client"),
            "missing_client_auth",
            "no client credentials (Basic or form)",
        );
    };
    let known = state.clients.get(&client_id).map(|s| s.value().clone());
    if !known.is_some_and(|expected| util::constant_time_eq(&expected, &secret)) {
        return token_error(401, "invalid_client");
    }
    if form.grant_type.as_deref() != Some("authorization_code") {
        return violated(
            token_error(400, "unsupported_grant_type"),
            "wrong_grant_type",
            "grant_type must be authorization_code",
        );
    }
    // Codes are single-use: removed before anything else is checked.
    let Some((_, grant)) = form.code.as_deref().and_then(|c| state.codes.remove(c)) else {
        return token_error(400, "invalid_grant");
    };
    let verifier_ok = form
        .code_verifier
        .as_deref()
        .is_some_and(|v| util::constant_time_eq(&util::pkce_challenge(v), &grant.code_challenge));
    // An expired code is a business answer; the rest are the client breaking the flow.
    let broken = if grant.client_id != client_id {
        Some(("code_binding", "the code was issued to another client"))
    } else if form.redirect_uri.as_deref() != Some(grant.redirect_uri.as_str()) {
        Some((
            "redirect_uri_mismatch",
            "redirect_uri differs from the authorization request",
        ))
    } else if !verifier_ok {
        Some((
            "pkce_mismatch",
            "code_verifier missing or not the challenge's",
        ))
    } else {
        None
    };
    if let Some((rule, detail)) = broken {
        return violated(token_error(400, "invalid_grant"), rule, detail);
    }
    if grant.issued.elapsed() > CODE_TTL {
        return token_error(400, "invalid_grant");
    }
    let subject = subject_for_email(&grant.email);
    let now = Utc::now().timestamp();
    let mut claims = json!({
        "iss": state.issuer,
        "sub": subject,
        "aud": client_id,
        "iat": now,
        "exp": now + 3600,
        "email": grant.email,
        "email_verified": state.email_verified(&grant.email),
        "name": grant.name,
    });
    if let Some(nonce) = grant.nonce {
        claims["nonce"] = json!(nonce);
    }
    let signing = state.signing_key();
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(signing.kid.clone());
    let Ok(id_token) = jsonwebtoken::encode(&header, &claims, &signing.key) else {
        return token_error(500, "server_error");
    };
    let access_token = util::random_token(24);
    state
        .access_tokens
        .insert(access_token.clone(), (subject, grant.email));
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": 3600,
            "id_token": id_token,
            "scope": "openid email profile",
        }))
}

async fn userinfo(state: web::Data<IdpState>, req: HttpRequest) -> HttpResponse {
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    match state.access_tokens.get(token) {
        Some(entry) => {
            let (sub, email) = entry.value();
            HttpResponse::Ok().json(json!({"sub": sub, "email": email}))
        }
        None => HttpResponse::Unauthorized()
            .insert_header((header::WWW_AUTHENTICATE, "Bearer error=\"invalid_token\""))
            .finish(),
    }
}
