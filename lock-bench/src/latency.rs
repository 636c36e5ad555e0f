//! Latency samples and their percentiles.

use std::time::Duration;

/// Latency samples, in nanoseconds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Latencies(Vec<u64>);

/// Percentiles of a set of samples, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Summary {
    pub(crate) count: usize,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
}

impl Latencies {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }

    pub(crate) fn push(&mut self, d: Duration) {
        self.0.push(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    pub(crate) fn extend(&mut self, other: Latencies) {
        self.0.extend(other.0);
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// p50 and p99 (nearest rank); `None` without samples.
    pub(crate) fn summary(&self) -> Option<Summary> {
        if self.0.is_empty() {
            return None;
        }
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        let rank = |q: f64| {
            let idx = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
            sorted[idx] as f64 / 1000.0
        };
        Some(Summary {
            count: sorted.len(),
            p50_us: rank(0.50),
            p99_us: rank(0.99),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut l = Latencies::default();
        assert_eq!(l.summary(), None);
        for us in (1..=100).rev() {
            l.push(Duration::from_micros(us));
        }
        let s = l.summary().unwrap();
        assert_eq!(s.count, 100);
        assert_eq!(s.p50_us, 50.0);
        assert_eq!(s.p99_us, 99.0);
        let mut one = Latencies::default();
        one.push(Duration::from_micros(7));
        assert_eq!(one.summary().unwrap().p99_us, 7.0);
    }
}
