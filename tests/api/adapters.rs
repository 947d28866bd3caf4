//! Adapter harness: the in-process simulator and a [`PlatformContext`] for one simulator
//! account, so adapters can be exercised directly (without the service in between).

use reqwest::Client;
use secrecy::SecretString;
use service_sim::{SimConfig, Simulator, state::SimAccount};
use social_service::{
    config::PlatformsConfig,
    domain::plan::{MediaRef, PublishPlan},
    media::{Accept, MediaFetcher},
    platforms::{AccountCredentials, PlatformContext, PlatformError, Published},
    publish::steps::StepRecorder,
};

pub struct Harness {
    pub sim: Simulator,
    pub http: Client,
    pub media: MediaFetcher,
    pub config: PlatformsConfig,
}

impl Drop for Harness {
    fn drop(&mut self) {
        crate::helpers::assert_no_violations(&self.sim);
    }
}

impl Harness {
    pub async fn start() -> Self {
        let sim = Simulator::start(SimConfig {
            processing_delay: std::time::Duration::from_millis(150),
            ..SimConfig::default()
        })
        .unwrap();
        let media =
            MediaFetcher::new(&[format!("127.0.0.1:{}", sim.port)], 100 * 1024 * 1024).unwrap();
        let mut config = PlatformsConfig::simulator(&sim.base_url);
        config.poll_interval_ms = 50;
        config.processing_timeout_secs = 5;
        Self {
            http: Client::new(),
            media,
            config,
            sim,
        }
    }

    /// The rules of the protocol violations the simulator saw, clearing its log (see
    /// `helpers::assert_no_violations`).
    pub fn take_violation_rules(&self) -> Vec<String> {
        self.sim
            .state()
            .take_violations()
            .into_iter()
            .map(|v| v.rule)
            .collect()
    }

    /// A new account on the simulator.
    pub fn account(&self, platform: &str, name: &str) -> SimAccount {
        self.sim.state().create_account(platform, name, None)
    }

    /// A sample media URL on the simulator's media host, probed as validation would.
    pub async fn media(&self, name: &str) -> MediaRef {
        let accept = Accept {
            images: true,
            videos: true,
            webp: true,
            png: true,
        };
        self.media
            .probe(&format!("{}/media/{name}", self.sim.base_url), accept)
            .await
            .unwrap()
    }

    /// Runs a plan for `account`; returns the outcome and the recorded steps.
    pub async fn publish(
        &self,
        account: &SimAccount,
        plan: &PublishPlan,
    ) -> (Result<Published, PlatformError>, serde_json::Value) {
        let credentials = AccountCredentials {
            external_id: account.external_id.clone(),
            display_name: account.name.as_str().into(),
            access_token: SecretString::from(account.access_token.clone()),
            login_route: Default::default(),
        };
        let steps = StepRecorder::in_memory();
        let ctx = PlatformContext {
            http: &self.http,
            media: &self.media,
            config: &self.config,
            account: &credentials,
            steps: &steps,
        };
        let result = social_service::platforms::publish(&ctx, plan).await;
        // The document as stored, so the tests read what the history keeps.
        (result, serde_json::to_value(steps.snapshot()).unwrap())
    }
}
