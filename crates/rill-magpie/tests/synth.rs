//! Random-weight synthesis against the oracle's manifest (sha256 of every tensor's
//! bytes, seed 0), the file writer/loader round trip, and validation errors.

mod common;

use std::collections::BTreeMap;

use rill_magpie::weights::{Tensor, TensorData};
use rill_magpie::{synth, Config, Weights};
use sha2::{Digest, Sha256};

fn hex(d: impl AsRef<[u8]>) -> String {
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn tensor_sha(t: &Tensor) -> String {
    let mut h = Sha256::new();
    match &t.data {
        TensorData::F32(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
        TensorData::I64(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
    }
    hex(h.finalize())
}

#[test]
fn synthesis_is_bit_exact_with_the_oracle_manifest() {
    let manifest = common::json("model_manifest.json");
    let w = common::oracle_weights();
    let rows = manifest["tensors"].as_array().expect("tensors");
    assert_eq!(rows.len(), 231, "the oracle's state dict has 231 entries");
    let mut checked = 0;
    let mut bad = Vec::new();
    for row in rows {
        let name = row["name"].as_str().unwrap();
        if name.ends_with("causal_mask") {
            continue; // regenerated, never stored (trap T20)
        }
        let shape: Vec<usize> = row["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        let t = w
            .get(name)
            .unwrap_or_else(|| panic!("{name} not synthesised"));
        assert_eq!(t.shape, shape, "{name}");
        if tensor_sha(t) != row["sha256"].as_str().unwrap() {
            bad.push(name.to_string());
        }
        checked += 1;
    }
    assert!(bad.is_empty(), "sha256 differs for {bad:?}");
    assert_eq!(checked, 212);
    // Nothing synthesised that the oracle does not have.
    assert_eq!(w.names().count(), 212);
}

#[test]
fn file_round_trip_and_validation() {
    let cfg = Config::oracle();
    let dir = rill_testkit::cache_dir();
    let path = dir.join("magpie_oracle_seed0.safetensors");
    synth::write(&cfg, 0, &path).expect("writing");
    let loaded = Weights::load(&path).expect("loading");
    assert_eq!(loaded.config(), &cfg);
    let built = common::oracle_weights();
    for name in built.names() {
        assert_eq!(loaded.get(name), built.get(name), "{name}");
    }
    std::fs::remove_file(&path).ok();
}

#[test]
fn loading_a_broken_file_lists_every_problem() {
    use rill_checkpoint::writer::{self, Tensor as Out};
    let w = common::oracle_weights();
    let mut out = Vec::new();
    for name in w.names() {
        let t = w.get(name).unwrap();
        if name == "decoder.layers.7.norm_self.weight" {
            continue;
        }
        let mut shape = t.shape.clone();
        if name == "local_transformer_in_projection.bias" {
            shape = vec![2, 128];
        }
        let o = match &t.data {
            TensorData::F32(v) => Out::f32(shape, v),
            TensorData::I64(v) => Out {
                dtype: rill_checkpoint::Dtype::I64,
                shape,
                bytes: v
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect::<Vec<u8>>()
                    .into(),
            },
        };
        out.push((name.to_string(), o));
    }
    let path = rill_testkit::cache_dir().join("magpie_broken.safetensors");
    writer::write(&path, &out, Default::default()).unwrap();
    drop(out);
    let err = Weights::load(&path).unwrap_err().to_string();
    std::fs::remove_file(&path).ok();
    for needle in [
        "2 problems",
        "missing tensor decoder.layers.7.norm_self.weight",
        "local_transformer_in_projection.bias: expected shape [256], found [2, 128]",
    ] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
}

#[test]
fn validation_reports_every_problem() {
    let w = common::oracle_weights();
    let mut map: BTreeMap<String, Tensor> = w
        .names()
        .map(|n| (n.to_string(), w.get(n).unwrap().clone()))
        .collect();
    map.remove("decoder.layers.3.cross_attention.o_net.weight");
    map.get_mut("final_proj.bias").unwrap().shape = vec![16191];
    map.remove("baked_context_embedding_len");
    let err = Weights::from_tensors(map).unwrap_err().to_string();
    for needle in [
        "3 problems",
        "missing tensor decoder.layers.3.cross_attention.o_net.weight",
        "final_proj.bias: expected shape [16192], found [16191]",
        "missing tensor baked_context_embedding_len",
    ] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
}

#[test]
fn dimensions_are_read_from_the_shapes() {
    let w = common::oracle_weights();
    let c = w.config();
    assert_eq!(c, &Config::oracle());
    assert_eq!((c.text_vocab, c.text_eos()), (98, 97));
    assert_eq!((c.audio_bos(), c.audio_eos()), (2016, 2017));
    let p = rill_magpie::InferenceParams::default();
    assert_eq!(p.temperature, 0.6);
    assert_eq!((p.topk, p.cfg_scale, p.max_decoder_steps), (80, 2.5, 500));
}
