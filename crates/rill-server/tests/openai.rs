//! OpenAI's speech API (`POST /v1/audio/speech`, `GET /v1/models`) on the oracle's
//! random-weight voice: `wav` is `/api/tts`'s stream for the same text, speaker and
//! seed; `pcm` is that audio resampled to 24 kHz as it streams (equal to
//! resampling the whole waveform at once); bad requests get OpenAI's JSON errors.
//! (The official `openai` Python client is tested against `rill serve` in CI:
//! `crates/rill-server/tests/openai_client/`.)

mod common;

use common::*;
use rill_server::tts::TtsService;
use rill_stream::tts::{Voice, VoiceSource};

async fn server(with_voice: bool) -> String {
    let engine = engine(2, rill_stream::Stages::TwoStage, 1);
    let mut state = AppState::new(engine, serde_json::json!({}), ServerOptions::default());
    if with_voice {
        let mut voice =
            Voice::load(VoiceSource::Random(0), rill_kernels::WeightFormat::F32).unwrap();
        // Random weights never say EOS: 40 frames (1.9 s) per request keep it short.
        voice.params.max_decoder_steps = 40;
        let service = TtsService::new(voice, &state.engine).unwrap();
        state = state.with_tts(service);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(rill_server::run(listener, Arc::new(state)));
    format!("{addr}")
}

fn pcm16(bytes: &[u8]) -> Vec<i16> {
    bytes
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speech_is_the_tts_stream_and_pcm_is_it_at_24_khz() {
    let addr = server(true).await;
    let text = "Hello there.";
    let (status, head, wav) = http_post(
        &addr,
        "/v1/audio/speech",
        &format!(r#"{{"model": "magpie-tts-multilingual", "input": "{text}", "voice": "0", "response_format": "wav"}}"#),
        "",
    )
    .await;
    assert_eq!(status, 200, "{head}\n{}", String::from_utf8_lossy(&wav));
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: audio/wav"),
        "{head}"
    );
    let (status, _, native) = http_post(
        &addr,
        "/api/tts",
        &format!(r#"{{"text": "{text}", "speaker": 0, "seed": 0}}"#),
        "",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(wav, native, "the same stream as /api/tts");
    assert_eq!(&wav[..4], b"RIFF");
    let samples = pcm16(&wav[44..]);
    assert_eq!(samples.len(), 40 * 1024);

    // OpenAI's default model name and a speaker index as a number; pcm at 24 kHz.
    let (status, head, pcm) = http_post(
        &addr,
        "/v1/audio/speech",
        &format!(
            r#"{{"model": "tts-1", "input": "{text}", "voice": 0, "response_format": "pcm"}}"#
        ),
        "",
    )
    .await;
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: audio/pcm"),
        "{head}"
    );
    let got = pcm16(&pcm);
    let floats: Vec<f32> = samples.iter().map(|&s| s as f32 / 32767.0).collect();
    let want = rill_io::resample(&floats, 22_050, 24_000, 1).unwrap();
    assert_eq!(got.len(), want.len(), "round(n · 24000 / 22050) samples");
    // Loud random-weight speech clips: the stream's 16-bit output is clipped as
    // the WAV's is.
    let worst = got
        .iter()
        .zip(&want)
        .map(|(&g, &w)| (i32::from(g) - i32::from(rill_nanocodec::float_to_int16(w))).abs())
        .max()
        .unwrap_or(0);
    assert!(worst <= 1, "worst difference {worst} LSB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_lists_the_voice_and_bad_requests_get_openai_errors() {
    let addr = server(true).await;
    let models: serde_json::Value =
        serde_json::from_str(&http_get(&addr, "/v1/models").await).unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "magpie-tts-multilingual");
    assert_eq!(models["data"][0]["voices"].as_array().unwrap().len(), 5);
    let ok = r#""model": "tts-1", "input": "Hi.", "voice": "0""#;
    for (body, status, param, needle) in [
        (
            format!("{{{ok}, \"voice\": \"alloy\"}}"),
            400,
            "body",
            "duplicate field",
        ),
        (
            r#"{"model": "tts-1", "input": "Hi.", "voice": "alloy"}"#.to_string(),
            400,
            "voice",
            "voices: 0, 1, 2, 3, 4",
        ),
        (
            r#"{"model": "whisper-1", "input": "Hi.", "voice": "0"}"#.to_string(),
            400,
            "model",
            "GET /v1/models",
        ),
        (
            format!("{{{ok}, \"response_format\": \"mp3\"}}"),
            400,
            "response_format",
            "use wav",
        ),
        (
            format!("{{{ok}, \"speed\": 1.5}}"),
            400,
            "speed",
            "no rate control",
        ),
        (
            format!("{{{ok}, \"language\": \"xx\"}}"),
            400,
            "language",
            "valid codes",
        ),
        (
            format!("{{{ok}, \"language\": \"zh\"}}"),
            400,
            "input",
            "no Mandarin (zh) text table",
        ),
        (
            format!("{{{ok}, \"instructions\": \"cheerful\"}}"),
            400,
            "body",
            "unknown field `instructions`",
        ),
        (
            r#"{"model": "tts-1", "input": "  ", "voice": "0"}"#.to_string(),
            400,
            "input",
            "empty",
        ),
        (
            format!(
                r#"{{"model": "tts-1", "input": "{}", "voice": "0"}}"#,
                "a".repeat(4097)
            ),
            400,
            "input",
            "at most 4096",
        ),
        ("not json".to_string(), 400, "body", "not a speech request"),
        (
            format!(
                r#"{{"model": "tts-1", "input": "{}", "voice": "0"}}"#,
                "a ".repeat(20_000)
            ),
            413,
            "",
            "at most 16384",
        ),
    ] {
        let (s, head, text) = http_post(&addr, "/v1/audio/speech", &body, "").await;
        let text = String::from_utf8_lossy(&text);
        assert_eq!(s, status, "{body:.80}: {text}");
        assert!(
            head.to_ascii_lowercase().contains("application/json"),
            "{head}"
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains(needle), "{body:.80}: {msg}");
        if !param.is_empty() {
            assert_eq!(v["error"]["param"], param, "{body:.80}");
        }
    }
    // No voice loaded: 404 with what to do; no models listed.
    let plain = server(false).await;
    let (s, _, text) = http_post(&plain, "/v1/audio/speech", &format!("{{{ok}}}"), "").await;
    assert_eq!(s, 404);
    assert!(String::from_utf8_lossy(&text).contains("--tts-checkpoint"));
    let models: serde_json::Value =
        serde_json::from_str(&http_get(&plain, "/v1/models").await).unwrap();
    assert_eq!(models["data"].as_array().unwrap().len(), 0);
}
