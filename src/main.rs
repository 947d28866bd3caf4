//! The `service` command: serve (optionally as a self-contained demo), migrate, run the platform
//! simulator, and operator commands. All the work is in the library.

use std::{path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};
use social_service::{
    Application, BuildOptions,
    config::Config,
    crypto::{self, TokenCipher},
    logging::{self, DemoteClientErrors},
    services::backup,
    services::db_copy,
    services::keys,
    services::operator,
    services::user_access,
    store::Store,
};
use tracing_subscriber::{EnvFilter, layer::SubscriberExt, util::SubscriberInitExt};

/// The package version and the commit it was built from (see `build.rs`).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("GIT_COMMIT"), ")");

#[derive(Parser)]
#[command(name = "service", version = VERSION, about = "Social publishing service")]
struct Cli {
    /// Configuration file (default: ./config.toml if present).
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service.
    Serve {
        /// Self-contained demo: in-process simulator, generated secrets, demo user and accounts.
        #[arg(long)]
        demo: bool,
        /// Where the demo writes what it printed, as JSON.
        #[arg(long, value_name = "PATH", default_value = "data/demo.json")]
        demo_file: PathBuf,
    },
    /// Apply database migrations and exit.
    Migrate {
        #[command(subcommand)]
        command: Option<MigrateCommand>,
    },
    /// Write a consistent copy of the SQLite database to PATH, with the service running; on
    /// PostgreSQL, print how to back it up with `pg_dump`.
    Backup { path: PathBuf },
    /// Whole-database commands.
    Db {
        #[command(subcommand)]
        command: DbCommand,
    },
    /// Run the platform simulator on its own (as the `service-sim` program does): the six
    /// platforms' APIs, a media host, control endpoints and the test identity provider.
    #[cfg(feature = "demo")]
    Sim {
        #[command(flatten)]
        args: service_sim::cli::SimArgs,
    },
    /// Operator commands on users.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Operator commands on API keys.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Check the configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Print freshly generated secrets as environment variables.
    GenSecrets,
    /// Ask the service running on this machine (at `server.bind`) whether it is ready:
    /// exits 0 when `GET /readyz` answers 200, 1 otherwise (a container's HEALTHCHECK).
    Healthcheck,
    /// Re-encrypt every stored platform token with `secrets.token_encryption_key`, reading them
    /// with it or one of `secrets.previous_token_encryption_keys` (key rotation; see docs/api-notes.md).
    RotateTokenKey,
}

#[derive(Subcommand)]
enum DbCommand {
    /// Copy every row of the database at --from (read only, never migrated) into the one at
    /// --to (migrated first, and refused unless empty), in one transaction, ids and values as
    /// they are; then compare each table's row count. Stop the service first, or copy from a
    /// `service backup` file.
    Copy {
        /// The database to copy, e.g. sqlite://data/service.db
        #[arg(long, value_name = "URL")]
        from: String,
        /// The empty database to fill, e.g. postgres://user@host:5432/social
        #[arg(long, value_name = "URL")]
        to: String,
    },
}

#[derive(Subcommand)]
enum MigrateCommand {
    /// List every migration and whether the database has applied it (changes nothing).
    Status,
}

#[derive(Subcommand)]
enum UserCommand {
    /// Set a user's plan (`free`, `pro` or `ultra`).
    SetPlan {
        /// User id (UUID) or e-mail address.
        user: String,
        #[arg(long)]
        plan: String,
        /// `monthly` or `annual` (paid plans).
        #[arg(long)]
        plan_type: Option<String>,
    },
    /// Show users with an e-mail address.
    Show { email: String },
    /// Every user, oldest first: id, e-mail, plan, disabled, operator, created.
    List {
        /// A JSON array (the fields of `user show`) instead of one line per user.
        #[arg(long)]
        json: bool,
    },
    /// Disable every user with this e-mail address: their sessions end, their API keys are
    /// refused (401) from the next request on every instance, and they cannot sign in, until
    /// `user enable`.
    Disable { email: String },
    /// Enable the users with this e-mail address again (their API keys work again).
    Enable { email: String },
    /// The dashboard sessions of the users with an e-mail address.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Grant (`--on`) or withdraw (`--off`) the operator role (the dashboard's operator pages).
    Operator {
        /// User id (UUID) or e-mail address.
        user: String,
        #[arg(long, conflicts_with = "off", required_unless_present = "off")]
        on: bool,
        #[arg(long)]
        off: bool,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Load the configuration as `serve` does and list every problem in it (exit code 1), or
    /// print the effective values as TOML with every secret redacted.
    Check,
}

#[derive(Subcommand)]
enum KeyCommand {
    /// The API keys of the users with an e-mail address (never the key itself).
    List {
        email: String,
        /// A JSON array (the fields of `GET /api/keys`) instead of one line per key.
        #[arg(long)]
        json: bool,
    },
    /// Revoke an API key by its id, as its owner's `DELETE /api/keys/{id}` does; refused on
    /// every running instance from its next request.
    Revoke { id: uuid::Uuid },
}

#[derive(Subcommand)]
enum SessionsCommand {
    /// End every dashboard session of the users with this e-mail address (API keys stay).
    Revoke { email: String },
}

fn main() -> ExitCode {
    use std::io::IsTerminal;
    let cli = Cli::parse();
    if let Command::Config {
        command: ConfigCommand::Check,
    } = cli.command
    {
        return check_config(cli.config.as_deref());
    }
    let config = match Config::load(cli.config.as_deref()) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(logging::DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    // Malformed requests are the client's mistake: actix-http's errors about them become debug.
    if config.logging.format == "json" {
        // One JSON object per line, with the current span (request id) on every event.
        builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .finish()
            .with(DemoteClientErrors)
            .init();
    } else {
        builder
            .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
            .finish()
            .with(DemoteClientErrors)
            .init();
    }
    let system = actix_rt::System::new();
    match system.block_on(run(cli, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli, config: Config) -> Result<(), Box<dyn std::error::Error>> {
    match cli.command {
        #[cfg(feature = "demo")]
        Command::Serve {
            demo: true,
            demo_file,
        } => social_service::demo::run(config, demo_file).await,
        #[cfg(not(feature = "demo"))]
        Command::Serve { demo: true, .. } => Err(
            "this build has no demo: it was built without the `demo` feature (the simulator); \
             rebuild with default features, or serve without --demo"
                .into(),
        ),
        Command::Serve { demo: false, .. } => {
            let app = Application::build(config, BuildOptions::default()).await?;
            social_service::stop_on_signal(&app);
            app.run_until_stopped().await?;
            Ok(())
        }
        Command::RotateTokenKey => rotate_token_key(&config).await,
        Command::Healthcheck => {
            use social_service::startup::healthcheck;
            let address = healthcheck::probe_address(&config)?;
            healthcheck::probe(address).await?;
            println!("ready: http://{address}/readyz answered 200");
            Ok(())
        }
        Command::Migrate { command: None } => {
            let store = Store::connect(&config.database.url, 2, None).await?;
            store.migrate().await?;
            println!("migrations applied");
            Ok(())
        }
        Command::Migrate {
            command: Some(MigrateCommand::Status),
        } => migrate_status(&config).await,
        Command::Backup { path } => backup_database(&config, &path).await,
        Command::Db {
            command: DbCommand::Copy { from, to },
        } => copy_database(&from, &to).await,
        #[cfg(feature = "demo")]
        Command::Sim { args } => service_sim::cli::run(args).await,
        Command::User { command } => {
            let store = Store::connect(&config.database.url, 2, None).await?;
            store.migrate().await?;
            match command {
                UserCommand::SetPlan {
                    user,
                    plan,
                    plan_type,
                } => {
                    let user_id = resolve_user(&store, &user).await?;
                    let change = operator::PlanChange {
                        plan,
                        plan_type,
                        current_period_end: None,
                    };
                    let user = operator::set_user_plan(&store, chrono::Utc::now(), user_id, change)
                        .await?;
                    println!("{}", user_json(&user));
                }
                UserCommand::Operator { user, on, off: _ } => {
                    let user_id = resolve_user(&store, &user).await?;
                    let user =
                        operator::set_operator(&store, chrono::Utc::now(), user_id, on).await?;
                    println!("{} operator={}", user_json(&user), user.is_operator);
                }
                UserCommand::Disable { email } => {
                    let users =
                        user_access::disable_users(&store, chrono::Utc::now(), &email).await?;
                    for user in users {
                        println!("disabled {}", user_json(&user));
                    }
                }
                UserCommand::Enable { email } => {
                    let users =
                        user_access::enable_users(&store, chrono::Utc::now(), &email).await?;
                    for user in users {
                        println!("enabled {}", user_json(&user));
                    }
                }
                UserCommand::Sessions {
                    command: SessionsCommand::Revoke { email },
                } => {
                    let count =
                        user_access::revoke_sessions(&store, chrono::Utc::now(), &email).await?;
                    println!("revoked {count} sessions of the users with e-mail {email}");
                }
                UserCommand::Show { email } => {
                    for user in store.find_users_by_email(&email).await? {
                        println!("{}", user_json(&user));
                    }
                }
                UserCommand::List { json } => {
                    print_users(&user_access::list_users(&store).await?, json)
                }
            }
            Ok(())
        }
        Command::Key { command } => key_command(&config, command).await,
        Command::Config { .. } => {
            Err("`config check` runs before the configuration is loaded".into())
        }
        Command::GenSecrets => {
            println!("SERVICE__SECRETS__SESSION_KEY={}", crypto::random_token(32));
            println!(
                "SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY={}",
                TokenCipher::generate_key()
            );
            println!(
                "SERVICE__SECRETS__OPERATOR_TOKEN={}",
                crypto::random_token(24)
            );
            Ok(())
        }
    }
}

/// `service migrate status`: one line per migration, `NAME applied|pending`.
async fn migrate_status(config: &Config) -> Result<(), Box<dyn std::error::Error>> {
    let store = Store::connect(&config.database.url, 2, None).await?;
    for (name, applied) in store.migration_status().await? {
        println!("{name} {}", if applied { "applied" } else { "pending" });
    }
    Ok(())
}

/// `service rotate-token-key`: re-seals every account token and webhook signing secret with
/// the current key.
async fn rotate_token_key(config: &Config) -> Result<(), Box<dyn std::error::Error>> {
    let secret = |s: &Option<secrecy::SecretString>| {
        s.as_ref()
            .map(|s| secrecy::ExposeSecret::expose_secret(s).to_string())
            .unwrap_or_default()
    };
    let cipher = social_service::crypto::TokenCipher::from_config_value(&secret(
        &config.secrets.token_encryption_key,
    ))
    .and_then(|c| c.with_previous(&secret(&config.secrets.previous_token_encryption_keys)))
    .map_err(|e| format!("secrets.token_encryption_key: {e}"))?;
    let store = Store::connect(&config.database.url, 2, None).await?;
    store.migrate().await?;
    let report = store
        .reseal_tokens(&cipher, social_service::store::ResealScope::Every)
        .await?;
    println!(
        "re-encrypted the tokens of {} accounts with the current key",
        report.resealed
    );
    let (endpoints, unreadable_endpoints) = store.reseal_webhook_secrets(&cipher).await?;
    println!(
        "re-encrypted the signing secrets of {endpoints} webhook endpoints with the current key"
    );
    for id in &unreadable_endpoints {
        eprintln!("webhook endpoint {id}: its secret opens with no configured key");
    }
    if report.unreadable.is_empty() && unreadable_endpoints.is_empty() {
        println!("secrets.previous_token_encryption_keys can now be emptied");
        return Ok(());
    }
    for id in &report.unreadable {
        eprintln!("account {id}: its tokens open with no configured key for its row");
    }
    Err(format!(
        "{} accounts and {} webhook endpoints were left as they are: keep the previous \
         keys if they should open with one of them; otherwise reconnect the accounts and \
         rotate the endpoints' secrets",
        report.unreadable.len(),
        unreadable_endpoints.len()
    )
    .into())
}

/// `service backup PATH`.
async fn backup_database(
    config: &Config,
    path: &std::path::Path,
) -> Result<(), Box<dyn std::error::Error>> {
    match backup::backup(&config.database.url, path).await? {
        backup::BackupOutcome::Written(path) => {
            println!("backed up the database to {}", path.display())
        }
        backup::BackupOutcome::PostgresInstructions(text) => println!("{text}"),
    }
    Ok(())
}

/// `service db copy`: one line per table, then the total.
async fn copy_database(from: &str, to: &str) -> Result<(), Box<dyn std::error::Error>> {
    let tables = db_copy::copy_database(from, to).await?;
    for table in &tables {
        println!("{:<24} {:>10} rows", table.table, table.target);
    }
    let total: u64 = tables.iter().map(|t| t.target).sum();
    println!(
        "copied {total} rows in {} tables; every table's count matches the source",
        tables.len()
    );
    Ok(())
}

async fn resolve_user(store: &Store, user: &str) -> Result<uuid::Uuid, Box<dyn std::error::Error>> {
    if let Ok(id) = uuid::Uuid::parse_str(user) {
        return Ok(id);
    }
    let users = store.find_users_by_email(user).await?;
    match users.as_slice() {
        [one] => Ok(one.id),
        [] => Err(format!("no user with e-mail {user}").into()),
        _ => Err(format!("several users have e-mail {user}; give the user id").into()),
    }
}

/// A user as operators and `/auth/me` see it, as JSON.
fn user_json(user: &entity::user::Model) -> serde_json::Value {
    let user = social_service::http::dto::resources::User::from(user);
    // A struct of strings, numbers and booleans always serializes.
    serde_json::to_value(&user).unwrap_or(serde_json::Value::Null)
}

fn print_users(users: &[entity::user::Model], json: bool) {
    if json {
        let all: Vec<_> = users.iter().map(user_json).collect();
        println!("{}", serde_json::Value::Array(all));
        return;
    }
    for user in users {
        println!(
            "{} {} {} {} {} created={}",
            user.id,
            user.email.as_deref().unwrap_or("-"),
            user.plan.as_str(),
            if user.disabled_at.is_some() {
                "disabled"
            } else {
                "enabled"
            },
            if user.is_operator { "operator" } else { "user" },
            user.created_at.to_rfc3339(),
        );
    }
}

fn print_keys(keys: &[entity::api_key::Model], json: bool) {
    if json {
        let all: Vec<_> = keys.iter().map(key_json).collect();
        println!("{}", serde_json::Value::Array(all));
        return;
    }
    for key in keys {
        println!(
            "{} {:?} {} {} created={} last_used={}",
            key.id,
            key.name,
            key.key_preview,
            if key.is_active { "active" } else { "revoked" },
            key.created_at.to_rfc3339(),
            key.last_used_at
                .map_or("never".to_string(), |at| at.to_rfc3339()),
        );
    }
}

/// A key as its owner's `GET /api/keys` shows it (its preview, never the key or its hash).
fn key_json(key: &entity::api_key::Model) -> serde_json::Value {
    let key = social_service::http::dto::resources::ApiKey::from(key);
    // A struct of strings and booleans always serializes.
    serde_json::to_value(&key).unwrap_or(serde_json::Value::Null)
}

/// `service config check`: every problem on standard error and exit code 1, or the effective
/// configuration, redacted, on standard output.
fn check_config(path: Option<&std::path::Path>) -> ExitCode {
    let (config, mut problems) = Config::load_reporting_every_problem(path);
    if let Some(config) = &config {
        problems.extend(social_service::startup::configuration_problems(config));
    }
    let Some(config) = config.filter(|_| problems.is_empty()) else {
        for problem in &problems {
            eprintln!("error: {problem}");
        }
        eprintln!("{} problems in the configuration", problems.len());
        return ExitCode::FAILURE;
    };
    match social_service::services::config_check::redacted_toml(&config) {
        Ok(toml) => {
            print!("{toml}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// `service key list|revoke`.
async fn key_command(
    config: &Config,
    command: KeyCommand,
) -> Result<(), Box<dyn std::error::Error>> {
    let store = Store::connect(&config.database.url, 2, None).await?;
    store.migrate().await?;
    match command {
        KeyCommand::List { email, json } => {
            print_keys(&keys::list_keys_by_email(&store, &email).await?, json);
        }
        KeyCommand::Revoke { id } => {
            let key = keys::revoke_key(&store, chrono::Utc::now(), id).await?;
            println!("revoked {}", key_json(&key));
        }
    }
    Ok(())
}
