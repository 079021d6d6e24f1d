//! Session-file validation: every field of a hostile file is checked against the
//! model before anything is applied, and the error names the field. No weights
//! needed: `session_file::read` validates against a model's shapes only.

use std::collections::HashMap;
use std::path::PathBuf;

use rill_checkpoint::writer::{self, Tensor};
use rill_checkpoint::{Checkpoint, Dtype};
use rill_mrt2::conditioning::{Conditioning, NoteValue};
use rill_mrt2::sampler::SamplingParams;
use rill_mrt2::session_file::{self, ModelId, SessionData, MAX_FRAME};
use rill_mrt2::{LmState, ModelKind, Mrt2Config, Precision, LEVELS};

fn config() -> Mrt2Config {
    Mrt2Config::new(ModelKind::Small)
}

/// The model the files are written for: the small shapes at f32, some weights.
fn id() -> ModelId {
    ModelId {
        config: config(),
        precision: Precision::F32,
        weights: 0x0123_4567_89ab_cdef,
    }
}

fn ring() -> Vec<usize> {
    let c = config();
    vec![c.dims.temporal.layers, c.dims.window, c.temporal_inner()]
}

/// A valid mid-stream session: frame 45, one id of each level, non-zero caches.
fn good() -> SessionData {
    let n: usize = ring().iter().product();
    let cache = |s: f32| (0..n).map(|i| s * (i % 97) as f32).collect::<Vec<_>>();
    let mut conditioning = Conditioning::default().with_held_notes(&[48, 60]).unwrap();
    conditioning.style = Some([325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]);
    conditioning.drums = Some(true);
    conditioning.notes[61] = NoteValue::Onset;
    SessionData {
        state: LmState {
            frame: 45,
            prev: std::array::from_fn(|k| (6 + 1024 * k + 17 * k) as u32),
            key: [7, 9],
            self_k: cache(0.5),
            self_v: cache(-0.25),
            cross_k: cache(1.0),
            cross_v: cache(2.0),
        },
        sampling: SamplingParams {
            temperature: 1.3,
            top_k: 40,
        },
        conditioning,
        extra: vec![("codec/x".into(), vec![2], vec![1.0, -1.0])],
        meta: vec![("stream".into(), "{}".into())],
    }
}

/// A fresh file name in cargo's temp directory for integration tests.
fn path(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    dir.join(format!("session-file-{}-{n}-{name}", std::process::id()))
}

/// Reads `p` back for the small model at f32 (and removes it).
fn read(p: &PathBuf) -> Result<SessionData, String> {
    let r = Checkpoint::open(p)
        .map_err(|e| e.to_string())
        .and_then(|c| session_file::read(&c, &id()).map_err(|e| e.to_string()));
    std::fs::remove_file(p).unwrap();
    r
}

fn round_trip(name: &str, d: &SessionData) -> Result<SessionData, String> {
    let p = path(name);
    d.write(&p, &id()).unwrap();
    read(&p)
}

/// Expects `d` to be refused with an error that mentions every word of `words`.
fn refused(name: &str, d: &SessionData, words: &[&str]) {
    let e = round_trip(name, d).expect_err("a bad session file was accepted");
    eprintln!("{name}: {e}");
    for w in words {
        assert!(e.contains(w), "{name}: {e:?} does not mention {w:?}");
    }
}

#[test]
fn valid_files_round_trip() {
    let d = good();
    assert_eq!(round_trip("good", &d).unwrap(), d);
    // A fresh session (frame 0, start tokens), greedy, masked style, top-k = vocab.
    let mut f = good();
    f.state.frame = 0;
    f.state.prev = [0; LEVELS];
    f.sampling = SamplingParams {
        temperature: 0.0,
        top_k: 12294,
    };
    f.conditioning.style = None;
    f.conditioning.drums = None;
    assert_eq!(round_trip("fresh", &f).unwrap(), f);
}

#[test]
fn sampling_settings_are_validated() {
    for (i, t) in [f32::NAN, f32::INFINITY, -1.0, -0.0001]
        .into_iter()
        .enumerate()
    {
        let mut d = good();
        d.sampling.temperature = t;
        refused(&format!("temperature{i}"), &d, &["temperature"]);
    }
    for k in [0, 12295, usize::MAX] {
        let mut d = good();
        d.sampling.top_k = k;
        refused(&format!("top_k{k}"), &d, &["top_k", "1..=12294"]);
    }
}

#[test]
fn token_ids_and_frame_are_validated() {
    let mut d = good();
    d.state.prev[3] = 5;
    refused("prev_low", &d, &["lm/prev[3]", "level 3"]);
    let mut d = good();
    d.state.prev[11] = 12294;
    refused("prev_high", &d, &["lm/prev[11]"]);
    let mut d = good();
    d.state.prev[0] = 1030; // level 1's first id at level 0
    refused("prev_level", &d, &["lm/prev[0]"]);
    let mut d = good();
    d.state.frame = 0; // start of stream, but prev holds real tokens
    refused("prev_sos", &d, &["lm/prev[0]", "lm/frame is 0"]);
    let mut d = good();
    d.state.frame = MAX_FRAME + 1;
    refused("frame", &d, &["lm/frame"]);
}

#[test]
fn caches_are_finite() {
    let mut d = good();
    d.state.cross_v[1234] = f32::NAN;
    refused("nan_cache", &d, &["lm/cross_v[1234]", "finite"]);
    let mut d = good();
    d.state.self_k[0] = f32::NEG_INFINITY;
    refused("inf_cache", &d, &["lm/self_k[0]"]);
}

#[test]
fn conditioning_is_validated() {
    let mut d = good();
    d.conditioning.style = Some([1024; 12]);
    refused("style", &d, &["conditioning.style[0]", "0..1023"]);
    let mut d = good();
    d.conditioning.cfg.notes = f64::NAN;
    refused("cfg", &d, &["cfg_notes", "finite"]);
    let mut d = good();
    d.conditioning.cfg.drums = f64::INFINITY;
    refused("cfg_inf", &d, &["cfg_drums"]);
}

/// The tensors and metadata `good()` writes, for hand-made corruptions.
fn parts() -> (Vec<(String, Tensor<'static>)>, HashMap<String, String>) {
    let p = path("parts");
    good().write(&p, &id()).unwrap();
    let c = Checkpoint::open(&p).unwrap();
    let (tensors, meta) = c.to_parts();
    drop(c);
    std::fs::remove_file(&p).unwrap();
    (tensors, meta)
}

fn refused_raw(
    name: &str,
    tensors: Vec<(String, Tensor<'static>)>,
    meta: HashMap<String, String>,
    words: &[&str],
) {
    let p = path(name);
    writer::write(&p, &tensors, meta).unwrap();
    let e = read(&p).expect_err("a bad session file was accepted");
    eprintln!("{name}: {e}");
    for w in words {
        assert!(e.contains(w), "{name}: {e:?} does not mention {w:?}");
    }
}

#[test]
fn metadata_fields_are_validated() {
    let cases: [(&str, &str, &[&str]); 15] = [
        ("temperature_bits", "7fc00000", &["temperature", "NaN"]),
        ("temperature_bits", "+3fa6666", &["temperature_bits"]),
        ("temperature_bits", "3fa66666 ", &["temperature_bits"]),
        ("top_k", "-1", &["top_k"]),
        ("top_k", "40.5", &["top_k"]),
        ("format", "rill-session v0", &["not rill-state v1"]),
        ("format", "rill-session v1", &["earlier rill", "rill-state v1"]),
        ("weights", "0123456789abcdee", &["other weights", "0123456789abcdee"]),
        ("weights", "0123", &["weights", "16 hex digits"]),
        ("model", "mrt2_base", &["mrt2_base"]),
        ("precision", "int8", &["--precision int8"]),
        ("conditioning", "[1]", &["conditioning"]),
        ("conditioning", r#"{"style":null,"notes":[],"drums":null,"cfg_bits":[]}"#, &["conditioning.notes"]),
        ("conditioning", "{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{", &["conditioning"]),
        ("conditioning", "", &["conditioning"]),
    ];
    for (i, (key, value, words)) in cases.into_iter().enumerate() {
        let (t, mut m) = parts();
        m.insert(key.to_string(), value.to_string());
        refused_raw(&format!("meta{i}"), t, m, words);
    }
    let (t, mut m) = parts();
    m.remove("top_k");
    refused_raw("no_top_k", t, m, &["no top_k"]);
    // Each conditioning field, one at a time.
    let good_json: serde_json::Value = serde_json::from_str(&parts().1["conditioning"]).unwrap();
    let bad: [(&str, serde_json::Value, &str); 7] = [
        ("style", serde_json::json!([1, 2]), "conditioning.style"),
        ("style", serde_json::json!("x"), "conditioning.style"),
        (
            "notes",
            serde_json::json!(vec![4; 128]),
            "conditioning.notes[0]",
        ),
        ("drums", serde_json::json!(1), "conditioning.drums"),
        (
            "cfg_bits",
            serde_json::json!(["0", "0", "0"]),
            "conditioning.cfg_bits[0]",
        ),
        ("cfg_bits", serde_json::json!([1, 2, 3]), "cfg_musiccoca"),
        ("notes", serde_json::Value::Null, "conditioning.notes"),
    ];
    for (i, (field, value, word)) in bad.into_iter().enumerate() {
        let mut j = good_json.clone();
        j[field] = value;
        let (t, mut m) = parts();
        m.insert("conditioning".into(), j.to_string());
        refused_raw(&format!("cond{i}"), t, m, &[word]);
    }
    let mut j = good_json.clone();
    j.as_object_mut().unwrap().remove("drums");
    let (t, mut m) = parts();
    m.insert("conditioning".into(), j.to_string());
    refused_raw("cond_missing", t, m, &["missing field", "drums"]);
}

#[test]
fn tensors_are_validated() {
    let zeros = |dtype: Dtype, shape: Vec<usize>| {
        let n: usize = shape.iter().product();
        Tensor {
            dtype,
            shape,
            bytes: vec![0u8; n * dtype.bitsize() / 8].into(),
        }
    };
    let replace = |name: &str, t: Tensor<'static>| {
        let (mut ts, m) = parts();
        for (n, old) in ts.iter_mut() {
            if n == name {
                *old = t.clone();
            }
        }
        (ts, m)
    };
    let mut r = ring();
    r[1] -= 1;
    let cases = [
        ("lm/self_k", zeros(Dtype::F32, r), "lm/self_k"),
        ("lm/cross_k", zeros(Dtype::BF16, ring()), "lm/cross_k"),
        ("lm/prev", zeros(Dtype::U32, vec![11]), "lm/prev"),
        ("lm/prev", zeros(Dtype::I32, vec![12]), "lm/prev"),
        ("lm/key", zeros(Dtype::U32, vec![3]), "lm/key"),
        ("lm/frame", zeros(Dtype::U32, vec![2]), "lm/frame"),
        ("codec/x", zeros(Dtype::U8, vec![4]), "codec/x"),
    ];
    for (i, (name, t, word)) in cases.into_iter().enumerate() {
        let (ts, m) = replace(name, t);
        refused_raw(&format!("tensor{i}"), ts, m, &[word]);
    }
    let (mut ts, m) = parts();
    ts.retain(|(n, _)| n != "lm/self_v");
    refused_raw("missing", ts, m, &["no tensor lm/self_v"]);
    let (mut ts, m) = parts();
    ts.push(("lm/extra".into(), zeros(Dtype::F32, vec![1])));
    refused_raw("unknown", ts, m, &["unknown tensor lm/extra"]);
}
