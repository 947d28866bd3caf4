//! Futures that hold database connections must be dropped inside a tokio runtime: sqlx returns
//! a pooled connection by spawning a task when it is dropped, and panics without a runtime. An
//! actix arbiter drops the futures still pending on it when it shuts down, *after* leaving the
//! runtime — so a query in flight at shutdown would panic there (and a second such panic aborts
//! the process). [`in_runtime`] wraps a future so that, whenever it is dropped, it is dropped
//! with the runtime it was created in entered.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

/// A future dropped inside the tokio runtime that was current when it was created.
pub struct InRuntime<F> {
    inner: Option<Pin<Box<F>>>,
    handle: Option<tokio::runtime::Handle>,
}

/// Wraps `future` (see the module docs).
pub fn in_runtime<F: Future>(future: F) -> InRuntime<F> {
    InRuntime {
        inner: Some(Box::pin(future)),
        handle: tokio::runtime::Handle::try_current().ok(),
    }
}

impl<F: Future> Future for InRuntime<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.inner.as_mut() {
            Some(inner) => inner.as_mut().poll(cx),
            // Only after completion, which callers never poll past.
            None => Poll::Pending,
        }
    }
}

impl<F> Drop for InRuntime<F> {
    fn drop(&mut self) {
        let _entered = self.handle.as_ref().map(|h| h.enter());
        self.inner.take();
    }
}
