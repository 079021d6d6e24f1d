//! The protocol's parser and messages.
use super::*;

#[test]
fn messages_round_trip() {
    let start = serde_json::to_string(&Wire::Start(WireControls::default())).unwrap();
    assert_eq!(start, r#"{"type":"start"}"#);
    let masked = Wire::Control(WireControls {
        style_codes: Some(Value::Null),
        seed: Some(7.into()),
        ..WireControls::default()
    });
    let text = serde_json::to_string(&masked).unwrap();
    assert_eq!(text, r#"{"type":"control","style_codes":null,"seed":7}"#);
    assert_eq!(serde_json::from_str::<Wire>(&text).unwrap(), masked);
    assert_eq!(
        parse(&start).unwrap(),
        ClientMsg::Start {
            seed: None,
            controls: vec![],
            prompts: None
        }
    );
    for m in [
        status(0.51234, 812.4, 2, 90),
        started(7),
        busy("all streams in use", 2, 2),
        error("bad_request", "no"),
    ] {
        let back: ServerMsg = serde_json::from_str(&m).unwrap();
        assert_eq!(back.to_text(), m);
    }
    let v: Value = serde_json::from_str(&status(0.51234, 812.4, 2, 90)).unwrap();
    assert_eq!(v["rtf"], 0.512);
    assert_eq!(v["buffer_ms"], 812.0);
}

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
            ],
            prompts: None
        }
    );
    assert_eq!(
        parse(r#"{"type":"control","notes":[60,64],"top_k":100}"#).unwrap(),
        ClientMsg::Control {
            controls: vec![Control::HeldNotes(vec![60, 64]), Control::TopK(100)],
            prompts: None
        }
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
        r#"{"type":"stop","notes":[60]}"#,
        r#"{"type":"reset","seed":1}"#,
        r#"{"notes":[60]}"#,
        r#"{"type":7}"#,
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
    assert!(parse(r#"{"type":"dance"}"#).unwrap_err().contains("start"));
    assert!(parse(r#"{"seed":1}"#)
        .unwrap_err()
        .contains("missing \"type\""));
    let e = parse(r#"{"type":"control","volume":3}"#).unwrap_err();
    assert!(e.contains("volume") && e.contains("style_codes"), "{e}");
}

fn error_of(msg: serde_json::Value) -> String {
    parse(&msg.to_string()).expect_err(&msg.to_string())
}

#[test]
fn notes_are_bounded() {
    let all: Vec<u8> = (0..=127).collect();
    assert_eq!(
        parse(&serde_json::json!({"type": "control", "notes": all}).to_string()).unwrap(),
        ClientMsg::Control {
            controls: vec![Control::HeldNotes(all.clone())],
            prompts: None
        }
    );
    let mut too_many: Vec<u8> = all.clone();
    too_many.push(60);
    let e = error_of(serde_json::json!({"type": "control", "notes": too_many}));
    assert!(e.contains("at most 128") && e.contains("129"), "{e}");
    for (bad, shown) in [
        (serde_json::json!(200), "200"),
        (serde_json::json!(-1), "-1"),
        (serde_json::json!(1.5), "1.5"),
        (serde_json::json!(60.0), "60.0"),
        (serde_json::json!("60"), "\"60\""),
        (serde_json::json!(null), "null"),
    ] {
        let e = error_of(serde_json::json!({"type": "control", "notes": [60, bad]}));
        assert!(
            e.contains("notes[1]") && e.contains("0..=127") && e.ends_with(shown),
            "{e}"
        );
    }
    assert!(error_of(serde_json::json!({"type": "control", "notes": 60})).contains("array"));
}

#[test]
fn numbers_are_finite_and_in_range() {
    for (key, bad) in [
        ("temperature", serde_json::json!(1e300)),
        ("temperature", serde_json::json!(-0.5)),
        ("temperature", serde_json::json!(10.5)),
        ("temperature", serde_json::json!("NaN")),
        ("temperature", serde_json::json!(null)),
        ("cfg_musiccoca", serde_json::json!(1e300)),
        ("cfg_notes", serde_json::json!(-1.5)),
        ("cfg_drums", serde_json::json!(7.01)),
        ("cfg_drums", serde_json::json!(true)),
        ("top_k", serde_json::json!(0)),
        ("top_k", serde_json::json!(12295)),
        ("top_k", serde_json::json!(40.5)),
        ("top_k", serde_json::json!(-3)),
        ("seed", serde_json::json!(-1)),
        ("seed", serde_json::json!(1.5)),
        ("seed", serde_json::json!(1e20)),
    ] {
        let e = error_of(serde_json::json!({"type": "control", key: bad}));
        assert!(e.starts_with(key) && e.contains("..="), "{key}: {e}");
    }
    // JSON has no NaN or infinity; they are not JSON at all.
    for text in [
        r#"{"type":"control","temperature":NaN}"#,
        r#"{"type":"control","temperature":Infinity}"#,
        r#"{"type":"control","temperature":1e400}"#,
    ] {
        assert!(parse(text).is_err(), "{text}");
    }
    let e = error_of(serde_json::json!({"type": "start", "seed": "x"}));
    assert!(
        e.contains("seed") && e.contains("18446744073709551615"),
        "{e}"
    );
    assert_eq!(
        parse(r#"{"type":"control","temperature":0,"cfg_notes":-1,"cfg_drums":7,"top_k":12294,"seed":18446744073709551615}"#)
            .unwrap(),
        ClientMsg::Control {
            controls: vec![
            Control::Temperature(0.0),
            Control::TopK(12294),
            Control::CfgNotes(-1.0),
            Control::CfgDrums(7.0),
            Control::Seed(u64::MAX),
        ],
            prompts: None
        }
    );
}

#[test]
fn long_values_are_cut_short_in_errors() {
    let long = "x".repeat(10_000);
    let e = error_of(serde_json::json!({"type": "control", "drums": long}));
    assert!(e.len() < 200, "{e}");
    let e = error_of(serde_json::json!({"type": "control", long.clone(): 1}));
    assert!(e.len() < 200, "{e}");
    assert!(parse(&" ".repeat(MAX_MESSAGE_BYTES + 1))
        .unwrap_err()
        .contains("limit"));
}

#[test]
fn prompts_ride_on_start_and_control() {
    let m = parse(r#"{"type":"start","prompts":[{"text":"disco funk"}],"seed":3}"#).unwrap();
    assert_eq!(
        m,
        ClientMsg::Start {
            seed: Some(3),
            controls: vec![],
            prompts: Some(vec![PromptSpec {
                source: PromptSource::Text("disco funk".into()),
                weight: 1.0
            }])
        }
    );
    let m = parse(r#"{"type":"control","prompts":[{"clip":"ab","weight":2}],"top_k":5}"#).unwrap();
    assert_eq!(
        m,
        ClientMsg::Control {
            controls: vec![Control::TopK(5)],
            prompts: Some(vec![PromptSpec {
                source: PromptSource::Clip("ab".into()),
                weight: 2.0
            }])
        }
    );
    let e = parse(r#"{"type":"control","prompts":[{"text":"a"}],"style_codes":null}"#).unwrap_err();
    assert!(e.contains("either style_codes or prompts"), "{e}");
    let e = parse(r#"{"type":"control","prompts":[{"text":""}]}"#).unwrap_err();
    assert!(e.contains("empty"), "{e}");
    let back: ServerMsg = serde_json::from_str(&style(&[7; 12], 41.6, None)).unwrap();
    assert_eq!(
        back,
        ServerMsg::Style {
            codes: vec![7; 12],
            ms: 42.0,
            warning: None
        }
    );
}

#[test]
fn style_levels_are_6_or_12() {
    assert_eq!(
        parse(r#"{"type":"control","style_levels":6}"#).unwrap(),
        ClientMsg::Control {
            controls: vec![Control::StyleLevels(StyleLevels::Coarse6)],
            prompts: None
        }
    );
    for bad in ["7", "0", "\"6\"", "null", "12.5"] {
        let e = parse(&format!(r#"{{"type":"control","style_levels":{bad}}}"#)).unwrap_err();
        assert!(e.contains("12 (every MusicCoCa level"), "{bad}: {e}");
    }
}
