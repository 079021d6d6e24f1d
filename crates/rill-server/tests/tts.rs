//! `POST /api/tts` end to end: an in-process server with the oracle's random-weight
//! voice speaks the recorded sentence as a WAV stream equal (to ±1 LSB) to NeMo's
//! recording, and refuses bad requests with the right status and reason.

mod common;

use common::*;
use rill_server::tts::TtsService;
use rill_stream::tts::{Voice, VoiceSource};

/// The oracle's random-weight voice (seed 0, f32 linears), as `rill speak
/// --random-weights` loads it.
fn voice() -> Voice {
    Voice::load(VoiceSource::Random(0), rill_kernels::WeightFormat::F32).unwrap()
}

/// A server with (or without) the voice; its address.
async fn tts_server(with_voice: bool) -> String {
    tts_server_with(with_voice.then(voice)).await
}

/// A server with this voice (or none); its address.
async fn tts_server_with(voice: Option<Voice>) -> String {
    tts_server_serving(|engine| voice.map(|v| TtsService::new(v, engine).unwrap()))
        .await
        .0
}

/// An engine for speech: two threads in two stages, as `rill serve` runs on 2 cores.
fn tts_engine() -> rill_stream::Engine {
    engine(2, rill_stream::Stages::TwoStage, 1)
}

/// A server with the speech service `service` makes on its engine (or none); its
/// address and the service.
async fn tts_server_serving(
    service: impl FnOnce(&rill_stream::Engine) -> Option<TtsService>,
) -> (String, Option<Arc<TtsService>>) {
    let engine = tts_engine();
    let service = service(&engine).map(Arc::new);
    let mut state = AppState::new(engine, serde_json::json!({}), ServerOptions::default());
    state.tts = service.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(rill_server::run(listener, Arc::new(state)));
    (format!("{addr}"), service)
}

/// POSTs `body` to /api/tts; returns (status, headers, de-chunked body).
async fn post(addr: &str, body: &str, extra_headers: &str) -> (u16, String, Vec<u8>) {
    http_post(addr, "/api/tts", body, extra_headers).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tts_streams_nemos_waveform() {
    let addr = tts_server(true).await;
    let (status, head, body) = post(
        &addr,
        r#"{"text": "Hello world, I read the rill docs.", "max_frames": 32}"#,
        "",
    )
    .await;
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: audio/wav"),
        "{head}"
    );
    assert_eq!(&body[..4], b"RIFF");
    assert_eq!(&body[8..16], b"WAVEfmt ");
    assert_eq!(u32::from_le_bytes(body[24..28].try_into().unwrap()), 22_050);
    assert_eq!(&body[36..40], b"data");
    let got: Vec<i16> = body[44..]
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    let z = rill_io::Npz::read(rill_testkit::require_magpie("nanocodec_decode.npz")).unwrap();
    let (_, audio) = z.f32("audio").unwrap();
    assert_eq!(got.len(), audio.len(), "samples");
    for (i, (&g, &a)) in got.iter().zip(&audio).enumerate() {
        let want = (a.clamp(-1.0, 1.0) * 32767.0).round() as i32;
        assert!(
            (g as i32 - want).abs() <= 1,
            "sample {i}: {g} vs NeMo {want}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tts_refuses_bad_requests_with_the_reason() {
    let addr = tts_server(true).await;
    for (body, headers, status, reason) in [
        (r#"{"txt": "Hi."}"#, "", 400, "unknown field"),
        (
            r#"{"text": "Hi.", "temperature": 1e30}"#,
            "",
            400,
            "temperature",
        ),
        (
            r#"{"text": "Hi.", "speaker": 9}"#,
            "",
            400,
            "speaker 9 is out of range",
        ),
        (r#"{"text": "Hi.", "top_k": 0}"#, "", 400, "top_k"),
        (
            r#"{"text": "Hi.", "max_frames": 100000}"#,
            "",
            400,
            "max_decoder_steps",
        ),
        ("not json", "", 400, "bad request"),
        (
            r#"{"text": "Hi."}"#,
            "Origin: http://evil.example\r\n",
            403,
            "pages from http://evil.example",
        ),
    ] {
        let (got, head, text) = post(&addr, body, headers).await;
        let text = String::from_utf8_lossy(&text);
        assert_eq!(got, status, "{body}: {head} {text}");
        assert!(text.contains(reason), "{body}: {text}");
    }
    let long = format!(r#"{{"text": "{}"}}"#, "a".repeat(20_000));
    let (got, _, _) = post(&addr, &long, "").await;
    assert_eq!(got, 413, "a 20 kB body is over the limit");

    let bare = tts_server(false).await;
    let (got, _, text) = post(&bare, r#"{"text": "Hi."}"#, "").await;
    assert_eq!(got, 404);
    assert!(String::from_utf8_lossy(&text).contains("--tts-checkpoint"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tts_speaks_the_requested_language_and_names_dropped_characters() {
    let all = Voice::load(
        VoiceSource::RandomAllLanguages(0),
        rill_kernels::WeightFormat::F32,
    )
    .unwrap();
    let engine = tts_engine();
    let service = TtsService::new(all, &engine).unwrap();
    let info = service.info();
    // German needs the checkpoint's dictionary, which random weights lack; Japanese
    // OpenJTalk's, which the machine may have (CI installs it).
    let japanese = rill_text::japanese::JapaneseFrontEnd::default_dir().is_some();
    let mut want = vec!["en", "es", "zh", "fr", "hi", "it", "vi"];
    if japanese {
        want.insert(3, "ja");
    }
    assert_eq!(info["languages"], serde_json::json!(want));
    assert_eq!(info["default_language"], "en");
    // The page's language menu and its random-weights note.
    assert_eq!(info["language_names"]["hi"], "Hindi");
    assert_eq!(
        info["language_names"].as_object().unwrap().len(),
        want.len()
    );
    assert_eq!(info["random_weights"], false);
    assert_eq!(
        service.with_random_weights(true).info()["random_weights"],
        true
    );
    let all = Voice::load(
        VoiceSource::RandomAllLanguages(0),
        rill_kernels::WeightFormat::F32,
    )
    .unwrap();
    let addr = tts_server_with(Some(all)).await;
    let body = r#"{"text": "नमस्ते Thank 4", "language": "hi", "max_frames": 2, "no_cfg": true, "normalize": false}"#;
    let (status, head, wav) = post(&addr, body, "").await;
    assert_eq!(status, 200, "{head}");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("x-rill-language: hi"), "{head}");
    assert!(
        head.contains("x-rill-dropped-characters: u+0034 u+0054"),
        "{head}"
    );
    assert_eq!(wav.len(), 44 + 2 * 1024 * 2);
    let (status, head, _) = post(
        &addr,
        r#"{"text": "Bonjour", "language": "fr", "max_frames": 1}"#,
        "",
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        !head.to_ascii_lowercase().contains("x-rill-dropped"),
        "{head}"
    );
    for (body, reason) in [
        (
            r#"{"text": "x", "language": "xx"}"#,
            "valid codes are en, es",
        ),
        (r#"{"text": "hallo", "language": "de"}"#, "de_nv230119.dict"),
        (
            r#"{"text": "你好", "language": "hi"}"#,
            "nothing the Hindi tokenizer",
        ),
    ] {
        let (status, _, text) = post(&addr, body, "").await;
        let text = String::from_utf8_lossy(&text);
        assert_eq!(status, 400, "{body}: {text}");
        assert!(text.contains(reason), "{body}: {text}");
    }
    // Japanese is spoken where the machine has OpenJTalk's dictionary (CI installs
    // it), and otherwise refused saying how to get it.
    let body = r#"{"text": "こんにちは", "language": "ja", "max_frames": 1, "no_cfg": true}"#;
    let (status, _, text) = post(&addr, body, "").await;
    let text = String::from_utf8_lossy(&text);
    if rill_text::japanese::JapaneseFrontEnd::default_dir().is_some() {
        assert_eq!(status, 200, "{text}");
    } else {
        assert_eq!(status, 400, "{text}");
        assert!(text.contains("open-jtalk-mecab-naist-jdic"), "{text}");
    }
    // The oracle's English-only voice has no French table.
    let english = tts_server(true).await;
    let (status, _, text) = post(&english, r#"{"text": "Bonjour", "language": "fr"}"#, "").await;
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&text).contains("no French (fr) text table"));
}

/// The speech queue: a request behind a running synthesis waits (told its place
/// in `x-rill-queue-position`, counted by `/ready`) and is spoken when the running
/// one ends; one more than the queue holds is refused with 503 and the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tts_requests_queue_behind_the_running_one() {
    let (addr, service) =
        tts_server_serving(|engine| Some(TtsService::new(voice(), engine).unwrap().with_queue(1)))
            .await;
    let service = service.unwrap();
    // The running synthesis, held here for as long as the test needs it.
    let running = service.queue().join().unwrap();
    assert_eq!(running.ahead, 0);
    let body = r#"{"text": "Hello world.", "max_frames": 8}"#;
    let waiting = {
        let addr = addr.clone();
        tokio::spawn(async move { post(&addr, body, "").await })
    };
    let mut ready = serde_json::Value::Null;
    // A hang guard of 60 s, not a pace: the request only has to be parsed and queued.
    for _ in 0..2400 {
        ready = serde_json::from_str(&http_get_status(&addr, "/ready").await.1).unwrap();
        if ready["speech_waiting"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(ready["speech_waiting"], 1, "{ready}");
    assert_eq!(ready["speech_busy"], true, "{ready}");
    // The queue (one place) is full: refused with the reason.
    let (status, head, refused) = post(&addr, body, "").await;
    assert_eq!(status, 503, "{head}");
    assert!(head.to_ascii_lowercase().contains("retry-after"), "{head}");
    let why = String::from_utf8_lossy(&refused);
    assert!(why.contains("waiting (the queue's limit)"), "{why}");
    assert!(
        !waiting.is_finished(),
        "spoken before the running one ended"
    );
    drop(running);
    let (status, head, wav) = tokio::time::timeout(Duration::from_secs(120), waiting)
        .await
        .expect("spoken once the running one ended")
        .unwrap();
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("x-rill-queue-position: 1"),
        "{head}"
    );
    assert_eq!(&wav[..4], b"RIFF");
    assert!(wav.len() > 44, "no audio after the header");
    assert!(!service.busy());
}
