//! What authentication and account-ownership checks read on every request, kept in memory so
//! that a warm request makes no database round trip:
//! - a presented API key's SHA-256 → its key id and owner (only keys that authenticated: an
//!   unknown key is never cached, so guessing keys cannot grow memory);
//! - a user id → the user row (its plan, for metering);
//! - an account id → the account row (ownership, connected, valid), which the supervisor reads
//!   for the hot paths (`/api/performance/*`, publishing's checks);
//! - a user's rendered `GET /api/scheduled-posts` answer per filter (the listing is what is left
//!   of that call's cost once authentication and metering come from memory: decoding the rows
//!   and writing the JSON).
//!
//! Staleness, and how it is bounded:
//! - On this instance every write to these rows goes through [`crate::store::Store`], which
//!   evicts the entry right after its transaction commits ([`Invalidation`]), in the same
//!   operation: a deleted key or a changed plan is seen by the very next request. Every write
//!   that changes what a scheduled-posts listing shows drops all listings
//!   ([`Invalidation::Scheduled`]: one version for every user, as the scheduler's batches span
//!   users and the listing is cheap to rebuild), so a post scheduled, cancelled or published is
//!   in the very next listing.
//! - A read that raced such a write (it read the old row before the commit and would insert it
//!   after the eviction) is refused: every eviction bumps a generation, and an insert is only
//!   taken when the generation is still the one seen before the read (for listings: the
//!   listing version, bumped only by scheduled-post writes, so the scheduler's writes do not
//!   refuse authentication's inserts).
//! - Other instances on the same PostgreSQL database hear of the write by `pg_notify`, sent in
//!   the write's transaction (delivered on commit), through [`super::peers::spawn_listener`],
//!   and acknowledge it before the write is answered. When the listener (re)connects it clears
//!   everything, since notifications may have been missed meanwhile, and while it is not
//!   listening nothing is served from the cache.
//! - Whatever else happens (a lost listener, SQLite files shared by hand), an entry lives at most
//!   `auth.cache_ttl_ms` (default 5 s): the periodic re-check that bounds every other case.

use std::{
    collections::HashMap,
    hash::Hash,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::clock::{SharedClock, SystemClock};
use crate::config::DEFAULT_LIST_CAPACITY;

/// How big and how fresh the cache is (`auth.cache_capacity`, `auth.list_cache_capacity`,
/// `auth.cache_ttl_ms`).
#[derive(Debug, Clone, Copy)]
pub struct AccessCacheSettings {
    /// Entries per kind (keys, users, accounts); 0 turns caching off.
    pub capacity: usize,
    /// Rendered listings (one per user and filter; up to 100 posts each, so far fewer than
    /// `capacity`); 0 turns listing caching off.
    pub list_capacity: usize,
    /// The longest an entry is trusted without a re-read.
    pub ttl: Duration,
}

impl Default for AccessCacheSettings {
    fn default() -> Self {
        Self {
            capacity: 10_000,
            list_capacity: DEFAULT_LIST_CAPACITY,
            ttl: Duration::from_millis(5_000),
        }
    }
}

/// Whose listing, with which filter: what a cached `GET /api/scheduled-posts` answer is for.
pub type ListingKey = (Uuid, crate::store::ScheduledFilter);

/// What a write changed: the entries to drop, here and (as a notification) on other instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalidation {
    /// An API key was deleted.
    Key(Uuid),
    /// A user row changed (plan, operator role, profile).
    User(Uuid),
    /// An account row changed (disconnected, tokens, validity, lease).
    Account(Uuid),
    /// A scheduled post changed in a way its listing shows (scheduled, cancelled, claimed,
    /// linked to an attempt, ended, given back): every listing is dropped.
    Scheduled,
    /// Anything may have changed (a listener that reconnected).
    All,
}

impl Invalidation {
    /// The notification's payload.
    pub fn payload(self) -> String {
        match self {
            Self::Key(id) => format!("key:{id}"),
            Self::User(id) => format!("user:{id}"),
            Self::Account(id) => format!("account:{id}"),
            Self::Scheduled => "scheduled".to_string(),
            Self::All => "all".to_string(),
        }
    }

    /// Reads a payload; an unknown one is taken as [`Invalidation::All`] (a newer instance
    /// may send kinds this one does not know: dropping everything is always safe).
    pub fn parse(payload: &str) -> Self {
        let id = |raw: &str| Uuid::parse_str(raw).ok();
        if payload == "scheduled" {
            return Self::Scheduled;
        }
        match payload.split_once(':') {
            Some(("key", raw)) => id(raw).map_or(Self::All, Self::Key),
            Some(("user", raw)) => id(raw).map_or(Self::All, Self::User),
            Some(("account", raw)) => id(raw).map_or(Self::All, Self::Account),
            _ => Self::All,
        }
    }
}

/// An API key that authenticated: whose it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedKey {
    pub key_id: Uuid,
    pub user_id: Uuid,
}

/// A value and when it stops being trusted.
struct Stamped<T> {
    value: T,
    expires_at: DateTime<Utc>,
}

struct Inner {
    /// Bumped by every eviction; see [`AccessCache::generation`].
    generation: u64,
    /// By the SHA-256 (hex) of the presented key, already computed for the database lookup.
    ///
    /// Why a hash-keyed map leaks no useful timing: the map's own hashing (SipHash with a
    /// per-process random key) and its final equality check run over SHA-256 digests, not over
    /// the key. How long a lookup takes can at most tell a caller how much of the digest of
    /// what they presented matches the digest of a live key, and a digest prefix gives no way
    /// to construct a key (that would be a SHA-256 preimage). The stored keys themselves are
    /// 256-bit random tokens, so nothing is left to guess byte by byte.
    keys: HashMap<String, Stamped<CachedKey>>,
    users: HashMap<Uuid, Stamped<Arc<entity::user::Model>>>,
    accounts: HashMap<Uuid, Stamped<Arc<entity::account::Model>>>,
    /// Bumped by every [`Invalidation::Scheduled`] (and `All`); see
    /// [`AccessCache::listing_version`].
    listing_version: u64,
    /// Rendered `GET /api/scheduled-posts` bodies (shared without copying: `Bytes`).
    listings: HashMap<ListingKey, Stamped<bytes::Bytes>>,
}

/// The cache (one per process, held by the store; see the module's comment).
pub struct AccessCache {
    clock: SharedClock,
    settings: AccessCacheSettings,
    inner: Mutex<Inner>,
    /// How many times the PostgreSQL listener started listening (tests wait for the first
    /// before relying on notifications; an operator can see reconnections).
    listens: AtomicU64,
    /// False while a PostgreSQL listener is not listening: nothing is served from the cache
    /// then, since another instance's write would not be heard (always true on SQLite).
    listening: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for AccessCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessCache")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Default for AccessCache {
    fn default() -> Self {
        Self::new(Arc::new(SystemClock), AccessCacheSettings::default())
    }
}

impl AccessCache {
    /// `clock` ages the entries (the service's clock, so tests can move time past the TTL).
    pub fn new(clock: SharedClock, settings: AccessCacheSettings) -> Self {
        Self {
            clock,
            settings,
            inner: Mutex::new(Inner {
                generation: 0,
                keys: HashMap::new(),
                users: HashMap::new(),
                accounts: HashMap::new(),
                listing_version: 0,
                listings: HashMap::new(),
            }),
            listens: AtomicU64::new(0),
            listening: std::sync::atomic::AtomicBool::new(true),
        }
    }

    /// Whether entries may be served (see `listening`).
    fn serving(&self) -> bool {
        self.listening.load(Ordering::SeqCst)
    }

    /// Whether this instance's listener listens now (see `listening`).
    pub(super) fn set_listening(&self, listening: bool) {
        self.listening.store(listening, Ordering::SeqCst);
    }

    /// The listener started listening (again).
    pub(super) fn count_listen(&self) {
        self.listens.fetch_add(1, Ordering::SeqCst);
    }

    /// How many times this instance's listener started listening (0: not yet, or SQLite).
    pub fn listens(&self) -> u64 {
        self.listens.load(Ordering::SeqCst)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing panics while holding it; if something did, the maps are still consistent
        // (each operation is one map call), so go on with them.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The eviction count. Read it BEFORE reading a row from the database and pass it to the
    /// `insert_*` call: if anything was evicted meanwhile, the row read may predate that write,
    /// and it is not cached.
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    pub fn key(&self, key_hash: &str) -> Option<CachedKey> {
        if !self.serving() {
            return None;
        }
        let now = self.clock.now();
        fresh(&mut self.lock().keys, key_hash, now)
    }

    pub fn user(&self, user_id: Uuid) -> Option<Arc<entity::user::Model>> {
        if !self.serving() {
            return None;
        }
        let now = self.clock.now();
        fresh(&mut self.lock().users, &user_id, now)
    }

    pub fn account(&self, account_id: Uuid) -> Option<Arc<entity::account::Model>> {
        if !self.serving() {
            return None;
        }
        let now = self.clock.now();
        fresh(&mut self.lock().accounts, &account_id, now)
    }

    /// The listing version. Read it BEFORE reading the rows of a listing and pass it to
    /// [`Self::insert_listing`]: a scheduled-post write meanwhile makes the listing unusable.
    pub fn listing_version(&self) -> u64 {
        self.lock().listing_version
    }

    /// A rendered listing, while fresh (every scheduled-post write since drops it).
    pub fn listing(&self, key: &ListingKey) -> Option<bytes::Bytes> {
        if !self.serving() {
            return None;
        }
        let now = self.clock.now();
        fresh(&mut self.lock().listings, key, now)
    }

    /// Caches a rendered listing; false when refused (see [`Self::listing_version`]).
    pub fn insert_listing(&self, seen: u64, key: ListingKey, body: bytes::Bytes) -> bool {
        let expires_at = self.expiry();
        let capacity = self.settings.list_capacity;
        let mut inner = self.lock();
        inner.listing_version == seen && put(&mut inner.listings, capacity, key, body, expires_at)
    }

    /// Caches an authenticated key; false when refused (see [`Self::generation`]).
    pub fn insert_key(&self, seen: u64, key_hash: String, key: CachedKey) -> bool {
        let expires_at = self.expiry();
        let capacity = self.settings.capacity;
        let mut inner = self.lock();
        inner.generation == seen && put(&mut inner.keys, capacity, key_hash, key, expires_at)
    }

    pub fn insert_user(&self, seen: u64, user: Arc<entity::user::Model>) -> bool {
        let expires_at = self.expiry();
        let capacity = self.settings.capacity;
        let mut inner = self.lock();
        inner.generation == seen && put(&mut inner.users, capacity, user.id, user, expires_at)
    }

    pub fn insert_account(&self, seen: u64, account: Arc<entity::account::Model>) -> bool {
        let expires_at = self.expiry();
        let capacity = self.settings.capacity;
        let mut inner = self.lock();
        inner.generation == seen
            && put(
                &mut inner.accounts,
                capacity,
                account.id,
                account,
                expires_at,
            )
    }

    /// Drops what `what` names and bumps the generation (so a read in flight does not put the
    /// old row back); for listings, the listing version instead.
    pub fn evict(&self, what: Invalidation) {
        let mut inner = self.lock();
        if what == Invalidation::Scheduled {
            inner.listing_version += 1;
            inner.listings.clear();
            return;
        }
        inner.generation += 1;
        match what {
            // Deletions are rare and the map is bounded: a scan beats a second index.
            Invalidation::Key(key_id) => inner.keys.retain(|_, key| key.value.key_id != key_id),
            Invalidation::User(user_id) => {
                inner.users.remove(&user_id);
            }
            Invalidation::Account(account_id) => {
                inner.accounts.remove(&account_id);
            }
            Invalidation::Scheduled => {}
            Invalidation::All => {
                inner.keys.clear();
                inner.users.clear();
                inner.accounts.clear();
                inner.listing_version += 1;
                inner.listings.clear();
            }
        }
    }

    /// Entries held: `(keys, users, accounts)`.
    pub fn len(&self) -> (usize, usize, usize) {
        let inner = self.lock();
        (inner.keys.len(), inner.users.len(), inner.accounts.len())
    }

    /// Rendered listings held.
    pub fn listings_len(&self) -> usize {
        self.lock().listings.len()
    }

    /// Now, and when an entry inserted now expires.
    fn expiry(&self) -> (DateTime<Utc>, DateTime<Utc>) {
        let ttl = chrono::Duration::from_std(self.settings.ttl).unwrap_or(chrono::Duration::MAX);
        let now = self.clock.now();
        let expires_at = now
            .checked_add_signed(ttl)
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        (now, expires_at)
    }
}

/// The entry's value while fresh; an expired one is dropped.
fn fresh<K, Q, T>(map: &mut HashMap<K, Stamped<T>>, key: &Q, now: DateTime<Utc>) -> Option<T>
where
    K: Eq + Hash + std::borrow::Borrow<Q>,
    Q: Eq + Hash + ?Sized,
    T: Clone,
{
    let entry = map.get(key)?;
    if entry.expires_at > now {
        return Some(entry.value.clone());
    }
    map.remove(key);
    None
}

/// Inserts within `capacity`: when full, expired entries go first, then an arbitrary one (the
/// cost of a miss is one query, so a simple bound beats a precise LRU).
fn put<K: Eq + Hash + Clone, T>(
    map: &mut HashMap<K, Stamped<T>>,
    capacity: usize,
    key: K,
    value: T,
    (now, expires_at): (DateTime<Utc>, DateTime<Utc>),
) -> bool {
    if capacity == 0 {
        return false;
    }
    if map.len() >= capacity && !map.contains_key(&key) {
        map.retain(|_, entry| entry.expires_at > now);
        if map.len() >= capacity
            && let Some(victim) = map.keys().next().cloned()
        {
            map.remove(&victim);
        }
    }
    map.insert(key, Stamped { value, expires_at });
    true
}

/// How a separate process (the `service user …` commands) tells running instances on the same
/// SQLite file that it changed rows they may hold: SQLite has no notifications, so it appends
/// a line to a file beside the database (`<database>-access`), and an instance that finds the
/// file changed drops its whole cache before it authenticates.
///
/// Why a file and its metadata: the check runs on every API-key request, and a warm request
/// makes no database round trip (see the module's comment). One `stat` of a local file costs
/// under 2 µs (1.7 µs measured on a loaded 2-core machine), where any query (`PRAGMA data_version` included) goes through the
/// pool and its connection's thread, a round trip that would cost the warm path more than the
/// rest of its authentication. And it sees only these commands: a write by the instance itself
/// (which evicts exactly what it changed) does not empty its cache, as `data_version` would.
/// Each change appends, so the file's length grows with every one: no two states of it look
/// alike, whatever the file system's timestamp resolution.
#[derive(Debug)]
pub struct ChangeMarker {
    path: std::path::PathBuf,
    seen: Mutex<Option<MarkerState>>,
}

/// What identifies one state of the marker file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MarkerState {
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl ChangeMarker {
    /// The marker of the SQLite file at `database`; its present state counts as seen.
    pub fn for_database(database: &str) -> Self {
        let path = std::path::PathBuf::from(format!("{database}-access"));
        let seen = Mutex::new(Self::state(&path));
        Self { path, seen }
    }

    fn state(path: &std::path::Path) -> Option<MarkerState> {
        std::fs::metadata(path).ok().map(|meta| MarkerState {
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }

    /// Whether another process changed something since the last call (the first call
    /// compares with the state at creation).
    pub fn changed(&self) -> bool {
        let now = Self::state(&self.path);
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *seen == now {
            return false;
        }
        *seen = now;
        true
    }

    /// Records that `what` changed (after its transaction committed).
    pub fn announce(&self, what: &[Invalidation]) -> std::io::Result<()> {
        use std::io::Write;
        let payloads: Vec<String> = what.iter().map(|item| item.payload()).collect();
        let line = format!("{} {}\n", Utc::now().to_rfc3339(), payloads.join(" "));
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        file.write_all(line.as_bytes())
    }
}

/// The notification channel of one database schema (tests run one schema per application, so
/// their instances only hear their own writes). At most 63 bytes: PostgreSQL truncates longer
/// identifiers, which would make sender and listener disagree.
pub fn channel_name(pg_schema: Option<&str>) -> String {
    let mut name = match pg_schema {
        Some(schema) => format!("service_access_{schema}"),
        None => "service_access".to_string(),
    };
    name.truncate(63);
    name
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::clock::ManualClock;

    fn user(id: Uuid, plan: crate::usage::Plan) -> Arc<entity::user::Model> {
        let now = Utc::now();
        Arc::new(entity::user::Model {
            id,
            email: None,
            email_verified: false,
            display_name: None,
            oidc_issuer: "iss".into(),
            oidc_subject: id.to_string(),
            plan,
            plan_type: None,
            current_period_end: None,
            is_operator: false,
            disabled_at: None,
            created_at: now,
            updated_at: now,
        })
    }

    fn cache(capacity: usize) -> (ManualClock, AccessCache) {
        let clock = ManualClock::new(Utc::now());
        let cache = AccessCache::new(
            Arc::new(clock.clone()),
            AccessCacheSettings {
                capacity,
                list_capacity: capacity,
                ttl: Duration::from_secs(5),
            },
        );
        (clock, cache)
    }

    #[test]
    fn a_read_that_raced_a_write_is_not_cached() {
        use crate::usage::Plan;
        let (_, cache) = cache(10);
        let id = Uuid::new_v4();
        // An authentication reads the generation, then the row (still Free)…
        let seen = cache.generation();
        let stale = user(id, Plan::Free);
        // …meanwhile the plan change commits and evicts…
        cache.evict(Invalidation::User(id));
        // …and the old row must not be put back.
        assert!(!cache.insert_user(seen, stale));
        assert!(cache.user(id).is_none());
        // A read that started after the eviction is cached.
        let seen = cache.generation();
        assert!(cache.insert_user(seen, user(id, Plan::Pro)));
        assert_eq!(cache.user(id).unwrap().plan, Plan::Pro);
    }

    #[test]
    fn evictions_drop_what_they_name() {
        use crate::usage::Plan;
        let (_, cache) = cache(10);
        let (key_id, user_id) = (Uuid::new_v4(), Uuid::new_v4());
        let seen = cache.generation();
        let key = CachedKey { key_id, user_id };
        assert!(cache.insert_key(seen, "h1".into(), key));
        assert!(cache.insert_user(seen, user(user_id, Plan::Pro)));
        cache.evict(Invalidation::User(user_id));
        assert_eq!(cache.key("h1"), Some(key), "a plan change keeps the key");
        assert!(cache.user(user_id).is_none());
        cache.evict(Invalidation::Key(key_id));
        assert_eq!(cache.key("h1"), None);
    }

    #[test]
    fn entries_expire_after_the_ttl() {
        let (clock, cache) = cache(10);
        let key = CachedKey {
            key_id: Uuid::new_v4(),
            user_id: Uuid::new_v4(),
        };
        assert!(cache.insert_key(cache.generation(), "h".into(), key));
        clock.advance(chrono::Duration::milliseconds(4_999));
        assert_eq!(cache.key("h"), Some(key));
        clock.advance(chrono::Duration::milliseconds(1));
        assert_eq!(cache.key("h"), None);
        assert_eq!(cache.len().0, 0, "an expired entry is dropped when met");
    }

    #[test]
    fn the_size_is_bounded() {
        let (_, cache) = cache(3);
        for n in 0..10 {
            let key = CachedKey {
                key_id: Uuid::new_v4(),
                user_id: Uuid::new_v4(),
            };
            assert!(cache.insert_key(cache.generation(), format!("h{n}"), key));
        }
        assert_eq!(cache.len().0, 3);
        let (_, off) = self::cache(0);
        let key = CachedKey {
            key_id: Uuid::new_v4(),
            user_id: Uuid::new_v4(),
        };
        assert!(!off.insert_key(off.generation(), "h".into(), key));
    }

    fn filter(limit: u64) -> crate::store::ScheduledFilter {
        crate::store::ScheduledFilter {
            status: None,
            platform: None,
            limit,
        }
    }

    #[test]
    fn a_listing_read_that_raced_a_scheduled_write_is_not_cached() {
        let (_, cache) = cache(10);
        let key = (Uuid::new_v4(), filter(50));
        let body = bytes::Bytes::from_static(b"{}");
        let seen = cache.listing_version();
        cache.evict(Invalidation::Scheduled);
        assert!(!cache.insert_listing(seen, key, body.clone()));
        assert!(cache.listing(&key).is_none());
        let seen = cache.listing_version();
        assert!(cache.insert_listing(seen, key, body.clone()));
        assert_eq!(cache.listing(&key), Some(body));
        // Authentication's evictions leave listings alone, and the other way round.
        let auth_seen = cache.generation();
        cache.evict(Invalidation::User(key.0));
        assert!(cache.listing(&key).is_some());
        cache.evict(Invalidation::Scheduled);
        assert!(
            cache.listing(&key).is_none(),
            "a scheduled write drops every listing"
        );
        assert_eq!(cache.generation(), auth_seen + 1);
        // `All` (a listener that reconnected) drops listings too.
        let seen = cache.listing_version();
        assert!(cache.insert_listing(seen, key, bytes::Bytes::new()));
        cache.evict(Invalidation::All);
        assert_eq!(cache.listings_len(), 0);
    }

    #[test]
    fn listings_are_bounded_and_expire() {
        let (clock, cache) = cache(3);
        let user = Uuid::new_v4();
        for limit in 1..=10 {
            let seen = cache.listing_version();
            assert!(cache.insert_listing(seen, (user, filter(limit)), bytes::Bytes::new()));
        }
        assert_eq!(
            cache.listings_len(),
            3,
            "one entry per filter, at most the capacity"
        );
        clock.advance(chrono::Duration::seconds(5));
        assert!(cache.listing(&(user, filter(10))).is_none());
    }

    #[test]
    fn payloads_round_trip() {
        let id = Uuid::new_v4();
        for what in [
            Invalidation::Key(id),
            Invalidation::User(id),
            Invalidation::Account(id),
            Invalidation::Scheduled,
            Invalidation::All,
        ] {
            assert_eq!(Invalidation::parse(&what.payload()), what);
        }
        assert_eq!(Invalidation::parse("key:nonsense"), Invalidation::All);
        assert_eq!(Invalidation::parse("what"), Invalidation::All);
        assert!(channel_name(Some(&"s".repeat(100))).len() <= 63);
    }
}
