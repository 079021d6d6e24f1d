//! `rill serve`: the browser instrument at `/`, one WebSocket audio stream per
//! listener at `/ws` (protocol in [`protocol`]), and `/api/info`.
//!
//! Generation runs on the [`Engine`]'s scheduler thread, never on the async
//! runtime; each socket task only moves finished frames out at real-time pace
//! (one per 40 ms) and controls in. A closed socket drops its stream, which frees
//! the engine slot for the next listener.

pub mod protocol;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures_util::{SinkExt, StreamExt};
use rill_stream::{Control, Engine, StreamConfig, StreamError, StreamHandle, FRAME_PCM};
use tokio::time::{interval, MissedTickBehavior};

use protocol::ClientMsg;

/// The single-page instrument.
pub const INDEX_HTML: &str = include_str!("../web/index.html");

/// Frames buffered before playback pacing starts (so a stream does not begin
/// with underruns while its queue fills).
const PREBUFFER_MS: f32 = 120.0;

/// Shared server state.
pub struct AppState {
    pub engine: Engine,
    /// Static facts shown by `/api/info` (model, precision, …).
    pub info: serde_json::Value,
}

/// The HTTP routes.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(|| async { Html(INDEX_HTML) }))
        .route(
            "/favicon.ico",
            get(|| async { axum::http::StatusCode::NO_CONTENT }),
        )
        .route("/ws", get(ws))
        .route("/api/info", get(info))
        .with_state(state)
}

/// Serves until the process ends.
pub async fn run(listener: tokio::net::TcpListener, state: Arc<AppState>) -> anyhow::Result<()> {
    axum::serve(
        listener,
        router(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await?;
    Ok(())
}

async fn info(State(st): State<Arc<AppState>>) -> Json<serde_json::Value> {
    let mut v = st.info.clone();
    if let Some(o) = v.as_object_mut() {
        o.insert("capacity".into(), st.engine.capacity().into());
        o.insert("active".into(), st.engine.active().into());
        o.insert(
            "measured_rtf".into(),
            (st.engine.measured_rtf() as f64).into(),
        );
    }
    Json(v)
}

async fn ws(ws: WebSocketUpgrade, State(st): State<Arc<AppState>>) -> Response {
    ws.on_upgrade(move |socket| listener(socket, st))
        .into_response()
}

/// One listener: controls in, paced frames and status out.
async fn listener(socket: WebSocket, st: Arc<AppState>) {
    let (mut tx, mut rx) = socket.split();
    let mut stream: Option<StreamHandle> = None;
    let mut playing = false;
    let mut seed = rill_mrt2::DEFAULT_SEED;
    let mut frame_tick = interval(Duration::from_millis(40));
    frame_tick.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let mut status_tick = interval(Duration::from_millis(250));
    status_tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut pcm = vec![0i16; FRAME_PCM];
    let mut sent: u64 = 0;
    loop {
        let reply: Option<String> = tokio::select! {
            msg = rx.next() => match msg {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                Some(Ok(Message::Text(t))) => handle(&st, &mut stream, &mut playing, &mut seed, &mut sent, t.as_str()),
                Some(Ok(Message::Binary(_))) => Some(protocol::error("bad_request", "binary messages are not accepted; send JSON text")),
                Some(Ok(_)) => None, // ping/pong are answered by the library
            },
            _ = frame_tick.tick(), if stream.is_some() => {
                let Some(h) = stream.as_mut() else { continue };
                if !playing && h.buffered_ms() >= PREBUFFER_MS.min(h.capacity_ms()) {
                    playing = true;
                }
                if playing && h.read_frame(&mut pcm) {
                    let bytes: Vec<u8> = pcm.iter().flat_map(|s| s.to_le_bytes()).collect();
                    if tx.send(Message::Binary(bytes.into())).await.is_err() {
                        break;
                    }
                    sent += 1;
                }
                None
            },
            _ = status_tick.tick(), if stream.is_some() => {
                stream.as_ref().map(|h| {
                    protocol::status(
                        h.stats.rtf(),
                        h.buffered_ms(),
                        h.stats.underruns.load(std::sync::atomic::Ordering::Relaxed),
                        sent,
                    )
                })
            },
        };
        if let Some(text) = reply {
            if tx.send(Message::Text(text.into())).await.is_err() {
                break;
            }
        }
    }
    // Dropping the handle frees the engine slot.
    drop(stream);
}

/// Applies one text message; returns a reply to send, if any.
fn handle(
    st: &AppState,
    stream: &mut Option<StreamHandle>,
    playing: &mut bool,
    seed: &mut u64,
    sent: &mut u64,
    text: &str,
) -> Option<String> {
    let send_all = |h: &StreamHandle, cs: Vec<Control>| -> Option<String> {
        for c in cs {
            if let Err(e) = h.send(c) {
                return Some(protocol::error("overloaded", &e.to_string()));
            }
        }
        None
    };
    match protocol::parse(text) {
        Err(e) => Some(protocol::error("bad_request", &e)),
        Ok(ClientMsg::Start { seed: s, controls }) => match stream {
            Some(h) => send_all(h, controls),
            None => {
                *seed = s.unwrap_or(rill_mrt2::DEFAULT_SEED);
                match st.engine.open(StreamConfig {
                    seed: *seed,
                    initial: controls,
                    ..Default::default()
                }) {
                    Ok(h) => {
                        *stream = Some(h);
                        *playing = false;
                        *sent = 0;
                        Some(protocol::started(*seed))
                    }
                    Err(e @ StreamError::Busy { capacity }) => {
                        Some(protocol::busy(&e.to_string(), st.engine.active(), capacity))
                    }
                    Err(e) => Some(protocol::error("internal", &e.to_string())),
                }
            }
        },
        Ok(ClientMsg::Control(cs)) => match stream {
            Some(h) => send_all(h, cs),
            None => Some(protocol::error(
                "bad_request",
                "no stream yet: send {\"type\":\"start\"} first",
            )),
        },
        Ok(ClientMsg::Reset) => match stream {
            Some(h) => send_all(h, vec![Control::Reset(*seed)]),
            None => Some(protocol::error("bad_request", "no stream to reset")),
        },
        Ok(ClientMsg::Stop) => {
            *stream = None;
            None
        }
    }
}
