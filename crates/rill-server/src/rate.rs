//! How fast new WebSockets may open: a token bucket on upgrades.
//!
//! Generation and the network share the CPU. A connect/disconnect flood costs
//! an HTTP parse, a handshake and a task per socket even when every socket is
//! refused or closed at once; on a two-core machine that time comes out of the
//! admitted streams' frames. Past the bucket, an upgrade gets HTTP 429 before any
//! handshake work, and the network threads run at a lower scheduling priority
//! than generation ([`lower_thread_priority`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Default `--max-upgrade-rate` (new WebSockets per second, sustained; a burst of
/// as many is admitted at once): far above what people opening the page produce.
pub const DEFAULT_UPGRADES_PER_SECOND: u32 = 20;
/// Largest `--max-upgrade-rate` accepted.
pub const MAX_UPGRADES_PER_SECOND: u32 = 100_000;

/// A lock-free token bucket (GCRA: one "theoretical arrival time" that each
/// admitted request pushes one interval later; a request is refused while that
/// time is more than a burst ahead of now).
pub struct UpgradeRate {
    start: Instant,
    /// Nanoseconds between admissions at the sustained rate.
    interval: u64,
    /// How far ahead of now the arrival time may run: `burst · interval`.
    tolerance: u64,
    /// Theoretical arrival time, nanoseconds since `start`.
    tat: AtomicU64,
}

impl UpgradeRate {
    /// `per_second` upgrades per second sustained, bursts of `per_second`.
    pub fn new(per_second: u32) -> UpgradeRate {
        let per_second = per_second.clamp(1, MAX_UPGRADES_PER_SECOND) as u64;
        let interval = 1_000_000_000 / per_second;
        UpgradeRate {
            start: Instant::now(),
            interval,
            tolerance: interval * per_second,
            tat: AtomicU64::new(0),
        }
    }

    /// The sustained rate.
    pub fn per_second(&self) -> u64 {
        1_000_000_000 / self.interval
    }

    /// Admits one upgrade now, or says how long until one would be admitted.
    pub fn try_admit(&self) -> Result<(), Duration> {
        self.try_admit_at(self.start.elapsed().as_nanos() as u64)
    }

    /// [`UpgradeRate::try_admit`] at `now` nanoseconds after creation.
    pub fn try_admit_at(&self, now: u64) -> Result<(), Duration> {
        let mut tat = self.tat.load(Ordering::Relaxed);
        loop {
            let next = tat.max(now) + self.interval;
            if next > now + self.tolerance {
                return Err(Duration::from_nanos(next - now - self.tolerance));
            }
            match self
                .tat
                .compare_exchange_weak(tat, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(seen) => tat = seen,
            }
        }
    }
}

/// The runtime's threads run at lower priority than generation (the one definition
/// is the kernels' pool's: other background work, like encoding a style prompt
/// beside a stream, uses it too).
pub use rill_kernels::pool::lower_thread_priority;

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_burst_is_admitted_then_the_sustained_rate() {
        let r = UpgradeRate::new(10);
        for i in 0..10 {
            assert!(r.try_admit_at(0).is_ok(), "burst request {i}");
        }
        let wait = r.try_admit_at(0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(100));
        // One interval later exactly one more fits.
        assert!(r.try_admit_at(S / 10).is_ok());
        assert!(r.try_admit_at(S / 10).is_err());
        // After a quiet second the whole burst is back.
        for _ in 0..10 {
            assert!(r.try_admit_at(3 * S).is_ok());
        }
        assert!(r.try_admit_at(3 * S).is_err());
    }

    #[test]
    fn refusals_do_not_use_up_the_bucket() {
        let r = UpgradeRate::new(2);
        assert!(r.try_admit_at(0).is_ok());
        assert!(r.try_admit_at(0).is_ok());
        for _ in 0..1000 {
            assert!(r.try_admit_at(0).is_err());
        }
        assert!(r.try_admit_at(S / 2).is_ok());
    }

    #[test]
    fn rates_are_clamped_to_the_accepted_range() {
        assert_eq!(UpgradeRate::new(0).per_second(), 1);
        assert_eq!(UpgradeRate::new(u32::MAX).per_second(), 100_000);
    }
}
