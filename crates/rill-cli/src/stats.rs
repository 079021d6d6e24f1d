//! Per-frame timing statistics.

use std::time::Duration;

/// Per-frame wall times of each stage.
#[derive(Debug, Default, Clone)]
pub struct Timings {
    pub lm: Vec<Duration>,
    pub codec: Vec<Duration>,
}

/// Median, p90, p99, max in milliseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summary {
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

pub fn summarize(d: &[Duration]) -> Summary {
    if d.is_empty() {
        return Summary::default();
    }
    let mut ms: Vec<f64> = d.iter().map(|x| x.as_secs_f64() * 1e3).collect();
    ms.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| ms[((ms.len() - 1) as f64 * p).round() as usize];
    Summary {
        median: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        max: ms[ms.len() - 1],
    }
}

impl Timings {
    /// `overlapped`: the two stages ran at the same time (two-stage pipeline).
    pub fn report(&self, frames: usize, wall: Duration, overlapped: bool) {
        let lm = summarize(&self.lm);
        let rtf = wall.as_secs_f64() / (frames as f64 * 0.04);
        if self.codec.is_empty() {
            eprintln!(
                "{frames} frames in {:.2} s: language model {:.1} ms/frame (median); real-time factor {rtf:.2} (< 1 is faster than real time)",
                wall.as_secs_f64(),
                lm.median
            );
        } else {
            let codec = summarize(&self.codec);
            let join = if overlapped { "alongside" } else { "+" };
            eprintln!(
                "{frames} frames in {:.2} s: language model {:.1} {join} codec {:.1} ms/frame (medians); real-time factor {rtf:.2} (< 1 is faster than real time)",
                wall.as_secs_f64(),
                lm.median,
                codec.median
            );
        }
    }
}
