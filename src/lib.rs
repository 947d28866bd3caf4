//! A self-hostable social publishing service.
//!
//! Layout (see the README for the whole picture):
//! - [`config`]: layered configuration; [`error`]: the one error catalogue (spec §7).
//! - [`http`]: routes, the three authentication modes, thin handlers; [`views`]: response shapes.
//! - [`store`]: every SQL query (SeaORM over the `entity` and `migration` crates).
//! - [`usage`]: plans and usage-period arithmetic (pure); [`crypto`]: keys, sessions, encryption.
//! - [`oidc`]: dashboard sign-in client; [`operator`]: operator actions (CLI and `/admin`);
//!   [`user_access`]: disabling users and ending their sessions (CLI).
//! - [`actors`]: long-lived actors; [`demo`]: `serve --demo` (with the `service-sim` crate).
//! - Services, each holding only what it uses: [`publish::service::PublishingService`],
//!   [`actors::scheduler::SchedulingService`], [`collection::CollectionService`],
//!   [`oauth::ConnectionService`], [`publish::reconcile::ReconcileService`]. The actors get
//!   these, never the HTTP state; [`background`] runs them.
//! - [`state`]: what handlers share; [`http::middleware`]: the middleware stack; request
//!   tracing is [`http::trace`]; [`shutdown`]: draining on a signal.
//! - [`media`]: fetching media URLs (SSRF guard, streaming); [`platforms`]: the adapters, which
//!   report their steps through [`platforms::StepSink`] and know no store.
//!
//! [`Application::build`] assembles everything, in this order: the store and clients, the
//! services, the background actors (their mailboxes first, so the services can hold their
//! addresses), then the HTTP state. `main`, the tests and the benchmarks all use it.

/// mimalloc for every binary that links the service (the service, its tests and benches, so
/// they measure what runs). On the publish path glibc's `malloc` family took about a sixth of
/// the service's CPU, much of it in its slow paths (`malloc_consolidate`, and arena locks
/// contended when one thread frees what another allocated); with mimalloc the service spent
/// 5–15 % less CPU per publish (`docs/benchmark-journal.md`, "Fifteenth session"). Cargo.toml
/// builds its 2.x line without transparent huge pages: with them, the idle service's RSS nearly
/// tripled.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod actors;
pub mod background;
pub mod clock;
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

pub use startup::{Application, BuildOptions, StartupError, shutdown::stop_on_signal};
pub use web::state::AppState;
