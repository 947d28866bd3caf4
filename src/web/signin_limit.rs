//! The per-address limit on anonymous sign-in (`/auth/login`, `/auth/callback`): each of those
//! requests costs a database write and a call to the identity provider, and needs no
//! credential, so without a limit anyone could make the service hammer its provider.
//!
//! - **The budget** (`auth.signin_rate_per_minute`, `auth.signin_burst`): in any minute an
//!   address gets at most `rate` requests, at most `burst` of them back to back; after a burst
//!   one more is allowed every `60 s / (rate − burst)`. One GCRA limiter of governor (MIT),
//!   keyed by address, whose bucket holds `burst` and refills at `rate − burst` a minute, so a
//!   full bucket plus a minute's refill is `rate`. The two routes share the budget (a sign-in
//!   is one of each). A refusal is `429 RateLimitExceeded` with `retry_after` and a
//!   `Retry-After` header (as a page for a browser, like every error of these routes).
//! - **The address**: the TCP peer, unless that peer is one of `server.trusted_proxies`; then
//!   `X-Forwarded-For` is read from the right, skipping trusted entries, and the first other
//!   entry is the client (the one a trusted proxy saw connect). An untrusted peer's header is
//!   ignored, since anyone can send one; and without the trusted list, every user behind a proxy
//!   would share the proxy's budget. IPv6 clients are keyed by their /64, the block one
//!   subscriber usually holds, so that rotating through it does not multiply the budget.
//! - **Memory**: keys whose bucket is full again are dropped every minute
//!   ([`SigninLimiter::spawn_housekeeping`]), so the map holds only addresses seen within about
//!   a minute.
//! - **Time** is the service's clock, as everywhere else (tests move it).

use std::{
    net::{IpAddr, Ipv6Addr},
    num::NonZeroU32,
    str::FromStr,
    sync::Arc,
    time::Duration,
};

use actix_web::{
    body::{EitherBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    http::header::{HeaderMap, HeaderName},
    middleware::Next,
    web,
};
use chrono::{DateTime, Utc};
use governor::{
    Quota, RateLimiter, clock::Clock, middleware::NoOpMiddleware,
    state::keyed::DefaultKeyedStateStore,
};

use crate::{AppState, clock::SharedClock, config::ConfigError, error::ApiError};

const FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// How often keys whose bucket is full again are dropped.
const HOUSEKEEPING_EVERY: Duration = Duration::from_secs(60);

/// An address or a block of addresses (`server.trusted_proxies` entries: `10.0.0.1`,
/// `10.0.0.0/8`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpBlock {
    network: IpAddr,
    prefix: u8,
}

impl IpBlock {
    fn contains(&self, address: IpAddr) -> bool {
        match (self.network, address.to_canonical()) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(network) & mask == u32::from(address) & mask
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(network) & mask == u128::from(address) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for IpBlock {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        let (address, prefix) = match raw.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (raw, None),
        };
        let network = IpAddr::from_str(address)
            .map_err(|_| format!("{raw:?} is not an IP address or CIDR block"))?
            .to_canonical();
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(prefix) => prefix
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{raw:?} has a prefix length that is not 0 to {max}"))?,
        };
        Ok(Self { network, prefix })
    }
}

/// `server.trusted_proxies`, parsed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Vec<IpBlock>);

impl TrustedProxies {
    /// Parses the configured entries, naming the key and the entry on a mistake.
    pub fn parse(entries: &[String]) -> Result<Self, ConfigError> {
        entries
            .iter()
            .map(|entry| entry.parse::<IpBlock>())
            .collect::<Result<Vec<_>, _>>()
            .map(Self)
            .map_err(|why| ConfigError::Invalid("server.trusted_proxies", why))
    }

    fn trusts(&self, address: IpAddr) -> bool {
        self.0.iter().any(|block| block.contains(address))
    }

    /// The client's address: `peer` itself unless it is trusted, otherwise what the trusted
    /// chain in `forwarded_for` (the `X-Forwarded-For` values, in order) reports (see the
    /// module's comment). An entry that is no address ends the walk: the hop to its right is
    /// the last one whose word can be taken.
    pub fn client_address(&self, peer: IpAddr, forwarded_for: &[&str]) -> IpAddr {
        let mut client = peer.to_canonical();
        if !self.trusts(client) {
            return client;
        }
        let hops = forwarded_for
            .iter()
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .filter(|hop| !hop.is_empty())
            .collect::<Vec<_>>();
        for hop in hops.iter().rev() {
            let Some(address) = parse_hop(hop) else {
                break;
            };
            client = address;
            if !self.trusts(address) {
                break;
            }
        }
        client
    }
}

/// An `X-Forwarded-For` entry: an address, possibly with a port (`1.2.3.4:5678`,
/// `[2001:db8::1]:443`).
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(address) = IpAddr::from_str(hop) {
        return Some(address.to_canonical());
    }
    std::net::SocketAddr::from_str(hop)
        .ok()
        .map(|socket| socket.ip().to_canonical())
}

/// What the budget is kept per: an IPv4 address, or an IPv6 /64.
fn budget_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & (u128::MAX << 64))),
    }
}

/// governor's time source: the service's clock, as the time since the limiter was made.
#[derive(Clone)]
struct ServiceClock {
    clock: SharedClock,
    origin: DateTime<Utc>,
}

impl Clock for ServiceClock {
    type Instant = Duration;

    fn now(&self) -> Duration {
        // A clock set back before the origin reads as the origin (time never runs backwards
        // for the limiter).
        (self.clock.now() - self.origin)
            .to_std()
            .unwrap_or_default()
    }
}

type Keyed =
    RateLimiter<IpAddr, DefaultKeyedStateStore<IpAddr>, ServiceClock, NoOpMiddleware<Duration>>;

/// The sign-in limiter (one per process, shared by the workers).
pub struct SigninLimiter {
    /// `None`: limiting is off (`auth.signin_rate_per_minute = 0`).
    limiter: Option<Keyed>,
    clock: ServiceClock,
    trusted: TrustedProxies,
}

impl std::fmt::Debug for SigninLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigninLimiter")
            .field("on", &self.limiter.is_some())
            .field("trusted", &self.trusted)
            .finish_non_exhaustive()
    }
}

impl SigninLimiter {
    /// `rate_per_minute` requests per address in any minute, `burst` of them at once (see the
    /// module's comment); a rate of 0 turns the limit off. The burst must be at least 1 and
    /// below the rate.
    pub fn new(
        rate_per_minute: u32,
        burst: u32,
        trusted: TrustedProxies,
        clock: SharedClock,
    ) -> Result<Self, ConfigError> {
        let clock = ServiceClock {
            origin: clock.now(),
            clock,
        };
        if rate_per_minute == 0 {
            return Ok(Self {
                limiter: None,
                clock,
                trusted,
            });
        }
        let invalid = |why: String| ConfigError::Invalid("auth.signin_burst", why);
        let refill = rate_per_minute
            .checked_sub(burst)
            .filter(|refill| *refill > 0)
            .ok_or_else(|| {
                invalid(format!(
                    "{burst} must be below auth.signin_rate_per_minute ({rate_per_minute})"
                ))
            })?;
        let bucket = NonZeroU32::new(burst).ok_or_else(|| invalid("must be at least 1".into()))?;
        let quota = Quota::with_period(Duration::from_secs(60) / refill)
            .ok_or_else(|| invalid("gives a zero refill period".into()))?
            .allow_burst(bucket);
        Ok(Self {
            limiter: Some(RateLimiter::new(
                quota,
                DefaultKeyedStateStore::default(),
                clock.clone(),
            )),
            clock,
            trusted,
        })
    }

    /// Spends one request of `client`'s budget; when it is spent, how long until the next is
    /// allowed.
    pub fn check(&self, client: IpAddr) -> Result<(), Duration> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        limiter
            .check_key(&budget_key(client))
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// The client address of a request (see [`TrustedProxies::client_address`]); `None` when
    /// actix knows no peer (a request made in-process).
    pub fn client_of(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let forwarded: Vec<&str> = headers
            .get_all(&FORWARDED_FOR)
            .filter_map(|value| value.to_str().ok())
            .collect();
        peer.map(|peer| self.trusted.client_address(peer, &forwarded))
    }

    /// Addresses holding state (tests check the memory bound).
    pub fn tracked(&self) -> usize {
        self.limiter.as_ref().map_or(0, |limiter| limiter.len())
    }

    /// Drops the addresses whose bucket is full again (they are indistinguishable from new
    /// ones).
    pub fn forget_idle(&self) {
        if let Some(limiter) = &self.limiter {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    /// Runs [`Self::forget_idle`] every minute while the limiter lives.
    pub fn spawn_housekeeping(self: &Arc<Self>) {
        let limiter = Arc::downgrade(self);
        actix_web::rt::spawn(async move {
            let mut every = tokio::time::interval(HOUSEKEEPING_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                match limiter.upgrade() {
                    Some(limiter) => limiter.forget_idle(),
                    None => return,
                }
            }
        });
    }
}

/// Middleware of `/auth/login` and `/auth/callback` (inside the routes' error pages, so a
/// browser gets its refusal as a page).
pub async fn limit_signin(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody + 'static>>, actix_web::Error> {
    let refusal = req.app_data::<web::Data<AppState>>().and_then(|state| {
        let limiter = &state.signin_limiter;
        let peer = req.peer_addr().map(|socket| socket.ip());
        let client = limiter.client_of(peer, req.headers())?;
        limiter.check(client).err()
    });
    match refusal {
        None => Ok(next.call(req).await?.map_into_left_body()),
        Some(wait) => {
            // Whole seconds, rounded up: a client that waits `retry_after` is let in.
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            let error = ApiError::rate_limited(seconds, None);
            Ok(req.error_response(error).map_into_right_body())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::clock::ManualClock;

    fn ip(raw: &str) -> IpAddr {
        raw.parse().unwrap()
    }

    fn trusted(entries: &[&str]) -> TrustedProxies {
        TrustedProxies::parse(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn the_client_address_comes_from_the_trusted_chain_only() {
        let proxies = trusted(&["10.0.0.0/8", "192.0.2.7", "fd00::/8"]);
        let cases: [(&str, &str, &[&str], &str); 10] = [
            (
                "untrusted peer: its header is ignored",
                "198.51.100.1",
                &["203.0.113.9"],
                "198.51.100.1",
            ),
            ("trusted peer without a header", "10.1.2.3", &[], "10.1.2.3"),
            (
                "trusted peer: the address it saw",
                "10.1.2.3",
                &["203.0.113.9"],
                "203.0.113.9",
            ),
            (
                "a forged entry left of the real one is skipped",
                "10.1.2.3",
                &["1.1.1.1, 203.0.113.9"],
                "203.0.113.9",
            ),
            (
                "trusted hops are walked past",
                "10.1.2.3",
                &["203.0.113.9, 192.0.2.7, 10.9.9.9"],
                "203.0.113.9",
            ),
            (
                "several headers are one list",
                "10.1.2.3",
                &["203.0.113.9", "10.9.9.9"],
                "203.0.113.9",
            ),
            (
                "all trusted: the leftmost",
                "10.1.2.3",
                &["10.4.4.4, 10.5.5.5"],
                "10.4.4.4",
            ),
            (
                "garbage ends the walk at the hop before",
                "10.1.2.3",
                &["203.0.113.9, unknown, 10.5.5.5"],
                "10.5.5.5",
            ),
            (
                "a port is dropped",
                "10.1.2.3",
                &["203.0.113.9:4711"],
                "203.0.113.9",
            ),
            (
                "IPv6, mapped IPv4 peer",
                "::ffff:10.1.2.3",
                &["[2001:db8::1]:443"],
                "2001:db8::1",
            ),
        ];
        for (name, peer, header, client) in cases {
            assert_eq!(
                proxies.client_address(ip(peer), header),
                ip(client),
                "{name}"
            );
        }
        assert_eq!(
            TrustedProxies::default().client_address(ip("10.1.2.3"), &["203.0.113.9"]),
            ip("10.1.2.3"),
            "nothing trusted: always the peer"
        );
    }

    #[test]
    fn blocks_parse_and_bad_entries_name_the_key() {
        let block: IpBlock = "10.0.0.0/8".parse().unwrap();
        assert!(block.contains(ip("10.255.0.1")));
        assert!(!block.contains(ip("11.0.0.1")));
        let all: IpBlock = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("8.8.8.8")));
        assert!(!all.contains(ip("2001:db8::1")));
        for bad in ["10.0.0.0/33", "example.com", "10.0.0.1/x", "::/129"] {
            assert!(
                matches!(
                    TrustedProxies::parse(&[bad.to_string()]),
                    Err(ConfigError::Invalid("server.trusted_proxies", _))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn ipv6_clients_share_their_slash_64() {
        assert_eq!(
            budget_key(ip("2001:db8:1:2:aaaa::1")),
            budget_key(ip("2001:db8:1:2:bbbb::9"))
        );
        assert_ne!(
            budget_key(ip("2001:db8:1:2::1")),
            budget_key(ip("2001:db8:1:3::1"))
        );
    }

    #[test]
    fn the_burst_must_be_below_the_rate() {
        let clock: SharedClock = Arc::new(ManualClock::new(Utc::now()));
        for (rate, burst) in [(30, 30), (30, 40), (30, 0)] {
            assert!(
                SigninLimiter::new(rate, burst, TrustedProxies::default(), clock.clone()).is_err(),
                "{rate}/{burst}"
            );
        }
        let off = SigninLimiter::new(0, 0, TrustedProxies::default(), clock).unwrap();
        assert!((0..100).all(|_| off.check(ip("192.0.2.1")).is_ok()));
    }

    #[test]
    fn idle_addresses_are_forgotten() {
        let manual = ManualClock::new(Utc::now());
        let clock: SharedClock = Arc::new(manual.clone());
        let limiter = SigninLimiter::new(30, 10, TrustedProxies::default(), clock).unwrap();
        for n in 0..50u8 {
            limiter.check(IpAddr::from([192, 0, 2, n])).unwrap();
        }
        assert_eq!(limiter.tracked(), 50);
        // One request each is refilled after 3 s; an address that came back is remembered
        // until its own requests are.
        manual.advance(chrono::Duration::seconds(1));
        limiter.check(IpAddr::from([192, 0, 2, 0])).unwrap();
        manual.advance(chrono::Duration::seconds(7));
        limiter.forget_idle();
        assert_eq!(limiter.tracked(), 1);
        manual.advance(chrono::Duration::seconds(10));
        limiter.forget_idle();
        assert_eq!(limiter.tracked(), 0);
    }
}
