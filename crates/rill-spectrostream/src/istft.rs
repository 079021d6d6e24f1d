//! Inverse STFT of the decoder output (spec §4.4): per STFT frame and stereo channel,
//! 480 complex bins + a zero Nyquist bin → `irfft(n = 960)` (1/N scaled, the DC
//! imaginary part ignored as c2r does) → synthesis window → causal overlap-add with
//! hop 480. Frames masked by the decoder's lookahead are zeroed before the overlap-add.
//!
//! The synthesis window is the reference's Griffin–Lim eq. 7 window
//! `w[n] / Σ_k w[n mod 480 + 480k]²` over a periodic Hann `w`, computed in f32.

use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner};

/// Samples per STFT frame (= FFT length).
pub const FRAME_LEN: usize = 960;
/// Hop between STFT frames (samples per STFT frame of output).
pub const HOP: usize = 480;
/// Frequency bins the decoder produces (the Nyquist bin is implicit zero).
pub const BINS: usize = 480;
/// Values per bin: `[L_re, L_im, R_re, R_im]`.
pub const BIN_CHANNELS: usize = 4;

/// Periodic Hann window as the reference computes it in numpy float32
/// (`0.5 − 0.5·cos(2π·n / N)` with a float32 argument).
pub(crate) fn hann_periodic(n_len: usize) -> Vec<f32> {
    let two_pi = std::f64::consts::TAU as f32;
    (0..n_len)
        .map(|n| {
            let arg = (two_pi * n as f32) / n_len as f32;
            0.5 - 0.5 * ((arg as f64).cos() as f32)
        })
        .collect()
}

/// The inverse-STFT synthesis window (Griffin–Lim eq. 7), f32 like the reference.
pub(crate) fn synthesis_window() -> Vec<f32> {
    let w = hann_periodic(FRAME_LEN);
    let overlaps = FRAME_LEN.div_ceil(HOP);
    let mut denom = vec![0f32; HOP];
    for k in 0..overlaps {
        for (j, d) in denom.iter_mut().enumerate() {
            if let Some(v) = w.get(k * HOP + j) {
                *d += v * v;
            }
        }
    }
    w.iter()
        .enumerate()
        .map(|(n, &v)| {
            let d = denom[n % HOP];
            if d == 0.0 {
                0.0
            } else {
                v / d
            }
        })
        .collect()
}

/// The immutable part: FFT plan and window (shared by every stream).
pub(crate) struct Istft {
    plan: Arc<dyn ComplexToReal<f32>>,
    window: Vec<f32>,
}

/// Preallocated buffers of one stream's inverse STFT (no allocation per frame).
#[derive(Clone)]
pub(crate) struct IstftScratch {
    spec: Vec<Complex<f32>>,
    time: Vec<f32>,
    fft: Vec<Complex<f32>>,
}

impl Istft {
    pub(crate) fn new() -> Istft {
        let plan = RealFftPlanner::<f32>::new().plan_fft_inverse(FRAME_LEN);
        Istft {
            plan,
            window: synthesis_window(),
        }
    }

    pub(crate) fn scratch(&self) -> IstftScratch {
        IstftScratch {
            spec: self.plan.make_input_vec(),
            time: self.plan.make_output_vec(),
            fft: self.plan.make_scratch_vec(),
        }
    }

    /// One STFT frame `spec[480][4]` → `out[480][2]` interleaved stereo samples.
    /// `tail[480][2]` is the overlap-add state; a masked frame (`valid == false`)
    /// contributes zeros (only the tail is emitted).
    pub(crate) fn frame(
        &self,
        spec: &[f32],
        valid: bool,
        tail: &mut [f32],
        out: &mut [f32],
        s: &mut IstftScratch,
    ) {
        assert_eq!(spec.len(), BINS * BIN_CHANNELS, "istft input frame");
        assert!(
            tail.len() == HOP * 2 && out.len() == HOP * 2,
            "istft buffers"
        );
        if !valid {
            out.copy_from_slice(tail);
            tail.fill(0.0);
            return;
        }
        let scale = 1.0 / FRAME_LEN as f32;
        for ch in 0..2 {
            for (k, c) in s.spec[..BINS].iter_mut().enumerate() {
                *c = Complex::new(
                    spec[k * BIN_CHANNELS + 2 * ch],
                    spec[k * BIN_CHANNELS + 2 * ch + 1],
                );
            }
            // c2r ignores the imaginary parts of DC and Nyquist; realfft insists they are 0.
            s.spec[0].im = 0.0;
            s.spec[BINS] = Complex::new(0.0, 0.0);
            if let Err(e) = self
                .plan
                .process_with_scratch(&mut s.spec, &mut s.time, &mut s.fft)
            {
                unreachable!("inverse FFT buffers are sized by the plan: {e}");
            }
            for j in 0..HOP {
                let head = (s.time[j] * scale) * self.window[j];
                let next = (s.time[HOP + j] * scale) * self.window[HOP + j];
                out[2 * j + ch] = head + tail[2 * j + ch];
                tail[2 * j + ch] = next;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::tests::rand_vec;

    /// Direct O(N²) inverse real DFT (1/N) of 481 bins with DC imag ignored, in f64.
    fn naive_irfft(bins: &[(f64, f64)]) -> Vec<f64> {
        let n = FRAME_LEN;
        (0..n)
            .map(|t| {
                let mut s = bins[0].0;
                for (k, &(re, im)) in bins.iter().enumerate().take(n / 2).skip(1) {
                    let ph = std::f64::consts::TAU * (k * t) as f64 / n as f64;
                    s += 2.0 * (re * ph.cos() - im * ph.sin());
                }
                s += bins[n / 2].0 * if t % 2 == 0 { 1.0 } else { -1.0 };
                s / n as f64
            })
            .collect()
    }

    #[test]
    fn matches_direct_inverse_dft_with_overlap_add() {
        let ist = Istft::new();
        let mut s = ist.scratch();
        let frames = 5;
        let valid = [true, false, true, true, true];
        let spec = rand_vec(frames * BINS * BIN_CHANNELS, 21);
        let win = synthesis_window();
        // Reference: f64 inverse DFT, window, overlap-add, drop the last 480 (causal).
        let mut ola = vec![0f64; (frames + 1) * HOP * 2];
        for (t, &v) in valid.iter().enumerate() {
            if !v {
                continue;
            }
            for ch in 0..2 {
                let f = &spec[t * BINS * BIN_CHANNELS..];
                let mut bins: Vec<(f64, f64)> = (0..BINS)
                    .map(|k| (f[k * 4 + 2 * ch] as f64, f[k * 4 + 2 * ch + 1] as f64))
                    .collect();
                bins.push((0.0, 0.0));
                for (n, x) in naive_irfft(&bins).iter().enumerate() {
                    ola[(t * HOP + n) * 2 + ch] += x * win[n] as f64;
                }
            }
        }
        let mut tail = vec![0f32; HOP * 2];
        let mut out = vec![0f32; frames * HOP * 2];
        for t in 0..frames {
            let f = &spec[t * BINS * BIN_CHANNELS..(t + 1) * BINS * BIN_CHANNELS];
            ist.frame(
                f,
                valid[t],
                &mut tail,
                &mut out[t * HOP * 2..(t + 1) * HOP * 2],
                &mut s,
            );
        }
        let err = out
            .iter()
            .zip(&ola)
            .fold(0f64, |m, (a, b)| m.max((*a as f64 - b).abs()));
        let scale = ola.iter().fold(0f64, |m, b| m.max(b.abs()));
        assert!(
            err < 1e-6 * scale.max(1.0),
            "istft max err {err} (scale {scale})"
        );
    }

    #[test]
    fn window_is_hann_over_sum_of_squares() {
        let w = synthesis_window();
        assert_eq!(w[0], 0.0);
        // Hann² overlap sum is 0.5 + 0.5·cos²; at n = 240 the Hann value is 0.5, the sum 0.5.
        assert!((w[240] - 1.0).abs() < 1e-6, "{}", w[240]);
        assert!((w[480] - 1.0).abs() < 1e-6, "{}", w[480]);
    }
}
