//! Cross-site request refusal for cookie-authenticated writes (defence in depth against CSRF,
//! on top of `SameSite` cookies).
//!
//! A browser says where a request comes from in `Origin` (sent on every cross-origin POST, PUT,
//! PATCH and DELETE) and in `Sec-Fetch-Site`. A state-changing request is refused when either
//! names another site:
//! - `Origin`, when sent, must be the origin of the public URL (`server.public_url`), not
//!   `Host`, which a proxy may rewrite. `Origin: null` (sandboxed frames, some redirects, local
//!   files) is refused, as is a value that is not a single well-formed origin.
//! - `Sec-Fetch-Site`, when sent, must be `same-origin` (or `none`: a navigation the user typed,
//!   which no other site can cause). `same-site` is refused: a sibling subdomain is another origin.
//! - A request with neither header is let through: browsers always send `Origin` on these
//!   methods, so such a request comes from a non-browser client (curl, a script), which sends no
//!   ambient cookies on anyone's behalf.

use actix_web::{
    body::MessageBody,
    dev::ServiceRequest,
    http::{Method, header, header::HeaderMap},
    middleware::Next,
};
use url::Url;

use super::{Guarded, refuse, state_of};
use crate::error::ApiError;

/// The `Sec-Fetch-Site` request header (Fetch Metadata).
const SEC_FETCH_SITE: &str = "sec-fetch-site";

/// Why a request was judged cross-site (logged, never shown: the client gets one message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CrossSite {
    /// `Origin` names another origin (or the public URL itself is not a usable origin).
    ForeignOrigin,
    /// `Origin: null`: the browser hides where the request comes from.
    NullOrigin,
    /// `Origin` is repeated or is not an origin at all.
    MalformedOrigin,
    /// `Sec-Fetch-Site` is `cross-site`, `same-site`, or a value we do not know.
    FetchSite,
}

/// Whether a method can change state (anything but the safe methods of RFC 9110 §9.2.1).
fn changes_state(method: &Method) -> bool {
    !matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

/// Judges where a request comes from by its headers. `public_url` is the service's public base
/// URL; if it does not parse as an http(s) URL, no `Origin` can match it.
pub(crate) fn check_headers(headers: &HeaderMap, public_url: &str) -> Result<(), CrossSite> {
    let mut origins = headers.get_all(header::ORIGIN);
    if let Some(origin) = origins.next() {
        if origins.next().is_some() {
            return Err(CrossSite::MalformedOrigin);
        }
        let origin = origin.to_str().map_err(|_| CrossSite::MalformedOrigin)?;
        if origin.trim() == "null" {
            return Err(CrossSite::NullOrigin);
        }
        let origin = Url::parse(origin).map_err(|_| CrossSite::MalformedOrigin)?;
        // An opaque origin (unparseable or non-http public URL) equals nothing, itself included.
        let ours = Url::parse(public_url).map(|url| url.origin());
        if !matches!(&ours, Ok(ours) if ours.is_tuple() && *ours == origin.origin()) {
            return Err(CrossSite::ForeignOrigin);
        }
    }
    for site in headers.get_all(SEC_FETCH_SITE) {
        if !matches!(site.to_str(), Ok("same-origin" | "none")) {
            return Err(CrossSite::FetchSite);
        }
    }
    Ok(())
}

/// The check for a request about to be served: safe methods always pass.
pub(crate) fn check_request(req: &ServiceRequest, public_url: &str) -> Result<(), ApiError> {
    if !changes_state(req.method()) {
        return Ok(());
    }
    check_headers(req.headers(), public_url).map_err(|reason| {
        tracing::info!(
            ?reason,
            method = %req.method(),
            path = req.path(),
            "cross-site request refused"
        );
        ApiError::cross_site_request()
    })
}

/// Middleware for cookie-authenticated routes that do not go through
/// [`super::require_session`] (which runs the same check itself): sign-out, and the operator
/// page's sign-in and sign-out.
pub async fn require_same_origin(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Guarded<impl MessageBody + 'static> {
    let state = match state_of(&req) {
        Ok(state) => state,
        Err(error) => return refuse(req, error),
    };
    if let Err(error) = check_request(&req, &state.public_url) {
        return refuse(req, error);
    }
    Ok(next.call(req).await?.map_into_left_body())
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{HeaderName, HeaderValue};

    use super::*;

    const PUBLIC: &str = "https://social.example.com";

    /// A named case: the headers sent and the verdict.
    type Case = (
        &'static str,
        &'static [(&'static str, &'static [u8])],
        Result<(), CrossSite>,
    );

    fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_bytes(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn requests_are_judged_by_origin_and_fetch_metadata() {
        use CrossSite::*;
        let cases: &[Case] = &[
            ("neither header: a non-browser client", &[], Ok(())),
            (
                "same origin",
                &[("origin", b"https://social.example.com")],
                Ok(()),
            ),
            (
                "same origin, explicit default port",
                &[("origin", b"https://social.example.com:443")],
                Ok(()),
            ),
            (
                "same origin, upper-case host",
                &[("origin", b"https://SOCIAL.example.com")],
                Ok(()),
            ),
            (
                "same origin with fetch metadata",
                &[
                    ("origin", b"https://social.example.com"),
                    ("sec-fetch-site", b"same-origin"),
                ],
                Ok(()),
            ),
            (
                "fetch metadata alone, same origin",
                &[("sec-fetch-site", b"same-origin")],
                Ok(()),
            ),
            (
                "fetch metadata alone, typed by the user",
                &[("sec-fetch-site", b"none")],
                Ok(()),
            ),
            (
                "another site",
                &[("origin", b"https://evil.example")],
                Err(ForeignOrigin),
            ),
            (
                "a sibling subdomain",
                &[("origin", b"https://evil.social.example.com")],
                Err(ForeignOrigin),
            ),
            (
                "same host over http",
                &[("origin", b"http://social.example.com")],
                Err(ForeignOrigin),
            ),
            (
                "same host, another port",
                &[("origin", b"https://social.example.com:8443")],
                Err(ForeignOrigin),
            ),
            (
                "a look-alike suffix",
                &[("origin", b"https://social.example.com.evil.example")],
                Err(ForeignOrigin),
            ),
            ("null origin", &[("origin", b"null")], Err(NullOrigin)),
            (
                "not a URL",
                &[("origin", b"social.example.com")],
                Err(MalformedOrigin),
            ),
            ("empty", &[("origin", b"")], Err(MalformedOrigin)),
            (
                "not UTF-8",
                &[("origin", b"https://social.example.com\xff")],
                Err(MalformedOrigin),
            ),
            (
                "repeated",
                &[
                    ("origin", b"https://social.example.com"),
                    ("origin", b"https://social.example.com"),
                ],
                Err(MalformedOrigin),
            ),
            (
                "cross-site fetch",
                &[("sec-fetch-site", b"cross-site")],
                Err(FetchSite),
            ),
            (
                "same-site fetch",
                &[("sec-fetch-site", b"same-site")],
                Err(FetchSite),
            ),
            (
                "unknown fetch value",
                &[("sec-fetch-site", b"whatever")],
                Err(FetchSite),
            ),
            (
                "good origin, cross-site fetch",
                &[
                    ("origin", b"https://social.example.com"),
                    ("sec-fetch-site", b"cross-site"),
                ],
                Err(FetchSite),
            ),
        ];
        for (name, pairs, expected) in cases {
            assert_eq!(check_headers(&headers(pairs), PUBLIC), *expected, "{name}");
        }
    }

    #[test]
    fn an_unusable_public_url_matches_no_origin() {
        for public in ["", "not a url", "file:///srv/social"] {
            let sent = headers(&[("origin", b"null".as_slice())]);
            assert_eq!(check_headers(&sent, public), Err(CrossSite::NullOrigin));
            let sent = headers(&[("origin", b"file://".as_slice())]);
            assert_eq!(
                check_headers(&sent, public),
                Err(CrossSite::ForeignOrigin),
                "{public}"
            );
            assert_eq!(check_headers(&HeaderMap::new(), public), Ok(()), "{public}");
        }
    }

    #[test]
    fn only_state_changing_methods_are_checked() {
        for method in [Method::GET, Method::HEAD, Method::OPTIONS, Method::TRACE] {
            assert!(!changes_state(&method), "{method}");
        }
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert!(changes_state(&method), "{method}");
        }
        let unknown = Method::from_bytes(b"PURGE").unwrap();
        assert!(changes_state(&unknown));
    }
}
