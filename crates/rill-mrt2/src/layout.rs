//! The MRT2 checkpoint layout, derived: the language model's tensors from
//! [`Mrt2Config`], the codec's from [`rill_spectrostream::config::SPECTROSTREAM`]; and the
//! checks of a checkpoint against it (which model, every tensor present).
//!
//! Names and shapes follow `shared/spec/mrt2_spec.md` §2.2 (the JAX parameter
//! tree, so they are the safetensors keys of the real `mrt2_small.safetensors` /
//! `mrt2_base.safetensors`); the init rules of synthetic checkpoints follow the
//! fixtures' manifests (`make_checkpoint.py`). Tests check both sizes against
//! `testdata/mrt2/manifest_mrt2_*.json` bit for bit.

use rill_checkpoint::layout::{Init, TensorSpec};
use rill_checkpoint::synth::{SynthFile, SynthTensor};
use rill_checkpoint::{Checkpoint, CheckpointError};
use rill_spectrostream::config::SPECTROSTREAM;

use crate::config::{ModelKind, Mrt2Config, StackDims, MULAN_DIM, MULAN_ROWS, REGULAR_ROWS};
use crate::sampler::VOCAB;

/// Prefix of the language model's tensors.
pub const DEPTHFORMER: &str = "params/depthformer";

/// Name of the decoder embedding, whose width tells small from base.
pub fn decoder_embedding_name() -> String {
    format!("{DEPTHFORMER}/decoder/decoder_embedding/embedding/embedding")
}

/// Collects specs with short helpers for the recurring shapes.
struct Builder {
    specs: Vec<TensorSpec>,
}

impl Builder {
    fn push(&mut self, name: String, shape: &[usize], init: Init) {
        self.specs.push(TensorSpec {
            name,
            shape: shape.to_vec(),
            init,
        });
    }

    fn kernel(&mut self, name: String, shape: &[usize], fan_in: usize) {
        let init = Init::Kernel {
            fan_in: fan_in as f64,
            gain: 1.0,
        };
        self.push(name, shape, init);
    }

    fn transformer(&mut self, prefix: &str, s: StackDims, cross_src: Option<usize>) {
        let (d, h, u) = (s.dim, s.heads, s.head_dim);
        let sinks = cross_src.is_some(); // only the temporal stack has attention sinks
        for l in 0..s.layers {
            let p = format!("{prefix}/x_layers_{l}");
            let attention = |b: &mut Builder, block: &str, kv_in: usize| {
                let a = format!("{p}/{block}/attention");
                b.kernel(format!("{a}/query_projection/kernel"), &[d, h, u], d);
                b.kernel(format!("{a}/key_projection/kernel"), &[kv_in, h, u], kv_in);
                b.kernel(
                    format!("{a}/value_projection/kernel"),
                    &[kv_in, h, u],
                    kv_in,
                );
                b.push(format!("{a}/per_dim_scale"), &[u], Init::PerDimScale);
                if sinks {
                    let sink_shape = [1, h, u];
                    b.push(
                        format!("{a}/sink_key_embeddings"),
                        &sink_shape,
                        Init::SinkKey,
                    );
                    let name = format!("{a}/sink_value_embeddings");
                    b.push(name, &sink_shape, Init::SinkValue);
                }
                b.kernel(
                    format!("{p}/{block}/output_projection/kernel"),
                    &[d, h, u],
                    h * u,
                );
                b.push(format!("{p}/{block}/pre_norm/scale"), &[d], Init::Scale);
                b.push(format!("{p}/{block}/post_norm/scale"), &[d], Init::Scale);
            };
            attention(self, "self_attention", d);
            if let Some(src) = cross_src {
                attention(self, "cross_attention", src);
            }
            let f = format!("{p}/ffn");
            self.kernel(format!("{f}/ffn_layer1/kernel"), &[d, s.ffn], d);
            self.push(format!("{f}/ffn_layer1/bias"), &[s.ffn], Init::Bias);
            self.kernel(format!("{f}/ffn_layer2/kernel"), &[s.ffn, d], s.ffn);
            self.push(format!("{f}/ffn_layer2/bias"), &[d], Init::Bias);
            self.push(format!("{f}/pre_norm/scale"), &[d], Init::Scale);
            self.push(format!("{f}/post_norm/scale"), &[d], Init::Scale);
        }
    }
}

impl Mrt2Config {
    /// Every tensor of the language model (`params/depthformer/…`), in build order.
    pub fn tensor_specs(&self) -> Vec<TensorSpec> {
        let dims = self.dims;
        let (t, dp) = (dims.temporal, dims.depth);
        let mut b = Builder { specs: Vec::new() };
        let enc = format!("{DEPTHFORMER}/encoder/body");
        let mulan = format!("{enc}/layers_1/branched_mulan_embedder/mulan_embedder");
        b.push(
            format!("{mulan}/mulan_dequantizer/embedding"),
            &[MULAN_ROWS, MULAN_DIM],
            Init::Embedding { gain: 1.0 },
        );
        b.kernel(
            format!("{mulan}/depth_input_adapter/kernel"),
            &[MULAN_DIM, dims.enc_dim],
            MULAN_DIM,
        );
        b.push(
            format!("{enc}/layers_1/branched_regular_embedder/regular_embedder/embedding"),
            &[REGULAR_ROWS, dims.enc_dim],
            Init::Embedding { gain: 1.0 },
        );
        b.push(
            format!("{enc}/encoder_ln/scale"),
            &[dims.enc_dim],
            Init::Scale,
        );
        b.push(
            format!("{enc}/encoder_ln/bias"),
            &[dims.enc_dim],
            Init::LnBias,
        );

        let dec = format!("{DEPTHFORMER}/decoder");
        b.push(
            decoder_embedding_name(),
            &[VOCAB, t.dim],
            Init::Embedding {
                gain: 1.0 / (t.dim as f64).sqrt(),
            },
        );
        b.transformer(
            &format!("{dec}/temporal_body/transformer"),
            t,
            Some(dims.enc_dim),
        );
        b.kernel(
            format!("{dec}/depth_body/depth_input_adapter/kernel"),
            &[t.dim, dp.dim],
            t.dim,
        );
        b.transformer(&format!("{dec}/depth_body/transformer"), dp, None);
        let depth_ln = format!("{dec}/depth_body/final_ln");
        b.push(format!("{depth_ln}/scale"), &[dp.dim], Init::Scale);
        b.push(format!("{depth_ln}/bias"), &[dp.dim], Init::LnBias);
        b.push(
            format!("{dec}/depth_body/to_logits/kernel"),
            &[dp.dim, VOCAB],
            Init::Kernel {
                fan_in: dp.dim as f64,
                gain: 8.0,
            },
        );
        b.push(
            format!("{dec}/depth_body/to_logits/bias"),
            &[VOCAB],
            Init::Bias,
        );
        b.specs
    }
}

/// Every tensor of the checkpoint of `kind` (language model and codec), sorted by
/// name as the files store them.
pub fn tensor_specs(kind: ModelKind) -> Vec<TensorSpec> {
    let mut specs = Mrt2Config::new(kind).tensor_specs();
    specs.extend(SPECTROSTREAM.tensor_specs());
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    specs
}

/// The tensors a random-weight checkpoint of `kind` holds (`rill synth-checkpoint`,
/// the Python package's `synth_checkpoint`): the layout, each with its recipe.
pub fn synth_tensors(kind: ModelKind) -> Vec<SynthTensor> {
    tensor_specs(kind).iter().map(SynthTensor::from).collect()
}

/// sha256 of the whole files the oracle's `synth_checkpoint.py` wrote for the
/// reference recordings (`testdata/mrt2/synth_file_sha256*.json`, docs/parity.md):
/// [`rill_checkpoint::synth::write_checkpoint`] checks its output against them
/// (through [`ModelKind::synth_file`]).
pub const ORACLE_FILE_SHA256: [(ModelKind, u64, &str); 4] = [
    (
        ModelKind::Small,
        0,
        "4248ea629330af20bed5e467ddebbd14797638b913c56f788149bd335779ab3d",
    ),
    (
        ModelKind::Small,
        1,
        "7d7f51ee84de7782e6582c64efc1ef41754486f55723278f030b4dc7a2c38283",
    ),
    (
        ModelKind::Small,
        2,
        "b51c66a8da7e335830553e8901754c35436a0730b4e7165fb3f7bda2db278bc6",
    ),
    (
        ModelKind::Base,
        0,
        "7d4181ec4769b6dfd5298252cd27f056c016d84c302da0d9be472b213fe1191e",
    ),
];

/// The oracle's sha256 for (`kind`, `seed`), if it made that file.
pub fn oracle_sha256(kind: ModelKind, seed: u64) -> Option<&'static str> {
    ORACLE_FILE_SHA256
        .iter()
        .find(|(k, s, _)| *k == kind && *s == seed)
        .map(|(_, _, h)| *h)
}

impl ModelKind {
    /// The random-weight checkpoint of this model for weights seed `seed`: its name,
    /// and the oracle's sha256 if the oracle made the same file.
    pub fn synth_file(self, seed: u64) -> SynthFile<'static> {
        SynthFile {
            model: self.name(),
            seed,
            oracle_sha256: oracle_sha256(self, seed),
        }
    }
}

/// Which model `ckpt` holds: from the decoder embedding's width, or for a
/// pre-quantised file the model it records.
pub fn detect_model(ckpt: &Checkpoint) -> Result<ModelKind, CheckpointError> {
    let name = decoder_embedding_name();
    let unknown = |reason: String| CheckpointError::UnknownModel {
        path: ckpt.path().to_path_buf(),
        reason,
    };
    if ckpt.entry(&name).is_none() && ckpt.quantized_format(&name).is_some() {
        let m = ckpt.quantized_model().unwrap_or("");
        return ModelKind::from_name(m)
            .ok_or_else(|| unknown(format!("pre-quantised file names no known model ({m:?})")));
    }
    let e = ckpt.entry(&name).ok_or_else(|| {
        unknown(format!(
            "it has no tensor {name} ({} tensors in the file)",
            ckpt.len()
        ))
    })?;
    let configs = Mrt2Config::all();
    let embedding_shape = |c: &Mrt2Config| [VOCAB, c.dims.temporal.dim];
    if let Some(c) = configs.iter().find(|c| e.shape == embedding_shape(c)) {
        return Ok(c.kind);
    }
    let expected: Vec<String> = configs
        .iter()
        .map(|c| format!("{:?} ({})", embedding_shape(c), c.kind))
        .collect();
    Err(unknown(format!(
        "{name} has shape {:?}; expected {}",
        e.shape,
        expected.join(" or ")
    )))
}

/// Detects the model and checks every tensor it needs (presence, shape, dtype),
/// listing all problems at once.
pub fn validate(ckpt: &Checkpoint) -> Result<ModelKind, CheckpointError> {
    let kind = detect_model(ckpt)?;
    let problems = ckpt.problems(&tensor_specs(kind));
    if problems.is_empty() {
        Ok(kind)
    } else {
        Err(CheckpointError::Invalid {
            path: ckpt.path().to_path_buf(),
            problems,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_counts_match_spec() {
        let specs = tensor_specs(ModelKind::Small);
        assert_eq!(specs.len(), 374);
        let depth: usize = specs
            .iter()
            .filter(|s| s.name.starts_with(DEPTHFORMER))
            .map(|s| s.numel())
            .sum();
        assert_eq!(depth, 229_732_614);
        let total: usize = specs.iter().map(|s| s.numel()).sum();
        assert_eq!(total, 282_194_376);
    }

    #[test]
    fn base_counts_match_spec() {
        let specs = tensor_specs(ModelKind::Base);
        let depth: usize = specs
            .iter()
            .filter(|s| s.name.starts_with(DEPTHFORMER))
            .map(|s| s.numel())
            .sum();
        assert_eq!(depth, 2_406_701_830);
    }
}
