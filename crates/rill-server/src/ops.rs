//! Endpoints for load balancers and orchestrators:
//!
//! * `GET /health`: 200 `{"status": "ok"}` while the process serves (liveness).
//! * `GET /ready`: 200 while a music stream can be admitted, 503 while every stream
//!   slot is taken or none is admitted because one would stutter (readiness; a
//!   balancer sends new listeners elsewhere); both with `{"ready", "free_slots",
//!   "capacity", "active", "speech_busy", "speech_waiting", "too_slow"}` (speech
//!   does not count against the music's slots: [`crate::speech_queue`]). The server
//!   listens only once its models are loaded, so a reachable server is loaded.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::AppState;

/// `GET /health`.
pub(crate) async fn health() -> Response {
    (
        [(header::CACHE_CONTROL, "no-store")],
        Json(serde_json::json!({"status": "ok"})),
    )
        .into_response()
}

/// `GET /ready`.
pub(crate) async fn ready(State(st): State<Arc<AppState>>) -> Response {
    let (capacity, active) = (st.engine.capacity(), st.engine.active());
    let free = capacity.saturating_sub(active);
    let body = serde_json::json!({
        "ready": free > 0,
        "free_slots": free,
        "capacity": capacity,
        "active": active,
        "speech_busy": st.tts.as_ref().is_some_and(|t| t.busy()),
        "speech_waiting": st.tts.as_ref().map_or(0, |t| t.waiting()),
        "too_slow": st.engine.too_slow().is_some(),
    });
    let status = if free > 0 {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, [(header::CACHE_CONTROL, "no-store")], Json(body)).into_response()
}
