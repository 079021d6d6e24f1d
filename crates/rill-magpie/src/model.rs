//! The Magpie model (`magpietts.py:338-731`, spec §1.4, §4): text encoder, decoder
//! over `[baked context ; frames]` with a host-owned KV cache, `final_proj`, and the
//! local transformer with its 8 heads. The SIMD tier is fixed at load
//! ([`Model::with_isa`]): the model keeps a [`rill_kernels::Ops`] and passes it to
//! every layer call.

use std::sync::OnceLock;

use rill_kernels::matmul::MatmulScratch;
use rill_kernels::{isa, ops, GemvScratch, Isa, Matrix, Ops, Pool, WeightFormat};

use crate::config::Config;
use crate::error::{MagpieError, Result};
use crate::layers::{linear, CrossInput, KvPast, LayerNorm, LayerScratch, SeqIo, TransformerLayer};
use crate::weights::Weights;

/// Most sequences one decoder call runs (conditional + CFG unconditional).
pub const MAX_BATCH: usize = 2;

/// The model's weights in engine layout (f32).
#[derive(Debug, Clone)]
pub struct Model {
    pub config: Config,
    text_embedding: Vec<f32>,
    encoder_position_embeddings: Vec<f32>,
    encoder: Vec<TransformerLayer>,
    encoder_norm_out: LayerNorm,
    decoder_position_embeddings: Vec<f32>,
    decoder: Vec<TransformerLayer>,
    decoder_norm_out: LayerNorm,
    final_proj: Matrix,
    final_proj_bias: Vec<f32>,
    audio_embeddings: Vec<Vec<f32>>,
    local_transformer_in_projection: Matrix,
    local_transformer_in_projection_bias: Vec<f32>,
    local_transformer_position_embeddings: Vec<f32>,
    local_transformer: Vec<TransformerLayer>,
    local_transformer_out_projections: Vec<(Matrix, Vec<f32>)>,
    baked_context_embedding: Vec<f32>,
    baked_context_len: Vec<usize>,
    /// The CFG-unconditional prefill, computed on first use ([`Model::unconditional_prefill`]).
    unconditional: OnceLock<DecoderOut>,
    /// The kernels of every product and attention loop, resolved once at load.
    ops: Ops,
}

/// Cross-attention memory of one utterance: per decoder layer `T × 128` keys and
/// values of `kv_net(norm_xattn_memory(encoder output))` (spec §4.2).
#[derive(Debug, Clone)]
pub struct CrossMemory {
    pub text_len: usize,
    pub k: Vec<Vec<f32>>,
    pub v: Vec<Vec<f32>>,
}

/// Self-attention keys/values of the decoder, per layer and batch row, with room for
/// `capacity` positions. Owned by the session; the decoder reads it only.
#[derive(Debug, Clone)]
pub struct DecoderCache {
    layers: usize,
    batch: usize,
    capacity: usize,
    dim: usize,
    k: Vec<f32>,
    v: Vec<f32>,
    rows: usize,
}

impl DecoderCache {
    pub fn new(config: &Config, batch: usize, capacity: usize) -> Self {
        let n = config.decoder_layers * batch * capacity * config.dim;
        DecoderCache {
            layers: config.decoder_layers,
            batch,
            capacity,
            dim: config.dim,
            k: vec![0.0; n],
            v: vec![0.0; n],
            rows: 0,
        }
    }

    /// Positions held.
    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn base(&self, layer: usize, b: usize) -> usize {
        (layer * self.batch + b) * self.capacity * self.dim
    }

    /// The valid past of one layer and batch row.
    pub fn past(&self, layer: usize, b: usize) -> KvPast<'_> {
        let o = self.base(layer, b);
        let n = self.rows * self.dim;
        KvPast {
            k: &self.k[o..o + n],
            v: &self.v[o..o + n],
            rows: self.rows,
        }
    }

    /// The keys (`k = true`) or values of position `pos` of one layer and batch row.
    pub fn row(&self, layer: usize, b: usize, pos: usize, k: bool) -> &[f32] {
        let o = self.base(layer, b) + pos * self.dim;
        let src = if k { &self.k } else { &self.v };
        &src[o..o + self.dim]
    }

    /// Appends the `out.rows` new positions of a decoder call.
    pub fn append(&mut self, out: &DecoderOut) -> Result<()> {
        self.append_parts(&[out])
    }

    /// Appends the same number of new positions from several decoder calls whose
    /// batch rows, in order, are this cache's batch rows (the conditional prefill and
    /// the model's shared unconditional one, [`Model::unconditional_prefill`]).
    pub fn append_parts(&mut self, parts: &[&DecoderOut]) -> Result<()> {
        let n = parts.first().map_or(0, |p| p.rows);
        let batch: usize = parts.iter().map(|p| p.batch).sum();
        if batch != self.batch || parts.iter().any(|p| p.rows != n || p.dim != self.dim) {
            return Err(MagpieError::invalid(
                "decoder output batch",
                batch,
                format!("{} rows of {} new positions each", self.batch, n),
            ));
        }
        if self.rows + n > self.capacity {
            return Err(MagpieError::invalid(
                "decoder positions",
                self.rows + n,
                format!("at most the cache capacity {}", self.capacity),
            ));
        }
        for l in 0..self.layers {
            let rows = parts
                .iter()
                .flat_map(|&p| (0..p.batch).map(move |b| (p, b)));
            for (b, (out, ob)) in rows.enumerate() {
                let dst = self.base(l, b) + self.rows * self.dim;
                let src = out.kv_index(l, ob, 0);
                let len = n * self.dim;
                self.k[dst..dst + len].copy_from_slice(&out.k[src..src + len]);
                self.v[dst..dst + len].copy_from_slice(&out.v[src..src + len]);
            }
        }
        self.rows += n;
        Ok(())
    }
}

/// What one decoder call returns: the new rows' K/V per layer and batch row, the
/// hidden state of the last row after `norm_out` per batch row, and the
/// cross-attention probabilities of the last conditional row per layer.
#[derive(Debug, Clone)]
pub struct DecoderOut {
    pub rows: usize,
    max_rows: usize,
    batch: usize,
    dim: usize,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    /// `batch × D`.
    pub hidden: Vec<f32>,
    /// `layers × T` (row 0 = conditional sequence).
    pub probs: Vec<f32>,
    text_len: usize,
}

impl DecoderOut {
    pub fn new(config: &Config, batch: usize, max_rows: usize, text_len: usize) -> Self {
        let n = config.decoder_layers * batch * max_rows * config.dim;
        DecoderOut {
            rows: 0,
            max_rows,
            batch,
            dim: config.dim,
            k: vec![0.0; n],
            v: vec![0.0; n],
            hidden: vec![0.0; batch * config.dim],
            probs: vec![0.0; config.decoder_layers * text_len],
            text_len,
        }
    }

    fn kv_index(&self, layer: usize, b: usize, row: usize) -> usize {
        ((layer * self.batch + b) * self.max_rows + row) * self.dim
    }

    /// Cross-attention probabilities of layer `l` (conditional row).
    pub fn layer_probs(&self, l: usize) -> &[f32] {
        &self.probs[l * self.text_len..(l + 1) * self.text_len]
    }
}

/// The attention prior of one decoder call: the conditional row's prior and the
/// layers it multiplies (`None` = all).
#[derive(Debug, Clone, Copy)]
pub struct PriorUse<'a> {
    pub row: &'a [f32],
    pub layers: Option<&'a [usize]>,
}

impl Model {
    /// Takes the tensors of a validated checkpoint (f32 products, NeMo's arithmetic).
    pub fn new(w: Weights) -> Result<Model> {
        Model::with_format(w, WeightFormat::F32)
    }

    /// As [`Model::new`] with the linear layers stored as `format` (`Bf16` halves
    /// the bytes each step streams, `Int8` quarters them; both approximate NeMo's
    /// f32 products). Embeddings and norms stay f32. The kernels run on the
    /// process's tier as of now ([`isa::active`]).
    pub fn with_format(w: Weights, format: WeightFormat) -> Result<Model> {
        Model::with_isa(w, format, isa::active())
    }

    /// As [`Model::with_format`] with every kernel on tier `isa`.
    pub fn with_isa(mut w: Weights, format: WeightFormat, isa: Isa) -> Result<Model> {
        w.matrix_format = format;
        let config = w.config().clone();
        let w = &mut w;
        let enc = (0..config.encoder_layers)
            .map(|l| TransformerLayer::load(w, &format!("encoder.layers.{l}"), config.heads, false))
            .collect::<Result<Vec<_>>>()?;
        let dec = (0..config.decoder_layers)
            .map(|l| TransformerLayer::load(w, &format!("decoder.layers.{l}"), config.heads, true))
            .collect::<Result<Vec<_>>>()?;
        let lt = (0..config.lt_layers)
            .map(|l| TransformerLayer::load(w, &format!("local_transformer.layers.{l}"), 1, false))
            .collect::<Result<Vec<_>>>()?;
        let heads = (0..config.codebooks)
            .map(|c| {
                let p = format!("local_transformer_out_projections.{c}");
                Ok((
                    linear(w, &format!("{p}.weight"))?,
                    w.take_f32(&format!("{p}.bias"))?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let audio = (0..config.codebooks)
            .map(|c| w.take_f32(&format!("audio_embeddings.{c}.weight")))
            .collect::<Result<Vec<_>>>()?;
        let lens = w
            .ints("baked_context_embedding_len")?
            .iter()
            .map(|&l| l as usize)
            .collect();
        Ok(Model {
            text_embedding: w.take_f32("text_embedding.weight")?,
            encoder_position_embeddings: w.take_f32("encoder.position_embeddings.weight")?,
            encoder: enc,
            encoder_norm_out: LayerNorm::load(w, "encoder.norm_out")?,
            decoder_position_embeddings: w.take_f32("decoder.position_embeddings.weight")?,
            decoder: dec,
            decoder_norm_out: LayerNorm::load(w, "decoder.norm_out")?,
            final_proj: linear(w, "final_proj.weight")?,
            final_proj_bias: w.take_f32("final_proj.bias")?,
            audio_embeddings: audio,
            local_transformer_in_projection: linear(w, "local_transformer_in_projection.weight")?,
            local_transformer_in_projection_bias: w
                .take_f32("local_transformer_in_projection.bias")?,
            local_transformer_position_embeddings: w
                .take_f32("local_transformer.position_embeddings.weight")?,
            local_transformer: lt,
            local_transformer_out_projections: heads,
            baked_context_embedding: w.take_f32("baked_context_embedding.weight")?,
            baked_context_len: lens,
            unconditional: OnceLock::new(),
            ops: Ops::new(isa),
            config,
        })
    }

    /// The SIMD tier every product of this model runs on (fixed at load).
    pub fn isa(&self) -> Isa {
        self.ops.isa()
    }

    /// How many weight matrices are stored in each format (f32 weights that are
    /// all exact halves, as from NVIDIA's F16 GGUF, are kept as f16: same bits).
    pub fn linear_formats(&self) -> std::collections::BTreeMap<&'static str, usize> {
        let layers = self
            .encoder
            .iter()
            .chain(&self.decoder)
            .chain(&self.local_transformer);
        let mut all: Vec<&Matrix> = layers.flat_map(|l| l.matrices()).collect();
        all.push(&self.final_proj);
        all.push(&self.local_transformer_in_projection);
        all.extend(
            self.local_transformer_out_projections
                .iter()
                .map(|(m, _)| m),
        );
        let mut count = std::collections::BTreeMap::new();
        for m in all {
            *count.entry(m.format().name()).or_insert(0) += 1;
        }
        count
    }

    /// Checks that `tokens` (including the final EOS) fit the text table and the
    /// encoder positions.
    pub fn check_tokens(&self, tokens: &[u32]) -> Result<()> {
        let c = &self.config;
        if tokens.is_empty() || tokens.len() > c.encoder_positions {
            return Err(MagpieError::invalid(
                "text length",
                tokens.len(),
                format!("in 1..={} tokens including EOS", c.encoder_positions),
            ));
        }
        if let Some(&t) = tokens.iter().find(|&&t| t as usize >= c.text_vocab) {
            return Err(MagpieError::invalid(
                "text token id",
                t,
                format!("below the text vocabulary size {}", c.text_vocab),
            ));
        }
        Ok(())
    }

    /// The causal text encoder (spec §4.2): embedding + position embedding, 6 layers,
    /// `norm_out`. `out` is `T × D`.
    pub fn encode(&self, tokens: &[u32], out: &mut [f32], pool: &Pool) -> Result<()> {
        self.check_tokens(tokens)?;
        let c = &self.config;
        let (d, t) = (c.dim, tokens.len());
        let mut x = vec![0f32; t * d];
        for (i, &tok) in tokens.iter().enumerate() {
            let row = &mut x[i * d..(i + 1) * d];
            row.copy_from_slice(&self.text_embedding[tok as usize * d..(tok as usize + 1) * d]);
            ops::add_in_place(row, &self.encoder_position_embeddings[i * d..(i + 1) * d]);
        }
        let mut s = LayerScratch::new(t, d, c.ffn, c.encoder_kernel, t, c.xattn_dim, t);
        let (mut k, mut v) = (vec![0f32; t * d], vec![0f32; t * d]);
        for layer in &self.encoder {
            let mut io = [SeqIo::fresh(&mut k, &mut v)];
            layer.forward(self.ops, t, &mut x, &mut io, &mut s, pool);
        }
        for (xi, oi) in x.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
            self.encoder_norm_out.apply(xi, oi);
        }
        Ok(())
    }

    /// Per-layer cross-attention keys/values of the encoder output `enc` (`T × D`).
    pub fn cross_memory(&self, enc: &[f32], pool: &Pool) -> CrossMemory {
        let d = self.config.dim;
        let t = enc.len() / d;
        let x = self.config.xattn_dim;
        let mut normed = vec![0f32; t * d];
        let mut scratch = GemvScratch::new();
        let mut mem = CrossMemory {
            text_len: t,
            k: Vec::new(),
            v: Vec::new(),
        };
        for layer in &self.decoder {
            let Some(c) = &layer.cross else { continue };
            for (e, n) in enc.chunks_exact(d).zip(normed.chunks_exact_mut(d)) {
                c.norm_xattn_memory.apply(e, n);
            }
            let (mut k, mut v) = (vec![0f32; t * x], vec![0f32; t * x]);
            c.cross_attention
                .memory(self.ops, &normed, &mut k, &mut v, &mut scratch, pool);
            mem.k.push(k);
            mem.v.push(v);
        }
        mem
    }

    /// Speaker `s`'s baked context (`110 × D`) and its valid length.
    pub fn context(&self, speaker: usize) -> Result<(&[f32], usize)> {
        let c = &self.config;
        if speaker >= c.speakers {
            return Err(MagpieError::invalid(
                "speaker",
                speaker,
                format!("in 0..{}", c.speakers),
            ));
        }
        let n = c.context_frames * c.dim;
        Ok((
            &self.baked_context_embedding[speaker * n..(speaker + 1) * n],
            self.baked_context_len[speaker],
        ))
    }

    /// Decoder input of one frame: the mean of its codebook embeddings (trap T4).
    pub fn embed_frame(&self, codes: &[u16], out: &mut [f32]) {
        let d = self.config.dim;
        out.fill(0.0);
        for (table, &code) in self.audio_embeddings.iter().zip(codes) {
            let c = code as usize;
            ops::add_in_place(out, &table[c * d..(c + 1) * d]);
        }
        let n = self.audio_embeddings.len() as f32;
        for o in out.iter_mut() {
            *o /= n;
        }
    }

    /// Adds the decoder position embedding of position `pos` to `row`.
    pub fn add_decoder_position(&self, row: &mut [f32], pos: usize) {
        let d = self.config.dim;
        ops::add_in_place(
            row,
            &self.decoder_position_embeddings[pos * d..(pos + 1) * d],
        );
    }

    /// One decoder call over `n` new rows per batch row (`x`: `batch × n × D`, position
    /// embeddings already added), after the cache's past positions. With `mem`, batch
    /// row 0 is conditional (`mem`, `prior`); every other row (all of them without
    /// `mem`) is CFG-unconditional (zero memory, whose cross-attention output is
    /// exactly 0). Pure: reads `cache`, writes `out`.
    pub fn decoder_forward(
        &self,
        n: usize,
        x: &mut [f32],
        cache: &DecoderCache,
        mem: Option<&CrossMemory>,
        prior: Option<PriorUse<'_>>,
        out: &mut DecoderOut,
        s: &mut LayerScratch,
        pool: &Pool,
    ) {
        let d = self.config.dim;
        let batch = out.batch.min(MAX_BATCH);
        let t = mem.map_or(0, |m| m.text_len);
        let stride = out.max_rows * d;
        out.rows = n;
        for (l, layer) in self.decoder.iter().enumerate() {
            let layer_prior = prior.and_then(|p| match p.layers {
                Some(ls) if !ls.contains(&l) => None,
                _ => Some(p.row),
            });
            let span = l * batch * stride..(l + 1) * batch * stride;
            let mut ks = out.k[span.clone()].chunks_mut(stride);
            let mut vs = out.v[span].chunks_mut(stride);
            let mut probs = Some(&mut out.probs[l * t..(l + 1) * t]);
            let mut io: [SeqIo<'_>; MAX_BATCH] = std::array::from_fn(|b| {
                if b >= batch {
                    return SeqIo::unused();
                }
                let (k, v) = (ks.next().unwrap_or_default(), vs.next().unwrap_or_default());
                SeqIo {
                    past: cache.past(l, b),
                    new_k: &mut k[..n * d],
                    new_v: &mut v[..n * d],
                    cross: mem.filter(|_| b == 0).map(|mem| CrossInput {
                        k: &mem.k[l],
                        v: &mem.v[l],
                        prior: layer_prior,
                    }),
                    probs: if b == 0 { probs.take() } else { None },
                }
            });
            layer.forward(
                self.ops,
                n,
                &mut x[..batch * n * d],
                &mut io[..batch],
                s,
                pool,
            );
        }
        for b in 0..batch {
            let last = &x[(b * n + n - 1) * d..(b * n + n) * d];
            self.decoder_norm_out
                .apply(last, &mut out.hidden[b * d..(b + 1) * d]);
        }
    }

    /// Decoder input of the prefill (`(context_frames + 1) × D`): the speaker's baked
    /// context (zeros for the CFG-unconditional sequence) and the BOS frame, with
    /// their position embeddings.
    pub fn prefill_input(&self, context: Option<&[f32]>, out: &mut [f32]) {
        let c = &self.config;
        let (d, n) = (c.dim, c.context_frames * c.dim);
        match context {
            Some(ctx) => out[..n].copy_from_slice(ctx),
            None => out[..n].fill(0.0),
        }
        self.embed_frame(&[c.audio_bos(); crate::CODEBOOKS], &mut out[n..n + d]);
        for (p, row) in out[..n + d].chunks_exact_mut(d).enumerate() {
            self.add_decoder_position(row, p);
        }
    }

    /// The prefill of the CFG-unconditional sequence: its K/V rows and last hidden
    /// state. Its input (zero context, BOS) and its cross-attention (zero memory) are
    /// the same for every utterance and speaker, so it is a constant of the model:
    /// computed once, on first use, then shared by every session. The decoder's rows
    /// are independent of each other and of the batch, so this is bit for bit what
    /// the batched prefill computed (tested in `session`).
    pub fn unconditional_prefill(&self, pool: &Pool) -> &DecoderOut {
        self.unconditional.get_or_init(|| {
            let c = &self.config;
            let rows = c.context_frames + 1;
            let mut x = vec![0f32; rows * c.dim];
            self.prefill_input(None, &mut x);
            let mut out = DecoderOut::new(c, 1, rows, 0);
            let mut s = LayerScratch::new(rows, c.dim, c.ffn, 1, rows, c.xattn_dim, 1);
            let empty = DecoderCache::new(c, 1, 0);
            self.decoder_forward(rows, &mut x, &empty, None, None, &mut out, &mut s, pool);
            out
        })
    }

    /// `final_proj(hidden)` for each row of `hidden` (`8·2024` logits per row, the
    /// EOS stream's input).
    pub fn final_logits(
        &self,
        hidden: &[f32],
        out: &mut [f32],
        scratch: &mut MatmulScratch,
        pool: &Pool,
    ) {
        self.ops
            .matmul(&self.final_proj, hidden, out, scratch, pool);
        for o in out.chunks_exact_mut(self.final_proj_bias.len()) {
            ops::add_in_place(o, &self.final_proj_bias);
        }
    }

    /// LT inputs at position `pos` for each row of `v` (decoder hidden states):
    /// `in_proj(v) + b + pos_emb[pos]` (trap T15).
    pub fn lt_input(
        &self,
        v: &[f32],
        pos: usize,
        out: &mut [f32],
        scratch: &mut MatmulScratch,
        pool: &Pool,
    ) {
        let ld = self.config.lt_dim;
        self.ops
            .matmul(&self.local_transformer_in_projection, v, out, scratch, pool);
        let pe = &self.local_transformer_position_embeddings[pos * ld..(pos + 1) * ld];
        for o in out.chunks_exact_mut(ld) {
            ops::add_in_place(o, &self.local_transformer_in_projection_bias);
            ops::add_in_place(o, pe);
        }
    }

    /// The LT input of codebook `c`'s code at `pos`, `in_proj(audio_embeddings[c][code])`,
    /// written to every row of `out` (the CFG rows share the code).
    pub fn lt_code_input(
        &self,
        c: usize,
        code: u16,
        pos: usize,
        out: &mut [f32],
        scratch: &mut MatmulScratch,
        pool: &Pool,
    ) {
        let (d, ld) = (self.config.dim, self.config.lt_dim);
        let row = &self.audio_embeddings[c][code as usize * d..(code as usize + 1) * d];
        let (first, rest) = out.split_at_mut(ld);
        self.lt_input(row, pos, first, scratch, pool);
        for o in rest.chunks_exact_mut(ld) {
            o.copy_from_slice(first);
        }
    }

    /// One LT position for each sequence (`x`: `seqs × lt_dim`, in place; no `norm_out`).
    pub fn lt_forward(
        &self,
        x: &mut [f32],
        seqs: &mut [SeqIo<'_>],
        s: &mut LayerScratch,
        pool: &Pool,
    ) {
        for layer in &self.local_transformer {
            layer.forward(self.ops, 1, x, seqs, s, pool);
        }
    }

    /// Codebook `c`'s LT head for each row of `y`: `W_c·y + b_c` (2024 per row).
    pub fn lt_logits(
        &self,
        c: usize,
        y: &[f32],
        out: &mut [f32],
        scratch: &mut MatmulScratch,
        pool: &Pool,
    ) {
        let (m, b) = &self.local_transformer_out_projections[c];
        self.ops.matmul(m, y, out, scratch, pool);
        for o in out.chunks_exact_mut(b.len()) {
            ops::add_in_place(o, b);
        }
    }

    /// `decoder.norm_out` of every row of `x` (after [`Model::decoder_forward`], `x`
    /// holds every new row's pre-norm output: the prefill check).
    pub fn norm_out_rows(&self, x: &[f32], out: &mut [f32]) {
        let d = self.config.dim;
        for (xi, oi) in x.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
            self.decoder_norm_out.apply(xi, oi);
        }
    }
}
