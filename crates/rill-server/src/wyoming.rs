//! The Wyoming protocol (Home Assistant's way to talk to Piper and every local
//! voice service) for rill's voice: `rill serve --wyoming HOST:PORT`.
//!
//! A plain TCP server; each connection is a sequence of events ([`event`]):
//!
//! * `describe` → `info`: one text-to-speech program, `rill`, whose voices are the
//!   checkpoint's speakers (their names, else `0`, `1`, …), each speaking every
//!   language the loaded voice speaks.
//! * `synthesize` `{"text", "voice": {"name", "language", "speaker"}}` →
//!   `audio-start` (22050 Hz, 2 bytes, mono), one `audio-chunk` per 46 ms frame as
//!   it is made, `audio-stop`. `voice.name` (or, without a name, `voice.speaker`)
//!   is a speaker name in any case or an index; `voice.language` a language code
//!   (`de`, `de_DE`, `German`), English when absent. Numbers are read aloud, as at
//!   `/api/tts`. Requests of every door share one queue ([`crate::speech_queue`]:
//!   one synthesis at a time, a bounded number waiting, below the music in
//!   priority); one that finds the queue full gets an `error` event with code `busy`.
//! * `synthesize-start`, `synthesize-chunk`s, `synthesize-stop` (the streaming
//!   form): the chunks' text is gathered and spoken at `synthesize-stop`, then
//!   `synthesize-stopped`; a `synthesize` inside such a stream (sent for older
//!   servers) is ignored. `info` says `supports_synthesize_streaming: false`, so
//!   Home Assistant sends plain `synthesize`, which starts audio as early.
//! * `ping` → `pong`; other events are ignored, as Wyoming servers do.
//!
//! Anything wrong — a header that is not JSON, lengths over the limits, an unknown
//! voice or language, text over [`MAX_TTS_TEXT_CHARS`] — gets one `error` event
//! (`{"text", "code"}`) with the reason, and the connection closes (so a client
//! waiting for `audio-stop` learns at once). At most [`MAX_CONNECTIONS`] are open;
//! one silent for [`IDLE_TIMEOUT`] is closed.

pub mod event;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub use event::{parse_header, read_event, Event};

use crate::tts::{self, StartError, TtsService, MAX_TTS_TEXT_CHARS};

/// Most Wyoming connections open at once.
pub const MAX_CONNECTIONS: usize = 32;
/// A connection that sends nothing for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// A client that takes no audio for this long is dropped (which frees the voice).
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 8192;

/// A checked `synthesize` request.
#[derive(Debug, Clone)]
pub struct Synthesis {
    pub text: String,
    pub options: rill_stream::tts::SpeakOptions,
}

/// The speaker index of `v` (a name in any case, or an index) among `names`.
fn speaker(names: &[String], v: &Value, field: &str) -> Result<usize, String> {
    let index = match v {
        Value::String(s) => names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(s.trim()))
            .or_else(|| s.trim().parse::<usize>().ok()),
        Value::Number(n) => n.as_u64().and_then(|i| usize::try_from(i).ok()),
        _ => None,
    };
    match index {
        Some(i) if i < names.len() => Ok(i),
        _ => Err(format!(
            "{field} {v} is not a voice of this server; voices: {}",
            names.join(", ")
        )),
    }
}

/// The language `code` names (`de`, `de_DE`, `de-DE`, `German`), if `languages`
/// holds it.
fn language(code: &str, languages: &[rill_text::Language]) -> Result<rill_text::Language, String> {
    let parsed = code.parse::<rill_text::Language>().or_else(|e| {
        code.split(['_', '-'])
            .next()
            .filter(|p| p.len() < code.len())
            .and_then(|p| p.parse().ok())
            .ok_or(e)
    });
    let codes: Vec<&str> = languages.iter().map(|l| l.code()).collect();
    match parsed {
        Ok(l) if languages.contains(&l) => Ok(l),
        _ => Err(format!(
            "language {code:?} is not spoken by this voice; languages: {}",
            codes.join(", ")
        )),
    }
}

/// Checks a `synthesize` event's data (or a streamed request's gathered `text` and
/// `voice`) against the voice names and the languages of the loaded voice.
pub fn parse_synthesize(
    data: &Map<String, Value>,
    voices: &[String],
    languages: &[rill_text::Language],
) -> Result<Synthesis, String> {
    let text = match data.get("text") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err("synthesize has no \"text\" string".into()),
    };
    let chars = text.chars().count();
    if chars > MAX_TTS_TEXT_CHARS {
        return Err(format!(
            "the text is {chars} characters; at most {MAX_TTS_TEXT_CHARS} per request"
        ));
    }
    if text.trim().is_empty() {
        return Err("the text is empty: give some words to speak".into());
    }
    match data.get("text_format") {
        None | Some(Value::Null) => {}
        Some(Value::String(f)) if f == "text" => {}
        Some(f) => return Err(format!("text_format {f} is not served; send plain text")),
    }
    let voice = match data.get("voice") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err("\"voice\" is not an object".into()),
    };
    let present = |k: &str| voice.get(k).filter(|v| !v.is_null());
    let speaker = match (present("name"), present("speaker")) {
        (Some(name), _) => speaker(voices, name, "voice")?,
        (None, Some(s)) => speaker(voices, s, "speaker")?,
        (None, None) => 0,
    };
    let language = match present("language") {
        None => language("en", languages)?,
        Some(Value::String(code)) => language(code, languages)?,
        Some(v) => return Err(format!("language {v} is not a language code")),
    };
    let options = rill_stream::tts::SpeakOptions {
        language,
        speaker,
        normalize: true,
        ..Default::default()
    };
    Ok(Synthesis { text, options })
}

/// The `info` event's data for `service`.
pub fn info(service: &TtsService) -> Value {
    let languages = service.language_codes();
    let attribution = json!({
        "name": "NVIDIA (Magpie TTS Multilingual)",
        "url": "https://huggingface.co/nvidia/magpie_tts_multilingual_357m",
    });
    let voices: Vec<Value> = crate::openai::voices(service)
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            json!({
                "name": name,
                "description": format!("Magpie TTS speaker {i}"),
                "attribution": attribution,
                "installed": true,
                "version": null,
                "languages": languages,
            })
        })
        .collect();
    json!({
        "asr": [], "handle": [], "intent": [], "wake": [], "mic": [], "snd": [],
        "tts": [{
            "name": "rill",
            "description": "Magpie TTS on rill (streaming, CPU)",
            "attribution": {"name": "rill", "url": env!("CARGO_PKG_REPOSITORY")},
            "installed": true,
            "version": env!("CARGO_PKG_VERSION"),
            "voices": voices,
            "supports_synthesize_streaming": false,
        }],
    })
}

/// Accepts Wyoming connections on `listener` until the process ends.
pub async fn serve(listener: TcpListener, service: Arc<TtsService>) -> std::io::Result<()> {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (socket, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors and the like: wait, do not stop serving.
                eprintln!("wyoming: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
            // One non-blocking write of the reason, then the socket closes: a
            // connect flood costs no task and no waiting.
            let e = Event::error(
                "too_many_connections",
                format!(
                    "this server accepts {MAX_CONNECTIONS} Wyoming connections at once; \
                     retry when one closes"
                ),
            );
            let _ = socket.try_write(&e.encode());
            continue;
        };
        let service = Arc::clone(&service);
        tokio::spawn(async move {
            connection(socket, service).await;
            drop(permit);
        });
    }
}

/// Writes one event, bounded in time.
async fn write(socket: &mut TcpStream, e: &Event) -> std::io::Result<()> {
    match tokio::time::timeout(WRITE_TIMEOUT, socket.write_all(&e.encode())).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the client takes no data",
        )),
    }
}

/// What the connection does after an event.
enum Next {
    Continue,
    Close,
}

/// A streamed request being gathered (`synthesize-start` … `synthesize-stop`).
struct Gathering {
    voice: Value,
    text: String,
}

/// One connection: events in until the client closes, an error, or idleness.
async fn connection(mut socket: TcpStream, service: Arc<TtsService>) {
    let mut buf: Vec<u8> = Vec::new();
    let mut gathering: Option<Gathering> = None;
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        match read_event(&buf) {
            Ok(Some((e, used))) => {
                buf.drain(..used);
                match handle(e, &mut socket, &service, &mut gathering).await {
                    Ok(Next::Continue) => continue,
                    Ok(Next::Close) | Err(_) => break,
                }
            }
            Ok(None) => {}
            Err(why) => {
                let _ = write(&mut socket, &Event::error("bad_event", why)).await;
                break;
            }
        }
        match tokio::time::timeout(IDLE_TIMEOUT, socket.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => {
                let e = Event::error(
                    "idle",
                    format!("no event for {} s; closing", IDLE_TIMEOUT.as_secs()),
                );
                let _ = write(&mut socket, &e).await;
                break;
            }
        }
    }
    let _ = socket.shutdown().await;
}

/// Answers one event.
async fn handle(
    e: Event,
    socket: &mut TcpStream,
    service: &Arc<TtsService>,
    gathering: &mut Option<Gathering>,
) -> std::io::Result<Next> {
    let refuse = |code: &str, why: String| Event::error(code, why);
    match e.kind.as_str() {
        "describe" => {
            write(socket, &Event::new("info", info(service))).await?;
            Ok(Next::Continue)
        }
        "ping" => {
            let text = e.data.get("text").cloned().unwrap_or(Value::Null);
            write(socket, &Event::new("pong", json!({"text": text}))).await?;
            Ok(Next::Continue)
        }
        "synthesize" if gathering.is_some() => Ok(Next::Continue),
        "synthesize" => speak(&e.data, socket, service).await,
        "synthesize-start" => {
            let voice = e.data.get("voice").cloned().unwrap_or(Value::Null);
            *gathering = Some(Gathering {
                voice,
                text: String::new(),
            });
            Ok(Next::Continue)
        }
        "synthesize-chunk" => {
            let (Some(g), Some(Value::String(t))) = (gathering.as_mut(), e.data.get("text")) else {
                let why = "synthesize-chunk needs a \"text\" string, after synthesize-start";
                write(socket, &refuse("bad_event", why.into())).await?;
                return Ok(Next::Close);
            };
            if g.text.chars().count() + t.chars().count() > MAX_TTS_TEXT_CHARS {
                let why = format!("the streamed text is over {MAX_TTS_TEXT_CHARS} characters");
                write(socket, &refuse("bad_request", why)).await?;
                return Ok(Next::Close);
            }
            g.text.push_str(t);
            Ok(Next::Continue)
        }
        "synthesize-stop" => {
            let Some(g) = gathering.take() else {
                let why = "synthesize-stop without synthesize-start";
                write(socket, &refuse("bad_event", why.into())).await?;
                return Ok(Next::Close);
            };
            if !g.text.trim().is_empty() {
                let data = json!({"text": g.text, "voice": g.voice});
                let data = data.as_object().cloned().unwrap_or_default();
                if let Next::Close = speak(&data, socket, service).await? {
                    return Ok(Next::Close);
                }
            }
            write(socket, &Event::new("synthesize-stopped", json!({}))).await?;
            Ok(Next::Continue)
        }
        _ => Ok(Next::Continue),
    }
}

/// Speaks one request: `audio-start`, a chunk per frame, `audio-stop`; or one
/// `error` event and `Close`.
async fn speak(
    data: &Map<String, Value>,
    socket: &mut TcpStream,
    service: &Arc<TtsService>,
) -> std::io::Result<Next> {
    let languages = service.voice.front.languages();
    let voices = crate::openai::voices(service);
    let planned = parse_synthesize(data, &voices, &languages).and_then(|s| {
        service
            .voice
            .plan(&s.text, &s.options)
            .map_err(|e| e.to_string())
    });
    let plan = match planned {
        Ok(p) => p,
        Err(why) => {
            write(socket, &Event::error("bad_request", why)).await?;
            return Ok(Next::Close);
        }
    };
    let rate = rill_nanocodec::SAMPLE_RATE;
    let mut rx = match tts::start_synthesis(Arc::clone(service), plan, rate) {
        Ok(s) => s.rx,
        Err(StartError::Busy(full)) => {
            write(socket, &Event::error("busy", full.to_string())).await?;
            return Ok(Next::Close);
        }
        Err(StartError::Thread(e)) => {
            let why = format!("cannot start the synthesis thread: {e}");
            write(socket, &Event::error("internal", why)).await?;
            return Ok(Next::Close);
        }
        Err(StartError::Rate(e)) => {
            write(socket, &Event::error("internal", e)).await?;
            return Ok(Next::Close);
        }
    };
    let format = json!({"rate": rate, "width": 2, "channels": 1});
    write(socket, &Event::new("audio-start", format.clone())).await?;
    while let Some(pcm) = rx.recv().await {
        let mut chunk = Event::new("audio-chunk", format.clone());
        chunk.payload = pcm.to_vec();
        // A failed write drops `rx`, which stops the synthesis.
        write(socket, &chunk).await?;
    }
    write(socket, &Event::new("audio-stop", json!({}))).await?;
    Ok(Next::Continue)
}
