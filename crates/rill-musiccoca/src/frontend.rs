//! The log-mel frontend of the music tower, exactly DBraun's `LogMelFrontend`
//! (`magenta_rt/nnx/musiccoca/frontend.py`), which stands for upstream's
//! `audio_preprocessor.tflite`: a 10 s, 16 kHz mono clip to `[992, 128]` log-mel.
//!
//! 1. pre-emphasis `y[n] = x[n] − 0.97·x[n−1]`, `x[−1] = 0`;
//! 2. 400-sample frames every 160 samples, no centering (998 frames);
//! 3. × the window `frontend.window`, zero-padded to 2048, real FFT (1025 bins);
//! 4. power `|X|²` × `frontend.mel_matrix` `[1025, 128]` + 1e-3, natural log;
//! 5. the first 992 frames.
//!
//! The window and the mel matrix are read from the assets, never recomputed (the
//! real matrix's band edges are unknown). Pre-emphasis, windowing, the matrix
//! product and the log run in f32 like JAX; the FFT and the power run in f64 and are
//! rounded to f32 once, which measured closer to the recording (see
//! `tests/frontend.rs`).

use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};

use crate::{Error, Weights};

/// Sample rate of the clips, Hz.
pub const SAMPLE_RATE: u32 = 16_000;
/// Samples of one clip: 10 s at 16 kHz.
pub const CLIP_SAMPLES: usize = 160_000;
/// Samples per analysis frame (25 ms).
pub const FRAME_LENGTH: usize = 400;
/// Samples between frame starts (10 ms).
pub const FRAME_HOP: usize = 160;
/// FFT length (frames are zero-padded to it).
pub const FFT_LENGTH: usize = 2048;
/// Real-FFT bins: `FFT_LENGTH / 2 + 1`.
pub const NUM_BINS: usize = FFT_LENGTH / 2 + 1;
/// Mel bands.
pub const NUM_MEL_BINS: usize = 128;
/// Frames kept (of the 998 a clip has): a 62×16 patch grid.
pub const NUM_FRAMES: usize = 992;
/// Pre-emphasis coefficient.
pub const PREEMPHASIS: f32 = 0.97;
/// Added to the mel power before the log.
pub const MEL_FLOOR: f32 = 1e-3;
/// Frames per patch (time).
pub const PATCH_FRAMES: usize = 16;
/// Mel bands per patch.
pub const PATCH_BANDS: usize = 16;
/// Patches: 62 in time × 8 in frequency.
pub const NUM_PATCHES: usize = (NUM_FRAMES / PATCH_FRAMES) * (NUM_MEL_BINS / PATCH_BANDS);
/// Values per patch.
pub const PATCH_DIM: usize = PATCH_FRAMES * PATCH_BANDS;

/// Samples of a clip the kept frames read: the last kept frame ends here.
const SAMPLES_READ: usize = (NUM_FRAMES - 1) * FRAME_HOP + FRAME_LENGTH;

/// The frontend's constants and FFT plan; see the module doc.
pub struct Frontend {
    window: Vec<f32>,
    /// `[NUM_BINS, NUM_MEL_BINS]`, row-major.
    mel_matrix: Vec<f32>,
    fft: Arc<dyn RealToComplex<f64>>,
}

impl std::fmt::Debug for Frontend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frontend").finish_non_exhaustive()
    }
}

/// Buffers for [`Frontend::log_mel_into`], sized once.
pub struct FrontendScratch {
    emphasized: Vec<f32>,
    frame: Vec<f64>,
    spectrum: Vec<Complex<f64>>,
    fft_scratch: Vec<Complex<f64>>,
    power: Vec<f32>,
}

impl Frontend {
    /// Takes `frontend.window` `[400]` and `frontend.mel_matrix` `[1025, 128]` out of
    /// `weights`.
    pub fn from_weights(weights: &mut Weights) -> Result<Frontend, Error> {
        let window = weights.take("frontend.window", &[FRAME_LENGTH])?;
        let mel_matrix = weights.take("frontend.mel_matrix", &[NUM_BINS, NUM_MEL_BINS])?;
        Frontend::new(window, mel_matrix)
    }

    /// A frontend from its two constants: `window` `[400]` and `mel_matrix`
    /// `[1025, 128]` row-major.
    pub fn new(window: Vec<f32>, mel_matrix: Vec<f32>) -> Result<Frontend, Error> {
        let check = |name: &str, v: &[f32], n: usize| {
            if v.len() != n {
                return Err(Error::Weight {
                    name: name.into(),
                    what: format!("{} values, expected {n}", v.len()),
                });
            }
            if v.iter().any(|x| !x.is_finite()) {
                return Err(Error::Weight {
                    name: name.into(),
                    what: "holds a non-finite value".into(),
                });
            }
            Ok(())
        };
        check("frontend.window", &window, FRAME_LENGTH)?;
        check("frontend.mel_matrix", &mel_matrix, NUM_BINS * NUM_MEL_BINS)?;
        let fft = RealFftPlanner::<f64>::new().plan_fft_forward(FFT_LENGTH);
        Ok(Frontend {
            window,
            mel_matrix,
            fft,
        })
    }

    /// Buffers for [`Frontend::log_mel_into`].
    pub fn scratch(&self) -> FrontendScratch {
        FrontendScratch {
            emphasized: vec![0.0; SAMPLES_READ],
            frame: self.fft.make_input_vec(),
            spectrum: self.fft.make_output_vec(),
            fft_scratch: self.fft.make_scratch_vec(),
            power: vec![0.0; NUM_BINS],
        }
    }

    /// Log-mel `[992, 128]` (row-major) of one clip. The clip is taken as
    /// upstream's `_embed_batch_clips` takes it: zero-padded or truncated to
    /// [`CLIP_SAMPLES`] (only its first 158,960 samples reach the kept frames).
    pub fn log_mel(&self, clip: &[f32]) -> Vec<f32> {
        let mut out = vec![0.0; NUM_FRAMES * NUM_MEL_BINS];
        self.log_mel_into(clip, &mut self.scratch(), &mut out);
        out
    }

    /// [`Frontend::log_mel`] into `out` (`992 × 128` values), allocating nothing.
    ///
    /// # Panics
    /// If `out` does not hold exactly `992 × 128` values.
    pub fn log_mel_into(&self, clip: &[f32], s: &mut FrontendScratch, out: &mut [f32]) {
        assert_eq!(out.len(), NUM_FRAMES * NUM_MEL_BINS, "log-mel output size");
        let x = |i: usize| clip.get(i).copied().unwrap_or(0.0);
        let mut prev = 0.0f32;
        for (i, e) in s.emphasized.iter_mut().enumerate() {
            let xi = x(i);
            *e = xi - PREEMPHASIS * prev;
            prev = xi;
        }
        for (t, row) in out.chunks_exact_mut(NUM_MEL_BINS).enumerate() {
            let start = t * FRAME_HOP;
            let samples = &s.emphasized[start..start + FRAME_LENGTH];
            for ((f, &v), &w) in s.frame.iter_mut().zip(samples).zip(&self.window) {
                *f = f64::from(v * w);
            }
            s.frame[FRAME_LENGTH..].fill(0.0);
            self.fft
                .process_with_scratch(&mut s.frame, &mut s.spectrum, &mut s.fft_scratch)
                .expect("buffers made by the plan");
            for (p, c) in s.power.iter_mut().zip(&s.spectrum) {
                *p = c.norm_sqr() as f32;
            }
            row.fill(0.0);
            for (&p, m) in s
                .power
                .iter()
                .zip(self.mel_matrix.chunks_exact(NUM_MEL_BINS))
            {
                for (o, &w) in row.iter_mut().zip(m) {
                    *o += p * w;
                }
            }
            for o in row.iter_mut() {
                *o = (*o + MEL_FLOOR).ln();
            }
        }
    }
}

/// The music tower's patches `[496, 256]` of a log-mel `[992, 128]`:
/// `rearrange(mel, "(tp ti) (mp mi) -> (tp mp) (ti mi)", ti=16, mp=8, mi=16)`.
///
/// # Panics
/// If `mel` does not hold exactly `992 × 128` values.
pub fn patches(mel: &[f32]) -> Vec<f32> {
    assert_eq!(mel.len(), NUM_FRAMES * NUM_MEL_BINS, "log-mel size");
    let mp_n = NUM_MEL_BINS / PATCH_BANDS;
    let mut out = Vec::with_capacity(NUM_PATCHES * PATCH_DIM);
    for tp in 0..NUM_FRAMES / PATCH_FRAMES {
        for mp in 0..mp_n {
            for ti in 0..PATCH_FRAMES {
                let row = (tp * PATCH_FRAMES + ti) * NUM_MEL_BINS + mp * PATCH_BANDS;
                out.extend_from_slice(&mel[row..row + PATCH_BANDS]);
            }
        }
    }
    out
}
