//! Style prompts through the server: a clip uploaded over HTTP and a weighted blend
//! of texts and that clip sent with `start` give the MusicCoCa oracle's recorded
//! tokens (random-weight MusicCoCa of seed 1 and its tiny tokenizer = the gate
//! recording's); a prompt change reaches a playing stream without a gap in its
//! frames; bad prompts and uploads are one clear error each.

mod common;

use common::*;
use rill_io::Npz;
use rill_musiccoca::{Mapper, StyleModel};
use rill_server::style::StyleService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn gate() -> (Npz, serde_json::Value) {
    let root = rill_testkit::repo_root().join("testdata/musiccoca");
    let z = Npz::read(root.join("gate_seed1.npz"))
        .expect("testdata/musiccoca/gate_seed1.npz (see testdata/musiccoca/README.md)");
    let j = std::fs::read_to_string(root.join("gate_seed1.json")).unwrap();
    (z, serde_json::from_str(&j).unwrap())
}

/// A server whose MusicCoCa is the gate recording's (mapper seed 0).
async fn style_server(default: Option<[u16; 12]>) -> String {
    let dir = rill_musiccoca::synth::random_assets_dir(&rill_testkit::rill_cache(), 1).unwrap();
    let model = StyleModel::load(&dir, rill_kernels::isa::active()).unwrap();
    let service = StyleService::start(model, Mapper::Seed(0)).unwrap();
    let engine = engine(2, rill_stream::Stages::TwoStage, 1);
    let initial = default
        .map(|c| vec![rill_stream::Control::Style(Some(c))])
        .unwrap_or_default();
    let state = AppState::new(engine, serde_json::json!({}), ServerOptions::default())
        .with_style(service)
        .with_initial(initial);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(rill_server::run(listener, Arc::new(state)));
    format!("{addr}")
}

/// POSTs `body` to `path`; returns (status, body).
async fn post(addr: &str, path: &str, body: &[u8], content_type: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(120), s.read_to_end(&mut raw))
        .await
        .expect("response within 120 s")
        .unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
    (status, body.unwrap_or_default())
}

/// 16 kHz mono f32 samples as a WAV file (f32, so nothing is lost).
fn wav(samples: &[f32]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::new(&mut out, spec).unwrap();
    for &s in samples {
        w.write_sample(s).unwrap();
    }
    w.finalize().unwrap();
    out.into_inner()
}

/// The next `style` reply, skipping frames and status reports; an error fails.
async fn next_style(ws: &mut Ws) -> serde_json::Value {
    loop {
        match next(ws, 60).await {
            Err(j) if j["type"] == "style" => return j,
            Err(j) if j["type"] == "error" => panic!("{j}"),
            _ => continue,
        }
    }
}

fn codes(v: &serde_json::Value) -> Vec<i64> {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clips_and_blends_give_the_recorded_tokens() {
    let (z, g) = gate();
    let addr = style_server(None).await;
    let info: serde_json::Value =
        serde_json::from_str(&http_get(&addr, "/api/info").await).unwrap();
    assert_eq!(info["protocol"], 2);
    assert_eq!(info["style"]["max_prompts"], 6);

    // The clip alone: the recording's audio tokens.
    let (_, wave) = z.f32("audio_waveform").unwrap();
    let (status, body) = post(&addr, "/api/clips", &wav(&wave), "audio/wav").await;
    assert_eq!(status, 200, "{body}");
    let clip: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(codes(&clip["codes"]), codes(&g["audio_tokens"]));
    let id = clip["id"].as_str().unwrap().to_string();

    // The recorded blend (texts mapped with seed 0, the clip as it is). Its weight −1
    // is not positive, so it counts as 0 (the protocol takes weights ≥ 0).
    let prompts: Vec<String> = serde_json::from_value(g["prompts"].clone()).unwrap();
    let (_, members) = z.i64("blend_members").unwrap();
    let (_, weights) = z.f32("blend_weights_raw").unwrap();
    let blend: Vec<serde_json::Value> = members
        .iter()
        .zip(&weights)
        .map(|(&i, &w)| {
            let w = w.max(0.0);
            if i < 0 {
                serde_json::json!({"clip": id, "weight": w})
            } else {
                serde_json::json!({"text": prompts[i as usize], "weight": w})
            }
        })
        .collect();
    let mut ws = connect(&addr).await;
    send(
        &mut ws,
        serde_json::json!({"type": "start", "prompts": blend, "seed": 5}),
    )
    .await;
    let started = next_json(&mut ws).await;
    assert_eq!(started["type"], "started", "{started}");
    let style = next_json(&mut ws).await;
    assert_eq!(style["type"], "style", "{style}");
    assert_eq!(codes(&style["codes"]), codes(&g["blend_mapped_tokens"]));
    clean_frame(&mut ws).await;

    // A new prompt while playing: its (mapped) tokens, and the frames go on.
    let p = "Deep House, 124 BPM";
    send(
        &mut ws,
        serde_json::json!({"type": "control", "prompts": [{"text": p}]}),
    )
    .await;
    let style = next_style(&mut ws).await;
    assert_eq!(codes(&style["codes"]), codes(&g["mapper_tokens_seed0"][p]));
    assert!(style.get("warning").is_none(), "{style}");
    clean_frame(&mut ws).await;

    // A prompt longer than MusicCoCa reads: used, with a warning.
    let long = "rock ".repeat(200);
    send(
        &mut ws,
        serde_json::json!({"type": "control", "prompts": [{"text": long}]}),
    )
    .await;
    let style = next_style(&mut ws).await;
    let w = style["warning"].as_str().unwrap_or_default();
    assert!(w.contains("reads the first 127"), "{style}");

    // Bad prompts: one error each, the stream plays on.
    for (bad, code, says) in [
        (
            serde_json::json!([{"clip": "0000000000000000"}]),
            "style",
            "upload it again",
        ),
        (serde_json::json!([{"text": ""}]), "bad_request", "empty"),
        (
            serde_json::json!([{"text": "a", "weight": 0}]),
            "bad_request",
            "weights",
        ),
    ] {
        send(
            &mut ws,
            serde_json::json!({"type": "control", "prompts": bad}),
        )
        .await;
        let e = next_error(&mut ws).await;
        assert_eq!(e["code"], code, "{e}");
        assert!(e["message"].as_str().unwrap().contains(says), "{e}");
    }
    clean_frame(&mut ws).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_uploads_and_a_server_without_musiccoca() {
    let addr = style_server(Some([1; 12])).await;
    let info: serde_json::Value =
        serde_json::from_str(&http_get(&addr, "/api/info").await).unwrap();
    assert_eq!(codes(&info["default_style_codes"]), vec![1; 12]);
    for (body, status, says) in [
        (&b""[..], 400, "no body"),
        (
            &b"this is not audio at all"[..],
            400,
            "not a usable audio clip",
        ),
        (
            &b"RIFF\x10\x00\x00\x00WAVEfmt "[..],
            400,
            "not a usable audio clip",
        ),
    ] {
        let (s, text) = post(&addr, "/api/clips", body, "application/octet-stream").await;
        assert_eq!(s, status, "{text}");
        assert!(text.contains(says), "{text}");
    }
    let (s, _) = post(
        &addr,
        "/api/clips",
        &vec![0u8; rill_server::style::MAX_CLIP_BYTES + 1],
        "audio/wav",
    )
    .await;
    assert_eq!(s, 413, "an upload over the limit");

    // Without MusicCoCa: prompts are refused, codes still work.
    let plain = server(1).await;
    let (s, text) = post(&plain, "/api/clips", b"RIFF", "audio/wav").await;
    assert_eq!(s, 404);
    assert!(text.contains("--musiccoca"), "{text}");
    let mut ws = connect(&plain).await;
    send(
        &mut ws,
        serde_json::json!({"type": "start", "prompts": [{"text": "jazz"}]}),
    )
    .await;
    let e = next_error(&mut ws).await;
    assert_eq!(e["code"], "style", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("style_codes"),
        "{e}"
    );
}
