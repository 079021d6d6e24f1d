//! The SpectroStream decoder of Magenta RealTime 2: 12 RVQ tokens per 40 ms codec
//! frame → 1920 stereo samples at 48 kHz, in streaming (step) mode and batched mode,
//! computing what the upstream reference computes (spec §4, `mrt2_spec.md`).
//!
//! ```text
//! tokens [12] ─ rvq ─ [256] ─ decoder ─ [4 STFT frames, 480 bins, L_re L_im R_re R_im] ─ lookahead ─ iSTFT ─ [1920, 2]
//! ```
//!
//! * [`Codec`] holds immutable f32 weights (packed for the conv kernels at load) and
//!   is `Send + Sync`; every stream owns a [`CodecState`]. The compute-bound 3×3 and
//!   stride-1 transposed convolutions of `decoder_1..6` run in the Winograd domain
//!   (`winograd.rs`, ≈ 107 dB audio SNR against the reference vs ≈ 109 dB direct);
//!   [`Codec::load_with`] can opt into two-byte weights for the bandwidth-bound
//!   early layers: int16 with per-channel scales ([`CodecPrecision::I16Weights`],
//!   ≈ 86 dB, the live default) or f16 ([`CodecPrecision::F16Weights`], ≈ 64 dB).
//! * [`Codec::step`] decodes one frame. Like the reference it has one codec frame of
//!   latency: the decoder's `Lookahead(4)` masks the first 4 STFT frames, so the first
//!   1920-sample block of a stream is silence.
//! * [`Codec::decode_batched`] decodes a whole sequence (the reference layer mode,
//!   without the latency); it runs the same kernels over chunks of frames and equals
//!   the step output shifted by 1920 samples, bit for bit.
//! * Parallelism comes only from the [`Pool`] argument; results do not depend on the
//!   number of threads.
//! * [`float_to_int16`] is the sampler's output conversion (gain 0.5).
//! * [`Encoder`] goes the other way for continuation prefill: 48 kHz stereo → 25 Hz
//!   frames of 256 → greedy RVQ codes (module [`encoder`], spec §4.8).

#![deny(unsafe_op_in_unsafe_fn)]

mod act;
pub mod config;
mod conv;
mod decoder;
pub mod encoder;
mod error;
mod grid;
mod istft;
mod numerics;
mod pcm;
mod rvq;
mod state;
mod winograd;

/// The convolution kernels (per SIMD tier, with the Winograd tile transforms) live in
/// `rill-kernels`; this crate chooses the convolutions and drives them.
use rill_kernels::conv::grid as kernels;

use rill_checkpoint::Checkpoint;
use rill_kernels::{Isa, Pool};

pub use encoder::{Analysis, Encoder};
pub use error::CodecError;
pub use istft::{BINS, BIN_CHANNELS, HOP};
pub use numerics::Rescale;
pub use pcm::{float_to_int16, OUTPUT_GAIN};
pub use rvq::{level_ids, CODES, DIM as EMBEDDING_DIM, LEVELS, RESERVED_IDS};
pub use state::CodecState;

use decoder::{Decoder, STFT_PER_FRAME};
use istft::Istft;
use kernels::EarlyWeights;
use numerics::Numerics;
use rvq::Codebook;

/// Output sample rate.
pub const SAMPLE_RATE: u32 = 48_000;
/// Stereo samples per codec frame (40 ms).
pub const SAMPLES_PER_FRAME: usize = STFT_PER_FRAME * HOP;
/// Stereo samples by which [`Codec::step`]'s audio lags [`Codec::decode_batched`]
/// (upstream's streaming decoder does the same): the decoder's `Lookahead(4)`
/// masks its first 4 STFT frames, so a stream starts with 1920 samples of silence
/// and step mode from sample 1920 on equals batched mode. Nothing is held back to
/// flush: batched mode, too, makes `(T − 1)·1920` samples of `T` frames, because
/// the last frame's audio needs the frame after it.
pub const OUTPUT_DELAY: usize = SAMPLES_PER_FRAME;
/// STFT frames per codec frame.
pub const STFT_FRAMES_PER_FRAME: usize = STFT_PER_FRAME;
/// Floats of one STFT frame (`480 bins × 4`).
pub const STFT_FRAME_LEN: usize = BINS * BIN_CHANNELS;

/// Codec frames per chunk in [`Codec::decode_batched`]: larger chunks reuse the
/// early layers' weights over more rows; 4 keeps the scratch near 50 MB.
const BATCH_CHUNK: usize = 4;

/// Result of [`Codec::decode_batched`] for `T` codec frames.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchedOutput {
    /// `(T−1)·1920` stereo samples, interleaved `[L, R]`, before the output gain.
    pub audio: Vec<f32>,
    /// `[4T−4, 480, 4]` decoder STFT (empty if not requested).
    pub stft: Vec<f32>,
}

/// The SpectroStream decoder with its weights (immutable, shareable between threads).
pub struct Codec {
    codebook: Codebook,
    decoder: Decoder,
    istft: Istft,
    isa: Isa,
    precision: CodecPrecision,
}

/// Weight precision of a [`Codec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CodecPrecision {
    /// f32 weights everywhere: what [`Codec::load`] gives (parity ≈ 107 dB audio SNR).
    #[default]
    F32,
    /// IEEE half weights (f32 bias, f32 activations and accumulation) for the early,
    /// weight-bandwidth-bound layers — input_layer, the residual unit, decoder_0 and
    /// decoder_1's transposed conv and shortcut, ~120 MB of f32 weights streamed per
    /// step — halving their bytes; the later, compute-bound layers stay f32.
    /// Lower fidelity: ≈ 64 dB audio SNR vs the reference on the test fixtures (see
    /// the crate's `early_weights_parity` test), for ≈ 15 % less time per frame.
    F16Weights,
    /// int16 weights with one scale per output channel for the same early layers
    /// (same bytes as f16, widened and scaled in registers): ≈ 88 dB weight
    /// precision instead of f16's ≈ 66 dB, so the audio stays much closer to the
    /// reference (test `early_weights_parity`: 86–87 dB) at f16's speed.
    I16Weights,
    /// The numerics of an fp16 decoder: every weight and every stored activation
    /// rounded to IEEE half, products accumulated in f32 (what ARMv8.2 `FMLAL` and
    /// fp16 matrix units compute), with the two-stage [`Rescale::FP16`] by default.
    /// Without the rescale the real checkpoint's activations (≈ 1.5e7) overflow
    /// half's range. On the test fixtures: cosine ≥ 0.9999 against the f32 decoder
    /// (test `fp16_rescale`). On ARM CPUs with FP16 arithmetic (`fp16`) the
    /// convolutions compute in half precision ([`Codec::half_arithmetic`]: half FMAs,
    /// 8 lanes per instruction, partial sums of 8 products added in f32); elsewhere
    /// the f32 kernels compute the products of the half values (no speed gain).
    F16,
}

impl CodecPrecision {
    /// Every precision, in the order of the quality table.
    pub const ALL: [CodecPrecision; 4] = [
        CodecPrecision::F32,
        CodecPrecision::I16Weights,
        CodecPrecision::F16Weights,
        CodecPrecision::F16,
    ];

    /// The short name (`f32`, `i16`, `f16`, `fp16`): what `--codec` and `codec=` take.
    pub fn name(self) -> &'static str {
        match self {
            CodecPrecision::F32 => "f32",
            CodecPrecision::I16Weights => "i16",
            CodecPrecision::F16Weights => "f16",
            CodecPrecision::F16 => "fp16",
        }
    }

    /// The precision of a [`CodecPrecision::name`].
    pub fn from_name(name: &str) -> Option<CodecPrecision> {
        CodecPrecision::ALL.into_iter().find(|p| p.name() == name)
    }

    /// What the precision stores, for reports (`int16 early weights`).
    pub fn describe(self) -> &'static str {
        match self {
            CodecPrecision::F32 => "f32",
            CodecPrecision::F16Weights => "f16 early weights",
            CodecPrecision::I16Weights => "int16 early weights",
            CodecPrecision::F16 => "fp16 activations and weights (rescaled)",
        }
    }
}

/// The largest `|activation|` of one decoder stage's output ([`Codec::activation_peaks`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActivationPeak {
    /// Stage name (`input_layer`, `decoder_3/conv3x3`, …, `output_layer`).
    pub stage: &'static str,
    /// At native scale (what the plain f32 decoder holds).
    pub native: f32,
    /// As stored: divided by the stage's rescale, rounded to half in fp16.
    pub stored: f32,
}

/// Load options of [`Codec::load_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct CodecOptions {
    pub precision: CodecPrecision,
    /// SIMD tier of the kernels (lowered to what the CPU supports); `None` = the
    /// active tier (`rill_kernels::isa::active`).
    pub isa: Option<Isa>,
    /// Activation rescale; `None` = the precision's default ([`Rescale::FP16`] for
    /// [`CodecPrecision::F16`], none otherwise). In f32 any rescale gives the same
    /// bits as none.
    pub rescale: Option<Rescale>,
}

impl std::fmt::Debug for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Codec(SpectroStream decoder, {} kernels, {:?})",
            self.isa.name(),
            self.precision
        )
    }
}

impl Codec {
    /// Loads `params/soundstream/...` (the first 12 RVQ levels, the decoder convs) from
    /// the checkpoint and packs the weights for the conv kernels of the active SIMD tier.
    pub fn load(ckpt: &Checkpoint) -> Result<Codec, CodecError> {
        Self::load_with_isa(ckpt, rill_kernels::isa::active())
    }

    /// As [`Codec::load`] with an explicit SIMD tier (lowered to what the CPU supports).
    pub fn load_with_isa(ckpt: &Checkpoint, isa: Isa) -> Result<Codec, CodecError> {
        Self::load_with(
            ckpt,
            CodecOptions {
                isa: Some(isa),
                ..CodecOptions::default()
            },
        )
    }

    /// As [`Codec::load`] with explicit [`CodecOptions`] (weight precision, SIMD tier).
    pub fn load_with(ckpt: &Checkpoint, options: CodecOptions) -> Result<Codec, CodecError> {
        let isa = options
            .isa
            .unwrap_or_else(rill_kernels::isa::active)
            .min(Isa::detect());
        let (early, f16) = match options.precision {
            CodecPrecision::F32 => (None, false),
            CodecPrecision::F16Weights => (Some(EarlyWeights::F16), false),
            CodecPrecision::I16Weights => (Some(EarlyWeights::I16), false),
            // The weights are rounded to half at load; the f16 panels halve the
            // early layers' bytes on the tiers that read them.
            CodecPrecision::F16 => (Some(EarlyWeights::F16), true),
        };
        let rescale = options
            .rescale
            .unwrap_or(if f16 { Rescale::FP16 } else { Rescale::NONE });
        if rescale.first_log2.max(rescale.second_log2) > Rescale::MAX_LOG2 {
            return Err(CodecError::BadRescale { rescale });
        }
        let numerics = Numerics { rescale, f16 };
        Ok(Codec {
            codebook: Codebook::load(ckpt)?,
            decoder: Decoder::load(ckpt, early, numerics, isa)?,
            istft: Istft::new(),
            isa,
            precision: options.precision,
        })
    }

    /// The weight precision chosen at load.
    pub fn precision(&self) -> CodecPrecision {
        self.precision
    }

    /// The SIMD tier the conv kernels use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Whether the convolutions compute in half precision: [`CodecPrecision::F16`]
    /// on a CPU with FP16 arithmetic (NEON `fp16`). Elsewhere the fp16 codec's
    /// products of half values are computed by the f32 kernels.
    pub fn half_arithmetic(&self) -> bool {
        self.decoder.half_arithmetic()
    }

    /// A fresh stream state (zero history, lookahead armed) for [`Codec::step`].
    pub fn new_state(&self) -> CodecState {
        self.state_for(1)
    }

    fn state_for(&self, chunk_frames: usize) -> CodecState {
        CodecState::new(self.decoder.buffers(chunk_frames), self.istft.scratch())
    }

    /// The RVQ embedding of one frame: `out[256] = Σ_k CB[k][id_k − 6 − 1024k]`.
    /// An id outside its level's range ([`level_ids`]) is an error.
    pub fn rvq_embedding(&self, tokens: &[u32; LEVELS], out: &mut [f32]) -> Result<(), CodecError> {
        rvq::check_ids(tokens)?;
        self.codebook.embed(tokens, out);
        Ok(())
    }

    /// Runs the decoder on `frames` in `state`'s buffers, calling `lap` after each
    /// stage.
    fn decode(
        &self,
        state: &mut CodecState,
        frames: &[[u32; LEVELS]],
        pool: &Pool,
        lap: &mut dyn FnMut(&'static str, decoder::Stage<'_>),
    ) {
        self.decoder
            .run_chunk(self.isa, &self.codebook, frames, &mut state.bufs, pool, lap);
    }

    /// Decodes one 40 ms frame in streaming mode.
    ///
    /// `tokens` are the 12 unique ids (level k: `6 + 1024k + code`, [`level_ids`]);
    /// an id outside its level is an error that changes nothing. `audio` receives
    /// 1920 stereo samples interleaved `[L, R]` (3840 floats, before the 0.5 output
    /// gain); `stft`, if given, this frame's decoder output `[4, 480, 4]` (7680
    /// floats; also written for frames the lookahead masks). Allocates nothing.
    ///
    /// # Panics
    /// If `audio` or `stft` have the wrong length.
    pub fn step(
        &self,
        state: &mut CodecState,
        tokens: &[u32; LEVELS],
        audio: &mut [f32],
        stft: Option<&mut [f32]>,
        pool: &Pool,
    ) -> Result<(), CodecError> {
        rvq::check_ids(tokens)?;
        assert_eq!(
            audio.len(),
            SAMPLES_PER_FRAME * 2,
            "audio buffer must hold 1920 stereo samples"
        );
        if let Some(s) = &stft {
            assert_eq!(
                s.len(),
                STFT_PER_FRAME * STFT_FRAME_LEN,
                "stft buffer must hold [4, 480, 4]"
            );
        }
        self.decode(state, std::slice::from_ref(tokens), pool, &mut |_, _| {});
        self.emit(state, 1, audio, stft);
        Ok(())
    }

    /// As [`Codec::step`] (without the STFT output), returning the time of each decoder
    /// stage as measured by `clock` (ms; e.g. wall or thread CPU time). For
    /// benchmarks; allocates.
    #[doc(hidden)]
    pub fn step_profiled(
        &self,
        state: &mut CodecState,
        tokens: &[u32; LEVELS],
        audio: &mut [f32],
        pool: &Pool,
        clock: &dyn Fn() -> f64,
    ) -> Result<Vec<(&'static str, f64)>, CodecError> {
        rvq::check_ids(tokens)?;
        let mut laps = Vec::with_capacity(32);
        let mut last = clock();
        self.decode(state, std::slice::from_ref(tokens), pool, &mut |name, _| {
            let now = clock();
            laps.push((name, now - last));
            last = now;
        });
        self.emit(state, 1, audio, None);
        laps.push(("istft", clock() - last));
        Ok(laps)
    }

    /// The largest `|activation|` at native scale of every decoder stage's output
    /// over a step-mode decode of `frames` (stage names as in [`Codec::step_profiled`];
    /// `inf` if a stage overflowed or went NaN). What the rescale constants are chosen
    /// from: run it on real generated codes with an [`CodecPrecision::F32`] codec.
    pub fn activation_peaks(
        &self,
        frames: &[[u32; LEVELS]],
        pool: &Pool,
    ) -> Result<Vec<ActivationPeak>, CodecError> {
        frames.iter().try_for_each(rvq::check_ids)?;
        let mut peaks: Vec<ActivationPeak> = Vec::with_capacity(32);
        let mut state = self.new_state();
        let mut audio = vec![0f32; SAMPLES_PER_FRAME * 2];
        for ids in frames {
            let mut stage = 0;
            self.decode(
                &mut state,
                std::slice::from_ref(ids),
                pool,
                &mut |name, s| {
                    let stored = numerics::peak_rows(s.out, s.rows);
                    let native = stored / s.scale;
                    match peaks.get_mut(stage) {
                        Some(e) => {
                            e.native = e.native.max(native);
                            e.stored = e.stored.max(stored);
                        }
                        None => peaks.push(ActivationPeak {
                            stage: name,
                            native,
                            stored,
                        }),
                    }
                    stage += 1;
                },
            );
            self.emit(&mut state, 1, &mut audio, None);
        }
        Ok(peaks)
    }

    /// Lookahead mask and inverse STFT of the chunk just decoded into `state`.
    fn emit(
        &self,
        state: &mut CodecState,
        frames: usize,
        audio: &mut [f32],
        stft: Option<&mut [f32]>,
    ) {
        let n = frames * STFT_PER_FRAME;
        let spec = &state.bufs.stft.data[..n * STFT_FRAME_LEN];
        if let Some(s) = stft {
            s.copy_from_slice(spec);
        }
        for (frame, out) in spec
            .chunks_exact(STFT_FRAME_LEN)
            .zip(audio.chunks_exact_mut(HOP * 2))
        {
            state.countdown = (state.countdown - 1).max(0);
            let valid = state.countdown == 0;
            self.istft
                .frame(frame, valid, &mut state.tail, out, &mut state.istft);
        }
    }

    /// Decodes a whole sequence at once (offline rendering): the reference layer mode.
    /// Returns `(T−1)·1920` stereo samples and the `[4T−4, 480, 4]` STFT; equal to the
    /// step-mode output from sample 1920 on (no lookahead latency).
    /// Every id is checked before anything is decoded.
    pub fn decode_batched(
        &self,
        frames: &[[u32; LEVELS]],
        pool: &Pool,
    ) -> Result<BatchedOutput, CodecError> {
        self.batched(frames, true, pool)
    }

    /// As [`Codec::decode_batched`] without keeping the STFT (4× less memory than it).
    pub fn decode_batched_audio(
        &self,
        frames: &[[u32; LEVELS]],
        pool: &Pool,
    ) -> Result<Vec<f32>, CodecError> {
        Ok(self.batched(frames, false, pool)?.audio)
    }

    fn batched(
        &self,
        frames: &[[u32; LEVELS]],
        keep_stft: bool,
        pool: &Pool,
    ) -> Result<BatchedOutput, CodecError> {
        frames.iter().try_for_each(rvq::check_ids)?;
        let t = frames.len();
        let frame_audio = SAMPLES_PER_FRAME * 2;
        let frame_stft = STFT_PER_FRAME * STFT_FRAME_LEN;
        let mut audio = vec![0f32; t * frame_audio];
        let mut stft = vec![0f32; if keep_stft { t * frame_stft } else { 0 }];
        let mut state = self.state_for(BATCH_CHUNK.min(t.max(1)));
        for (c, chunk) in frames.chunks(BATCH_CHUNK).enumerate() {
            let (f0, f1) = (c * BATCH_CHUNK, c * BATCH_CHUNK + chunk.len());
            self.decode(&mut state, chunk, pool, &mut |_, _| {});
            let s = keep_stft.then(|| &mut stft[f0 * frame_stft..f1 * frame_stft]);
            self.emit(
                &mut state,
                chunk.len(),
                &mut audio[f0 * frame_audio..f1 * frame_audio],
                s,
            );
        }
        // Drop the frame the lookahead masks: what remains is the layer-mode output.
        let skip = |v: &mut Vec<f32>, n: usize| {
            v.drain(..n.min(v.len()));
        };
        skip(&mut audio, frame_audio);
        if keep_stft {
            skip(&mut stft, frame_stft);
        }
        Ok(BatchedOutput { audio, stft })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn codec_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<super::Codec>();
        check::<super::CodecState>();
    }
}
