//! Quality of a precision mode against f32 on the same trajectory.
//!
//! The f32 model generates freely; the model under test is teacher-forced on the
//! same tokens, so every logit difference comes from the weights alone. Per depth
//! step we compare the soft-capped logits of the step's level:
//!
//! * cosine (mean and min),
//! * greedy agreement: same argmax,
//! * sampling agreement: `1 − TV` between the two top-k-truncated tempered
//!   distributions `softmax(logits / T)` — the probability that the two models draw
//!   the same token, which is what matters for a sampled model.

use rill_kernels::metrics::cosine;
use rill_kernels::Pool;

use crate::conditioning::Conditioning;
use crate::error::InvalidValue;
use crate::model::LEVELS;
use crate::sampler::{SamplingParams, LEVEL};
use crate::session::{FrameTrace, Session};

/// Accumulated agreement statistics.
#[derive(Debug, Clone, Copy)]
pub struct Agreement {
    pub steps: usize,
    pub cosine_sum: f64,
    pub cosine_min: f64,
    pub greedy_same: usize,
    pub sampling_sum: f64,
}

impl Default for Agreement {
    fn default() -> Self {
        Agreement {
            steps: 0,
            cosine_sum: 0.0,
            cosine_min: 1.0,
            greedy_same: 0,
            sampling_sum: 0.0,
        }
    }
}

impl Agreement {
    pub fn cosine_mean(&self) -> f64 {
        self.cosine_sum / self.steps.max(1) as f64
    }
    pub fn greedy(&self) -> f64 {
        self.greedy_same as f64 / self.steps.max(1) as f64
    }
    pub fn sampling(&self) -> f64 {
        self.sampling_sum / self.steps.max(1) as f64
    }

    /// Adds one depth step's logits (reference, test).
    pub fn add(&mut self, reference: &[f32], test: &[f32], p: SamplingParams) {
        let c = cosine(reference, test);
        self.steps += 1;
        self.cosine_sum += c;
        self.cosine_min = self.cosine_min.min(c);
        self.greedy_same += (argmax(reference) == argmax(test)) as usize;
        let a = tempered_top_k(reference, p);
        let b = tempered_top_k(test, p);
        let tv: f64 = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum::<f64>() * 0.5;
        self.sampling_sum += 1.0 - tv;
    }
}

fn argmax(x: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if v > x[best] {
            best = i;
        }
    }
    best
}

/// The distribution the Gumbel-max sampler draws from: `softmax(logits / T)` over
/// the top-k set (ties with the k-th value kept), zero elsewhere. T = 0 is a point
/// mass on the argmax.
pub fn tempered_top_k(logits: &[f32], p: SamplingParams) -> Vec<f64> {
    let n = logits.len();
    let mut out = vec![0f64; n];
    if p.temperature == 0.0 {
        out[argmax(logits)] = 1.0;
        return out;
    }
    let k = p.top_k.clamp(1, n);
    let mut sorted = logits.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let kth = sorted[k - 1];
    let m = sorted[0] as f64;
    let t = p.temperature as f64;
    let mut z = 0f64;
    for (o, &l) in out.iter_mut().zip(logits) {
        if l >= kth {
            *o = ((l as f64 - m) / t).exp();
            z += *o;
        }
    }
    for o in &mut out {
        *o /= z;
    }
    out
}

/// Runs `frames` frames: `reference` samples freely, `test` is teacher-forced on the
/// same tokens; returns the agreement of `test`'s logits with `reference`'s.
pub fn compare_sessions(
    reference: &mut Session,
    test: &mut Session,
    conditioning: &Conditioning,
    p: SamplingParams,
    frames: usize,
    pool: &Pool,
) -> Result<Agreement, InvalidValue> {
    reference.set_conditioning(conditioning, pool)?;
    test.set_conditioning(conditioning, pool)?;
    reference.set_sampling(p)?;
    test.set_sampling(p)?;
    let mut tr = FrameTrace::default();
    let mut tt = FrameTrace::default();
    let mut agg = Agreement::default();
    for _ in 0..frames {
        let tokens = reference.step(pool, Some(&mut tr));
        // Sampled tokens are always inside their level, so forcing cannot fail.
        if test.step_forced(&tokens, pool, Some(&mut tt)).is_err() {
            break;
        }
        for k in 0..LEVELS {
            let r = k * LEVEL..(k + 1) * LEVEL;
            agg.add(&tr.logits[r.clone()], &tt.logits[r], p);
        }
    }
    Ok(agg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_logits_agree_fully() {
        let l: Vec<f32> = (0..64).map(|i| (i as f32 * 0.7).sin() * 5.0).collect();
        let mut a = Agreement::default();
        let p = SamplingParams::default();
        a.add(&l, &l, p);
        assert!((a.sampling() - 1.0).abs() < 1e-12);
        assert_eq!(a.greedy(), 1.0);
        let d = tempered_top_k(
            &l,
            SamplingParams {
                temperature: 1.0,
                top_k: 3,
            },
        );
        assert_eq!(d.iter().filter(|&&v| v > 0.0).count(), 3);
        assert!((d.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    /// Values worked out by hand, so a metric that ignores its inputs fails.
    #[test]
    fn different_logits_give_the_hand_computed_agreement() {
        let ln3 = 3f32.ln();
        let (a, b) = ([0.0, ln3, -50.0], [ln3, 0.0, -50.0]);
        let p = SamplingParams {
            temperature: 1.0,
            top_k: 2,
        };
        let mut ag = Agreement::default();
        ag.add(&a, &b, p);
        // softmax over the top 2: (1/4, 3/4) vs (3/4, 1/4): TV = 1/2.
        assert!((ag.sampling() - 0.5).abs() < 1e-6, "{}", ag.sampling());
        assert_eq!(ag.greedy(), 0.0);
        let cos = 2500.0 / (ln3 as f64 * ln3 as f64 + 2500.0);
        assert!(
            (ag.cosine_mean() - cos).abs() < 1e-6,
            "{}",
            ag.cosine_mean()
        );
        // Top 1: point masses on different ids never agree.
        let mut one = Agreement::default();
        one.add(&a, &b, SamplingParams { top_k: 1, ..p });
        assert!(one.sampling().abs() < 1e-12);
    }
}
