//! The WebSocket protocol (documented in the README).
//!
//! Client → server, JSON text of at most 64 KiB: `{"type":"start", ...controls}`,
//! `{"type":"control", ...controls}`, `{"type":"stop"}`, plus `{"type":"reset"}`.
//! Controls use the names of `rill generate`: `style_codes` (12 codes 0..=1023 or
//! null = masked), `notes` (the MIDI pitches currently held, at most 128 entries
//! of 0..=127), `drums` ("on", "off" or null = masked), `temperature` (0..=10),
//! `top_k` (1..=12294), `cfg_musiccoca`, `cfg_notes`, `cfg_drums` (−1..=7),
//! `seed` (a u64), `style_levels` (12 or 6: the MusicCoCa levels fed), and `prompts` (a style as up to 6 weighted texts and uploaded
//! clips, encoded by MusicCoCa beside the stream: [`prompts`]; not with
//! `style_codes` in the same message).
//!
//! Server → client: one binary message per 40 ms frame (1920 stereo samples,
//! interleaved little-endian int16 = 7680 bytes), and JSON text
//! `{"type":"status","rtf":…,"buffer_ms":…,"underruns":…,"frame":…}` and
//! `{"type":"started","seed":…}` (the stream opened),
//! `{"type":"style","codes":[…12…],"ms":…}` (the style of the last `prompts` took
//! over at a frame boundary, `ms` after the message arrived), and
//! `{"type":"error","code":…,"message":…}` with code `busy` (refused: all streams
//! the CPU sustains are in use; also carries `active` and `capacity`),
//! `bad_request` (malformed or out-of-range input, nothing applied), `style` (the
//! prompts could not be encoded; the style stays as it was), `overloaded`
//! (the control queue is full), `too_large` (a message over 64 KiB; the server
//! then closes the socket with close code 1009) or `internal` (the engine stopped
//! this stream after a panic; close code 1011; other streams play on).
//!
//! The protocol's version is [`PROTOCOL_VERSION`], shown by `/api/info`; a change
//! that an old client could misread raises it.

mod prompts;

pub use prompts::{parse_prompts, PromptSource, PromptSpec, MAX_PROMPT_CHARS};

use std::ops::RangeInclusive;

use rill_mrt2::conditioning::StyleLevels;
use rill_mrt2::sampler::VOCAB;
use rill_stream::Control;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits::MAX_MESSAGE_BYTES;

/// The version of this protocol (`protocol` in `/api/info`): 2 added `prompts`,
/// `style_levels` and the `style` message.
pub const PROTOCOL_VERSION: u32 = 2;

/// Temperatures accepted (0 = greedy). The model takes any finite value ≥ 0, but
/// past 10 the noise drowns the logits entirely; the instrument's slider ends at 2.
pub const TEMPERATURE: RangeInclusive<f64> = 0.0..=10.0;

/// CFG scales accepted: upstream's `discretize_cfg` clamps into −1..7, so a
/// value outside would silently act as the nearest end.
pub const CFG_SCALE: RangeInclusive<f64> = -1.0..=7.0;

/// `top_k` accepted (values ≥ 1024 keep every token of a level).
pub const TOP_K: RangeInclusive<u64> = 1..=VOCAB as u64;

/// Most entries in `notes`: every MIDI pitch once.
pub const MAX_NOTES: usize = 128;

/// MIDI pitches.
pub const PITCH: RangeInclusive<i64> = 0..=127;

/// MusicCoCa codes.
pub const STYLE_CODE: RangeInclusive<i64> = 0..=1023;

/// A parsed client message.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientMsg {
    Start {
        seed: Option<u64>,
        controls: Vec<Control>,
        /// A style to encode before the stream opens.
        prompts: Option<Vec<PromptSpec>>,
    },
    Control {
        controls: Vec<Control>,
        /// A new style to encode; it takes over when ready.
        prompts: Option<Vec<PromptSpec>>,
    },
    Stop,
    Reset,
}

/// A client message as sent and as it arrives: serde checks the `type` tag and
/// refuses unknown fields; the values stay JSON so that [`parse`] can name the
/// field, its range and the value in each error (and nothing is applied if one
/// is wrong). A client writes one with `serde_json::to_string`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Wire {
    /// Open a stream with these controls (`seed`: the sampler's).
    Start(WireControls),
    /// Change controls of the open stream.
    Control(WireControls),
    /// Close the stream (the socket stays open).
    Stop {},
    /// Restart the stream's generation from silence.
    Reset {},
}

/// The controls of a `start` or `control` message; `None` = absent, and a JSON
/// `null` is `Some(Value::Null)` (it means "masked" for style and drums).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireControls {
    /// 12 MusicCoCa codes 0..=1023, or null (masked).
    #[serde(default, deserialize_with = "present")]
    pub style_codes: Option<Value>,
    /// The MIDI pitches held now (at most 128 of 0..=127).
    #[serde(default, deserialize_with = "present")]
    pub notes: Option<Value>,
    /// `"on"`, `"off"` or null (masked).
    #[serde(default, deserialize_with = "present")]
    pub drums: Option<Value>,
    /// Sampling temperature, 0..=10 (0 = greedy).
    #[serde(default, deserialize_with = "present")]
    pub temperature: Option<Value>,
    /// Tokens kept per step, 1..=12294.
    #[serde(default, deserialize_with = "present")]
    pub top_k: Option<Value>,
    /// Guidance of the style, −1..=7.
    #[serde(default, deserialize_with = "present")]
    pub cfg_musiccoca: Option<Value>,
    /// Guidance of the notes, −1..=7.
    #[serde(default, deserialize_with = "present")]
    pub cfg_notes: Option<Value>,
    /// Guidance of the drums, −1..=7.
    #[serde(default, deserialize_with = "present")]
    pub cfg_drums: Option<Value>,
    /// The sampler's seed (a u64): the stream's with `start`, a reseed with `control`.
    #[serde(default, deserialize_with = "present")]
    pub seed: Option<Value>,
    /// Up to 6 weighted text prompts and clips (see [`prompts`]).
    #[serde(default, deserialize_with = "present")]
    pub prompts: Option<Value>,
    /// Style levels fed to the model: 12 (upstream's Python) or 6 (its C++ engine).
    #[serde(default, deserialize_with = "present")]
    pub style_levels: Option<Value>,
}

/// Only the fields present (`None` = absent; a `null` is sent as `null`).
impl Serialize for WireControls {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let fields = [
            ("style_codes", &self.style_codes),
            ("notes", &self.notes),
            ("drums", &self.drums),
            ("temperature", &self.temperature),
            ("top_k", &self.top_k),
            ("cfg_musiccoca", &self.cfg_musiccoca),
            ("cfg_notes", &self.cfg_notes),
            ("cfg_drums", &self.cfg_drums),
            ("seed", &self.seed),
            ("prompts", &self.prompts),
            ("style_levels", &self.style_levels),
        ];
        let mut map = s.serialize_map(None)?;
        for (name, value) in fields {
            if let Some(v) = value {
                map.serialize_entry(name, v)?;
            }
        }
        map.end()
    }
}

/// A field that is present, `null` included.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Parses one text message; every error message names the field and says what
/// to send instead. Nothing is clamped: a value out of range is an error.
pub fn parse(text: &str) -> Result<ClientMsg, String> {
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(format!(
            "a message of {} bytes is over the limit of {MAX_MESSAGE_BYTES}",
            text.len()
        ));
    }
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let obj = v.as_object().ok_or("a message must be a JSON object")?;
    if !obj.contains_key("type") {
        return Err("missing \"type\" (start, control, stop or reset)".into());
    }
    // serde's message quotes the offending name, which may be 64 KiB long.
    let wire = Wire::deserialize(v).map_err(|e| cut(&e.to_string()))?;
    Ok(match wire {
        Wire::Start(c) => ClientMsg::Start {
            seed: c
                .seed
                .as_ref()
                .filter(|s| !s.is_null())
                .map(seed)
                .transpose()?,
            controls: controls(&c, false)?,
            prompts: style_prompts(&c)?,
        },
        Wire::Control(c) => ClientMsg::Control {
            controls: controls(&c, true)?,
            prompts: style_prompts(&c)?,
        },
        Wire::Stop {} => ClientMsg::Stop,
        Wire::Reset {} => ClientMsg::Reset,
    })
}

/// `prompts`, if present (never together with `style_codes`).
fn style_prompts(c: &WireControls) -> Result<Option<Vec<PromptSpec>>, String> {
    match (&c.prompts, &c.style_codes) {
        (None, _) => Ok(None),
        (Some(_), Some(_)) => Err(
            "send either style_codes or prompts in one message, not both (prompts become style codes)"
                .into(),
        ),
        (Some(v), None) => parse_prompts(v).map(Some),
    }
}

/// A client's value for an error message, cut short (it may be 64 KiB).
fn shown(v: &Value) -> String {
    cut(&v.to_string())
}

fn cut(s: &str) -> String {
    const MAX: usize = 120;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn seed(v: &Value) -> Result<u64, String> {
    v.as_u64().ok_or_else(|| {
        format!(
            "seed must be an integer in 0..={}, got {}",
            u64::MAX,
            shown(v)
        )
    })
}

/// A number within `range`, if `key` is present.
fn number(
    v: Option<&Value>,
    key: &str,
    range: RangeInclusive<f64>,
    hint: &str,
) -> Result<Option<f64>, String> {
    let Some(v) = v else {
        return Ok(None);
    };
    match v.as_f64() {
        Some(x) if range.contains(&x) => Ok(Some(x)),
        _ => Err(format!(
            "{key} must be a number in {}..={}{hint}, got {}",
            range.start(),
            range.end(),
            shown(v)
        )),
    }
}

/// An integer within `range`, named `what` in the error.
fn integer(v: &Value, range: &RangeInclusive<i64>, what: &str) -> Result<i64, String> {
    v.as_i64().filter(|x| range.contains(x)).ok_or_else(|| {
        format!(
            "{what} must be an integer in {}..={}, got {}",
            range.start(),
            range.end(),
            shown(v)
        )
    })
}

/// All controls present in the message, validated as a whole (nothing is applied
/// if anything is wrong).
fn controls(c: &WireControls, seed_is_control: bool) -> Result<Vec<Control>, String> {
    let mut out = Vec::new();
    if let Some(v) = &c.style_codes {
        let style = match v {
            Value::Null => None,
            Value::Array(a) => {
                if a.len() != 12 {
                    return Err(format!(
                        "style_codes needs exactly 12 codes (or null = masked), got {}",
                        a.len()
                    ));
                }
                let mut s = [0u16; 12];
                for (i, x) in a.iter().enumerate() {
                    s[i] = integer(x, &STYLE_CODE, &format!("style_codes[{i}]"))? as u16;
                }
                Some(s)
            }
            _ => {
                return Err(format!(
                    "style_codes must be an array of 12 integers or null, got {}",
                    shown(v)
                ))
            }
        };
        out.push(Control::Style(style));
    }
    if let Some(v) = &c.style_levels {
        let l = v
            .as_u64()
            .and_then(|n| StyleLevels::from_count(n).ok())
            .ok_or_else(|| {
                format!(
                    "style_levels must be 12 (every MusicCoCa level, upstream's Python) or 6 (levels 0–5, upstream's app), got {}",
                    shown(v)
                )
            })?;
        out.push(Control::StyleLevels(l));
    }
    if let Some(v) = &c.notes {
        let a = v.as_array().ok_or_else(|| {
            format!(
                "notes must be an array of MIDI pitches 0..=127, got {}",
                shown(v)
            )
        })?;
        if a.len() > MAX_NOTES {
            return Err(format!(
                "notes holds at most {MAX_NOTES} pitches (each of 0..=127 once), got {} entries",
                a.len()
            ));
        }
        let mut held = Vec::with_capacity(a.len());
        for (i, x) in a.iter().enumerate() {
            held.push(integer(x, &PITCH, &format!("notes[{i}] (a MIDI pitch)"))? as u8);
        }
        out.push(Control::HeldNotes(held));
    }
    if let Some(v) = &c.drums {
        let d = match v {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            Value::String(s) if s == "on" => Some(true),
            Value::String(s) if s == "off" => Some(false),
            _ => {
                return Err(format!(
                    "drums must be \"on\", \"off\" or null, got {}",
                    shown(v)
                ))
            }
        };
        out.push(Control::Drums(d));
    }
    if let Some(t) = number(
        c.temperature.as_ref(),
        "temperature",
        TEMPERATURE,
        " (0 = greedy)",
    )? {
        out.push(Control::Temperature(t as f32));
    }
    if let Some(v) = &c.top_k {
        let k = v.as_u64().filter(|k| TOP_K.contains(k)).ok_or_else(|| {
            format!(
                "top_k must be an integer in {}..={} (≥ 1024 keeps every token), got {}",
                TOP_K.start(),
                TOP_K.end(),
                shown(v)
            )
        })?;
        out.push(Control::TopK(k as usize));
    }
    let cfg = |v: &Option<Value>, key| number(v.as_ref(), key, CFG_SCALE, "");
    if let Some(x) = cfg(&c.cfg_musiccoca, "cfg_musiccoca")? {
        out.push(Control::CfgMusiccoca(x));
    }
    if let Some(x) = cfg(&c.cfg_notes, "cfg_notes")? {
        out.push(Control::CfgNotes(x));
    }
    if let Some(x) = cfg(&c.cfg_drums, "cfg_drums")? {
        out.push(Control::CfgDrums(x));
    }
    if seed_is_control {
        if let Some(v) = &c.seed {
            out.push(Control::Seed(seed(v)?));
        }
    }
    Ok(out)
}

/// A server message (JSON text; audio frames are binary messages).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ServerMsg {
    /// Four times a second while a stream plays.
    Status {
        /// The engine's real-time factor for this stream (3 decimals).
        rtf: f64,
        /// Audio buffered ahead of playback, in whole ms.
        buffer_ms: f64,
        /// Underruns of this stream so far.
        underruns: u64,
        /// Frames made so far.
        frame: u64,
    },
    /// The stream opened with this sampler seed.
    Started {
        /// The seed of the stream's sampler.
        seed: u64,
    },
    /// The style of the last `prompts` is playing from the next frame on.
    Style {
        /// Its 12 MusicCoCa codes.
        codes: Vec<u16>,
        /// From the message's arrival to the switch, in whole ms.
        ms: f64,
        /// Set when part of a prompt was ignored (longer than MusicCoCa reads).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        warning: Option<String>,
    },
    /// Something was refused or failed; `code` says what (see the module doc).
    Error {
        /// `busy`, `bad_request`, `style`, `overloaded`, `too_large`, `idle` or `internal`.
        code: String,
        /// What happened and what to do.
        message: String,
        /// With `busy`: streams playing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        active: Option<usize>,
        /// With `busy`: streams the CPU sustains.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        capacity: Option<usize>,
    },
}

impl ServerMsg {
    /// The message as JSON text.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).expect("a server message serialises")
    }
}

/// `{"type":"status", ...}`.
pub fn status(rtf: f32, buffer_ms: f32, underruns: u64, frame: u64) -> String {
    ServerMsg::Status {
        rtf: (rtf as f64 * 1000.0).round() / 1000.0,
        buffer_ms: (buffer_ms as f64).round(),
        underruns,
        frame,
    }
    .to_text()
}

/// `{"type":"started", "seed": …}`.
pub fn started(seed: u64) -> String {
    ServerMsg::Started { seed }.to_text()
}

/// `{"type":"error","code":"busy", ...}` with the admission numbers.
pub fn busy(message: &str, active: usize, capacity: usize) -> String {
    ServerMsg::Error {
        code: "busy".into(),
        message: message.into(),
        active: Some(active),
        capacity: Some(capacity),
    }
    .to_text()
}

/// `{"type":"style", ...}`.
pub fn style(codes: &[u16; 12], ms: f64, warning: Option<String>) -> String {
    ServerMsg::Style {
        codes: codes.to_vec(),
        ms: ms.round(),
        warning,
    }
    .to_text()
}

/// `{"type":"error", ...}`.
pub fn error(code: &str, message: &str) -> String {
    ServerMsg::Error {
        code: code.into(),
        message: message.into(),
        active: None,
        capacity: None,
    }
    .to_text()
}

#[cfg(test)]
mod tests;
