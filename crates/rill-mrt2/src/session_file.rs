//! State files: a safetensors file holding the whole [`LmState`], the controls
//! and sampling settings, plus what the caller adds (the stream layer stores the
//! codec state as extra arrays and its own part as extra metadata), so a restored
//! stream continues bit-identically. One format serves [`Session::save`] and
//! `rill_stream::Snapshot`.
//!
//! Layout (format `rill-state v1`): tensors `lm/frame` (U64 [1]), `lm/prev` (U32 [12]),
//! `lm/key` (U32 [2]), `lm/self_k`, `lm/self_v`, `lm/cross_k`, `lm/cross_v`
//! (F32 [layers, window, H·Dh]); extra arrays as F32 under their own names.
//! Metadata: format, model, precision, weights (a fingerprint of the loaded weights,
//! [`Mrt2::fingerprint`]), temperature, top_k and the conditioning (f64 values as
//! exact bit patterns), plus the caller's extra entries.
//!
//! A state file is untrusted input: [`read`] checks every field against the model
//! it will run on (model, precision and weights, token ids in their level, finite
//! non-negative temperature, top-k in the vocabulary, style codes, pianoroll values,
//! finite caches, F32 extra arrays) and names the field in its error, so a bad file
//! can never reach the step functions. Extra arrays and metadata entries are the
//! caller's to validate.

use std::collections::HashMap;
use std::path::Path;

use rill_checkpoint::writer::{self, Tensor};
use rill_checkpoint::Checkpoint;
use safetensors::Dtype;
use serde::{Deserialize, Serialize};

use crate::conditioning::{CfgScales, Conditioning, NoteValue, StyleLevels, PITCHES, STYLE_LEVELS};
use crate::config::Mrt2Config;
use crate::error::ModelError;
use crate::model::{Mrt2, LEVELS};
use crate::precision::Precision;
use crate::sampler::{SamplingParams, LEVEL, RESERVED, VOCAB};
use crate::session::{LmState, Session};

pub const FORMAT: &str = "rill-state v1";
/// The format of earlier releases (no weights fingerprint); not read any more.
const OLD_FORMAT: &str = "rill-session v1";

/// An extra named f32 array stored alongside the language-model state.
pub type ExtraArray = (String, Vec<usize>, Vec<f32>);

/// Everything a state file holds.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionData {
    pub state: LmState,
    pub sampling: SamplingParams,
    pub conditioning: Conditioning,
    /// Extra arrays (names must not start with `lm/`).
    pub extra: Vec<ExtraArray>,
    /// Extra metadata entries (keys must not be the format's own, [`RESERVED_KEYS`]);
    /// [`read`] returns them sorted by key.
    pub meta: Vec<(String, String)>,
}

/// The metadata keys of the format itself.
pub const RESERVED_KEYS: [&str; 7] = [
    "format",
    "model",
    "precision",
    "weights",
    "temperature_bits",
    "top_k",
    "conditioning",
];

/// What a state file belongs to: the model's shapes, the precision it runs at and
/// a fingerprint of its weights ([`Mrt2::fingerprint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelId {
    pub config: Mrt2Config,
    pub precision: Precision,
    pub weights: u64,
}

impl ModelId {
    pub fn of(m: &Mrt2) -> ModelId {
        ModelId {
            config: m.config,
            precision: m.precision,
            weights: m.fingerprint(),
        }
    }
}

/// Largest `lm/frame` accepted: about 357 000 years of audio at 25 frames per
/// second, so any larger count is corrupt (and `frame + 1` can never overflow).
pub const MAX_FRAME: u64 = 1 << 48;

const CACHES: [&str; 4] = ["lm/self_k", "lm/self_v", "lm/cross_k", "lm/cross_v"];
const CFG_NAMES: [&str; 3] = ["musiccoca", "notes", "drums"];

/// The `conditioning` metadata as stored (fields in key order, as the files
/// written before serde did this); serde refuses unknown or missing fields and
/// wrong types, [`parse_conditioning`] the values.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConditioningMeta {
    /// `cfg_musiccoca`, `cfg_notes`, `cfg_drums` as the 16 hex digits of their
    /// f64 bits (exact, and NaN cannot hide in a decimal); JSON values, so that
    /// an error can name the CFG scale.
    cfg_bits: Vec<serde_json::Value>,
    #[serde(deserialize_with = "nullable")]
    drums: Option<bool>,
    notes: Vec<i64>,
    #[serde(deserialize_with = "nullable")]
    style: Option<Vec<u64>>,
    /// 6 or 12 (absent in files of earlier versions: 12).
    #[serde(default = "all_levels")]
    style_levels: u64,
}

fn all_levels() -> u64 {
    StyleLevels::All12.count() as u64
}

/// A field that must be present but may be `null`.
fn nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

fn conditioning_json(c: &Conditioning) -> String {
    let meta = ConditioningMeta {
        cfg_bits: [c.cfg.musiccoca, c.cfg.notes, c.cfg.drums]
            .iter()
            .map(|x| format!("{:016x}", x.to_bits()).into())
            .collect(),
        drums: c.drums,
        notes: c.notes.iter().map(|n| n.raw() as i64).collect(),
        style: c.style.map(|s| s.iter().map(|&x| x as u64).collect()),
        style_levels: c.style_levels.count() as u64,
    };
    serde_json::to_string(&meta).expect("strings, booleans and integers serialise")
}

/// Deserialises metadata entry `what`; the error names the field it is about
/// (`conditioning.style[3]: invalid type …`).
pub fn from_json<'de, T: Deserialize<'de>>(s: &'de str, what: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(s);
    let v = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        match e.path().to_string().as_str() {
            "." => format!("{what}: {}", e.inner()),
            path => format!("{what}.{path}: {}", e.inner()),
        }
    })?;
    de.end().map_err(|e| format!("{what}: {e}"))?;
    Ok(v)
}

/// An exact bit pattern written as `digits` lowercase or uppercase hex digits.
fn hex_bits(s: &str, digits: usize) -> Option<u64> {
    if s.len() != digits || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

fn parse_conditioning(s: &str) -> Result<Conditioning, String> {
    let meta: ConditioningMeta = from_json(s, "conditioning")?;
    let style = match meta.style {
        None => None,
        Some(a) if a.len() == STYLE_LEVELS => {
            let mut s = [0u16; STYLE_LEVELS];
            for (i, (d, &x)) in s.iter_mut().zip(&a).enumerate() {
                if x >= 1024 {
                    return Err(format!(
                        "conditioning.style[{i}] is {x}, not a code 0..1023"
                    ));
                }
                *d = x as u16;
            }
            Some(s)
        }
        Some(a) => {
            return Err(format!(
                "conditioning.style holds {} codes, not {STYLE_LEVELS} (or null)",
                a.len()
            ))
        }
    };
    let style_levels = StyleLevels::from_count(meta.style_levels).map_err(|_| {
        format!(
            "conditioning.style_levels is {}, not 6 or 12",
            meta.style_levels
        )
    })?;
    if meta.notes.len() != PITCHES {
        return Err(format!(
            "conditioning.notes must be {PITCHES} pianoroll values, found {}",
            meta.notes.len()
        ));
    }
    let mut notes = [NoteValue::Masked; PITCHES];
    for (i, (d, &x)) in notes.iter_mut().zip(&meta.notes).enumerate() {
        *d = NoteValue::from_raw(x).ok_or_else(|| {
            format!("conditioning.notes[{i}] is {x}, not a pianoroll value -1..3")
        })?;
    }
    if meta.cfg_bits.len() != 3 {
        return Err(format!(
            "conditioning.cfg_bits must be 3 hex strings, found {}",
            meta.cfg_bits.len()
        ));
    }
    let mut cfg = [0f64; 3];
    for (i, (d, x)) in cfg.iter_mut().zip(&meta.cfg_bits).enumerate() {
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
        style_levels,
        notes,
        drums: meta.drums,
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

impl SessionData {
    /// The bytes of a state file for the model `id` (what [`read`] checks). Fails
    /// only for an extra array named `lm/…`, an extra metadata key of the format's
    /// own or an extra array whose shape does not match its values.
    pub fn to_bytes(&self, id: &ModelId) -> Result<Vec<u8>, String> {
        let (st, p) = (&self.state, self.sampling);
        let config = &id.config;
        let ring = vec![
            config.dims.temporal.layers,
            config.dims.window,
            config.temporal_inner(),
        ];
        let ring_len: usize = ring.iter().product();
        let mut tensors: Vec<(String, Tensor<'static>)> = vec![
            ("lm/frame".into(), Tensor::u64(&[st.frame])),
            ("lm/prev".into(), Tensor::u32(&st.prev)),
            ("lm/key".into(), Tensor::u32(&st.key)),
        ];
        for (name, v) in CACHES
            .iter()
            .zip([&st.self_k, &st.self_v, &st.cross_k, &st.cross_v])
        {
            // A cache of the wrong length is written as it is; `read` refuses it.
            let shape = if v.len() == ring_len {
                ring.clone()
            } else {
                vec![v.len()]
            };
            tensors.push((name.to_string(), Tensor::f32(shape, v)));
        }
        for (name, shape, v) in &self.extra {
            if name.starts_with("lm/") {
                return Err(format!(
                    "extra array name {name} clashes with the lm/ state"
                ));
            }
            if shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) != Some(v.len()) {
                return Err(format!(
                    "extra array {name}: shape {shape:?} does not hold {} values",
                    v.len()
                ));
            }
            tensors.push((name.clone(), Tensor::f32(shape.clone(), v)));
        }
        let mut meta = HashMap::new();
        for (k, v) in &self.meta {
            if RESERVED_KEYS.contains(&k.as_str()) {
                return Err(format!("extra metadata key {k} is one of the format's own"));
            }
            meta.insert(k.clone(), v.clone());
        }
        meta.insert("format".to_string(), FORMAT.to_string());
        meta.insert("model".to_string(), config.kind.name().to_string());
        meta.insert("precision".to_string(), id.precision.name().to_string());
        meta.insert("weights".to_string(), format!("{:016x}", id.weights));
        meta.insert(
            "temperature_bits".to_string(),
            format!("{:08x}", p.temperature.to_bits()),
        );
        meta.insert("top_k".to_string(), p.top_k.to_string());
        meta.insert(
            "conditioning".to_string(),
            conditioning_json(&self.conditioning),
        );
        writer::serialize(&tensors, meta).map_err(|e| e.to_string())
    }

    /// Writes a state file for the model `id` atomically (as [`Session::save`] does).
    pub fn write(&self, path: &Path, id: &ModelId) -> Result<(), ModelError> {
        let bytes = self
            .to_bytes(id)
            .map_err(|reason| ModelError::SessionFile {
                path: path.to_path_buf(),
                reason,
            })?;
        writer::write_bytes(path, &bytes)?;
        Ok(())
    }
}

/// Reads and validates a state file for the model `id`, without touching a
/// [`Session`]; the error names the bad field.
pub fn read(ckpt: &Checkpoint, id: &ModelId) -> Result<SessionData, ModelError> {
    let (config, precision) = (&id.config, id.precision);
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
    match get("format")? {
        FORMAT => {}
        OLD_FORMAT => {
            return Err(err(format!(
                "a {OLD_FORMAT} file from an earlier rill; this one reads {FORMAT} files"
            )))
        }
        other => return Err(err(format!("format is {other:?}, not {FORMAT}"))),
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
    let w = get("weights")?;
    let weights =
        hex_bits(w, 16).ok_or_else(|| err(format!("weights {w:?} is not 16 hex digits")))?;
    if weights != id.weights {
        return Err(err(format!(
            "saved with other weights (fingerprint {weights:016x}), but the loaded checkpoint's are {:016x}; use the checkpoint it was saved with",
            id.weights
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
        if t.dtype != Dtype::F32 {
            return Err(err(format!("extra array {name} is {:?}, not F32", t.dtype)));
        }
        let v = t
            .to_f32()
            .map_err(|e| err(format!("extra array {name}: {e}")))?;
        extra.push((name.to_string(), t.shape.to_vec(), v));
    }
    let mut extra_meta: Vec<(String, String)> = meta
        .iter()
        .filter(|(k, _)| !RESERVED_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    extra_meta.sort();
    Ok(SessionData {
        state,
        sampling: SamplingParams { temperature, top_k },
        conditioning,
        extra,
        meta: extra_meta,
    })
}

impl Session {
    /// Writes the session (and `extra` arrays, e.g. codec state) to `path`.
    pub fn save(&self, path: &Path, extra: &[ExtraArray]) -> Result<(), ModelError> {
        let data = SessionData {
            state: self.state().clone(),
            sampling: self.sampling(),
            conditioning: self.conditioning().clone(),
            extra: extra.to_vec(),
            meta: Vec::new(),
        };
        data.write(path, &ModelId::of(self.model()))
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
        let data = read(&ckpt, &ModelId::of(self.model()))?;
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
        assert_eq!(parse_conditioning(&conditioning_json(&c)), Ok(c.clone()));
        c.style_levels = StyleLevels::Coarse6;
        let json = conditioning_json(&c);
        assert!(json.contains(r#""style_levels":6"#), "{json}");
        assert_eq!(parse_conditioning(&json), Ok(c.clone()));
        assert!(parse_conditioning("{}").is_err());
    }

    #[test]
    fn style_levels_default_and_range() {
        let c = Conditioning::default();
        let json = conditioning_json(&c);
        // A file of an earlier version (no style_levels) feeds all 12 levels.
        let old = json.replace(r#","style_levels":12"#, "");
        assert!(!old.contains("style_levels"), "{old}");
        assert_eq!(
            parse_conditioning(&old).unwrap().style_levels,
            StyleLevels::All12
        );
        let bad = json.replace(r#""style_levels":12"#, r#""style_levels":7"#);
        assert_eq!(
            parse_conditioning(&bad),
            Err("conditioning.style_levels is 7, not 6 or 12".to_string())
        );
        let bad = json.replace(r#""style_levels":12"#, r#""style_levels":"6""#);
        assert!(parse_conditioning(&bad)
            .unwrap_err()
            .starts_with("conditioning.style_levels"));
    }
}
