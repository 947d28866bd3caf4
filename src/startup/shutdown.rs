//! Graceful shutdown: on SIGTERM or Ctrl-C the scheduler is drained (bounded by
//! `scheduler.shutdown_grace_secs`), then the HTTP server stops gracefully.

use std::time::Duration;

use super::Application;
use crate::{AppState, background::scheduler::Drain};

/// Graceful shutdown, first half: the scheduler stops claiming posts, and in-flight scheduled
/// publishes get up to `scheduler.shutdown_grace_secs` to finish. Posts not yet claimed stay
/// `scheduled`; one still running when the grace ends is settled by the next start from its
/// recorded steps. Without a running scheduler there is nothing to wait for.
pub async fn drain(state: &AppState) {
    let Some(scheduler) = state.background.scheduler() else {
        return;
    };
    let deadline = tokio::time::Instant::now()
        + Duration::from_secs(state.config.scheduler.shutdown_grace_secs);
    loop {
        match scheduler.send(Drain).await {
            Ok(0) | Err(_) => return,
            Ok(in_flight) if tokio::time::Instant::now() >= deadline => {
                tracing::warn!(
                    in_flight,
                    "shutdown: grace period over with publishes in flight"
                );
                return;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// On SIGTERM or Ctrl-C: drain the scheduler (bounded), then stop the HTTP server gracefully.
pub fn stop_on_signal(app: &Application) {
    let handle = app.handle();
    let state = app.state();
    actix_rt::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutting down");
        drain(&state).await;
        handle.stop(true).await;
    });
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
