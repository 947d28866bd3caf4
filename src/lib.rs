//! A self-hostable social publishing service.
//!
//! The modules stand on floors; a module imports only from its own floor or below
//! (`tests/layers.rs` checks it, `ARCHITECTURE.md` draws it):
//! - composition: [`startup`] ([`Application::build`], the worker's app, shutdown) and [`demo`];
//! - front ends: [`http`] (the JSON API, its contract and OpenAPI document) and [`dashboard`]
//!   (the HTML pages), which never import each other; the CLI is `main.rs`;
//! - [`web`]: what both front ends stand on (the HTTP state, authentication, middlewares, the
//!   page frame, strings and assets); [`background`]: the actors that work on their own
//!   (scheduler, reconciler, token keeper, collector, sweeper);
//! - [`services`]: the use cases, each holding only what it uses, never the HTTP state;
//! - [`actors`]: the supervisor and the account actors; [`publish`]: validation into a plan and
//!   the publish job an account actor runs;
//! - [`platforms`], [`insights`], [`oauth`], [`oidc`], [`media`]: the outside world's
//!   protocols (adapters know no store: steps go out through [`platforms::StepSink`]);
//! - [`store`]: every SQL query, and the caches and write-behind in front of them;
//! - ground: [`domain`] (the plan, a day's metrics, token verdicts, the time format, text
//!   checks), [`error`] (the one catalogue, spec §7), [`config`], [`clock`], [`crypto`],
//!   [`tokens`], [`usage`] (plans and periods), [`metrics`], [`logging`].

/// mimalloc for every binary that links the service (the service, its tests and benches, so
/// they measure what runs). On the publish path glibc's `malloc` family took about a sixth of
/// the service's CPU, much of it in its slow paths (`malloc_consolidate`, and arena locks
/// contended when one thread frees what another allocated); with mimalloc the service spent
/// 5–15 % less CPU per publish (figures in `docs/benchmarks.md`). Cargo.toml
/// builds its 2.x line without transparent huge pages: with them, the idle service's RSS nearly
/// tripled.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod actors;
pub mod background;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod crypto;
pub mod dashboard;
/// `serve --demo`: needs the simulator, so only in builds with the `demo` feature (default).
#[cfg(feature = "demo")]
pub mod demo;
pub mod domain;
pub mod error;
pub mod http;
pub mod insights;
pub mod logging;
pub mod media;
pub mod metrics;
pub mod oauth;
pub mod oidc;
pub mod platforms;
pub mod publish;
pub mod services;
pub mod startup;
pub mod store;
pub mod tokens;
pub mod usage;
pub mod web;
pub mod webhook_sender;

pub use startup::{Application, BuildOptions, StartupError, shutdown::stop_on_signal};
pub use web::state::AppState;
