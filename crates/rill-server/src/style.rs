//! Style prompts for the streams: MusicCoCa runs on one encoder thread of its own,
//! below the engine's priority, so a prompt never takes time from the audio; a
//! socket hands it a blend and gets the codes back, and the new style reaches the
//! stream as a control at the next frame boundary.
//!
//! Audio clips arrive over HTTP (`POST /api/clips`, the file as the body: WAV, FLAC,
//! MP3 or Ogg, any rate, up to [`MAX_CLIP_SECONDS`]), not through the WebSocket's
//! small messages; the server keeps the clip's embedding (768 numbers, not the
//! audio) under an id for [`MAX_CLIPS`] uploads and answers
//! `{"id":…,"seconds":…,"codes":[…]}` (the codes of the clip alone).

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use rill_kernels::Pool;
use rill_musiccoca::{Mapper, Prompt, StyleModel, LEVELS};
use tokio::sync::oneshot;

use crate::limits;
use crate::protocol::{PromptSource, PromptSpec};
use crate::AppState;

/// Largest clip upload, in bytes.
pub const MAX_CLIP_BYTES: usize = 32 << 20;
/// Longest clip, in seconds (its style is the mean over its 10 s pieces).
pub const MAX_CLIP_SECONDS: usize = 120;
/// Clips kept; the oldest is forgotten first.
pub const MAX_CLIPS: usize = 64;
/// Encodings waiting for the encoder thread (all sockets together).
const QUEUE: usize = 16;
/// Decoded samples (all channels) a clip may have: two channels at 96 kHz.
const MAX_CLIP_SAMPLES: usize = MAX_CLIP_SECONDS * 96_000 * 2;

/// What an encoding gives back.
#[derive(Debug, Clone)]
pub struct Styled {
    pub codes: [u16; LEVELS],
    /// From submission to result.
    pub ms: f64,
    /// What the client should know (a prompt longer than MusicCoCa reads).
    pub warning: Option<String>,
}

/// A clip once encoded.
struct Clip {
    embedding: Arc<Vec<f32>>,
    seconds: f64,
    codes: [u16; LEVELS],
}

enum Job {
    Blend {
        members: Vec<(Member, f32)>,
        reply: oneshot::Sender<Result<Styled, String>>,
        since: Instant,
    },
    Clip {
        bytes: Bytes,
        hint: Option<&'static str>,
        reply: oneshot::Sender<Result<Clip, String>>,
    },
}

enum Member {
    Text(String),
    Embedding(Arc<Vec<f32>>),
}

/// MusicCoCa for the server: the encoder thread and the clips.
pub struct StyleService {
    jobs: SyncSender<Job>,
    clips: Mutex<VecDeque<(String, Arc<Vec<f32>>)>>,
    next_id: AtomicU64,
    ids: std::collections::hash_map::RandomState,
    mapper: Mapper,
    dir: String,
}

impl StyleService {
    /// Starts the encoder thread with `model` (texts through `mapper`).
    pub fn start(model: StyleModel, mapper: Mapper) -> std::io::Result<StyleService> {
        let dir = model.dir().display().to_string();
        let (jobs, rx) = sync_channel::<Job>(QUEUE);
        std::thread::Builder::new()
            .name("rill-musiccoca".into())
            .spawn(move || {
                // Below the engine: an encoding waits, the audio does not.
                rill_kernels::pool::idle_thread_priority();
                let pool = Pool::new(1);
                while let Ok(job) = rx.recv() {
                    run(&model, mapper, &pool, job);
                }
            })?;
        Ok(StyleService {
            jobs,
            clips: Mutex::new(VecDeque::new()),
            next_id: AtomicU64::new(0),
            ids: Default::default(),
            mapper,
            dir,
        })
    }

    /// Queues a blend; the receiver gets its codes. Unknown clip ids and a full queue
    /// are refused here, before anything is queued.
    pub fn submit(
        &self,
        prompts: &[PromptSpec],
    ) -> Result<oneshot::Receiver<Result<Styled, String>>, String> {
        let mut members = Vec::with_capacity(prompts.len());
        for p in prompts {
            let m = match &p.source {
                PromptSource::Text(t) => Member::Text(t.clone()),
                PromptSource::Clip(id) => Member::Embedding(self.clip(id).ok_or_else(|| {
                    format!(
                        "no clip {id:?} on this server (it keeps the last {MAX_CLIPS} uploads); upload it again with POST /api/clips"
                    )
                })?),
            };
            members.push((m, p.weight));
        }
        let (reply, rx) = oneshot::channel();
        self.queue(Job::Blend {
            members,
            reply,
            since: Instant::now(),
        })?;
        Ok(rx)
    }

    fn queue(&self, job: Job) -> Result<(), String> {
        self.jobs.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => format!(
                "the style encoder has {QUEUE} prompts waiting; send the next one when a style message arrives"
            ),
            TrySendError::Disconnected(_) => "the style encoder stopped (see the server's log)".into(),
        })
    }

    fn clip(&self, id: &str) -> Option<Arc<Vec<f32>>> {
        let clips = self.clips.lock().unwrap_or_else(|p| p.into_inner());
        clips
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, e)| Arc::clone(e))
    }

    fn keep(&self, embedding: Arc<Vec<f32>>) -> String {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        // Unguessable enough that one client does not stumble on another's clips.
        let mut h = self.ids.build_hasher();
        h.write_u64(n);
        let id = format!("{:016x}", h.finish());
        let mut clips = self.clips.lock().unwrap_or_else(|p| p.into_inner());
        if clips.len() == MAX_CLIPS {
            clips.pop_front();
        }
        clips.push_back((id.clone(), embedding));
        id
    }

    /// Facts for `/api/info`.
    pub fn info(&self) -> serde_json::Value {
        serde_json::json!({
            "musiccoca": self.dir,
            "mapper": match self.mapper { Mapper::Off => serde_json::Value::Null, Mapper::Seed(s) => s.into() },
            "max_prompts": rill_musiccoca::blend::MAX_PROMPTS,
            "max_clip_seconds": MAX_CLIP_SECONDS,
            "max_clip_bytes": MAX_CLIP_BYTES,
        })
    }
}

/// One job on the encoder thread. A blend whose socket has moved on (a newer prompt
/// replaced it, or it closed) is skipped.
fn run(model: &StyleModel, mapper: Mapper, pool: &Pool, job: Job) {
    match job {
        Job::Blend {
            members,
            reply,
            since,
        } => {
            if reply.is_closed() {
                return;
            }
            let prompts: Vec<(Prompt<'_>, f32)> = members
                .iter()
                .map(|(m, w)| match m {
                    Member::Text(t) => (Prompt::Text(t), *w),
                    Member::Embedding(e) => (Prompt::Embedding(e), *w),
                })
                .collect();
            let long: Vec<String> = members
                .iter()
                .enumerate()
                .filter_map(|(i, (m, _))| match m {
                    Member::Text(t) => model
                        .prompt_overflow(t)
                        .map(|n| format!("prompts[{i}] is {n} pieces")),
                    Member::Embedding(_) => None,
                })
                .collect();
            let warning = (!long.is_empty()).then(|| {
                format!(
                    "{}; MusicCoCa reads the first 127 (as upstream) and ignores the rest",
                    long.join(", ")
                )
            });
            let r = model
                .tokenize_prompts(&prompts, mapper, pool)
                .map(|q| Styled {
                    codes: q.tokens,
                    ms: since.elapsed().as_secs_f64() * 1e3,
                    warning,
                })
                .map_err(|e| e.to_string());
            let _ = reply.send(r);
        }
        Job::Clip { bytes, hint, reply } => {
            let r = (|| -> Result<Clip, String> {
                let audio = rill_io::audio::decode_bytes_limited(&bytes, hint, MAX_CLIP_SAMPLES)
                    .map_err(|e| format!("{e:#}"))?;
                let seconds = audio.seconds();
                let embedding = model.embed_audio(&audio, pool).map_err(|e| e.to_string())?;
                let codes = model
                    .tokenize(&embedding, pool)
                    .map_err(|e| e.to_string())?
                    .tokens;
                Ok(Clip {
                    embedding: Arc::new(embedding),
                    seconds,
                    codes,
                })
            })();
            let _ = reply.send(r);
        }
    }
}

/// The decoder's format hint from the upload's `Content-Type` (the content is
/// probed either way).
fn hint(headers: &HeaderMap) -> Option<&'static str> {
    let t = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let t = t.split(';').next()?.trim().to_ascii_lowercase();
    Some(match t.as_str() {
        "audio/wav" | "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => "wav",
        "audio/flac" | "audio/x-flac" => "flac",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" | "audio/vorbis" | "application/ogg" => "ogg",
        _ => return None,
    })
}

fn plain(status: StatusCode, text: String) -> Response {
    (status, format!("{text}\n")).into_response()
}

/// `POST /api/clips`: an audio file in, its clip id out (see the module doc).
pub(crate) async fn upload(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(body) = limits::check_api_origin(&headers, st.allowed_origins()) {
        return (StatusCode::FORBIDDEN, body).into_response();
    }
    let Some(service) = st.style.clone() else {
        return plain(
            StatusCode::NOT_FOUND,
            "this server has no MusicCoCa, so no style prompts: put upstream's resources/musiccoca beside the checkpoint or start rill serve with --musiccoca DIR".into(),
        );
    };
    if body.is_empty() {
        return plain(
            StatusCode::BAD_REQUEST,
            "the request has no body; send the audio file as it is (curl --data-binary @clip.wav)"
                .into(),
        );
    }
    let (reply, rx) = oneshot::channel();
    if let Err(e) = service.queue(Job::Clip {
        bytes: body,
        hint: hint(&headers),
        reply,
    }) {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            format!("busy: {e}\n"),
        )
            .into_response();
    }
    match rx.await {
        Ok(Ok(clip)) => {
            let id = service.keep(Arc::clone(&clip.embedding));
            axum::Json(serde_json::json!({
                "id": id,
                "seconds": (clip.seconds * 1000.0).round() / 1000.0,
                "codes": clip.codes.to_vec(),
            }))
            .into_response()
        }
        Ok(Err(e)) => plain(
            StatusCode::BAD_REQUEST,
            format!("not a usable audio clip: {e}"),
        ),
        Err(_) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the style encoder stopped (see the server's log)".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_hint_the_decoder() {
        let mut h = HeaderMap::new();
        assert_eq!(hint(&h), None);
        h.insert(header::CONTENT_TYPE, "audio/x-wav".parse().unwrap());
        assert_eq!(hint(&h), Some("wav"));
        h.insert(header::CONTENT_TYPE, "Audio/MPEG; foo=bar".parse().unwrap());
        assert_eq!(hint(&h), Some("mp3"));
        h.insert(
            header::CONTENT_TYPE,
            "application/octet-stream".parse().unwrap(),
        );
        assert_eq!(hint(&h), None);
    }
}
