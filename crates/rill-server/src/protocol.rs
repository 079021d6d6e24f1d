//! The WebSocket protocol (documented in the README).
//!
//! Client → server, JSON text: `{"type":"start", ...controls}`,
//! `{"type":"control", ...controls}`, `{"type":"stop"}`, plus `{"type":"reset"}`.
//! Controls use the names of `rill generate`: `style_codes` (12 codes 0..1023 or
//! null = masked), `notes` (the MIDI pitches currently held), `drums` ("on", "off"
//! or null = masked), `temperature`, `top_k`, `cfg_musiccoca`, `cfg_notes`,
//! `cfg_drums`, `seed`.
//!
//! Server → client: one binary message per 40 ms frame (1920 stereo samples,
//! interleaved little-endian int16 = 7680 bytes), and JSON text
//! `{"type":"status","rtf":…,"buffer_ms":…,"underruns":…,"frame":…}` and
//! `{"type":"started","seed":…}` (the stream opened), and
//! `{"type":"error","code":…,"message":…}` with code `busy` (refused: all streams
//! the CPU sustains are in use; also carries `active` and `capacity`),
//! `bad_request` (malformed input, nothing applied), `overloaded` (the control
//! queue is full) or `internal`.

use rill_mrt2::sampler::VOCAB;
use rill_stream::Control;
use serde_json::{Map, Value};

/// A parsed client message.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientMsg {
    Start {
        seed: Option<u64>,
        controls: Vec<Control>,
    },
    Control(Vec<Control>),
    Stop,
    Reset,
}

const CONTROL_KEYS: [&str; 9] = [
    "style_codes",
    "notes",
    "drums",
    "temperature",
    "top_k",
    "cfg_musiccoca",
    "cfg_notes",
    "cfg_drums",
    "seed",
];

/// Parses one text message; every error message says what to send instead.
pub fn parse(text: &str) -> Result<ClientMsg, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let obj = v.as_object().ok_or("a message must be a JSON object")?;
    let kind = obj
        .get("type")
        .and_then(Value::as_str)
        .ok_or("missing \"type\" (start, control, stop or reset)")?;
    for k in obj.keys() {
        if k != "type" && !CONTROL_KEYS.contains(&k.as_str()) {
            return Err(format!(
                "unknown field {k:?}; controls are {}",
                CONTROL_KEYS.join(", ")
            ));
        }
    }
    match kind {
        "start" => {
            let seed = match obj.get("seed") {
                None | Some(Value::Null) => None,
                Some(s) => Some(s.as_u64().ok_or("seed must be a non-negative integer")?),
            };
            let controls = controls(obj, false)?;
            Ok(ClientMsg::Start { seed, controls })
        }
        "control" => Ok(ClientMsg::Control(controls(obj, true)?)),
        "stop" => Ok(ClientMsg::Stop),
        "reset" => Ok(ClientMsg::Reset),
        other => Err(format!(
            "unknown type {other:?} (start, control, stop or reset)"
        )),
    }
}

fn number(obj: &Map<String, Value>, key: &str) -> Result<Option<f64>, String> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => {
            let x = v
                .as_f64()
                .ok_or_else(|| format!("{key} must be a number"))?;
            if !x.is_finite() {
                return Err(format!("{key} must be finite"));
            }
            Ok(Some(x))
        }
    }
}

/// All controls present in the message, validated as a whole (nothing is applied
/// if anything is wrong).
fn controls(obj: &Map<String, Value>, seed_is_control: bool) -> Result<Vec<Control>, String> {
    let mut out = Vec::new();
    if let Some(v) = obj.get("style_codes") {
        let style = match v {
            Value::Null => None,
            Value::Array(a) => {
                if a.len() != 12 {
                    return Err(format!(
                        "style_codes needs exactly 12 codes, got {}",
                        a.len()
                    ));
                }
                let mut s = [0u16; 12];
                for (i, x) in a.iter().enumerate() {
                    let c = x
                        .as_i64()
                        .filter(|c| (0..=1023).contains(c))
                        .ok_or_else(|| format!("style_codes[{i}] must be an integer 0..1023"))?;
                    s[i] = c as u16;
                }
                Some(s)
            }
            _ => return Err("style_codes must be an array of 12 integers or null".into()),
        };
        out.push(Control::Style(style));
    }
    if let Some(v) = obj.get("notes") {
        let a = v
            .as_array()
            .ok_or("notes must be an array of MIDI pitches")?;
        let mut held = Vec::with_capacity(a.len());
        for x in a {
            let p = x
                .as_i64()
                .filter(|p| (0..=127).contains(p))
                .ok_or("notes must be MIDI pitches 0..127")?;
            held.push(p as u8);
        }
        out.push(Control::HeldNotes(held));
    }
    if let Some(v) = obj.get("drums") {
        let d = match v {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            Value::String(s) if s == "on" => Some(true),
            Value::String(s) if s == "off" => Some(false),
            _ => return Err("drums must be \"on\", \"off\" or null".into()),
        };
        out.push(Control::Drums(d));
    }
    if let Some(t) = number(obj, "temperature")? {
        if t < 0.0 {
            return Err("temperature must be ≥ 0".into());
        }
        out.push(Control::Temperature(t as f32));
    }
    if let Some(v) = obj.get("top_k") {
        let k = v
            .as_u64()
            .filter(|k| (1..=VOCAB as u64).contains(k))
            .ok_or_else(|| format!("top_k must be an integer 1..{VOCAB}"))?;
        out.push(Control::TopK(k as usize));
    }
    if let Some(x) = number(obj, "cfg_musiccoca")? {
        out.push(Control::CfgMusiccoca(x));
    }
    if let Some(x) = number(obj, "cfg_notes")? {
        out.push(Control::CfgNotes(x));
    }
    if let Some(x) = number(obj, "cfg_drums")? {
        out.push(Control::CfgDrums(x));
    }
    if seed_is_control {
        if let Some(v) = obj.get("seed") {
            out.push(Control::Seed(
                v.as_u64().ok_or("seed must be a non-negative integer")?,
            ));
        }
    }
    Ok(out)
}

/// `{"type":"status", ...}`.
pub fn status(rtf: f32, buffer_ms: f32, underruns: u64, frame: u64) -> String {
    serde_json::json!({
        "type": "status",
        "rtf": (rtf as f64 * 1000.0).round() / 1000.0,
        "buffer_ms": (buffer_ms as f64).round(),
        "underruns": underruns,
        "frame": frame,
    })
    .to_string()
}

/// `{"type":"started", "seed": …}`.
pub fn started(seed: u64) -> String {
    serde_json::json!({"type": "started", "seed": seed}).to_string()
}

/// `{"type":"error","code":"busy", ...}` with the admission numbers.
pub fn busy(message: &str, active: usize, capacity: usize) -> String {
    serde_json::json!({"type": "error", "code": "busy", "message": message, "active": active, "capacity": capacity})
        .to_string()
}

/// `{"type":"error", ...}`.
pub fn error(code: &str, message: &str) -> String {
    serde_json::json!({"type": "error", "code": code, "message": message}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_validates() {
        let m = parse(
            r#"{"type":"start","style_codes":[1,2,3,4,5,6,7,8,9,10,11,12],"drums":"on","seed":7}"#,
        )
        .unwrap();
        assert_eq!(
            m,
            ClientMsg::Start {
                seed: Some(7),
                controls: vec![
                    Control::Style(Some([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])),
                    Control::Drums(Some(true))
                ]
            }
        );
        assert_eq!(
            parse(r#"{"type":"control","notes":[60,64],"top_k":100}"#).unwrap(),
            ClientMsg::Control(vec![Control::HeldNotes(vec![60, 64]), Control::TopK(100)])
        );
        assert_eq!(parse(r#"{"type":"stop"}"#).unwrap(), ClientMsg::Stop);
        for bad in [
            "nope",
            "[1]",
            r#"{"type":"dance"}"#,
            r#"{"type":"control","style_codes":[1]}"#,
            r#"{"type":"control","notes":[128]}"#,
            r#"{"type":"control","top_k":0}"#,
            r#"{"type":"control","temperature":-1}"#,
            r#"{"type":"control","volume":3}"#,
            r#"{"type":"control","drums":"maybe"}"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
