//! Session files: a safetensors file holding the whole [`LmState`], the controls
//! and sampling settings, plus any extra state arrays the caller adds (the codec's),
//! so a restored session continues bit-identically.
//!
//! Layout: tensors `lm/frame` (U64 [1]), `lm/prev` (U32 [12]), `lm/key` (U32 [2]),
//! `lm/self_k`, `lm/self_v`, `lm/cross_k`, `lm/cross_v` (F32 [layers, window, H·Dh]);
//! extra arrays as F32 under their own names. Metadata: format, model, precision,
//! temperature, top_k and the conditioning (f64 values as exact bit patterns).
//!
//! A session file is untrusted input: [`read`] checks every field against the model
//! it will run on (token ids in their level, finite non-negative temperature, top-k
//! in the vocabulary, style codes, pianoroll values, finite caches) and names the
//! field in its error, so a bad file can never reach the step functions.

use std::collections::HashMap;
use std::path::Path;

use rill_checkpoint::writer::{self, Tensor};
use rill_checkpoint::Checkpoint;
use safetensors::Dtype;
use serde_json::Value;

use crate::conditioning::{CfgScales, Conditioning, NoteValue, PITCHES, STYLE_LEVELS};
use crate::error::ModelError;
use crate::model::{Mrt2Config, LEVELS};
use crate::precision::Precision;
use crate::sampler::{SamplingParams, LEVEL, RESERVED, VOCAB};
use crate::session::{LmState, Session};

pub const FORMAT: &str = "rill-session v1";

/// An extra named f32 array stored alongside the language-model state.
pub type ExtraArray = (String, Vec<usize>, Vec<f32>);

/// Everything a session file holds.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionData {
    pub state: LmState,
    pub sampling: SamplingParams,
    pub conditioning: Conditioning,
    pub extra: Vec<ExtraArray>,
}

/// Largest `lm/frame` accepted: about 357 000 years of audio at 25 frames per
/// second, so any larger count is corrupt (and `frame + 1` can never overflow).
pub const MAX_FRAME: u64 = 1 << 48;

const CACHES: [&str; 4] = ["lm/self_k", "lm/self_v", "lm/cross_k", "lm/cross_v"];
const CFG_NAMES: [&str; 3] = ["musiccoca", "notes", "drums"];

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

/// An exact bit pattern written as `digits` lowercase or uppercase hex digits.
fn hex_bits(s: &str, digits: usize) -> Option<u64> {
    if s.len() != digits || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

fn parse_conditioning(s: &str) -> Result<Conditioning, String> {
    let v: Value = serde_json::from_str(s).map_err(|e| format!("conditioning is not JSON: {e}"))?;
    let obj = v.as_object().ok_or("conditioning is not a JSON object")?;
    let field = |k: &str| {
        obj.get(k)
            .ok_or_else(|| format!("conditioning has no field {k}"))
    };
    let style = match field("style")? {
        Value::Null => None,
        Value::Array(a) if a.len() == STYLE_LEVELS => {
            let mut s = [0u16; STYLE_LEVELS];
            for (i, (d, x)) in s.iter_mut().zip(a).enumerate() {
                *d =
                    x.as_u64().filter(|&c| c < 1024).ok_or_else(|| {
                        format!("conditioning.style[{i}] is {x}, not a code 0..1023")
                    })? as u16;
            }
            Some(s)
        }
        other => {
            return Err(format!(
                "conditioning.style is {other}, not {STYLE_LEVELS} codes or null"
            ))
        }
    };
    let notes_raw = match field("notes")? {
        Value::Array(a) if a.len() == PITCHES => a,
        other => {
            return Err(format!(
                "conditioning.notes must be {PITCHES} pianoroll values, found {other}"
            ))
        }
    };
    let mut notes = [NoteValue::Masked; PITCHES];
    for (i, (d, x)) in notes.iter_mut().zip(notes_raw).enumerate() {
        *d = match x.as_i64() {
            Some(-1) => NoteValue::Masked,
            Some(0) => NoteValue::Off,
            Some(1) => NoteValue::Sustain,
            Some(2) => NoteValue::Onset,
            Some(3) => NoteValue::On,
            _ => {
                return Err(format!(
                    "conditioning.notes[{i}] is {x}, not a pianoroll value -1..3"
                ))
            }
        };
    }
    let drums = match field("drums")? {
        Value::Null => None,
        Value::Bool(b) => Some(*b),
        other => {
            return Err(format!(
                "conditioning.drums is {other}, not true, false or null"
            ))
        }
    };
    let bits = match field("cfg_bits")? {
        Value::Array(a) if a.len() == 3 => a,
        other => {
            return Err(format!(
                "conditioning.cfg_bits must be 3 hex strings, found {other}"
            ))
        }
    };
    let mut cfg = [0f64; 3];
    for (i, (d, x)) in cfg.iter_mut().zip(bits).enumerate() {
        let name = CFG_NAMES[i];
        let f = x
            .as_str()
            .and_then(|s| hex_bits(s, 16))
            .map(f64::from_bits)
            .ok_or_else(|| {
                format!("conditioning.cfg_bits[{i}] (cfg_{name}) is {x}, not 16 hex digits")
            })?;
        if !f.is_finite() {
            return Err(format!(
                "conditioning.cfg_bits[{i}] (cfg_{name}) is {f}, not a finite number"
            ));
        }
        *d = f;
    }
    Ok(Conditioning {
        style,
        notes,
        drums,
        cfg: CfgScales {
            musiccoca: cfg[0],
            notes: cfg[1],
            drums: cfg[2],
        },
    })
}

/// `lm/prev` must be the start-of-sequence frame (all 0) before the first frame, and
/// afterwards one id of each level (`6 + 1024k ..= 6 + 1024k + 1023`).
fn check_prev(frame: u64, prev: &[u32; LEVELS]) -> Result<(), String> {
    if frame == 0 {
        if let Some(k) = prev.iter().position(|&t| t != 0) {
            return Err(format!(
                "lm/prev[{k}] is {}, but lm/frame is 0, where every previous token is the start token 0",
                prev[k]
            ));
        }
        return Ok(());
    }
    for (k, &t) in prev.iter().enumerate() {
        let lo = (RESERVED + LEVEL * k) as u32;
        if !(lo..lo + LEVEL as u32).contains(&t) {
            return Err(format!(
                "lm/prev[{k}] is {t}, outside level {k}'s ids {lo}..={}",
                lo + LEVEL as u32 - 1
            ));
        }
    }
    Ok(())
}

fn encode(
    path: &Path,
    data: (&LmState, SamplingParams, &Conditioning, &[ExtraArray]),
    config: &Mrt2Config,
    precision: Precision,
) -> Result<(), ModelError> {
    let (st, p, cond, extra) = data;
    let err = |reason: String| ModelError::SessionFile {
        path: path.to_path_buf(),
        reason,
    };
    let ring = vec![
        config.dims.temporal.layers,
        config.dims.window,
        config.temporal_inner(),
    ];
    let mut tensors: Vec<(String, Tensor<'static>)> = vec![
        ("lm/frame".into(), Tensor::u64(&[st.frame])),
        ("lm/prev".into(), Tensor::u32(&st.prev)),
        ("lm/key".into(), Tensor::u32(&st.key)),
    ];
    for (name, v) in CACHES
        .iter()
        .zip([&st.self_k, &st.self_v, &st.cross_k, &st.cross_v])
    {
        tensors.push((name.to_string(), Tensor::f32(ring.clone(), v)));
    }
    for (name, shape, v) in extra {
        if name.starts_with("lm/") {
            return Err(err(format!(
                "extra array name {name} clashes with the lm/ state"
            )));
        }
        tensors.push((name.clone(), Tensor::f32(shape.clone(), v)));
    }
    let mut meta = HashMap::new();
    meta.insert("format".to_string(), FORMAT.to_string());
    meta.insert("model".to_string(), config.kind.name().to_string());
    meta.insert("precision".to_string(), precision.name().to_string());
    meta.insert(
        "temperature_bits".to_string(),
        format!("{:08x}", p.temperature.to_bits()),
    );
    meta.insert("top_k".to_string(), p.top_k.to_string());
    meta.insert("conditioning".to_string(), conditioning_json(cond));
    writer::write(path, &tensors, meta).map_err(|e| err(e.to_string()))
}

impl SessionData {
    /// Writes a session file for a model of `config` running at `precision`
    /// (as [`Session::save`] does; [`read`] checks what this wrote).
    pub fn write(
        &self,
        path: &Path,
        config: &Mrt2Config,
        precision: Precision,
    ) -> Result<(), ModelError> {
        let data = (
            &self.state,
            self.sampling,
            &self.conditioning,
            &self.extra[..],
        );
        encode(path, data, config, precision)
    }
}

/// Reads and validates a session file for a model of `config` running at
/// `precision`, without touching a [`Session`]; the error names the bad field.
pub fn read(
    ckpt: &Checkpoint,
    config: &Mrt2Config,
    precision: Precision,
) -> Result<SessionData, ModelError> {
    let err = |reason: String| ModelError::SessionFile {
        path: ckpt.path().to_path_buf(),
        reason,
    };
    let meta = ckpt.metadata();
    let get = |k: &str| {
        meta.get(k)
            .map(String::as_str)
            .ok_or_else(|| err(format!("metadata has no {k}; is this a {FORMAT} file?")))
    };
    if get("format")? != FORMAT {
        return Err(err(format!("not a {FORMAT} file")));
    }
    let kind = get("model")?;
    if kind != config.kind.name() {
        return Err(err(format!(
            "saved with {kind}, but the loaded checkpoint is {}",
            config.kind
        )));
    }
    let saved = get("precision")?;
    if saved != precision.name() {
        return Err(err(format!(
            "saved at precision {saved}, but the model runs at {precision}; load it with --precision {saved} to continue identically"
        )));
    }
    let ring = [
        config.dims.temporal.layers,
        config.dims.window,
        config.temporal_inner(),
    ];
    let raw = |name: &str, dtype: Dtype, shape: &[usize]| -> Result<&[u8], ModelError> {
        let t = ckpt
            .tensor(name)
            .map_err(|_| err(format!("has no tensor {name}")))?;
        if t.dtype != dtype || t.shape != shape {
            return Err(err(format!(
                "{name}: expected {dtype:?} {shape:?}, found {:?} {:?}",
                t.dtype, t.shape
            )));
        }
        Ok(t.bytes)
    };
    let u32s = |name: &str, n: usize| -> Result<Vec<u32>, ModelError> {
        Ok(raw(name, Dtype::U32, &[n])?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    };
    let cache = |name: &str| -> Result<Vec<f32>, ModelError> {
        let v: Vec<f32> = raw(name, Dtype::F32, &ring)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(err(format!(
                "{name}[{i}] is {}; a key/value cache holds finite numbers only",
                v[i]
            )));
        }
        Ok(v)
    };
    let mut fb = [0u8; 8];
    fb.copy_from_slice(raw("lm/frame", Dtype::U64, &[1])?);
    let frame = u64::from_le_bytes(fb);
    if frame > MAX_FRAME {
        return Err(err(format!(
            "lm/frame is {frame}, more frames than a stream can have run (at most {MAX_FRAME})"
        )));
    }
    let prev = u32s("lm/prev", LEVELS)?;
    let prev: [u32; LEVELS] = std::array::from_fn(|i| prev[i]);
    check_prev(frame, &prev).map_err(err)?;
    let key = u32s("lm/key", 2)?;
    let state = LmState {
        frame,
        prev,
        key: [key[0], key[1]],
        self_k: cache(CACHES[0])?,
        self_v: cache(CACHES[1])?,
        cross_k: cache(CACHES[2])?,
        cross_v: cache(CACHES[3])?,
    };
    let t_bits = get("temperature_bits")?;
    let temperature = hex_bits(t_bits, 8)
        .map(|b| f32::from_bits(b as u32))
        .ok_or_else(|| err(format!("temperature_bits {t_bits:?} is not 8 hex digits")))?;
    if !temperature.is_finite() || temperature < 0.0 {
        return Err(err(format!(
            "temperature is {temperature}; it must be a finite number ≥ 0 (0 = greedy)"
        )));
    }
    let top_k_s = get("top_k")?;
    let top_k = top_k_s
        .parse::<usize>()
        .ok()
        .filter(|k| (1..=VOCAB).contains(k))
        .ok_or_else(|| err(format!("top_k is {top_k_s:?}, not an integer 1..={VOCAB}")))?;
    let conditioning = parse_conditioning(get("conditioning")?).map_err(err)?;
    let mut extra = Vec::new();
    for name in ckpt.names() {
        if name.starts_with("lm/") {
            if !["lm/frame", "lm/prev", "lm/key"].contains(&name) && !CACHES.contains(&name) {
                return Err(err(format!("unknown tensor {name} in the lm/ state")));
            }
            continue;
        }
        let t = ckpt.tensor(name)?;
        let v = t.to_f32().map_err(|e| err(format!("extra array: {e}")))?;
        extra.push((name.to_string(), t.shape.to_vec(), v));
    }
    Ok(SessionData {
        state,
        sampling: SamplingParams { temperature, top_k },
        conditioning,
        extra,
    })
}

impl Session {
    /// Writes the session (and `extra` arrays, e.g. codec state) to `path`.
    pub fn save(&self, path: &Path, extra: &[ExtraArray]) -> Result<(), ModelError> {
        let m = self.model();
        let data = (self.state(), self.sampling(), self.conditioning(), extra);
        encode(path, data, &m.config, m.precision)
    }

    /// Restores a session saved by [`Session::save`] into this session (same model
    /// and precision); returns the extra arrays for the caller. Nothing changes
    /// unless the whole file is valid (see [`read`]).
    pub fn load(
        &mut self,
        path: &Path,
        pool: &rill_kernels::Pool,
    ) -> Result<Vec<ExtraArray>, ModelError> {
        let ckpt = Checkpoint::open(path)?;
        let m = self.model().clone();
        let data = read(&ckpt, &m.config, m.precision)?;
        self.restore_state(data.state)?;
        self.set_sampling(data.sampling)?;
        self.set_conditioning(&data.conditioning, pool)?;
        Ok(data.extra)
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
        assert_eq!(parse_conditioning(&conditioning_json(&c)), Ok(c));
        assert!(parse_conditioning("{}").is_err());
    }
}
