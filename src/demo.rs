//! `service serve --demo`: the service plus an in-process simulator, generated secrets, a demo
//! user on the `ultra` plan with connected demo accounts on all six platforms, and a fresh API key
//! — printed once and written as JSON (default `data/demo.json`) for scripts.
//!
//! Secrets generated here are kept in `demo-secrets.json` next to the demo file, so a second run
//! against the same database can still decrypt the stored demo tokens.

use std::path::{Path, PathBuf};

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{
    AppState, Application, BuildOptions, StartupError,
    config::{Config, PlatformsConfig},
    crypto::{self, TokenCipher},
    domain::plan::Platform,
    services::operator,
    services::operator::ManualAccount,
    services::operator::PlanChange,
};
use service_sim::{SimConfig, Simulator, state::SimAccount};

/// The demo user's e-mail; `login_url` signs in as this user.
pub const DEMO_EMAIL: &str = "demo@example.com";
/// The identity provider's issuer in demo mode: fixed (not port-based) so the demo user is the
/// same user on every run.
const DEMO_ISSUER: &str = "http://simulator.demo/oidc";
const DEMO_CLIENT_ID: &str = "demo-dashboard";
/// How long ago the demo's accounts count as connected.
const DEMO_HISTORY_DAYS: i64 = 7;

#[derive(Serialize, Deserialize)]
struct DemoSecrets {
    session_key: String,
    token_encryption_key: String,
    operator_token: String,
    idp_client_secret: String,
}

fn load_or_generate_secrets(path: &Path) -> std::io::Result<(DemoSecrets, bool)> {
    if let Ok(text) = std::fs::read_to_string(path)
        && let Ok(secrets) = serde_json::from_str::<DemoSecrets>(&text)
    {
        return Ok((secrets, false));
    }
    let secrets = DemoSecrets {
        session_key: crypto::random_token(32),
        token_encryption_key: TokenCipher::generate_key(),
        operator_token: crypto::random_token(24),
        idp_client_secret: crypto::random_token(24),
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(&secrets)?)?;
    Ok((secrets, true))
}

/// Runs the demo until interrupted.
pub async fn run(mut config: Config, demo_file: PathBuf) -> Result<(), Box<dyn std::error::Error>> {
    let data_dir = demo_file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let secrets = fill_secrets(&mut config, &data_dir.join("demo-secrets.json"))?;
    let simulator = Simulator::start(SimConfig {
        bind: "127.0.0.1:0".into(),
        idp_clients: vec![(DEMO_CLIENT_ID.into(), secrets.idp_client_secret.clone())],
        idp_issuer: Some(DEMO_ISSUER.into()),
        ..SimConfig::default()
    })?;
    point_at_simulator(&mut config, &simulator, &secrets.idp_client_secret);

    let operator_token = secret_text(&config.secrets.operator_token);
    // The actors that call platforms wait until the simulator knows the demo's accounts.
    let app = Application::build(
        config,
        BuildOptions {
            defer_background: true,
            ..BuildOptions::default()
        },
    )
    .await?;
    let state = app.state();
    let now = state.clock.now();
    let (user_id, accounts) = seed_demo_user(&state, now).await?;
    introduce_accounts(&simulator, &state, &accounts, now)?;
    app.start_background();
    let key = crypto::generate_api_key();
    state
        .store
        .insert_api_key(user_id, "demo", &key, now)
        .await?;
    announce(&Ready {
        base_url: &state.public_url,
        api_key: &key.full,
        operator_token: &operator_token,
        simulator: &simulator,
        accounts: &accounts,
        demo_file: &demo_file,
    })?;

    crate::stop_on_signal(&app);
    app.run_until_stopped().await?;
    simulator.stop().await;
    Ok(())
}

/// Fills the secrets the configuration leaves unset from the demo's secrets file (made on the
/// first run), saying which; returns the file's secrets.
fn fill_secrets(config: &mut Config, secrets_path: &Path) -> std::io::Result<DemoSecrets> {
    let (secrets, generated) = load_or_generate_secrets(secrets_path)?;
    let mut filled = vec![];
    let mut fill = |slot: &mut Option<SecretString>, name: &str, value: &str| {
        if slot.is_none() {
            *slot = Some(SecretString::from(value.to_string()));
            filled.push(name.to_string());
        }
    };
    fill(
        &mut config.secrets.session_key,
        "session_key",
        &secrets.session_key,
    );
    fill(
        &mut config.secrets.token_encryption_key,
        "token_encryption_key",
        &secrets.token_encryption_key,
    );
    fill(
        &mut config.secrets.operator_token,
        "operator_token",
        &secrets.operator_token,
    );
    if !filled.is_empty() {
        let how = if generated { "generated" } else { "reused" };
        tracing::warn!(
            secrets = %filled.join(", "),
            file = %secrets_path.display(),
            "demo mode: {how} secrets that the configuration does not set"
        );
    }
    Ok(secrets)
}

/// Points sign-in, every platform API and the OAuth apps at the simulator.
fn point_at_simulator(config: &mut Config, simulator: &Simulator, idp_client_secret: &str) {
    config.auth.issuer = DEMO_ISSUER.into();
    config.auth.authorization_endpoint = format!("{}/oidc/authorize", simulator.base_url);
    config.auth.token_endpoint = format!("{}/oidc/token", simulator.base_url);
    config.auth.jwks_uri = format!("{}/oidc/jwks", simulator.base_url);
    config.auth.client_id = DEMO_CLIENT_ID.into();
    config.auth.client_secret = Some(SecretString::from(idp_client_secret.to_string()));
    // The demo user is an operator too, so the demo shows the operator pages.
    if !config
        .auth
        .operator_emails
        .iter()
        .any(|e| e.eq_ignore_ascii_case(DEMO_EMAIL))
    {
        config.auth.operator_emails.push(DEMO_EMAIL.into());
    }
    // Every platform API is the simulator; its media host is the one private address media URLs
    // may use.
    let processing_timeout = config.platforms.processing_timeout_secs;
    config.platforms = PlatformsConfig::simulator(&simulator.base_url);
    config.platforms.processing_timeout_secs = processing_timeout;
    // Connecting more accounts (`/api/connect/{platform}`) goes through the simulator's OAuth.
    config.oauth = crate::config::OAuthConfig::simulator(
        &simulator.base_url,
        DEMO_CLIENT_ID,
        idp_client_secret,
    );
    config
        .publishing
        .media_allow_hosts
        .push(format!("127.0.0.1:{}", simulator.port));
    // Webhook endpoints on the simulator are deliverable (plain http on loopback).
    config
        .webhooks
        .allow_hosts
        .push(format!("127.0.0.1:{}", simulator.port));
}

/// Signs the demo user in, puts them on the `ultra` plan, and connects one demo account per
/// platform unless they have accounts already; returns the user's id and connected accounts.
async fn seed_demo_user(
    state: &AppState,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(uuid::Uuid, Vec<entity::account::Model>), Box<dyn std::error::Error>> {
    let user = state
        .store
        .record_sign_in(
            &crate::oidc::Identity {
                issuer: DEMO_ISSUER.into(),
                subject: service_sim::idp::subject_for_email(DEMO_EMAIL),
                email: Some(DEMO_EMAIL.into()),
                // The simulator's provider vouches for every address unless told otherwise.
                email_verified: true,
                name: Some("Demo User".into()),
            },
            now,
        )
        .await
        .map_err(StartupError::from)?;
    let change = PlanChange {
        plan: "ultra".into(),
        plan_type: Some("monthly".into()),
        current_period_end: None,
    };
    operator::set_user_plan(&state.store, now, user.id, change).await?;
    let mut accounts = state.store.list_connected_accounts(user.id).await?;
    if accounts.is_empty() {
        // Recorded as connected a week ago, so the days before yesterday are due and missing:
        // the Performance page has gaps to show and a backfill to offer from the first run.
        let connected = now - chrono::Duration::days(DEMO_HISTORY_DAYS);
        for platform in Platform::ALL {
            let manual = demo_account(user.id, platform.as_str(), now);
            accounts
                .push(operator::add_account(&state.store, &state.cipher, connected, manual).await?);
        }
    }
    Ok((user.id, accounts))
}

/// The simulator keeps nothing between runs: introduces the stored accounts to it.
fn introduce_accounts(
    simulator: &Simulator,
    state: &AppState,
    accounts: &[entity::account::Model],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), Box<dyn std::error::Error>> {
    for account in accounts {
        let token = crate::tokens::open_access(&state.cipher, account)?;
        simulator.state().register_account(SimAccount {
            platform: account.platform.as_str().to_string(),
            external_id: account.external_id.clone(),
            name: account.display_name.clone(),
            username: account
                .username
                .clone()
                .unwrap_or_else(|| account.display_name.clone()),
            access_token: token.clone(),
            refresh_token: String::new(),
            expires_in: 0,
        });
        // Instagram Login tokens are good only on the simulator's graph.instagram.com.
        if account.login_route == entity::account::LoginRoute::InstagramLogin {
            service_sim::instagram_login::adopt_token(
                simulator.state(),
                DEMO_CLIENT_ID,
                &token,
                account.token_issued_at.unwrap_or(now),
            );
        }
    }
    Ok(())
}

/// What the demo tells whoever started it once it is ready.
struct Ready<'a> {
    base_url: &'a str,
    api_key: &'a str,
    operator_token: &'a str,
    simulator: &'a Simulator,
    accounts: &'a [entity::account::Model],
    demo_file: &'a Path,
}

/// Writes the demo file (for scripts) and prints how to use the demo.
fn announce(ready: &Ready<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let Ready {
        base_url,
        api_key,
        operator_token,
        simulator,
        accounts,
        demo_file,
    } = *ready;
    let login_url = format!("{base_url}/auth/login?login_hint={DEMO_EMAIL}");
    let summary = json!({
        "base_url": base_url,
        "api_key": api_key,
        "operator_token": operator_token,
        "login_url": login_url,
        "connect_url": format!("{base_url}/api/connect/threads?login_hint=Demo%20Friend"),
        "simulator_url": simulator.base_url,
        "sample_media": simulator.sample_media(),
        "accounts": accounts.iter().map(|a| json!({
            "account_id": a.id, "platform": a.platform, "name": a.display_name,
            // The platform's own id: the simulator's fault and read-back endpoints take it.
            "external_id": a.external_id,
        })).collect::<Vec<_>>(),
    });
    std::fs::write(demo_file, serde_json::to_string_pretty(&summary)?)?;
    let facebook = accounts
        .iter()
        .find(|a| a.platform == Platform::Facebook)
        .map(|a| a.id.to_string())
        .unwrap_or_default();
    let publish_body = json!({"post": {
        "accountId": facebook,
        "content": {
            "text": "Hello from the demo!",
            "mediaUrls": [format!("{}/media/sample.jpg", simulator.base_url)],
            "platform": "facebook",
        },
        "target": {"targetType": "facebook"},
    }});
    println!(
        "\n=== demo ready ===\n\
         service:        {base_url}\n\
         simulator:      {sim}   (published posts: {sim}/_sim/published)\n\
         API key:        {api_key}   (shown once; also in {file})\n\
         operator token: {operator_token}\n\
         operator page:  {base_url}/dashboard/operator (the demo user is an operator; sign in first)\n\
         dashboard:      open {login_url}\n\
         connect more:   then open {base_url}/api/connect/threads?login_hint=Demo%20Friend (or facebook, instagram, tiktok, youtube, x)\n\
         accounts:       {n} demo accounts (user {DEMO_EMAIL}, plan ultra)\n\n\
         publish a photo to the demo facebook page:\n  \
         curl -s -X POST {base_url}/v2/posts -H 'service-api-key: {api_key}' \\\n    \
         -H 'Content-Type: application/json' -d '{publish_body}'\n\n\
         list the accounts (every platform):\n  \
         curl -s -H 'service-api-key: {api_key}' {base_url}/v2/accounts\n",
        sim = simulator.base_url,
        file = demo_file.display(),
        n = accounts.len(),
    );
    Ok(())
}

fn secret_text(secret: &Option<SecretString>) -> String {
    use secrecy::ExposeSecret;
    secret
        .as_ref()
        .map(|s| s.expose_secret().to_string())
        .unwrap_or_default()
}

fn demo_account(
    user_id: uuid::Uuid,
    platform: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> ManualAccount {
    let (name, username, account_type) = match platform {
        "facebook" => ("Demo Page", None, None),
        "instagram" => ("demo.insta", Some("demo.insta"), Some("BUSINESS")),
        "threads" => ("demo.threads", Some("demo.threads"), None),
        "tiktok" => ("demo.tiktok", Some("demo.tiktok"), None),
        "youtube" => ("Demo Channel", None, None),
        _ => ("demo_x", Some("demo_x"), None),
    };
    let expires = match platform {
        "facebook" => None,
        _ => Some(now + chrono::Duration::days(60)),
    };
    ManualAccount {
        user_id,
        platform: platform.to_string(),
        external_id: format!(
            "{}",
            17_841_400_000_000_000u64 + u64::from(rand::random::<u32>())
        ),
        name: name.to_string(),
        username: username.map(str::to_string),
        account_type: account_type.map(str::to_string),
        profile_picture_url: None,
        access_token: format!("demo-{platform}-{}", crypto::random_token(16)),
        refresh_token: None,
        token_expires_at: expires,
        data_access_expires_at: (platform == "facebook").then(|| now + chrono::Duration::days(90)),
    }
}
