//! `POST /api/tts`: text in, speech out as it is generated — a WAV stream (16-bit
//! mono, 22.05 kHz; the RIFF sizes are `0xFFFFFFFF`, as for any live WAV) whose
//! body grows by one 46 ms frame of PCM per decoder step, so playback can start
//! after the first frame (`curl -d '{"text":"Hello."}' URL/api/tts > hello.wav`).
//!
//! The request is a JSON object of at most [`MAX_TTS_BODY_BYTES`]:
//! `{"text": "…", "language": "en", "speaker": 0, "seed": 0, "temperature": 0.6,
//! "top_k": 80, "cfg_scale": 2.5, "no_cfg": false, "no_prior": false, "max_frames":
//! 500}`; only `text` is required, unknown fields, languages the voice cannot speak
//! (`/api/info` lists them) and out-of-range values are refused with HTTP 400 and the
//! reason. Characters the language's front end cannot encode are named in the
//! response header [`DROPPED_HEADER`] (`U+2014 U+1F600`); pages from foreign
//! origins get 403 (the same rule as `/ws`). Requests run one at a time, the others
//! wait in a bounded queue (header [`QUEUE_HEADER`]: requests ahead; a full queue
//! gets 503 and `Retry-After`); a synthesis runs on the music's engine in the
//! capacity the music leaves (see [`crate::speech_queue`] and
//! `rill_stream::engine`'s speech policy), never on the async runtime, and stops
//! when the client goes away. The browser page's Speech card
//! (`web/speech.js`) plays this stream as it arrives.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use rill_stream::engine::Speaker;
use rill_stream::tts::{SpeakOptions, TtsError, Voice};
use rill_stream::Engine;
use serde::Deserialize;

use crate::limits;
pub use crate::speech_queue::QUEUE_HEADER;
use crate::speech_queue::{QueueFull, SpeechQueue, DEFAULT_SPEECH_QUEUE};
use crate::AppState;

/// Largest accepted request body.
pub const MAX_TTS_BODY_BYTES: usize = 16 * 1024;
/// Longest accepted text, in characters (≈ 3 minutes of speech).
pub const MAX_TTS_TEXT_CHARS: usize = 4000;
/// Response header listing the characters left out of the speech, as `U+XXXX`
/// separated by spaces (absent when nothing was dropped).
pub const DROPPED_HEADER: &str = "x-rill-dropped-characters";
/// Response header naming the language spoken.
pub const LANGUAGE_HEADER: &str = "x-rill-language";
/// Chunks of PCM buffered between the engine's speech and a slow client.
const CHANNEL_CHUNKS: usize = 64;
/// How long the forwarding thread waits for more audio before it looks again.
const FORWARD_POLL: std::time::Duration = std::time::Duration::from_millis(10);

/// The voice of `/api/tts` and its queue of requests.
pub struct TtsService {
    pub voice: Arc<Voice>,
    /// The engine's door for this voice: speech runs beside the music.
    speaker: Speaker,
    queue: Arc<SpeechQueue>,
    /// The voice's weights are random (`rill serve --tts-random-weights`): noise,
    /// not words, which `/api/info` and the page say.
    random_weights: bool,
}

impl TtsService {
    /// Speaks with `voice` on `engine` ([`Engine::add_voice`]: what a speech costs
    /// is measured there). Computes the model's one-time CFG prefill here, at
    /// start-up, so that the first request's first audio does not wait for it. An
    /// error only if the OS refuses the engine's setup thread.
    pub fn new(voice: Voice, engine: &Engine) -> std::io::Result<TtsService> {
        if voice.params.use_cfg {
            voice
                .model
                .unconditional_prefill(&rill_kernels::Pool::new(engine.threads()));
        }
        let voice = Arc::new(voice);
        Ok(TtsService {
            speaker: engine.add_voice(Arc::clone(&voice))?,
            voice,
            queue: SpeechQueue::new(DEFAULT_SPEECH_QUEUE),
            random_weights: false,
        })
    }

    /// Lets `limit` requests wait behind the running one (default
    /// [`DEFAULT_SPEECH_QUEUE`]; 0 refuses every request while one runs).
    pub fn with_queue(mut self, limit: usize) -> TtsService {
        self.queue = SpeechQueue::new(limit);
        self
    }

    /// Marks the voice's weights as random (synthesised for a smoke test).
    pub fn with_random_weights(mut self, random: bool) -> TtsService {
        self.random_weights = random;
        self
    }

    /// The engine's door for this voice (its measured cost, what a speech
    /// starting now should run at).
    pub fn speaker(&self) -> &Speaker {
        &self.speaker
    }

    /// Whether a synthesis is running.
    pub fn busy(&self) -> bool {
        self.queue.running()
    }

    /// Requests waiting behind the running synthesis.
    pub fn waiting(&self) -> usize {
        self.queue.waiting()
    }

    /// The voice's queue (a host may hold a [`crate::speech_queue::Ticket`] to keep
    /// the voice for itself a while).
    pub fn queue(&self) -> &Arc<SpeechQueue> {
        &self.queue
    }

    /// The codes of the languages the voice speaks, in the table's order.
    pub fn language_codes(&self) -> Vec<&'static str> {
        self.voice
            .front
            .languages()
            .iter()
            .map(|l| l.code())
            .collect()
    }

    /// Facts for `/api/info`.
    pub fn info(&self) -> serde_json::Value {
        let c = &self.voice.model.config;
        let languages = self.language_codes();
        let names: serde_json::Map<String, serde_json::Value> = self
            .voice
            .front
            .languages()
            .iter()
            .map(|l| (l.code().to_string(), l.name().into()))
            .collect();
        serde_json::json!({
            "endpoint": "/api/tts",
            "sample_rate": rill_nanocodec::SAMPLE_RATE,
            "speakers": c.speakers,
            "speaker_names": self.voice.speaker_names,
            "languages": languages,
            "language_names": names,
            "default_language": rill_text::Language::English.code(),
            "busy": self.busy(),
            "waiting": self.waiting(),
            "rtf": self.speaker.rtf(),
            "expected_rtf": self.speaker.expected_rtf(),
            "max_text_chars": MAX_TTS_TEXT_CHARS,
            "random_weights": self.random_weights,
        })
    }
}

/// The request body (see the module doc).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TtsRequest {
    text: String,
    /// A language code or name (`rill_text::Language`); English when absent.
    language: Option<String>,
    #[serde(default)]
    speaker: usize,
    #[serde(default)]
    seed: u64,
    temperature: Option<f32>,
    top_k: Option<usize>,
    cfg_scale: Option<f32>,
    #[serde(default)]
    no_cfg: bool,
    #[serde(default)]
    no_prior: bool,
    max_frames: Option<usize>,
    /// Read numbers, money, dates, … aloud first (default true; false is NeMo's
    /// raw path).
    normalize: Option<bool>,
}

impl TtsRequest {
    /// Range checks beyond what the model's own validation covers.
    fn options(self) -> Result<(String, SpeakOptions), String> {
        if self.text.chars().count() > MAX_TTS_TEXT_CHARS {
            return Err(format!(
                "text is {} characters; at most {MAX_TTS_TEXT_CHARS} per request",
                self.text.chars().count()
            ));
        }
        if let Some(t) = self.temperature {
            if !(t.is_finite() && (0.0..=10.0).contains(&t)) {
                return Err(format!("temperature {t} is not in 0..=10"));
            }
        }
        if let Some(s) = self.cfg_scale {
            if !(s.is_finite() && (0.0..=20.0).contains(&s)) {
                return Err(format!("cfg_scale {s} is not in 0..=20"));
            }
        }
        if self.top_k == Some(0) {
            return Err("top_k must be at least 1".into());
        }
        let language = match &self.language {
            Some(l) => l
                .parse::<rill_text::Language>()
                .map_err(|e| e.to_string())?,
            None => rill_text::Language::English,
        };
        let options = SpeakOptions {
            language,
            speaker: self.speaker,
            seed: self.seed,
            temperature: self.temperature,
            top_k: self.top_k,
            cfg_scale: self.cfg_scale,
            no_cfg: self.no_cfg,
            no_prior: self.no_prior,
            max_frames: self.max_frames,
            forced: None,
            codec_frames: None,
            normalize: self.normalize.unwrap_or(true),
        };
        Ok((self.text, options))
    }
}

fn bad_request(msg: impl std::fmt::Display) -> Response {
    (StatusCode::BAD_REQUEST, format!("bad request: {msg}\n")).into_response()
}

/// The WAV header (16-bit mono at `rate` Hz) of a stream of unknown length.
pub(crate) fn wav_header(rate: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(44);
    h.extend_from_slice(b"RIFF");
    h.extend_from_slice(&u32::MAX.to_le_bytes());
    h.extend_from_slice(b"WAVEfmt ");
    h.extend_from_slice(&16u32.to_le_bytes());
    h.extend_from_slice(&1u16.to_le_bytes()); // PCM
    h.extend_from_slice(&1u16.to_le_bytes()); // mono
    h.extend_from_slice(&rate.to_le_bytes());
    h.extend_from_slice(&(rate * 2).to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&16u16.to_le_bytes());
    h.extend_from_slice(b"data");
    h.extend_from_slice(&u32::MAX.to_le_bytes());
    h
}

/// Sends the speech's PCM to the response body: as the voice made it (22.05 kHz),
/// or resampled on the way (OpenAI's `pcm` is 24 kHz).
struct ChannelSink {
    tx: tokio::sync::mpsc::Sender<Bytes>,
    resampler: Option<rill_io::StreamResampler>,
    /// The 16-bit PCM as floats (what the resampler reads: the audio as the WAV
    /// stream has it, clipped to 16 bits).
    floats: Vec<f32>,
    resampled: Vec<f32>,
}

impl ChannelSink {
    fn send_pcm(&self, pcm: impl Iterator<Item = i16>) -> Result<(), TtsError> {
        let bytes: Vec<u8> = pcm.flat_map(|s| s.to_le_bytes()).collect();
        if bytes.is_empty() {
            return Ok(());
        }
        self.tx
            .blocking_send(Bytes::from(bytes))
            .map_err(|_| TtsError::Stopped("the client went away".into()))
    }

    /// Sends `pcm` (the voice's rate), resampled if asked.
    fn push(&mut self, pcm: &[i16]) -> Result<(), TtsError> {
        let Some(r) = self.resampler.as_mut() else {
            return self.send_pcm(pcm.iter().copied());
        };
        self.floats.clear();
        self.floats
            .extend(pcm.iter().map(|&s| f32::from(s) / 32767.0));
        self.resampled.clear();
        r.push(&self.floats, &mut self.resampled)
            .map_err(|e| TtsError::Invalid(e.to_string()))?;
        self.send_resampled()
    }

    /// Sends what the resampler gave, as 16-bit PCM.
    fn send_resampled(&self) -> Result<(), TtsError> {
        let pcm = self
            .resampled
            .iter()
            .map(|&x| rill_nanocodec::float_to_int16(x));
        self.send_pcm(pcm)
    }

    /// The resampler's tail, once the speech is complete.
    fn finish(&mut self) -> Result<(), TtsError> {
        let Some(r) = self.resampler.as_mut() else {
            return Ok(());
        };
        self.resampled.clear();
        r.finish(&mut self.resampled)
            .map_err(|e| TtsError::Invalid(e.to_string()))?;
        self.send_resampled()
    }
}

/// Why a synthesis did not start.
pub(crate) enum StartError {
    /// The queue is full.
    Busy(QueueFull),
    /// The thread could not be made.
    Thread(std::io::Error),
    /// The output rate cannot be made.
    Rate(String),
}

/// A synthesis that has its place in the queue: its PCM (16-bit little-endian mono
/// at the asked rate) arrives on `rx` frame by frame once it runs, and ends with
/// the speech. Dropping `rx` stops it at its next frame (or takes it out of the
/// queue).
pub(crate) struct Started {
    pub rx: tokio::sync::mpsc::Receiver<Bytes>,
    /// Requests ahead of it when it arrived (0 = running now).
    pub ahead: usize,
}

/// Queues `plan` and starts its thread, which waits for its turn, then has the
/// engine speak it (in the capacity the music leaves, [`crate::speech_queue`]'s
/// policy) and forwards its PCM (16-bit little-endian mono at `rate` Hz: the
/// voice's 22.05 kHz or resampled) to the returned channel.
pub(crate) fn start_synthesis(
    service: Arc<TtsService>,
    plan: rill_stream::tts::SpeakPlan,
    rate: u32,
) -> Result<Started, StartError> {
    let resampler = if rate == rill_nanocodec::SAMPLE_RATE {
        None
    } else {
        Some(
            rill_io::StreamResampler::new(rill_nanocodec::SAMPLE_RATE, rate)
                .map_err(|e| StartError::Rate(e.to_string()))?,
        )
    };
    let ticket = service.queue.join().map_err(StartError::Busy)?;
    let ahead = ticket.ahead;
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
    std::thread::Builder::new()
        .name("rill-tts".into())
        .spawn(move || {
            if !ticket.wait(|| tx.is_closed()) {
                return; // The client went away while waiting.
            }
            // Only forwards (and resamples): the engine's threads go first.
            rill_kernels::pool::lower_thread_priority();
            let mut sink = ChannelSink {
                tx,
                resampler,
                floats: Vec::with_capacity(rill_nanocodec::SAMPLES_PER_FRAME),
                resampled: Vec::new(),
            };
            if let Err(e) = forward(&service.speaker, plan, &mut sink) {
                if !matches!(e, TtsError::Stopped(_)) {
                    eprintln!("tts: {e}; the response was cut short");
                }
            }
            drop(ticket);
        })
        .map_err(StartError::Thread)?;
    Ok(Started { rx, ahead })
}

/// Has the engine speak `plan` and sends its audio on as it comes; dropping the
/// engine's handle (the client went away) stops the speech.
fn forward(
    speaker: &Speaker,
    plan: rill_stream::tts::SpeakPlan,
    sink: &mut ChannelSink,
) -> Result<(), TtsError> {
    let mut speech = speaker
        .speak(plan)
        .map_err(|e| TtsError::Stopped(e.to_string()))?;
    let mut pcm = Vec::with_capacity(4 * rill_nanocodec::SAMPLES_PER_FRAME);
    loop {
        pcm.clear();
        let ended = speech.next(&mut pcm, FORWARD_POLL);
        sink.push(&pcm)?;
        if sink.tx.is_closed() {
            return Err(TtsError::Stopped("the client went away".into()));
        }
        if let Some(outcome) = ended {
            outcome?;
            return sink.finish();
        }
    }
}

/// The response body: `head` (e.g. a WAV header), then each frame as it comes.
pub(crate) fn streamed_body(head: Vec<u8>, rx: tokio::sync::mpsc::Receiver<Bytes>) -> Body {
    let head =
        futures_util::stream::once(async move { Ok::<_, std::io::Error>(Bytes::from(head)) });
    let frames =
        futures_util::stream::unfold(
            rx,
            |mut rx| async move { rx.recv().await.map(|b| (Ok(b), rx)) },
        );
    Body::from_stream(futures_util::StreamExt::chain(head, frames))
}

/// The `x-rill-language` / `x-rill-dropped-characters` / `x-rill-queue-position`
/// headers of a response.
pub(crate) fn speech_headers(
    h: &mut HeaderMap,
    language: rill_text::Language,
    dropped: &[char],
    ahead: usize,
) {
    h.insert(
        LANGUAGE_HEADER,
        header::HeaderValue::from_static(language.code()),
    );
    h.insert(QUEUE_HEADER, header::HeaderValue::from(ahead));
    if !dropped.is_empty() {
        let list: Vec<String> = dropped
            .iter()
            .map(|&c| format!("U+{:04X}", c as u32))
            .collect();
        if let Ok(v) = header::HeaderValue::from_str(&list.join(" ")) {
            h.insert(DROPPED_HEADER, v);
        }
    }
}

/// `POST /api/tts`, counted for `/metrics`.
pub(crate) async fn speak(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let response = speak_counted(&st, headers, body);
    crate::metrics::count(&st.metrics, "tts", &response);
    response
}

fn speak_counted(st: &Arc<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(body) = limits::check_api_origin(&headers, st.allowed_origins()) {
        return (StatusCode::FORBIDDEN, body).into_response();
    }
    let Some(service) = st.tts.clone() else {
        return (
            StatusCode::NOT_FOUND,
            "this server has no voice: start rill serve with --tts-checkpoint M --tts-codec C (or --tts-random-weights)\n",
        )
            .into_response();
    };
    if body.len() > MAX_TTS_BODY_BYTES {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the request is {} bytes; at most {MAX_TTS_BODY_BYTES}\n",
                body.len()
            ),
        )
            .into_response();
    }
    let req: TtsRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let (text, options) = match req.options() {
        Ok(v) => v,
        Err(e) => return bad_request(e),
    };
    let plan = match service.voice.plan(&text, &options) {
        Ok(p) => p,
        Err(e) => return bad_request(e),
    };
    let (language, dropped) = (plan.language, plan.dropped.clone());
    let started = match start_synthesis(service, plan, rill_nanocodec::SAMPLE_RATE) {
        Ok(s) => s,
        Err(StartError::Busy(full)) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                format!("{full}\n"),
            )
                .into_response()
        }
        Err(StartError::Thread(e)) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot start the synthesis thread: {e}\n"),
            )
                .into_response()
        }
        Err(StartError::Rate(e)) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response()
        }
    };
    let mut response = (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "audio/wav"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        streamed_body(wav_header(rill_nanocodec::SAMPLE_RATE), started.rx),
    )
        .into_response();
    speech_headers(response.headers_mut(), language, &dropped, started.ahead);
    response
}
