//! Single-query attention over host-owned key/value caches (spec §1.3, §3.4, §3.5).
//!
//! The step is pure: it reads the past keys/values read-only and the current
//! step's key/value, and writes only the context. The caller (the session) owns the
//! caches and appends the current slice after the step (trap T11: write after read).

use rill_kernels::ops_bf16::{self, bf};
use rill_kernels::{ops, Ops};

/// Past keys and values of one attention layer: `slots` valid rows of `H·Dh`
/// floats each, in physical order. Every valid slot is visible to a single-frame
/// query (the window equals the cache size).
#[derive(Debug, Clone, Copy)]
pub struct KvView<'a> {
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub slots: usize,
}

/// Learned attention sink of one layer (temporal stack only).
#[derive(Debug, Clone)]
pub struct Sink {
    /// Sink key divided by the query scale, as MLX pre-divides it so that the
    /// sink logit equals the *unscaled* query times the sink key (trap T2).
    pub key_over_scale: Vec<f32>,
    pub value: Vec<f32>,
}

/// Per-head query scaling and optional sink of one attention layer.
#[derive(Debug, Clone)]
pub struct Attention {
    pub heads: usize,
    pub head_dim: usize,
    /// `1.442695041/√Dh · softplus(per_dim_scale)`, shared by all heads (trap T3).
    pub q_scale: Vec<f32>,
    pub sink: Option<Sink>,
    /// Scores, probabilities and context rounded to bf16 as upstream's bf16
    /// compute does (MLX's `scaled_dot_product_attention` fallback on CPU).
    pub bf16: bool,
    /// The kernels of the loops over the caches (the model's, fixed at load).
    pub ops: Ops,
}

/// The per-dimension query scale of `SL/mlx/attention.py:_query_scale_vector`.
pub fn query_scale(per_dim_scale: &[f32]) -> Vec<f32> {
    let dh = per_dim_scale.len();
    // Python float product, then used as an f32 scalar against the f32 softplus.
    // The literal is upstream's `r_softplus_0` (≈ log2 e, but not the exact constant).
    #[allow(clippy::approx_constant)]
    let c = (1.442695041f64 * (1.0 / (dh as f64).sqrt())) as f32;
    per_dim_scale.iter().map(|&p| c * p.exp().ln_1p()).collect()
}

/// [`query_scale`] in bf16 compute: the constant, `exp`, `log1p` and the product
/// each rounded to bf16.
pub fn query_scale_bf16(per_dim_scale: &[f32]) -> Vec<f32> {
    let dh = per_dim_scale.len();
    #[allow(clippy::approx_constant)]
    let c = bf((1.442695041f64 * (1.0 / (dh as f64).sqrt())) as f32);
    per_dim_scale
        .iter()
        .map(|&p| bf(c * bf(bf(bf(p).exp()).ln_1p())))
        .collect()
}

impl Attention {
    pub fn new(
        heads: usize,
        head_dim: usize,
        per_dim_scale: &[f32],
        sink: Option<(&[f32], &[f32])>,
        bf16: bool,
        ops: Ops,
    ) -> Self {
        let q_scale = if bf16 {
            query_scale_bf16(per_dim_scale)
        } else {
            query_scale(per_dim_scale)
        };
        let round = |v: f32| if bf16 { bf(v) } else { v };
        let sink = sink.map(|(k, v)| Sink {
            key_over_scale: k
                .iter()
                .enumerate()
                .map(|(i, &x)| round(x / q_scale[i % head_dim]))
                .collect(),
            value: v.to_vec(),
        });
        Attention {
            heads,
            head_dim,
            q_scale,
            sink,
            bf16,
            ops,
        }
    }

    /// Scratch floats [`Attention::attend`] needs for a cache of `slots` rows.
    pub fn scores_len(slots: usize) -> usize {
        slots + 2
    }

    /// `ctx = softmax(q̃·[sink, past…, k_cur]) · [sink_v, past…, v_cur]` per head,
    /// with `q̃ = q ⊙ scale`. `q` is scaled in place.
    pub fn attend(
        &self,
        q: &mut [f32],
        past: KvView<'_>,
        k_cur: &[f32],
        v_cur: &[f32],
        ctx: &mut [f32],
        scores: &mut [f32],
    ) {
        let (hn, dh) = (self.heads, self.head_dim);
        let hd = hn * dh;
        for (i, v) in q.iter_mut().enumerate() {
            *v *= self.q_scale[i % dh];
        }
        if self.bf16 {
            ops_bf16::round(q);
        }
        for h in 0..hn {
            let r = h * dh..(h + 1) * dh;
            let qh = &q[r.clone()];
            let mut n = 0;
            if let Some(s) = &self.sink {
                scores[n] = ops::dot(qh, &s.key_over_scale[r.clone()]);
                n += 1;
            }
            // Every cached key at once: per key the bits of `ops::dot`, in wider registers.
            self.ops
                .dots(qh, past.k, hd, h * dh, &mut scores[n..n + past.slots]);
            n += past.slots;
            scores[n] = ops::dot(qh, &k_cur[r.clone()]);
            n += 1;
            if self.bf16 {
                ops_bf16::round(&mut scores[..n]);
                ops_bf16::softmax(&mut scores[..n]);
            } else {
                ops::softmax(&mut scores[..n]);
            }
            let out = &mut ctx[r.clone()];
            out.fill(0.0);
            let mut j = 0;
            if let Some(s) = &self.sink {
                ops::axpy(scores[j], &s.value[r.clone()], out);
                j += 1;
            }
            // One `ops::axpy` per cached value, in slot order (the same bits).
            self.ops
                .axpys(&scores[j..j + past.slots], past.v, hd, h * dh, out);
            j += past.slots;
            ops::axpy(scores[j], &v_cur[r.clone()], out);
            if self.bf16 {
                ops_bf16::round(out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Direct re-derivation of the reference formula for one head.
    #[test]
    fn matches_direct_formula() {
        let (hn, dh) = (2, 4);
        let hd = hn * dh;
        let pds: Vec<f32> = (0..dh).map(|i| 0.1 * i as f32 - 0.1).collect();
        let sk: Vec<f32> = (0..hd).map(|i| (i as f32 * 0.37).sin()).collect();
        let sv: Vec<f32> = (0..hd).map(|i| (i as f32 * 0.11).cos()).collect();
        let att = Attention::new(hn, dh, &pds, Some((&sk, &sv)), false, Ops::active());
        let q0: Vec<f32> = (0..hd).map(|i| (i as f32 * 0.7).cos()).collect();
        let pk: Vec<f32> = (0..3 * hd).map(|i| (i as f32 * 0.3).sin()).collect();
        let pv: Vec<f32> = (0..3 * hd).map(|i| (i as f32 * 0.2).cos()).collect();
        let kc: Vec<f32> = (0..hd).map(|i| (i as f32 * 0.9).sin()).collect();
        let vc: Vec<f32> = (0..hd).map(|i| (i as f32 * 0.5).sin()).collect();
        let mut q = q0.clone();
        let mut ctx = vec![0f32; hd];
        let mut scores = vec![0f32; Attention::scores_len(3)];
        let past = KvView {
            k: &pk,
            v: &pv,
            slots: 2,
        };
        att.attend(&mut q, past, &kc, &vc, &mut ctx, &mut scores);
        let scale = query_scale(&pds);
        for h in 0..hn {
            let qh = &q0[h * dh..(h + 1) * dh];
            let qs: Vec<f64> = (0..dh).map(|d| (qh[d] * scale[d]) as f64).collect();
            let dot =
                |a: &[f64], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * *y as f64).sum::<f64>();
            let unscaled: Vec<f64> = qh.iter().map(|&v| v as f64).collect();
            let mut logits = vec![dot(&unscaled, &sk[h * dh..(h + 1) * dh])];
            let mut vals: Vec<&[f32]> = vec![&sv[h * dh..(h + 1) * dh]];
            for s in 0..2 {
                logits.push(dot(&qs, &pk[s * hd + h * dh..s * hd + (h + 1) * dh]));
                vals.push(&pv[s * hd + h * dh..s * hd + (h + 1) * dh]);
            }
            logits.push(dot(&qs, &kc[h * dh..(h + 1) * dh]));
            vals.push(&vc[h * dh..(h + 1) * dh]);
            let m = logits.iter().cloned().fold(f64::MIN, f64::max);
            let e: Vec<f64> = logits.iter().map(|l| (l - m).exp()).collect();
            let z: f64 = e.iter().sum();
            for d in 0..dh {
                let want: f64 = e.iter().zip(&vals).map(|(p, v)| p / z * v[d] as f64).sum();
                assert!((ctx[h * dh + d] as f64 - want).abs() < 1e-5);
            }
        }
    }
}
