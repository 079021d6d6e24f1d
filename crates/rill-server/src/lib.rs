//! `rill serve`: the browser instrument at `/`, one WebSocket audio stream per
//! listener at `/ws` (protocol in [`protocol`]), `/api/info`, and with a voice
//! loaded, streaming text-to-speech at `POST /api/tts` ([`tts`]) and OpenAI's
//! `POST /v1/audio/speech` ([`openai`]); `/health` and `/ready` for load balancers
//! (`ops`), `/metrics` for Prometheus ([`metrics`]); with MusicCoCa,
//! style prompts in the protocol and audio clips at `POST /api/clips` ([`style`]).
//!
//! Generation runs on the [`Engine`]'s scheduler thread, never on the async
//! runtime; each socket task only moves finished frames out at real-time pace
//! (one per 40 ms) and controls in. A closed socket drops its stream, which frees
//! the engine slot for the next listener.
//!
//! Every request must name this server in its `Host` header (an IP address,
//! `localhost`, or `--allow-host`; else HTTP 403: the DNS-rebinding guard).
//! Before a socket opens, [`limits`] refuses foreign page origins (HTTP 403),
//! upgrades beyond `--max-upgrade-rate` ([`rate`], HTTP 429) and connections beyond
//! `--max-connections` (HTTP 503); once open, a message over
//! [`limits::MAX_MESSAGE_BYTES`] closes that socket with one error, and so does
//! `--idle-timeout` without a stream or a message.

#![deny(unsafe_op_in_unsafe_fn)]

mod conn;
pub mod limits;
pub mod metrics;
pub mod openai;
mod ops;
pub mod protocol;
pub mod rate;
pub mod speech_queue;
pub mod style;
pub mod tts;
pub mod wyoming;

use std::error::Error as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::DefaultBodyLimit;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use rill_stream::Engine;
use tokio::time::{interval, MissedTickBehavior};

use limits::{ConnectionLimit, HostName, HostRefusal, Origin, OriginRefusal, MAX_MESSAGE_BYTES};
use rate::UpgradeRate;

/// The single-page instrument: markup, style, the jitter buffer / AudioWorklet
/// processor, the notes input, the style prompts, the speech card (`/api/tts`) and
/// the page's logic, each its own file, built into the binary.
pub const INDEX_HTML: &str = include_str!("../web/index.html");
const STYLE_CSS: &str = include_str!("../web/style.css");
const WORKLET_JS: &str = include_str!("../web/worklet.js");
const NOTES_JS: &str = include_str!("../web/notes.js");
const PROMPTS_JS: &str = include_str!("../web/prompts.js");
const SPEECH_JS: &str = include_str!("../web/speech.js");
const APP_JS: &str = include_str!("../web/app.js");

/// Frames buffered before playback pacing starts (so a stream does not begin
/// with underruns while its queue fills).
const PREBUFFER_MS: f32 = 120.0;

/// How long a socket closed for an oversized message stays open: the unread
/// rest of that message would make the kernel reset the connection at once,
/// which can discard the error and close frame before the client reads them.
const CLOSE_LINGER: Duration = Duration::from_millis(500);

/// The admission limits of `rill serve` (see [`limits`]).
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Most WebSocket connections open at once, streaming or not.
    pub max_connections: usize,
    /// Page origins admitted besides the server's own.
    pub allowed_origins: Vec<Origin>,
    /// Host names admitted in the `Host` header besides IP addresses and
    /// `localhost` (the DNS-rebinding check, [`limits::check_host`]).
    pub allowed_hosts: Vec<HostName>,
    /// New WebSockets per second (sustained; bursts of as many).
    pub max_upgrades_per_second: u32,
    /// A socket with no stream that sends nothing for this long is closed, so
    /// idle clients cannot hold every connection slot.
    pub idle_timeout: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            max_connections: limits::DEFAULT_MAX_CONNECTIONS,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_upgrades_per_second: rate::DEFAULT_UPGRADES_PER_SECOND,
            idle_timeout: limits::DEFAULT_IDLE_TIMEOUT,
        }
    }
}

/// Shared server state.
pub struct AppState {
    pub engine: Engine,
    /// Static facts shown by `/api/info` (model, precision, …).
    pub info: serde_json::Value,
    allowed_origins: Vec<Origin>,
    allowed_hosts: Vec<HostName>,
    connections: ConnectionLimit,
    upgrades: UpgradeRate,
    idle_timeout: Duration,
    /// The voice of `/api/tts`, if one was loaded.
    pub tts: Option<Arc<tts::TtsService>>,
    /// MusicCoCa for style prompts, if it was found.
    pub style: Option<Arc<style::StyleService>>,
    /// Controls every stream starts with, before its client's (`rill serve
    /// --prompt`, `--style-codes`, `--style-levels`).
    initial: Vec<rill_stream::Control>,
    /// Counters of `/metrics`.
    pub metrics: metrics::Metrics,
}

impl AppState {
    pub fn new(engine: Engine, info: serde_json::Value, options: ServerOptions) -> AppState {
        AppState {
            engine,
            info,
            allowed_origins: options.allowed_origins,
            allowed_hosts: options.allowed_hosts,
            connections: ConnectionLimit::new(options.max_connections),
            upgrades: UpgradeRate::new(options.max_upgrades_per_second),
            idle_timeout: options.idle_timeout,
            tts: None,
            style: None,
            initial: Vec::new(),
            metrics: metrics::Metrics::default(),
        }
    }

    /// Sets the controls every stream starts with (its client's come after them).
    pub fn with_initial(mut self, controls: Vec<rill_stream::Control>) -> AppState {
        self.initial = controls;
        self
    }

    /// Adds MusicCoCa: streams take text and audio prompts.
    pub fn with_style(mut self, service: style::StyleService) -> AppState {
        self.style = Some(Arc::new(service));
        self
    }

    /// Adds a voice: `POST /api/tts` speaks with it.
    pub fn with_tts(mut self, service: tts::TtsService) -> AppState {
        self.tts = Some(Arc::new(service));
        self
    }

    /// Page origins admitted besides the server's own.
    pub fn allowed_origins(&self) -> &[Origin] {
        &self.allowed_origins
    }
}

/// The HTTP routes.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(|| async { Html(INDEX_HTML) }))
        .route("/style.css", get(|| async { asset("text/css", STYLE_CSS) }))
        .route(
            "/worklet.js",
            get(|| async { asset(JAVASCRIPT, WORKLET_JS) }),
        )
        .route("/notes.js", get(|| async { asset(JAVASCRIPT, NOTES_JS) }))
        .route(
            "/prompts.js",
            get(|| async { asset(JAVASCRIPT, PROMPTS_JS) }),
        )
        .route("/speech.js", get(|| async { asset(JAVASCRIPT, SPEECH_JS) }))
        .route("/app.js", get(|| async { asset(JAVASCRIPT, APP_JS) }))
        .route(
            "/favicon.ico",
            get(|| async { axum::http::StatusCode::NO_CONTENT }),
        )
        .route("/ws", get(ws))
        .route("/api/info", get(info))
        .route("/health", get(ops::health))
        .route("/ready", get(ops::ready))
        .route("/metrics", get(metrics::metrics))
        .route(
            "/api/clips",
            post(style::upload).layer(DefaultBodyLimit::max(style::MAX_CLIP_BYTES)),
        )
        .route(
            "/api/tts",
            post(tts::speak).layer(DefaultBodyLimit::max(tts::MAX_TTS_BODY_BYTES)),
        )
        .route(
            "/v1/audio/speech",
            // Above the handler's own limit, so that a large body gets its JSON error.
            post(openai::speech).layer(DefaultBodyLimit::max(4 * tts::MAX_TTS_BODY_BYTES)),
        )
        .route("/v1/models", get(openai::models))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            host_guard,
        ))
        .with_state(state)
}

/// Every route: the `Host` must name this server (see [`limits::check_host`]),
/// else HTTP 403 before the request reaches its handler.
async fn host_guard(
    State(st): State<Arc<AppState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match limits::check_host(request.headers(), &st.allowed_hosts) {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            let why = match refusal {
                HostRefusal::Malformed => "the Host header is not a single host[:port]".to_string(),
                HostRefusal::Foreign(h) => format!("{h} is not a name of this server"),
            };
            (
                StatusCode::FORBIDDEN,
                format!(
                    "forbidden: {why}; open rill by IP address (http://127.0.0.1:PORT/) or \
                     localhost, or start rill serve with --allow-host NAME\n"
                ),
            )
                .into_response()
        }
    }
}

const JAVASCRIPT: &str = "text/javascript";

/// A file of the page, with its type (charset: the sources are UTF-8).
fn asset(kind: &'static str, body: &'static str) -> Response {
    let content_type = format!("{kind}; charset=utf-8");
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// Serves until the process ends.
pub async fn run(listener: tokio::net::TcpListener, state: Arc<AppState>) -> std::io::Result<()> {
    tokio::spawn(release_memory_when_idle(Arc::clone(&state)));
    axum::serve(
        listener,
        router(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
}

/// Once a second: when every connection has closed since the last look, hands
/// the memory they freed back to the OS, so the resident set returns to its
/// baseline after a burst of listeners or a connect flood (glibc keeps freed
/// memory in the arena of the thread that used it otherwise).
async fn release_memory_when_idle(st: Arc<AppState>) {
    let mut tick = interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut released_at = st.connections.admitted();
    loop {
        tick.tick().await;
        let admitted = st.connections.admitted();
        if admitted != released_at && st.connections.open() == 0 {
            rill_stream::process::release_free_memory();
            released_at = admitted;
        }
    }
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
        o.insert("connections".into(), st.connections.open().into());
        o.insert("max_connections".into(), st.connections.max().into());
        o.insert("max_message_bytes".into(), MAX_MESSAGE_BYTES.into());
        o.insert("protocol".into(), protocol::PROTOCOL_VERSION.into());
        if let Some(t) = &st.tts {
            o.insert("tts".into(), t.info());
        }
        if let Some(s) = &st.style {
            o.insert("style".into(), s.info());
        }
        for c in &st.initial {
            match c {
                rill_stream::Control::Style(Some(codes)) => {
                    o.insert("default_style_codes".into(), codes.to_vec().into());
                }
                rill_stream::Control::StyleLevels(l) => {
                    o.insert("default_style_levels".into(), l.count().into());
                }
                _ => {}
            }
        }
        // For overload and soak runs: memory must return to its baseline.
        o.insert(
            "rss_bytes".into(),
            rill_stream::process::resident_bytes().into(),
        );
    }
    Json(v)
}

/// The upgrade: origin first (a foreign page learns nothing else and spends no
/// upgrade budget), then the upgrade rate, then a connection slot, held by the
/// socket task until it ends.
async fn ws(ws: WebSocketUpgrade, headers: HeaderMap, State(st): State<Arc<AppState>>) -> Response {
    if let Err(refusal) = limits::check_origin(&headers, &st.allowed_origins) {
        let why = match refusal {
            OriginRefusal::Malformed => {
                "the Origin header is not a single scheme://host[:port]".to_string()
            }
            OriginRefusal::Foreign(o) => format!("pages from {o} may not connect"),
        };
        let body = format!(
            "forbidden: {why}; open the instrument from this server, or start rill serve with --allow-origin ORIGIN\n"
        );
        st.metrics.refusal("ws", "origin");
        return (StatusCode::FORBIDDEN, body).into_response();
    }
    if let Err(wait) = st.upgrades.try_admit() {
        st.metrics.refusal("ws", "rate");
        let secs = wait.as_secs() + 1;
        let body = format!(
            "too many new connections: this server opens at most {} WebSockets per second (rill serve --max-upgrade-rate); retry in {secs} s\n",
            st.upgrades.per_second()
        );
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, secs.to_string())],
            body,
        )
            .into_response();
    }
    let Some(permit) = st.connections.try_acquire() else {
        st.metrics.refusal("ws", "connections");
        let body = format!(
            "too many connections: this server accepts {} WebSocket connections at once (rill serve --max-connections); try again when one closes\n",
            st.connections.max()
        );
        return (StatusCode::SERVICE_UNAVAILABLE, body).into_response();
    };
    ws.max_message_size(MAX_MESSAGE_BYTES)
        .max_frame_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| conn::listener(socket, st, permit))
        .into_response()
}

/// The reply to a message over [`MAX_MESSAGE_BYTES`], if `e` is that.
fn too_large(e: &axum::Error) -> Option<String> {
    use tungstenite::error::{CapacityError, Error};
    match e.source()?.downcast_ref::<Error>()? {
        Error::Capacity(CapacityError::MessageTooLong { size, max_size }) => Some(protocol::error(
            "too_large",
            &format!(
                "a message of {size} bytes is over the limit of {max_size}; send one control message at a time (they are small JSON objects). Closing this connection."
            ),
        )),
        _ => None,
    }
}
