//! The music listener of the examples: connects to `/ws`, starts a stream and reads
//! what comes, counting the frames and keeping the server's underrun count.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub struct Listener {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// Audio frames received.
    pub frames: u64,
    /// The server's count of this stream's underruns (from its status messages).
    pub underruns: u64,
}

impl Listener {
    /// Connects to `ws://ADDR/ws` and starts a stream (seed 42).
    pub async fn start(addr: &str) -> Listener {
        let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
            .await
            .unwrap_or_else(|e| panic!("cannot connect to ws://{addr}/ws: {e}"));
        let start = serde_json::json!({"type": "start", "seed": 42});
        ws.send(Message::Text(start.to_string().into()))
            .await
            .expect("sending start");
        Listener {
            ws,
            frames: 0,
            underruns: 0,
        }
    }

    /// Sends one JSON message.
    #[allow(dead_code)] // Each example includes this module; not every one sends.
    pub async fn send(&mut self, msg: serde_json::Value) {
        self.ws
            .send(Message::Text(msg.to_string().into()))
            .await
            .expect("sending a message");
    }

    /// Reads for at most 50 ms: frames and status messages are counted, server
    /// errors printed, any other JSON message returned.
    pub async fn poll(&mut self) -> Option<serde_json::Value> {
        let m = match tokio::time::timeout(Duration::from_millis(50), self.ws.next()).await {
            Err(_) => return None,
            Ok(Some(Ok(m))) => m,
            Ok(other) => panic!("the music socket ended: {other:?}"),
        };
        match m {
            Message::Binary(_) => self.frames += 1,
            Message::Text(t) => {
                let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                match v["type"].as_str() {
                    Some("status") => {
                        self.underruns = v["underruns"].as_u64().unwrap_or(self.underruns)
                    }
                    Some("error") => eprintln!("music: server error: {v}"),
                    _ => return Some(v),
                }
            }
            _ => {}
        }
        None
    }
}
