//! Sends webhook messages: the HTTP side of a delivery attempt, with the guard media URLs get
//! (`media.rs`). An endpoint URL is `https` with a public host, unless `webhooks.allow_hosts`
//! names its `host:port`; the check is made when the endpoint is created (the URL's form and
//! where its name resolves) and again on every connection (a resolver that refuses non-public
//! addresses), so a name that later resolves to a private address reaches nothing. Redirects
//! are not followed: a 3xx is a failed attempt.

use std::{
    collections::HashSet,
    net::IpAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use reqwest::{header, redirect::Policy};
use url::Url;

use crate::{
    domain::webhook::{MAX_URL_CHARS, RESPONSE_KEPT_BYTES},
    media::{PublicOnlyResolver, is_public_ip},
};

/// How one attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendOutcome {
    /// The answer's status; `None` when no answer came.
    pub status: Option<u16>,
    /// The first KB of the answer's body (lossy UTF-8).
    pub response: Option<String>,
    pub duration: Duration,
    /// Why no answer came (or the body could not be read).
    pub error: Option<String>,
}

/// The headers of one attempt.
#[derive(Debug, Clone)]
pub struct Signed {
    pub message_id: String,
    pub timestamp: i64,
    pub signature: String,
}

#[derive(Clone)]
pub struct WebhookSender {
    guarded: reqwest::Client,
    trusted: reqwest::Client,
    allow: Arc<HashSet<String>>,
    user_agent: String,
}

impl WebhookSender {
    pub fn new(allow_hosts: &[String], timeout: Duration) -> Result<Self, reqwest::Error> {
        // No proxies: a proxy would resolve the name itself, past our resolver.
        let build = |guarded: bool| {
            let builder = reqwest::Client::builder()
                .no_proxy()
                .redirect(Policy::none())
                .connect_timeout(timeout.min(Duration::from_secs(10)))
                .timeout(timeout)
                .pool_idle_timeout(Duration::from_secs(60));
            if guarded {
                builder.dns_resolver(Arc::new(PublicOnlyResolver)).build()
            } else {
                builder.build()
            }
        };
        Ok(Self {
            guarded: build(true)?,
            trusted: build(false)?,
            allow: Arc::new(
                allow_hosts
                    .iter()
                    .map(|h| h.trim().to_ascii_lowercase())
                    .filter(|h| !h.is_empty())
                    .collect(),
            ),
            user_agent: format!("social-service-webhooks/{}", env!("CARGO_PKG_VERSION")),
        })
    }

    fn is_allow_listed(&self, url: &Url) -> bool {
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return false;
        };
        self.allow
            .contains(&format!("{}:{port}", host.to_ascii_lowercase()))
    }

    /// Checks an endpoint URL's form: absolute, at most 2,048 characters, `https` (or an
    /// allow-listed `http`), a host, no credentials, not an address off the public internet.
    /// The message says what is wrong.
    pub fn check_form(&self, raw: &str) -> Result<Url, String> {
        if raw.chars().count() > MAX_URL_CHARS {
            return Err(format!("url must be at most {MAX_URL_CHARS} characters"));
        }
        let url = Url::parse(raw.trim()).map_err(|_| "url must be an absolute URL".to_string())?;
        let allowed = self.is_allow_listed(&url);
        match url.scheme() {
            "https" => {}
            "http" if allowed => {}
            _ => return Err("url must use https".into()),
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err("url must have a host".into());
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("url must not carry credentials".into());
        }
        if !allowed {
            let literal = match url.host() {
                Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
                Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
                _ => None,
            };
            if literal.is_some_and(|ip| !is_public_ip(ip)) {
                return Err("url must point to a public address".into());
            }
        }
        Ok(url)
    }

    /// Checks where an endpoint's host name resolves now: every address public (or the host
    /// allow-listed). Connections are checked again when made.
    pub async fn check_resolves_publicly(&self, url: &Url) -> Result<(), String> {
        if self.is_allow_listed(url) {
            return Ok(());
        }
        let Some(url::Host::Domain(name)) = url.host() else {
            return Ok(());
        };
        let port = url.port_or_known_default().unwrap_or(443);
        let lookup = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::net::lookup_host((name, port)),
        )
        .await;
        match lookup {
            Ok(Ok(addrs)) => {
                let addrs: Vec<_> = addrs.collect();
                if addrs.is_empty() {
                    Err(format!("url's host {name} does not resolve"))
                } else if addrs.iter().any(|a| !is_public_ip(a.ip())) {
                    Err("url must point to a public address".into())
                } else {
                    Ok(())
                }
            }
            Ok(Err(_)) => Err(format!("url's host {name} does not resolve")),
            Err(_) => Err(format!("url's host {name} did not resolve in time")),
        }
    }

    /// One attempt: POSTs `body` with the Standard Webhooks headers.
    pub async fn send(&self, url: &str, signed: &Signed, body: String) -> SendOutcome {
        let started = Instant::now();
        let failed = |error: String| SendOutcome {
            status: None,
            response: None,
            duration: started.elapsed(),
            error: Some(error),
        };
        let url = match self.check_form(url) {
            Ok(url) => url,
            Err(why) => return failed(why),
        };
        let client = if self.is_allow_listed(&url) {
            &self.trusted
        } else {
            &self.guarded
        };
        let sent = client
            .post(url)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::USER_AGENT, &self.user_agent)
            .header("webhook-id", &signed.message_id)
            .header("webhook-timestamp", signed.timestamp.to_string())
            .header("webhook-signature", &signed.signature)
            .body(body)
            .send()
            .await;
        let mut response = match sent {
            Ok(response) => response,
            Err(error) => return failed(describe(&error)),
        };
        let status = response.status().as_u16();
        let mut kept: Vec<u8> = Vec::new();
        let mut error = None;
        while kept.len() < RESPONSE_KEPT_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => kept.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(e) => {
                    error = Some(describe(&e));
                    break;
                }
            }
        }
        kept.truncate(RESPONSE_KEPT_BYTES);
        SendOutcome {
            status: Some(status),
            response: (!kept.is_empty()).then(|| String::from_utf8_lossy(&kept).into_owned()),
            duration: started.elapsed(),
            error,
        }
    }
}

/// An error as the delivery log shows it: what failed, with the innermost cause (the guard's
/// refusal of a private address among them).
fn describe(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    let mut cause: &dyn std::error::Error = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    format!("{kind}: {cause}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn endpoint_urls_must_be_public_https_unless_allow_listed() {
        let sender =
            WebhookSender::new(&["127.0.0.1:9000".into()], Duration::from_secs(1)).unwrap();
        assert!(sender.check_form("https://hooks.example.com/in").is_ok());
        assert!(sender.check_form("http://127.0.0.1:9000/in").is_ok());
        for refused in [
            "http://hooks.example.com/in",
            "https://10.0.0.1/in",
            "https://127.0.0.1/in",
            "https://[::1]/in",
            "https://169.254.169.254/latest",
            "https://user:pw@hooks.example.com/",
            "ftp://hooks.example.com/",
            "hooks.example.com",
        ] {
            assert!(sender.check_form(refused).is_err(), "{refused}");
        }
        let long = format!("https://hooks.example.com/{}", "a".repeat(2048));
        assert!(sender.check_form(&long).is_err());
    }
}
