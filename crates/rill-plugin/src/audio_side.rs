//! The audio callback's side of the bridge (see [`crate::bridge`]): it queues the
//! block's notes and parameter changes and reads the ring, allocating nothing.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::bridge::{
    Event, Note, Settings, SettingsSource, Shared, Timed, Timeline, LOADING, READY,
};

/// The audio callback's side (see the module docs).
pub struct AudioSide {
    events: rtrb::Producer<Timed>,
    audio: rtrb::Consumer<f32>,
    shared: Arc<Shared>,
    timeline: Timeline,
    settings: Arc<dyn SettingsSource>,
    /// The settings last queued for this stream.
    sent: Option<Settings>,
    /// Host samples rendered since the model became ready.
    pos: u64,
    /// Samples played as silence in an underrun, to skip when the audio comes
    /// (the stream stays on the host's timeline).
    debt: u64,
    /// The stream this side plays (see [`AudioSide::restart`]).
    epoch: u64,
    /// Ring samples read or dropped so far.
    popped: u64,
}

impl AudioSide {
    pub(crate) fn new(
        events: rtrb::Producer<Timed>,
        audio: rtrb::Consumer<f32>,
        shared: Arc<Shared>,
        timeline: Timeline,
        settings: Arc<dyn SettingsSource>,
    ) -> AudioSide {
        AudioSide {
            events,
            audio,
            shared,
            timeline,
            settings,
            sent: None,
            pos: 0,
            debt: 0,
            epoch: 0,
            popped: 0,
        }
    }

    /// Queues a note at `offset` samples into the block about to be rendered.
    pub fn note(&mut self, offset: u32, note: Note) {
        let s = self.pos + u64::from(offset);
        let frame = s.div_ceil(self.timeline.frame as u64);
        self.queue(frame, Event::Note(note));
    }

    /// Queues `event` for `frame`; whether there was room.
    fn queue(&mut self, frame: u64, event: Event) -> bool {
        let timed = Timed {
            frame,
            event,
            epoch: self.epoch,
        };
        let queued = self.events.push(timed).is_ok();
        if !queued {
            self.shared.dropped_notes.fetch_add(1, Ordering::Relaxed);
        }
        queued
    }

    /// Starts the stream again from its beginning (the host's transport started,
    /// or it reset the plugin): a fresh generator with the current seed and
    /// settings, the notes queued from now on, the latency's silence first. Bounces
    /// from the host's start are therefore the same each time. Allocates nothing;
    /// the model thread does the work before its next frame.
    pub fn restart(&mut self) {
        // The watermark first: the model reads it after it sees the new epoch.
        self.shared.watermark.store(0, Ordering::Release);
        self.epoch += 1;
        self.shared.epoch.store(self.epoch, Ordering::Release);
        self.pos = 0;
        self.debt = 0;
        self.sent = None;
    }

    /// Whether the model runs this side's stream; drops what it made before.
    fn synced(&mut self, wait: bool) -> bool {
        loop {
            if self.shared.running_epoch.load(Ordering::Acquire) == self.epoch {
                break;
            }
            if !wait || self.shared.stop.load(Ordering::Acquire) {
                return false;
            }
            thread::sleep(Duration::from_micros(100));
        }
        let stale = self.shared.stale_until.load(Ordering::Acquire);
        while self.popped < stale {
            let n = (self.audio.slots() as u64).min(stale - self.popped) as usize;
            if n == 0 {
                break; // Pushed before the reset, so already visible: never here.
            }
            if let Ok(chunk) = self.audio.read_chunk(n) {
                chunk.commit_all();
            }
            self.popped += n as u64;
        }
        true
    }

    /// Renders one block into `left` and `right` (the same length). `wait`: offline,
    /// wait for the model (and for loading) instead of playing silence.
    pub fn render(&mut self, left: &mut [f32], right: &mut [f32], wait: bool) {
        let n = left.len().min(right.len());
        let mut st = self.shared.state.load(Ordering::Acquire);
        while wait && st == LOADING {
            thread::sleep(Duration::from_micros(200));
            st = self.shared.state.load(Ordering::Acquire);
        }
        if st != READY || !self.synced(wait) {
            // Loading or restarting (in real time), or failed: silence, and the
            // timeline waits.
            left.fill(0.0);
            right.fill(0.0);
            return;
        }
        // Parameter changes reach the next frame boundary, as notes do.
        let now = self.settings.settings();
        if self.sent != Some(now) {
            let frame = self.pos.div_ceil(self.timeline.frame as u64);
            if self.queue(frame, Event::Settings(now)) {
                self.sent = Some(now);
            }
        }
        self.shared.offline.store(wait, Ordering::Release);
        self.shared
            .watermark
            .store(self.pos + n as u64, Ordering::Release);
        // Host samples before the latency are silence; the rest come from the ring.
        let first = (self.timeline.latency as u64)
            .saturating_sub(self.pos)
            .min(n as u64) as usize;
        left[..first].fill(0.0);
        right[..first].fill(0.0);
        let want = n - first;
        self.skip_debt();
        if wait {
            while self.debt == 0 && self.audio.slots() < 2 * want {
                if self.shared.stop.load(Ordering::Acquire) {
                    break;
                }
                thread::sleep(Duration::from_micros(100));
            }
        }
        let have = if self.debt > 0 {
            0
        } else {
            (self.audio.slots() / 2).min(want)
        };
        if let Ok(chunk) = self.audio.read_chunk(2 * have) {
            let (a, b) = chunk.as_slices();
            let mut it = a.iter().chain(b);
            for i in first..first + have {
                left[i] = *it.next().unwrap_or(&0.0);
                right[i] = *it.next().unwrap_or(&0.0);
            }
            chunk.commit_all();
            self.popped += 2 * have as u64;
        }
        if have < want {
            left[first + have..n].fill(0.0);
            right[first + have..n].fill(0.0);
            self.debt += (want - have) as u64;
            self.shared.underruns.fetch_add(1, Ordering::Relaxed);
        }
        self.pos += n as u64;
    }

    /// Drops the audio that an underrun already played as silence.
    fn skip_debt(&mut self) {
        if self.debt == 0 {
            return;
        }
        let skip = (self.audio.slots() / 2).min(self.debt as usize);
        if let Ok(chunk) = self.audio.read_chunk(2 * skip) {
            chunk.commit_all();
            self.popped += 2 * skip as u64;
        }
        self.debt -= skip as u64;
    }
}
