//! Prometheus metrics, kept per application instance (no global recorder, so tests and several
//! instances in one process do not mix their numbers), rendered in the text exposition format at
//! `/metrics`.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use dashmap::DashMap;

/// Every metric: name, type, help. Rendering follows this order.
const CATALOGUE: &[(&str, &str, &str)] = &[
    (
        "http_requests_total",
        "counter",
        "HTTP requests by route pattern, method and status.",
    ),
    (
        "http_request_duration_seconds",
        "histogram",
        "HTTP request latency by route pattern.",
    ),
    (
        "publishes_total",
        "counter",
        "Publishes by platform, post type, outcome and error code.",
    ),
    (
        "publish_duration_seconds",
        "histogram",
        "Time a publish spent with the platform, by platform.",
    ),
    (
        "publish_queue_depth",
        "gauge",
        "Publishes waiting in account actors' queues (all accounts).",
    ),
    (
        "publishes_in_flight",
        "gauge",
        "Publishes running now (all accounts).",
    ),
    (
        "limiter_rejections_total",
        "counter",
        "Publishes and performance reads refused by an account's rate limiter, by platform.",
    ),
    (
        "cluster_takeovers_total",
        "counter",
        "What this instance took over from instances gone silent: account publish leases (lease), and claims handed back for taking over (scheduled, check, webhook).",
    ),
    (
        "cluster_lease_waits_total",
        "counter",
        "Publishes and token refreshes that waited for another instance to finish with the account.",
    ),
    (
        "cluster_leases_held",
        "gauge",
        "Account publish leases this instance holds now.",
    ),
    (
        "cluster_budget_rejections_total",
        "counter",
        "Platform calls refused because the account's budget, shared by every instance, was used up.",
    ),
    (
        "token_refreshes_total",
        "counter",
        "Token refreshes by platform and outcome (refreshed, revoked, failed).",
    ),
    (
        "collector_runs_total",
        "counter",
        "Daily-collection passes by outcome (ok, partial: some accounts failed, error).",
    ),
    (
        "collector_accounts_total",
        "counter",
        "Accounts collected, by platform and status (success, partial, failed, skipped).",
    ),
    ("account_actors", "gauge", "Live account actors."),
    (
        "scheduler_dispatches_total",
        "counter",
        "Scheduled posts dispatched, by result (published, failed, retried).",
    ),
    (
        "scheduler_lag_seconds",
        "histogram",
        "How late a due scheduled post was claimed.",
    ),
    (
        "scheduler_settled_total",
        "counter",
        "Posts settled after their claimant stopped.",
    ),
    (
        "webhook_deliveries_total",
        "counter",
        "Webhook delivery attempts by outcome (delivered, retrying, failed, gone).",
    ),
    (
        "webhook_first_attempt_lag_seconds",
        "histogram",
        "Time from an event to its message's first delivery attempt.",
    ),
    (
        "webhook_queue_depth",
        "gauge",
        "Webhook messages waiting for an attempt (all endpoints, every instance).",
    ),
    (
        "media_uploads_total",
        "counter",
        "Uploads by outcome (stored, refused: type, size or quota, failed: the store).",
    ),
    (
        "media_swept_total",
        "counter",
        "Uploaded files removed by the media sweep, by reason (expired; object_without_row: a file with no medium; row_without_object: a medium whose file was gone).",
    ),
    (
        "db_pool_connections",
        "gauge",
        "Database pool connections by state (idle, in_use).",
    ),
];

const BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

struct Histogram {
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    /// Sum in microseconds (atomics hold integers).
    sum_micros: AtomicU64,
}

impl Histogram {
    fn new() -> Self {
        Self {
            buckets: BUCKETS.iter().map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }
}

/// A metric's map, keyed by `(name, rendered labels)`. Hashed with foldhash rather than SipHash:
/// a publish touches these maps eight times, and their keys are this service's own names and
/// label values, nothing a client can choose to collide.
type Series<V> = DashMap<(&'static str, String), V, foldhash::fast::RandomState>;

/// The metrics of one application instance.
#[derive(Default)]
pub struct Metrics {
    counters: Series<AtomicU64>,
    gauges: Series<AtomicI64>,
    histograms: Series<Histogram>,
}

/// `k1="v1",k2="v2"`, values escaped for the exposition format. Built on every request (the
/// HTTP counters), so into one string, without a `format!` per pair.
fn labels(pairs: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(
        pairs
            .iter()
            .map(|(k, v)| k.len() + v.len() + 4)
            .sum::<usize>(),
    );
    for (i, (key, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(key);
        out.push_str("=\"");
        for c in value.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out
}

impl Metrics {
    // The series exist after their first use: a shared read (`get`) finds them, and only a new
    // series takes its shard's write lock.
    pub fn inc(&self, name: &'static str, pairs: &[(&str, &str)]) {
        let key = (name, labels(pairs));
        match self.counters.get(&key) {
            Some(counter) => counter.fetch_add(1, Ordering::Relaxed),
            None => self
                .counters
                .entry(key)
                .or_default()
                .fetch_add(1, Ordering::Relaxed),
        };
    }

    pub fn gauge_add(&self, name: &'static str, pairs: &[(&str, &str)], delta: i64) {
        let key = (name, labels(pairs));
        match self.gauges.get(&key) {
            Some(gauge) => gauge.fetch_add(delta, Ordering::Relaxed),
            None => self
                .gauges
                .entry(key)
                .or_default()
                .fetch_add(delta, Ordering::Relaxed),
        };
    }

    pub fn gauge_set(&self, name: &'static str, pairs: &[(&str, &str)], value: i64) {
        self.gauges
            .entry((name, labels(pairs)))
            .or_default()
            .store(value, Ordering::Relaxed);
    }

    pub fn observe(&self, name: &'static str, pairs: &[(&str, &str)], seconds: f64) {
        let key = (name, labels(pairs));
        let entry = match self.histograms.get(&key) {
            Some(entry) => entry,
            None => self
                .histograms
                .entry(key)
                .or_insert_with(Histogram::new)
                .downgrade(),
        };
        for (bound, bucket) in BUCKETS.iter().zip(&entry.buckets) {
            if seconds <= *bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        entry.count.fetch_add(1, Ordering::Relaxed);
        let micros = (seconds.max(0.0) * 1_000_000.0) as u64;
        entry.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// A counter's value (tests, and the operator view).
    pub fn counter(&self, name: &'static str, pairs: &[(&str, &str)]) -> u64 {
        self.counters
            .get(&(name, labels(pairs)))
            .map(|c| c.load(Ordering::Relaxed))
            .unwrap_or(0)
    }

    /// The Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, kind, help) in CATALOGUE {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
            let mut lines: Vec<String> = Vec::new();
            match *kind {
                "counter" => {
                    for entry in self.counters.iter().filter(|e| e.key().0 == *name) {
                        lines.push(series(
                            name,
                            &entry.key().1,
                            entry.value().load(Ordering::Relaxed),
                        ));
                    }
                }
                "gauge" => {
                    for entry in self.gauges.iter().filter(|e| e.key().0 == *name) {
                        lines.push(series(
                            name,
                            &entry.key().1,
                            entry.value().load(Ordering::Relaxed),
                        ));
                    }
                }
                _ => {
                    for entry in self.histograms.iter().filter(|e| e.key().0 == *name) {
                        let base = &entry.key().1;
                        let h = entry.value();
                        let with = |extra: String| {
                            if base.is_empty() {
                                extra
                            } else {
                                format!("{base},{extra}")
                            }
                        };
                        for (bound, bucket) in BUCKETS.iter().zip(&h.buckets) {
                            lines.push(series(
                                &format!("{name}_bucket"),
                                &with(format!("le=\"{bound}\"")),
                                bucket.load(Ordering::Relaxed),
                            ));
                        }
                        let count = h.count.load(Ordering::Relaxed);
                        lines.push(series(
                            &format!("{name}_bucket"),
                            &with("le=\"+Inf\"".into()),
                            count,
                        ));
                        let sum = h.sum_micros.load(Ordering::Relaxed) as f64 / 1_000_000.0;
                        lines.push(format!("{}_sum{} {sum}", name, braces(base)));
                        lines.push(format!("{}_count{} {count}", name, braces(base)));
                    }
                }
            }
            lines.sort();
            for line in lines {
                out.push_str(&line);
                out.push('\n');
            }
        }
        out
    }
}

fn braces(labels: &str) -> String {
    if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    }
}

fn series(name: &str, labels: &str, value: impl std::fmt::Display) -> String {
    format!("{name}{} {value}", braces(labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_gauges_and_histograms() {
        let m = Metrics::default();
        m.inc(
            "publishes_total",
            &[("platform", "x"), ("outcome", "published")],
        );
        m.inc(
            "publishes_total",
            &[("platform", "x"), ("outcome", "published")],
        );
        m.gauge_set("account_actors", &[], 3);
        m.observe(
            "http_request_duration_seconds",
            &[("route", "/v2/posts")],
            0.02,
        );
        let text = m.render();
        assert!(text.contains("# TYPE publishes_total counter\n"));
        assert!(text.contains("publishes_total{platform=\"x\",outcome=\"published\"} 2\n"));
        assert!(text.contains("account_actors 3\n"));
        assert!(text.contains(
            "http_request_duration_seconds_bucket{route=\"/v2/posts\",le=\"0.025\"} 1\n"
        ));
        assert!(
            text.contains(
                "http_request_duration_seconds_bucket{route=\"/v2/posts\",le=\"0.01\"} 0\n"
            )
        );
        assert!(text.contains("http_request_duration_seconds_count{route=\"/v2/posts\"} 1\n"));
        assert_eq!(
            m.counter(
                "publishes_total",
                &[("platform", "x"), ("outcome", "published")]
            ),
            2
        );
    }
}
