//! `prompts`: a style as words and audio clips, blended (upstream's apps: up to 6
//! weighted prompts). `[{"text":"disco funk"}]`, `[{"text":"jazz","weight":0.7},
//! {"clip":"<id from POST /api/clips>","weight":0.3}]`. Weights are ≥ 0 and
//! normalised over the positive ones (default 1); the server encodes the blend beside
//! the stream and answers `{"type":"style","codes":[…12…],"ms":…}` when the new style
//! takes over (at the next frame boundary).

use rill_musiccoca::blend::{normalised_weights, MAX_PROMPTS};
use serde_json::Value;

use super::{cut, shown};

/// Longest text of one prompt, in characters (MusicCoCa reads its first 127
/// tokens; a longer text is refused rather than cut silently).
pub const MAX_PROMPT_CHARS: usize = 1000;

/// Longest clip id accepted (ids the server hands out are 16 hex digits).
const MAX_CLIP_ID: usize = 64;

/// One member of a blend.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptSpec {
    pub source: PromptSource,
    pub weight: f32,
}

/// What a member is.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptSource {
    /// Words, embedded by MusicCoCa's text tower (and mapper, as the server is set).
    Text(String),
    /// A clip uploaded with `POST /api/clips`, by the id it returned.
    Clip(String),
}

/// Parses and checks `prompts` as a whole (nothing is applied if a member is wrong).
pub fn parse_prompts(v: &Value) -> Result<Vec<PromptSpec>, String> {
    let a = v.as_array().ok_or_else(|| {
        format!(
            "prompts must be an array of {{\"text\": …}} or {{\"clip\": …}} objects, got {}",
            shown(v)
        )
    })?;
    if a.is_empty() || a.len() > MAX_PROMPTS {
        return Err(format!(
            "prompts holds 1 to {MAX_PROMPTS} prompts, got {}",
            a.len()
        ));
    }
    let mut out = Vec::with_capacity(a.len());
    for (i, m) in a.iter().enumerate() {
        out.push(member(i, m)?);
    }
    let weights: Vec<f32> = out.iter().map(|p| p.weight).collect();
    normalised_weights(&weights).map_err(|e| format!("prompts: {e}"))?;
    Ok(out)
}

fn member(i: usize, m: &Value) -> Result<PromptSpec, String> {
    let o = m.as_object().ok_or_else(|| {
        format!(
            "prompts[{i}] must be an object {{\"text\": \"disco funk\", \"weight\": 1}} or {{\"clip\": ID}}, got {}",
            shown(m)
        )
    })?;
    if let Some(k) = o
        .keys()
        .find(|k| !["text", "clip", "weight"].contains(&k.as_str()))
    {
        return Err(format!(
            "prompts[{i}]: unknown field {:?} (expected text, clip, weight)",
            cut(k)
        ));
    }
    let source = match (o.get("text"), o.get("clip")) {
        (Some(Value::String(t)), None) => {
            if t.trim().is_empty() {
                return Err(format!(
                    "prompts[{i}].text is empty; give some words (\"disco funk\")"
                ));
            }
            let n = t.chars().count();
            if n > MAX_PROMPT_CHARS {
                return Err(format!(
                    "prompts[{i}].text has {n} characters; at most {MAX_PROMPT_CHARS} (MusicCoCa reads only its first 127 tokens)"
                ));
            }
            PromptSource::Text(t.clone())
        }
        (None, Some(Value::String(id))) if !id.is_empty() && id.len() <= MAX_CLIP_ID => {
            PromptSource::Clip(id.clone())
        }
        (Some(_), Some(_)) => {
            return Err(format!(
                "prompts[{i}] has both text and clip; one member is one or the other"
            ))
        }
        (None, None) => {
            return Err(format!(
                "prompts[{i}] needs \"text\" (words) or \"clip\" (an id from POST /api/clips)"
            ))
        }
        (Some(v), None) => {
            return Err(format!(
                "prompts[{i}].text must be a string, got {}",
                shown(v)
            ))
        }
        (None, Some(v)) => {
            return Err(format!(
                "prompts[{i}].clip must be the id POST /api/clips returned, got {}",
                shown(v)
            ))
        }
    };
    let weight = match o.get("weight") {
        None => 1.0,
        Some(w) => match w.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 && x <= f32::MAX as f64 => x as f32,
            _ => {
                return Err(format!(
                    "prompts[{i}].weight must be a number ≥ 0 (weights are relative), got {}",
                    shown(w)
                ))
            }
        },
    };
    Ok(PromptSpec { source, weight })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_are_texts_or_clips_with_weights() {
        let p = parse_prompts(&json!([{"text":"jazz","weight":0.7},{"clip":"00ff"}])).unwrap();
        assert_eq!(
            p,
            vec![
                PromptSpec {
                    source: PromptSource::Text("jazz".into()),
                    weight: 0.7
                },
                PromptSpec {
                    source: PromptSource::Clip("00ff".into()),
                    weight: 1.0
                }
            ]
        );
    }

    #[test]
    fn bad_prompts_say_what_is_wrong() {
        let long = "a".repeat(MAX_PROMPT_CHARS + 1);
        for (bad, says) in [
            (json!("jazz"), "must be an array"),
            (json!([]), "1 to 6"),
            (
                serde_json::Value::Array(vec![json!({"text":"a"}); 7]),
                "1 to 6",
            ),
            (json!([1]), "must be an object"),
            (json!([{"text":"  "}]), "is empty"),
            (json!([{"text":long}]), "at most 1000"),
            (json!([{"text":"a","clip":"b"}]), "both text and clip"),
            (json!([{}]), "needs \"text\""),
            (json!([{"text":3}]), "must be a string"),
            (json!([{"clip":""}]), "id POST /api/clips returned"),
            (json!([{"text":"a","weight":-1}]), "≥ 0"),
            (json!([{"text":"a","weight":"x"}]), "≥ 0"),
            (
                json!([{"text":"a","weight":0},{"text":"b","weight":0}]),
                "prompts:",
            ),
            (json!([{"text":"a","colour":1}]), "unknown field"),
        ] {
            let e = parse_prompts(&bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
