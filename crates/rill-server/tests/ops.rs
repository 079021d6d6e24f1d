//! `/health`, `/ready` and `/metrics`: ready while a stream slot is free, 503 while
//! every slot is taken, ready again once a listener leaves; the metrics count the
//! stream, its frames and the refusal of a second one.

mod common;

use common::*;

/// (status, JSON body) of `GET path`.
async fn get_json(addr: &str, path: &str) -> (u16, serde_json::Value) {
    let (status, body) = http_get_status(addr, path).await;
    (status, serde_json::from_str(&body).unwrap())
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
    // A second listener is refused (one slot); the metrics show both.
    let mut second = connect(&addr).await;
    send(&mut second, serde_json::json!({"type": "start"})).await;
    let busy = next_json(&mut second).await;
    assert_eq!(busy["code"], "busy", "{busy}");
    for _ in 0..5 {
        next_frame(&mut ws).await;
    }
    let text = http_get(&addr, "/metrics").await;
    for line in [
        "rill_streams{kind=\"music\"} 1",
        "rill_streams{kind=\"speech\"} 0",
        "rill_capacity_streams 1",
        "rill_requests_total{endpoint=\"stream\"} 1",
        "rill_refusals_total{endpoint=\"stream\",reason=\"full\"} 1",
        "# TYPE rill_frame_seconds histogram",
        "rill_frame_seconds_bucket{le=\"+Inf\"}",
        "# EOF",
    ] {
        assert!(text.contains(line), "{line} not in:\n{text}");
    }
    let frames: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("rill_frame_seconds_count "))
        .expect("a frame count")
        .trim()
        .parse()
        .unwrap();
    assert!(frames >= 5, "{frames} frames counted\n{text}");
    drop(second);
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
