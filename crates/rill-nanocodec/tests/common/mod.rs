//! Fixtures of `testdata/magpie/` (made by `testdata/magpie/make_nanocodec.py`
//! from the oracle's recordings) and the random-weight codec they were made with.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use rill_nanocodec::{Weights, CODEBOOKS};

/// A committed fixture under `testdata/magpie/`: a missing file fails the test.
pub fn require(name: &str) -> PathBuf {
    let path = rill_testkit::repo_root().join("testdata/magpie").join(name);
    assert!(
        path.exists(),
        "reference file testdata/magpie/{name} is missing ({}): restore it with \
         `git checkout -- testdata/magpie/{name}` or re-make it with testdata/magpie/make_nanocodec.py",
        path.display()
    );
    path
}

pub fn recording() -> &'static rill_io::Npz {
    static R: OnceLock<rill_io::Npz> = OnceLock::new();
    R.get_or_init(|| {
        rill_io::Npz::read(require("nanocodec_decode.npz")).unwrap_or_else(|e| panic!("{e}"))
    })
}

pub fn manifest() -> serde_json::Value {
    let text =
        std::fs::read_to_string(require("nanocodec_manifest.json")).expect("reading the manifest");
    serde_json::from_str(&text).expect("parsing the manifest")
}

/// The oracle's weights (seed 0), synthesised once per test binary.
pub fn weights() -> &'static Weights {
    static W: OnceLock<Weights> = OnceLock::new();
    W.get_or_init(|| Weights::synthetic(0))
}

/// The recorded codes as frames (`codes [8, T]` → `T × [8]`).
pub fn frames() -> Vec<[u32; CODEBOOKS]> {
    let (shape, codes) = recording().i64("codes").expect("codes");
    let t = shape[1];
    (0..t)
        .map(|f| std::array::from_fn(|g| codes[g * t + f] as u32))
        .collect()
}

/// A recorded `[C, T]` array as channels-last rows `[T][C]`.
pub fn rows_of(name: &str) -> (usize, Vec<f32>) {
    let (shape, v) = recording()
        .f32(name)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let (c, t) = if shape.len() == 2 {
        (shape[0], shape[1])
    } else {
        (1, shape[0])
    };
    let mut out = vec![0f32; c * t];
    for ch in 0..c {
        for i in 0..t {
            out[i * c + ch] = v[ch * t + i];
        }
    }
    (c, out)
}

/// (max |a − b|, RMS of a − b) in f64.
pub fn max_rms(a: &[f32], b: &[f32]) -> (f64, f64) {
    assert_eq!(a.len(), b.len());
    let mut max = 0f64;
    let mut ss = 0f64;
    for (&x, &y) in a.iter().zip(b) {
        let d = (x as f64 - y as f64).abs();
        max = max.max(d);
        ss += d * d;
    }
    (max, (ss / a.len().max(1) as f64).sqrt())
}
