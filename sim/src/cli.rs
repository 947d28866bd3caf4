//! Running the simulator on its own: `service-sim` (this crate's binary) and `service sim` (the
//! service's subcommand, in builds with the demo) take the same arguments.

use std::time::Duration;

use crate::{SimConfig, Simulator};

/// Run the platform simulator on its own: the six platforms' APIs, a media host, control
/// endpoints, the test identity provider and a webhook receiver.
#[derive(Debug, clap::Args)]
pub struct SimArgs {
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub bind: String,
    /// How long video and container processing takes, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    pub processing_ms: u64,
    /// OAuth client the identity provider accepts.
    #[arg(long, default_value = "service-dashboard")]
    pub client_id: String,
    #[arg(long, default_value = "sim-client-secret")]
    pub client_secret: String,
}

/// Starts the simulator, prints where everything is, and serves until Ctrl-C.
pub async fn run(args: SimArgs) -> Result<(), Box<dyn std::error::Error>> {
    let sim = Simulator::start(SimConfig {
        bind: args.bind,
        idp_clients: vec![(args.client_id.clone(), args.client_secret)],
        idp_issuer: None,
        processing_delay: Duration::from_millis(args.processing_ms),
    })?;
    let base = &sim.base_url;
    println!(
        "simulator on {base}\n\
         platform APIs: {base}/graph (facebook, instagram), {base}/threads, {base}/tiktok, \
         {base}/youtube, {base}/x\n\
         media host:    {base}/media/sample.jpg (see README)\n\
         control:       POST {base}/_sim/accounts {{\"platform\":\"x\",\"name\":\"me\"}}, \
         GET {base}/_sim/published, PUT {base}/_sim/faults/{{platform}}/{{account}}\n\
         webhooks:      POST deliveries to {base}/webhooks/inbox, see them at the same URL\n\
         identity provider issuer: {} (client_id {})",
        sim.idp_issuer(),
        args.client_id
    );
    tokio::signal::ctrl_c().await?;
    sim.stop().await;
    Ok(())
}
