//! The engine's scheduler thread: calibration, earliest-deadline-first service of
//! the streams, their controls and snapshots, and the per-stream panic guard.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use rill_mrt2::Mrt2;
use rill_spectrostream::Codec;

use super::speech::{serve_speech, SpeechJob};
use super::{Msg, Shared, Slot, FRAME_MS};
use crate::generator::Generator;
use crate::pipeline::{StagePools, FRAME_PCM};

/// Real-time factor of one stream with these pools: median frame time / 40 ms,
/// after a warm-up, measured exactly as the scheduler will run it.
pub(super) fn measure_rtf(
    lm: &Arc<Mrt2>,
    codec: &Arc<Codec>,
    pool: &StagePools,
    frames: usize,
) -> f32 {
    const WARMUP: usize = 3;
    let mut g = Generator::new(lm.clone(), codec.clone(), 0, pool);
    let mut pcm = vec![0i16; FRAME_PCM];
    let mut ms = Vec::with_capacity(frames);
    for i in 0..frames + WARMUP {
        let t = Instant::now();
        g.step(pool, &mut pcm);
        if i >= WARMUP {
            ms.push(t.elapsed().as_secs_f32() * 1e3);
        }
    }
    ms.sort_by(|a, b| a.total_cmp(b));
    ms[ms.len() / 2] / FRAME_MS
}

/// How long the scheduler keeps its core busy (yielding, never sleeping) after
/// the last frame it generated. While streams play, the wait for the next free
/// slot is shorter than a frame; sleeping through it let the CPU idle, and the
/// next frames then ran ~15 % slower (measured: live RTF 0.95 with 11 underruns
/// in 30 s against 0.80 with none, the bench's figure, on a 2-vCPU Xeon VM).
const BUSY_WAIT: Duration = Duration::from_millis(100);

pub(super) fn schedule(
    shared: &Shared,
    pool: &StagePools,
    register: &Receiver<Slot>,
    speeches: &Receiver<SpeechJob>,
) {
    let mut slots: Vec<Slot> = Vec::new();
    let mut speaking: Vec<SpeechJob> = Vec::new();
    let mut pcm = vec![0i16; FRAME_PCM];
    let mut last_frame = Instant::now();
    while !shared.stop.load(Ordering::Acquire) {
        while let Ok(s) = register.try_recv() {
            slots.push(s);
        }
        speaking.extend(speeches.try_iter());
        slots.retain(|s| !s.closed.load(Ordering::Acquire));
        // Controls take effect at the next frame boundary; applying them as soon as
        // they arrive is the same thing, and answers snapshot requests promptly.
        slots.retain_mut(|s| guarded(s, drain_messages).is_some());
        #[cfg(feature = "fault-injection")]
        if shared.preempt_after_drain.load(Ordering::Relaxed) {
            thread::sleep(Duration::from_millis(3));
        }
        // Earliest deadline first: the stream with the least audio buffered.
        let next = slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.audio.slots() >= FRAME_PCM)
            .max_by_key(|(_, s)| s.audio.slots())
            .map(|(i, _)| i);
        let Some(i) = next else {
            // No music stream has room: a speech cycle may run (one frame per
            // codec call beside music, so it ends well within their buffers).
            let max_group = if slots.is_empty() { usize::MAX } else { 1 };
            if serve_speech(&mut speaking, pool, max_group) {
                last_frame = Instant::now();
                continue;
            }
            if (!slots.is_empty() || !speaking.is_empty()) && last_frame.elapsed() < BUSY_WAIT {
                thread::yield_now();
            } else {
                thread::park_timeout(Duration::from_millis(2));
            }
            continue;
        };
        let t = Instant::now();
        let served = guarded(&mut slots[i], |s| {
            // Again right before the step: a control sent before the consumer
            // made the room this step fills must reach this frame (the drain
            // above may have run just before it arrived).
            drain_messages(s);
            #[cfg(feature = "fault-injection")]
            inject_faults(shared, pool, s);
            serve_frame(s, pool, &mut pcm)
        });
        match served {
            None => {
                slots.swap_remove(i);
            }
            Some(false) => {} // Two-stage start: the first LM step has no audio yet.
            Some(true) => {
                let s = &slots[i];
                s.stats.frames.fetch_add(1, Ordering::Relaxed);
                let took = t.elapsed();
                s.stats.record_gen(took.as_secs_f32() * 1e3);
                shared.frame_times.record(took.as_secs_f64());
                last_frame = Instant::now();
            }
        }
    }
}

/// Runs `f` on one stream's slot; a panic marks the stream failed and returns
/// `None` (the caller drops the slot: its generator may be half-updated).
fn guarded<R>(slot: &mut Slot, f: impl FnOnce(&mut Slot) -> R) -> Option<R> {
    match panic::catch_unwind(AssertUnwindSafe(|| f(slot))) {
        Ok(r) => Some(r),
        Err(_) => {
            // The panic hook has already printed the message and location.
            slot.stats.failed.store(true, Ordering::Release);
            None
        }
    }
}

/// Applies queued controls and answers snapshot requests.
fn drain_messages(s: &mut Slot) {
    while let Ok(m) = s.msgs.try_recv() {
        match m {
            Msg::Control(c) => {
                if s.generator.apply(c).is_err() {
                    s.stats.errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            Msg::Snapshot(reply) => {
                let _ = reply.try_send(s.generator.snapshot());
            }
            #[cfg(feature = "fault-injection")]
            Msg::InjectPanic => s.panic_next = true,
        }
    }
}

/// Generates one frame of `s` into its queues; false when no audio came out yet.
fn serve_frame(s: &mut Slot, pool: &StagePools, pcm: &mut [i16]) -> bool {
    let info = s.generator.step(pool, pcm);
    if info.nonfinite > 0 {
        s.stats
            .nonfinite
            .fetch_add(info.nonfinite as u64, Ordering::Relaxed);
    }
    if !info.decoded {
        return false;
    }
    push_frame(&mut s.audio, pcm);
    if let Some(r) = s.record.as_mut() {
        if r.slots() >= FRAME_PCM {
            push_frame(r, pcm);
        } else {
            s.stats.record_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
    true
}

/// The test hooks: a panic on the scheduler thread, or inside a pool task.
#[cfg(feature = "fault-injection")]
fn inject_faults(shared: &Shared, pool: &StagePools, s: &mut Slot) {
    if std::mem::take(&mut s.panic_next) {
        panic!("injected fault: panic while serving a stream");
    }
    if shared.panic_in_pool.swap(false, Ordering::AcqRel) {
        pool.lm().run(64, &|i| {
            if i == 63 {
                panic!("injected fault: panic in a worker-pool task");
            }
        });
    }
}

/// Writes one frame into a queue known to have room.
fn push_frame(q: &mut rtrb::Producer<i16>, pcm: &[i16]) {
    if let Ok(mut chunk) = q.write_chunk(FRAME_PCM) {
        let (a, b) = chunk.as_mut_slices();
        let n = a.len();
        a.copy_from_slice(&pcm[..n]);
        b.copy_from_slice(&pcm[n..]);
        chunk.commit_all();
    }
}
