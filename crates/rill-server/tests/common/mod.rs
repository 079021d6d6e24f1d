//! Helpers of the WebSocket tests: an in-process `rill serve` on random
//! weights, and a client that reads frames, JSON replies and close frames.
#![allow(dead_code)] // each test file uses a subset

pub use std::sync::{Arc, OnceLock};
pub use std::time::Duration;

pub use futures_util::{SinkExt, StreamExt};
pub use rill_checkpoint::Checkpoint;
pub use rill_mrt2::{ModelKind, Mrt2, Precision};
pub use rill_server::{AppState, ServerOptions};
pub use rill_spectrostream::Codec;
pub use rill_stream::{Engine, EngineConfig};
pub use tokio::net::TcpStream;
pub use tokio_tungstenite::tungstenite::Message;
pub use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub fn weights() -> (Arc<Mrt2>, Arc<Codec>) {
    static W: OnceLock<(Arc<Mrt2>, Arc<Codec>)> = OnceLock::new();
    W.get_or_init(|| {
        let ck = Checkpoint::open(rill_testkit::synthetic_checkpoint(
            ModelKind::Small.synth_file(0),
        ))
        .unwrap();
        (
            Arc::new(Mrt2::load(&ck, Precision::Int8).unwrap()),
            Arc::new(Codec::load(&ck).unwrap()),
        )
    })
    .clone()
}

/// An engine on [`weights`] with `threads` threads in `stages` and room for `max` streams.
pub fn engine(threads: usize, stages: rill_stream::Stages, max: usize) -> Engine {
    let (lm, codec) = weights();
    Engine::start(
        lm,
        codec,
        EngineConfig {
            threads,
            stages,
            max_sessions: Some(max),
            calibration_frames: 0,
            ..EngineConfig::default()
        },
    )
    .expect("starting the engine")
}

/// Starts a server with room for `max` streams; returns its address.
pub async fn server(max: usize) -> String {
    server_with(max, ServerOptions::default()).await
}

/// Starts a server with room for `max` streams and the given limits.
pub async fn server_with(max: usize, options: ServerOptions) -> String {
    server_state(max, options).await.0
}

/// As [`server_with`], also returning the server's state (its engine).
pub async fn server_state(max: usize, options: ServerOptions) -> (String, Arc<AppState>) {
    let engine = engine(2, rill_stream::Stages::TwoStage, max);
    let state = Arc::new(AppState::new(
        engine,
        serde_json::json!({"model": "mrt2_small", "precision": "int8"}),
        options,
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(rill_server::run(listener, state.clone()));
    (format!("{addr}"), state)
}

pub async fn connect(addr: &str) -> Ws {
    tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .unwrap()
        .0
}

/// Two listeners that have started and each received a first frame.
pub async fn two_playing(addr: &str) -> (Ws, Ws) {
    let mut a = connect(addr).await;
    let mut b = connect(addr).await;
    send(&mut a, serde_json::json!({"type": "start"})).await;
    send(&mut b, serde_json::json!({"type": "start"})).await;
    next_frame(&mut a).await;
    next_frame(&mut b).await;
    (a, b)
}

pub async fn send(ws: &mut Ws, v: serde_json::Value) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

/// Next message within `secs`: Ok(binary frame) or Err(parsed JSON text).
pub async fn next(ws: &mut Ws, secs: u64) -> Result<Vec<u8>, serde_json::Value> {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(secs), ws.next())
            .await
            .expect("timed out waiting for the server")
            .expect("socket closed")
            .unwrap();
        match m {
            Message::Binary(b) => return Ok(b.to_vec()),
            Message::Text(t) => return Err(serde_json::from_str(t.as_str()).unwrap()),
            _ => continue,
        }
    }
}

pub async fn next_frame(ws: &mut Ws) -> Vec<u8> {
    loop {
        if let Ok(b) = next(ws, 60).await {
            return b;
        }
    }
}

pub async fn next_json(ws: &mut Ws) -> serde_json::Value {
    loop {
        if let Err(j) = next(ws, 60).await {
            return j;
        }
    }
}

/// The next error message, skipping status reports (they arrive every 250 ms
/// while a stream plays, so they can come before the reply to a bad message).
pub async fn next_error(ws: &mut Ws) -> serde_json::Value {
    loop {
        let j = next_json(ws).await;
        if j["type"] == "error" {
            return j;
        }
    }
}

/// The next frame of a stream that must not see any error.
pub async fn clean_frame(ws: &mut Ws) -> Vec<u8> {
    loop {
        match next(ws, 60).await {
            Ok(b) => return b,
            Err(j) if j["type"] == "error" => panic!("the admitted stream got {j}"),
            Err(_) => continue,
        }
    }
}

/// Reads until the server closes; returns the last error code and message it
/// sent and the close code (0 when the socket ended without a close frame).
pub async fn closed_with(ws: &mut Ws) -> (String, String, u16) {
    let (mut code, mut message) = (String::new(), String::new());
    loop {
        let m = tokio::time::timeout(Duration::from_secs(60), ws.next())
            .await
            .expect("timed out waiting for the close");
        match m {
            Some(Ok(Message::Text(t))) => {
                let j: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
                if j["type"] == "error" {
                    code = j["code"].as_str().unwrap().to_string();
                    message = j["message"].as_str().unwrap_or("").to_string();
                }
            }
            Some(Ok(Message::Close(f))) => {
                return (code, message, f.map_or(0, |f| u16::from(f.code)))
            }
            Some(Ok(_)) => continue,
            other => panic!("socket ended without a close frame: {other:?}"),
        }
    }
}

/// The body of `GET path` (a minimal HTTP/1.1 client; no redirects, no chunking).
pub async fn http_get(addr: &str, path: &str) -> String {
    http_get_status(addr, path).await.1
}

/// The status and body of `GET path`.
pub async fn http_get_status(addr: &str, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, body.to_string())
}

/// POSTs the JSON `body` to `path`; returns (status, headers, de-chunked body).
pub async fn http_post(
    addr: &str,
    path: &str,
    body: &str,
    extra_headers: &str,
) -> (u16, String, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{extra_headers}\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(300), s.read_to_end(&mut raw))
        .await
        .expect("response within 300 s")
        .unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut rest = &raw[split + 4..];
    let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = Vec::new();
        loop {
            let eol = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let n = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap().trim(), 16)
                .unwrap();
            rest = &rest[eol + 2..];
            if n == 0 {
                break;
            }
            out.extend_from_slice(&rest[..n]);
            rest = &rest[n + 2..];
        }
        out
    } else {
        rest.to_vec()
    };
    (status, head, body)
}
