//! NVIDIA's Magpie GGUF (NeMo-Speech.cpp `conversion/tts.py`): state-dict names,
//! `*.causal_mask` left out, each conv FFN weight `(out, in, k)` split per tap into
//! `<name>.k{j}` of shape `(out, in)`, ≥2-D floats f16 and the rest f32, int64
//! buffers as int32; metadata `magpietts.*` and `magpietts.config_json` (the
//! whole `model_config.yaml` as JSON).
//!
//! The inference parameters come from `config_json` when it has them: the typed
//! `magpietts.inference.*` keys are written by the converter from the new key
//! names only, so for a v2602-era config with the legacy names
//! (`prior_epsilon`, `lookahead_window_size`) they hold the converter's defaults.
//! Without `config_json` the typed keys are used. The converter writes `config_json`
//! with sorted keys, so v2602's ten text tokenizers arrive alphabetically; they are
//! put back in v2602's order (`rill_text::v2602_order_of_unordered`).

use std::collections::BTreeMap;
use std::path::Path;

use rill_checkpoint::gguf::{Gguf, MetaValue};
use rill_checkpoint::raw::RawTensor;
use serde_json::{json, Map, Value};

use super::{
    check_config, check_params, params_from_config, unreachable_load, weights_or_problems,
    LoadedModel, Problems,
};
use crate::config::Config;
use crate::error::Result;
use crate::weights::{Tensor, TensorData, Weights};

/// The `general.architecture` NeMo-Speech.cpp writes.
pub const ARCHITECTURE: &str = "magpietts";

/// `"<base>.k<j>"` → (`base`, `j`) for the per-tap conv FFN weights.
fn split_tap(name: &str) -> Option<(&str, usize)> {
    let (base, k) = name.rsplit_once(".k")?;
    if !(base.ends_with(".pos_ff.proj.conv.weight") || base.ends_with(".pos_ff.o_net.conv.weight"))
    {
        return None;
    }
    Some((base, k.parse().ok()?))
}

fn read(t: &RawTensor<'_>) -> rill_checkpoint::Result<TensorData> {
    Ok(if t.dtype.is_float() {
        TensorData::F32(t.to_f32()?)
    } else {
        TensorData::I64(t.to_i64()?)
    })
}

/// Re-interleaves taps `(out, in)` × k into the torch layout `(out, in, k)`.
fn join_taps(
    base: &str,
    taps: &BTreeMap<usize, &str>,
    g: &Gguf,
    p: &mut Problems,
) -> Option<Tensor> {
    let k = taps.len();
    if taps.keys().copied().ne(0..k) {
        p.push(format!(
            "{base}: taps {:?} are not k0, k1, … without a gap (a tap is missing)",
            taps.keys().collect::<Vec<_>>()
        ));
        return None;
    }
    let mut shape: Option<Vec<usize>> = None;
    let mut values = Vec::new();
    for (j, name) in taps.values().enumerate() {
        let t = match g.tensor(name) {
            Ok(t) => t,
            Err(e) => {
                p.push(e.to_string());
                return None;
            }
        };
        if t.shape.len() != 2 || shape.as_ref().is_some_and(|s| *s != t.shape) {
            p.push(format!(
                "{name}: shape {:?}; every tap of {base} must be the same (out, in)",
                t.shape
            ));
            return None;
        }
        let tap = match t.to_f32() {
            Ok(v) => v,
            Err(e) => {
                p.push(e.to_string());
                return None;
            }
        };
        if values.is_empty() {
            values = vec![0f32; tap.len() * k];
        }
        for (i, v) in tap.into_iter().enumerate() {
            values[i * k + j] = v;
        }
        shape = Some(t.shape.clone());
    }
    let s = shape?;
    Some(Tensor {
        shape: vec![s[0], s[1], k],
        data: TensorData::F32(values),
    })
}

/// The `magpietts.inference.*` keys as an `inference_parameters` mapping (used when
/// the file has no `config_json`).
fn typed_inference(g: &Gguf) -> Value {
    let mut m = Map::new();
    for (key, v) in g.metadata() {
        let Some(name) = key.strip_prefix("magpietts.inference.") else {
            continue;
        };
        let value = match v {
            MetaValue::Bool(b) => json!(b),
            MetaValue::F32(_) | MetaValue::F64(_) => json!(v.as_f64()),
            MetaValue::Array(a) => Value::Array(a.iter().map(|x| json!(x.as_i64())).collect()),
            MetaValue::Str(s) => json!(s),
            other => json!(other.as_i64()),
        };
        m.insert(name.to_string(), value);
    }
    json!({ "inference_parameters": m })
}

/// The typed dimension keys (and the baked context lengths) that must agree with the tensors.
fn check_metadata(g: &Gguf, w: &Weights, p: &mut Problems) {
    let c = w.config();
    if let (Some(v), Ok(lens)) = (
        g.get("magpietts.baked_context_lens"),
        w.ints("baked_context_embedding_len"),
    ) {
        let meta: Option<Vec<i64>> = v
            .as_array()
            .and_then(|a| a.iter().map(|x| x.as_i64()).collect());
        if meta.as_deref() != Some(lens) {
            p.push(format!(
                "metadata magpietts.baked_context_lens is {v:?}, but baked_context_embedding_len holds {lens:?}"
            ));
        }
    }
    let expect = [
        ("text_vocab_size", c.text_vocab),
        ("audio_codebooks", c.codebooks),
        ("audio_codebook_size", c.codebook_size()),
        ("audio_vocab_size", c.codebook_vocab),
        ("audio_bos_id", c.audio_bos() as usize),
        ("audio_eos_id", c.audio_eos() as usize),
        ("context_audio_bos_id", c.codebook_size() + 2),
        ("context_audio_eos_id", c.codebook_size() + 3),
        ("mask_token_id", c.codebook_size() + 4),
        ("frame_stacking_factor", 1),
        ("embedding_dim", c.dim),
        ("ffn_dim", c.ffn),
        ("encoder.layers", c.encoder_layers),
        ("encoder.heads", c.heads),
        ("encoder.kernel_size", c.encoder_kernel),
        ("decoder.layers", c.decoder_layers),
        ("decoder.heads", c.heads),
        ("decoder.cross_heads", 1),
        ("decoder.cross_head_dim", c.xattn_dim),
        ("decoder.kernel_size", 1),
        ("local_transformer.layers", c.lt_layers),
        ("local_transformer.heads", 1),
        ("local_transformer.hidden_dim", c.lt_dim),
        ("local_transformer.context_length", c.lt_positions),
        ("baked_context_length", c.context_frames),
        ("baked_context_dim", c.dim),
        ("baked_speakers", c.speakers),
    ];
    for (key, want) in expect {
        let key = format!("magpietts.{key}");
        if let Some(v) = g.get(&key) {
            if v.as_i64() != Some(want as i64) {
                p.push(format!(
                    "metadata {key} is {v:?}, but the tensors (or rill) need {want}"
                ));
            }
        }
    }
}

fn speaker_names(g: &Gguf, c: &Config, p: &mut Problems) -> Vec<String> {
    let Some(v) = g.get("magpietts.speaker_names") else {
        return Vec::new();
    };
    let names: Option<Vec<String>> = v
        .as_array()
        .map(|a| a.iter().map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or(None);
    match names {
        Some(mut n) if n.len() >= c.speakers => {
            n.truncate(c.speakers);
            n
        }
        _ => {
            p.push(format!(
                "metadata magpietts.speaker_names is not a list of at least {} strings",
                c.speakers
            ));
            Vec::new()
        }
    }
}

/// Loads and validates a Magpie GGUF; every problem is reported at once.
pub fn load(path: impl AsRef<Path>) -> Result<LoadedModel> {
    let path = path.as_ref();
    let g = Gguf::open(path)?;
    from_gguf(&g)
}

/// [`load`] for an already parsed file.
pub fn from_gguf(g: &Gguf) -> Result<LoadedModel> {
    let mut p = Problems::default();
    match g.get("general.architecture").and_then(|v| v.as_str()) {
        Some(ARCHITECTURE) => {}
        other => p.push(format!(
            "general.architecture is {other:?}, not \"{ARCHITECTURE}\" (is this a Magpie TTS GGUF from NeMo-Speech.cpp?)"
        )),
    }
    let mut tensors = BTreeMap::new();
    let mut taps: BTreeMap<&str, BTreeMap<usize, &str>> = BTreeMap::new();
    for name in g.names() {
        if name.ends_with(".causal_mask") {
            continue; // regenerated (trap T20)
        }
        if let Some((base, k)) = split_tap(name) {
            taps.entry(base).or_default().insert(k, name);
            continue;
        }
        match g
            .tensor(name)
            .and_then(|t| Ok((t.shape.clone(), read(&t)?)))
        {
            Ok((shape, data)) => {
                tensors.insert(name.to_string(), Tensor { shape, data });
            }
            Err(e) => p.push(e.to_string()),
        }
    }
    for (base, ks) in &taps {
        if tensors.contains_key(*base) {
            p.push(format!("{base} is stored both whole and per tap"));
        } else if let Some(t) = join_taps(base, ks, g, &mut p) {
            tensors.insert(base.to_string(), t);
        }
    }
    let mut text_tokenizers = Vec::new();
    let model_config = match g.get("magpietts.config_json") {
        None => Value::Null,
        Some(MetaValue::Str(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v) if v.is_object() => {
                // Written with sorted keys: the order is the set's, not NeMo's.
                text_tokenizers = rill_text::v2602_order_of_unordered(super::json_top_level_keys(
                    s,
                    "text_tokenizers",
                ));
                v
            }
            _ => {
                p.push("metadata magpietts.config_json is not a JSON object");
                Value::Null
            }
        },
        Some(_) => {
            p.push("metadata magpietts.config_json is not a string");
            Value::Null
        }
    };
    let params = if model_config.get("inference_parameters").is_some() {
        params_from_config(&model_config, &mut p)
    } else {
        params_from_config(&typed_inference(g), &mut p)
    };
    let weights = weights_or_problems(Weights::from_tensors(tensors), &mut p);
    let mut speakers = Vec::new();
    if let Some(w) = &weights {
        let c = w.config();
        check_metadata(g, w, &mut p);
        check_config(&model_config, c, &mut p);
        check_params(&params, c, &mut p);
        speakers = speaker_names(g, c, &mut p);
    }
    if weights.is_none() && p.0.is_empty() {
        p.push("no weights were read");
    }
    p.finish(g.path())?;
    let Some(weights) = weights else {
        return unreachable_load(g.path());
    };
    Ok(LoadedModel {
        weights,
        params,
        speaker_names: speakers,
        model_config,
        text_tokenizers,
    })
}
