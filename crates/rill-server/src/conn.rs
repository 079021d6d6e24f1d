//! One WebSocket connection: controls in, paced frames and status out, and style
//! prompts handed to the encoder thread ([`crate::style`]) whose codes reach the
//! stream when ready. A `start` with prompts opens the stream once its style is
//! known; a newer prompt replaces one still encoding.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{close_code, CloseFrame, Message, WebSocket};
use futures_util::{SinkExt, StreamExt};
use rill_stream::{Control, StreamConfig, StreamError, StreamHandle, FRAME_PCM};
use tokio::sync::oneshot;
use tokio::time::{interval, MissedTickBehavior};

use crate::limits::ConnectionPermit;
use crate::protocol::{self, ClientMsg, PromptSpec};
use crate::style::Styled;
use crate::{too_large, AppState, CLOSE_LINGER, PREBUFFER_MS};

type StyleReply = oneshot::Receiver<Result<Styled, String>>;

/// A connection's state between messages.
struct Conn {
    st: Arc<AppState>,
    stream: Option<StreamHandle>,
    playing: bool,
    seed: u64,
    sent: u64,
    /// The stream's underruns already added to `/metrics`.
    underruns_counted: u64,
    /// A blend being encoded.
    pending_style: Option<StyleReply>,
    /// A `start` waiting for its style: the seed and controls to open with.
    pending_start: Option<(u64, Vec<Control>)>,
}

/// Serves one socket until it closes. `_permit` is its connection slot, freed when
/// this returns.
pub(crate) async fn listener(socket: WebSocket, st: Arc<AppState>, _permit: ConnectionPermit) {
    let (mut tx, mut rx) = socket.split();
    let idle_timeout = st.idle_timeout;
    let mut c = Conn {
        st,
        stream: None,
        playing: false,
        seed: rill_mrt2::DEFAULT_SEED,
        sent: 0,
        underruns_counted: 0,
        pending_style: None,
        pending_start: None,
    };
    let mut frame_tick = interval(Duration::from_millis(40));
    frame_tick.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let mut status_tick = interval(Duration::from_millis(250));
    status_tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut pcm = vec![0i16; FRAME_PCM];
    let mut idle_deadline = tokio::time::Instant::now() + idle_timeout;
    loop {
        let replies: Vec<String> = tokio::select! {
            msg = rx.next() => { idle_deadline = tokio::time::Instant::now() + idle_timeout; match msg {
                Some(Err(e)) => {
                    // The reader cannot go on past an oversized message (it
                    // would buffer it); say why and close.
                    if let Some(text) = too_large(&e) {
                        let close = CloseFrame { code: close_code::SIZE, reason: "message too big".into() };
                        if tx.send(Message::Text(text.into())).await.is_ok()
                            && tx.send(Message::Close(Some(close))).await.is_ok()
                        {
                            tokio::time::sleep(CLOSE_LINGER).await;
                        }
                    }
                    break;
                }
                None | Some(Ok(Message::Close(_))) => break,
                Some(Ok(Message::Text(t))) => c.handle(t.as_str()).into_iter().collect(),
                Some(Ok(Message::Binary(_))) => vec![protocol::error("bad_request", "binary messages are not accepted; send JSON text")],
                Some(Ok(_)) => vec![], // ping/pong are answered by the library
            }},
            styled = style_result(&mut c.pending_style), if c.pending_style.is_some() => {
                c.pending_style = None;
                c.styled(styled)
            },
            _ = tokio::time::sleep_until(idle_deadline), if c.stream.is_none() && c.pending_start.is_none() => {
                let text = protocol::error("idle", &format!(
                    "no stream and no message for {} s; closing this connection (rill serve --idle-timeout)",
                    idle_timeout.as_secs()
                ));
                let close = CloseFrame { code: close_code::NORMAL, reason: "idle".into() };
                if tx.send(Message::Text(text.into())).await.is_ok() {
                    let _ = tx.send(Message::Close(Some(close))).await;
                }
                break;
            },
            _ = frame_tick.tick(), if c.stream.is_some() => {
                let Some(h) = c.stream.as_mut() else { continue };
                if h.failed() {
                    // The engine dropped this stream after a panic (a bug, logged
                    // on stderr); the other listeners keep playing.
                    let text = protocol::error("internal", "the engine hit an internal error on this stream and stopped it; reconnect to start a new one");
                    let close = CloseFrame { code: close_code::ERROR, reason: "internal error".into() };
                    if tx.send(Message::Text(text.into())).await.is_ok() {
                        let _ = tx.send(Message::Close(Some(close))).await;
                    }
                    break;
                }
                if !c.playing && h.buffered_ms() >= PREBUFFER_MS.min(h.capacity_ms()) {
                    c.playing = true;
                }
                if c.playing && h.read_frame(&mut pcm) {
                    let bytes: Vec<u8> = pcm.iter().flat_map(|s| s.to_le_bytes()).collect();
                    if tx.send(Message::Binary(bytes.into())).await.is_err() {
                        break;
                    }
                    c.sent += 1;
                }
                vec![]
            },
            _ = status_tick.tick(), if c.stream.is_some() => {
                if let Some(h) = c.stream.as_ref() {
                    let now = h.stats.underruns.load(std::sync::atomic::Ordering::Relaxed);
                    c.st.metrics
                        .underruns
                        .inc_by(now.saturating_sub(c.underruns_counted));
                    c.underruns_counted = now;
                }
                c.stream.as_ref().map(|h| {
                    protocol::status(
                        h.stats.rtf(),
                        h.buffered_ms(),
                        h.stats.underruns.load(std::sync::atomic::Ordering::Relaxed),
                        c.sent,
                    )
                }).into_iter().collect()
            },
        };
        for text in replies {
            if tx.send(Message::Text(text.into())).await.is_err() {
                // Dropping the handle frees the engine slot.
                return;
            }
        }
    }
}

impl Conn {
    /// Applies one text message; returns a reply to send, if any.
    fn handle(&mut self, text: &str) -> Option<String> {
        match protocol::parse(text) {
            Err(e) => Some(protocol::error("bad_request", &e)),
            Ok(ClientMsg::Start {
                seed,
                controls,
                prompts,
            }) => {
                if self.stream.is_some() || self.pending_start.is_some() {
                    // A second start changes the open (or opening) stream.
                    return self.control(controls, prompts);
                }
                let seed = seed.unwrap_or(rill_mrt2::DEFAULT_SEED);
                match prompts {
                    Some(p) => {
                        if let Err(e) = self.encode(&p) {
                            return Some(e);
                        }
                        self.pending_start = Some((seed, controls));
                        None
                    }
                    None => Some(self.open(seed, controls, None)),
                }
            }
            Ok(ClientMsg::Control { controls, prompts }) => {
                if self.stream.is_none() && self.pending_start.is_none() {
                    return Some(protocol::error(
                        "bad_request",
                        "no stream yet: send {\"type\":\"start\"} first",
                    ));
                }
                self.control(controls, prompts)
            }
            Ok(ClientMsg::Reset) => match &self.stream {
                Some(h) => send_all(h, vec![Control::Reset(self.seed)]),
                None => Some(protocol::error("bad_request", "no stream to reset")),
            },
            Ok(ClientMsg::Stop) => {
                self.stream = None;
                self.pending_start = None;
                self.pending_style = None;
                None
            }
        }
    }

    /// Controls for the open stream, or added to the start that waits for its style.
    fn control(
        &mut self,
        controls: Vec<Control>,
        prompts: Option<Vec<PromptSpec>>,
    ) -> Option<String> {
        if let Some(p) = &prompts {
            if let Err(e) = self.encode(p) {
                return Some(e);
            }
        } else if controls.iter().any(|c| matches!(c, Control::Style(_))) {
            // Codes sent now win over a blend still encoding.
            self.pending_style = None;
        }
        match (&self.stream, &mut self.pending_start) {
            (Some(h), _) => send_all(h, controls),
            (None, Some((_, waiting))) => {
                waiting.extend(controls);
                None
            }
            (None, None) => None,
        }
    }

    /// Hands a blend to the encoder (replacing one still encoding).
    fn encode(&mut self, prompts: &[PromptSpec]) -> Result<(), String> {
        let Some(service) = &self.st.style else {
            return Err(protocol::error(
                "style",
                "this server has no MusicCoCa, so no text or audio prompts: send style_codes, or start rill serve with MusicCoCa beside the checkpoint (or --musiccoca DIR)",
            ));
        };
        let rx = service
            .submit(prompts)
            .map_err(|e| protocol::error("style", &e))?;
        self.pending_style = Some(rx);
        Ok(())
    }

    /// A blend's result: applied to the stream, or opening the stream that waited.
    fn styled(
        &mut self,
        r: Result<Result<Styled, String>, oneshot::error::RecvError>,
    ) -> Vec<String> {
        let styled = match r {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                self.pending_start = None;
                return vec![protocol::error(
                    "style",
                    &format!("the prompts could not be encoded ({e}); the style is unchanged"),
                )];
            }
            Err(_) => {
                self.pending_start = None;
                return vec![protocol::error(
                    "style",
                    "the style encoder stopped (see the server's log); the style is unchanged",
                )];
            }
        };
        let style = Control::Style(Some(styled.codes));
        if let Some((seed, controls)) = self.pending_start.take() {
            let opened = self.open(seed, controls, Some(style));
            if self.stream.is_none() {
                return vec![opened];
            }
            return vec![
                opened,
                protocol::style(&styled.codes, styled.ms, styled.warning.clone()),
            ];
        }
        match &self.stream {
            Some(h) => match send_all(h, vec![style]) {
                Some(err) => vec![err],
                None => vec![protocol::style(
                    &styled.codes,
                    styled.ms,
                    styled.warning.clone(),
                )],
            },
            None => vec![],
        }
    }

    /// Opens the stream: the server's initial controls (`rill serve --prompt`, …),
    /// then the client's, then the style of its prompts.
    fn open(&mut self, seed: u64, controls: Vec<Control>, style: Option<Control>) -> String {
        self.seed = seed;
        let mut initial = self.st.initial.clone();
        initial.extend(controls);
        initial.extend(style);
        match self.st.engine.open(StreamConfig {
            seed,
            initial,
            ..Default::default()
        }) {
            Ok(h) => {
                self.st.metrics.request("stream");
                self.stream = Some(h);
                self.playing = false;
                self.sent = 0;
                self.underruns_counted = 0;
                protocol::started(seed)
            }
            Err(e @ StreamError::Busy { capacity }) => {
                self.st.metrics.refusal("stream", "full");
                protocol::busy(&e.to_string(), self.st.engine.active(), capacity)
            }
            Err(e @ StreamError::TooSlow { .. }) => {
                self.st.metrics.refusal("stream", "too_slow");
                protocol::error("too_slow", &e.to_string())
            }
            Err(e) => protocol::error("internal", &e.to_string()),
        }
    }
}

/// The result of the blend being encoded (never ready without one).
async fn style_result(
    pending: &mut Option<StyleReply>,
) -> Result<Result<Styled, String>, oneshot::error::RecvError> {
    match pending {
        Some(rx) => rx.await,
        None => std::future::pending().await,
    }
}

/// Sends controls in order; the first refusal is the reply.
fn send_all(h: &StreamHandle, cs: Vec<Control>) -> Option<String> {
    for c in cs {
        if let Err(e) = h.send(c) {
            return Some(protocol::error("overloaded", &e.to_string()));
        }
    }
    None
}
