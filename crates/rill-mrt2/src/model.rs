//! The MRT2 depthformer weights and its two per-frame computations (spec §1.4, §3.3):
//! the temporal step (one per frame) and the depth step (12 per frame).
//!
//! Everything here is immutable and `Sync`; all state lives in the caller's
//! [`crate::session::Session`]. The SIMD tier is fixed at load: the model and each
//! of its blocks keep the [`rill_kernels::Ops`] of [`Mrt2::load_with_isa`] and run
//! every product and attention loop through it.

use rill_checkpoint::layout::RVQ_LEVELS;
use rill_checkpoint::Checkpoint;
use rill_kernels::matrix::round_bf16;
use rill_kernels::{isa, ops, ops_bf16, GemvScratch, Isa, Matrix, Ops, Pool};

use crate::config::Mrt2Config;
use crate::encoder::Encoder;
use crate::error::ModelError;
use crate::layers::{
    CrossAttentionBlock, DepthLayer, FfnBlock, LayerIo, SelfAttentionBlock, TemporalLayer,
};
use crate::layout::{self, DEPTHFORMER};
use crate::loader::{Loader, RecordedMatrix};
use crate::precision::{Precision, Role};
use crate::sampler::{LEVEL, RESERVED, VOCAB};

/// RVQ levels (depth steps) per frame.
pub const LEVELS: usize = RVQ_LEVELS;
/// Output-logit soft cap (trap T8).
pub const SOFT_CAP: f32 = 30.0;

/// The language model's weights.
#[derive(Debug)]
pub struct Mrt2 {
    pub config: Mrt2Config,
    pub precision: Precision,
    pub(crate) encoder: Encoder,
    /// Decoder token embedding `[12294][D]`, shared by the temporal and depth inputs.
    embedding: Matrix,
    /// `√D` in the compute dtype (bf16-rounded in bf16 mode: 55.5 for base, trap T4).
    embed_scale: f32,
    temporal: Vec<TemporalLayer>,
    depth_adapter: Matrix,
    depth: Vec<DepthLayer>,
    final_ln_scale: Vec<f32>,
    final_ln_bias: Vec<f32>,
    /// `[12294][D_depth]`; only the current level's 1024 rows are ever multiplied.
    to_logits: Matrix,
    to_logits_bias: Vec<f32>,
    /// The kernels of every step, resolved once at load.
    ops: Ops,
}

impl Mrt2 {
    /// Validates the checkpoint and loads the depthformer at `precision`, its
    /// kernels on the process's tier as of now ([`isa::active`]).
    pub fn load(ckpt: &Checkpoint, precision: Precision) -> Result<Mrt2, ModelError> {
        Mrt2::load_with_isa(ckpt, precision, isa::active())
    }

    /// [`Mrt2::load`] with every kernel of its steps on tier `isa`.
    pub fn load_with_isa(
        ckpt: &Checkpoint,
        precision: Precision,
        isa: Isa,
    ) -> Result<Mrt2, ModelError> {
        Mrt2::load_with(&Loader {
            ckpt,
            precision,
            ops: Ops::new(isa),
            record: None,
        })
    }

    /// Like [`Mrt2::load`], also returning every weight matrix as loaded, keyed by
    /// its checkpoint tensor name (what [`crate::prequantized::write`] stores).
    pub(crate) fn load_recording(
        ckpt: &Checkpoint,
        precision: Precision,
    ) -> Result<(Mrt2, Vec<RecordedMatrix>), ModelError> {
        let l = Loader {
            ckpt,
            precision,
            ops: Ops::active(),
            record: Some(Default::default()),
        };
        let m = Mrt2::load_with(&l)?;
        Ok((m, l.record.map(|r| r.into_inner()).unwrap_or_default()))
    }

    fn load_with(l: &Loader<'_>) -> Result<Mrt2, ModelError> {
        let (ckpt, precision) = (l.ckpt, l.precision);
        let kind = layout::validate(ckpt)?;
        let config = Mrt2Config::new(kind);
        let d = config.dims;
        let (t, dp) = (d.temporal, d.depth);
        let dec = format!("{DEPTHFORMER}/decoder");
        let mut temporal = Vec::with_capacity(t.layers);
        for i in 0..t.layers {
            let p = format!("{dec}/temporal_body/transformer/x_layers_{i}");
            let role = Role::Temporal;
            temporal.push(TemporalLayer {
                self_attn: SelfAttentionBlock::load(
                    l,
                    &format!("{p}/self_attention"),
                    &t,
                    true,
                    role,
                )?,
                cross_attn: CrossAttentionBlock::load(
                    l,
                    &format!("{p}/cross_attention"),
                    &t,
                    d.enc_dim,
                    role,
                )?,
                ffn: FfnBlock::load(l, &format!("{p}/ffn"), &t, role)?,
            });
        }
        let mut depth = Vec::with_capacity(dp.layers);
        for j in 0..dp.layers {
            let p = format!("{dec}/depth_body/transformer/x_layers_{j}");
            depth.push(DepthLayer {
                self_attn: SelfAttentionBlock::load(
                    l,
                    &format!("{p}/self_attention"),
                    &dp,
                    false,
                    Role::Depth,
                )?,
                ffn: FfnBlock::load(l, &format!("{p}/ffn"), &dp, Role::Depth)?,
            });
        }
        let sqrt_d = (t.dim as f64).sqrt() as f32;
        Ok(Mrt2 {
            config,
            precision,
            encoder: Encoder::load(l, d.enc_dim)?,
            embedding: l.rows(
                &format!("{dec}/decoder_embedding/embedding/embedding"),
                VOCAB,
                t.dim,
                Role::Embedding,
            )?,
            embed_scale: if precision.rounds_vectors_to_bf16() {
                round_bf16(sqrt_d)
            } else {
                sqrt_d
            },
            temporal,
            depth_adapter: l.dense(
                &format!("{dec}/depth_body/depth_input_adapter/kernel"),
                t.dim,
                dp.dim,
                Role::Depth,
            )?,
            depth,
            final_ln_scale: l.vector(&format!("{dec}/depth_body/final_ln/scale"), dp.dim)?,
            final_ln_bias: l.vector(&format!("{dec}/depth_body/final_ln/bias"), dp.dim)?,
            to_logits: l.dense(
                &format!("{dec}/depth_body/to_logits/kernel"),
                dp.dim,
                VOCAB,
                Role::Logits,
            )?,
            to_logits_bias: l.vector(&format!("{dec}/depth_body/to_logits/bias"), VOCAB)?,
            ops: l.ops,
        })
    }

    /// The SIMD tier every step of this model runs on (fixed at load).
    pub fn isa(&self) -> Isa {
        self.ops.isa()
    }

    pub fn encoder(&self) -> &Encoder {
        &self.encoder
    }

    /// A 64-bit fingerprint of the loaded weights (FNV-1a over the bits of the
    /// depth stack's final layer norm and logit bias, as loaded at this precision),
    /// so a state file can tell which weights it was made with. Cheap: ~12 k values.
    pub fn fingerprint(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for v in [
            &self.final_ln_scale,
            &self.final_ln_bias,
            &self.to_logits_bias,
        ] {
            for x in v.iter() {
                for b in x.to_bits().to_le_bytes() {
                    h ^= b as u64;
                    h = h.wrapping_mul(0x0000_0100_0000_01b3);
                }
            }
        }
        h
    }

    pub fn temporal_layers(&self) -> usize {
        self.temporal.len()
    }

    pub fn depth_layers(&self) -> usize {
        self.depth.len()
    }

    /// `E[id]·√D` (depth-step input, one token).
    pub fn embed_token(&self, id: u32, out: &mut [f32]) {
        self.embedding.row_into((id as usize).min(VOCAB - 1), out);
        for v in out.iter_mut() {
            *v *= self.embed_scale;
        }
    }

    /// Temporal input: `mean_q(E[prev[q]]·√D)` accumulated in f32 (trap T5).
    pub fn frame_embedding(&self, prev: &[u32; LEVELS], out: &mut [f32], row: &mut [f32]) {
        out.fill(0.0);
        for &id in prev {
            self.embed_token(id, row);
            ops::add_in_place(out, row);
        }
        let inv = 1.0 / LEVELS as f32;
        for v in out.iter_mut() {
            *v *= inv;
        }
        if self.precision.computes_in_bf16() {
            ops_bf16::round(out);
        }
    }

    /// This frame's cross-attention key and value (`[k | v]`) of temporal layer
    /// `layer` for encoder output `src`. The encoder is frame-wise, so for constant
    /// conditioning the host may compute this once and reuse it.
    pub fn cross_source_kv(
        &self,
        layer: usize,
        src: &[f32],
        kv: &mut [f32],
        scratch: &mut GemvScratch,
        pool: &Pool,
    ) {
        self.temporal[layer]
            .cross_attn
            .project_source(src, kv, scratch, pool);
    }

    /// Temporal layer `layer` of every stream of `ios`, each with its frame's
    /// cross-attention keys/values in `io.cross` (from [`Mrt2::cross_source_kv`]);
    /// each writes its frame's self-attention key/value into its `new_kv`. The
    /// streams share each weight read (in pairs); per stream the bits of a step alone.
    pub fn temporal_layer_each(&self, layer: usize, ios: &mut [LayerIo<'_>], pool: &Pool) {
        let lay = &self.temporal[layer];
        lay.self_attn.step_each(ios, pool);
        lay.cross_attn.step_each(ios, pool);
        lay.ffn.step_each(ios, pool);
    }

    /// Depth input adapter: `z = W_adapt · inp`.
    pub fn depth_input(&self, inp: &[f32], z: &mut [f32], scratch: &mut GemvScratch, pool: &Pool) {
        self.ops.gemv(&self.depth_adapter, inp, z, scratch, pool);
    }

    /// Depth layer `layer` of every stream of `ios` (each writes this step's
    /// key/value into its `new_kv`, `[k | v]`; no cross-attention).
    pub fn depth_layer_each(&self, layer: usize, ios: &mut [LayerIo<'_>], pool: &Pool) {
        self.depth[layer].self_attn.step_each(ios, pool);
        self.depth[layer].ffn.step_each(ios, pool);
    }

    /// Final LayerNorm, the level's 1024 rows of `to_logits` (+bias) and the soft cap.
    pub fn level_logits(
        &self,
        level: usize,
        z: &[f32],
        normed: &mut [f32],
        logits: &mut [f32],
        scratch: &mut GemvScratch,
        pool: &Pool,
    ) {
        let lo = RESERVED + LEVEL * level;
        let bias = &self.to_logits_bias[lo..lo + LEVEL];
        let (scale, shift) = (&self.final_ln_scale, &self.final_ln_bias);
        let bf16 = self.precision.computes_in_bf16();
        if bf16 {
            ops_bf16::layer_norm(z, scale, shift, 1e-6, normed);
        } else {
            ops::layer_norm(z, scale, shift, 1e-6, normed);
        }
        let rows = lo..lo + LEVEL;
        self.ops
            .gemv_rows(&self.to_logits, normed, logits, rows, scratch, pool);
        if bf16 {
            ops_bf16::add(logits, bias);
            ops_bf16::soft_cap(logits, SOFT_CAP);
        } else {
            ops::add_in_place(logits, bias);
            ops::soft_cap(logits, SOFT_CAP);
        }
    }
}
