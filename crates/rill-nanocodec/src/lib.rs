//! The NanoCodec 22 kHz decoder of Magpie TTS (`nvidia/nemo-nano-codec-22khz-1.89kbps-21.5fps`):
//! 8 FSQ codes per 46.4 ms frame → 1024 samples at 22.05 kHz, computing what NeMo's
//! `AudioCodecModel.decode` computes (spec §5, `magpie_spec.md`).
//!
//! ```text
//! codes [8] ─ FSQ ─ [32] ─ pre_conv ─ 5 × (HalfSnake, ConvTranspose, HiFiGAN ResLayer) ─ HalfSnake ─ post_conv ─ clamp ─ [1024]
//! ```
//!
//! * [`Weights`] holds the folded f32 weights (weight norm applied, `1/(α+1e-9)`
//!   precomputed); a loader fills it from a [`StateDict`] in torch's layout
//!   ([`Weights::from_state_dict`], validating every key and shape at once), e.g.
//!   from a safetensors file ([`Weights::load_safetensors`]). [`state_dict`] also
//!   synthesises the oracle's random weights for a seed, bit-exact, and writes them.
//! * [`load`] reads the files users have: NeMo's `.nemo` and NVIDIA's decoder GGUF.
//! * [`NanoCodec`] holds the weights packed for the convolution kernels of one SIMD
//!   tier and is `Send + Sync`; every stream owns a [`CodecState`].
//! * [`NanoCodec::step`] decodes one frame: the decoder is fully causal, so every
//!   frame's audio comes out as soon as its codes exist (no lookahead, no window
//!   re-decoding). [`NanoCodec::decode`] decodes a whole utterance with the same
//!   kernels over chunks of frames and equals the concatenated steps bit for bit.
//! * Parallelism comes only from the [`Pool`] argument; results do not depend on the
//!   number of threads.
//!
//! Numerics (tests `parity`, `streaming`): against NeMo on the oracle's random
//! weights the 32-frame waveform differs by ≤ 1.2e-5 max, 2.3e-6 RMS on every tier
//! (spec gate 2e-4 / 2e-5). The convolutions are direct implicit GEMMs in f32 (one
//! FMA chain per output; AVX-512 and AVX2 give identical bits), the sine of the
//! snake is Cephes `sinf` evaluated without FMA so it is identical on every tier.
//! Cost: 1.22 GMAC per frame, > 99 % in the residual convolutions; stage 0 (432
//! channels, 8 rows per frame) streams 94 MB of weights per frame and is bound by
//! memory bandwidth, the later stages by FMA throughput.

#![deny(unsafe_op_in_unsafe_fn)]

mod buffers;
pub mod config;
mod decoder;
mod error;
pub mod fsq;
pub mod load;
mod pcm;
mod state;
pub mod state_dict;
mod walk;
pub mod weights;

/// The convolution kernels (per SIMD tier, with their Winograd and HalfSnake) live in
/// `rill-kernels`; this crate chooses the convolutions and drives them.
use rill_kernels::conv::causal as kernels;

use rill_kernels::{Isa, Pool};

pub use config::{Config, CODEBOOKS, CODEBOOK_SIZE, LATENT_DIM, SAMPLES_PER_FRAME, SAMPLE_RATE};
pub use error::{CodecError, Problem};
pub use pcm::{float_to_int16, frame_to_int16};
pub use state::CodecState;
pub use state_dict::StateDict;
pub use weights::Weights;

use decoder::Decoder;

/// Frames per chunk of [`NanoCodec::decode`] (its buffers take ≈ 9 MB per frame of chunk).
const BATCH_CHUNK: usize = 4;

/// The NanoCodec decoder with packed weights (immutable, shareable between threads).
pub struct NanoCodec {
    decoder: Decoder,
    isa: Isa,
}

impl std::fmt::Debug for NanoCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NanoCodec(22 kHz decoder, {} kernels)", self.isa.name())
    }
}

impl NanoCodec {
    /// Packs `weights` for the active SIMD tier (`rill_kernels::isa::active`);
    /// weights with [`Weights::problems`] are refused, every problem named.
    pub fn new(weights: &Weights) -> Result<NanoCodec, CodecError> {
        NanoCodec::with_isa(weights, rill_kernels::isa::active())
    }

    /// As [`NanoCodec::new`] for `isa` (lowered to what the CPU supports).
    pub fn with_isa(weights: &Weights, isa: Isa) -> Result<NanoCodec, CodecError> {
        let problems = weights.problems();
        if !problems.is_empty() {
            return Err(CodecError::Invalid {
                source_name: "the given NanoCodec weights".into(),
                problems,
            });
        }
        let isa = isa.min(Isa::detect());
        Ok(NanoCodec {
            decoder: Decoder::new(weights, kernels::reads_half_panels(isa)),
            isa,
        })
    }

    /// Loads a safetensors file in the torch state-dict layout (see [`Weights::load_safetensors`]).
    pub fn load_safetensors(path: &std::path::Path) -> Result<NanoCodec, CodecError> {
        NanoCodec::new(&Weights::load_safetensors(path)?)
    }

    /// Residual convolutions streamed as IEEE half: those of the bandwidth-bound
    /// stage 0, when the tier reads half panels (x86) and every weight is exactly
    /// a half (as in NVIDIA's F16 GGUF). The results are the same bits either way.
    pub fn half_weight_convs(&self) -> usize {
        self.decoder.half_convs()
    }

    /// The SIMD tier of the convolution kernels.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// A fresh stream state (zero history: the reference's zero left padding) for
    /// one frame per [`NanoCodec::step`].
    pub fn new_state(&self) -> CodecState {
        self.new_stream_state(1)
    }

    /// A fresh stream state for [`NanoCodec::step_frames`] calls of up to
    /// `frames_per_call` frames (at least 1); its scratch grows ≈ 9 MB per frame.
    pub fn new_stream_state(&self, frames_per_call: usize) -> CodecState {
        CodecState::new(self.decoder.buffers(frames_per_call.max(1)))
    }

    /// Decodes one frame in streaming mode, advancing `state`. Codes must be
    /// `< 2016` (else an error and `state` is unchanged). Allocates nothing.
    pub fn step(
        &self,
        state: &mut CodecState,
        codes: &[u32; CODEBOOKS],
        audio: &mut [f32; SAMPLES_PER_FRAME],
        pool: &Pool,
    ) -> Result<(), CodecError> {
        self.step_probed(state, codes, audio, pool, &mut |_, _, _| {})
    }

    /// As [`NanoCodec::step`], handing every stage's output to
    /// `probe(name, channels, rows × channels)` (for profiles: time between calls).
    #[doc(hidden)]
    pub fn step_probed(
        &self,
        state: &mut CodecState,
        codes: &[u32; CODEBOOKS],
        audio: &mut [f32; SAMPLES_PER_FRAME],
        pool: &Pool,
        probe: &mut dyn FnMut(&str, usize, &[f32]),
    ) -> Result<(), CodecError> {
        self.stream_chunk(state, std::slice::from_ref(codes), audio, pool, probe)
    }

    /// Decodes `frames.len()` consecutive frames in streaming mode (1 to the
    /// state's `frames_per_call`), `1024` samples each into `audio`: the same bits
    /// as one [`NanoCodec::step`] per frame, for less work per frame (stage 0
    /// streams its weights once per call). Invalid codes or a wrong count are an
    /// error and leave `state` unchanged. Allocates nothing.
    pub fn step_frames(
        &self,
        state: &mut CodecState,
        frames: &[[u32; CODEBOOKS]],
        audio: &mut [f32],
        pool: &Pool,
    ) -> Result<(), CodecError> {
        self.stream_chunk(state, frames, audio, pool, &mut |_, _, _| {})
    }

    fn stream_chunk(
        &self,
        state: &mut CodecState,
        frames: &[[u32; CODEBOOKS]],
        audio: &mut [f32],
        pool: &Pool,
        probe: &mut dyn FnMut(&str, usize, &[f32]),
    ) -> Result<(), CodecError> {
        let max = state.bufs.max_frames;
        if frames.is_empty() || frames.len() > max {
            return Err(CodecError::ChunkSize {
                given: frames.len(),
                max,
            });
        }
        let n = frames.len() * SAMPLES_PER_FRAME;
        if audio.len() != n {
            return Err(CodecError::AudioLength {
                frames: frames.len(),
                given: audio.len(),
            });
        }
        for f in frames {
            fsq::check_codes(f)?;
        }
        self.decoder
            .run_chunk(self.isa, frames, &mut state.bufs, pool, probe);
        audio.copy_from_slice(&state.bufs.audio[..n]);
        Ok(())
    }

    /// Decodes a whole utterance (`frames[f]` = the 8 codes of frame `f`): `1024·F`
    /// samples, equal to the streaming steps' output.
    pub fn decode(&self, frames: &[[u32; CODEBOOKS]], pool: &Pool) -> Result<Vec<f32>, CodecError> {
        self.decode_probed(frames, BATCH_CHUNK, pool, &mut |_, _, _| {})
    }

    /// As [`NanoCodec::decode`] in chunks of `chunk` frames, handing every stage's
    /// output of every chunk to `probe(name, channels, rows × channels)`. For tests.
    #[doc(hidden)]
    pub fn decode_probed(
        &self,
        frames: &[[u32; CODEBOOKS]],
        chunk: usize,
        pool: &Pool,
        probe: &mut dyn FnMut(&str, usize, &[f32]),
    ) -> Result<Vec<f32>, CodecError> {
        for f in frames {
            fsq::check_codes(f)?;
        }
        let chunk = chunk.clamp(1, frames.len().max(1));
        let mut bufs = self.decoder.buffers(chunk);
        let mut audio = Vec::with_capacity(frames.len() * SAMPLES_PER_FRAME);
        for part in frames.chunks(chunk) {
            self.decoder
                .run_chunk(self.isa, part, &mut bufs, pool, probe);
            audio.extend_from_slice(&bufs.audio[..part.len() * SAMPLES_PER_FRAME]);
        }
        Ok(audio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<super::NanoCodec>();
        check::<super::CodecState>();
    }

    /// Weights as NVIDIA's F16 GGUF holds them: stage 0's 18 residual convs are
    /// streamed as half on the x86 tiers, and a frame decodes to the same bits as
    /// with f32 panels. Random f32 weights are never converted.
    #[test]
    fn half_weights_decode_the_same_bits() {
        let mut w = Weights::synthetic(3);
        assert_eq!(NanoCodec::new(&w).unwrap().half_weight_convs(), 0);
        w.round_to_half();
        let pool = Pool::new(2);
        let frames: Vec<[u32; CODEBOOKS]> = (0..3u32)
            .map(|f| std::array::from_fn(|c| (f * 97 + c as u32 * 131) % CODEBOOK_SIZE))
            .collect();
        for isa in rill_kernels::isa::tiers_under_test("nanocodec half weights") {
            let half = NanoCodec::with_isa(&w, isa).unwrap();
            let f32_panels = NanoCodec {
                decoder: Decoder::new(&w, false),
                isa: half.isa,
            };
            let want = if kernels::reads_half_panels(isa) {
                18
            } else {
                0
            };
            assert_eq!(half.half_weight_convs(), want, "{isa:?}");
            assert_eq!(f32_panels.half_weight_convs(), 0);
            if want == 0 {
                // Both decoders hold the same f32 panels: nothing to compare (and
                // decoding twice costs minutes under the aarch64 emulator).
                continue;
            }
            let (mut sa, mut sb) = (half.new_state(), f32_panels.new_state());
            let (mut a, mut b) = ([0f32; SAMPLES_PER_FRAME], [0f32; SAMPLES_PER_FRAME]);
            for f in &frames {
                half.step(&mut sa, f, &mut a, &pool).unwrap();
                f32_panels.step(&mut sb, f, &mut b, &pool).unwrap();
                assert_eq!(a.map(f32::to_bits), b.map(f32::to_bits), "{isa:?}");
            }
        }
    }
}
