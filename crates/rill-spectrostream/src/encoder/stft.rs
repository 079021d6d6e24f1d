//! The encoder's STFT front end (spec §4.8; upstream `spectrostream_stft_config`):
//! frames of 960 samples every 480, periodic Hann window (numpy float32, as the
//! decoder's), `rfft(960)` without normalisation, DC kept and the Nyquist bin
//! dropped, the two channels' complex values interleaved `[L_re, L_im, R_re, R_im]`.
//! `time_padding='reverse_causal'`: frame `t` reads samples `480t .. 480t + 960` and
//! the signal is zero past its end, so `N` samples give `⌈N / 480⌉` frames.

use realfft::RealFftPlanner;

use crate::istft::{hann_periodic, BINS, FRAME_LEN, HOP};
use crate::CodecError;

/// Values per STFT bin: `[L_re, L_im, R_re, R_im]`.
pub const STFT_CHANNELS: usize = 4;

/// The STFT of interleaved stereo audio: `([T, 480, 4], T)`. Empty audio, an odd
/// number of floats or a non-finite sample is an error.
pub fn stft_frames(stereo: &[f32]) -> Result<(Vec<f32>, usize), CodecError> {
    if stereo.is_empty() {
        return Err(CodecError::BadInput("empty audio".into()));
    }
    if !stereo.len().is_multiple_of(2) {
        return Err(CodecError::BadInput(format!(
            "{} floats are no whole number of interleaved stereo samples",
            stereo.len()
        )));
    }
    if let Some(i) = stereo.iter().position(|v| !v.is_finite()) {
        return Err(CodecError::BadInput(format!(
            "audio sample {} (channel {}) is not finite",
            i / 2,
            i % 2
        )));
    }
    let n = stereo.len() / 2;
    let t = n.div_ceil(HOP);
    let window = hann_periodic(FRAME_LEN);
    let fft = RealFftPlanner::<f32>::new().plan_fft_forward(FRAME_LEN);
    let mut input = fft.make_input_vec();
    let mut spec = fft.make_output_vec();
    let mut scratch = fft.make_scratch_vec();
    let mut out = vec![0f32; t * BINS * STFT_CHANNELS];
    for (frame, row) in out.chunks_exact_mut(BINS * STFT_CHANNELS).enumerate() {
        for ch in 0..2 {
            for (i, x) in input.iter_mut().enumerate() {
                let s = frame * HOP + i;
                let v = if s < n { stereo[2 * s + ch] } else { 0.0 };
                *x = v * window[i];
            }
            fft.process_with_scratch(&mut input, &mut spec, &mut scratch)
                .expect("fft buffer sizes");
            for (bin, c) in spec[..BINS].iter().enumerate() {
                row[bin * STFT_CHANNELS + 2 * ch] = c.re;
                row[bin * STFT_CHANNELS + 2 * ch + 1] = c.im;
            }
        }
    }
    Ok((out, t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_count_and_bad_input() {
        assert_eq!(stft_frames(&[0.0; 2 * 480]).unwrap().1, 1);
        assert_eq!(stft_frames(&[0.0; 2 * 481]).unwrap().1, 2);
        assert!(stft_frames(&[]).is_err());
        assert!(stft_frames(&[0.0; 3]).is_err());
        assert!(stft_frames(&[0.0, f32::NAN]).is_err());
        assert!(stft_frames(&[f32::INFINITY, 0.0]).is_err());
    }

    #[test]
    fn dc_of_a_constant_is_the_window_sum() {
        let (s, t) = stft_frames(&vec![1.0; 2 * 960]).unwrap();
        assert_eq!(t, 2);
        let sum: f32 = hann_periodic(FRAME_LEN).iter().sum();
        assert!((s[0] - sum).abs() < 1e-3 && (s[2] - sum).abs() < 1e-3);
        assert!(s[1].abs() < 1e-3 && s[3].abs() < 1e-3);
    }
}
