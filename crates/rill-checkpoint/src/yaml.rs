//! `model_config.yaml` (OmegaConf's block YAML) as a JSON value, through
//! `yaml-rust2`'s event parser: one document, plain scalars resolved by the YAML
//! 1.2 core schema, aliases refused (so no "billion laughs" expansion), nesting
//! and event count bounded.

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::Parser;
use yaml_rust2::scanner::TScalarStyle;
use yaml_rust2::{Event, Yaml};

/// Deepest nesting accepted (the real config nests 5 levels).
const MAX_DEPTH: usize = 64;
/// Most parser events accepted (the real 7.5 kB config makes ~1,000).
const MAX_EVENTS: usize = 1 << 20;

enum Frame {
    Seq(Vec<Value>),
    Map(Map<String, Value>, Option<String>),
}

fn scalar(text: String, style: TScalarStyle) -> Value {
    if style != TScalarStyle::Plain {
        return Value::String(text);
    }
    match Yaml::from_str(&text) {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::Number(i.into()),
        Yaml::Real(r) => match r.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Value::Number(n),
            None => Value::String(r),
        },
        _ => Value::String(text),
    }
}

/// Parses one YAML document into JSON; errors carry the line.
pub fn to_json(text: &str) -> Result<Value, String> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut done: Option<Value> = None;
    for _ in 0..MAX_EVENTS {
        let (event, mark) = parser.next_token().map_err(|e| e.to_string())?;
        let value = match event {
            Event::StreamStart | Event::DocumentStart | Event::Nothing => continue,
            Event::DocumentEnd => continue,
            Event::StreamEnd => return done.ok_or_else(|| "the YAML document is empty".into()),
            Event::Alias(_) => {
                return Err(format!(
                    "line {}: YAML aliases are not accepted in a model config",
                    mark.line()
                ))
            }
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(format!(
                        "line {}: nested deeper than {MAX_DEPTH}",
                        mark.line()
                    ));
                }
                stack.push(if matches!(event, Event::SequenceStart(..)) {
                    Frame::Seq(Vec::new())
                } else {
                    Frame::Map(Map::new(), None)
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Frame::Seq(v)) => Value::Array(v),
                Some(Frame::Map(m, None)) => Value::Object(m),
                _ => return Err(format!("line {}: unbalanced YAML", mark.line())),
            },
            Event::Scalar(text, style, _, _) => scalar(text, style),
        };
        match stack.last_mut() {
            None => {
                if done.replace(value).is_some() {
                    return Err("more than one YAML document".into());
                }
            }
            Some(Frame::Seq(v)) => v.push(value),
            Some(Frame::Map(m, key)) => match key.take() {
                None => match value {
                    Value::String(s) => *key = Some(s),
                    Value::Number(n) => *key = Some(n.to_string()),
                    Value::Bool(b) => *key = Some(b.to_string()),
                    _ => {
                        return Err(format!(
                            "line {}: a mapping key is not a scalar",
                            mark.line()
                        ))
                    }
                },
                Some(k) => {
                    if m.insert(k.clone(), value).is_some() {
                        return Err(format!("line {}: key {k} appears twice", mark.line()));
                    }
                }
            },
        }
    }
    Err(format!("more than {MAX_EVENTS} YAML events"))
}

/// The keys of the top-level mapping `key` in document order (the JSON of
/// [`to_json`] is sorted), e.g. a Magpie config's `text_tokenizers`, whose order sets
/// the token offsets; `None` if `key` is missing or not a mapping. The text is first
/// checked by [`to_json`] (no aliases, bounded), so loading it cannot blow up.
pub fn top_level_keys(text: &str, key: &str) -> Result<Option<Vec<String>>, String> {
    to_json(text)?;
    let docs = yaml_rust2::YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
    let Some(Yaml::Hash(top)) = docs.first() else {
        return Ok(None);
    };
    let Some(Yaml::Hash(map)) = top.get(&Yaml::String(key.to_string())) else {
        return Ok(None);
    };
    Ok(Some(
        map.keys()
            .map(|k| match k {
                Yaml::String(s) | Yaml::Real(s) => s.clone(),
                Yaml::Integer(i) => i.to_string(),
                Yaml::Boolean(b) => b.to_string(),
                other => format!("{other:?}"),
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_keys_keep_document_order() {
        let text = "a: 1\ntext_tokenizers:\n  zeta:\n    x: 1\n  alpha: {}\n  mid: 2\n";
        assert_eq!(
            top_level_keys(text, "text_tokenizers").unwrap(),
            Some(vec!["zeta".into(), "alpha".into(), "mid".into()])
        );
        assert_eq!(top_level_keys(text, "a").unwrap(), None);
        assert_eq!(top_level_keys(text, "b").unwrap(), None);
        assert!(top_level_keys("a: &x 1\nb: *x\n", "a").is_err());
    }

    #[test]
    fn block_yaml_with_types_and_refusals() {
        let v =
            to_json("a: 1\nb: 0.55\nc: true\nd: null\ne: 'text'\nf:\n- 2\n- x\ng:\n  h: [1, 2]\n")
                .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": 1, "b": 0.55, "c": true, "d": null, "e": "text",
                               "f": [2, "x"], "g": {"h": [1, 2]}})
        );
        assert!(to_json("a: &x [1]\nb: *x\n").is_err());
        assert!(to_json("a: 1\na: 2\n").is_err());
        assert!(to_json(&"[".repeat(100)).is_err());
        assert!(to_json(&"[".repeat(1 << 20)).is_err());
        assert!(to_json(&"{a: ".repeat(1 << 16)).is_err());
        assert!(to_json("a: [1, 2").is_err());
    }
}
