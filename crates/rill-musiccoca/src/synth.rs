//! Synthetic MusicCoCa assets: random weights by the oracle's portable recipe
//! (`manifest_musiccoca.json`, the same numbers as the oracle's
//! `make_weights.py --seed N`), written as the five `.tflite` files upstream ships,
//! under tensor names that `convert.py`'s rules find, with its transforms inverted.
//! Reading them back with [`Weights::from_tflite_dir`] gives the oracle's tensors bit
//! for bit (every inverse transform is exact in f32 for these weights: transposes,
//! ×8 for ×0.125, −1 for +1 on scales in [0.83, 1.17], ×(−2) for ×(−½)).

use std::path::{Path, PathBuf};

use rill_checkpoint::synth::{fill_values_parallel, tensor_key};

use crate::{Error, Weights};

mod files;

pub use files::{
    frontend_spec, mapper_spec, music_encoder_spec, quantizer_spec, text_encoder_spec,
};

/// The oracle's weight manifest (a copy of `testdata/musiccoca/manifest_musiccoca.json`).
pub const MANIFEST_JSON: &str = include_str!("synth/manifest_musiccoca.json");

/// How a manifest unit's values are made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// The portable uniform recipe.
    Uniform {
        /// The mean (the manifest's exact f64 bits).
        mean: f64,
        /// The standard deviation (the manifest's exact f64 bits).
        std: f64,
    },
    /// The periodic Hann window.
    Hann,
    /// The TF-style HTK mel matrix with its zero DC row.
    Mel,
}

/// One manifest unit: a whole tensor, or slice `index` of `tensor` along axis 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    /// The unit's name (the recipe's key).
    pub name: String,
    /// The stacked tensor and the index, for a slice.
    pub stacked: Option<(String, usize)>,
    /// The unit's shape.
    pub shape: Vec<usize>,
    /// Its values.
    pub init: Init,
}

fn bits(v: &serde_json::Value, key: &str) -> Option<f64> {
    let s = v.get(key)?.as_str()?;
    let h = s.strip_prefix("0x")?;
    u64::from_str_radix(h, 16).ok().map(f64::from_bits)
}

/// The manifest's units, in order.
pub fn manifest() -> Vec<Unit> {
    let v: serde_json::Value = serde_json::from_str(MANIFEST_JSON).expect("the manifest parses");
    let units = v["units"].as_array().expect("the manifest has units");
    units
        .iter()
        .map(|u| {
            let name = u["name"].as_str().expect("unit name").to_string();
            let shape = u["shape"]
                .as_array()
                .expect("unit shape")
                .iter()
                .map(|d| d.as_u64().expect("dimension") as usize)
                .collect();
            let init = match u["init"].as_str().expect("unit init") {
                "portable_uniform" => Init::Uniform {
                    mean: bits(u, "mean_f64_bits").expect("mean bits"),
                    std: bits(u, "std_f64_bits").expect("std bits"),
                },
                s if s.starts_with("constant:hann") => Init::Hann,
                s if s.starts_with("constant:mel_matrix") => Init::Mel,
                s => panic!("unknown init {s}"),
            };
            let stacked = u.get("tensor").map(|t| {
                let t = t.as_str().expect("tensor name").to_string();
                (t, u["index"].as_u64().expect("index") as usize)
            });
            Unit {
                name,
                stacked,
                shape,
                init,
            }
        })
        .collect()
}

/// The periodic Hann window of `n` points, `0.5 − 0.5·cos(2πk/n)` in f64, as f32.
pub fn hann_window(n: usize) -> Vec<f32> {
    (0..n)
        .map(|k| {
            let a = 2.0 * std::f64::consts::PI * k as f64 / n as f64;
            (0.5 - 0.5 * a.cos()) as f32
        })
        .collect()
}

/// `np.linspace(start, stop, num)` (numpy's formula: `i·step + start`, last = stop).
fn linspace(start: f64, stop: f64, num: usize) -> Vec<f64> {
    let step = (stop - start) / (num - 1) as f64;
    let mut v: Vec<f64> = (0..num).map(|i| i as f64 * step + start).collect();
    v[num - 1] = stop;
    v
}

/// The oracle's mel matrix `[1025,128]`: `tf.signal.linear_to_mel_weight_matrix`'s
/// algorithm in f64 (HTK mel, 128 bands over 0–8000 Hz, 1025 bins at 16 kHz), the DC
/// row zero, cast to f32. A stand-in: the real matrix is read from the file.
pub fn mel_matrix() -> Vec<f32> {
    let (bands, bins) = (128, 1025);
    let hz_to_mel = |f: f64| 1127.0 * (f / 700.0).ln_1p();
    let lin = linspace(0.0, 8000.0, bins);
    let edges = linspace(hz_to_mel(0.0), hz_to_mel(8000.0), bands + 2);
    let mut out = vec![0f32; bins * bands];
    for (b, &f) in lin.iter().enumerate().skip(1) {
        let m = hz_to_mel(f);
        for j in 0..bands {
            let (lo, c, hi) = (edges[j], edges[j + 1], edges[j + 2]);
            let lower = (m - lo) / (c - lo);
            let upper = (hi - m) / (hi - c);
            out[b * bands + j] = lower.min(upper).max(0.0) as f32;
        }
    }
    out
}

/// The oracle's DBraun-layout tensors for `seed` whose names start with `prefix`.
pub fn synthetic_weights(seed: u64, prefix: &str) -> Weights {
    let mut w = Weights::new();
    let units = manifest();
    let mut stacks: Vec<(String, Vec<usize>, Vec<f32>)> = Vec::new();
    for u in &units {
        let tensor = u.stacked.as_ref().map_or(&u.name, |(t, _)| t);
        if !tensor.starts_with(prefix) {
            continue;
        }
        let values = match u.init {
            Init::Hann => hann_window(u.shape[0]),
            Init::Mel => mel_matrix(),
            Init::Uniform { mean, std } => {
                let mut v = vec![0f32; u.shape.iter().product()];
                fill_values_parallel(tensor_key(seed, &u.name), 0, mean, std, &mut v);
                v
            }
        };
        match &u.stacked {
            None => w.insert(u.name.clone(), u.shape.clone(), values),
            Some((t, index)) => {
                let pos = match stacks.iter().position(|s| &s.0 == t) {
                    Some(p) => p,
                    None => {
                        stacks.push((t.clone(), u.shape.clone(), Vec::new()));
                        stacks.len() - 1
                    }
                };
                let s = &mut stacks[pos];
                assert_eq!(s.1, u.shape, "{}", u.name);
                assert_eq!(s.2.len(), index * values.len(), "{} out of order", u.name);
                s.2.extend(values);
            }
        }
    }
    for (name, unit_shape, data) in stacks {
        let n: usize = unit_shape.iter().product();
        let mut shape = vec![data.len() / n];
        shape.extend(unit_shape);
        w.insert(name, shape, data);
    }
    w
}

type Spec = fn(&mut Weights) -> Result<crate::tflite::write::ModelSpec, Error>;

/// Writes the five `.tflite` files made from the DBraun-layout weights `w` (which
/// must hold every tensor of the files; it is consumed as it goes) into `dir`, atomically; returns their paths.
pub fn write_tflite_assets(dir: &Path, mut w: Weights) -> Result<Vec<PathBuf>, Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut paths = Vec::new();
    for (name, spec) in [
        (crate::assets::FRONTEND, frontend_spec as Spec),
        (crate::assets::MUSIC_ENCODER, music_encoder_spec),
        (crate::assets::TEXT_ENCODER, text_encoder_spec),
        (crate::assets::QUANTIZER, quantizer_spec),
        (crate::assets::MAPPER, mapper_spec),
    ] {
        let path = dir.join(name);
        spec(&mut w)?.write_file(&path)?;
        paths.push(path);
    }
    Ok(paths)
}

/// Writes the five synthetic `.tflite` files of weights seed `seed` into `dir`
/// (not `spm.model`), one at a time to bound memory; returns their paths.
pub fn write_synthetic_assets(dir: &Path, seed: u64) -> Result<Vec<PathBuf>, Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let files: [(&str, &str, Spec); 5] = [
        (crate::assets::FRONTEND, "frontend.", frontend_spec),
        (crate::assets::MUSIC_ENCODER, "audio.", music_encoder_spec),
        (crate::assets::TEXT_ENCODER, "text.", text_encoder_spec),
        (crate::assets::QUANTIZER, "quantizer.", quantizer_spec),
        (crate::assets::MAPPER, "mapper.", mapper_spec),
    ];
    let mut paths = Vec::new();
    for (name, prefix, spec) in files {
        let spec = spec(&mut synthetic_weights(seed, prefix))?;
        let path = dir.join(name);
        spec.write_file(&path)?;
        paths.push(path);
    }
    Ok(paths)
}

/// The oracle's tiny SentencePiece model (640 pieces of English music words), the
/// tokenizer of random-weight smoke runs: upstream's 16k model is only in its download.
pub const TINY_SPM: &[u8] = include_bytes!("../../../testdata/musiccoca/spm.model");

/// A complete random-weight assets directory of weights `seed` under `cache`
/// (`musiccoca_random_seed{seed}/`: the five files and [`TINY_SPM`]), written on first
/// use; a directory finished before (its `complete` mark present) is reused.
pub fn random_assets_dir(cache: &Path, seed: u64) -> Result<PathBuf, Error> {
    let dir = cache.join(format!("musiccoca_random_seed{seed}"));
    let mark = dir.join("complete");
    if mark.is_file() {
        return Ok(dir);
    }
    // Written beside it and renamed into place, so two processes (or tests) that
    // ask at once never read each other's half-written files.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = cache.join(format!(
        "musiccoca_random_seed{seed}.part-{}-{n}",
        std::process::id()
    ));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    write_synthetic_assets(&tmp, seed)?;
    let spm = tmp.join("spm.model");
    std::fs::write(&spm, TINY_SPM).map_err(io(&spm))?;
    let tmp_mark = tmp.join("complete");
    std::fs::write(&tmp_mark, b"").map_err(io(&tmp_mark))?;
    if std::fs::rename(&tmp, &dir).is_err() {
        if !mark.is_file() {
            // A left-over of an interrupted run: replace it.
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::rename(&tmp, &dir).map_err(io(&dir))?;
        } else {
            // Another process finished first; its copy is the same.
            let _ = std::fs::remove_dir_all(&tmp);
        }
    }
    Ok(dir)
}
