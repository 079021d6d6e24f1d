//! Helpers shared by the language-model parity tests: load a recorded set, build
//! the same conditioning and sampling settings, run rill along the recording.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rill_checkpoint::Checkpoint;
use rill_kernels::Pool;
use rill_mrt2::conditioning::{CfgScales, Conditioning, NoteValue, StyleLevels};
use rill_mrt2::sampler::{sample_level, SamplingParams, LEVEL, RESERVED};
use rill_mrt2::{FrameTrace, ModelKind, Mrt2, Precision, LEVELS};

/// One reference recording (`testdata/mrt2/<name>.npz` + `.json`).
pub struct Recording {
    pub name: String,
    pub meta: serde_json::Value,
    pub npz: rill_io::Npz,
    pub frames: usize,
    pub tokens: Vec<[u32; LEVELS]>,
}

impl Recording {
    /// Loads a recording; a missing file fails the test (see `rill_testkit::require`).
    pub fn load(name: &str) -> Recording {
        let meta = rill_testkit::json(&format!("{name}.json"));
        let npz = rill_testkit::fixture(&format!("{name}.npz"));
        let (shape, t) = npz.i64("tokens").unwrap();
        let frames = shape[0];
        let tokens = t
            .chunks(LEVELS)
            .map(|c| std::array::from_fn(|k| c[k] as u32))
            .collect();
        Recording {
            name: name.to_string(),
            meta,
            npz,
            frames,
            tokens,
        }
    }

    pub fn weights_seed(&self) -> u64 {
        self.meta["weights"]["weights_seed"].as_u64().unwrap()
    }

    pub fn precision(&self) -> Precision {
        match self.meta["precision"].as_str().unwrap() {
            "fp32" => Precision::F32,
            // `nn.quantize(bits=8)` after the bf16 load: upstream's default.
            "bf16" if self.meta["bits"].as_u64() == Some(8) => Precision::MlxInt8,
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
        // Recordings of only the coarsest style levels name their count
        // (`record_style_levels.py`); the others feed all 12.
        let style_levels = match m["style_levels"].as_u64() {
            Some(n) => StyleLevels::from_count(n).unwrap(),
            None => StyleLevels::All12,
        };
        Conditioning {
            style,
            style_levels,
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
            let path = rill_testkit::synthetic_checkpoint(ModelKind::Small.synth_file(seed));
            let ckpt = Checkpoint::open(&path).unwrap();
            Arc::new(Mrt2::load(&ckpt, precision).unwrap())
        })
        .clone()
}

pub fn pool() -> Pool {
    Pool::new(2)
}

/// A reference decision closer than this to a different one is a near-tie, where any
/// f32 reordering may flip the sampled token. Twice the largest |logit difference|
/// the f32 teacher-forced test accepts (`logit_abs` = 1e-4, measured ≤ 7.7e-5 on every tier): with
/// identical Gumbel noise, a score gap moves by at most that much, so a decision with
/// a larger margin cannot flip. No recorded set has a near-tie at this bound (the
/// closest margin is D3's 3.3e-4, frame 13 step 4), so every token is compared.
pub const NEAR_TIE: f32 = 2e-4;

/// How far the reference's sampling decision at one step is from a different one:
/// the smallest of the gap between the two best kept perturbed scores
/// (`logit + T·gumbel`), the winner's lead over the largest logit outside the top k
/// (it could drop out), and the lead of the k-th logit over any excluded logit whose
/// score beats the winner (it could come in). Returns it with the winning index.
pub fn decision_margin(logits: &[f32], gumbel: &[f32], p: SamplingParams) -> (f32, usize) {
    let mut sorted = logits.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let k = p.top_k.clamp(1, rill_mrt2::sampler::VOCAB);
    let kth = if k > sorted.len() {
        f32::NEG_INFINITY
    } else {
        sorted[k - 1]
    };
    let first_out = sorted.iter().copied().find(|&v| v < kth);
    let score: Vec<f32> = logits
        .iter()
        .zip(gumbel)
        .map(|(l, g)| l + g * p.temperature)
        .collect();
    let kept = |i: usize| logits[i] >= kth;
    let mut w = usize::MAX;
    for i in (0..logits.len()).filter(|&i| kept(i)) {
        if w == usize::MAX || score[i] > score[w] {
            w = i;
        }
    }
    let runner_up = (0..logits.len())
        .filter(|&i| kept(i) && i != w)
        .map(|i| score[i])
        .fold(f32::NEG_INFINITY, f32::max);
    let lead = score[w] - runner_up;
    let drop_out = first_out.map_or(f32::INFINITY, |v| logits[w] - v);
    let come_in = (0..logits.len())
        .filter(|&i| !kept(i) && score[i] > score[w])
        .map(|i| kth - logits[i])
        .fold(f32::INFINITY, f32::min);
    (lead.min(drop_out).min(come_in), w)
}

/// The reference's near-ties `(frame, depth step)`: margin below [`NEAR_TIE`].
/// Also checks that the recorded logits and noise reproduce every recorded token.
pub fn near_ties(rec: &Recording) -> Vec<(usize, usize)> {
    let logits = rec.f32("logits_level");
    let gumbel = rec.f32("gumbel_level");
    let p = rec.sampling();
    let mut ties = Vec::new();
    for n in 0..rec.frames {
        for k in 0..LEVELS {
            let r = (n * LEVELS + k) * LEVEL..(n * LEVELS + k + 1) * LEVEL;
            let (margin, w) = decision_margin(&logits[r.clone()], &gumbel[r], p);
            assert_eq!(
                (RESERVED + LEVEL * k + w) as u32,
                rec.tokens[n][k],
                "{}: the recorded logits do not give the recorded token at frame {n} step {k}",
                rec.name
            );
            if margin < NEAR_TIE {
                ties.push((n, k));
            }
        }
    }
    ties
}

/// The token rill's sampler picks at depth step `k` of a traced frame.
pub fn decision(trace: &FrameTrace, k: usize, p: SamplingParams, scratch: &mut [f32]) -> u32 {
    let r = k * LEVEL..(k + 1) * LEVEL;
    let i = sample_level(&trace.logits[r.clone()], &trace.gumbel[r], p, scratch);
    (RESERVED + LEVEL * k + i) as u32
}
