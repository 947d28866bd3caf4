//! Black-box tests: the real service on port 0, the simulator (identity provider) on port 0, a
//! fresh database per test (SQLite always; PostgreSQL when `TEST_DATABASE_URL` is set).

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod adapters;
mod helpers;
mod insights;

mod accounts;
mod adapters_meta;
mod adapters_scopes_metrics;
mod adapters_tiktok_youtube;
mod adapters_x;
mod auth;
mod authcache;
mod backup;
mod cluster;
mod cluster_state;
mod collection;
mod config;
// `service config check`.
mod config_check;
mod connect;
mod crash;
mod cross_site;
mod cut_off;
mod dashboard;
// Compose and Scheduled pages.
mod dashboard_compose;
mod dashboard_history;
// Operator pages.
mod dashboard_operator;
// The Webhooks page and delivery log.
mod dashboard_webhooks;
// `service db copy`: SQLite into PostgreSQL.
mod db_copy;
mod demo;
mod errors;
// Every endpoint's body, pinned.
mod golden;
mod history;
mod hostile;
// Sweeps of dead rows, the migration lock, the sign-in limit, user commands.
mod housekeeping;
// `Idempotency-Key` on `POST /v2/posts`.
mod idempotency;
mod ids;
// Sign-in against the simulator's provider: JWKS, key rotation, verified e-mail.
mod identity_provider;
mod instagram_login;
mod keys;
// Cached `GET /api/scheduled-posts` answers.
mod listcache;
mod media;
mod meta_unknown_views;
// Sign-in against a certified provider, when `.ci/oidc` runs one.
mod oidc_provider;
mod openapi;
// `service user list`, `service key list|revoke`.
mod operator_keys;
mod operator_signin;
mod ops;
// The dashboard page tests' shared checks.
mod pages;
mod performance;
// `GET /v2/posts/{id}` and `GET /v2/posts`.
mod post_resource;
mod publish;
mod read_check;
mod scheduled;
// The per-address limit on anonymous sign-in.
mod signin_limit;
mod sim_google_x_spec;
mod sim_meta_spec;
mod slow_clients;
mod token_binding;
mod unconfirmed;
mod uploads;
mod usage;
// `service user disable|enable|sessions revoke`.
mod user_access;
// Webhooks: what is delivered and how, with a recording receiver; the endpoints' routes.
mod webhook_delivery;
mod webhook_events;
mod webhook_receiver;
// Every delivery checked by the PyPI package `standardwebhooks`, when `.ci/webhooks` installs it.
mod webhook_verifier;
mod webhooks;
mod writes;
