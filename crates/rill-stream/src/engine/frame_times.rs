//! [`FrameTimes`]: the engine's histogram of how long each served frame took, kept
//! in atomics so the scheduler records a frame without a lock or an allocation; a
//! metrics endpoint reads it at any time.

use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds (seconds) of the histogram's buckets, around the 40 ms frame
/// budget; one more bucket takes the rest.
pub const FRAME_SECONDS_BUCKETS: [f64; 10] = [
    0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.05, 0.08,
];

/// Frame generation times of every stream the engine served.
#[derive(Debug, Default)]
pub struct FrameTimes {
    /// Per bucket of [`FRAME_SECONDS_BUCKETS`], then above the last.
    counts: [AtomicU64; FRAME_SECONDS_BUCKETS.len() + 1],
    sum_ns: AtomicU64,
}

impl FrameTimes {
    /// Counts one frame that took `seconds`.
    pub(crate) fn record(&self, seconds: f64) {
        let i = FRAME_SECONDS_BUCKETS
            .iter()
            .position(|&b| seconds <= b)
            .unwrap_or(FRAME_SECONDS_BUCKETS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ns
            .fetch_add((seconds.max(0.0) * 1e9) as u64, Ordering::Relaxed);
    }

    /// (upper bound, frames in that bucket alone) for every bucket, the last one's
    /// bound infinite: Prometheus's buckets before accumulation.
    pub fn buckets(&self) -> Vec<(f64, u64)> {
        FRAME_SECONDS_BUCKETS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(&self.counts)
            .map(|(b, c)| (b, c.load(Ordering::Relaxed)))
            .collect()
    }

    /// Frames counted.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Their total time, in seconds.
    pub fn sum_seconds(&self) -> f64 {
        self.sum_ns.load(Ordering::Relaxed) as f64 * 1e-9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_land_in_their_buckets() {
        let t = FrameTimes::default();
        for s in [0.001, 0.005, 0.039, 0.041, 0.5] {
            t.record(s);
        }
        let b = t.buckets();
        assert_eq!(b.len(), 11);
        assert_eq!(b[0], (0.005, 2));
        assert_eq!(b[7], (0.04, 1));
        assert_eq!(b[8], (0.05, 1));
        assert_eq!(b[10], (f64::INFINITY, 1));
        assert_eq!(t.count(), 5);
        assert!((t.sum_seconds() - 0.586).abs() < 1e-6);
    }
}
