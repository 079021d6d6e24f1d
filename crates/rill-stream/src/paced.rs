//! Consuming a stream at real-time pace without a sound card, as a device
//! would (`rill play --device null`, `rill soak`): every frame due by the
//! clock is read; a frame not ready when due counts one underrun and is taken
//! when it arrives.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::engine::{StreamHandle, FRAME_MS};
use crate::pipeline::FRAME_PCM;

/// One stream's real-time consumer: how many frames it has taken and whether
/// it is waiting for a late one.
#[derive(Debug, Clone)]
pub struct PacedReader {
    played: u64,
    late: bool,
    frame: Vec<i16>,
}

impl PacedReader {
    /// A reader that has taken nothing yet (its clock starts at zero).
    pub fn new() -> PacedReader {
        PacedReader {
            played: 0,
            late: false,
            frame: vec![0; FRAME_PCM],
        }
    }

    /// Frames taken so far.
    pub fn played(&self) -> u64 {
        self.played
    }

    /// Takes every frame of `stream` due `elapsed` after the clock started (one
    /// per 40 ms), at most `limit` in total, handing each to `on_frame`. A frame
    /// not buffered when due counts one underrun in the stream's stats (once per
    /// gap, however long) and is taken by a later call once it arrives.
    pub fn catch_up(
        &mut self,
        stream: &mut StreamHandle,
        elapsed: Duration,
        limit: Option<u64>,
        on_frame: impl FnMut(&[i16]),
    ) {
        self.catch_up_from(stream, elapsed, limit, on_frame);
    }

    fn catch_up_from(
        &mut self,
        source: &mut impl Source,
        elapsed: Duration,
        limit: Option<u64>,
        mut on_frame: impl FnMut(&[i16]),
    ) {
        // Whole frames in integers: 240 ms is 6 frames, not 5.999….
        let due = u64::try_from(elapsed.as_micros() / FRAME_US).unwrap_or(u64::MAX);
        let due = limit.map_or(due, |n| due.min(n));
        while self.played < due {
            if !source.ready() {
                if !self.late {
                    self.late = true;
                    source.underrun();
                }
                return;
            }
            source.take(&mut self.frame);
            self.late = false;
            self.played += 1;
            on_frame(&self.frame);
        }
    }
}

/// One frame in microseconds.
const FRAME_US: u128 = FRAME_MS as u128 * 1000;

/// What a [`PacedReader`] reads: a [`StreamHandle`] (or a test's stand-in).
trait Source {
    /// Whether a whole frame is buffered.
    fn ready(&self) -> bool;
    /// Pops the buffered frame into `out`.
    fn take(&mut self, out: &mut [i16]);
    /// Counts one underrun.
    fn underrun(&self);
}

impl Source for StreamHandle {
    fn ready(&self) -> bool {
        self.buffered_ms() >= FRAME_MS
    }
    fn take(&mut self, out: &mut [i16]) {
        self.read_frame(out);
    }
    fn underrun(&self) {
        self.stats.underruns.fetch_add(1, Ordering::Relaxed);
    }
}

impl Default for PacedReader {
    fn default() -> Self {
        PacedReader::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// `ready` frames buffered; each taken frame is filled with its index.
    #[derive(Default)]
    struct Fake {
        ready: u64,
        taken: i16,
        underruns: Cell<u64>,
    }

    impl Source for Fake {
        fn ready(&self) -> bool {
            self.ready > 0
        }
        fn take(&mut self, out: &mut [i16]) {
            assert!(self.ready > 0, "took a frame that was not buffered");
            self.ready -= 1;
            out.fill(self.taken);
            self.taken += 1;
        }
        fn underrun(&self) {
            self.underruns.set(self.underruns.get() + 1);
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn takes_the_frames_due_by_the_clock_in_order() {
        let (mut r, mut src) = (PacedReader::new(), Fake::default());
        src.ready = 100;
        let mut seen = Vec::new();
        let mut run = |r: &mut PacedReader, src: &mut Fake, t| {
            r.catch_up_from(src, ms(t), None, |f: &[i16]| {
                assert_eq!(f.len(), FRAME_PCM);
                assert!(f.iter().all(|&v| v == f[0]));
                seen.push(f[0]);
            })
        };
        run(&mut r, &mut src, 0);
        run(&mut r, &mut src, 39);
        assert_eq!(r.played(), 0, "no frame is due before 40 ms");
        run(&mut r, &mut src, 40);
        assert_eq!(r.played(), 1);
        // Exact frame boundaries count whole frames (0.24 / 0.04 is 5.999… in f64).
        run(&mut r, &mut src, 240);
        assert_eq!(r.played(), 6);
        run(&mut r, &mut src, 279);
        assert_eq!(r.played(), 6);
        assert_eq!(seen, [0, 1, 2, 3, 4, 5]);
        assert_eq!(src.underruns.get(), 0);
    }

    #[test]
    fn a_gap_is_one_underrun_and_its_frames_are_taken_later() {
        let (mut r, mut src) = (PacedReader::new(), Fake::default());
        src.ready = 4;
        r.catch_up_from(&mut src, ms(200), None, |_| {});
        assert_eq!((r.played(), src.underruns.get()), (4, 1), "5 due, 4 ready");
        for t in [200, 240, 400] {
            r.catch_up_from(&mut src, ms(t), None, |_| {});
        }
        assert_eq!(
            (r.played(), src.underruns.get()),
            (4, 1),
            "one gap, one underrun"
        );
        src.ready = 3;
        r.catch_up_from(&mut src, ms(240), None, |_| {});
        assert_eq!(
            (r.played(), src.ready),
            (6, 1),
            "late frames taken, none early"
        );
        r.catch_up_from(&mut src, ms(280), None, |_| {});
        assert_eq!((r.played(), src.underruns.get()), (7, 1));
        r.catch_up_from(&mut src, ms(320), None, |_| {});
        assert_eq!((r.played(), src.underruns.get()), (7, 2), "a new gap");
    }

    #[test]
    fn stops_at_the_limit() {
        let (mut r, mut src) = (PacedReader::new(), Fake::default());
        src.ready = 100;
        r.catch_up_from(&mut src, ms(10_000), Some(8), |_| {});
        assert_eq!((r.played(), src.ready, src.underruns.get()), (8, 92, 0));
        // A clock beyond u64 frames saturates instead of wrapping.
        r.catch_up_from(&mut src, Duration::MAX, Some(9), |_| {});
        assert_eq!(r.played(), 9);
    }
}
