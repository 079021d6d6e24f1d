//! Session files: a safetensors file holding the whole [`LmState`], the controls
//! and sampling settings, plus any extra state arrays the caller adds (the codec's),
//! so a restored session continues bit-identically.
//!
//! Layout: tensors `lm/frame` (U64 [1]), `lm/prev` (U32 [12]), `lm/key` (U32 [2]),
//! `lm/self_k`, `lm/self_v`, `lm/cross_k`, `lm/cross_v` (F32 [layers, window, H·Dh]);
//! extra arrays as F32 under their own names. Metadata: format, model, precision,
//! temperature, top_k and the conditioning (f64 values as exact bit patterns).

use std::collections::HashMap;
use std::path::Path;

use rill_checkpoint::writer::{self, Tensor};
use safetensors::Dtype;

use crate::conditioning::{CfgScales, Conditioning, NoteValue, PITCHES, STYLE_LEVELS};
use crate::error::ModelError;
use crate::model::LEVELS;
use crate::sampler::SamplingParams;
use crate::session::{LmState, Session};

pub const FORMAT: &str = "rill-session v1";

/// An extra named f32 array stored alongside the language-model state.
pub type ExtraArray = (String, Vec<usize>, Vec<f32>);

fn conditioning_json(c: &Conditioning) -> String {
    let v = serde_json::json!({
        "style": c.style.map(|s| s.to_vec()),
        "notes": c.notes.iter().map(|n| n.raw()).collect::<Vec<_>>(),
        "drums": c.drums,
        "cfg_bits": [
            format!("{:016x}", c.cfg.musiccoca.to_bits()),
            format!("{:016x}", c.cfg.notes.to_bits()),
            format!("{:016x}", c.cfg.drums.to_bits()),
        ],
    });
    v.to_string()
}

fn parse_conditioning(s: &str) -> Option<Conditioning> {
    let v: serde_json::Value = serde_json::from_str(s).ok()?;
    let style = match &v["style"] {
        serde_json::Value::Null => None,
        a => {
            let a = a.as_array()?;
            if a.len() != STYLE_LEVELS {
                return None;
            }
            let mut s = [0u16; STYLE_LEVELS];
            for (d, x) in s.iter_mut().zip(a) {
                *d = u16::try_from(x.as_u64()?).ok()?.min(1023);
            }
            Some(s)
        }
    };
    let notes_raw = v["notes"].as_array()?;
    if notes_raw.len() != PITCHES {
        return None;
    }
    let mut notes = [NoteValue::Masked; PITCHES];
    for (d, x) in notes.iter_mut().zip(notes_raw) {
        *d = match x.as_i64()? {
            -1 => NoteValue::Masked,
            0 => NoteValue::Off,
            1 => NoteValue::Sustain,
            2 => NoteValue::Onset,
            3 => NoteValue::On,
            _ => return None,
        };
    }
    let drums = v["drums"].as_bool();
    let bits = v["cfg_bits"].as_array()?;
    let f = |i: usize| -> Option<f64> {
        Some(f64::from_bits(
            u64::from_str_radix(bits.get(i)?.as_str()?, 16).ok()?,
        ))
    };
    Some(Conditioning {
        style,
        notes,
        drums,
        cfg: CfgScales {
            musiccoca: f(0)?,
            notes: f(1)?,
            drums: f(2)?,
        },
    })
}

impl Session {
    /// Writes the session (and `extra` arrays, e.g. codec state) to `path`.
    pub fn save(&self, path: &Path, extra: &[ExtraArray]) -> Result<(), ModelError> {
        let err = |reason: String| ModelError::SessionFile {
            path: path.to_path_buf(),
            reason,
        };
        let st = self.state();
        let cfg = self.model().config;
        let (layers, w, inner) = (
            cfg.dims.temporal.layers,
            cfg.dims.window,
            cfg.temporal_inner(),
        );
        let ring = vec![layers, w, inner];
        let mut tensors: Vec<(String, Tensor<'static>)> = vec![
            ("lm/frame".into(), Tensor::u64(&[st.frame])),
            ("lm/prev".into(), Tensor::u32(&st.prev)),
            ("lm/key".into(), Tensor::u32(&st.key)),
            ("lm/self_k".into(), Tensor::f32(ring.clone(), &st.self_k)),
            ("lm/self_v".into(), Tensor::f32(ring.clone(), &st.self_v)),
            ("lm/cross_k".into(), Tensor::f32(ring.clone(), &st.cross_k)),
            ("lm/cross_v".into(), Tensor::f32(ring, &st.cross_v)),
        ];
        for (name, shape, v) in extra {
            if name.starts_with("lm/") {
                return Err(err(format!(
                    "extra array name {name} clashes with the lm/ state"
                )));
            }
            tensors.push((name.clone(), Tensor::f32(shape.clone(), v)));
        }
        let p = self.sampling();
        let mut meta = HashMap::new();
        meta.insert("format".to_string(), FORMAT.to_string());
        meta.insert("model".to_string(), cfg.kind.name().to_string());
        meta.insert(
            "precision".to_string(),
            self.model().precision.name().to_string(),
        );
        meta.insert(
            "temperature_bits".to_string(),
            format!("{:08x}", p.temperature.to_bits()),
        );
        meta.insert("top_k".to_string(), p.top_k.to_string());
        meta.insert(
            "conditioning".to_string(),
            conditioning_json(self.conditioning()),
        );
        writer::write(path, &tensors, meta).map_err(|e| err(e.to_string()))
    }

    /// Restores a session saved by [`Session::save`] into this session (same model
    /// and precision); returns the extra arrays for the caller.
    pub fn load(
        &mut self,
        path: &Path,
        pool: &rill_kernels::Pool,
    ) -> Result<Vec<ExtraArray>, ModelError> {
        let err = |reason: String| ModelError::SessionFile {
            path: path.to_path_buf(),
            reason,
        };
        let ckpt = rill_checkpoint::Checkpoint::open(path)?;
        let meta = ckpt.metadata();
        let get = |k: &str| {
            meta.get(k)
                .cloned()
                .ok_or_else(|| err(format!("metadata has no {k}")))
        };
        if get("format")? != FORMAT {
            return Err(err(format!("not a {FORMAT} file")));
        }
        let model = self.model().clone();
        let kind = get("model")?;
        if kind != model.config.kind.name() {
            return Err(err(format!(
                "saved with {kind}, but the loaded checkpoint is {}",
                model.config.kind
            )));
        }
        let precision = get("precision")?;
        if precision != model.precision.name() {
            return Err(err(format!(
                "saved at precision {precision}, but the model runs at {}; load it with --precision {precision} to continue identically",
                model.precision
            )));
        }
        let raw = |name: &str, dtype: Dtype, numel: usize| -> Result<Vec<u8>, ModelError> {
            let t = ckpt.tensor(name)?;
            if t.dtype != dtype || t.numel() != numel {
                return Err(err(format!(
                    "{name}: expected {dtype:?} x {numel}, found {:?} x {}",
                    t.dtype,
                    t.numel()
                )));
            }
            Ok(t.bytes.to_vec())
        };
        let u32v = |name: &str, n: usize| -> Result<Vec<u32>, ModelError> {
            Ok(raw(name, Dtype::U32, n)?
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect())
        };
        let ring = self.state().self_k.len();
        let f32v = |name: &str| -> Result<Vec<f32>, ModelError> {
            Ok(raw(name, Dtype::F32, ring)?
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect())
        };
        let frame_bytes = raw("lm/frame", Dtype::U64, 1)?;
        let mut fb = [0u8; 8];
        fb.copy_from_slice(&frame_bytes);
        let prev = u32v("lm/prev", LEVELS)?;
        let key = u32v("lm/key", 2)?;
        let state = LmState {
            frame: u64::from_le_bytes(fb),
            prev: std::array::from_fn(|i| prev[i]),
            key: [key[0], key[1]],
            self_k: f32v("lm/self_k")?,
            self_v: f32v("lm/self_v")?,
            cross_k: f32v("lm/cross_k")?,
            cross_v: f32v("lm/cross_v")?,
        };
        let temperature = u32::from_str_radix(&get("temperature_bits")?, 16)
            .map(f32::from_bits)
            .map_err(|e| err(format!("temperature_bits: {e}")))?;
        let top_k = get("top_k")?
            .parse::<usize>()
            .map_err(|e| err(format!("top_k: {e}")))?;
        let cond = parse_conditioning(&get("conditioning")?)
            .ok_or_else(|| err("conditioning metadata is malformed".into()))?;
        let mut extra = Vec::new();
        for name in ckpt.names().filter(|n| !n.starts_with("lm/")) {
            let t = ckpt.tensor(name)?;
            extra.push((name.to_string(), t.shape.to_vec(), t.to_f32()?));
        }
        let sampling = SamplingParams { temperature, top_k };
        sampling.validate().map_err(|e| err(e.to_string()))?;
        cond.validate().map_err(|e| err(e.to_string()))?;
        self.restore_state(state)?;
        self.set_sampling(sampling)?;
        self.set_conditioning(&cond, pool)?;
        Ok(extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditioning_round_trip() {
        let mut c = Conditioning::default()
            .with_held_notes(&[0, 60, 127])
            .unwrap();
        c.style = Some([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1023]);
        c.drums = Some(false);
        c.cfg.musiccoca = 0.1 + 0.2;
        assert_eq!(parse_conditioning(&conditioning_json(&c)), Some(c));
        assert_eq!(parse_conditioning("{}"), None);
    }
}
