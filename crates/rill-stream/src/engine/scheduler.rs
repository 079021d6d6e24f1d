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
use smallvec::SmallVec;

use crate::generator::{FrameInfo, Generator};
use crate::pipeline::{StagePools, FRAME_PCM, MAX_TOGETHER};

/// Real-time factor of one stream with these pools: median frame time / 40 ms,
/// after a warm-up, measured exactly as the scheduler will run it.
pub(super) fn measure_rtf(
    lm: &Arc<Mrt2>,
    codec: &Arc<Codec>,
    pool: &StagePools,
    frames: usize,
) -> f32 {
    measure_rtf_together(lm, codec, pool, 1, frames)
}

/// Real-time factor of `streams` streams (at most [`MAX_TOGETHER`]) stepped
/// together as the scheduler steps them ([`Generator::step_together`]): median
/// cycle time / 40 ms, after a warm-up.
pub(super) fn measure_rtf_together(
    lm: &Arc<Mrt2>,
    codec: &Arc<Codec>,
    pool: &StagePools,
    streams: usize,
    frames: usize,
) -> f32 {
    const WARMUP: usize = 3;
    let mut gens: Vec<Generator> = (0..streams)
        .map(|i| Generator::new(lm.clone(), codec.clone(), i as u64, pool))
        .collect();
    let mut pcm = vec![0i16; streams * FRAME_PCM];
    let mut infos = vec![FrameInfo::default(); streams];
    let mut ms = Vec::with_capacity(frames);
    let mut gens: Vec<&mut Generator> = gens.iter_mut().collect();
    let mut outs: Vec<&mut [i16]> = pcm.chunks_exact_mut(FRAME_PCM).collect();
    for i in 0..frames + WARMUP {
        let t = Instant::now();
        if let ([g], [out]) = (&mut gens[..], &mut outs[..]) {
            g.step(pool, out);
        } else {
            Generator::step_together(&mut gens, pool, &mut outs, &mut infos);
        }
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
    let mut pcm = vec![0i16; MAX_TOGETHER * FRAME_PCM];
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
        let mut due = [0usize; MAX_TOGETHER];
        let together = with_room(&slots, &mut due);
        if together >= 2 {
            serve_together(shared, pool, &mut slots, &mut due[..together], &mut pcm);
            last_frame = Instant::now();
            continue;
        }
        let t = Instant::now();
        let served = guarded(&mut slots[i], |s| {
            // Again right before the step: a control sent before the consumer
            // made the room this step fills must reach this frame (the drain
            // above may have run just before it arrived).
            drain_messages(s);
            #[cfg(feature = "fault-injection")]
            inject_faults(shared, pool, s);
            serve_frame(s, pool, &mut pcm[..FRAME_PCM])
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

/// The streams with room for a frame, the least buffered first (at most
/// [`MAX_TOGETHER`], into `due`): how many.
fn with_room(slots: &[Slot], due: &mut [usize; MAX_TOGETHER]) -> usize {
    let mut n = 0;
    for (i, s) in slots.iter().enumerate() {
        let room = s.audio.slots();
        if room < FRAME_PCM {
            continue;
        }
        // Insertion into the short list, kept sorted by room, most first.
        let at = due[..n]
            .iter()
            .position(|&j| slots[j].audio.slots() < room)
            .unwrap_or(n);
        if at >= MAX_TOGETHER {
            continue;
        }
        let end = n.min(MAX_TOGETHER - 1);
        due.copy_within(at..end, at + 1);
        due[at] = i;
        n = (n + 1).min(MAX_TOGETHER);
    }
    n
}

/// Generates one frame of each stream of `due` (indices into `slots`, two or more)
/// in one cycle, their language models stepped together; each stream's controls are
/// applied first under its own panic guard. A panic in the shared step cannot be
/// told to one stream: every stream of the cycle fails (the others play on).
fn serve_together(
    shared: &Shared,
    pool: &StagePools,
    slots: &mut Vec<Slot>,
    due: &mut [usize],
    pcm: &mut [i16],
) {
    due.sort_unstable();
    let mut failed = [false; MAX_TOGETHER];
    for (f, &i) in failed.iter_mut().zip(due.iter()) {
        *f = guarded(&mut slots[i], |s| {
            drain_messages(s);
            #[cfg(feature = "fault-injection")]
            inject_faults(shared, pool, s);
        })
        .is_none();
    }
    let t = Instant::now();
    let mut infos = [FrameInfo::default(); MAX_TOGETHER];
    let mut batch: SmallVec<[&mut Slot; MAX_TOGETHER]> = slots
        .iter_mut()
        .enumerate()
        .filter(|(i, _)| due.iter().zip(&failed).any(|(d, f)| d == i && !f))
        .map(|(_, s)| s)
        .collect();
    let k = batch.len();
    let stepped = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut gens: SmallVec<[&mut Generator; MAX_TOGETHER]> =
            batch.iter_mut().map(|s| &mut s.generator).collect();
        let mut outs: SmallVec<[&mut [i16]; MAX_TOGETHER]> =
            pcm.chunks_exact_mut(FRAME_PCM).take(k).collect();
        Generator::step_together(&mut gens, pool, &mut outs, &mut infos[..k]);
    }));
    let took = t.elapsed();
    for (s, (info, out)) in batch
        .iter_mut()
        .zip(infos.iter().zip(pcm.chunks_exact(FRAME_PCM)))
    {
        if stepped.is_err() {
            s.stats.failed.store(true, Ordering::Release);
        } else if deliver(s, info, out) {
            s.stats.frames.fetch_add(1, Ordering::Relaxed);
            s.stats.record_gen(took.as_secs_f32() * 1e3);
            shared.frame_times.record(took.as_secs_f64());
        }
    }
    drop(batch);
    // Drop the failed streams, highest index first so the others keep theirs.
    for (&i, &f) in due.iter().zip(&failed).rev() {
        if f || stepped.is_err() {
            slots.swap_remove(i);
        }
    }
}

/// Generates one frame of `s` into its queues; false when no audio came out yet.
fn serve_frame(s: &mut Slot, pool: &StagePools, pcm: &mut [i16]) -> bool {
    let info = s.generator.step(pool, pcm);
    deliver(s, &info, pcm)
}

/// A generated frame's reports and audio to `s`'s counters and queues; false when
/// no audio came out yet.
fn deliver(s: &mut Slot, info: &FrameInfo, pcm: &[i16]) -> bool {
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
