//! The staged pipeline every model runs on: a [`FrameModel`] (MRT2's language
//! model, Magpie's decoder) makes frames of codes, a [`Vocoder`] (SpectroStream,
//! NanoCodec) turns them into audio, and [`Staging`] holds the frames between the
//! two stages. MRT2's [`crate::FramePipeline`] steps it one frame per cycle;
//! Magpie's [`crate::tts::Speaking`] in groups of frames, a ramp of single frames
//! first. A new model is a [`FrameModel`] impl and, if its vocoder is new, a
//! [`Vocoder`] impl; the cycle, the overlap and the flush are written here once.
//!
//! A cycle makes frames on the model's pool and decodes frames on the vocoder's:
//! * sequential: the frames made are decoded right after, on the same pool;
//! * two stages: the frames made by the previous cycle are decoded while the model
//!   makes the next ones ([`StagePools::overlap`]); what a cycle makes waits
//!   ("pending") for the next cycle, or for [`Staging::decode_pending`] (the
//!   end of a stream or sentence, or a first frame wanted at once).
//!
//! Both arrangements decode the same frames in the same order, so the audio is the
//! same bits. The buffers are reused: a cycle allocates nothing once they have
//! grown to the largest group.

use std::time::{Duration, Instant};

use rill_kernels::Pool;

use crate::pipeline::{StagePools, Stages};

/// Makes frames of codes, one model step each; the host owns the model's session
/// and hands the stage a view of it for a cycle.
pub trait FrameModel: Send {
    type Frame: Copy + Send + Sync;
    type Error: Send;
    /// Makes up to `n` frames on `pool`, appending them to `made`; whether the
    /// stream ended (no frame follows these).
    fn make(
        &mut self,
        pool: &Pool,
        n: usize,
        made: &mut Vec<Self::Frame>,
    ) -> Result<bool, Self::Error>;
}

/// Turns frames of codes into audio, keeping its streaming state and the audio of
/// its last call for the host to read.
pub trait Vocoder: Send {
    type Frame: Copy + Send + Sync;
    type Error: Send;
    /// Decodes `frames` (at least one), in order, on `pool`.
    fn decode(&mut self, frames: &[Self::Frame], pool: &Pool) -> Result<(), Self::Error>;
}

/// What one [`Staging::step`] did: both stages' results and times (they overlap
/// with two stages). Which frames were made and decoded: [`Staging::made`],
/// [`Staging::decoded`].
#[derive(Debug)]
pub struct Cycle<EM, EV> {
    /// The model's result: whether the stream ended.
    pub made: Result<bool, EM>,
    /// The vocoder's result (`Ok` when nothing was due).
    pub decoded: Result<(), EV>,
    pub model_time: Duration,
    pub vocoder_time: Duration,
}

/// Runs `f`, with the time it took.
fn timed<R>(f: impl FnOnce() -> R) -> (R, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

/// Frames made and not yet decoded, and the frames of the last cycle.
#[derive(Debug, Clone)]
pub struct Staging<T> {
    /// Made, waiting for the vocoder (two stages only).
    pending: Vec<T>,
    /// Decoded by the last cycle or [`Staging::decode_pending`].
    decoded: Vec<T>,
    /// Made by the last cycle.
    made: Vec<T>,
}

impl<T: Copy + Send + Sync> Staging<T> {
    /// Room for groups of `frames` without allocating.
    pub fn with_capacity(frames: usize) -> Staging<T> {
        Staging {
            pending: Vec::with_capacity(frames),
            decoded: Vec::with_capacity(frames),
            made: Vec::with_capacity(frames),
        }
    }

    /// Frames made and not yet decoded.
    pub fn pending(&self) -> &[T] {
        &self.pending
    }

    /// Frames the last cycle (or [`Staging::decode_pending`]) decoded, in order.
    pub fn decoded(&self) -> &[T] {
        &self.decoded
    }

    /// Frames the last cycle made.
    pub fn made(&self) -> &[T] {
        &self.made
    }

    /// Replaces the frames waiting for the vocoder (restoring a snapshot).
    pub fn set_pending(&mut self, frames: impl IntoIterator<Item = T>) {
        self.pending.clear();
        self.pending.extend(frames);
    }

    /// Forgets every frame (a fresh vocoder state).
    pub fn clear(&mut self) {
        self.pending.clear();
        self.decoded.clear();
        self.made.clear();
    }

    /// One cycle: `make(pool, made)` appends the frames it makes; `decode(frames,
    /// pool)` decodes the frames due (none: it should do nothing). Sequentially the
    /// frames due are the ones just made (also when `make` failed part way); with two
    /// stages they are the ones the previous cycle left pending, and the new ones
    /// are left pending. Returns both stages' results.
    pub fn cycle<M: Send, D: Send>(
        &mut self,
        pools: &StagePools,
        make: impl FnOnce(&Pool, &mut Vec<T>) -> M + Send,
        decode: impl FnOnce(&[T], &Pool) -> D + Send,
    ) -> (M, D) {
        self.begin(pools.stages());
        let Staging {
            pending,
            decoded,
            made,
        } = self;
        match pools.stages() {
            Stages::Sequential => {
                let m = make(pools.lm(), made);
                decoded.extend_from_slice(made);
                (m, decode(decoded, pools.codec()))
            }
            Stages::TwoStage => {
                let due: &[T] = decoded;
                let r = pools.overlap(|lm| make(lm, made), |cp| decode(due, cp));
                pending.extend_from_slice(made);
                r
            }
        }
    }

    /// The start of a cycle: with two stages the frames the previous cycle left
    /// pending become [`Staging::decoded`], the frames due; sequentially none are
    /// due yet. For a cycle whose frames are made outside [`Staging::cycle`]
    /// (several streams' models stepped together), which then hands them to
    /// [`Staging::made_now`].
    pub fn begin(&mut self, stages: Stages) {
        self.made.clear();
        self.decoded.clear();
        if stages == Stages::TwoStage {
            std::mem::swap(&mut self.pending, &mut self.decoded);
        }
    }

    /// The frames made in a cycle opened with [`Staging::begin`]: sequentially they
    /// are due now (decode [`Staging::decoded`] next); with two stages they wait
    /// for the next cycle.
    pub fn made_now(&mut self, stages: Stages, frames: &[T]) {
        self.made.extend_from_slice(frames);
        match stages {
            Stages::Sequential => self.decoded.extend_from_slice(frames),
            Stages::TwoStage => self.pending.extend_from_slice(frames),
        }
    }

    /// One cycle of `model` (up to `n` frames) and `vocoder` (the frames due, see
    /// [`Staging::cycle`]).
    pub fn step<M, V>(
        &mut self,
        pools: &StagePools,
        model: &mut M,
        n: usize,
        vocoder: &mut V,
    ) -> Cycle<M::Error, V::Error>
    where
        M: FrameModel<Frame = T>,
        V: Vocoder<Frame = T>,
    {
        let ((made, model_time), (decoded, vocoder_time)) = self.cycle(
            pools,
            |pool, made| timed(|| model.make(pool, n, made)),
            |due, pool| decode_due(vocoder, due, pool),
        );
        Cycle {
            made,
            decoded,
            model_time,
            vocoder_time,
        }
    }

    /// Decodes the frames due in a cycle opened with [`Staging::begin`] (its
    /// [`Staging::decoded`]; none: nothing) with `vocoder` on `pool`; with the time
    /// it took.
    pub fn decode_due<V: Vocoder<Frame = T>>(
        &self,
        vocoder: &mut V,
        pool: &Pool,
    ) -> (Result<(), V::Error>, Duration) {
        decode_due(vocoder, &self.decoded, pool)
    }

    /// Decodes the pending frames now with `vocoder`, the model's stage lending its
    /// threads (`None` when nothing was pending); with the time it took.
    pub fn flush<V: Vocoder<Frame = T>>(
        &mut self,
        pools: &StagePools,
        vocoder: &mut V,
    ) -> Option<(Result<(), V::Error>, Duration)> {
        self.decode_pending(pools, |due, pool| decode_due(vocoder, due, pool))
    }

    /// Decodes the pending frames now, the model's stage lending its threads
    /// (`None` when nothing was pending); they become [`Staging::decoded`].
    pub fn decode_pending<D: Send>(
        &mut self,
        pools: &StagePools,
        decode: impl FnOnce(&[T], &Pool) -> D + Send,
    ) -> Option<D> {
        if self.pending.is_empty() {
            return None;
        }
        self.decoded.clear();
        std::mem::swap(&mut self.pending, &mut self.decoded);
        let due: &[T] = &self.decoded;
        let ((), d) = pools.overlap(|_| (), |cp| decode(due, cp));
        Some(d)
    }
}

/// Decodes `due` (nothing when empty), timed.
fn decode_due<V: Vocoder>(
    vocoder: &mut V,
    due: &[V::Frame],
    pool: &Pool,
) -> (Result<(), V::Error>, Duration) {
    if due.is_empty() {
        (Ok(()), Duration::ZERO)
    } else {
        timed(|| vocoder.decode(due, pool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Makes `n` numbered frames per cycle; decodes by recording what came.
    fn run(stages: Stages, cycles: usize, n: usize) -> Vec<u32> {
        let pools = StagePools::new(stages, 2, None);
        let mut s = Staging::with_capacity(n);
        let (mut next, mut out) = (0u32, Vec::new());
        for _ in 0..cycles {
            let ((), got) = s.cycle(
                &pools,
                |_, made| {
                    made.extend(next..next + n as u32);
                    next += n as u32;
                },
                |due, _| due.to_vec(),
            );
            assert_eq!(got, s.decoded());
            assert_eq!(s.made().len(), n);
            out.extend(got);
        }
        if let Some(rest) = s.decode_pending(&pools, |due, _| due.to_vec()) {
            out.extend(rest);
        }
        assert!(s.pending().is_empty());
        out
    }

    #[test]
    fn both_arrangements_decode_every_frame_once_in_order() {
        for n in [1, 3] {
            let want: Vec<u32> = (0..5 * n as u32).collect();
            assert_eq!(run(Stages::Sequential, 5, n), want);
            assert_eq!(run(Stages::TwoStage, 5, n), want);
        }
    }

    #[test]
    fn two_stages_decode_the_previous_cycle() {
        let pools = StagePools::new(Stages::TwoStage, 2, None);
        let mut s = Staging::with_capacity(1);
        let ((), first) = s.cycle(&pools, |_, m| m.push(7u32), |due, _| due.to_vec());
        assert!(first.is_empty());
        assert_eq!(s.pending(), &[7]);
        let ((), second) = s.cycle(&pools, |_, m| m.push(8), |due, _| due.to_vec());
        assert_eq!(second, [7]);
        assert_eq!(s.pending(), &[8]);
        s.set_pending([1, 2]);
        assert_eq!(
            s.decode_pending(&pools, |due, _| due.to_vec()),
            Some(vec![1, 2])
        );
        assert_eq!(s.decode_pending(&pools, |due, _| due.to_vec()), None);
    }
}
