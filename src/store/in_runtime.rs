//! Futures that hold database connections must be dropped inside a tokio runtime: sqlx returns
//! a pooled connection by spawning a task when it is dropped, and panics without a runtime. An
//! actix arbiter drops the futures still pending on it when it shuts down, *after* leaving the
//! runtime — so a query in flight at shutdown would panic there (and a second such panic aborts
//! the process). Worse, when the arbiter's runtime is shutting down, the task sqlx spawns to
//! give the connection back never runs, so the pool waits for it forever. [`in_runtime`] wraps a
//! future so that, whenever it is dropped unfinished, it is dropped inside a small runtime that
//! lives as long as the process: the connection goes back to its pool (or is closed) for sure.

use std::{
    future::Future,
    pin::Pin,
    sync::OnceLock,
    task::{Context, Poll},
};

/// One worker thread that runs the clean-up tasks of dropped futures.
fn cleanup_runtime() -> Option<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("drop-cleanup")
                .enable_all()
                .build()
                .ok()
        })
        .as_ref()
}

/// A future that, dropped unfinished, is dropped inside the clean-up runtime.
pub struct InRuntime<F> {
    inner: Option<Pin<Box<F>>>,
}

/// Wraps `future` (see the module docs).
pub fn in_runtime<F: Future>(future: F) -> InRuntime<F> {
    InRuntime {
        inner: Some(Box::pin(future)),
    }
}

impl<F: Future> Future for InRuntime<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.inner.as_mut() {
            Some(inner) => {
                let poll = inner.as_mut().poll(cx);
                if poll.is_ready() {
                    // Finished: drop it here, in its own runtime.
                    self.inner = None;
                }
                poll
            }
            // Only after completion, which callers never poll past.
            None => Poll::Pending,
        }
    }
}

impl<F> Drop for InRuntime<F> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let _entered = cleanup_runtime().map(|rt| rt.enter());
            drop(inner);
        }
    }
}
