//! OpenAI-compatible speech, for the clients that speak OpenAI's audio API (the
//! official `openai` packages, NeMo-Speech.cpp's and Kokoro's servers' users):
//!
//! * `POST /v1/audio/speech`: `{"model": "magpie-tts-multilingual", "input": "…",
//!   "voice": "Sofia", "response_format": "wav", "speed": 1.0, "language": "en"}`.
//!   `model` is [`MODEL_ID`] or one of OpenAI's speech model names (taken as this
//!   voice); `voice` is one of the checkpoint's speaker names (any case) or a
//!   speaker index; `response_format` is `wav` (22.05 kHz, the voice's own rate:
//!   the default here, where OpenAI's is mp3, which rill does not encode) or `pcm`
//!   (OpenAI's definition: raw 24 kHz 16-bit little-endian mono, resampled as it
//!   streams); `speed` must be 1 (Magpie has no rate control and rill does not
//!   time-stretch speech); rill's extra fields (OpenAI clients send them through
//!   their extra-body option) are `language` (English when absent), `normalize`
//!   (numbers read aloud, default true), `seed` and `max_frames`. The audio streams as
//!   it is made, as `/api/tts` does, through the same queue and priority
//!   ([`crate::speech_queue`]; header `x-rill-queue-position`).
//! * `GET /v1/models`: the one model.
//!
//! Errors are OpenAI's JSON (`{"error": {"message", "type", "param", "code"}}`)
//! with HTTP 400 (bad request), 404 (no voice loaded), 413 (body too large) or 503
//! (the speech queue is full; `Retry-After`), so clients raise them with the reason.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;

use crate::tts::{self, StartError, TtsService, MAX_TTS_BODY_BYTES};
use crate::{limits, AppState};

/// The model id `/v1/models` lists.
pub const MODEL_ID: &str = "magpie-tts-multilingual";
/// OpenAI's speech model names, accepted as this voice so that clients with a
/// fixed model name work.
pub const OPENAI_MODEL_ALIASES: [&str; 3] = ["tts-1", "tts-1-hd", "gpt-4o-mini-tts"];
/// OpenAI's limit on `input`, in characters.
pub const MAX_INPUT_CHARS: usize = 4096;
/// OpenAI's `pcm`: 24 kHz.
pub const PCM_RATE: u32 = 24_000;

/// An OpenAI-style error response.
fn error(status: StatusCode, message: impl Into<String>, param: Option<&str>) -> Response {
    let kind = match status {
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::INTERNAL_SERVER_ERROR => "server_error",
        StatusCode::NOT_FOUND => "not_found_error",
        _ => "invalid_request_error",
    };
    let body = serde_json::json!({
        "error": {"message": message.into(), "type": kind, "param": param, "code": null}
    });
    (status, Json(body)).into_response()
}

fn bad(message: impl Into<String>, param: &str) -> Response {
    error(StatusCode::BAD_REQUEST, message, Some(param))
}

/// The request body (see the module doc). Unknown fields are refused by name.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpeechRequest {
    model: String,
    input: String,
    voice: serde_json::Value,
    response_format: Option<String>,
    speed: Option<f64>,
    language: Option<String>,
    /// OpenAI's streaming format: only `audio` (the body itself) is served.
    stream_format: Option<String>,
    /// rill's extra field: read numbers aloud first (default true).
    normalize: Option<bool>,
    /// rill's extra field: the sampler seed (default 0).
    seed: Option<u64>,
    /// rill's extra field: frame cap per sentence (46.4 ms each; default the
    /// checkpoint's).
    max_frames: Option<usize>,
}

/// The audio a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Wav,
    Pcm,
}

/// The voices of `service`: the checkpoint's speaker names, else `0`, `1`, ….
pub fn voices(service: &TtsService) -> Vec<String> {
    let n = service.voice.model.config.speakers;
    (0..n)
        .map(|i| match service.voice.speaker_names.get(i) {
            Some(name) if !name.is_empty() => name.clone(),
            _ => i.to_string(),
        })
        .collect()
}

/// The speaker index of `voice` (a name in any case, or an index as a number or a
/// string) among `names`.
fn speaker(names: &[String], voice: &serde_json::Value) -> Result<usize, String> {
    let index = match voice {
        serde_json::Value::Number(n) => n.as_u64().map(|i| i as usize),
        serde_json::Value::String(s) => names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(s.trim()))
            .or_else(|| s.trim().parse::<usize>().ok()),
        _ => None,
    };
    match index {
        Some(i) if i < names.len() => Ok(i),
        _ => Err(format!(
            "voice {voice} is not a voice of this model; voices: {}",
            names.join(", ")
        )),
    }
}

impl SpeechRequest {
    /// Checks everything but the text's encoding; the text, options and format, or
    /// what is wrong and the parameter at fault.
    fn options(self, voices: &[String]) -> Result<Speech, (String, &'static str)> {
        if self.model != MODEL_ID && !OPENAI_MODEL_ALIASES.contains(&self.model.as_str()) {
            return Err((
                format!(
                    "model {:?} is not served here; use {MODEL_ID} (GET /v1/models)",
                    self.model
                ),
                "model",
            ));
        }
        let chars = self.input.chars().count();
        if chars > MAX_INPUT_CHARS {
            return Err((
                format!("input is {chars} characters; at most {MAX_INPUT_CHARS}"),
                "input",
            ));
        }
        if self.input.trim().is_empty() {
            return Err(("input is empty: give some words to speak".into(), "input"));
        }
        let format = match self.response_format.as_deref().unwrap_or("wav") {
            "wav" => Format::Wav,
            "pcm" => Format::Pcm,
            other => {
                return Err((
                    format!(
                        "response_format {other:?} is not served; use wav (22.05 kHz) or pcm \
                         (24 kHz 16-bit mono)"
                    ),
                    "response_format",
                ))
            }
        };
        if let Some(speed) = self.speed {
            if speed != 1.0 {
                return Err((
                    format!(
                        "speed {speed} is not supported: Magpie has no rate control and rill \
                         does not time-stretch speech; omit speed or send 1.0"
                    ),
                    "speed",
                ));
            }
        }
        if let Some(f) = self.stream_format.as_deref() {
            if f != "audio" {
                return Err((
                    format!("stream_format {f:?} is not served; use audio"),
                    "stream_format",
                ));
            }
        }
        let language = match &self.language {
            Some(l) => l
                .parse::<rill_text::Language>()
                .map_err(|e| (e.to_string(), "language"))?,
            None => rill_text::Language::English,
        };
        let speaker = speaker(voices, &self.voice).map_err(|e| (e, "voice"))?;
        let options = rill_stream::tts::SpeakOptions {
            language,
            speaker,
            seed: self.seed.unwrap_or(0),
            temperature: None,
            top_k: None,
            cfg_scale: None,
            no_cfg: false,
            no_prior: false,
            max_frames: self.max_frames,
            forced: None,
            codec_frames: None,
            normalize: self.normalize.unwrap_or(true),
        };
        Ok(Speech {
            text: self.input,
            options,
            format,
        })
    }
}

/// A checked speech request.
#[derive(Debug, Clone)]
pub struct Speech {
    /// The text to speak.
    pub text: String,
    pub options: rill_stream::tts::SpeakOptions,
    pub format: Format,
}

/// Parses and checks a `POST /v1/audio/speech` body against the voice names
/// `voices` (everything but the text's encoding, which the voice checks); the
/// error is the message and the parameter at fault (`body` for the JSON itself).
pub fn parse_request(body: &[u8], voices: &[String]) -> Result<Speech, (String, &'static str)> {
    let req: SpeechRequest = serde_json::from_slice(body)
        .map_err(|e| (format!("the body is not a speech request: {e}"), "body"))?;
    req.options(voices)
}

/// `POST /v1/audio/speech`.
pub(crate) async fn speech(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let response = speech_counted(&st, headers, body);
    crate::metrics::count(&st.metrics, "openai_speech", &response);
    response
}

fn speech_counted(st: &Arc<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(body) = limits::check_api_origin(&headers, st.allowed_origins()) {
        return error(StatusCode::FORBIDDEN, body.trim().to_string(), None);
    }
    let Some(service) = st.tts.clone() else {
        return error(
            StatusCode::NOT_FOUND,
            "this server has no voice: start rill serve with --tts-checkpoint M --tts-codec C \
             (or --tts-random-weights)",
            None,
        );
    };
    if body.len() > MAX_TTS_BODY_BYTES {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the request is {} bytes; at most {MAX_TTS_BODY_BYTES}",
                body.len()
            ),
            None,
        );
    }
    let Speech {
        text,
        options,
        format,
    } = match parse_request(&body, &voices(&service)) {
        Ok(v) => v,
        Err((message, param)) => return bad(message, param),
    };
    let plan = match service.voice.plan(&text, &options) {
        Ok(p) => p,
        Err(e) => return bad(e.to_string(), "input"),
    };
    let (language, dropped) = (plan.language, plan.dropped.clone());
    let (rate, content_type) = match format {
        Format::Wav => (rill_nanocodec::SAMPLE_RATE, "audio/wav"),
        Format::Pcm => (PCM_RATE, "audio/pcm"),
    };
    let started = match tts::start_synthesis(service, plan, rate) {
        Ok(s) => s,
        Err(StartError::Busy(full)) => {
            let mut r = error(StatusCode::SERVICE_UNAVAILABLE, full.to_string(), None);
            r.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
            return r;
        }
        Err(StartError::Thread(e)) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot start the synthesis thread: {e}"),
                None,
            )
        }
        Err(StartError::Rate(e)) => return error(StatusCode::INTERNAL_SERVER_ERROR, e, None),
    };
    let head = match format {
        Format::Wav => tts::wav_header(rate),
        Format::Pcm => Vec::new(),
    };
    let mut response = (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-store"),
        ],
        tts::streamed_body(head, started.rx),
    )
        .into_response();
    tts::speech_headers(response.headers_mut(), language, &dropped, started.ahead);
    response
}

/// `GET /v1/models`: the speech model, when a voice is loaded.
pub(crate) async fn models(State(st): State<Arc<AppState>>) -> Json<serde_json::Value> {
    let data: Vec<serde_json::Value> = st
        .tts
        .as_ref()
        .map(|s| {
            serde_json::json!({
                "id": MODEL_ID,
                "object": "model",
                "created": 0,
                "owned_by": "nvidia",
                "voices": voices(s),
                "languages": s.language_codes(),
            })
        })
        .into_iter()
        .collect();
    Json(serde_json::json!({"object": "list", "data": data}))
}
