//! The platform simulator: a separate HTTP server that stands in for the outside world in tests,
//! benchmarks and the demo. It runs as `service-sim` (this crate's binary), as `service sim`, or
//! in-process on port 0. A crate of its own, sharing no code with the service: it is built from
//! the platforms' specs, and the service links it only for its demo (the default `demo` feature)
//! and its tests.
//!
//! Mounts, each built from the platform's documentation (`../shared/design/platform-apis.md`),
//! not from our adapters' habits:
//! - `/graph/{ver}/…`: Meta Graph API, facebook pages and instagram ([`graph`]);
//! - `/instagram/{ver}/…`, `/instagram/access_token`, `/instagram/refresh_access_token` and
//!   `/instagram-api/oauth/access_token`: graph.instagram.com and api.instagram.com, instagram
//!   with Instagram Login ([`instagram_login`]);
//! - `/threads/{ver}/…`: Threads API ([`threads`]);
//! - `/tiktok/v2/…`: TikTok Content Posting API ([`tiktok`]);
//! - `/youtube/youtube/v3/…` and `/youtube/upload/youtube/v3/…`: YouTube Data API ([`youtube`]);
//! - `/youtubeanalytics/v2/reports`: YouTube Analytics ([`youtube::analytics_reports`]);
//! - `/x/2/…`: X API v2 ([`x`]);
//! - `/media/…`: a static media host ([`media`]);
//! - `/oidc/…`: the test OpenID Connect identity provider ([`idp`]);
//! - `/oauth/{app}/authorize` and each platform's token endpoints ([`oauth`]);
//! - `/webhooks/…`: a webhook receiver, standing for a user's server rather than a platform
//!   ([`webhooks`]);
//! - `/_sim/…`: control endpoints: accounts, published items, request counts, faults, protocol
//!   violations, the identity provider's signing key and unverified addresses ([`control`]).

pub mod cli;
pub mod control;
pub mod graph;
pub mod idp;
pub mod insights;
pub mod instagram_login;
pub mod media;
mod meta_insights;
pub mod oauth;
pub mod spec;
pub mod state;
pub mod threads;
pub mod tiktok;
pub mod util;
pub mod webhooks;
pub mod x;
pub mod youtube;

use std::{net::TcpListener, time::Duration};

use actix_web::{
    App, HttpServer,
    dev::{ServerHandle, Service},
    web,
};

/// What the simulator is started with.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Listen address (port 0 picks a free one).
    pub bind: String,
    /// OAuth clients the identity provider knows: `(client_id, client_secret)`.
    pub idp_clients: Vec<(String, String)>,
    /// A fixed issuer for the identity provider; default `{base_url}/oidc`.
    pub idp_issuer: Option<String>,
    /// How long asynchronous processing (videos, containers) takes before it finishes.
    pub processing_delay: Duration,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:0".into(),
            idp_clients: Vec::new(),
            idp_issuer: None,
            processing_delay: Duration::from_millis(300),
        }
    }
}

/// A running simulator.
pub struct Simulator {
    pub port: u16,
    /// `http://127.0.0.1:PORT`
    pub base_url: String,
    handle: ServerHandle,
    idp: web::Data<idp::IdpState>,
    state: web::Data<state::SimState>,
    webhooks: web::Data<webhooks::WebhookInbox>,
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
        )?);
        for (id, secret) in config.idp_clients {
            idp.register_client(id, secret);
        }
        let state = web::Data::new(state::SimState::new(config.processing_delay));
        let webhooks = web::Data::new(webhooks::WebhookInbox::default());
        let idp_for_server = idp.clone();
        let state_for_server = state.clone();
        let webhooks_for_server = webhooks.clone();
        let server = HttpServer::new(move || {
            let counted = state_for_server.clone();
            App::new()
                .wrap_fn(move |req, srv| {
                    counted.note_received();
                    let state = counted.clone();
                    let write = req.method() == actix_web::http::Method::POST;
                    let call = srv.call(req);
                    // Refusal sites mark their response; recording here gives every violation
                    // the request's method and path without threading them through the sites.
                    async move {
                        let response = if write {
                            let (response, key) = state::WRITE
                                .scope(std::cell::RefCell::new(None), async move {
                                    let response = call.await;
                                    let key = state::WRITE.with(|slot| slot.borrow_mut().take());
                                    (response, key)
                                })
                                .await;
                            if let Some(key) = key {
                                state.write_ended(&key);
                            }
                            response?
                        } else {
                            call.await?
                        };
                        if let Some(mark) = response
                            .response()
                            .extensions()
                            .get::<state::ViolationMark>()
                        {
                            state.record_violation(
                                &mark.platform,
                                response.request().method().as_str(),
                                response.request().path(),
                                &mark.rule,
                                &mark.detail,
                            );
                        }
                        Ok(response)
                    }
                })
                .app_data(idp_for_server.clone())
                .app_data(state_for_server.clone())
                .app_data(web::PayloadConfig::new(256 * 1024 * 1024))
                .app_data(web::JsonConfig::default().limit(4 * 1024 * 1024))
                .service(web::scope("/oidc").configure(idp::configure))
                .service(web::scope("/_sim").configure(control::configure))
                .service(web::scope("/media").configure(media::configure))
                .service(
                    web::scope("/webhooks")
                        .app_data(webhooks_for_server.clone())
                        .configure(webhooks::configure),
                )
                // Before the platform scopes: their catch-all routes would take these.
                .configure(oauth::configure)
                .configure(instagram_login::configure)
                .service(web::scope("/graph").configure(graph::configure))
                .service(web::scope("/threads").configure(threads::configure))
                .service(web::scope("/tiktok").configure(tiktok::configure))
                .service(web::scope("/youtube").configure(youtube::configure))
                .service(
                    web::scope("/youtubeanalytics")
                        .route("/v2/reports", web::get().to(youtube::analytics_reports)),
                )
                .service(web::scope("/x").configure(x::configure))
        })
        .workers(2)
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
            state,
            webhooks,
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

    /// Switches the identity provider to a new signing key (a new `kid`); returns the `kid`.
    pub fn rotate_idp_key(&self) -> std::io::Result<String> {
        self.idp.rotate_key()
    }

    /// Whether the identity provider's ID tokens for `email` say it is verified (default true).
    pub fn set_idp_email_verified(&self, email: &str, verified: bool) {
        self.idp.set_email_verified(email, verified);
    }

    /// The simulator's state (accounts, published items, faults), for in-process callers.
    pub fn state(&self) -> &state::SimState {
        &self.state
    }

    /// The webhook receiver (`/webhooks/…`): its deliveries, and the secrets it verifies them
    /// with.
    pub fn webhook_inbox(&self) -> &webhooks::WebhookInbox {
        &self.webhooks
    }

    /// The sample media URLs the media host serves.
    pub fn sample_media(&self) -> serde_json::Value {
        media::sample_media(&self.base_url)
    }

    /// Stops the server gracefully.
    pub async fn stop(&self) {
        self.handle.stop(true).await;
    }
}
