//! Time source. Everything that depends on "now" (usage periods, session and token expiry)
//! reads it from an injected [`Clock`], so tests can pin and move time.

use std::sync::{
    Arc,
    atomic::{AtomicI64, Ordering},
};

use chrono::{DateTime, Duration, Utc};

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that stays where it is set (for tests). Cloning shares the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    micros: Arc<AtomicI64>,
}

impl ManualClock {
    pub fn new(at: DateTime<Utc>) -> Self {
        Self {
            micros: Arc::new(AtomicI64::new(at.timestamp_micros())),
        }
    }

    pub fn set(&self, at: DateTime<Utc>) {
        self.micros.store(at.timestamp_micros(), Ordering::SeqCst);
    }

    pub fn advance(&self, by: Duration) {
        let step = by.num_microseconds().unwrap_or(i64::MAX);
        self.micros.fetch_add(step, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        DateTime::from_timestamp_micros(self.micros.load(Ordering::SeqCst)).unwrap_or_default()
    }
}

/// The clock as the application holds it.
pub type SharedClock = Arc<dyn Clock>;
