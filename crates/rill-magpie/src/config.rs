//! Model dimensions (read from the checkpoint's shapes, spec §1.2, §2.2) and the
//! inference parameters (spec §1.2 `inference_parameters`).

use crate::error::{MagpieError, Result};

/// Head width of the encoder and decoder self-attention (NeMo `d_model / sa_n_heads`
/// = 768 / 12); not visible in any shape, so fixed here.
pub const HEAD_DIM: usize = 64;
/// Number of special ids at the end of each codebook's vocabulary (`mm.py:86-121`).
pub const SPECIAL_AUDIO_TOKENS: usize = 8;

/// Most layers or codebooks a checkpoint may index (bounds what a corrupt file can ask for).
const MAX_INDEXED: usize = 256;

/// Dimensions of one Magpie checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Model width (768).
    pub dim: usize,
    /// Rows of `text_embedding` (2362 released, 98 in the oracle); BOS = rows − 2, EOS = rows − 1.
    pub text_vocab: usize,
    pub encoder_layers: usize,
    /// Causal conv width of the encoder FFN (3).
    pub encoder_kernel: usize,
    /// Rows of `encoder.position_embeddings` (bounds the text length).
    pub encoder_positions: usize,
    pub decoder_layers: usize,
    /// Rows of `decoder.position_embeddings` (bounds context + frames).
    pub decoder_positions: usize,
    /// Self-attention heads of encoder and decoder (`dim / 64`).
    pub heads: usize,
    /// FFN width of encoder and decoder (3072).
    pub ffn: usize,
    /// Cross-attention width, one head (128).
    pub xattn_dim: usize,
    /// Codebooks per frame (8).
    pub codebooks: usize,
    /// Ids per codebook including the specials (2024 = 2016 + 8).
    pub codebook_vocab: usize,
    /// Local transformer width (256), one head, one layer.
    pub lt_dim: usize,
    pub lt_ffn: usize,
    pub lt_positions: usize,
    pub lt_layers: usize,
    /// Baked speaker contexts (5).
    pub speakers: usize,
    /// Frames of each baked context (110).
    pub context_frames: usize,
}

impl Config {
    /// The released v2602 shape with a text table of `text_vocab` rows.
    pub fn v2602(text_vocab: usize) -> Config {
        Config {
            dim: 768,
            text_vocab,
            encoder_layers: 6,
            encoder_kernel: 3,
            encoder_positions: 2048,
            decoder_layers: 12,
            decoder_positions: 2048,
            heads: 12,
            ffn: 3072,
            xattn_dim: 128,
            codebooks: 8,
            codebook_vocab: 2024,
            lt_dim: 256,
            lt_ffn: 1024,
            lt_positions: 10,
            lt_layers: 1,
            speakers: 5,
            context_frames: 110,
        }
    }

    /// The oracle's random-weight model: v2602 with the english_phoneme-only text table (98 rows).
    pub fn oracle() -> Config {
        Config::v2602(98)
    }

    /// Real codes per codebook (2016); the specials follow.
    pub fn codebook_size(&self) -> usize {
        self.codebook_vocab - SPECIAL_AUDIO_TOKENS
    }
    /// Audio BOS id (2016).
    pub fn audio_bos(&self) -> u16 {
        self.codebook_size() as u16
    }
    /// Audio EOS id (2017).
    pub fn audio_eos(&self) -> u16 {
        self.codebook_size() as u16 + 1
    }
    /// Text EOS id (appended to every utterance; no BOS is used).
    pub fn text_eos(&self) -> u32 {
        self.text_vocab as u32 - 1
    }

    /// Every float tensor the model reads, with its torch shape (`causal_mask` buffers
    /// are regenerated, not read), in state-dict order.
    pub fn float_specs(&self) -> Vec<(String, Vec<usize>)> {
        let (d, f) = (self.dim, self.ffn);
        let mut s: Vec<(String, Vec<usize>)> = Vec::new();
        let mut add = |n: String, shape: &[usize]| s.push((n, shape.to_vec()));
        add("text_embedding.weight".into(), &[self.text_vocab, d]);
        add(
            "encoder.position_embeddings.weight".into(),
            &[self.encoder_positions, d],
        );
        let k = self.encoder_kernel;
        for l in 0..self.encoder_layers {
            let p = format!("encoder.layers.{l}");
            add(format!("{p}.norm_self.weight"), &[d]);
            add(format!("{p}.self_attention.qkv_net.weight"), &[3 * d, d]);
            add(format!("{p}.self_attention.o_net.weight"), &[d, d]);
            add(format!("{p}.norm_pos_ff.weight"), &[d]);
            add(format!("{p}.pos_ff.proj.conv.weight"), &[f, d, k]);
            add(format!("{p}.pos_ff.o_net.conv.weight"), &[d, f, k]);
        }
        add("encoder.norm_out.weight".into(), &[d]);
        add(
            "decoder.position_embeddings.weight".into(),
            &[self.decoder_positions, d],
        );
        let x = self.xattn_dim;
        for l in 0..self.decoder_layers {
            let p = format!("decoder.layers.{l}");
            add(format!("{p}.norm_self.weight"), &[d]);
            add(format!("{p}.self_attention.qkv_net.weight"), &[3 * d, d]);
            add(format!("{p}.self_attention.o_net.weight"), &[d, d]);
            add(format!("{p}.norm_xattn_query.weight"), &[d]);
            add(format!("{p}.cross_attention.q_net.weight"), &[x, d]);
            add(format!("{p}.cross_attention.kv_net.weight"), &[2 * x, d]);
            add(format!("{p}.cross_attention.o_net.weight"), &[d, x]);
            add(format!("{p}.norm_xattn_memory.weight"), &[d]);
            add(format!("{p}.norm_pos_ff.weight"), &[d]);
            add(format!("{p}.pos_ff.proj.conv.weight"), &[f, d, 1]);
            add(format!("{p}.pos_ff.o_net.conv.weight"), &[d, f, 1]);
        }
        add("decoder.norm_out.weight".into(), &[d]);
        let (c, v) = (self.codebooks, self.codebook_vocab);
        add("final_proj.weight".into(), &[c * v, d]);
        add("final_proj.bias".into(), &[c * v]);
        for i in 0..c {
            add(format!("audio_embeddings.{i}.weight"), &[v, d]);
        }
        let (ld, lf) = (self.lt_dim, self.lt_ffn);
        add("local_transformer_in_projection.weight".into(), &[ld, d]);
        add("local_transformer_in_projection.bias".into(), &[ld]);
        add(
            "local_transformer.position_embeddings.weight".into(),
            &[self.lt_positions, ld],
        );
        for l in 0..self.lt_layers {
            let p = format!("local_transformer.layers.{l}");
            add(format!("{p}.norm_self.weight"), &[ld]);
            add(format!("{p}.self_attention.qkv_net.weight"), &[3 * ld, ld]);
            add(format!("{p}.self_attention.o_net.weight"), &[ld, ld]);
            add(format!("{p}.norm_pos_ff.weight"), &[ld]);
            add(format!("{p}.pos_ff.proj.conv.weight"), &[lf, ld, 1]);
            add(format!("{p}.pos_ff.o_net.conv.weight"), &[ld, lf, 1]);
        }
        for i in 0..c {
            add(
                format!("local_transformer_out_projections.{i}.weight"),
                &[v, ld],
            );
            add(format!("local_transformer_out_projections.{i}.bias"), &[v]);
        }
        add(
            "baked_context_embedding.weight".into(),
            &[self.speakers, self.context_frames * d],
        );
        s
    }

    /// The integer buffers of a baked-context checkpoint (int64): `_baked_embedding_T`,
    /// `_baked_embedding_D` (scalars) and `baked_context_embedding_len` (per speaker).
    pub fn int_specs(&self) -> Vec<(String, Vec<usize>)> {
        vec![
            ("_baked_embedding_T".into(), vec![]),
            ("_baked_embedding_D".into(), vec![]),
            ("baked_context_embedding_len".into(), vec![self.speakers]),
        ]
    }

    /// Reads the dimensions from tensor shapes (`shape(name)` is `None` for a missing
    /// tensor) and counts layers as one past the highest index among `names`; the
    /// caller validates every tensor against [`Config::float_specs`] afterwards.
    pub fn detect<'a>(
        shape: impl Fn(&str) -> Option<Vec<usize>>,
        names: impl Iterator<Item = &'a str>,
    ) -> Result<Config> {
        let (mut enc, mut dec, mut lt, mut books) = (0, 0, 0, 0);
        for name in names {
            for (prefix, n) in [
                ("encoder.layers.", &mut enc),
                ("decoder.layers.", &mut dec),
                ("local_transformer.layers.", &mut lt),
                ("audio_embeddings.", &mut books),
            ] {
                let index = name
                    .strip_prefix(prefix)
                    .and_then(|r| r.split('.').next())
                    .and_then(|i| i.parse::<usize>().ok());
                if let Some(i) = index {
                    *n = (*n).max(i.saturating_add(1));
                }
            }
        }
        let need = |name: &str, rank: usize| -> Result<Vec<usize>> {
            match shape(name) {
                Some(s) if s.len() == rank => Ok(s),
                Some(s) => Err(MagpieError::BadTensor {
                    name: name.into(),
                    reason: format!("expected {rank} dimensions, found shape {s:?}"),
                }),
                None => Err(MagpieError::BadTensor {
                    name: name.into(),
                    reason: "missing: this is not a Magpie TTS checkpoint (v2602 layout)".into(),
                }),
            }
        };
        if let Some((what, n)) = [
            ("encoder", enc),
            ("decoder", dec),
            ("local transformer", lt),
            ("codebook", books),
        ]
        .into_iter()
        .find(|&(_, n)| n > MAX_INDEXED)
        {
            return Err(MagpieError::BadTensor {
                name: format!("({what} tensors)"),
                reason: format!(
                    "indices run to {n}, more than any Magpie model has ({MAX_INDEXED})"
                ),
            });
        }
        let text = need("text_embedding.weight", 2)?;
        let enc_pos = need("encoder.position_embeddings.weight", 2)?;
        let enc_ff = need("encoder.layers.0.pos_ff.proj.conv.weight", 3)?;
        let dec_pos = need("decoder.position_embeddings.weight", 2)?;
        let q = need("decoder.layers.0.cross_attention.q_net.weight", 2)?;
        let emb = need("audio_embeddings.0.weight", 2)?;
        let lt_in = need("local_transformer_in_projection.weight", 2)?;
        let lt_ff = need("local_transformer.layers.0.pos_ff.proj.conv.weight", 3)?;
        let lt_pos = need("local_transformer.position_embeddings.weight", 2)?;
        let baked = need("baked_context_embedding.weight", 2)?;
        let dim = text[1];
        if dim == 0 || !dim.is_multiple_of(HEAD_DIM) || baked[1] % dim != 0 {
            return Err(MagpieError::BadTensor {
                name: "text_embedding.weight".into(),
                reason: format!(
                    "width {dim} is not a multiple of {HEAD_DIM}, or the baked context width {} is not a multiple of it",
                    baked[1]
                ),
            });
        }
        if emb[0] <= SPECIAL_AUDIO_TOKENS {
            return Err(MagpieError::BadTensor {
                name: "audio_embeddings.0.weight".into(),
                reason: format!("{} rows leave no real codes", emb[0]),
            });
        }
        if text[0] < 3 {
            return Err(MagpieError::BadTensor {
                name: "text_embedding.weight".into(),
                reason: format!("{} rows leave no text ids besides BOS/EOS", text[0]),
            });
        }
        let c = Config {
            dim,
            text_vocab: text[0],
            encoder_layers: enc,
            encoder_kernel: enc_ff[2],
            encoder_positions: enc_pos[0],
            decoder_layers: dec,
            decoder_positions: dec_pos[0],
            heads: dim / HEAD_DIM,
            ffn: enc_ff[0],
            xattn_dim: q[0],
            codebooks: books,
            codebook_vocab: emb[0],
            lt_dim: lt_in[0],
            lt_ffn: lt_ff[0],
            lt_positions: lt_pos[0],
            lt_layers: lt,
            speakers: baked[0],
            context_frames: baked[1] / dim,
        };
        let sizes = [
            ("encoder layers", c.encoder_layers),
            ("encoder conv kernel", c.encoder_kernel),
            ("decoder layers", c.decoder_layers),
            ("FFN width", c.ffn),
            ("cross-attention width", c.xattn_dim),
            ("codebooks", c.codebooks),
            ("local transformer width", c.lt_dim),
            ("local transformer FFN width", c.lt_ffn),
            ("local transformer layers", c.lt_layers),
            ("speakers", c.speakers),
            ("context frames", c.context_frames),
        ];
        if let Some((what, _)) = sizes.iter().find(|(_, n)| *n == 0) {
            return Err(MagpieError::BadTensor {
                name: "(checkpoint shapes)".into(),
                reason: format!(
                    "the {what} come out as 0; the file is not a usable Magpie checkpoint"
                ),
            });
        }
        if c.lt_positions < c.codebooks {
            return Err(MagpieError::BadTensor {
                name: "local_transformer.position_embeddings.weight".into(),
                reason: format!(
                    "{} positions cannot hold the {} codebooks of a frame",
                    c.lt_positions, c.codebooks
                ),
            });
        }
        Ok(c)
    }
}

/// How to generate (`ModelInferenceParameters`, `magpietts.py:261-299`). Defaults are
/// NeMo's dataclass defaults except the temperature: 0.6, what every port of this
/// checkpoint uses (spec §1.2, open question Q1; the dataclass says 0.7).
#[derive(Debug, Clone, PartialEq)]
pub struct InferenceParams {
    /// Frame cap; without EOS all frames are kept.
    pub max_decoder_steps: usize,
    /// Softmax temperature of the local transformer; `<= 0` means argmax.
    pub temperature: f32,
    /// Top-k of the local transformer (ties with the k-th value are kept).
    pub topk: usize,
    /// Classifier-free guidance: run the unconditional row too.
    pub use_cfg: bool,
    /// Guidance scale `s` in `(1 − s)·u + s·c`.
    pub cfg_scale: f32,
    pub apply_attention_prior: bool,
    /// Prior value off the window (0.1).
    pub attention_prior_epsilon: f32,
    /// Window after the attended text position (5; v2607 uses 6).
    pub attention_prior_lookahead_window: usize,
    /// Decoder layers whose cross-attention is averaged for the alignment (`None` = all).
    pub estimate_alignment_from_layers: Option<Vec<usize>>,
    /// Decoder layers the prior multiplies (`None` = all).
    pub apply_prior_to_layers: Option<Vec<usize>>,
    /// The prior is updated from this step on (0).
    pub start_prior_after_n_audio_steps: usize,
    /// EOS is forbidden before this many frames (4).
    pub min_generated_frames: usize,
}

impl Default for InferenceParams {
    fn default() -> Self {
        InferenceParams {
            max_decoder_steps: 500,
            temperature: 0.6,
            topk: 80,
            use_cfg: true,
            cfg_scale: 2.5,
            apply_attention_prior: true,
            attention_prior_epsilon: 0.1,
            attention_prior_lookahead_window: 5,
            estimate_alignment_from_layers: None,
            apply_prior_to_layers: None,
            start_prior_after_n_audio_steps: 0,
            min_generated_frames: 4,
        }
    }
}

impl InferenceParams {
    /// Checks the parameters against `config`; errors name the field.
    pub fn validate(&self, config: &Config) -> Result<()> {
        let max = config
            .decoder_positions
            .saturating_sub(config.context_frames + 1);
        if self.max_decoder_steps == 0 || self.max_decoder_steps > max {
            return Err(MagpieError::invalid(
                "max_decoder_steps",
                self.max_decoder_steps,
                format!("in 1..={max} (decoder positions minus the context and BOS rows)"),
            ));
        }
        if !self.temperature.is_finite() {
            return Err(MagpieError::invalid(
                "temperature",
                self.temperature,
                "finite",
            ));
        }
        if self.topk == 0 || self.topk > config.codebook_vocab {
            return Err(MagpieError::invalid(
                "topk",
                self.topk,
                format!("in 1..={}", config.codebook_vocab),
            ));
        }
        if !self.cfg_scale.is_finite() {
            return Err(MagpieError::invalid("cfg_scale", self.cfg_scale, "finite"));
        }
        if !(self.attention_prior_epsilon.is_finite() && self.attention_prior_epsilon >= 0.0) {
            return Err(MagpieError::invalid(
                "attention_prior_epsilon",
                self.attention_prior_epsilon,
                "finite and >= 0",
            ));
        }
        if self.attention_prior_lookahead_window == 0 {
            return Err(MagpieError::invalid(
                "attention_prior_lookahead_window",
                0,
                ">= 1",
            ));
        }
        for (what, list) in [
            (
                "estimate_alignment_from_layers",
                &self.estimate_alignment_from_layers,
            ),
            ("apply_prior_to_layers", &self.apply_prior_to_layers),
        ] {
            if let Some(l) = list {
                if l.is_empty() || l.iter().any(|&i| i >= config.decoder_layers) {
                    return Err(MagpieError::invalid(
                        what,
                        format!("{l:?}"),
                        format!("a non-empty list of layers in 0..{}", config.decoder_layers),
                    ));
                }
            }
        }
        Ok(())
    }
}
