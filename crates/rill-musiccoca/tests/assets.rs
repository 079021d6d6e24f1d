//! The TFLite assets: the seed-0 synthetic files read back through `convert.py`'s
//! rules give the oracle's tensors bit for bit (its independent sha256 per tensor),
//! and damaged, foreign or missing files are refused with the right error.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rill_musiccoca::assets;
use rill_musiccoca::synth;
use rill_musiccoca::tflite::write::{ModelSpec, SubgraphSpec, TensorData, TensorSpec};
use rill_musiccoca::tflite::{builtin, tensor_type, TfliteModel};
use rill_musiccoca::{Error, Weights};
use sha2::{Digest, Sha256};

fn testdata(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/musiccoca")
        .join(name);
    assert!(
        p.exists(),
        "testdata/musiccoca/{name} is missing: it is part of the repository (git checkout)"
    );
    p
}

fn json(name: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(testdata(name)).unwrap()).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

mod common;
use common::synthetic_dir;

fn sha256_f32(data: &[f32]) -> String {
    let mut h = Sha256::new();
    for chunk in data.chunks(1 << 16) {
        let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_le_bytes()).collect();
        h.update(&bytes);
    }
    hex(&h.finalize())
}

#[test]
fn seed0_assets_read_back_to_the_oracle_tensors() {
    let dir = synthetic_dir(0);
    let t = Instant::now();
    let w = Weights::from_tflite_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "loaded the five files in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let oracle = json("weights_seed0.json");
    let tensors = oracle["tensors"].as_object().unwrap();
    let names: Vec<&str> = w.names().collect();
    let want: Vec<&str> = tensors.keys().map(String::as_str).collect();
    assert_eq!(names, want, "tensor names");
    let mut bad = Vec::new();
    for (name, info) in tensors {
        let shape: Vec<usize> = info["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        let t = w.get(name, &shape).unwrap_or_else(|e| panic!("{e}"));
        let got = sha256_f32(&t.data);
        if got != info["sha256"].as_str().unwrap() {
            bad.push(name.clone());
        }
    }
    assert!(bad.is_empty(), "sha256 differs from the oracle's: {bad:?}");
    assert_eq!(tensors.len(), 80);
}

#[test]
fn the_crate_manifest_is_the_oracle_manifest() {
    let oracle = std::fs::read_to_string(testdata("manifest_musiccoca.json")).unwrap();
    assert_eq!(synth::MANIFEST_JSON, oracle);
    let units = synth::manifest();
    assert_eq!(units.len(), 91);
    let values: usize = units
        .iter()
        .map(|u| u.shape.iter().product::<usize>())
        .sum();
    assert_eq!(values, 228_353_936);
}

/// A small model: two subgraphs, constants (one fused name, one look-alike, one
/// activation with a matching name), an int32 constant and two operators.
fn small_spec() -> ModelSpec {
    let mut main = SubgraphSpec::new("main");
    let x = main.activation("input/key/einsum", &[2, 3], tensor_type::FLOAT32);
    main.constant(
        "a/key/einsum;a/value/einsum",
        &[2, 3],
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    );
    main.constant("a/value/einsum", &[2, 3], vec![-1.0; 6]);
    main.constant("b/ln/broadcast_in_dim1", &[3], vec![1.0, 1.5, 2.0]);
    main.constant("b/ln/broadcast_in_dim", &[3], vec![0.0, 0.5, 0.25]);
    main.constant("only/in/tail;c/post/add", &[4], vec![9.0; 4]);
    main.push(TensorSpec {
        name: "ids".into(),
        shape: vec![2],
        dtype: tensor_type::INT32,
        data: TensorData::Bytes(vec![1, 0, 0, 0, 2, 0, 0, 0]),
    });
    let y = main.activation("out", &[2, 2], tensor_type::FLOAT32);
    main.op(builtin::FULLY_CONNECTED, &[x, 1, 5], &[y]);
    main.op(builtin::GATHER, &[1, 6], &[y]);
    main.inputs = vec![x];
    main.outputs = vec![y];
    let mut body = SubgraphSpec::new("body");
    body.activation("jax2tf_arg_1/x", &[2], tensor_type::FLOAT32);
    body.constant("jax2tf_arg_12/w", &[2], vec![7.0, 8.0]);
    body.constant("jax2tf_arg_1/w", &[3], vec![4.0, 5.0, 6.0]);
    ModelSpec {
        description: "test".into(),
        subgraphs: vec![main, body],
    }
}

#[test]
fn find_and_arg_follow_convert_py() {
    let m = TfliteModel::from_bytes("small.tflite", small_spec().to_bytes()).unwrap();
    assert_eq!(m.version, 3);
    assert_eq!(m.description.as_deref(), Some("test"));
    let main = m.subgraph(0).unwrap();
    // First segments decide: the fused key tensor is not a value match.
    assert_eq!(main.find("value/einsum", &[2, 3]).unwrap().data, [-1.0; 6]);
    assert_eq!(main.find("key/einsum", &[2, 3]).unwrap().index, 1);
    // `(?!1)` spelled for the regex crate.
    let bias = format!("ln/broadcast_in_dim{}", assets::NOT_1);
    assert_eq!(main.find(&bias, &[3]).unwrap().data, [0.0, 0.5, 0.25]);
    assert_eq!(
        main.find("ln/broadcast_in_dim1", &[3]).unwrap().data,
        [1.0, 1.5, 2.0]
    );
    // Full names only as a fallback.
    assert_eq!(main.find("c/post/add", &[4]).unwrap().data, [9.0; 4]);
    // Ambiguous, absent, wrong shape.
    let e = main.find("einsum", &[2, 3]).unwrap_err().to_string();
    assert!(e.contains("found 2 first-segment"), "{e}");
    assert!(main.find("nothing", &[2, 3]).is_err());
    assert!(main.find("value/einsum", &[3, 2]).is_err());
    // Non-float data is refused as f32.
    let e = main.f32_data(6).unwrap_err().to_string();
    assert!(e.contains("type 2"), "{e}");
    assert_eq!(main.tensor_bytes(6).unwrap().unwrap().len(), 8);
    // Operators and their codes.
    let codes: Vec<i32> = main
        .sg
        .operators
        .iter()
        .map(|op| m.op_code(op).unwrap())
        .collect();
    assert_eq!(codes, [builtin::FULLY_CONNECTED, builtin::GATHER]);
    // arg(n): the name's prefix up to the slash; the first such tensor.
    let body = m.subgraph(1).unwrap();
    assert_eq!(body.arg(12).unwrap().data, [7.0, 8.0]);
    let e = body.arg(1).unwrap_err().to_string();
    assert!(e.contains("not a constant"), "{e}");
    assert!(body.arg_shaped(12, &[3]).is_err());
    assert!(m.subgraph(2).is_err());
}

fn assert_bad(r: Result<TfliteModel, Error>, what: &str) {
    match r {
        Err(Error::BadAsset { path, .. }) => assert_eq!(path, Path::new("x.tflite"), "{what}"),
        Err(e) => panic!("{what}: expected BadAsset, got {e}"),
        Ok(_) => panic!("{what}: accepted"),
    }
}

/// Everything a reader can ask of a model, which must never panic.
fn walk(m: &TfliteModel) {
    for i in 0..m.subgraphs.len() {
        let sg = m.subgraph(i).unwrap();
        for t in 0..sg.sg.tensors.len() {
            let _ = sg.f32_data(t as i32);
        }
        for op in &sg.sg.operators {
            let _ = m.op_code(op);
        }
        let _ = sg.find("einsum", &[2, 3]);
        let _ = sg.arg(12);
    }
}

#[test]
fn damaged_and_foreign_bytes_are_refused_without_panic() {
    let bytes = small_spec().to_bytes();
    for n in 0..bytes.len() {
        assert_bad(
            TfliteModel::from_bytes("x.tflite", bytes[..n].to_vec()),
            &format!("truncated to {n} bytes"),
        );
    }
    let mut accepted = 0;
    for i in 0..bytes.len() {
        for flip in [0xFFu8, 0x01, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= flip;
            if let Ok(m) = TfliteModel::from_bytes("x.tflite", b) {
                accepted += 1;
                walk(&m);
            }
        }
    }
    eprintln!(
        "{accepted} of {} flipped files still verify",
        3 * bytes.len()
    );
    assert_bad(
        TfliteModel::from_bytes("x.tflite", b"not a flatbuffer at all".to_vec()),
        "text",
    );
    let mut fake = vec![0u8; 64];
    fake[4..8].copy_from_slice(b"TFL3");
    fake[0] = 200;
    assert_bad(TfliteModel::from_bytes("x.tflite", fake), "identifier only");
    assert_bad(TfliteModel::from_bytes("x.tflite", Vec::new()), "empty");
}

#[test]
fn external_buffers_are_read_from_offset_and_size() {
    let mut spec = small_spec();
    let ext: Vec<f32> = vec![0.5, -0.25, 8.0];
    let bytes: Vec<u8> = ext.iter().flat_map(|x| x.to_le_bytes()).collect();
    let sg = &mut spec.subgraphs[0];
    let i = sg.push(TensorSpec {
        name: "far/away".into(),
        shape: vec![3],
        dtype: tensor_type::FLOAT32,
        data: TensorData::External(bytes),
    });
    let file = spec.to_bytes();
    let m = TfliteModel::from_bytes("x.tflite", file.clone()).unwrap();
    let main = m.subgraph(0).unwrap();
    assert_eq!(main.f32_data(i).unwrap().data, ext);
    assert_eq!(main.find("far/away", &[3]).unwrap().data, ext);
    // Inline buffers are unaffected.
    assert_eq!(main.find("value/einsum", &[2, 3]).unwrap().data, [-1.0; 6]);
    // Only the external data cut off: the tables verify, the tensor does not read.
    let cut = TfliteModel::from_bytes("x.tflite", file[..file.len() - 4].to_vec()).unwrap();
    let e = cut.subgraph(0).unwrap().f32_data(i).unwrap_err();
    assert!(e.to_string().contains("past the end"), "{e}");
    walk(&cut);
}

#[test]
fn missing_and_damaged_asset_files_name_the_file() {
    let dir = rill_testkit::scratch_dir("musiccoca-missing");
    let e = Weights::from_tflite_dir(&dir).unwrap_err();
    match &e {
        Error::MissingAsset { path, hint } => {
            assert!(path.ends_with("audio_preprocessor.tflite"), "{e}");
            assert!(hint.contains("google/magenta-realtime-2"), "{e}");
            assert!(hint.contains("resources/musiccoca/"), "{e}");
        }
        other => panic!("expected MissingAsset, got {other}"),
    }
    let path = dir.join("audio_preprocessor.tflite");
    std::fs::write(&path, b"garbage").unwrap();
    match Weights::from_tflite_dir(&dir).unwrap_err() {
        Error::BadAsset { path: p, what } => {
            assert_eq!(p, path);
            assert!(what.contains("TFL3"), "{what}");
        }
        other => panic!("expected BadAsset, got {other}"),
    }
    // A valid TFLite file that is not the frontend.
    std::fs::write(&path, small_spec().to_bytes()).unwrap();
    match Weights::from_tflite_dir(&dir).unwrap_err() {
        Error::BadAsset { path: p, what } => {
            assert_eq!(p, path);
            assert!(what.contains("linear_to_mel_weight_matrix"), "{what}");
        }
        other => panic!("expected BadAsset, got {other}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_quantizer_check_refuses_inconsistent_distances() {
    let spec = synth::quantizer_spec(&mut synth::synthetic_weights(0, "quantizer.")).unwrap();
    let read = |spec: &ModelSpec| {
        let m = TfliteModel::from_bytes("q.tflite", spec.to_bytes()).unwrap();
        let mut w = Weights::new();
        assets::load_quantizer(&m, &mut w).map(|()| w)
    };
    let w = read(&spec).unwrap();
    assert_eq!(
        w.get("quantizer.codebooks", &[12, 1024, 768])
            .unwrap()
            .data
            .len(),
        12 * 1024 * 768
    );
    let tamper = |suffix: &str, k: usize, v: f32| {
        let mut s = spec.clone();
        let t = s.subgraphs[0]
            .tensors
            .iter_mut()
            .find(|t| t.name.ends_with(suffix))
            .unwrap();
        let TensorData::F32(d) = &mut t.data else {
            unreachable!()
        };
        d[k] += v;
        read(&s).unwrap_err().to_string()
    };
    let e = tamper("level_3/distance/sq_norm", 5, 0.01);
    assert!(e.contains("stage 3: bias"), "{e}");
    let e = tamper("level_4/distance/mul", 7, 0.01);
    assert!(e.contains("stage 4: weight"), "{e}");
    // One GATHER fewer: the structure check.
    let mut s = spec.clone();
    let ops = &mut s.subgraphs[0].operators;
    let g = ops
        .iter()
        .position(|o| o.builtin_code == builtin::GATHER)
        .unwrap();
    ops.remove(g);
    let e = read(&s).unwrap_err().to_string();
    assert!(e.contains("10 gathers"), "{e}");
}
