//! The platform simulator: a separate HTTP server that stands in for the outside world in tests,
//! benchmarks and the demo. It runs as `service sim` or in-process on port 0.
//!
//! So far it hosts the test OpenID Connect identity provider under `/oidc` ([`idp`]); the social
//! platforms' APIs join it with the publishing work.

pub mod idp;

use std::net::TcpListener;

use actix_web::{App, HttpServer, dev::ServerHandle, web};

/// What the simulator is started with.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Listen address (port 0 picks a free one).
    pub bind: String,
    /// OAuth clients the identity provider knows: `(client_id, client_secret)`.
    pub idp_clients: Vec<(String, String)>,
    /// A fixed issuer for the identity provider; default `{base_url}/oidc`.
    pub idp_issuer: Option<String>,
}

/// A running simulator.
pub struct Simulator {
    pub port: u16,
    /// `http://127.0.0.1:PORT`
    pub base_url: String,
    handle: ServerHandle,
    idp: web::Data<idp::IdpState>,
}

impl Simulator {
    /// Binds and starts the simulator on the current actix system.
    pub fn start(config: SimConfig) -> std::io::Result<Self> {
        let listener = TcpListener::bind(&config.bind)?;
        let address = listener.local_addr()?;
        let base_url = format!("http://{address}");
        let idp = web::Data::new(idp::IdpState::new(
            config
                .idp_issuer
                .unwrap_or_else(|| format!("{base_url}/oidc")),
        ));
        for (id, secret) in config.idp_clients {
            idp.register_client(id, secret);
        }
        let idp_for_server = idp.clone();
        let server = HttpServer::new(move || {
            App::new()
                .app_data(idp_for_server.clone())
                .service(web::scope("/oidc").configure(idp::configure))
        })
        .workers(1)
        .disable_signals()
        .listen(listener)?
        .run();
        let handle = server.handle();
        actix_rt::spawn(server);
        Ok(Self {
            port: address.port(),
            base_url,
            handle,
            idp,
        })
    }

    /// The identity provider's issuer URL.
    pub fn idp_issuer(&self) -> String {
        self.idp.issuer().to_string()
    }

    /// Adds an OAuth client to the identity provider.
    pub fn register_idp_client(&self, client_id: &str, secret: &str) {
        self.idp
            .register_client(client_id.to_string(), secret.to_string());
    }

    /// Stops the server gracefully.
    pub async fn stop(&self) {
        self.handle.stop(true).await;
    }
}
