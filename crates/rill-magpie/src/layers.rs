//! Transformer pieces of `transformer_2501.py` (spec §1.3), named like the checkpoint
//! keys. One [`TransformerLayer`] serves the encoder (causal, conv kernel 3), the
//! decoder (causal, kernel 1, cross-attention 1×128) and the local transformer.
//!
//! A forward call processes `n` new rows at absolute positions `past.rows ..
//! past.rows + n`: they attend to the past keys/values (read-only) and causally to
//! each other. The new rows' keys/values are written to caller-provided slices; the
//! caller owns the caches and appends them.

//!
//! Every kernel with a per-tier build runs through the [`Ops`] the model resolved
//! at load, passed down each call.

use rill_kernels::matmul::MatmulScratch;
use rill_kernels::{ops, GemvScratch, Matrix, Ops, Pool, WeightFormat};

use crate::error::Result;
use crate::weights::Weights;

mod self_attention;
pub use self_attention::SelfAttention;

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
        let (mean, r) = ops::layer_norm_stats(x, LN_EPS);
        for ((o, xi), wi) in out.iter_mut().zip(x).zip(&self.weight) {
            *o = (xi - mean) * r * wi;
        }
    }
}

/// A bias-free linear layer `(out, in)` as a GEMV matrix, in the weights' matrix
/// format (f32 unless [`crate::Model::with_format`] chose another; f32 weights that
/// are all exact halves are kept as f16, which computes the same bits).
pub(crate) fn linear(w: &mut Weights, name: &str) -> Result<Matrix> {
    let shape = w.get(name).map(|t| t.shape.clone()).unwrap_or_default();
    let v = w.take_f32(name)?;
    let rows = shape.first().copied().unwrap_or(0);
    let cols = v.len().checked_div(rows).unwrap_or(0);
    let format = w.matrix_format;
    // MLX-style groups need whole groups along the input.
    let format = match format {
        WeightFormat::Int8 | WeightFormat::Int4 | WeightFormat::Lut4 | WeightFormat::MlxInt8
            if cols % 64 != 0 =>
        {
            WeightFormat::F32
        }
        // Exact halves (NVIDIA's F16 GGUF) under f32: the same bits, half the bytes.
        WeightFormat::F32 if rill_kernels::all_exact_f16(&v) => WeightFormat::F16,
        f => f,
    };
    Ok(Matrix::from_f32(rows, cols, v, format))
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

/// One sequence of a layer call: its past (read-only), where its new rows' keys and
/// values go (`n × H·Dh` each), its cross-attention memory (`None` for the CFG
/// unconditional row, whose cross-attention output is exactly zero) and where the
/// cross-attention probabilities of its last row go.
#[derive(Debug)]
pub struct SeqIo<'a> {
    pub past: KvPast<'a>,
    pub new_k: &'a mut [f32],
    pub new_v: &'a mut [f32],
    pub cross: Option<CrossInput<'a>>,
    pub probs: Option<&'a mut [f32]>,
}

impl<'a> SeqIo<'a> {
    /// A sequence with no past and no cross-attention memory (the text encoder's
    /// rows) whose new keys and values go to `new_k`, `new_v`.
    pub fn fresh(new_k: &'a mut [f32], new_v: &'a mut [f32]) -> SeqIo<'a> {
        SeqIo {
            past: KvPast::EMPTY,
            new_k,
            new_v,
            cross: None,
            probs: None,
        }
    }

    /// A placeholder for unused slots of a fixed-size batch array.
    pub fn unused() -> SeqIo<'static> {
        SeqIo::fresh(&mut [], &mut [])
    }
}

/// `x += m·inp` for every row (a sublayer's output projection and its residual
/// add), through `out`.
fn project_residual(
    ops: Ops,
    m: &Matrix,
    inp: &[f32],
    x: &mut [f32],
    out: &mut [f32],
    products: &mut MatmulScratch,
    pool: &Pool,
) {
    ops.matmul(m, inp, out, products, pool);
    ops::add_in_place(x, out);
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
    products: MatmulScratch,
}

impl LayerScratch {
    /// For `rows` new rows in all (sequences × rows each) of width `dim`, FFN `ffn`, conv kernel `kernel`, up to
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
            conv_in: if kernel > 1 {
                vec![0.0; rows * kernel * ffn.max(dim)]
            } else {
                Vec::new()
            },
            scores: vec![0.0; keys],
            xq: vec![0.0; rows * xattn],
            xctx: vec![0.0; rows * xattn],
            probs: vec![0.0; text],
            products: MatmulScratch::new(),
        }
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
    pub fn memory(
        &self,
        ops: Ops,
        memory_normed: &[f32],
        k: &mut [f32],
        v: &mut [f32],
        scratch: &mut GemvScratch,
        pool: &Pool,
    ) {
        let (d, x) = (self.kv_net.cols(), self.q_net.rows());
        let mut kv = vec![0f32; 2 * x];
        for (t, m) in memory_normed.chunks_exact(d).enumerate() {
            ops.gemv(&self.kv_net, m, &mut kv, scratch, pool);
            k[t * x..(t + 1) * x].copy_from_slice(&kv[..x]);
            v[t * x..(t + 1) * x].copy_from_slice(&kv[x..]);
        }
    }

    /// `x[r] += o_net(attn(h[r]))` for the rows of `s.h` of the sequences that have a
    /// memory (the others get exactly zero); copies each such sequence's last-row
    /// probabilities to its `probs`.
    fn forward(
        &self,
        ops: Ops,
        n: usize,
        x: &mut [f32],
        seqs: &mut [SeqIo<'_>],
        s: &mut LayerScratch,
        pool: &Pool,
    ) {
        let (d, xd) = (self.q_net.cols(), self.q_net.rows());
        let bn = seqs.len() * n;
        ops.matmul(
            &self.q_net,
            &s.h[..bn * d],
            &mut s.xq[..bn * xd],
            &mut s.products,
            pool,
        );
        let scale = 1.0 / (xd as f32).sqrt();
        for (b, io) in seqs.iter_mut().enumerate() {
            let rows = b * n * xd..(b + 1) * n * xd;
            let Some(mem) = io.cross else {
                s.xctx[rows].fill(0.0);
                continue;
            };
            let t = mem.k.len() / xd;
            for r in 0..n {
                let o = (b * n + r) * xd;
                let q = &s.xq[o..o + xd];
                let p = &mut s.probs[..t];
                ops.dots(q, mem.k, xd, 0, p);
                for pj in p.iter_mut() {
                    *pj *= scale;
                }
                ops::softmax(p);
                if let Some(prior) = mem.prior {
                    for (pi, &a) in p.iter_mut().zip(prior) {
                        *pi *= a + TINY_F32;
                    }
                    let sum = ops::sum(p);
                    for pi in p.iter_mut() {
                        *pi /= sum;
                    }
                }
                let ctx = &mut s.xctx[o..o + xd];
                ctx.fill(0.0);
                ops.axpys(p, mem.v, xd, 0, ctx);
            }
            if let Some(out) = io.probs.as_deref_mut() {
                out[..t].copy_from_slice(&s.probs[..t]);
            }
        }
        // The rows without memory have a zero context, so o_net adds exactly 0.
        project_residual(
            ops,
            &self.o_net,
            &s.xctx[..bn * xd],
            &mut x[..bn * d],
            &mut s.out[..bn * d],
            &mut s.products,
            pool,
        );
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

    /// `x[t] += ff(h)[t]` for the `n` rows of each of `seqs` sequences; with a kernel
    /// wider than 1 every sequence must start at position 0 (the zero left padding),
    /// which is how the encoder runs.
    fn forward(
        &self,
        ops: Ops,
        seqs: usize,
        n: usize,
        x: &mut [f32],
        s: &mut LayerScratch,
        pool: &Pool,
    ) {
        let (d, f, k) = (self.o_net.rows(), self.proj.rows(), self.kernel);
        let bn = seqs * n;
        causal_conv(
            ops,
            &self.proj,
            k,
            (seqs, n),
            &s.h[..bn * d],
            &mut s.conv_in,
            &mut s.hidden[..bn * f],
            &mut s.products,
            pool,
        );
        ops.gelu_tanh(&mut s.hidden[..bn * f]);
        causal_conv(
            ops,
            &self.o_net,
            k,
            (seqs, n),
            &s.hidden[..bn * f],
            &mut s.conv_in,
            &mut s.out[..bn * d],
            &mut s.products,
            pool,
        );
        ops::add_in_place(&mut x[..bn * d], &s.out[..bn * d]);
    }
}

/// `dst[b·n + t] = m · [src[t−k+1] … src[t]]` for each of `seqs` sequences of `n`
/// rows of `src.len() / (seqs·n)` floats (a bias-free causal conv of kernel `k` as
/// one product over interleaved taps; `k == 1` is a plain linear layer).
#[allow(clippy::too_many_arguments)]
fn causal_conv(
    ops: Ops,
    m: &Matrix,
    k: usize,
    (seqs, n): (usize, usize),
    src: &[f32],
    conv_in: &mut [f32],
    dst: &mut [f32],
    products: &mut MatmulScratch,
    pool: &Pool,
) {
    if k == 1 {
        return ops.matmul(m, src, dst, products, pool);
    }
    if seqs * n == 0 {
        return;
    }
    let width = src.len() / (seqs * n);
    for b in 0..seqs {
        for t in 0..n {
            let o = (b * n + t) * k * width;
            interleave(
                &src[b * n * width..(b + 1) * n * width],
                width,
                t,
                k,
                &mut conv_in[o..o + k * width],
            );
        }
    }
    ops.matmul(m, &conv_in[..seqs * n * k * width], dst, products, pool);
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

    /// The layer's weight matrices.
    pub fn matrices(&self) -> Vec<&Matrix> {
        let a = &self.self_attention;
        let mut m = vec![&a.qkv_net, &a.o_net, &self.pos_ff.proj, &self.pos_ff.o_net];
        if let Some(c) = &self.cross {
            let x = &c.cross_attention;
            m.extend([&x.q_net, &x.kv_net, &x.o_net]);
        }
        m
    }

    /// Runs the layer over `n` new rows of each sequence (`x`: `seqs.len() × n × D`,
    /// in place) on the kernels `ops`. Sequences are independent (attention never
    /// crosses them); they share each weight read.
    pub fn forward(
        &self,
        ops: Ops,
        n: usize,
        x: &mut [f32],
        seqs: &mut [SeqIo<'_>],
        s: &mut LayerScratch,
        pool: &Pool,
    ) {
        let d = self.norm_self.weight.len();
        let bn = seqs.len() * n;
        let norm = |ln: &LayerNorm, x: &[f32], h: &mut [f32]| {
            for (xr, hr) in x[..bn * d].chunks_exact(d).zip(h.chunks_exact_mut(d)) {
                ln.apply(xr, hr);
            }
        };
        norm(&self.norm_self, x, &mut s.h);
        self.self_attention.forward(ops, n, x, seqs, s, pool);
        if let Some(c) = &self.cross {
            norm(&c.norm_xattn_query, x, &mut s.h);
            c.cross_attention.forward(ops, n, x, seqs, s, pool);
        }
        norm(&self.norm_pos_ff, x, &mut s.h);
        self.pos_ff.forward(ops, seqs.len(), n, x, s, pool);
    }
}

#[cfg(test)]
#[path = "layers_tests.rs"]
mod tests;
