//! The simulator's shared state: the platform accounts it knows, their tokens, what was
//! published, the requests made, and the faults injected per account.
//!
//! Platform modules call [`SimState::admit`] first in every handler: it finds the account behind
//! the access token, counts the request, applies injected latency and reports an injected error,
//! which the module then renders in its platform's own error format.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use chrono::{DateTime, Utc};
use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::util::random_token;

/// A platform account the simulator knows.
#[derive(Debug, Clone, Serialize)]
pub struct SimAccount {
    pub platform: String,
    /// Page id, IG user id, Threads user id, TikTok open_id, YouTube channel id or X user id.
    pub external_id: String,
    pub name: String,
    pub username: String,
    pub access_token: String,
    pub refresh_token: String,
    /// Seconds the access token lives (0 = never expires, facebook page tokens).
    pub expires_in: u64,
}

/// An error to inject into an account's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// A 5xx from the platform.
    ServerError,
    /// The platform's own rate-limit error and headers.
    RateLimit,
    /// The platform's "token expired" error.
    TokenExpired,
    /// The platform's "token revoked / invalid" error.
    TokenRevoked,
    /// The platform's "permission missing" error.
    Permission,
}

/// How asynchronous processing (containers, uploads, videos) ends for an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Processing {
    /// Finishes after the simulator's processing delay.
    #[default]
    Finish,
    /// Stays in progress forever.
    Never,
    /// Ends in the platform's error state.
    Fail,
}

/// Faults injected for one account (`PUT /_sim/faults/{platform}/{external_id}`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FaultSpec {
    /// Added to every call of the account.
    pub latency_ms: u64,
    /// Error answered instead of the call's result.
    pub error: Option<FaultKind>,
    /// How many calls get `error` (then it clears); absent = until cleared.
    pub times: Option<u32>,
    /// Which calls get `error`: only those whose path contains this text (e.g. `media_publish`,
    /// `/tweets`); absent = every call.
    pub path_contains: Option<String>,
    /// Let this many matching calls through before `error` starts (e.g. fail the second post of
    /// a thread).
    pub skip: u32,
    pub processing: Processing,
    /// Insights metrics the platform refuses for this account (as it does a retired or
    /// unavailable metric): a request naming one gets the platform's invalid-metric error.
    pub fail_metrics: Vec<String>,
}

/// A post the simulator accepted as published.
#[derive(Debug, Clone, Serialize)]
pub struct PublishedItem {
    pub platform: String,
    pub account_id: String,
    pub id: String,
    /// Platform-specific kind, e.g. `feed`, `photo`, `album`, `video`, `image`, `carousel`,
    /// `reels`, `text`, `tweet`, `photo_post`, `inbox_video`.
    pub kind: String,
    pub text: Option<String>,
    pub media: Vec<String>,
    pub reply_to: Option<String>,
    /// Anything else worth reading back (title, privacy, thumbnail…).
    pub extra: Value,
    pub published_at: DateTime<Utc>,
}

/// Why a call was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No access token in the request.
    NoToken,
    /// A token the simulator never issued (or for another platform).
    UnknownToken,
    /// An injected fault.
    Fault(FaultKind),
}

/// A generic object a platform module keeps between calls (container, upload session…).
#[derive(Debug, Clone)]
pub struct SimObject {
    pub platform: String,
    /// The external id of the account that owns it.
    pub owner: String,
    pub kind: String,
    pub data: Value,
    pub created: Instant,
}

/// A request the simulator refused because the client broke the platform's protocol (unknown
/// field, missing parameter, missing scope, wrong flow), as opposed to a business answer (not
/// found, expired token, rate limit) or an injected fault. Tests assert none happened: a
/// violation means an adapter would fail against the real platform.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Violation {
    pub platform: String,
    pub method: String,
    pub path: String,
    /// A short stable name of the broken rule (`unknown_field`, `missing_parameter`…).
    pub rule: String,
    pub detail: String,
}

/// What a refusal site attaches to its response (in the response's extensions) so the
/// simulator's middleware records the violation with the request's method and path: the sites
/// then need neither the request nor the state.
#[derive(Debug, Clone)]
pub struct ViolationMark {
    pub platform: String,
    pub rule: String,
    pub detail: String,
}

/// Marks `response` as the refusal of a protocol violation (see [`Violation`]); the
/// simulator's middleware records it. Returns the response for use in tail position.
pub fn violation(
    mut response: actix_web::HttpResponse,
    platform: &str,
    rule: &str,
    detail: impl Into<String>,
) -> actix_web::HttpResponse {
    response.extensions_mut().insert(ViolationMark {
        platform: platform.to_string(),
        rule: rule.to_string(),
        detail: detail.into(),
    });
    response
}

/// Everything published, in order, with the indexes the simulator's own checks read on every
/// publish (by id, and each account's publish times for the quotas): a long run (a benchmark
/// publishing 100,000 posts) must not make each publish slower than the one before.
#[derive(Default)]
struct Published {
    items: Vec<PublishedItem>,
    /// Item id → index in `items`.
    by_id: FastMap<String, usize>,
    /// (platform, account) → when its posts and its replies were published, sorted by time.
    by_account: FastMap<AccountKey, PublishTimes>,
}

/// (platform, external id): how the simulator's maps name an account.
type AccountKey = (String, String);

/// The simulator's maps hash with foldhash rather than SipHash: they are read on every call
/// (token, account, request count, objects, the published index), and SipHash's resistance to
/// crafted keys buys nothing in a test double.
type Hasher = foldhash::fast::RandomState;
type FastMap<K, V> = std::collections::HashMap<K, V, Hasher>;
type SharedMap<K, V> = DashMap<K, V, Hasher>;

/// An account's publish times, posts and replies apart (the quotas count them apart), each
/// sorted by time, so a count since an instant is a binary search rather than a scan.
#[derive(Default)]
struct PublishTimes {
    posts: Vec<DateTime<Utc>>,
    replies: Vec<DateTime<Utc>>,
}

impl PublishTimes {
    /// Adds a publish time, keeping `times` sorted: items are stamped before the lock is
    /// taken (and tests record backdated ones), so one may arrive after a later one.
    fn insert(times: &mut Vec<DateTime<Utc>>, at: DateTime<Utc>) {
        match times.last() {
            Some(last) if *last > at => {
                let index = times.partition_point(|t| *t <= at);
                times.insert(index, at);
            }
            _ => times.push(at),
        }
    }

    /// How many of the sorted `times` are after `since` (a binary search).
    fn after(times: &[DateTime<Utc>], since: DateTime<Utc>) -> usize {
        times.len() - times.partition_point(|at| *at <= since)
    }

    fn count_after(&self, since: DateTime<Utc>, reply: Option<bool>) -> usize {
        let posts = || Self::after(&self.posts, since);
        let replies = || Self::after(&self.replies, since);
        match reply {
            Some(true) => replies(),
            Some(false) => posts(),
            None => posts() + replies(),
        }
    }
}

impl Published {
    fn push(&mut self, item: PublishedItem) {
        self.by_id.insert(item.id.clone(), self.items.len());
        // The key is copied only for an account's first publish.
        let key = (item.platform, item.account_id);
        let times = match self.by_account.get_mut(&key) {
            Some(times) => times,
            None => self.by_account.entry(key.clone()).or_default(),
        };
        match item.reply_to {
            Some(_) => PublishTimes::insert(&mut times.replies, item.published_at),
            None => PublishTimes::insert(&mut times.posts, item.published_at),
        }
        let (platform, account_id) = key;
        self.items.push(PublishedItem {
            platform,
            account_id,
            ..item
        });
    }
}

pub struct SimState {
    /// Shared, so admitting a call hands out a pointer, not a copy of six strings.
    accounts: SharedMap<AccountKey, Arc<SimAccount>>,
    /// access token → (platform, external id), shared: admitting a call reads the key without
    /// copying its two strings.
    tokens: SharedMap<String, Arc<AccountKey>>,
    faults: SharedMap<AccountKey, FaultSpec>,
    /// access token → the scopes granted with it, for tokens issued by an OAuth flow that
    /// asked for scopes (tiktok). A token not here (made with its account) has every scope.
    scopes: DashMap<String, Vec<String>>,
    published: Mutex<Published>,
    requests: SharedMap<AccountKey, u64>,
    /// Per account: its POST calls being answered now, and the most there ever were at once
    /// (a client that publishes one post at a time per account never exceeds 1).
    writes: SharedMap<AccountKey, (u32, u32)>,
    /// Protocol violations seen, in order (see [`Violation`]).
    violations: Mutex<Vec<Violation>>,
    /// Every HTTP request received, on any mount, with a token or not.
    received: AtomicU64,
    next_id: AtomicU64,
    /// Containers, upload sessions and the like, by id.
    pub objects: SharedMap<String, SimObject>,
    /// How long asynchronous processing takes before it finishes.
    pub processing_delay: Duration,
    /// Client the simulator fetches media URLs with (as platforms do).
    pub http: reqwest::Client,
}

impl SimState {
    pub fn new(processing_delay: Duration) -> Self {
        Self {
            accounts: SharedMap::default(),
            tokens: SharedMap::default(),
            faults: SharedMap::default(),
            scopes: DashMap::new(),
            published: Mutex::new(Published::default()),
            requests: SharedMap::default(),
            writes: SharedMap::default(),
            violations: Mutex::new(Vec::new()),
            received: AtomicU64::new(0),
            next_id: AtomicU64::new(1),
            objects: SharedMap::default(),
            processing_delay,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap_or_default(),
        }
    }

    /// A fresh numeric id (platform ids are long digit strings).
    pub fn next_id(&self) -> u64 {
        17_841_400_000_000_000 + self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Creates an account with fresh tokens.
    pub fn create_account(&self, platform: &str, name: &str, username: Option<&str>) -> SimAccount {
        let external_id = self.next_id().to_string();
        let expires_in = match platform {
            "facebook" => 0,
            "instagram" => 5_183_944,
            "threads" => 5_184_000,
            "tiktok" => 86_400,
            "youtube" => 3_599,
            _ => 7_200,
        };
        let account = SimAccount {
            platform: platform.to_string(),
            external_id: external_id.clone(),
            name: name.to_string(),
            username: username
                .map(str::to_string)
                .unwrap_or_else(|| name.to_ascii_lowercase().replace(' ', "_")),
            access_token: format!("{}-{}", token_prefix(platform), random_token(24)),
            refresh_token: format!("{}-r-{}", token_prefix(platform), random_token(24)),
            expires_in,
        };
        self.tokens.insert(
            account.access_token.clone(),
            Arc::new((platform.to_string(), external_id.clone())),
        );
        // Its refresh token works at the platform's token endpoint (`super::oauth`).
        self.objects.insert(
            format!("refresh:{}", account.refresh_token),
            SimObject {
                platform: platform.to_string(),
                owner: external_id.clone(),
                kind: "refresh_token".into(),
                data: Value::Null,
                created: Instant::now(),
            },
        );
        self.accounts.insert(
            (platform.to_string(), external_id),
            Arc::new(account.clone()),
        );
        account
    }

    /// Registers an account whose id and token already exist elsewhere (the demo re-registers
    /// its stored accounts with a fresh simulator on every start).
    pub fn register_account(&self, account: SimAccount) {
        self.tokens.insert(
            account.access_token.clone(),
            Arc::new((account.platform.clone(), account.external_id.clone())),
        );
        self.accounts.insert(
            (account.platform.clone(), account.external_id.clone()),
            Arc::new(account),
        );
    }

    /// Issues a new access token for an account (refresh), keeping the old one valid.
    pub fn issue_token(&self, platform: &str, external_id: &str) -> Option<String> {
        let mut account = self
            .accounts
            .get_mut(&(platform.to_string(), external_id.to_string()))?;
        let token = format!("{}-{}", token_prefix(platform), random_token(24));
        self.tokens.insert(
            token.clone(),
            Arc::new((platform.to_string(), external_id.to_string())),
        );
        Arc::make_mut(&mut account).access_token = token.clone();
        Some(token)
    }

    /// Remembers the scopes granted with `token`.
    pub fn grant_scopes(&self, token: &str, scopes: Vec<String>) {
        self.scopes.insert(token.to_string(), scopes);
    }

    /// Whether `token` was granted `scope` (a token issued without a scope list has all).
    pub fn has_scope(&self, token: &str, scope: &str) -> bool {
        self.scopes
            .get(token)
            .is_none_or(|granted| granted.iter().any(|s| s == scope))
    }

    /// The account of `platform` named `name`, if any (an OAuth login as the same person
    /// finds the same account again).
    pub fn account_named(&self, platform: &str, name: &str) -> Option<SimAccount> {
        self.accounts
            .iter()
            .find(|a| a.platform == platform && a.name == name)
            .map(|a| SimAccount::clone(a.value()))
    }

    /// Revokes an access token: later calls with it are refused as an unknown token.
    pub fn revoke_token(&self, token: &str) -> bool {
        self.tokens.remove(token).is_some()
    }

    pub fn account(&self, platform: &str, external_id: &str) -> Option<SimAccount> {
        self.accounts
            .get(&(platform.to_string(), external_id.to_string()))
            .map(|a| SimAccount::clone(&a))
    }

    /// The account behind an access token, if the simulator issued it.
    pub fn account_for_token(&self, token: &str) -> Option<SimAccount> {
        self.admitted_account(token)
            .map(|(_, a)| SimAccount::clone(&a))
    }

    /// The key and account behind an access token, shared.
    fn admitted_account(&self, token: &str) -> Option<(Arc<AccountKey>, Arc<SimAccount>)> {
        let key = Arc::clone(self.tokens.get(token)?.value());
        let account = self.accounts.get(&*key).map(|a| Arc::clone(&a))?;
        Some((key, account))
    }

    /// Admits a platform call: authenticates `token` (which must belong to one of `platforms`),
    /// counts the request, sleeps the injected latency and reports an injected error.
    pub async fn admit(
        &self,
        platforms: &[&str],
        token: Option<&str>,
        path: &str,
    ) -> Result<Arc<SimAccount>, Refusal> {
        let token = token.filter(|t| !t.is_empty()).ok_or(Refusal::NoToken)?;
        let (key, account) = self
            .admitted_account(token)
            .filter(|(_, a)| platforms.contains(&a.platform.as_str()))
            .ok_or(Refusal::UnknownToken)?;
        // Inside a POST (see [`WRITE`]): the account has one more write being answered.
        let _ = WRITE.try_with(|slot| {
            let mut slot = slot.borrow_mut();
            if slot.is_none() {
                let mut entry = self.writes.entry(AccountKey::clone(&key)).or_insert((0, 0));
                entry.0 += 1;
                entry.1 = entry.1.max(entry.0);
                *slot = Some(Arc::clone(&key));
            }
        });
        // The key is copied only for an account's first request.
        match self.requests.get_mut(&*key) {
            Some(mut count) => *count += 1,
            None => *self.requests.entry(AccountKey::clone(&key)).or_insert(0) += 1,
        }
        let (latency, error) = match self.faults.get_mut(&*key) {
            Some(mut spec) => {
                let applies = spec
                    .path_contains
                    .as_deref()
                    .is_none_or(|needle| path.contains(needle));
                let error = if applies && spec.skip > 0 {
                    spec.skip -= 1;
                    None
                } else if applies {
                    spec.error
                } else {
                    None
                };
                if error.is_some()
                    && let Some(times) = spec.times.as_mut()
                {
                    *times = times.saturating_sub(1);
                    if *times == 0 {
                        spec.error = None;
                        spec.times = None;
                    }
                }
                (spec.latency_ms, error)
            }
            None => (0, None),
        };
        if latency > 0 {
            tokio::time::sleep(Duration::from_millis(latency)).await;
        }
        match error {
            Some(kind) => Err(Refusal::Fault(kind)),
            None => Ok(account),
        }
    }

    /// The metrics injected to fail for this account.
    pub fn failing_metrics(&self, platform: &str, external_id: &str) -> Vec<String> {
        self.faults
            .get(&(platform.to_string(), external_id.to_string()))
            .map(|f| f.fail_metrics.clone())
            .unwrap_or_default()
    }

    /// How processing ends for this account right now.
    pub fn processing(&self, platform: &str, external_id: &str) -> Processing {
        self.faults
            .get(&(platform.to_string(), external_id.to_string()))
            .map(|f| f.processing)
            .unwrap_or_default()
    }

    /// Whether an object created at `created` has finished processing, given the account's mode:
    /// `Some(true)` finished, `Some(false)` failed, `None` still in progress.
    pub fn processing_outcome(
        &self,
        platform: &str,
        external_id: &str,
        created: Instant,
    ) -> Option<bool> {
        match self.processing(platform, external_id) {
            Processing::Never => None,
            _ if created.elapsed() < self.processing_delay => None,
            Processing::Finish => Some(true),
            Processing::Fail => Some(false),
        }
    }

    pub fn set_faults(&self, platform: &str, external_id: &str, spec: FaultSpec) {
        self.faults
            .insert((platform.to_string(), external_id.to_string()), spec);
    }

    pub fn clear_faults(&self, platform: Option<(&str, &str)>) {
        match platform {
            Some((p, id)) => {
                self.faults.remove(&(p.to_string(), id.to_string()));
            }
            None => self.faults.clear(),
        }
    }

    pub fn record_published(&self, item: PublishedItem) {
        self.published
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(item);
    }

    /// Published items, optionally of one platform and account, in publish order.
    pub fn published(
        &self,
        platform: Option<&str>,
        external_id: Option<&str>,
    ) -> Vec<PublishedItem> {
        self.published
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .items
            .iter()
            .filter(|i| platform.is_none_or(|p| i.platform == p))
            .filter(|i| external_id.is_none_or(|id| i.account_id == id))
            .cloned()
            .collect()
    }

    /// How many items were published, optionally on one platform (without copying them).
    pub fn published_count(&self, platform: Option<&str>) -> usize {
        let published = self.published.lock().unwrap_or_else(|p| p.into_inner());
        match platform {
            None => published.items.len(),
            Some(platform) => published
                .items
                .iter()
                .filter(|i| i.platform == platform)
                .count(),
        }
    }

    /// An account's posts (`reply`: `Some(true)` replies only, `Some(false)` posts only)
    /// published after `since`: what the platforms' publishing quotas count. Read from a
    /// per-account index, so a publish does not scan (let alone copy) everything published.
    pub fn published_since(
        &self,
        platform: &str,
        external_id: &str,
        since: DateTime<Utc>,
        reply: Option<bool>,
    ) -> usize {
        let published = self.published.lock().unwrap_or_else(|p| p.into_inner());
        published
            .by_account
            .get(&(platform.to_string(), external_id.to_string()))
            .map_or(0, |times| times.count_after(since, reply))
    }

    /// Changes a published item in place (e.g. a thumbnail set after the upload); `false` when
    /// there is no item with that id.
    pub fn update_published(&self, id: &str, change: impl FnOnce(&mut PublishedItem)) -> bool {
        let mut published = self.published.lock().unwrap_or_else(|p| p.into_inner());
        let Some(&index) = published.by_id.get(id) else {
            return false;
        };
        match published.items.get_mut(index) {
            Some(item) => {
                change(item);
                true
            }
            None => false,
        }
    }

    /// A published item by its id.
    pub fn published_item(&self, id: &str) -> Option<PublishedItem> {
        let published = self.published.lock().unwrap_or_else(|p| p.into_inner());
        let index = *published.by_id.get(id)?;
        published.items.get(index).cloned()
    }

    /// Counts one received HTTP request (the simulator's outermost middleware calls this).
    pub fn note_received(&self) {
        self.received.fetch_add(1, Ordering::Relaxed);
    }

    /// Every HTTP request the simulator has received, on any mount (platform APIs, the
    /// identity provider, the media host, control endpoints), whoever sent it: what proves a
    /// request was answered without calling out at all, wherever a crafted path would have
    /// led.
    pub fn received_count(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// The POST call of `key`'s account that [`WRITE`] held has been answered.
    pub fn write_ended(&self, key: &(String, String)) {
        if let Some(mut entry) = self.writes.get_mut(key) {
            entry.0 = entry.0.saturating_sub(1);
        }
    }

    /// The most POST calls of an account ever answered at the same time.
    pub fn peak_writes(&self, platform: &str, external_id: &str) -> u32 {
        self.writes
            .get(&(platform.to_string(), external_id.to_string()))
            .map_or(0, |w| w.1)
    }

    /// Every account that made a call: `(platform, external id, calls, peak POSTs at once)`.
    pub fn request_counts(&self) -> Vec<(String, String, u64, u32)> {
        let mut all: Vec<_> = self
            .requests
            .iter()
            .map(|entry| {
                let (platform, id) = entry.key();
                (
                    platform.clone(),
                    id.clone(),
                    *entry.value(),
                    self.peak_writes(platform, id),
                )
            })
            .collect();
        all.sort();
        all
    }

    /// Calls admitted or refused for an account (every call that carried its token).
    pub fn request_count(&self, platform: &str, external_id: &str) -> u64 {
        self.requests
            .get(&(platform.to_string(), external_id.to_string()))
            .map(|c| *c)
            .unwrap_or(0)
    }

    /// Records a protocol violation (usually through a [`ViolationMark`] on the refusal).
    pub fn record_violation(
        &self,
        platform: &str,
        method: &str,
        path: &str,
        rule: &str,
        detail: &str,
    ) {
        let violation = Violation {
            platform: platform.to_string(),
            method: method.to_string(),
            path: path.to_string(),
            rule: rule.to_string(),
            detail: detail.to_string(),
        };
        // A poisoned lock still holds a usable list: a panic elsewhere must not hide violations.
        self.violations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(violation);
    }

    /// The violations recorded so far, oldest first.
    pub fn violations(&self) -> Vec<Violation> {
        self.violations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The violations recorded so far, clearing the log.
    pub fn take_violations(&self) -> Vec<Violation> {
        std::mem::take(&mut *self.violations.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn put_object(&self, id: &str, object: SimObject) {
        self.objects.insert(id.to_string(), object);
    }

    pub fn object(&self, id: &str) -> Option<SimObject> {
        self.objects.get(id).map(|o| o.clone())
    }

    /// An image's width and height, read from the header at the start of `url`'s body (at most
    /// 512 KiB is read); `None` when it cannot be fetched or read.
    pub async fn image_size(&self, url: &str) -> Option<(u32, u32)> {
        use futures_util::StreamExt;
        let response = self.http.get(url).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let mut body = response.bytes_stream();
        let mut head = Vec::new();
        while head.len() < 512 * 1024 {
            let piece = body.next().await?.ok()?;
            head.extend_from_slice(&piece);
            if let Ok(size) = imagesize::blob_size(&head) {
                return Some((
                    u32::try_from(size.width).ok()?,
                    u32::try_from(size.height).ok()?,
                ));
            }
        }
        None
    }

    /// Fetches a media URL the way a platform does: GET, expect 200, read the content type and
    /// length. Returns `(content_type, content_length)` or the reason it failed.
    pub async fn fetch_media(&self, url: &str) -> Result<(String, Option<u64>), String> {
        let response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| format!("could not fetch {url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!(
                "fetching {url} answered HTTP {}",
                response.status().as_u16()
            ));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        Ok((content_type, response.content_length()))
    }
}

fn token_prefix(platform: &str) -> &'static str {
    match platform {
        "facebook" => "EAAB",
        "instagram" => "IGAA",
        "threads" => "THAA",
        "tiktok" => "act",
        "youtube" => "ya29",
        _ => "xoat",
    }
}

tokio::task_local! {
    /// Opened by the simulator's outermost middleware around each POST: the account the call
    /// writes for, once [`SimState::admit`] knows it; the middleware then counts the write
    /// answered ([`SimState::write_ended`]).
    pub static WRITE: std::cell::RefCell<Option<Arc<(String, String)>>>;
}

/// The bearer token of a request (`Authorization: Bearer …` or `OAuth …`).
pub fn bearer_token(req: &actix_web::HttpRequest) -> Option<String> {
    let value = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("oauth"))
        .then(|| token.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_are_kept_in_order_until_taken() {
        let state = SimState::new(Duration::from_millis(1));
        assert!(state.violations().is_empty());
        state.record_violation("threads", "GET", "/threads/v1.0/me", "unknown_field", "a");
        state.record_violation("tiktok", "POST", "/tiktok/v2/x", "invalid_params", "b");
        let rules: Vec<String> = state.violations().into_iter().map(|v| v.rule).collect();
        assert_eq!(rules, ["unknown_field", "invalid_params"]);
        // Reading leaves the log; taking empties it.
        assert_eq!(state.take_violations().len(), 2);
        assert!(state.violations().is_empty());
    }

    #[test]
    fn quota_counts_and_lookups_read_the_indexes() {
        let state = SimState::new(Duration::from_millis(1));
        let now = Utc::now();
        let item = |id: &str, account: &str, reply: bool, hours_ago: i64| PublishedItem {
            platform: "threads".into(),
            account_id: account.into(),
            id: id.into(),
            kind: "text".into(),
            text: None,
            media: Vec::new(),
            reply_to: reply.then(|| "parent".to_string()),
            extra: Value::Null,
            published_at: now - chrono::Duration::hours(hours_ago),
        };
        state.record_published(item("1", "a", false, 30));
        state.record_published(item("2", "a", false, 1));
        state.record_published(item("3", "a", true, 1));
        state.record_published(item("4", "b", false, 1));
        // Out of order (stamped before another thread's later item was recorded).
        state.record_published(item("5", "b", false, 25));
        state.record_published(item("6", "b", false, 2));
        let since = now - chrono::Duration::hours(24);
        assert_eq!(state.published_since("threads", "a", since, None), 2);
        assert_eq!(state.published_since("threads", "a", since, Some(false)), 1);
        assert_eq!(state.published_since("threads", "a", since, Some(true)), 1);
        assert_eq!(state.published_since("threads", "b", since, None), 2);
        assert_eq!(
            state.published_since("threads", "b", now - chrono::Duration::minutes(90), None),
            1
        );
        assert_eq!(state.published_since("threads", "c", since, None), 0);
        assert_eq!(state.published_since("x", "a", since, None), 0);
        assert_eq!(state.published_count(None), 6);
        assert_eq!(state.published_count(Some("threads")), 6);
        assert!(state.update_published("3", |i| i.extra = Value::Bool(true)));
        assert!(!state.update_published("9", |_| {}));
        assert_eq!(
            state.published_item("3").map(|i| i.extra),
            Some(Value::Bool(true))
        );
        assert_eq!(state.published(None, Some("a")).len(), 3);
    }
}
