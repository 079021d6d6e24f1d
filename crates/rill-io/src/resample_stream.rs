//! [`StreamResampler`]: [`crate::resample`] for audio that arrives in pieces (a
//! live stream, e.g. 22.05 kHz speech served as 24 kHz PCM): the same FFT
//! resampler and the same output, sample for sample, as resampling the whole
//! signal at once, produced as soon as each FFT block of input is complete.

use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, Indexing, Resampler};

use crate::audio::{
    check_resample_input, fft_resampler, gcd, out_len, ResampleError, MAX_RATE_BLOCK,
};

/// Resamples mono audio pushed in pieces of any length; [`finish`](Self::finish)
/// flushes the tail. The output is aligned with the input (the filter delay is
/// removed) and has exactly `round(n · to / from)` samples for `n` pushed.
pub struct StreamResampler {
    /// `None` when the rates are equal (samples pass through).
    fft: Option<Fft<f32>>,
    from_rate: u32,
    to_rate: u32,
    pending: Vec<f32>,
    block: Vec<f32>,
    /// Output frames still to drop (the filter delay).
    to_trim: usize,
    total_in: usize,
    total_out: usize,
}

impl StreamResampler {
    /// A mono resampler from `from_rate` to `to_rate` Hz.
    pub fn new(from_rate: u32, to_rate: u32) -> Result<Self, ResampleError> {
        if from_rate == 0 || to_rate == 0 {
            return Err(ResampleError(format!(
                "rates {from_rate} -> {to_rate} Hz: both must be positive"
            )));
        }
        let g = gcd(from_rate, to_rate);
        if (from_rate / g).max(to_rate / g) > MAX_RATE_BLOCK {
            return Err(ResampleError(format!(
                "{from_rate} -> {to_rate} Hz: the reduced ratio {}/{} needs FFT blocks \
                 longer than {MAX_RATE_BLOCK} frames",
                to_rate / g,
                from_rate / g
            )));
        }
        let fft = (from_rate != to_rate)
            .then(|| fft_resampler(from_rate, to_rate, 1))
            .transpose()?;
        let (block, to_trim, pending) = match &fft {
            Some(f) => (
                vec![0.0; f.output_frames_max()],
                f.output_delay(),
                Vec::with_capacity(f.input_frames_max()),
            ),
            None => (Vec::new(), 0, Vec::new()),
        };
        Ok(StreamResampler {
            fft,
            from_rate,
            to_rate,
            pending,
            block,
            to_trim,
            total_in: 0,
            total_out: 0,
        })
    }

    /// The most output samples the resampler can owe for the input pushed so far:
    /// one FFT block of output plus the filter delay (0 at equal rates). A live
    /// host adds it to the latency it reports.
    pub fn max_lag(&self) -> usize {
        self.fft
            .as_ref()
            .map_or(0, |f| f.output_frames_max() + f.output_delay())
    }

    /// Appends the resampled audio of `input` that is complete to `out`.
    /// A non-finite sample or one beyond [`crate::audio::MAX_RESAMPLE_MAGNITUDE`]
    /// refuses the whole push (nothing of it is taken; the resampler stays usable).
    pub fn push(&mut self, input: &[f32], out: &mut Vec<f32>) -> Result<(), ResampleError> {
        check_resample_input(input, self.total_in)?;
        self.total_in += input.len();
        let Some(fft) = self.fft.as_ref() else {
            out.extend_from_slice(input);
            self.total_out += input.len();
            return Ok(());
        };
        self.pending.extend_from_slice(input);
        let mut start = 0;
        let mut need = fft.input_frames_next();
        while self.pending.len() - start >= need {
            let end = start + need;
            self.run_block(start, end, None, out)?;
            start = end;
            need = self
                .fft
                .as_ref()
                .map_or(usize::MAX, |f| f.input_frames_next());
        }
        self.pending.drain(..start);
        Ok(())
    }

    /// Flushes the rest: after this, `out` has received exactly
    /// `round(n · to / from)` samples in all for the `n` pushed.
    pub fn finish(&mut self, out: &mut Vec<f32>) -> Result<(), ResampleError> {
        let want = out_len(self.total_in, self.from_rate, self.to_rate);
        if self.fft.is_none() {
            return Ok(());
        }
        let len = self.pending.len();
        self.run_block(0, len, Some(len), out)?;
        self.pending.clear();
        // Zeros through the filter until the delayed tail is out (bounded: each
        // round yields a block of output once the delay is trimmed).
        let mut rounds = 0;
        while self.total_out < want && rounds < 64 {
            self.run_block(0, 0, Some(0), out)?;
            rounds += 1;
        }
        let extra = self.total_out.saturating_sub(want);
        out.truncate(out.len() - extra.min(out.len()));
        self.total_out -= extra;
        Ok(())
    }

    /// One FFT block of `pending[start..end]` (`partial`: fewer frames than a
    /// block, zero-padded by rubato); its output minus the delay still to trim.
    fn run_block(
        &mut self,
        start: usize,
        end: usize,
        partial: Option<usize>,
        out: &mut Vec<f32>,
    ) -> Result<(), ResampleError> {
        let err = |e: &dyn std::fmt::Display| ResampleError(e.to_string());
        let Some(fft) = self.fft.as_mut() else {
            return Ok(());
        };
        let frames = fft.input_frames_next();
        // A partial block reads only its first `partial` frames; the adapter still
        // has to span a whole block.
        let padded;
        let input: &[f32] = if partial.is_some() {
            padded = {
                let mut v = self.pending[start..end].to_vec();
                v.resize(frames, 0.0);
                v
            };
            &padded
        } else {
            &self.pending[start..end]
        };
        let adapter_in = InterleavedSlice::new(input, 1, frames).map_err(|e| err(&e))?;
        let out_frames = self.block.len();
        let mut adapter_out =
            InterleavedSlice::new_mut(&mut self.block, 1, out_frames).map_err(|e| err(&e))?;
        let indexing = Indexing {
            input_offset: 0,
            output_offset: 0,
            active_channels_mask: None,
            partial_len: partial,
        };
        let (_, produced) = fft
            .process_into_buffer(&adapter_in, &mut adapter_out, Some(&indexing))
            .map_err(|e| err(&e))?;
        let skip = self.to_trim.min(produced);
        self.to_trim -= skip;
        out.extend_from_slice(&self.block[skip..produced]);
        self.total_out += produced - skip;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signal(n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let t = i as f32 / 22_050.0;
                0.5 * (2.0 * std::f32::consts::PI * 440.0 * t).sin()
                    + 0.2 * (2.0 * std::f32::consts::PI * 3_000.0 * t).sin()
            })
            .collect()
    }

    #[test]
    fn pieces_give_the_whole_signals_output() {
        for n in [0, 1, 500, 1024, 1176, 5 * 1024, 22_050 + 17] {
            let x = signal(n);
            let whole = crate::resample(&x, 22_050, 24_000, 1).unwrap();
            for piece in [1024, 1, 777, 5000] {
                let mut r = StreamResampler::new(22_050, 24_000).unwrap();
                let mut got = Vec::new();
                for c in x.chunks(piece) {
                    r.push(c, &mut got).unwrap();
                }
                r.finish(&mut got).unwrap();
                assert_eq!(got.len(), whole.len(), "n {n} piece {piece}");
                let worst = got
                    .iter()
                    .zip(&whole)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0f32, f32::max);
                assert!(worst <= 1e-6, "n {n} piece {piece}: {worst}");
            }
        }
    }

    #[test]
    fn equal_rates_pass_through_and_bad_rates_are_errors() {
        let mut r = StreamResampler::new(48_000, 48_000).unwrap();
        let mut out = Vec::new();
        r.push(&[1.0, 2.0], &mut out).unwrap();
        r.finish(&mut out).unwrap();
        assert_eq!(out, [1.0, 2.0]);
        assert!(StreamResampler::new(0, 24_000).is_err());
        // A prime rate above MAX_RATE_BLOCK: its FFT block would be too long.
        assert!(StreamResampler::new(1_048_583, 48_000).is_err());
    }
}
