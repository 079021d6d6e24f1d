//! The NanoCodec loaders on a tiny decoder written by
//! `testdata/magpie/make_loader_fixtures.py` (torch 2.12, PyPI `gguf` 0.19):
//! the `.nemo` (weight-norm parametrizations, folded by rill) and the GGUF in
//! NeMo-Speech.cpp `conversion/codec.py`'s layout (folded by torch, f16, dense
//! transposed convs) must give the same decoder.

use rill_checkpoint::nemo::Nemo;
use rill_nanocodec::load::{self, folded_tensors};
use rill_nanocodec::{CodecError, Config, NanoCodec, Weights};
use rill_testkit::{loader_expected as expected, require_loader as require};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn sha(v: &[f32]) -> String {
    let mut h = Sha256::new();
    v.iter().for_each(|x| h.update(x.to_le_bytes()));
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn expected_config(e: &Value) -> Config {
    let c = &e["codec_config"];
    let u = |k: &str| c[k].as_u64().unwrap() as usize;
    let l = |k: &str| {
        c[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as usize)
            .collect()
    };
    Config {
        input_dim: u("input_dim"),
        base_channels: u("base_channels"),
        up_sample_rates: l("up_sample_rates"),
        in_kernel: u("in_kernel"),
        out_kernel: u("out_kernel"),
        resblock_kernels: l("resblock_kernels"),
        resblock_dilations: l("resblock_dilations"),
    }
}

fn gguf_weights() -> Weights {
    load::load_gguf(require("tiny_codec.f16.gguf")).unwrap()
}

fn nemo_weights() -> Weights {
    load::load_nemo(require("tiny_codec.nemo")).unwrap()
}

#[test]
fn gguf_gives_exactly_the_converters_folded_weights() {
    let e = expected();
    let w = gguf_weights();
    assert_eq!(w.config, expected_config(&e));
    let want = e["codec_gguf_folded"].as_object().unwrap();
    let got = folded_tensors(&w);
    assert_eq!(got.len(), want.len());
    for (name, values) in got {
        let rec = want
            .get(&name)
            .unwrap_or_else(|| panic!("{name} not recorded"));
        assert_eq!(sha(values), rec["sha256"].as_str().unwrap(), "{name}");
    }
}

#[test]
fn nemo_reads_the_state_dict_and_folds_it_like_torch() {
    let e = expected();
    // The raw state dict, exactly.
    let nemo = Nemo::open(require("tiny_codec.nemo")).unwrap();
    let sd = nemo.state_dict().unwrap();
    let want = e["codec_nemo_state_dict"].as_object().unwrap();
    assert_eq!(sd.len(), want.len());
    for name in sd.names() {
        let t = sd.tensor(name).unwrap();
        let mut h = Sha256::new();
        if t.dtype.is_float() {
            t.to_f32()
                .unwrap()
                .iter()
                .for_each(|x| h.update(x.to_le_bytes()));
        } else {
            t.to_i64()
                .unwrap()
                .iter()
                .for_each(|x| h.update(x.to_le_bytes()));
        }
        let got: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, want[name]["sha256"].as_str().unwrap(), "{name}");
    }
    // Folded by rill (f32) against folded by torch and stored as f16: within f16 rounding.
    let (wn, wg) = (nemo_weights(), gguf_weights());
    assert_eq!(wn.config, expected_config(&e));
    let mut worst = 0f32;
    for ((name, a), (name_g, b)) in folded_tensors(&wn).into_iter().zip(folded_tensors(&wg)) {
        assert_eq!(name, name_g);
        assert_eq!(a.len(), b.len(), "{name}");
        for (&x, &y) in a.iter().zip(b) {
            worst = worst.max((x - y).abs() / x.abs().max(1e-3));
        }
    }
    // Measured 4.88e-4 = f16's half-ulp 2^-11 on the weights (biases and alphas are f32 in both).
    assert!(worst <= 5e-4, "folded weights differ by {worst} (relative)");
}

#[test]
fn both_files_decode_to_the_same_audio() {
    let pool = rill_kernels::Pool::new(1);
    let frames: Vec<[u32; 8]> = (0..3u32)
        .map(|t| std::array::from_fn(|c| (t * 977 + c as u32 * 131) % 2016))
        .collect();
    let a = NanoCodec::new(&nemo_weights())
        .unwrap()
        .decode(&frames, &pool)
        .unwrap();
    let b = NanoCodec::new(&gguf_weights())
        .unwrap()
        .decode(&frames, &pool)
        .unwrap();
    assert_eq!(a.len(), 3 * 1024);
    let peak = a.iter().fold(0f32, |m, x| m.max(x.abs()));
    let diff = a
        .iter()
        .zip(&b)
        .fold(0f32, |m, (x, y)| m.max((x - y).abs()));
    assert!(peak > 1e-3, "the tiny decoder makes sound (peak {peak})");
    // Measured 8.9e-5 at a peak of 0.110 (f16 weights through 5 stages).
    assert!(
        diff <= 2e-4,
        "f32 and f16 decoders differ by {diff} (peak {peak})"
    );
}

#[test]
fn broken_codec_files_are_errors() {
    // A Magpie GGUF is not a codec GGUF; a Magpie .nemo is not a codec .nemo.
    let e = load::load_gguf(require("tiny_magpie.f16.gguf")).unwrap_err();
    assert!(e.to_string().contains("nemo-nano-codec"), "{e}");
    let e = load::load_nemo(require("tiny_magpie.nemo")).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("MagpieTTSModel"), "{text}");
    assert!(matches!(e, CodecError::Invalid { .. }));
    // Truncations: errors, no panics.
    let bytes = std::fs::read(require("tiny_codec.f16.gguf")).unwrap();
    for cut in (0..64).map(|i| i * bytes.len() / 64) {
        let g = rill_checkpoint::gguf::Gguf::from_bytes("cut.gguf", bytes[..cut].to_vec());
        if let Ok(g) = g {
            assert!(load::from_gguf(&g).is_err(), "cut at {cut}");
        }
    }
}
