//! Transformer pieces of `transformer_2501.py` (spec §1.3), named like the checkpoint
//! keys. One [`TransformerLayer`] serves the encoder (causal, conv kernel 3), the
//! decoder (causal, kernel 1, cross-attention 1×128) and the local transformer.
//!
//! A forward call processes `n` new rows at absolute positions `past.rows ..
//! past.rows + n`: they attend to the past keys/values (read-only) and causally to
//! each other. The new rows' keys/values are written to caller-provided slices; the
//! caller owns the caches and appends them.

use rill_kernels::{ops, Matrix, Pool, WeightFormat};

use crate::error::Result;
use crate::weights::Weights;

/// `torch.nn.LayerNorm` epsilon.
pub const LN_EPS: f32 = 1e-5;
/// `torch.finfo(float32).tiny`, added to the prior before it multiplies (`tr.py:140`).
pub const TINY_F32: f32 = f32::MIN_POSITIVE;

/// `torch.nn.LayerNorm(d, bias=False)`: `(x − mean)/√(var + eps)·w`, biased variance.
#[derive(Debug, Clone)]
pub struct LayerNorm {
    pub weight: Vec<f32>,
}

impl LayerNorm {
    pub(crate) fn load(w: &mut Weights, name: &str) -> Result<Self> {
        Ok(LayerNorm {
            weight: w.take_f32(&format!("{name}.weight"))?,
        })
    }

    pub fn apply(&self, x: &[f32], out: &mut [f32]) {
        let n = x.len() as f32;
        let mean = ops::sum(x) / n;
        let mut acc = [0f32; 8];
        let n8 = x.len() / 8 * 8;
        for c in x[..n8].chunks_exact(8) {
            for l in 0..8 {
                let d = c[l] - mean;
                acc[l] += d * d;
            }
        }
        let mut var = acc.iter().sum::<f32>();
        for v in &x[n8..] {
            var += (v - mean) * (v - mean);
        }
        let r = 1.0 / (var / n + LN_EPS).sqrt();
        for ((o, xi), wi) in out.iter_mut().zip(x).zip(&self.weight) {
            *o = (xi - mean) * r * wi;
        }
    }
}

/// A bias-free linear layer `(out, in)` as a GEMV matrix.
pub(crate) fn linear(w: &mut Weights, name: &str) -> Result<Matrix> {
    let shape = w.get(name).map(|t| t.shape.clone()).unwrap_or_default();
    let v = w.take_f32(name)?;
    let rows = shape.first().copied().unwrap_or(0);
    let cols = v.len().checked_div(rows).unwrap_or(0);
    Ok(Matrix::from_f32(rows, cols, v, WeightFormat::F32))
}

/// `y[r] = W·x[r]` for each of the rows of `x`.
pub(crate) fn gemv_rows(m: &Matrix, x: &[f32], y: &mut [f32], pool: &Pool) {
    let (c, r) = (m.cols(), m.rows());
    for (xi, yi) in x.chunks_exact(c).zip(y.chunks_exact_mut(r)) {
        m.gemv(xi, yi, pool);
    }
}

/// Past keys and values of one attention layer: `rows` rows of `H·Dh` floats each.
#[derive(Debug, Clone, Copy)]
pub struct KvPast<'a> {
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub rows: usize,
}

impl KvPast<'_> {
    pub const EMPTY: KvPast<'static> = KvPast {
        k: &[],
        v: &[],
        rows: 0,
    };
}

/// Cross-attention inputs of one sequence: per-layer memory keys/values (`T × 128`)
/// and the prior row (`T`), if it applies to this layer.
#[derive(Debug, Clone, Copy)]
pub struct CrossInput<'a> {
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub prior: Option<&'a [f32]>,
}

/// Activations of a forward call over up to `rows` rows (allocated once).
#[derive(Debug, Clone)]
pub struct LayerScratch {
    h: Vec<f32>,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    out: Vec<f32>,
    hidden: Vec<f32>,
    conv_in: Vec<f32>,
    scores: Vec<f32>,
    xq: Vec<f32>,
    xctx: Vec<f32>,
    probs: Vec<f32>,
}

impl LayerScratch {
    /// For `rows` new rows of width `dim`, FFN `ffn`, conv kernel `kernel`, up to
    /// `keys` visible keys and `text` memory rows of cross-attention width `xattn`.
    pub fn new(
        rows: usize,
        dim: usize,
        ffn: usize,
        kernel: usize,
        keys: usize,
        xattn: usize,
        text: usize,
    ) -> Self {
        LayerScratch {
            h: vec![0.0; rows * dim],
            qkv: vec![0.0; rows * 3 * dim],
            ctx: vec![0.0; rows * dim],
            out: vec![0.0; rows * dim],
            hidden: vec![0.0; rows * ffn],
            conv_in: vec![0.0; kernel * ffn.max(dim)],
            scores: vec![0.0; keys],
            xq: vec![0.0; xattn],
            xctx: vec![0.0; xattn],
            probs: vec![0.0; text],
        }
    }
}

/// Causal multi-head self-attention (`tr.py:188-252`): fused `qkv_net` with Q, K, V
/// row blocks, scores `Q·Kᵀ·Dh^-½`, softmax, `o_net`.
#[derive(Debug, Clone)]
pub struct SelfAttention {
    pub qkv_net: Matrix,
    pub o_net: Matrix,
    pub heads: usize,
    pub head_dim: usize,
}

impl SelfAttention {
    fn load(w: &mut Weights, p: &str, heads: usize) -> Result<Self> {
        let qkv_net = linear(w, &format!("{p}.qkv_net.weight"))?;
        let o_net = linear(w, &format!("{p}.o_net.weight"))?;
        let head_dim = o_net.cols() / heads;
        Ok(SelfAttention {
            qkv_net,
            o_net,
            heads,
            head_dim,
        })
    }

    /// `x[r] += o_net(attn(h[r]))` for the `n` rows of `h`; writes their K/V.
    fn forward(
        &self,
        n: usize,
        x: &mut [f32],
        past: KvPast<'_>,
        new_k: &mut [f32],
        new_v: &mut [f32],
        s: &mut LayerScratch,
        pool: &Pool,
    ) {
        let (hn, dh) = (self.heads, self.head_dim);
        let hd = hn * dh;
        let d = self.o_net.rows();
        gemv_rows(&self.qkv_net, &s.h[..n * d], &mut s.qkv[..n * 3 * hd], pool);
        for r in 0..n {
            let row = &s.qkv[r * 3 * hd..(r + 1) * 3 * hd];
            new_k[r * hd..(r + 1) * hd].copy_from_slice(&row[hd..2 * hd]);
            new_v[r * hd..(r + 1) * hd].copy_from_slice(&row[2 * hd..]);
        }
        let scale = 1.0 / (dh as f32).sqrt();
        for r in 0..n {
            let keys = past.rows + r + 1;
            for h in 0..hn {
                let q = &s.qkv[r * 3 * hd + h * dh..r * 3 * hd + (h + 1) * dh];
                let key = |j: usize| {
                    if j < past.rows {
                        &past.k[j * hd + h * dh..j * hd + (h + 1) * dh]
                    } else {
                        let j = j - past.rows;
                        &new_k[j * hd + h * dh..j * hd + (h + 1) * dh]
                    }
                };
                let sc = &mut s.scores[..keys];
                for (j, o) in sc.iter_mut().enumerate() {
                    *o = ops::dot(q, key(j)) * scale;
                }
                ops::softmax(sc);
                let out = &mut s.ctx[r * hd + h * dh..r * hd + (h + 1) * dh];
                out.fill(0.0);
                for (j, &p) in sc.iter().enumerate() {
                    let val = if j < past.rows {
                        &past.v[j * hd + h * dh..j * hd + (h + 1) * dh]
                    } else {
                        let j = j - past.rows;
                        &new_v[j * hd + h * dh..j * hd + (h + 1) * dh]
                    };
                    ops::axpy(p, val, out);
                }
            }
        }
        gemv_rows(&self.o_net, &s.ctx[..n * hd], &mut s.out[..n * d], pool);
        ops::add_in_place(&mut x[..n * d], &s.out[..n * d]);
    }
}

/// One-head cross-attention to the text memory (`tr.py:255-314`) with the inference
/// attention prior (`tr.py:121-143`): `p = softmax(q·Kᵀ·128^-½)`, then
/// `p ← p·(prior + tiny) / Σ`.
#[derive(Debug, Clone)]
pub struct CrossAttention {
    pub q_net: Matrix,
    /// Memory projection: K rows `[0, 128)`, V rows `[128, 256)`.
    pub kv_net: Matrix,
    pub o_net: Matrix,
}

impl CrossAttention {
    fn load(w: &mut Weights, p: &str) -> Result<Self> {
        Ok(CrossAttention {
            q_net: linear(w, &format!("{p}.q_net.weight"))?,
            kv_net: linear(w, &format!("{p}.kv_net.weight"))?,
            o_net: linear(w, &format!("{p}.o_net.weight"))?,
        })
    }

    /// Memory keys and values of `memory_normed` (`T × D`, already through the layer's
    /// memory LN): `k`, `v` are `T × 128`.
    pub fn memory(&self, memory_normed: &[f32], k: &mut [f32], v: &mut [f32], pool: &Pool) {
        let (d, x) = (self.kv_net.cols(), self.q_net.rows());
        let mut kv = vec![0f32; 2 * x];
        for (t, m) in memory_normed.chunks_exact(d).enumerate() {
            self.kv_net.gemv(m, &mut kv, pool);
            k[t * x..(t + 1) * x].copy_from_slice(&kv[..x]);
            v[t * x..(t + 1) * x].copy_from_slice(&kv[x..]);
        }
    }

    /// `x += o_net(attn(h))` for one row; leaves the probabilities in `s.probs[..T]`.
    fn forward_row(
        &self,
        h: &[f32],
        x: &mut [f32],
        mem: CrossInput<'_>,
        s: &mut LayerScratch,
        pool: &Pool,
    ) {
        let xd = self.q_net.rows();
        let t = mem.k.len() / xd;
        self.q_net.gemv(h, &mut s.xq, pool);
        let scale = 1.0 / (xd as f32).sqrt();
        let p = &mut s.probs[..t];
        for (j, o) in p.iter_mut().enumerate() {
            *o = ops::dot(&s.xq, &mem.k[j * xd..(j + 1) * xd]) * scale;
        }
        ops::softmax(p);
        if let Some(prior) = mem.prior {
            for (pi, &a) in p.iter_mut().zip(prior) {
                *pi *= a + TINY_F32;
            }
            let inv = ops::sum(p);
            for pi in p.iter_mut() {
                *pi /= inv;
            }
        }
        s.xctx.fill(0.0);
        for (j, &pj) in p.iter().enumerate() {
            ops::axpy(pj, &mem.v[j * xd..(j + 1) * xd], &mut s.xctx);
        }
        let d = self.o_net.rows();
        self.o_net.gemv(&s.xctx, &mut s.out[..d], pool);
        ops::add_in_place(x, &s.out[..d]);
    }
}

/// `PositionwiseConvFF` (`ffn_modules.py:103-145`): causal bias-free conv D→F of width
/// k, GELU(tanh), causal conv F→D. A conv weight `(out, in, k)` is used as an
/// `(out, in·k)` matrix against the input laid out `v[i·k + j] = x[t − (k−1) + j][i]`.
#[derive(Debug, Clone)]
pub struct PositionwiseConvFF {
    pub proj: Matrix,
    pub o_net: Matrix,
    pub kernel: usize,
}

impl PositionwiseConvFF {
    fn load(w: &mut Weights, p: &str) -> Result<Self> {
        let name = format!("{p}.proj.conv.weight");
        let kernel = w
            .get(&name)
            .and_then(|t| t.shape.get(2).copied())
            .unwrap_or(1);
        Ok(PositionwiseConvFF {
            proj: linear(w, &name)?,
            o_net: linear(w, &format!("{p}.o_net.conv.weight"))?,
            kernel,
        })
    }

    /// `x[t] += ff(h)[t]` for `n` rows; with kernel > 1 the rows must start at
    /// position 0 (the zero left padding), which is how the encoder runs.
    fn forward(&self, n: usize, x: &mut [f32], s: &mut LayerScratch, pool: &Pool) {
        let (d, f, k) = (self.o_net.rows(), self.proj.rows(), self.kernel);
        for t in 0..n {
            let hid = &mut s.hidden[t * f..(t + 1) * f];
            if k == 1 {
                self.proj.gemv(&s.h[t * d..(t + 1) * d], hid, pool);
            } else {
                interleave(&s.h, d, t, k, &mut s.conv_in[..k * d]);
                self.proj.gemv(&s.conv_in[..k * d], hid, pool);
            }
            ops::gelu_tanh(hid);
        }
        for t in 0..n {
            let out = &mut s.out[t * d..(t + 1) * d];
            if k == 1 {
                self.o_net.gemv(&s.hidden[t * f..(t + 1) * f], out, pool);
            } else {
                interleave(&s.hidden, f, t, k, &mut s.conv_in[..k * f]);
                self.o_net.gemv(&s.conv_in[..k * f], out, pool);
            }
            ops::add_in_place(&mut x[t * d..(t + 1) * d], out);
        }
    }
}

/// `v[i·k + j] = rows[t − (k−1) + j][i]`, zero before row 0.
fn interleave(rows: &[f32], width: usize, t: usize, k: usize, v: &mut [f32]) {
    for j in 0..k {
        let src = (t + j).checked_sub(k - 1);
        for i in 0..width {
            v[i * k + j] = src.map_or(0.0, |r| rows[r * width + i]);
        }
    }
}

/// The cross-attention half of a decoder layer.
#[derive(Debug, Clone)]
pub struct CrossBlock {
    pub norm_xattn_query: LayerNorm,
    pub cross_attention: CrossAttention,
    /// LN of the text memory, per layer (`tr.py:389-391`).
    pub norm_xattn_memory: LayerNorm,
}

/// `TransformerLayer` (`tr.py:437-511`): pre-LN self-attention, optional
/// cross-attention, conv FFN, each residual.
#[derive(Debug, Clone)]
pub struct TransformerLayer {
    pub norm_self: LayerNorm,
    pub self_attention: SelfAttention,
    pub cross: Option<CrossBlock>,
    pub norm_pos_ff: LayerNorm,
    pub pos_ff: PositionwiseConvFF,
}

impl TransformerLayer {
    pub(crate) fn load(w: &mut Weights, p: &str, heads: usize, xattn: bool) -> Result<Self> {
        let cross = if xattn {
            Some(CrossBlock {
                norm_xattn_query: LayerNorm::load(w, &format!("{p}.norm_xattn_query"))?,
                cross_attention: CrossAttention::load(w, &format!("{p}.cross_attention"))?,
                norm_xattn_memory: LayerNorm::load(w, &format!("{p}.norm_xattn_memory"))?,
            })
        } else {
            None
        };
        Ok(TransformerLayer {
            norm_self: LayerNorm::load(w, &format!("{p}.norm_self"))?,
            self_attention: SelfAttention::load(w, &format!("{p}.self_attention"), heads)?,
            cross,
            norm_pos_ff: LayerNorm::load(w, &format!("{p}.norm_pos_ff"))?,
            pos_ff: PositionwiseConvFF::load(w, &format!("{p}.pos_ff"))?,
        })
    }

    /// Runs the layer over the `n` rows of `x` (`n × D`, in place). `cross`: the
    /// memory of this sequence, or `None` for the CFG unconditional row, whose
    /// cross-attention output is exactly zero (zero memory, spec §4.2). Returns the
    /// cross-attention probabilities of the last row in `probs` when given.
    pub fn forward(
        &self,
        n: usize,
        x: &mut [f32],
        past: KvPast<'_>,
        new_k: &mut [f32],
        new_v: &mut [f32],
        cross: Option<CrossInput<'_>>,
        probs: Option<&mut [f32]>,
        s: &mut LayerScratch,
        pool: &Pool,
    ) {
        let d = self.norm_self.weight.len();
        for r in 0..n {
            self.norm_self
                .apply(&x[r * d..(r + 1) * d], &mut s.h[r * d..(r + 1) * d]);
        }
        self.self_attention
            .forward(n, x, past, new_k, new_v, s, pool);
        if let (Some(c), Some(mem)) = (&self.cross, cross) {
            let mut h = std::mem::take(&mut s.h);
            for r in 0..n {
                let hr = &mut h[..d];
                c.norm_xattn_query.apply(&x[r * d..(r + 1) * d], hr);
                c.cross_attention
                    .forward_row(hr, &mut x[r * d..(r + 1) * d], mem, s, pool);
            }
            s.h = h;
            if let Some(out) = probs {
                let t = mem.k.len() / c.cross_attention.q_net.rows();
                out[..t].copy_from_slice(&s.probs[..t]);
            }
        }
        for r in 0..n {
            self.norm_pos_ff
                .apply(&x[r * d..(r + 1) * d], &mut s.h[r * d..(r + 1) * d]);
        }
        self.pos_ff.forward(n, x, s, pool);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }

    fn rand(n: usize, seed: &mut u64) -> Vec<f32> {
        (0..n).map(|_| lcg(seed)).collect()
    }

    fn matrix(rows: usize, cols: usize, seed: &mut u64) -> (Matrix, Vec<f32>) {
        let v = rand(rows * cols, seed);
        (
            Matrix::from_f32(rows, cols, v.clone(), WeightFormat::F32),
            v,
        )
    }

    /// The kernel-3 causal conv FFN against the direct formula
    /// `y[t] = Σ_j W2_j·gelu(Σ_j' W1_j'·h[t−2+j'])[t−2+j]` with zero padding.
    #[test]
    fn causal_conv_ffn_matches_direct_formula() {
        let (d, f, k, n) = (8, 16, 3, 5);
        let mut seed = 11;
        let (proj, w1) = matrix(f, d * k, &mut seed);
        let (o_net, w2) = matrix(d, f * k, &mut seed);
        let ff = PositionwiseConvFF {
            proj,
            o_net,
            kernel: k,
        };
        let mut s = LayerScratch::new(n, d, f, k, n, 1, 1);
        let h = rand(n * d, &mut seed);
        s.h[..n * d].copy_from_slice(&h);
        let mut x = vec![0f32; n * d];
        let pool = Pool::new(1);
        ff.forward(n, &mut x, &mut s, &pool);
        let gelu = |v: f64| {
            0.5 * v
                * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh())
        };
        let mut hid = vec![0f64; n * f];
        for t in 0..n {
            for o in 0..f {
                let mut acc = 0f64;
                for j in 0..k {
                    let Some(src) = (t + j).checked_sub(k - 1) else {
                        continue;
                    };
                    for i in 0..d {
                        acc += w1[o * d * k + i * k + j] as f64 * h[src * d + i] as f64;
                    }
                }
                hid[t * f + o] = gelu(acc);
            }
        }
        for t in 0..n {
            for o in 0..d {
                let mut acc = 0f64;
                for j in 0..k {
                    let Some(src) = (t + j).checked_sub(k - 1) else {
                        continue;
                    };
                    for i in 0..f {
                        acc += w2[o * f * k + i * k + j] as f64 * hid[src * f + i];
                    }
                }
                assert!((x[t * d + o] as f64 - acc).abs() < 1e-5, "t {t} o {o}");
            }
        }
    }

    /// A layer over n rows at once equals n one-row calls on a host-appended cache.
    #[test]
    fn rows_at_once_equal_cached_steps() {
        let (d, heads, f, n, xd, t) = (128, 2, 64, 6, 16, 5);
        let mut seed = 5;
        let norm = |seed: &mut u64| LayerNorm {
            weight: rand(d, seed).iter().map(|v| 1.0 + v).collect(),
        };
        let layer = TransformerLayer {
            norm_self: norm(&mut seed),
            self_attention: SelfAttention {
                qkv_net: matrix(3 * d, d, &mut seed).0,
                o_net: matrix(d, d, &mut seed).0,
                heads,
                head_dim: d / heads,
            },
            cross: Some(CrossBlock {
                norm_xattn_query: norm(&mut seed),
                cross_attention: CrossAttention {
                    q_net: matrix(xd, d, &mut seed).0,
                    kv_net: matrix(2 * xd, d, &mut seed).0,
                    o_net: matrix(d, xd, &mut seed).0,
                },
                norm_xattn_memory: norm(&mut seed),
            }),
            norm_pos_ff: norm(&mut seed),
            pos_ff: PositionwiseConvFF {
                proj: matrix(f, d, &mut seed).0,
                o_net: matrix(d, f, &mut seed).0,
                kernel: 1,
            },
        };
        let (mk, mv) = (rand(t * xd, &mut seed), rand(t * xd, &mut seed));
        let prior: Vec<f32> = (0..t).map(|i| if i == 2 { 1.0 } else { 0.1 }).collect();
        let mem = CrossInput {
            k: &mk,
            v: &mv,
            prior: Some(&prior),
        };
        let x0 = rand(n * d, &mut seed);
        let pool = Pool::new(2);
        let mut all = x0.clone();
        let (mut k, mut v) = (vec![0f32; n * d], vec![0f32; n * d]);
        let mut s = LayerScratch::new(n, d, f, 1, n, xd, t);
        let mut p_all = vec![0f32; t];
        layer.forward(
            n,
            &mut all,
            KvPast::EMPTY,
            &mut k,
            &mut v,
            Some(mem),
            Some(&mut p_all),
            &mut s,
            &pool,
        );
        let (mut ck, mut cv) = (vec![0f32; n * d], vec![0f32; n * d]);
        let mut s1 = LayerScratch::new(1, d, f, 1, n, xd, t);
        let mut p_one = vec![0f32; t];
        for r in 0..n {
            let mut row = x0[r * d..(r + 1) * d].to_vec();
            let (past_k, new_k) = ck.split_at_mut(r * d);
            let (past_v, new_v) = cv.split_at_mut(r * d);
            let past = KvPast {
                k: past_k,
                v: past_v,
                rows: r,
            };
            layer.forward(
                1,
                &mut row,
                past,
                &mut new_k[..d],
                &mut new_v[..d],
                Some(mem),
                Some(&mut p_one),
                &mut s1,
                &pool,
            );
            for (a, b) in row.iter().zip(&all[r * d..(r + 1) * d]) {
                assert!((a - b).abs() < 1e-5, "row {r}: {a} vs {b}");
            }
        }
        assert_eq!(ck, k);
        for (a, b) in p_one.iter().zip(&p_all) {
            assert!((a - b).abs() < 1e-7);
        }
        // The prior renormalises: probabilities sum to 1 and favour position 2.
        assert!((p_all.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn layer_norm_is_bias_free_torch() {
        let ln = LayerNorm {
            weight: vec![2.0; 4],
        };
        let mut o = [0f32; 4];
        ln.apply(&[1.0, 2.0, 3.0, 4.0], &mut o);
        let sd = (1.25f32 + LN_EPS).sqrt();
        for (a, x) in o.iter().zip([1.0f32, 2.0, 3.0, 4.0]) {
            assert!((a - 2.0 * (x - 2.5) / sd).abs() < 1e-6);
        }
        // LN(0) = 0: the CFG row's zero memory has zero keys and values.
        ln.apply(&[0.0; 4], &mut o);
        assert_eq!(o, [0.0; 4]);
    }
}
