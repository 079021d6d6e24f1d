//! `GET /metrics`: the server's state in Prometheus's text format (OpenMetrics),
//! encoded by the `prometheus-client` crate:
//!
//! * `rill_streams{kind="music"|"speech"}`: streams running now; `rill_capacity_streams`:
//!   music streams the engine admits; `rill_measured_rtf`: its calibration;
//!   `rill_measured_speech_rtf`: one speech's, with a voice (0 = not measured);
//!   `rill_connections`: WebSockets open;
//! * `rill_frame_seconds`: histogram of how long each music frame took to make
//!   (40 ms is real time);
//! * `rill_underruns_total`: reads of a listener's stream that found too little
//!   audio (counted while the stream runs);
//! * `rill_requests_total{endpoint}` and `rill_refusals_total{endpoint, reason}`;
//! * `rill_resident_memory_bytes`.
//!
//! Counters are atomics bumped by the request handlers (never by the audio path);
//! the gauges and the histogram are read from the engine at each scrape.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::AppState;

type Labels = Vec<(&'static str, &'static str)>;

/// The counters the handlers bump.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    refusals: Family<Labels, Counter>,
    /// Underruns of streams, added by each socket as its stream counts them.
    pub(crate) underruns: Counter<u64, AtomicU64>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("rill");
        let requests = Family::<Labels, Counter>::default();
        let refusals = Family::<Labels, Counter>::default();
        let underruns = Counter::<u64, AtomicU64>::default();
        registry.register(
            "requests",
            "Requests and WebSocket streams asked for, by endpoint",
            requests.clone(),
        );
        registry.register(
            "refusals",
            "Requests refused, by endpoint and reason",
            refusals.clone(),
        );
        registry.register(
            "underruns",
            "Reads of a listener's stream that found too little audio",
            underruns.clone(),
        );
        Metrics {
            registry,
            requests,
            refusals,
            underruns,
        }
    }
}

impl Metrics {
    /// Counts a request to `endpoint` (`speech`, `openai_speech`, `stream`, …).
    pub fn request(&self, endpoint: &'static str) {
        self.requests
            .get_or_create(&vec![("endpoint", endpoint)])
            .inc();
    }

    /// Counts a refusal at `endpoint` for `reason` (`busy`, `bad_request`, `full`, …).
    pub fn refusal(&self, endpoint: &'static str, reason: &'static str) {
        self.refusals
            .get_or_create(&vec![("endpoint", endpoint), ("reason", reason)])
            .inc();
    }
}

/// Counts a request to `endpoint` and, unless `response` is a success, its refusal
/// by the status's reason.
pub(crate) fn count(metrics: &Metrics, endpoint: &'static str, response: &Response) {
    use axum::http::StatusCode;
    metrics.request(endpoint);
    let reason = match response.status() {
        s if s.is_success() => return,
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::NOT_FOUND => "no_voice",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        StatusCode::SERVICE_UNAVAILABLE => "busy",
        _ => "internal",
    };
    metrics.refusal(endpoint, reason);
}

/// The engine's frame times at the moment of a scrape.
#[derive(Debug)]
struct FrameHistogram {
    sum: f64,
    count: u64,
    buckets: Vec<(f64, u64)>,
}

impl EncodeMetric for FrameHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_histogram::<NoLabelSet>(self.sum, self.count, &self.buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// `GET /metrics`.
pub(crate) async fn metrics(State(st): State<Arc<AppState>>) -> Response {
    let mut live = Registry::with_prefix("rill");
    let streams = Family::<Labels, prometheus_client::metrics::gauge::Gauge>::default();
    streams
        .get_or_create(&vec![("kind", "music")])
        .set(st.engine.active() as i64);
    let speech = st.tts.as_ref().is_some_and(|t| t.busy());
    streams
        .get_or_create(&vec![("kind", "speech")])
        .set(i64::from(speech));
    live.register("streams", "Streams running now, by kind", streams);
    live.register(
        "speech_waiting",
        "Speech requests waiting in the queue behind the running one",
        ConstGauge::new(st.tts.as_ref().map_or(0, |t| t.waiting()) as i64),
    );
    live.register(
        "capacity_streams",
        "Music streams the engine admits at once",
        ConstGauge::new(st.engine.capacity() as i64),
    );
    live.register(
        "measured_rtf",
        "Real-time factor the engine measured at start-up (below 1 keeps up)",
        ConstGauge::new(f64::from(st.engine.measured_rtf())),
    );
    if let Some(t) = &st.tts {
        live.register(
            "measured_speech_rtf",
            "Real-time factor of one speech alone, measured at start-up (speech beside music gets the capacity the music leaves)",
            ConstGauge::new(f64::from(t.speaker().rtf())),
        );
    }
    live.register(
        "connections",
        "WebSocket connections open",
        ConstGauge::new(st.connections.open() as i64),
    );
    let times = st.engine.frame_times();
    live.register_with_unit(
        "frame",
        "Time to make one 40 ms music frame",
        prometheus_client::registry::Unit::Seconds,
        FrameHistogram {
            sum: times.sum_seconds(),
            count: times.count(),
            buckets: times.buckets(),
        },
    );
    if let Some(rss) = rill_stream::process::resident_bytes() {
        live.register_with_unit(
            "resident_memory",
            "Resident memory of the process",
            prometheus_client::registry::Unit::Bytes,
            ConstGauge::new(rss as i64),
        );
    }
    let mut text = String::new();
    let encoded =
        prometheus_client::encoding::text::encode_registry(&mut text, &st.metrics.registry)
            .and_then(|()| prometheus_client::encoding::text::encode_registry(&mut text, &live))
            .and_then(|()| prometheus_client::encoding::text::encode_eof(&mut text));
    if encoded.is_err() {
        return (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "cannot encode the metrics\n",
        )
            .into_response();
    }
    (
        [
            (
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            ),
            (header::CACHE_CONTROL, "no-store"),
        ],
        text,
    )
        .into_response()
}
