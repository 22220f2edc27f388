//! Latency on the device clock: a histogram per kind of operation and one per
//! transaction, summarised as mean and percentiles.
//!
//! HdrHistogram with 3 significant digits: a percentile is within 0.1% of the
//! exact value, in constant memory whatever the run's length.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

/// Mean and percentiles of one kind of latency, ns of simulated time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

/// One histogram.
#[derive(Clone, Debug)]
pub struct Latency {
    hist: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            // Auto-resizing, 3 significant digits: never refuses a value.
            hist: Histogram::new(3).expect("3 significant digits is a valid histogram precision"),
        }
    }
}

impl Latency {
    pub fn record(&mut self, ns: u64) {
        // Auto-resizing: `record` grows the histogram to the value (it fails
        // only past u64's range, which a u64 cannot reach);
        // `saturating_record` would clamp to the current top instead.
        if self.hist.record(ns).is_err() {
            self.hist.saturating_record(ns);
        }
    }

    pub fn summary(&self) -> LatencySummary {
        if self.hist.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: self.hist.len(),
            mean_ns: self.hist.mean(),
            p50_ns: self.hist.value_at_quantile(0.50),
            p99_ns: self.hist.value_at_quantile(0.99),
            p999_ns: self.hist.value_at_quantile(0.999),
            max_ns: self.hist.max(),
        }
    }
}

/// Latencies of a run: per operation kind (`read`, `write`, `commit`, ...,
/// and `request` for every host request), and per transaction (its begin's
/// submission to its commit's or abort's completion).
#[derive(Clone, Debug, Default)]
pub struct Latencies {
    /// A few kinds, looked up by name on every operation: a short list
    /// beats a map here (the host's hot path).
    by_op: Vec<(&'static str, Latency)>,
    pub request: Latency,
    pub transaction: Latency,
}

impl Latencies {
    pub fn op(&mut self, kind: &'static str, ns: u64) {
        let i = match self.by_op.iter().position(|(k, _)| std::ptr::eq(*k, kind) || *k == kind) {
            Some(i) => i,
            None => {
                self.by_op.push((kind, Latency::default()));
                self.by_op.len() - 1
            }
        };
        self.by_op[i].1.record(ns);
        self.request.record(ns);
    }

    pub fn report(&self) -> LatencyReport {
        LatencyReport {
            request: self.request.summary(),
            transaction: self.transaction.summary(),
            by_op: self.by_op.iter().map(|(k, v)| (k.to_string(), v.summary())).collect(),
        }
    }
}

/// What reports carry (`--json`: `latency`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LatencyReport {
    /// Every host request.
    pub request: LatencySummary,
    /// Whole transactions (begin to commit or abort); count 0 without transactions.
    pub transaction: LatencySummary,
    pub by_op: BTreeMap<String, LatencySummary>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut l = Latency::default();
        for v in 1..=10_000u64 {
            l.record(v * 1000);
        }
        let s = l.summary();
        assert_eq!(s.count, 10_000);
        // Within the histogram's 0.1% precision of the exact ranks.
        let near = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 * 0.001 + 1.0;
        assert!(near(s.p50_ns, 5_000_000), "{s:?}");
        assert!(near(s.p99_ns, 9_900_000), "{s:?}");
        assert!(near(s.p999_ns, 9_990_000), "{s:?}");
        assert!(near(s.max_ns, 10_000_000), "{s:?}");
        assert!((s.mean_ns - 5_000_500.0).abs() < 5_000.0, "{s:?}");
    }

    #[test]
    fn an_empty_histogram_summarises_to_zeros() {
        assert_eq!(Latency::default().summary(), LatencySummary::default());
    }
}
