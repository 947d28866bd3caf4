//! Invalidations every running instance has applied before the write is answered.
//!
//! A write that changes cached rows (a key deleted, a plan changed, a user disabled, an account
//! disconnected) notifies the other instances in its transaction. Delivery is asynchronous, so
//! on its own a request sent to another instance right after the write's answer could still be
//! served from that instance's cache. Here the notification carries this instance's id and a
//! sequence number; each listener that applied it acknowledges it on the same channel; the
//! writer waits, before answering, until every live member (renewed within three fifths of
//! `cluster.takeover_secs`) has. A member whose listener is not connected serves nothing from its cache meanwhile (see
//! `AccessCache::listening`), so it needs no acknowledgement to be right.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use sea_orm::{ConnectionTrait, DbBackend, DbErr, Statement, Value};

use super::{
    Store,
    access::{AccessCache, Invalidation},
};

/// How long a write waits for the other instances' acknowledgements. One that has not
/// answered by then is stuck or cut off; the write is answered anyway and the lag logged.
const ACK_WAIT: Duration = Duration::from_secs(2);

/// This instance's side of the acknowledgements.
#[derive(Debug, Default)]
pub struct Peers {
    /// This instance's id and how long a dead instance has been silent, in milliseconds, once
    /// the cluster knows them.
    identity: OnceLock<(String, i64)>,
    next: AtomicU64,
    /// Sequence number → the instances that acknowledged it so far.
    acks: Mutex<HashMap<u64, HashSet<String>>>,
    arrived: tokio::sync::Notify,
}

/// A notification's payload: an invalidation, with the sender and sequence number when the
/// sender waits for acknowledgements; or an acknowledgement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Invalidate {
        what: Invalidation,
        /// `(sender, sequence)` when acknowledgements are awaited.
        from: Option<(String, u64)>,
    },
    Ack {
        to: String,
        seq: u64,
        by: String,
    },
}

impl Message {
    pub fn payload(&self) -> String {
        match self {
            Self::Invalidate { what, from: None } => what.payload(),
            Self::Invalidate {
                what,
                from: Some((sender, seq)),
            } => format!("{} {sender} {seq}", what.payload()),
            Self::Ack { to, seq, by } => format!("ack {to} {seq} {by}"),
        }
    }

    /// Reads a payload. Instance ids hold no spaces; what cannot be read is an invalidation
    /// of everything (always safe).
    pub fn parse(payload: &str) -> Self {
        let parts: Vec<&str> = payload.split(' ').collect();
        match parts.as_slice() {
            ["ack", to, seq, by] => match seq.parse() {
                Ok(seq) => Self::Ack {
                    to: (*to).to_string(),
                    seq,
                    by: (*by).to_string(),
                },
                Err(_) => Self::everything(),
            },
            [what, sender, seq] => match seq.parse() {
                Ok(seq) => Self::Invalidate {
                    what: Invalidation::parse(what),
                    from: Some(((*sender).to_string(), seq)),
                },
                Err(_) => Self::everything(),
            },
            [what] => Self::Invalidate {
                what: Invalidation::parse(what),
                from: None,
            },
            _ => Self::everything(),
        }
    }

    fn everything() -> Self {
        Self::Invalidate {
            what: Invalidation::All,
            from: None,
        }
    }
}

impl Peers {
    /// Sets this instance's id and the silence after which an instance is dead (once; later
    /// calls change nothing).
    pub fn identify(&self, instance: &str, silence: Duration) {
        let silence_ms = i64::try_from(silence.as_millis()).unwrap_or(i64::MAX);
        let _ = self.identity.set((instance.to_string(), silence_ms));
    }

    pub fn instance(&self) -> Option<&str> {
        self.identity.get().map(|(instance, _)| instance.as_str())
    }

    /// A new sequence number to await acknowledgements of, with this instance's id.
    fn request(&self) -> Option<(String, u64)> {
        let (instance, _) = self.identity.get()?;
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(seq, HashSet::new());
        Some((instance.clone(), seq))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, HashSet<String>>> {
        self.acks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `by` acknowledged `seq` (a listener read it).
    pub fn acknowledged(&self, seq: u64, by: String) {
        if let Some(ackers) = self.lock().get_mut(&seq) {
            ackers.insert(by);
            self.arrived.notify_waiters();
        }
    }

    /// Waits until every one of `peers` acknowledged `seq`, or [`ACK_WAIT`]; then forgets it.
    async fn wait(&self, seq: u64, peers: &[String]) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + ACK_WAIT;
        let missing = loop {
            let arrived = self.arrived.notified();
            let missing: Vec<String> = {
                let acks = self.lock();
                let ackers = acks.get(&seq);
                peers
                    .iter()
                    .filter(|peer| ackers.is_none_or(|a| !a.contains(*peer)))
                    .cloned()
                    .collect()
            };
            if missing.is_empty() || tokio::time::timeout_at(deadline, arrived).await.is_err() {
                break missing;
            }
        };
        self.lock().remove(&seq);
        missing
    }
}

/// Listens for other instances' invalidations (PostgreSQL) and applies them to `cache`, until
/// the runtime stops. On every (re)connection the whole cache is cleared: notifications sent
/// while no listener was connected are lost. Uses a connection of its own (opened with the
/// service pool's options), so it does not take one from the request budget.
pub fn spawn_listener(
    pool: &sea_orm::sqlx::PgPool,
    channel: String,
    cache: Arc<AccessCache>,
    peers: Arc<Peers>,
    retry: Duration,
) {
    use sea_orm::sqlx::postgres::{PgListener, PgPoolOptions};
    let options = pool.connect_options().as_ref().clone();
    let acks = pool.clone();
    // Nothing is served from the cache until the listener listens: a write meanwhile would
    // not be heard.
    cache.set_listening(false);
    tokio::spawn(async move {
        // A pool of one, only so the listener can reconnect by itself.
        let own = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .connect_lazy_with(options);
        loop {
            let mut listener = match PgListener::connect_with(&own).await {
                Ok(listener) => listener,
                Err(error) => {
                    tracing::warn!(%error, "access cache: cannot connect the listener; retrying");
                    cache.set_listening(false);
                    cache.evict(Invalidation::All);
                    tokio::time::sleep(retry).await;
                    continue;
                }
            };
            if let Err(error) = listener.listen(&channel).await {
                tracing::warn!(%error, "access cache: LISTEN failed; retrying");
                cache.evict(Invalidation::All);
                tokio::time::sleep(retry).await;
                continue;
            }
            // Listening from here on; anything cached before may have missed a notification.
            cache.evict(Invalidation::All);
            cache.set_listening(true);
            cache.count_listen();
            tracing::debug!(%channel, "access cache: listening");
            loop {
                match listener.try_recv().await {
                    Ok(Some(notification)) => {
                        heard(&cache, &peers, &acks, &channel, notification.payload());
                    }
                    // The connection was lost (the next call reconnects and listens again):
                    // what was sent meanwhile is lost with it.
                    Ok(None) => {
                        cache.set_listening(false);
                        cache.evict(Invalidation::All);
                    }
                    Err(error) => {
                        tracing::warn!(%error, "access cache: listener failed; reconnecting");
                        cache.set_listening(false);
                        cache.evict(Invalidation::All);
                        tokio::time::sleep(retry).await;
                        break;
                    }
                }
            }
        }
    });
}

/// Applies one notification: an invalidation (acknowledged when its sender waits for it), or
/// an acknowledgement of this instance's own.
fn heard(
    cache: &AccessCache,
    peers: &Peers,
    pool: &sea_orm::sqlx::PgPool,
    channel: &str,
    payload: &str,
) {
    match Message::parse(payload) {
        Message::Invalidate { what, from } => {
            cache.evict(what);
            let Some((sender, seq)) = from else {
                return;
            };
            let Some(me) = peers.instance().filter(|me| *me != sender) else {
                return;
            };
            let ack = Message::Ack {
                to: sender,
                seq,
                by: me.to_string(),
            }
            .payload();
            let (pool, channel) = (pool.clone(), channel.to_string());
            tokio::spawn(async move {
                let sent = sea_orm::sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(channel)
                    .bind(ack)
                    .execute(&pool)
                    .await;
                if let Err(error) = sent {
                    tracing::warn!(%error, "access cache: cannot acknowledge an invalidation");
                }
            });
        }
        Message::Ack { to, seq, by } => {
            if peers.instance() == Some(to.as_str()) {
                peers.acknowledged(seq, by);
            }
        }
    }
}

impl Store {
    /// The notifications of a write's invalidations, asking for acknowledgements when this
    /// instance knows its id (the sequence number to await is returned).
    pub(super) fn invalidation_messages(
        &self,
        what: &[Invalidation],
    ) -> (Vec<Message>, Option<u64>) {
        let from = (self.backend() == DbBackend::Postgres)
            .then(|| self.peers.request())
            .flatten();
        let seq = from.as_ref().map(|(_, seq)| *seq);
        let messages = what
            .iter()
            .map(|what| Message::Invalidate {
                what: *what,
                from: from.clone(),
            })
            .collect();
        (messages, seq)
    }

    /// After the write committed: waits until every other live instance acknowledged `seq`.
    /// A failure to ask who is live is logged, not the write's error (the write is done).
    pub(super) async fn await_peers(&self, seq: u64) {
        let Some((instance, silence_ms)) = self.peers.identity.get() else {
            return;
        };
        let peers = match self.live_peers(instance, *silence_ms).await {
            Ok(peers) => peers,
            Err(error) => {
                tracing::warn!(%error, "cannot list the other instances to await their cache invalidation");
                self.peers.lock().remove(&seq);
                return;
            }
        };
        if peers.is_empty() {
            self.peers.lock().remove(&seq);
            return;
        }
        let missing = self.peers.wait(seq, &peers).await;
        if !missing.is_empty() {
            tracing::warn!(
                ?missing,
                "instances did not acknowledge a cache invalidation in time"
            );
        }
    }

    /// The other instances renewed within `silence_ms`.
    async fn live_peers(&self, instance: &str, silence_ms: i64) -> Result<Vec<String>, DbErr> {
        let sql = "SELECT instance FROM cluster_members WHERE instance <> $1 \
                   AND heartbeat_ms > (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint - $2";
        let values: Vec<Value> = vec![instance.into(), silence_ms.into()];
        let rows = self
            .db
            .query_all_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                sql,
                values,
            ))
            .await?;
        rows.iter()
            .map(|row| row.try_get::<String>("", "instance"))
            .collect()
    }

    /// Sets this instance's id and the silence after which an instance is dead, for
    /// acknowledged invalidations.
    pub fn identify(&self, instance: &str, silence: Duration) {
        self.peers.identify(instance, silence);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn payloads_round_trip_and_old_ones_still_read() {
        let id = Uuid::new_v4();
        for message in [
            Message::Invalidate {
                what: Invalidation::Key(id),
                from: None,
            },
            Message::Invalidate {
                what: Invalidation::User(id),
                from: Some(("host:12:ab".into(), 7)),
            },
            Message::Ack {
                to: "host:12:ab".into(),
                seq: 7,
                by: "other:3:cd".into(),
            },
        ] {
            assert_eq!(Message::parse(&message.payload()), message);
        }
        assert_eq!(
            Message::parse("scheduled"),
            Message::Invalidate {
                what: Invalidation::Scheduled,
                from: None
            }
        );
        assert_eq!(Message::parse("ack x notanumber y"), Message::everything());
    }

    #[tokio::test]
    async fn a_wait_ends_when_every_peer_acknowledged() {
        let peers = std::sync::Arc::new(Peers::default());
        peers.identify("me:1:aa", Duration::from_secs(10));
        let (_, seq) = peers.request().unwrap();
        let acker = peers.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            acker.acknowledged(seq, "b".into());
            acker.acknowledged(seq, "c".into());
        });
        let missing = peers.wait(seq, &["b".to_string(), "c".to_string()]).await;
        assert!(missing.is_empty());
        assert!(peers.lock().is_empty(), "forgotten once awaited");
    }
}
