//! `/health` and `/ready`: ready while a stream slot is free, 503 while every slot
//! is taken, ready again once a listener leaves.

mod common;

use common::*;

/// (status, JSON body) of `GET path`.
async fn get_json(addr: &str, path: &str) -> (u16, serde_json::Value) {
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
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_follows_the_free_stream_slots() {
    let addr = server(1).await;
    let (s, v) = get_json(&addr, "/health").await;
    assert_eq!((s, v["status"].as_str()), (200, Some("ok")));
    let (s, v) = get_json(&addr, "/ready").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["ready"].as_bool(), v["free_slots"].as_u64()),
        (Some(true), Some(1))
    );
    assert_eq!(v["speech_busy"], false);
    // The one slot taken: not ready.
    let mut ws = connect(&addr).await;
    send(&mut ws, serde_json::json!({"type": "start"})).await;
    next_frame(&mut ws).await;
    let (s, v) = get_json(&addr, "/ready").await;
    assert_eq!(s, 503, "{v}");
    assert_eq!(
        (v["ready"].as_bool(), v["free_slots"].as_u64()),
        (Some(false), Some(0))
    );
    // The listener leaves: ready again (the engine frees the slot at once or soon).
    drop(ws);
    let mut ready = false;
    for _ in 0..100 {
        if get_json(&addr, "/ready").await.0 == 200 {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ready, "the slot is freed when the listener leaves");
}
