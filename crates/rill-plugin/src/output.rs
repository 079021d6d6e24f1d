//! The model's frames on their way to the audio side's ring, at the host's rate.

use crate::bridge::{Timeline, FRAME_SAMPLES, MODEL_RATE};
use rill_stream::FRAME_PCM;

/// The model's frames on their way to the ring, resampled to the host's rate.
pub(crate) struct Output {
    /// Left and right resamplers (`None` at 48 kHz).
    resamplers: Option<[rill_io::StreamResampler; 2]>,
    /// A frame's channels, and their resampled audio.
    channels: [Vec<f32>; 2],
    resampled: [Vec<f32>; 2],
    most: usize,
}

impl Output {
    pub(crate) fn new(t: Timeline) -> Result<Output, String> {
        let make = || rill_io::StreamResampler::new(MODEL_RATE, t.rate).map_err(|e| e.to_string());
        let resamplers = if t.rate == MODEL_RATE {
            None
        } else {
            Some([make()?, make()?])
        };
        let lag = resamplers.as_ref().map_or(0, |r| r[0].max_lag());
        // Room for the most one frame can release (a frame and the resampler's
        // owed samples), reserved now: the per-frame path allocates nothing.
        let most = t.frame + lag + 1;
        Ok(Output {
            resamplers,
            channels: [
                Vec::with_capacity(FRAME_SAMPLES),
                Vec::with_capacity(FRAME_SAMPLES),
            ],
            resampled: [Vec::with_capacity(most), Vec::with_capacity(most)],
            most: 2 * most,
        })
    }

    /// Ring room one frame may need (interleaved samples).
    pub(crate) fn most_per_frame(&self) -> usize {
        self.most.max(FRAME_PCM)
    }

    /// Back to a stream's start (fresh resamplers).
    pub(crate) fn reset(&mut self, t: Timeline) {
        if let Ok(fresh) = Output::new(t) {
            self.resamplers = fresh.resamplers;
        }
    }

    /// Pushes one decoded frame (interleaved 16-bit at 48 kHz) into the ring at
    /// the host's rate; the samples pushed.
    pub(crate) fn push(&mut self, pcm: &[i16], ring: &mut rtrb::Producer<f32>) -> usize {
        let Some(rs) = self.resamplers.as_mut() else {
            return write(ring, pcm.iter().map(|&s| f32::from(s) / 32768.0), pcm.len());
        };
        for (c, ch) in self.channels.iter_mut().enumerate() {
            ch.clear();
            ch.extend(
                pcm.iter()
                    .skip(c)
                    .step_by(2)
                    .map(|&s| f32::from(s) / 32768.0),
            );
        }
        for ((r, ch), out) in rs.iter_mut().zip(&self.channels).zip(&mut self.resampled) {
            out.clear();
            // The rates were checked when the resampler was made.
            let _ = r.push(ch, out);
        }
        let [l, r] = &self.resampled;
        let n = l.len().min(r.len());
        write(
            ring,
            l[..n].iter().zip(&r[..n]).flat_map(|(&a, &b)| [a, b]),
            2 * n,
        )
    }
}

/// Writes `n` samples into a ring known to have room; the samples written.
fn write(ring: &mut rtrb::Producer<f32>, samples: impl Iterator<Item = f32>, n: usize) -> usize {
    let Ok(mut chunk) = ring.write_chunk(n) else {
        return 0;
    };
    let (a, b) = chunk.as_mut_slices();
    for (o, s) in a.iter_mut().chain(b.iter_mut()).zip(samples) {
        *o = s;
    }
    chunk.commit_all();
    n
}
