//! Transformer blocks of the temporal and depth stacks (spec §1.3).
//!
//! Every residual branch is primer-hybrid: `x += post_norm(f(pre_norm(x)))` with
//! RMSNorm (eps 1e-6). Step functions are pure with respect to caches: they read
//! past keys/values through [`KvView`] and write this step's key/value into
//! caller-provided slices; the session appends them.

use rill_kernels::{ops, ops_bf16, GemvScratch, Matrix, Ops, Pool};

use crate::attention::{Attention, KvView};
use crate::config::StackDims;
use crate::error::ModelError;
use crate::loader::Loader;
use crate::precision::Role;

pub(crate) const NORM_EPS: f32 = 1e-6;

/// Preallocated activations of one stack, so a step allocates nothing.
#[derive(Debug, Clone)]
pub struct StackScratch {
    pub h: Vec<f32>,
    pub qkv: Vec<f32>,
    pub ctx: Vec<f32>,
    pub out: Vec<f32>,
    pub hidden: Vec<f32>,
    pub scores: Vec<f32>,
    /// The products' quantised activations.
    pub gemv: GemvScratch,
}

impl StackScratch {
    pub fn new(dim: usize, inner: usize, ffn: usize, max_slots: usize) -> Self {
        StackScratch {
            h: vec![0.0; dim],
            qkv: vec![0.0; 3 * inner],
            ctx: vec![0.0; inner],
            out: vec![0.0; dim],
            hidden: vec![0.0; ffn],
            scores: vec![0.0; Attention::scores_len(max_slots)],
            gemv: GemvScratch::new(),
        }
    }
}

/// `x += post(y)`, with `y` normalised in place first.
fn add_post_norm(x: &mut [f32], y: &[f32], post: &[f32], tmp: &mut [f32], bf16: bool) {
    if bf16 {
        ops_bf16::rms_norm(y, post, NORM_EPS, tmp);
        ops_bf16::add(x, tmp);
    } else {
        ops::rms_norm(y, post, NORM_EPS, tmp);
        ops::add_in_place(x, tmp);
    }
}

/// The pre-norm `h = norm(x)`.
fn pre_norm(x: &[f32], pre: &[f32], h: &mut [f32], bf16: bool) {
    if bf16 {
        ops_bf16::rms_norm(x, pre, NORM_EPS, h);
    } else {
        ops::rms_norm(x, pre, NORM_EPS, h);
    }
}

/// `y += b` (bf16 in upstream's bf16 compute).
fn add_bias(y: &mut [f32], b: &[f32], bf16: bool) {
    if bf16 {
        ops_bf16::add(y, b);
    } else {
        ops::add_in_place(y, b);
    }
}

/// Where one product of a block reads and writes in a stream's scratch: its input,
/// its output and the product's activation scratch (fields of one `StackScratch`).
type Pick = for<'a, 'b> fn(&'a mut LayerIo<'b>) -> (&'a [f32], &'a mut [f32], &'a mut GemvScratch);

/// One stream's view of a layer step: its residual stream `x`, the past keys and
/// values its attention reads, where this step's self-attention `[k | v]` goes, and
/// its scratch. Several of them step a layer together (one weight read serves them
/// all); one is the ordinary step.
#[derive(Debug)]
pub struct LayerIo<'a> {
    pub x: &'a mut [f32],
    pub past_self: KvView<'a>,
    /// This step's self-attention key and value, `[k | v]`.
    pub new_kv: &'a mut [f32],
    /// The cross-attention's keys/values of this step's source and its past window
    /// (temporal layers; `None` in the depth stack).
    pub cross: Option<(&'a [f32], KvView<'a>)>,
    pub s: &'a mut StackScratch,
}

/// `y = W·x` for every stream of `ios` (`x`, `y` as `pick` selects; the first
/// `m.cols()` / `m.rows()` values): streams in pairs through [`Ops::gemv2`], which
/// reads each weight once for both and gives each output the bits of its own
/// [`Ops::gemv`]; an odd last stream alone.
fn gemv_each(ops: Ops, m: &Matrix, ios: &mut [LayerIo<'_>], pick: Pick, pool: &Pool) {
    let (rows, cols) = (m.rows(), m.cols());
    let mut pairs = ios.chunks_exact_mut(2);
    for pair in &mut pairs {
        let [a, b] = pair else {
            unreachable!("chunks of two")
        };
        let (xa, ya, scratch) = pick(a);
        let (xb, yb, _) = pick(b);
        ops.gemv2(
            m,
            [&xa[..cols], &xb[..cols]],
            [&mut ya[..rows], &mut yb[..rows]],
            scratch,
            pool,
        );
    }
    for io in pairs.into_remainder() {
        let (x, y, scratch) = pick(io);
        ops.gemv(m, &x[..cols], &mut y[..rows], scratch, pool);
    }
}

/// `h = norm(x)` for every stream of `ios`.
fn pre_norm_each(pre: &[f32], bf16: bool, ios: &mut [LayerIo<'_>]) {
    for io in ios.iter_mut() {
        pre_norm(io.x, pre, &mut io.s.h, bf16);
    }
}

/// An attention block's end for every stream of `ios`: the output projection of
/// `ctx` and `x += post_norm(out)`.
fn output_each(
    ops: Ops,
    wo: &Matrix,
    post: &[f32],
    bf16: bool,
    ios: &mut [LayerIo<'_>],
    pool: &Pool,
) {
    gemv_each(
        ops,
        wo,
        ios,
        |io| (&io.s.ctx, &mut io.s.out, &mut io.s.gemv),
        pool,
    );
    for io in ios.iter_mut() {
        add_post_norm(io.x, &io.s.out, post, &mut io.s.h, bf16);
    }
}

/// The attention core under `{a}` (`…/attention`): the per-dimension query scale
/// and, with `sinks`, the sink key and value.
fn load_attention(
    l: &Loader<'_>,
    a: &str,
    heads: usize,
    head_dim: usize,
    sinks: bool,
) -> Result<Attention, ModelError> {
    let inner = heads * head_dim;
    let pds = l.vector(&format!("{a}/per_dim_scale"), head_dim)?;
    let sink = if sinks {
        Some((
            l.vector(&format!("{a}/sink_key_embeddings"), inner)?,
            l.vector(&format!("{a}/sink_value_embeddings"), inner)?,
        ))
    } else {
        None
    };
    Ok(Attention::new(
        heads,
        head_dim,
        &pds,
        sink.as_ref().map(|(k, v)| (k.as_slice(), v.as_slice())),
        l.precision.computes_in_bf16(),
        l.ops,
    ))
}

/// The output projection `[D][H·Dh]` of a block (the checkpoint's `[d, n, h]`
/// kernel as is).
fn load_output(
    l: &Loader<'_>,
    prefix: &str,
    dim: usize,
    inner: usize,
    role: Role,
) -> Result<Matrix, ModelError> {
    l.rows(
        &format!("{prefix}/output_projection/kernel"),
        dim,
        inner,
        role,
    )
}

/// Self-attention residual branch.
#[derive(Debug, Clone)]
pub struct SelfAttentionBlock {
    pre_norm: Vec<f32>,
    post_norm: Vec<f32>,
    /// q, k, v projections stacked: `[3·H·Dh][D]`.
    wqkv: Matrix,
    /// Output projection `[D][H·Dh]`.
    wo: Matrix,
    pub attn: Attention,
    /// Activations rounded as upstream's bf16 compute rounds them.
    bf16: bool,
    /// The products' kernels (the model's, fixed at load).
    ops: Ops,
}

impl SelfAttentionBlock {
    /// The block under `prefix` of a stack of dimensions `s`.
    pub(crate) fn load(
        l: &Loader<'_>,
        prefix: &str,
        s: &StackDims,
        sinks: bool,
        role: Role,
    ) -> Result<Self, ModelError> {
        let (dim, heads, head_dim) = (s.dim, s.heads, s.head_dim);
        let inner = heads * head_dim;
        let a = format!("{prefix}/attention");
        let wqkv = l.dense_stacked(
            &[
                &format!("{a}/query_projection/kernel"),
                &format!("{a}/key_projection/kernel"),
                &format!("{a}/value_projection/kernel"),
            ],
            dim,
            inner,
            role,
        )?;
        let attn = load_attention(l, &a, heads, head_dim, sinks)?;
        Ok(SelfAttentionBlock {
            pre_norm: l.vector(&format!("{prefix}/pre_norm/scale"), dim)?,
            post_norm: l.vector(&format!("{prefix}/post_norm/scale"), dim)?,
            wqkv,
            wo: load_output(l, prefix, dim, inner, role)?,
            attn,
            bf16: l.precision.computes_in_bf16(),
            ops: l.ops,
        })
    }

    /// One step of every stream of `ios`; writes each one's key and value into its
    /// `new_kv`.
    pub fn step_each(&self, ios: &mut [LayerIo<'_>], pool: &Pool) {
        let inner = self.attn.heads * self.attn.head_dim;
        pre_norm_each(&self.pre_norm, self.bf16, ios);
        gemv_each(
            self.ops,
            &self.wqkv,
            ios,
            |io| (&io.s.h, &mut io.s.qkv, &mut io.s.gemv),
            pool,
        );
        for io in ios.iter_mut() {
            let (new_k, new_v) = io.new_kv.split_at_mut(inner);
            new_k.copy_from_slice(&io.s.qkv[inner..2 * inner]);
            new_v.copy_from_slice(&io.s.qkv[2 * inner..]);
            let (q, _) = io.s.qkv.split_at_mut(inner);
            self.attn.attend(
                q,
                io.past_self,
                new_k,
                new_v,
                &mut io.s.ctx,
                &mut io.s.scores,
            );
        }
        output_each(self.ops, &self.wo, &self.post_norm, self.bf16, ios, pool);
    }
}

/// Cross-attention residual branch (temporal stack; keys/values from the encoder).
#[derive(Debug, Clone)]
pub struct CrossAttentionBlock {
    pre_norm: Vec<f32>,
    post_norm: Vec<f32>,
    wq: Matrix,
    /// k, v projections of the source stacked: `[2·H·Dh][D_enc]`.
    wkv: Matrix,
    wo: Matrix,
    pub attn: Attention,
    bf16: bool,
    ops: Ops,
}

impl CrossAttentionBlock {
    /// The block under `prefix` of a stack of dimensions `s` over a source of
    /// width `src_dim`.
    pub(crate) fn load(
        l: &Loader<'_>,
        prefix: &str,
        s: &StackDims,
        src_dim: usize,
        role: Role,
    ) -> Result<Self, ModelError> {
        let (dim, heads, head_dim) = (s.dim, s.heads, s.head_dim);
        let inner = heads * head_dim;
        let a = format!("{prefix}/attention");
        let attn = load_attention(l, &a, heads, head_dim, true)?;
        Ok(CrossAttentionBlock {
            pre_norm: l.vector(&format!("{prefix}/pre_norm/scale"), dim)?,
            post_norm: l.vector(&format!("{prefix}/post_norm/scale"), dim)?,
            wq: l.dense(&format!("{a}/query_projection/kernel"), dim, inner, role)?,
            wkv: l.dense_stacked(
                &[
                    &format!("{a}/key_projection/kernel"),
                    &format!("{a}/value_projection/kernel"),
                ],
                src_dim,
                inner,
                role,
            )?,
            wo: load_output(l, prefix, dim, inner, role)?,
            attn,
            bf16: l.precision.computes_in_bf16(),
            ops: l.ops,
        })
    }

    /// This step's cross-attention key and value (`[k | v]`, 2·H·Dh) from the
    /// current encoder output.
    pub fn project_source(
        &self,
        src: &[f32],
        kv: &mut [f32],
        scratch: &mut GemvScratch,
        pool: &Pool,
    ) {
        self.ops.gemv(&self.wkv, src, kv, scratch, pool);
    }

    /// One step of every stream of `ios`, each attending over its past source
    /// window and its current keys/values (`io.cross`; a stream without them is
    /// left as it is).
    pub fn step_each(&self, ios: &mut [LayerIo<'_>], pool: &Pool) {
        let inner = self.attn.heads * self.attn.head_dim;
        pre_norm_each(&self.pre_norm, self.bf16, ios);
        // The query goes to the first `inner` values of `qkv` (the product's rows).
        gemv_each(
            self.ops,
            &self.wq,
            ios,
            |io| (&io.s.h, &mut io.s.qkv, &mut io.s.gemv),
            pool,
        );
        for io in ios.iter_mut() {
            let Some((kv, past)) = io.cross else { continue };
            self.attn.attend(
                &mut io.s.qkv[..inner],
                past,
                &kv[..inner],
                &kv[inner..],
                &mut io.s.ctx,
                &mut io.s.scores,
            );
        }
        output_each(self.ops, &self.wo, &self.post_norm, self.bf16, ios, pool);
    }
}

/// Feed-forward residual branch: `W2·gelu_tanh(W1·h + b1) + b2`.
#[derive(Debug, Clone)]
pub struct FfnBlock {
    pre_norm: Vec<f32>,
    post_norm: Vec<f32>,
    w1: Matrix,
    b1: Vec<f32>,
    w2: Matrix,
    b2: Vec<f32>,
    bf16: bool,
    ops: Ops,
}

impl FfnBlock {
    /// The block under `prefix` of a stack of dimensions `s`.
    pub(crate) fn load(
        l: &Loader<'_>,
        prefix: &str,
        s: &StackDims,
        role: Role,
    ) -> Result<Self, ModelError> {
        let (dim, ffn) = (s.dim, s.ffn);
        Ok(FfnBlock {
            pre_norm: l.vector(&format!("{prefix}/pre_norm/scale"), dim)?,
            post_norm: l.vector(&format!("{prefix}/post_norm/scale"), dim)?,
            w1: l.dense(&format!("{prefix}/ffn_layer1/kernel"), dim, ffn, role)?,
            b1: l.vector(&format!("{prefix}/ffn_layer1/bias"), ffn)?,
            w2: l.dense(&format!("{prefix}/ffn_layer2/kernel"), ffn, dim, role)?,
            b2: l.vector(&format!("{prefix}/ffn_layer2/bias"), dim)?,
            bf16: l.precision.computes_in_bf16(),
            ops: l.ops,
        })
    }

    /// One step of every stream of `ios`.
    pub fn step_each(&self, ios: &mut [LayerIo<'_>], pool: &Pool) {
        pre_norm_each(&self.pre_norm, self.bf16, ios);
        gemv_each(
            self.ops,
            &self.w1,
            ios,
            |io| (&io.s.h, &mut io.s.hidden, &mut io.s.gemv),
            pool,
        );
        for io in ios.iter_mut() {
            add_bias(&mut io.s.hidden, &self.b1, self.bf16);
            if self.bf16 {
                ops_bf16::gelu_tanh(&mut io.s.hidden);
            } else {
                self.ops.gelu_tanh(&mut io.s.hidden);
            }
        }
        gemv_each(
            self.ops,
            &self.w2,
            ios,
            |io| (&io.s.hidden, &mut io.s.out, &mut io.s.gemv),
            pool,
        );
        for io in ios.iter_mut() {
            add_bias(&mut io.s.out, &self.b2, self.bf16);
            add_post_norm(io.x, &io.s.out, &self.post_norm, &mut io.s.h, self.bf16);
        }
    }
}

/// One temporal layer: self-attention, cross-attention, FFN.
#[derive(Debug, Clone)]
pub struct TemporalLayer {
    pub self_attn: SelfAttentionBlock,
    pub cross_attn: CrossAttentionBlock,
    pub ffn: FfnBlock,
}

/// One depth layer: self-attention, FFN (no sinks, no cross-attention).
#[derive(Debug, Clone)]
pub struct DepthLayer {
    pub self_attn: SelfAttentionBlock,
    pub ffn: FfnBlock,
}
