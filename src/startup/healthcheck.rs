//! `service healthcheck`: asks a running service on this machine whether it is ready, for a
//! container's `HEALTHCHECK` or a supervisor's probe. It reads the address the service binds
//! from the same configuration, so nothing is repeated in the probe's own command line.

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    time::Duration,
};

use crate::config::Config;

/// How long the probe waits for `/readyz` in all.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Where to reach the service bound at `server.bind`: an unspecified address (`0.0.0.0`, `[::]`)
/// is reached on loopback. Port 0 names no port to probe.
pub fn probe_address(config: &Config) -> Result<SocketAddr, String> {
    let bind: SocketAddr = config
        .server
        .bind
        .parse()
        .map_err(|e| format!("server.bind {:?} is no address: {e}", config.server.bind))?;
    if bind.port() == 0 {
        return Err(
            "server.bind has port 0: the service picked its own port; probe it at the \
                    address it logged"
                .to_string(),
        );
    }
    Ok(reachable(bind))
}

/// The public URL when none is configured: the service is taken to be used from this machine,
/// and a listener on every interface (a container's `0.0.0.0`) is named by its loopback
/// address, which a browser here can open and whose origin then matches.
pub fn local_url(bound: SocketAddr) -> String {
    format!("http://{}", reachable(bound))
}

/// Where a client on this machine reaches a listener bound at `bound`: an unspecified address
/// (`0.0.0.0`, `[::]`, every interface) is reached on loopback.
pub fn reachable(bound: SocketAddr) -> SocketAddr {
    let ip = match bound.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, bound.port())
}

/// `Ok` when `GET /readyz` answers 200; otherwise what it answered, or why it could not ask.
pub async fn probe(address: SocketAddr) -> Result<(), String> {
    let client = reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .no_proxy()
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
    let url = format!("http://{address}/readyz");
    let response = client
        .get(&url)
        .send()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let body = response.text().await.unwrap_or_default();
    Err(format!("{url} answered {status}: {body}"))
}
