//! Database migrations. Each migration declares its own identifiers (`DeriveIden` enums) and never
//! imports the `entity` crate, so an old migration does not change when a model does.
//! Run them with `service migrate` (the service also runs them on start).

pub use sea_orm_migration::prelude::*;

mod m20261122_000001_foundation;
mod m20261122_000002_scheduled_posts;
mod m20261123_000003_snapshots;
mod m20261123_000004_oauth;
mod m20261124_000005_unconfirmed_checks;
mod m20261124_000006_login_route;
mod m20261124_000007_nullable_post_views;
mod m20261124_000008_operator_role;
mod m20261125_000009_partial_check_index;
mod m20261128_000020_user_email_verified;
mod m20261128_000021_used_form_tokens;
mod m20261128_000060_user_disabled;
mod m20261129_000070_idempotency_keys;
mod m20261129_000080_webhooks;
mod m20261129_000090_media;
mod m20261129_000100_cluster;
mod m20261129_000110_submission_publisher;

/// The ordered list of migrations.
pub struct Migrator;

#[sea_orm_migration::async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000001_foundation::Migration),
            Box::new(m20261122_000002_scheduled_posts::Migration),
            Box::new(m20261123_000003_snapshots::Migration),
            Box::new(m20261123_000004_oauth::Migration),
            Box::new(m20261124_000005_unconfirmed_checks::Migration),
            Box::new(m20261124_000006_login_route::Migration),
            Box::new(m20261124_000007_nullable_post_views::Migration),
            Box::new(m20261124_000008_operator_role::Migration),
            Box::new(m20261125_000009_partial_check_index::Migration),
            Box::new(m20261128_000020_user_email_verified::Migration),
            Box::new(m20261128_000021_used_form_tokens::Migration),
            Box::new(m20261128_000060_user_disabled::Migration),
            Box::new(m20261129_000070_idempotency_keys::Migration),
            Box::new(m20261129_000080_webhooks::Migration),
            Box::new(m20261129_000090_media::Migration),
            Box::new(m20261129_000100_cluster::Migration),
            Box::new(m20261129_000110_submission_publisher::Migration),
        ]
    }
}
