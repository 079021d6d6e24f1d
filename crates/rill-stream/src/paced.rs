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
        mut on_frame: impl FnMut(&[i16]),
    ) {
        let due = (elapsed.as_secs_f64() / (f64::from(FRAME_MS) / 1e3)) as u64;
        let due = limit.map_or(due, |n| due.min(n));
        while self.played < due {
            if stream.buffered_ms() < FRAME_MS {
                if !self.late {
                    self.late = true;
                    stream.stats.underruns.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
            stream.read_frame(&mut self.frame);
            self.late = false;
            self.played += 1;
            on_frame(&self.frame);
        }
    }
}

impl Default for PacedReader {
    fn default() -> Self {
        PacedReader::new()
    }
}
