//! The Wyoming server (`rill serve --wyoming`) on the oracle's random-weight voice:
//! `describe` lists the checkpoint's speakers; `synthesize` streams `audio-start`,
//! chunks and `audio-stop` whose PCM is `/api/tts`'s for the same text and speaker;
//! garbage, oversized headers, unknown voices and languages get one `error` event
//! and the connection closes. (The PyPI `wyoming` client, as Home Assistant uses
//! it, is tested against `rill serve` in CI: `tests/wyoming_client/`.)

mod common;

use common::*;
use rill_server::tts::TtsService;
use rill_server::wyoming::{self, Event};
use rill_stream::tts::{Voice, VoiceSource};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const FRAMES: usize = 8;

/// (HTTP address, Wyoming address), one voice behind both.
async fn servers() -> (String, String) {
    let engine = engine(2, rill_stream::Stages::TwoStage, 1);
    let mut voice = Voice::load(VoiceSource::Random(0), rill_kernels::WeightFormat::F32).unwrap();
    // Random weights never say EOS: 8 frames per request keep it short.
    voice.params.max_decoder_steps = FRAMES;
    let service = TtsService::new(voice, &engine).unwrap();
    let state =
        AppState::new(engine, serde_json::json!({}), ServerOptions::default()).with_tts(service);
    let service = state.tts.clone().unwrap();
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let wy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addrs = (
        http.local_addr().unwrap().to_string(),
        wy.local_addr().unwrap().to_string(),
    );
    tokio::spawn(rill_server::run(http, Arc::new(state)));
    tokio::spawn(wyoming::serve(wy, service));
    addrs
}

/// Sends `bytes`, then reads events until the server closes the connection (or
/// `until` is seen, when given).
async fn exchange(addr: &str, bytes: &[u8], until: Option<&str>) -> (Vec<Event>, bool) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut buf = Vec::new();
    let mut events = Vec::new();
    let mut chunk = vec![0u8; 65536];
    loop {
        while let Some((e, used)) = wyoming::read_event(&buf).expect("the server's framing") {
            buf.drain(..used);
            let done = until == Some(e.kind.as_str());
            events.push(e);
            if done {
                return (events, false);
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(300), s.read(&mut chunk))
            .await
            .expect("an answer within 300 s")
            .unwrap_or(0);
        if n == 0 {
            assert!(buf.is_empty(), "a partial event before the close");
            return (events, true);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn synthesize(data: serde_json::Value) -> Vec<u8> {
    Event::new("synthesize", data).encode()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_synthesize_and_errors() {
    let (http, addr) = servers().await;

    // describe → info, connection kept open.
    let (events, _) = exchange(&addr, b"{\"type\":\"describe\"}\n", Some("info")).await;
    assert_eq!(events.len(), 1);
    let info = &events[0].data;
    let program = &info["tts"][0];
    assert_eq!(program["name"], "rill");
    assert_eq!(program["installed"], true);
    let voices = program["voices"].as_array().unwrap();
    assert!(!voices.is_empty());
    assert_eq!(voices[0]["name"], "0");
    assert_eq!(voices[0]["languages"], serde_json::json!(["en"]));

    // synthesize → audio-start, chunks, audio-stop: /api/tts's PCM.
    let text = "It costs $3.50.";
    let (events, _) = exchange(
        &addr,
        &synthesize(serde_json::json!({"text": text, "voice": {"name": "1"}})),
        Some("audio-stop"),
    )
    .await;
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"audio-start"), "{kinds:?}");
    assert_eq!(events[0].data["rate"], 22050);
    assert_eq!(events[0].data["width"], 2);
    assert_eq!(events[0].data["channels"], 1);
    assert!(kinds[1..kinds.len() - 1]
        .iter()
        .all(|k| *k == "audio-chunk"));
    let pcm: Vec<u8> = events.iter().flat_map(|e| e.payload.clone()).collect();
    assert_eq!(pcm.len(), FRAMES * 1024 * 2);
    let (status, _, wav) = http_post(
        &http,
        "/api/tts",
        &format!(r#"{{"text": "{text}", "speaker": 1, "seed": 0}}"#),
        "",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(pcm, wav[44..], "the same audio as /api/tts");

    // The streaming form: gathered, spoken at synthesize-stop, then
    // synthesize-stopped; the compatibility synthesize inside is ignored.
    let mut wire = Event::new(
        "synthesize-start",
        serde_json::json!({"voice": {"name": "1"}}),
    )
    .encode();
    wire.extend(Event::new("synthesize-chunk", serde_json::json!({"text": "It costs "})).encode());
    wire.extend(Event::new("synthesize-chunk", serde_json::json!({"text": "$3.50."})).encode());
    wire.extend(synthesize(serde_json::json!({"text": text})));
    wire.extend(Event::new("synthesize-stop", serde_json::json!({})).encode());
    let (events, _) = exchange(&addr, &wire, Some("synthesize-stopped")).await;
    let streamed: Vec<u8> = events.iter().flat_map(|e| e.payload.clone()).collect();
    assert_eq!(streamed, pcm);
    assert_eq!(events[events.len() - 2].kind, "audio-stop");

    // Errors: one error event, then the server closes.
    let mut huge = b"{\"type\":\"describe\",\"pad\":\"".to_vec();
    huge.resize(wyoming::event::MAX_HEADER_BYTES + 10, b'a');
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"hello there\n".to_vec(), "not a JSON object"),
        (
            b"{\"type\":\"synthesize\",\"data_length\":99999999}\n".to_vec(),
            "over the limit",
        ),
        (
            b"{\"type\":\"synthesize\",\"data_length\":4}\n\xff\xfe\xfd\xfc".to_vec(),
            "not JSON",
        ),
        (huge, "no header line ends"),
        (
            synthesize(serde_json::json!({"text": "Hi.", "voice": {"name": "Alloy"}})),
            "not a voice",
        ),
        (
            synthesize(serde_json::json!({"text": "Hi.", "voice": {"language": "de"}})),
            "not spoken",
        ),
        (
            synthesize(serde_json::json!({"text": "Hi.", "voice": {"language": "xx"}})),
            "not spoken",
        ),
        (synthesize(serde_json::json!({"text": "  "})), "empty"),
        (synthesize(serde_json::json!({"voice": {}})), "no \"text\""),
        (
            synthesize(serde_json::json!({"text": "x".repeat(5000)})),
            "at most 4000",
        ),
    ];
    for (wire, says) in cases {
        let (events, closed) = exchange(&addr, &wire, None).await;
        assert!(closed);
        assert_eq!(events.len(), 1, "{says}: {events:?}");
        assert_eq!(events[0].kind, "error");
        let text = events[0].data["text"].as_str().unwrap();
        assert!(text.contains(says), "{says}: {text}");
    }

    // The server still speaks after all that.
    let (events, _) = exchange(
        &addr,
        &synthesize(
            serde_json::json!({"text": "Hi.", "voice": {"speaker": "0", "language": "en_US"}}),
        ),
        Some("audio-stop"),
    )
    .await;
    assert_eq!(events[0].kind, "audio-start");
}
