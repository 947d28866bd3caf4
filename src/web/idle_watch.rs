//! Closes connections that sit between requests longer than a client may: the gap actix-http's
//! own timers leave open.
//!
//! actix-http times the head of a connection's *first* request only, and it stops the
//! keep-alive timer as soon as any byte of the next request arrives. So a client that completes
//! one request and then sends a few bytes of the next head — and nothing more — holds the
//! connection for as long as it likes. This watch closes it instead:
//! - every connection is registered when it is accepted ([`IdleWatch::on_connect`]);
//! - [`watch_requests`] (a middleware, outermost) marks when a request starts (its head has been
//!   parsed) and when its response body is done (sent or dropped);
//! - a sweep every second shuts down a connection with no request in progress whose last one
//!   ended (or which opened) more than `keep_alive + request_head` ago: a client may idle for the
//!   keep-alive time and then has the head deadline to send a whole head.
//!
//! A request in progress is never cut here: its body has its own deadline (`body_deadline`) and
//! the handler its own time limits.

use std::{
    any::Any,
    net::Shutdown,
    os::fd::AsFd,
    pin::Pin,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::{Duration, Instant},
};

use actix_web::{
    body::{BodySize, BoxBody, MessageBody},
    dev::{Extensions, ServiceRequest, ServiceResponse},
    middleware::Next,
    web::Bytes,
};

/// How often idle connections are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// One accepted connection, as the watch sees it.
pub struct Connection {
    /// A duplicate of the connection's socket, used only to shut it down.
    socket: std::net::TcpStream,
    /// Requests started and not yet answered in full.
    in_progress: AtomicUsize,
    /// Milliseconds after `IdleWatch::epoch` when the last request ended (or the connection
    /// opened).
    idle_since_ms: AtomicU64,
    epoch: Instant,
}

impl Connection {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn started(&self) {
        self.in_progress.fetch_add(1, Ordering::SeqCst);
    }

    fn ended(&self) {
        self.idle_since_ms.store(self.now_ms(), Ordering::SeqCst);
        self.in_progress.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether the connection has sat with nothing in progress for longer than `limit`.
    fn idle_longer_than(&self, limit: Duration) -> bool {
        self.in_progress.load(Ordering::SeqCst) == 0
            && self
                .now_ms()
                .saturating_sub(self.idle_since_ms.load(Ordering::SeqCst))
                > limit.as_millis() as u64
    }
}

/// The connections of one server, and how long one may sit between requests.
pub struct IdleWatch {
    connections: Mutex<Vec<Weak<Connection>>>,
    limit: Duration,
    epoch: Instant,
}

impl IdleWatch {
    /// A watch closing connections idle for longer than `limit`.
    pub fn new(limit: Duration) -> Arc<Self> {
        Arc::new(Self {
            connections: Mutex::new(Vec::new()),
            limit,
            epoch: Instant::now(),
        })
    }

    /// For `HttpServer::on_connect`: registers a plain TCP connection. The connection's
    /// extensions own it, so it is dropped (and forgotten) when the connection ends.
    pub fn on_connect(&self, io: &dyn Any, extensions: &mut Extensions) {
        let Some(stream) = io.downcast_ref::<actix_web::rt::net::TcpStream>() else {
            return;
        };
        let Ok(fd) = stream.as_fd().try_clone_to_owned() else {
            // Out of descriptors: this connection goes unwatched, left to actix-http's own timers.
            return;
        };
        let connection = Arc::new(Connection {
            socket: std::net::TcpStream::from(fd),
            in_progress: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(self.epoch.elapsed().as_millis() as u64),
            epoch: self.epoch,
        });
        self.connections
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::downgrade(&connection));
        extensions.insert(connection);
    }

    /// One sweep: shuts down idle connections and forgets ended ones. Returns how many were
    /// shut down.
    pub fn sweep(&self) -> usize {
        let mut shut = 0;
        self.connections
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|weak| {
                let Some(connection) = weak.upgrade() else {
                    return false;
                };
                if connection.idle_longer_than(self.limit) {
                    // The dispatcher sees the end of its stream and drops the connection.
                    let _ = connection.socket.shutdown(Shutdown::Both);
                    shut += 1;
                    return false;
                }
                true
            });
        if shut > 0 {
            tracing::debug!(
                target: "social_service::client_errors",
                connections = shut,
                "closed connections idle between requests past keep-alive and the head deadline"
            );
        }
        shut
    }

    /// Sweeps every second for as long as the watch is alive.
    pub fn spawn_sweeper(self: &Arc<Self>) {
        let watch = Arc::downgrade(self);
        actix_web::rt::spawn(async move {
            let mut every = tokio::time::interval(SWEEP_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                match watch.upgrade() {
                    Some(watch) => {
                        watch.sweep();
                    }
                    None => return,
                }
            }
        });
    }
}

/// Middleware (outermost): marks the request in progress on its connection until its response
/// body is done.
pub async fn watch_requests(
    req: ServiceRequest,
    next: Next<BoxBody>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(connection) = req.conn_data::<Arc<Connection>>().cloned() else {
        return next.call(req).await;
    };
    connection.started();
    let guard = InProgress(Some(connection));
    let response = next.call(req).await?;
    Ok(response.map_body(|_, body| {
        BoxBody::new(Watched {
            body,
            _guard: guard,
        })
    }))
}

/// Ends the request on its connection when dropped (the body is sent, or abandoned).
struct InProgress(Option<Arc<Connection>>);

impl Drop for InProgress {
    fn drop(&mut self) {
        if let Some(connection) = self.0.take() {
            connection.ended();
        }
    }
}

/// A response body that keeps its request in progress until it is dropped.
struct Watched {
    body: BoxBody,
    _guard: InProgress,
}

impl MessageBody for Watched {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.body).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn connection(epoch: Instant) -> (Arc<Connection>, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let connection = Arc::new(Connection {
            socket: server,
            in_progress: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(epoch.elapsed().as_millis() as u64),
            epoch,
        });
        (connection, client)
    }

    #[test]
    fn only_connections_idle_past_the_limit_with_nothing_in_progress_are_shut() {
        let watch = IdleWatch::new(Duration::from_millis(50));
        let (idle, mut idle_client) = connection(watch.epoch);
        let (busy, _busy_client) = connection(watch.epoch);
        busy.started();
        {
            let mut connections = watch.connections.lock().unwrap();
            connections.push(Arc::downgrade(&idle));
            connections.push(Arc::downgrade(&busy));
        }
        std::thread::sleep(Duration::from_millis(80));
        let (fresh, _fresh_client) = connection(watch.epoch);
        watch
            .connections
            .lock()
            .unwrap()
            .push(Arc::downgrade(&fresh));
        assert_eq!(watch.sweep(), 1, "only the idle one");
        // Its client sees the end of the stream.
        use std::io::Read;
        let mut buffer = [0u8; 8];
        assert_eq!(idle_client.read(&mut buffer).unwrap(), 0);
        // The busy one ends its request: idle from now, not from before.
        busy.ended();
        assert_eq!(watch.sweep(), 0);
        // Dropped connections are forgotten.
        drop(fresh);
        watch.sweep();
        assert_eq!(watch.connections.lock().unwrap().len(), 1);
    }
}
