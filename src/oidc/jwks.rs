//! The provider's signing keys (its JWKS), cached.
//!
//! Fetched on first use and again once [`MAX_AGE`] has passed. A token naming a `kid` the cache
//! lacks means the provider rotated its keys: the set is fetched again at once, but at most once
//! per [`MIN_REFETCH_INTERVAL`], so that a stream of tokens naming made-up keys cannot turn the
//! service into a client hammering the provider. One lock serialises the fetches: sign-ins that
//! arrive during one wait for it rather than starting their own.

use std::{
    future::Future,
    sync::Arc,
    time::{Duration, Instant},
};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use serde::Deserialize;
use tokio::sync::Mutex;

use super::OidcError;

/// How long a fetched key set is used before it is fetched again (keys the provider withdrew
/// stop being trusted within this).
pub(crate) const MAX_AGE: Duration = Duration::from_secs(60 * 60);
/// The least time between two fetches caused by an unknown `kid`.
pub(crate) const MIN_REFETCH_INTERVAL: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Cached {
    keys: Option<Arc<JwkSet>>,
    fetched_at: Option<Instant>,
    /// When an unknown `kid` last caused a fetch.
    refetched_at: Option<Instant>,
}

/// The cache; one per provider, shared by every worker.
#[derive(Default)]
pub(crate) struct JwksCache {
    cached: Mutex<Cached>,
}

impl JwksCache {
    /// The key set to verify a token with. `unknown_kid` tells whether a given set lacks the
    /// token's key; `fetch` gets the provider's current set.
    pub(crate) async fn keys<F, Fut>(
        &self,
        unknown_kid: impl Fn(&JwkSet) -> bool,
        fetch: F,
    ) -> Result<Arc<JwkSet>, OidcError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<JwkSet, OidcError>>,
    {
        let mut cached = self.cached.lock().await;
        let now = Instant::now();
        let fresh = cached
            .fetched_at
            .is_some_and(|at| now.duration_since(at) < MAX_AGE);
        if let (true, Some(keys)) = (fresh, &cached.keys) {
            let may_refetch = cached
                .refetched_at
                .is_none_or(|at| now.duration_since(at) >= MIN_REFETCH_INTERVAL);
            if !unknown_kid(keys) || !may_refetch {
                return Ok(keys.clone());
            }
            cached.refetched_at = Some(now);
            tracing::info!("ID token names a key the cached JWKS lacks; fetching it again");
        }
        let keys = Arc::new(fetch().await?);
        cached.keys = Some(keys.clone());
        cached.fetched_at = Some(Instant::now());
        Ok(keys)
    }
}

/// A JWKS document, each key kept as it came: one key of a kind we do not know (an encryption
/// key, a new algorithm) must not make the whole set unreadable.
#[derive(Deserialize)]
struct RawJwkSet {
    keys: Vec<serde_json::Value>,
}

/// Fetches and parses the provider's JWKS, skipping keys that do not parse.
pub(crate) async fn fetch(http: &reqwest::Client, uri: &str) -> Result<JwkSet, OidcError> {
    let response = http
        .get(uri)
        .send()
        .await
        .map_err(|e| OidcError::Unreachable(e.to_string()))?;
    if !response.status().is_success() {
        return Err(OidcError::Unreachable(format!(
            "{uri} answered {}",
            response.status()
        )));
    }
    let raw: RawJwkSet = response
        .json()
        .await
        .map_err(|e| OidcError::Unreachable(format!("unreadable JWKS at {uri}: {e}")))?;
    let keys = raw
        .keys
        .into_iter()
        .filter_map(|key| serde_json::from_value::<Jwk>(key).ok())
        .collect();
    Ok(JwkSet { keys })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A set holding one key (its `kid` is what the tests look at).
    fn set(kid: &str) -> JwkSet {
        let mut jwk: Jwk = serde_json::from_value(serde_json::json!({
            "kty": "EC", "crv": "P-256",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
            "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
        }))
        .unwrap();
        jwk.common.key_id = Some(kid.into());
        JwkSet { keys: vec![jwk] }
    }

    #[actix_web::test]
    async fn an_unknown_kid_fetches_once_then_waits_for_the_interval() {
        let cache = JwksCache::default();
        let fetches = AtomicUsize::new(0);
        let fetch = || async {
            fetches.fetch_add(1, Ordering::SeqCst);
            Ok(set("k1"))
        };
        let lacks = |kid: &'static str| move |keys: &JwkSet| keys.find(kid).is_none();

        cache.keys(lacks("k1"), fetch).await.unwrap();
        assert_eq!(fetches.load(Ordering::SeqCst), 1, "first use fetches");
        cache.keys(lacks("k1"), fetch).await.unwrap();
        assert_eq!(
            fetches.load(Ordering::SeqCst),
            1,
            "a known kid is served from the cache"
        );
        cache.keys(lacks("rotated"), fetch).await.unwrap();
        assert_eq!(
            fetches.load(Ordering::SeqCst),
            2,
            "an unknown kid fetches again"
        );
        for _ in 0..20 {
            cache.keys(lacks("made-up"), fetch).await.unwrap();
        }
        assert_eq!(
            fetches.load(Ordering::SeqCst),
            2,
            "further unknown kids wait for the interval"
        );
    }

    #[actix_web::test]
    async fn a_rotated_key_is_found_by_the_refetch() {
        let cache = JwksCache::default();
        let current = std::sync::Mutex::new("old");
        let fetch = || async { Ok(set(&current.lock().unwrap())) };
        let keys = cache.keys(|_| false, fetch).await.unwrap();
        assert!(keys.find("old").is_some());
        *current.lock().unwrap() = "new";
        let keys = cache
            .keys(|keys| keys.find("new").is_none(), fetch)
            .await
            .unwrap();
        assert!(keys.find("new").is_some());
    }

    #[actix_web::test]
    async fn a_failed_first_fetch_is_an_error_and_is_retried_next_time() {
        let cache = JwksCache::default();
        let failing = || async { Err(OidcError::Unreachable("down".into())) };
        assert!(matches!(
            cache.keys(|_| false, failing).await,
            Err(OidcError::Unreachable(_))
        ));
        let keys = cache
            .keys(|_| false, || async { Ok(set("k1")) })
            .await
            .unwrap();
        assert!(keys.find("k1").is_some());
    }
}
