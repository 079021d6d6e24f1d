//! Loading the files users have (spec §2.1, §2.4): NVIDIA's GGUF
//! ([`gguf::load`], NeMo-Speech.cpp layout) and NeMo's `.nemo` archive
//! ([`nemo::MagpieNemo`]). Both give a [`LoadedModel`]: validated [`Weights`],
//! the [`InferenceParams`] of the model's own config, and that config.
//!
//! Every problem found (tensor, metadata, config) is collected and reported in
//! one [`MagpieError::Load`].

pub mod gguf;
pub mod nemo;

use serde_json::Value;

use crate::config::{Config, InferenceParams};
use crate::error::MagpieError;
use crate::weights::Weights;

/// The only model class rill runs (NeMo-Speech.cpp refuses others too).
pub const NEMO_TARGET: &str = "nemo.collections.tts.models.magpietts.MagpieTTSModel";
/// NeMo's fixed attention-prior thresholds (`magpietts.py:2649-2768`); NeMo-Speech.cpp
/// exposes them as keys, rill implements only these values.
const PRIOR_ADVANCE_THRESHOLD: i64 = 8;
const PRIOR_DECAY_THRESHOLD: i64 = 10;

/// A model read from a GGUF or `.nemo` file.
#[derive(Debug, Clone)]
pub struct LoadedModel {
    pub weights: Weights,
    /// The config's `inference_parameters` over rill's defaults.
    pub params: InferenceParams,
    /// Baked-context speaker names by index (GGUF `magpietts.speaker_names`, trimmed
    /// to the speakers present); empty when the file names none.
    pub speaker_names: Vec<String>,
    /// The whole NeMo model config (`model_config.yaml` / `magpietts.config_json`).
    pub model_config: Value,
    /// The config's `text_tokenizers` names in their order (which sets every
    /// language's token offset; `model_config` has its keys sorted); empty when the
    /// config has none.
    pub text_tokenizers: Vec<String>,
}

/// The keys of the top-level JSON object `key` of `json` in document order
/// (`serde_json::Value` sorts them); empty if missing or not an object.
pub(crate) fn json_top_level_keys(json: &str, key: &str) -> Vec<String> {
    use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
    struct Keys<'k>(&'k str);
    struct Inner;
    impl<'de> Visitor<'de> for Inner {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some((k, IgnoredAny)) = map.next_entry::<String, IgnoredAny>()? {
                keys.push(k);
            }
            Ok(keys)
        }
    }
    impl<'de> serde::de::DeserializeSeed<'de> for Inner {
        type Value = Vec<String>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Vec<String>, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Keys<'_> {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut found = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                if k == self.0 {
                    found = map.next_value_seed(Inner)?;
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    let mut de = serde_json::Deserializer::from_str(json);
    de.deserialize_map(Keys(key)).unwrap_or_default()
}

/// Collects problems; [`Problems::finish`] turns them into one error.
#[derive(Debug, Default)]
pub(crate) struct Problems(pub Vec<String>);

impl Problems {
    pub fn push(&mut self, p: impl Into<String>) {
        self.0.push(p.into());
    }
    pub fn finish(self, path: &std::path::Path) -> Result<(), MagpieError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(MagpieError::Load {
                path: path.to_path_buf(),
                problems: self.0,
            })
        }
    }
}

fn get<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |cur, part| cur.get(part))
}

fn uint(v: &Value, what: &str, p: &mut Problems) -> Option<usize> {
    match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
        Some(n) => Some(n),
        None => {
            p.push(format!("{what} is {v}, not a non-negative integer"));
            None
        }
    }
}

fn float(v: &Value, what: &str, p: &mut Problems) -> Option<f32> {
    match v.as_f64() {
        Some(x) if x.is_finite() => Some(x as f32),
        _ => {
            p.push(format!("{what} is {v}, not a finite number"));
            None
        }
    }
}

fn layer_list(v: &Value, what: &str, p: &mut Problems) -> Option<Option<Vec<usize>>> {
    match v {
        Value::Null => Some(None),
        Value::Array(a) => {
            let l: Option<Vec<usize>> = a.iter().map(|x| uint(x, what, p)).collect();
            l.map(Some)
        }
        _ => {
            p.push(format!(
                "{what} is {v}, not a list of layer indices or null"
            ));
            None
        }
    }
}

/// `inference_parameters` of a NeMo Magpie config over [`InferenceParams::default`],
/// accepting the legacy names of the v2602-era config (`prior_epsilon`,
/// `lookahead_window_size`, `magpietts.py:301-313`). Keys that do not change what
/// rill computes (`use_LT_kv_cache`, `ignore_finished_sentence_tracking`) are not read.
pub(crate) fn params_from_config(cfg: &Value, p: &mut Problems) -> InferenceParams {
    let mut out = InferenceParams::default();
    let Some(inf) = cfg.get("inference_parameters") else {
        return out;
    };
    let Some(obj) = inf.as_object() else {
        p.push(format!("inference_parameters is {inf}, not a mapping"));
        return out;
    };
    let field = |names: &[&str]| -> Option<(String, &Value)> {
        names.iter().find_map(|n| {
            obj.get(*n)
                .map(|v| (format!("inference_parameters.{n}"), v))
        })
    };
    if let Some((w, v)) = field(&["max_decoder_steps"]) {
        out.max_decoder_steps = uint(v, &w, p).unwrap_or(out.max_decoder_steps);
    }
    if let Some((w, v)) = field(&["temperature"]) {
        out.temperature = float(v, &w, p).unwrap_or(out.temperature);
    }
    if let Some((w, v)) = field(&["topk"]) {
        out.topk = uint(v, &w, p).unwrap_or(out.topk);
    }
    if let Some((w, v)) = field(&["cfg_scale"]) {
        out.cfg_scale = float(v, &w, p).unwrap_or(out.cfg_scale);
    }
    if let Some((w, v)) = field(&["apply_attention_prior"]) {
        match v.as_bool() {
            Some(b) => out.apply_attention_prior = b,
            None => p.push(format!("{w} is {v}, not true/false")),
        }
    }
    if obj.contains_key("attention_prior_epsilon") && obj.contains_key("prior_epsilon") {
        p.push("inference_parameters has both attention_prior_epsilon and its legacy name prior_epsilon");
    }
    if let Some((w, v)) = field(&["attention_prior_epsilon", "prior_epsilon"]) {
        out.attention_prior_epsilon = float(v, &w, p).unwrap_or(out.attention_prior_epsilon);
    }
    if obj.contains_key("attention_prior_lookahead_window")
        && obj.contains_key("lookahead_window_size")
    {
        p.push("inference_parameters has both attention_prior_lookahead_window and its legacy name lookahead_window_size");
    }
    if let Some((w, v)) = field(&["attention_prior_lookahead_window", "lookahead_window_size"]) {
        out.attention_prior_lookahead_window =
            uint(v, &w, p).unwrap_or(out.attention_prior_lookahead_window);
    }
    if let Some((w, v)) = field(&["estimate_alignment_from_layers"]) {
        if let Some(l) = layer_list(v, &w, p) {
            out.estimate_alignment_from_layers = l;
        }
    }
    if let Some((w, v)) = field(&["apply_prior_to_layers"]) {
        if let Some(l) = layer_list(v, &w, p) {
            out.apply_prior_to_layers = l;
        }
    }
    if let Some((w, v)) = field(&["start_prior_after_n_audio_steps"]) {
        out.start_prior_after_n_audio_steps =
            uint(v, &w, p).unwrap_or(out.start_prior_after_n_audio_steps);
    }
    if let Some((w, v)) = field(&["min_generated_frames"]) {
        out.min_generated_frames = uint(v, &w, p).unwrap_or(out.min_generated_frames);
    }
    if let Some((w, v)) = field(&["eos_detection_method"]) {
        if v.as_str() != Some("argmax_or_multinomial_any") {
            p.push(format!(
                "{w} is {v}; rill implements only \"argmax_or_multinomial_any\""
            ));
        }
    }
    for (name, fixed) in [
        ("attention_prior_advance_threshold", PRIOR_ADVANCE_THRESHOLD),
        ("attention_prior_decay_threshold", PRIOR_DECAY_THRESHOLD),
    ] {
        if let Some(v) = obj.get(name) {
            if v.as_i64() != Some(fixed) {
                p.push(format!(
                    "inference_parameters.{name} is {v}; rill implements NeMo's fixed {fixed}"
                ));
            }
        }
    }
    out
}

/// The config fields that must agree with the tensors (`detected`) and with what rill
/// implements; each disagreement is one problem.
pub(crate) fn check_config(cfg: &Value, detected: &Config, p: &mut Problems) {
    let text = |path: &str| get(cfg, path).and_then(|v| v.as_str());
    match text("target") {
        Some(NEMO_TARGET) | None => {}
        Some(t) => p.push(format!("target is {t}, not {NEMO_TARGET}")),
    }
    match text("model_type") {
        Some("decoder_ce") | None => {}
        Some(t) => p.push(format!(
            "model_type is {t}; rill runs decoder_ce with baked speaker contexts"
        )),
    }
    if let Some(v) = get(cfg, "has_baked_context_embedding") {
        if v.as_bool() != Some(true) {
            p.push(format!(
                "has_baked_context_embedding is {v}; rill needs the baked speaker contexts"
            ));
        }
    }
    let ints = [
        ("embedding_dim", detected.dim),
        ("frame_stacking_factor", 1),
        ("encoder.d_model", detected.dim),
        ("encoder.n_layers", detected.encoder_layers),
        ("encoder.kernel_size", detected.encoder_kernel),
        ("encoder.sa_n_heads", detected.heads),
        ("encoder.d_ffn", detected.ffn),
        ("decoder.d_model", detected.dim),
        ("decoder.n_layers", detected.decoder_layers),
        ("decoder.kernel_size", 1),
        ("decoder.sa_n_heads", detected.heads),
        ("decoder.d_ffn", detected.ffn),
        ("decoder.xa_n_heads", 1),
        ("decoder.xa_d_head", detected.xattn_dim),
        ("local_transformer_n_layers", detected.lt_layers),
        ("local_transformer_n_heads", 1),
        ("local_transformer_hidden_dim", detected.lt_dim),
    ];
    for (path, want) in ints {
        if let Some(v) = get(cfg, path) {
            if v.as_u64() != Some(want as u64) {
                p.push(format!(
                    "config {path} is {v}, but the tensors (or rill) need {want}"
                ));
            }
        }
    }
    if let Some(t) = text("local_transformer_type") {
        if t != "autoregressive" {
            p.push(format!(
                "local_transformer_type is {t}; rill runs the autoregressive one"
            ));
        }
    }
}

/// Validates `params` against the model, adding one problem on failure.
pub(crate) fn check_params(params: &InferenceParams, config: &Config, p: &mut Problems) {
    if let Err(e) = params.validate(config) {
        p.push(format!("inference_parameters: {e}"));
    }
}

/// The config of a [`crate::Weights`] result, its tensor problems moved into `p`.
pub(crate) fn weights_or_problems(
    r: Result<Weights, MagpieError>,
    p: &mut Problems,
) -> Option<Weights> {
    match r {
        Ok(w) => Some(w),
        Err(MagpieError::Invalid(list)) => {
            p.0.extend(list.iter().map(|x| x.to_string()));
            None
        }
        Err(e) => {
            p.push(e.to_string());
            None
        }
    }
}

/// The error for a missing result that [`Problems::finish`] should already have
/// reported (kept as an error, not a panic).
pub(crate) fn unreachable_load<T>(path: &std::path::Path) -> Result<T, MagpieError> {
    Err(MagpieError::Load {
        path: path.to_path_buf(),
        problems: vec!["no weights were read".into()],
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_keys_keep_document_order() {
        let json = r#"{"b": 1, "text_tokenizers": {"zeta": {"a": [1]}, "alpha": 2, "mid": null}}"#;
        assert_eq!(
            super::json_top_level_keys(json, "text_tokenizers"),
            ["zeta", "alpha", "mid"]
        );
        assert!(super::json_top_level_keys(json, "b").is_empty());
        assert!(super::json_top_level_keys("[1]", "b").is_empty());
        assert!(
            super::json_top_level_keys("{\"text_tokenizers\": [1]}", "text_tokenizers").is_empty()
        );
    }
}
