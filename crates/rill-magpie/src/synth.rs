//! Random-weight Magpie checkpoints from the oracle's portable recipe
//! (`oracle/magpie/magpie_common.py` `magpie_init_rule`, values by
//! [`rill_checkpoint::synth::fill_values`]). Bit-exact with the oracle's tensors
//! (`results/manifest_magpie.json` sha256 per tensor; `testdata/magpie/model_manifest.json`).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rill_checkpoint::synth::{fill_values_parallel, tensor_key};

use crate::config::Config;
use crate::error::Result;
use crate::weights::{Tensor, TensorData, Weights};

/// How one tensor is initialised.
#[derive(Debug, Clone, PartialEq)]
pub enum InitRule {
    /// `uniform(mean, std)` of the portable recipe.
    Uniform { mean: f64, std: f64 },
    /// Fixed integers (baked-context buffers).
    Ints(Vec<i64>),
}

/// The oracle's rule for a float tensor (`magpie_init_rule`): LN weights 1 ± 0.05,
/// biases 0.02 (0.5 for the two output heads), embeddings and baked context std 1,
/// position embeddings 0.3, matrices `gain/√fan_in` (gain 2 for `final_proj`, 1.5
/// for the LT heads). `None` for names the recipe does not cover.
pub fn float_rule(name: &str, shape: &[usize]) -> Option<InitRule> {
    let uniform = |mean: f64, std: f64| Some(InitRule::Uniform { mean, std });
    let mut parts = name.rsplit('.');
    let last = parts.next()?;
    let owner = parts.next().unwrap_or("");
    // re.search(r'(^|\.)norm[^.]*\.weight$')
    if last == "weight" && owner.starts_with("norm") {
        return uniform(1.0, 0.05);
    }
    let heads =
        name.starts_with("final_proj") || name.starts_with("local_transformer_out_projections");
    if last == "bias" {
        return uniform(0.0, if heads { 0.5 } else { 0.02 });
    }
    if name == "text_embedding.weight"
        || name == "baked_context_embedding.weight"
        || name.starts_with("audio_embeddings.")
    {
        return uniform(0.0, 1.0);
    }
    if name.ends_with("position_embeddings.weight") {
        return uniform(0.0, 0.3);
    }
    if last == "weight" && shape.len() >= 2 {
        let fan_in: usize = shape[1..].iter().product();
        let gain = if name.starts_with("final_proj") {
            2.0
        } else if name.starts_with("local_transformer_out_projections") {
            1.5
        } else {
            1.0
        };
        return uniform(0.0, gain / (fan_in as f64).sqrt());
    }
    None
}

/// Builds every tensor of `config` for weights seed `seed` in memory.
pub fn build(config: &Config, seed: u64) -> Result<Weights> {
    let mut tensors = BTreeMap::new();
    for (name, shape) in config.float_specs() {
        let Some(InitRule::Uniform { mean, std }) = float_rule(&name, &shape) else {
            // Every name of float_specs has a rule (tested); keep going without panicking.
            return Err(crate::error::MagpieError::BadTensor {
                name,
                reason: "no portable init rule".into(),
            });
        };
        let mut v = vec![0f32; shape.iter().product()];
        fill_values_parallel(tensor_key(seed, &name), 0, mean, std, &mut v);
        tensors.insert(
            name,
            Tensor {
                shape,
                data: TensorData::F32(v),
            },
        );
    }
    let ints = [
        vec![config.context_frames as i64],
        vec![config.dim as i64],
        vec![config.context_frames as i64; config.speakers],
    ];
    for ((name, shape), values) in config.int_specs().into_iter().zip(ints) {
        tensors.insert(
            name,
            Tensor {
                shape,
                data: TensorData::I64(values),
            },
        );
    }
    Weights::from_tensors(tensors)
}

/// Writes the synthetic checkpoint of `config` and `seed` to `path` (safetensors,
/// state-dict names, no `causal_mask` buffers); what `rill synth-checkpoint --model
/// magpie` calls.
pub fn write(config: &Config, seed: u64, path: &Path) -> Result<()> {
    let w = build(config, seed)?;
    let meta = HashMap::from([
        (
            "format".to_string(),
            "magpie_tts v2602 state-dict layout, portable-init random weights".to_string(),
        ),
        ("weights_seed".to_string(), seed.to_string()),
        (
            "init".to_string(),
            "portable_init v1 + magpie_init_rule (oracle/magpie/magpie_common.py)".to_string(),
        ),
    ]);
    w.write(path, meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_float_tensor_has_a_rule() {
        for (name, shape) in Config::v2602(2362).float_specs() {
            assert!(float_rule(&name, &shape).is_some(), "{name}");
        }
    }

    #[test]
    fn rules_follow_the_recipe() {
        let u = |m, s| Some(InitRule::Uniform { mean: m, std: s });
        assert_eq!(float_rule("decoder.norm_out.weight", &[768]), u(1.0, 0.05));
        assert_eq!(
            float_rule("decoder.layers.3.norm_xattn_memory.weight", &[768]),
            u(1.0, 0.05)
        );
        assert_eq!(float_rule("final_proj.bias", &[16192]), u(0.0, 0.5));
        assert_eq!(
            float_rule("local_transformer_in_projection.bias", &[256]),
            u(0.0, 0.02)
        );
        assert_eq!(
            float_rule("encoder.layers.0.pos_ff.proj.conv.weight", &[3072, 768, 3]),
            u(0.0, 1.0 / (2304f64).sqrt())
        );
        assert_eq!(
            float_rule("final_proj.weight", &[16192, 768]),
            u(0.0, 2.0 / (768f64).sqrt())
        );
        assert_eq!(
            float_rule("decoder.layers.0.causal_mask", &[1, 1, 4, 4]),
            None
        );
    }
}
