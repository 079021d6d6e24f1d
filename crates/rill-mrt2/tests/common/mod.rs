//! Helpers shared by the language-model parity tests: load a recorded set, build
//! the same conditioning and sampling settings, run rill along the recording.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rill_checkpoint::{Checkpoint, ModelKind};
use rill_kernels::Pool;
use rill_mrt2::conditioning::{CfgScales, Conditioning, NoteValue};
use rill_mrt2::sampler::SamplingParams;
use rill_mrt2::{Mrt2, Precision, LEVELS};

/// One reference recording (`testdata/mrt2/<name>.npz` + `.json`).
pub struct Recording {
    pub name: String,
    pub meta: serde_json::Value,
    pub npz: rill_io::Npz,
    pub frames: usize,
    pub tokens: Vec<[u32; LEVELS]>,
}

impl Recording {
    pub fn load(name: &str) -> Option<Recording> {
        let npz_path = rill_testkit::testdata(&format!("{name}.npz"));
        if !npz_path.exists() {
            eprintln!("SKIP: {} not recorded yet", npz_path.display());
            return None;
        }
        let meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(rill_testkit::testdata(&format!("{name}.json"))).unwrap(),
        )
        .unwrap();
        let npz = rill_testkit::fixture(&format!("{name}.npz"));
        let (shape, t) = npz.i64("tokens").unwrap();
        let frames = shape[0];
        let tokens = t
            .chunks(LEVELS)
            .map(|c| std::array::from_fn(|k| c[k] as u32))
            .collect();
        Some(Recording {
            name: name.to_string(),
            meta,
            npz,
            frames,
            tokens,
        })
    }

    pub fn weights_seed(&self) -> u64 {
        self.meta["weights"]["weights_seed"].as_u64().unwrap()
    }

    pub fn precision(&self) -> Precision {
        match self.meta["precision"].as_str().unwrap() {
            "fp32" => Precision::F32,
            "bf16" => Precision::Bf16,
            p => panic!("unknown precision {p}"),
        }
    }

    pub fn sampler_seed(&self) -> u64 {
        self.meta["sampler_seed"].as_u64().unwrap()
    }

    pub fn sampling(&self) -> SamplingParams {
        SamplingParams {
            temperature: self.meta["temperature"].as_f64().unwrap() as f32,
            top_k: self.meta["top_k"].as_u64().unwrap() as usize,
        }
    }

    /// The conditioning rebuilt from the recording's settings (not from its tokens).
    pub fn conditioning(&self) -> Conditioning {
        let m = &self.meta;
        let style = m["style_codes"]
            .as_array()
            .map(|a| std::array::from_fn(|i| a[i].as_u64().unwrap() as u16));
        let mut notes = [NoteValue::Masked; 128];
        if let Some(ps) = m["notes"].as_array() {
            let value = match m["notes_value"].as_i64().unwrap_or(3) {
                0 => NoteValue::Off,
                1 => NoteValue::Sustain,
                2 => NoteValue::Onset,
                _ => NoteValue::On,
            };
            for p in ps {
                notes[p.as_u64().unwrap() as usize] = value;
            }
        }
        let drums = match m["drums"].as_str() {
            Some("on") => Some(true),
            Some("off") => Some(false),
            _ => None,
        };
        let cfg = &m["cfg_scales"];
        Conditioning {
            style,
            notes,
            drums,
            cfg: CfgScales {
                musiccoca: cfg["musiccoca"].as_f64().unwrap(),
                notes: cfg["notes"].as_f64().unwrap(),
                drums: cfg["drums"].as_f64().unwrap(),
            },
        }
    }

    pub fn f32(&self, key: &str) -> Vec<f32> {
        self.npz.f32(key).unwrap().1
    }
}

/// A model per (weights seed, precision), loaded once per test binary.
pub fn model(seed: u64, precision: Precision) -> Arc<Mrt2> {
    type Cache = Mutex<HashMap<(u64, Precision), Arc<Mrt2>>>;
    static MODELS: OnceLock<Cache> = OnceLock::new();
    let map = MODELS.get_or_init(Default::default);
    let mut m = map.lock().unwrap_or_else(|e| e.into_inner());
    m.entry((seed, precision))
        .or_insert_with(|| {
            let path = rill_testkit::synthetic_checkpoint(ModelKind::Small, seed);
            let ckpt = Checkpoint::open(&path).unwrap();
            Arc::new(Mrt2::load(&ckpt, precision).unwrap())
        })
        .clone()
}

pub fn pool() -> Pool {
    Pool::new(2)
}

/// Top-1 minus top-2 of the reference's perturbed, top-k-masked logits at one step.
pub fn reference_margin(logits: &[f32], gumbel: &[f32], p: SamplingParams) -> f32 {
    let mut sorted = logits.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let k = p.top_k.clamp(1, 12294);
    let kth = if k > sorted.len() {
        f32::MIN
    } else {
        sorted[k - 1]
    };
    let mut v: Vec<f32> = logits
        .iter()
        .zip(gumbel)
        .filter(|(l, _)| **l >= kth)
        .map(|(l, g)| l + g * p.temperature)
        .collect();
    v.sort_by(|a, b| b.total_cmp(a));
    if v.len() < 2 {
        f32::INFINITY
    } else {
        v[0] - v[1]
    }
}
