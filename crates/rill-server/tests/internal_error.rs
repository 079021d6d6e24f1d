//! A panic inside the engine while it serves one listener: that listener gets
//! `{"type":"error","code":"internal"}` and a close; the other keeps playing.

mod common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_the_engine_fails_one_listener_and_the_other_keeps_playing() {
    let (addr, state) = server_state(2, ServerOptions::default()).await;
    let (mut a, mut b) = two_playing(&addr).await;
    state.engine.inject_panic_in_pool();
    // Whichever stream the scheduler served next fails; read both until one ends.
    let failed = tokio::select! {
        () = internal_close(&mut a) => 'a',
        () = internal_close(&mut b) => 'b',
    };
    let alive = if failed == 'a' { &mut b } else { &mut a };
    for _ in 0..15 {
        clean_frame(alive).await;
    }
    // The freed slot admits a new listener, which plays.
    let mut c = connect(&addr).await;
    send(&mut c, serde_json::json!({"type": "start"})).await;
    for _ in 0..5 {
        clean_frame(&mut c).await;
    }
}

/// Reads until the socket closes after an `internal` error and a 1011 close.
async fn internal_close(ws: &mut Ws) {
    let (code, message, close) = closed_with(ws).await;
    assert_eq!((code.as_str(), close), ("internal", 1011), "{message}");
}
