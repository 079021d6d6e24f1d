//! Shared test support: the committed fixtures under `testdata/magpie/` and the
//! oracle's random-weight model (seed 0), built once per test binary.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rill_magpie::{synth, Config, InferenceParams, Model, Weights};

/// A committed fixture under `testdata/magpie/`; a missing file fails the test.
pub fn require(name: &str) -> PathBuf {
    let path = rill_testkit::repo_root().join("testdata/magpie").join(name);
    if !path.exists() {
        panic!(
            "fixture testdata/magpie/{name} is missing ({}). It is part of the repository: \
             restore it with `git checkout -- testdata/magpie/{name}`, or regenerate it with \
             testdata/magpie/make_model_fixtures.py from the Magpie oracle recordings.",
            path.display()
        );
    }
    path
}

pub fn npz(name: &str) -> rill_io::Npz {
    rill_io::Npz::read(require(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub fn json(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(require(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub fn f32s(z: &rill_io::Npz, key: &str) -> (Vec<usize>, Vec<f32>) {
    z.f32(key).unwrap_or_else(|e| panic!("{key}: {e}"))
}

pub fn ints(z: &rill_io::Npz, key: &str) -> (Vec<usize>, Vec<i64>) {
    z.i64(key).unwrap_or_else(|e| panic!("{key}: {e}"))
}

/// The `info_json` of a fixture (UTF-8 bytes).
pub fn info(z: &rill_io::Npz) -> serde_json::Value {
    let a = z.get("info_json").expect("info_json");
    let rill_io::Data::U8(b) = &a.data else {
        panic!("info_json is not bytes")
    };
    serde_json::from_slice(b).expect("info_json parses")
}

/// The oracle's weights (seed 0, 98-row text table).
pub fn oracle_weights() -> Weights {
    synth::build(&Config::oracle(), 0).expect("synthesising the oracle weights")
}

pub fn oracle_model() -> Arc<Model> {
    static M: OnceLock<Arc<Model>> = OnceLock::new();
    M.get_or_init(|| Arc::new(Model::new(oracle_weights()).expect("building the model")))
        .clone()
}

pub fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    rill_testkit::max_abs_diff(a, b)
}

/// The fixture's text ids without the final EOS.
pub fn token_ids(z: &rill_io::Npz) -> Vec<u32> {
    let (_, t) = ints(z, "text_tokens");
    assert_eq!(*t.last().unwrap(), 97, "recorded tokens end with EOS");
    t[..t.len() - 1].iter().map(|&v| v as u32).collect()
}

pub fn params(info: &serde_json::Value) -> InferenceParams {
    let p = &info["inference_parameters"];
    let layers = |k: &str| {
        p[k].as_array()
            .map(|a| a.iter().map(|v| v.as_u64().unwrap() as usize).collect())
    };
    InferenceParams {
        max_decoder_steps: p["max_decoder_steps"].as_u64().unwrap() as usize,
        temperature: p["temperature"].as_f64().unwrap() as f32,
        topk: p["topk"].as_u64().unwrap() as usize,
        use_cfg: info["use_cfg"].as_bool().unwrap(),
        cfg_scale: p["cfg_scale"].as_f64().unwrap() as f32,
        apply_attention_prior: p["apply_attention_prior"].as_bool().unwrap(),
        attention_prior_epsilon: p["attention_prior_epsilon"].as_f64().unwrap() as f32,
        attention_prior_lookahead_window: p["attention_prior_lookahead_window"].as_u64().unwrap()
            as usize,
        estimate_alignment_from_layers: layers("estimate_alignment_from_layers"),
        apply_prior_to_layers: layers("apply_prior_to_layers"),
        start_prior_after_n_audio_steps: p["start_prior_after_n_audio_steps"].as_u64().unwrap()
            as usize,
        min_generated_frames: p["min_generated_frames"].as_u64().unwrap() as usize,
    }
}
