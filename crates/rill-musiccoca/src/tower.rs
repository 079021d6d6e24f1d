//! The pieces both towers share (DBraun's `modules.py`): the pre-LN transformer layer
//! (separate Q/K/V in Praxis `DNH` layout, the query scale folded into Q, attention
//! logits capped at `50·tanh(x/50)`, exact-erf GELU) and the CoCa attentional pooler
//! (one learned query, 12 heads × 256, no scale, no cap, then a LayerNorm).
//!
//! A tower sees only the real positions of its input: the text tower's padded positions
//! are masked out of every attention and zeroed in every FFN upstream, so they cannot
//! change the pooled result, and computing them would only cost time.

use std::sync::Mutex;

use rill_kernels::matmul::MatmulScratch;
use rill_kernels::{Matrix, Ops, Pool, WeightFormat};

use crate::{Error, Weights};

/// Model width of both towers.
pub const DIM: usize = 768;
const HEADS: usize = 12;
const HEAD_DIM: usize = 64;
const FFN: usize = 3072;
const POOL_HEADS: usize = 12;
const POOL_DIM: usize = 256;
const LN_EPS: f32 = 1e-6;
const LOGIT_CAP: f32 = 50.0;
/// Query rows per attention task.
const ATTN_ROWS: usize = 16;

/// How a tower runs: its kernels' tier and its threads.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub ops: Ops,
    pub pool: &'a Pool,
}

/// `y = x·W + b` over rows of `x`.
pub(crate) struct Linear {
    w: Matrix,
    b: Option<Vec<f32>>,
}

impl Linear {
    /// From a JAX kernel `[in][out]` (and a bias of `out`).
    pub(crate) fn in_major(
        outs: usize,
        ins: usize,
        kernel: &[f32],
        bias: Option<Vec<f32>>,
    ) -> Linear {
        Linear {
            w: Matrix::from_f32_transposed(outs, ins, kernel, WeightFormat::F32),
            b: bias,
        }
    }

    /// From a kernel laid out `[out][in]`.
    pub(crate) fn out_major(
        outs: usize,
        ins: usize,
        kernel: Vec<f32>,
        bias: Option<Vec<f32>>,
    ) -> Linear {
        Linear {
            w: Matrix::from_f32(outs, ins, kernel, WeightFormat::F32),
            b: bias,
        }
    }

    pub(crate) fn outs(&self) -> usize {
        self.w.rows()
    }

    /// `y[i] = W·x[i] + b` for every row `i` of `x`.
    pub(crate) fn forward(&self, ctx: Ctx, x: &[f32], y: &mut [f32], scratch: &mut MatmulScratch) {
        ctx.ops.matmul(&self.w, x, y, scratch, ctx.pool);
        if let Some(b) = &self.b {
            for row in y.chunks_exact_mut(b.len()) {
                for (v, bi) in row.iter_mut().zip(b) {
                    *v += bi;
                }
            }
        }
    }

    /// [`Linear::forward`] into a new buffer.
    pub(crate) fn apply(&self, ctx: Ctx, x: &[f32], scratch: &mut MatmulScratch) -> Vec<f32> {
        let n = x.len() / self.w.cols();
        let mut y = vec![0.0; n * self.outs()];
        self.forward(ctx, x, &mut y, scratch);
        y
    }
}

/// LayerNorm with direct scale and bias, ε = 1e-6, two-pass statistics.
pub(crate) struct LayerNorm {
    scale: Vec<f32>,
    bias: Vec<f32>,
}

impl LayerNorm {
    pub(crate) fn take(w: &mut Weights, prefix: &str, dim: usize) -> Result<LayerNorm, Error> {
        Ok(LayerNorm {
            scale: w.take(&format!("{prefix}.scale"), &[dim])?,
            bias: w.take(&format!("{prefix}.bias"), &[dim])?,
        })
    }

    fn from_parts(scale: Vec<f32>, bias: Vec<f32>) -> LayerNorm {
        LayerNorm { scale, bias }
    }

    /// Normalises every row of `x` into `out`.
    pub(crate) fn apply(&self, x: &[f32], out: &mut [f32]) {
        let d = self.scale.len();
        for (xr, or) in x.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
            let mean = xr.iter().map(|&v| v as f64).sum::<f64>() / d as f64;
            let var = xr.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / d as f64;
            let r = 1.0 / (var + LN_EPS as f64).sqrt();
            for (((o, &v), s), b) in or.iter_mut().zip(xr).zip(&self.scale).zip(&self.bias) {
                *o = ((v as f64 - mean) * r) as f32 * s + b;
            }
        }
    }
}

/// Exact GELU, `x·Φ(x)` with erf, in place.
pub(crate) fn gelu_erf(x: &mut [f32]) {
    for v in x {
        let a = *v as f64;
        *v = (0.5 * a * (1.0 + libm::erf(a * std::f64::consts::FRAC_1_SQRT_2))) as f32;
    }
}

/// A row-wise softmax in f64 accumulation (the largest logit subtracted first).
pub(crate) fn softmax(x: &mut [f32]) {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f64;
    for v in x.iter_mut() {
        *v = (*v - m).exp();
        sum += *v as f64;
    }
    let inv = (1.0 / sum) as f32;
    for v in x.iter_mut() {
        *v *= inv;
    }
}

/// One pre-LN encoder layer.
struct Layer {
    ln1: LayerNorm,
    qkv: [Linear; 3],
    post: Linear,
    ln2: LayerNorm,
    ffn1: Linear,
    ffn2: Linear,
}

/// Layer `i` of a stacked `[L, …]` tensor.
fn slice(t: &[f32], layers: usize, i: usize) -> &[f32] {
    let n = t.len() / layers;
    &t[i * n..(i + 1) * n]
}

impl Layer {
    fn forward(&self, ctx: Ctx, x: &mut [f32], s: &mut MatmulScratch) {
        let t = x.len() / DIM;
        let mut h = vec![0.0; x.len()];
        self.ln1.apply(x, &mut h);
        let [q, k, v] = [0, 1, 2].map(|i| self.qkv[i].apply(ctx, &h, s));
        attention(ctx, &q, &k, &v, &mut h);
        let o = self.post.apply(ctx, &h, s);
        add(x, &o);
        self.ln2.apply(x, &mut h);
        let mut f = self.ffn1.apply(ctx, &h, s);
        gelu_erf(&mut f);
        self.ffn2.forward(ctx, &f, &mut h[..t * DIM], s);
        add(x, &h);
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// Bidirectional multi-head attention over all rows, logits capped, into `out`
/// (`[T][HEADS·HEAD_DIM]`); tasks of [`ATTN_ROWS`] query rows, every head.
fn attention(ctx: Ctx, q: &[f32], k: &[f32], v: &[f32], out: &mut [f32]) {
    let t = q.len() / DIM;
    let chunks: Vec<Mutex<&mut [f32]>> = out.chunks_mut(ATTN_ROWS * DIM).map(Mutex::new).collect();
    ctx.pool.run(chunks.len(), &|c| {
        let mut guard = chunks[c].lock().unwrap_or_else(|e| e.into_inner());
        let rows: &mut [f32] = &mut guard;
        let mut logits = vec![0.0f32; t];
        for (r, orow) in rows.chunks_exact_mut(DIM).enumerate() {
            let row = c * ATTN_ROWS + r;
            for n in 0..HEADS {
                let off = n * HEAD_DIM;
                let qh = &q[row * DIM + off..][..HEAD_DIM];
                ctx.ops.dots(qh, k, DIM, off, &mut logits);
                for l in logits.iter_mut() {
                    *l = LOGIT_CAP * (*l / LOGIT_CAP).tanh();
                }
                softmax(&mut logits);
                let oh = &mut orow[off..off + HEAD_DIM];
                oh.fill(0.0);
                ctx.ops.axpys(&logits, v, DIM, off, oh);
            }
        }
    });
}

/// The CoCa attentional pooler: `[T][768]` to one `[768]`.
struct Pooler {
    query: Vec<f32>,
    key: Linear,
    value: Linear,
    post: Linear,
    ln: LayerNorm,
}

impl Pooler {
    fn take(w: &mut Weights, p: &str) -> Result<Pooler, Error> {
        let kv = POOL_HEADS * POOL_DIM;
        let mut lin = |name: &str| -> Result<Linear, Error> {
            let k = w.take(
                &format!("{p}.pooler.{name}.kernel"),
                &[DIM, POOL_HEADS, POOL_DIM],
            )?;
            let b = w.take(&format!("{p}.pooler.{name}.bias"), &[POOL_HEADS, POOL_DIM])?;
            Ok(Linear::in_major(kv, DIM, &k, Some(b)))
        };
        let key = lin("key")?;
        let value = lin("value")?;
        let post = Linear::out_major(
            DIM,
            kv,
            w.take(
                &format!("{p}.pooler.post.kernel"),
                &[DIM, POOL_HEADS, POOL_DIM],
            )?,
            Some(w.take(&format!("{p}.pooler.post.bias"), &[DIM])?),
        );
        Ok(Pooler {
            query: w.take(&format!("{p}.pooler.query"), &[POOL_HEADS, POOL_DIM])?,
            key,
            value,
            post,
            ln: LayerNorm::take(w, &format!("{p}.pooler.ln"), DIM)?,
        })
    }

    fn forward(&self, ctx: Ctx, x: &[f32], s: &mut MatmulScratch) -> Vec<f32> {
        let t = x.len() / DIM;
        let kv = POOL_HEADS * POOL_DIM;
        let keys = self.key.apply(ctx, x, s);
        let values = self.value.apply(ctx, x, s);
        let mut pooled = vec![0.0f32; kv];
        let mut logits = vec![0.0f32; t];
        for n in 0..POOL_HEADS {
            let off = n * POOL_DIM;
            ctx.ops.dots(
                &self.query[off..off + POOL_DIM],
                &keys,
                kv,
                off,
                &mut logits,
            );
            softmax(&mut logits);
            ctx.ops
                .axpys(&logits, &values, kv, off, &mut pooled[off..off + POOL_DIM]);
        }
        let mut y = self.post.apply(ctx, &pooled, s);
        let out = y.clone();
        self.ln.apply(&out, &mut y);
        y
    }
}

/// The 12 layers, the final LayerNorm and the pooler of one tower (`text` or `audio`).
pub(crate) struct Tower {
    layers: Vec<Layer>,
    final_ln: LayerNorm,
    pooler: Pooler,
}

impl Tower {
    /// Takes `{p}.layers.*`, `{p}.final_ln.*` and `{p}.pooler.*` from `w`.
    pub(crate) fn take(w: &mut Weights, p: &str) -> Result<Tower, Error> {
        const L: usize = 12;
        let nh = [HEADS, HEAD_DIM];
        let mut t = |name: &str, shape: &[usize]| -> Result<Vec<f32>, Error> {
            let mut full = vec![L];
            full.extend_from_slice(shape);
            w.take(&format!("{p}.layers.{name}"), &full)
        };
        let qkvk = [
            t("q.kernel", &[DIM, HEADS, HEAD_DIM])?,
            t("k.kernel", &[DIM, HEADS, HEAD_DIM])?,
            t("v.kernel", &[DIM, HEADS, HEAD_DIM])?,
        ];
        let qkvb = [t("q.bias", &nh)?, t("k.bias", &nh)?, t("v.bias", &nh)?];
        let post_k = t("post.kernel", &[DIM, HEADS, HEAD_DIM])?;
        let post_b = t("post.bias", &[DIM])?;
        let ln = [
            t("ln1.scale", &[DIM])?,
            t("ln1.bias", &[DIM])?,
            t("ln2.scale", &[DIM])?,
            t("ln2.bias", &[DIM])?,
        ];
        let ffn = [
            t("ffn1.kernel", &[DIM, FFN])?,
            t("ffn1.bias", &[FFN])?,
            t("ffn2.kernel", &[FFN, DIM])?,
            t("ffn2.bias", &[DIM])?,
        ];
        let layers = (0..L)
            .map(|i| Layer {
                ln1: LayerNorm::from_parts(
                    slice(&ln[0], L, i).to_vec(),
                    slice(&ln[1], L, i).to_vec(),
                ),
                qkv: [0, 1, 2].map(|j| {
                    Linear::in_major(
                        DIM,
                        DIM,
                        slice(&qkvk[j], L, i),
                        Some(slice(&qkvb[j], L, i).to_vec()),
                    )
                }),
                post: Linear::out_major(
                    DIM,
                    DIM,
                    slice(&post_k, L, i).to_vec(),
                    Some(slice(&post_b, L, i).to_vec()),
                ),
                ln2: LayerNorm::from_parts(
                    slice(&ln[2], L, i).to_vec(),
                    slice(&ln[3], L, i).to_vec(),
                ),
                ffn1: Linear::in_major(
                    FFN,
                    DIM,
                    slice(&ffn[0], L, i),
                    Some(slice(&ffn[1], L, i).to_vec()),
                ),
                ffn2: Linear::in_major(
                    DIM,
                    FFN,
                    slice(&ffn[2], L, i),
                    Some(slice(&ffn[3], L, i).to_vec()),
                ),
            })
            .collect();
        Ok(Tower {
            layers,
            final_ln: LayerNorm::take(w, &format!("{p}.final_ln"), DIM)?,
            pooler: Pooler::take(w, p)?,
        })
    }

    /// The pooled embedding of `x` (`[T][768]`, the tower's input rows, consumed).
    pub(crate) fn forward(&self, ctx: Ctx, mut x: Vec<f32>, s: &mut MatmulScratch) -> Vec<f32> {
        for layer in &self.layers {
            layer.forward(ctx, &mut x, s);
        }
        let mut h = vec![0.0; x.len()];
        self.final_ln.apply(&x, &mut h);
        self.pooler.forward(ctx, &h, s)
    }

    /// The rows after layer `n` (tests compare them with the oracle's intermediates).
    pub(crate) fn run_layers(&self, ctx: Ctx, x: &mut [f32], n: usize, s: &mut MatmulScratch) {
        for layer in &self.layers[..n] {
            layer.forward(ctx, x, s);
        }
    }
}
