//! The SpectroStream encoder (spec §4.8): 48 kHz stereo audio → 25 Hz frames of 256
//! values → greedy RVQ codes, computing what upstream's MLX encoder computes in layer
//! mode (`SpectroStream.waveform_to_codes_layer`, the function upstream exports as
//! `spectrostream_encoder.mlxfn`). Used for the continuation prefill (spec §3.7).
//!
//! ```text
//! audio [N, 2] ─ STFT (960/480, Hann, reverse-causal) ─ [T, 480, L_re L_im R_re R_im]
//!   ─ ParallelChannels(L, R; shared weights): base conv 7×7 2→32, encoder_0..5
//!   ─ concat [T/4, 5, 512] ─ encoder_6 ─ bottleneck ─ flatten [1280] ─ output_convs ─ [256]
//!   ─ greedy RVQ (first k levels of the codec's 64 codebooks)
//! ```
//!
//! * `T = ⌈N / 480⌉` STFT frames (frame `t` reads samples `480t .. 480t + 960`, zeros
//!   past the end: upstream's `time_padding='reverse_causal'`), `⌈⌈T/2⌉/2⌉` encoder
//!   frames: a multiple of 1920 samples gives `N / 1920` frames. Upstream's C++ engine
//!   encodes 28 s windows and drops the first and last 25 frames of each (their
//!   receptive field reaches the zero padding); that trimming is the caller's.
//! * Every convolution runs on the decoder's implicit-GEMM kernels
//!   (`rill_kernels::conv::gemm`): a strided convolution is a [`Job`](crate::kernels::Job)
//!   whose row map steps the input by the strides, no im2col copy.
//! * The weights are `encoder.safetensors` (`params/encoder/...`, JAX layout); the RVQ
//!   codebooks are the codec's (`params/soundstream/quantizer/embedding` of the model
//!   checkpoint), as upstream's `load_spectrostream_weights` reads them.
//! * The whole sequence is processed at once (no streaming state), the two stereo
//!   channels of the ParallelChannels part one after the other: memory grows with the
//!   input (peak RSS ≈ 0.8 GB for 28 s, weights and 64-level codebook included).

pub mod layout;
mod net;
mod prefill;
mod rvq;
mod stft;

use rill_checkpoint::Checkpoint;
use rill_kernels::{Isa, Pool};

use crate::CodecError;

pub use prefill::PrefillWindow;
pub use rvq::ENCODED_LEVELS;
pub use stft::{stft_frames, STFT_CHANNELS};

/// Width of an encoder frame (the RVQ embedding width).
pub const FRAME_DIM: usize = 256;
/// Stereo samples per encoder frame (4 STFT hops of 480).
pub const SAMPLES_PER_ENCODER_FRAME: usize = 1920;

/// The SpectroStream encoder with its weights and the RVQ codebooks (immutable,
/// shareable between threads).
pub struct Encoder {
    net: net::Net,
    rvq: rvq::Quantizer,
    isa: Isa,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Encoder(SpectroStream encoder, {} RVQ levels, {} kernels)",
            self.rvq.levels(),
            self.isa.name()
        )
    }
}

/// What [`Encoder::analyze`] computes for one input.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// The STFT front end, `[T, 480, 4]` (`[L_re, L_im, R_re, R_im]` per bin).
    pub stft: Vec<f32>,
    /// The encoder frames before quantisation, `[frames, 256]`.
    pub frames: Vec<f32>,
}

impl Encoder {
    /// Loads the encoder convolutions from `encoder` (upstream's `encoder.safetensors`:
    /// `params/encoder/...`) and every RVQ codebook level `codebook` stores
    /// (`params/soundstream/quantizer/embedding`, `[levels ≤ 64, 1024, 256]`: the model
    /// checkpoint), and packs the weights for the kernels of tier `isa` (lowered to what
    /// the CPU supports). A missing tensor or a wrong shape is an error.
    pub fn load(
        encoder: &Checkpoint,
        codebook: &Checkpoint,
        isa: Isa,
    ) -> Result<Encoder, CodecError> {
        let isa = isa.min(Isa::detect());
        Ok(Encoder {
            net: net::Net::load(encoder)?,
            rvq: rvq::Quantizer::load(codebook)?,
            isa,
        })
    }

    /// RVQ levels the codebook holds (the most [`Encoder::quantize`] can give).
    pub fn levels(&self) -> usize {
        self.rvq.levels()
    }

    /// The SIMD tier of the kernels.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Encodes stereo audio (`[L, R]` interleaved, 48 kHz, any length ≥ 1 sample) to
    /// the 12 RVQ codes (`0..1024` per level) of each 25 Hz frame, the codes MRT2's
    /// language model reads (its unique ids are `6 + 1024·k + code`, see
    /// [`level_ids`](crate::level_ids)). Empty audio, an odd number of floats or a
    /// non-finite sample is an error, and so is audio so far beyond full scale that the
    /// encoder output overflows the RVQ distances.
    pub fn encode(
        &self,
        stereo_48k_interleaved: &[f32],
        pool: &Pool,
    ) -> Result<Vec<[u16; crate::LEVELS]>, CodecError> {
        let frames = self.frames(stereo_48k_interleaved, pool)?;
        let codes = self
            .quantize(&frames, crate::LEVELS, pool)
            .map_err(|e| too_loud(e, stereo_48k_interleaved))?;
        Ok(codes
            .chunks_exact(crate::LEVELS)
            .map(|c| std::array::from_fn(|k| c[k]))
            .collect())
    }

    /// The encoder frames before quantisation, `[frames, 256]` (see [`Encoder::encode`]).
    pub fn frames(
        &self,
        stereo_48k_interleaved: &[f32],
        pool: &Pool,
    ) -> Result<Vec<f32>, CodecError> {
        Ok(self.analyze(stereo_48k_interleaved, pool)?.frames)
    }

    /// The STFT front end and the encoder frames (for tests and diagnostics).
    pub fn analyze(
        &self,
        stereo_48k_interleaved: &[f32],
        pool: &Pool,
    ) -> Result<Analysis, CodecError> {
        let (stft, t) = stft::stft_frames(stereo_48k_interleaved)?;
        let frames = self.net.run(self.isa, &stft, t, pool);
        Ok(Analysis { stft, frames })
    }

    /// Greedy residual quantisation of `frames` (`[n, 256]`) over the first `levels`
    /// codebooks: `[n, levels]` codes. Each level picks the code of least squared
    /// distance, computed as upstream does (`(‖r‖² − 2·r·e) + ‖e‖²` in f32; the first
    /// of equal distances), and subtracts it from the residual.
    pub fn quantize(
        &self,
        frames: &[f32],
        levels: usize,
        pool: &Pool,
    ) -> Result<Vec<u16>, CodecError> {
        if levels == 0 || levels > self.rvq.levels() {
            return Err(CodecError::BadInput(format!(
                "{levels} RVQ levels asked, the codebook holds {}",
                self.rvq.levels()
            )));
        }
        if !frames.len().is_multiple_of(FRAME_DIM) {
            return Err(CodecError::BadInput(format!(
                "{} floats are no whole number of {FRAME_DIM}-d frames",
                frames.len()
            )));
        }
        if let Some(i) = frames.iter().position(|v| !v.is_finite()) {
            return Err(CodecError::BadInput(format!(
                "frame value {i} is not finite"
            )));
        }
        self.rvq.quantize(self.isa, frames, levels, pool)
    }
}

/// Finite audio only overflows the encoder (non-finite frames, or distances of
/// infinite size) when it is absurdly loud: a refusal of [`Encoder::quantize`] on
/// such audio says how loud it is and what to do.
fn too_loud(e: CodecError, stereo: &[f32]) -> CodecError {
    let peak = stereo.iter().fold(0f32, |m, v| m.max(v.abs()));
    match e {
        CodecError::BadInput(msg) if peak > 1.0 => CodecError::BadInput(format!(
            "{msg}: the audio reaches {peak:e}, far beyond full scale (±1); scale it down"
        )),
        e => e,
    }
}
