//! A panic inside the engine while it serves one listener: that listener gets
//! `{"type":"error","code":"internal"}` and a close; the other keeps playing.

mod common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_the_engine_fails_one_listener_and_the_other_keeps_playing() {
    let (addr, state) = server_state(2, ServerOptions::default()).await;
    let mut a = connect(&addr).await;
    let mut b = connect(&addr).await;
    send(&mut a, serde_json::json!({"type": "start"})).await;
    send(&mut b, serde_json::json!({"type": "start"})).await;
    next_frame(&mut a).await;
    next_frame(&mut b).await;
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

/// Reads until the socket closes after an `internal` error; panics on anything else.
async fn internal_close(ws: &mut Ws) {
    let mut got_error = false;
    loop {
        let m = tokio::time::timeout(Duration::from_secs(60), ws.next())
            .await
            .expect("timed out");
        match m {
            Some(Ok(Message::Text(t))) => {
                let j: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
                if j["type"] == "error" {
                    assert_eq!(j["code"], "internal", "{j}");
                    got_error = true;
                }
            }
            Some(Ok(Message::Close(_))) | None => {
                assert!(got_error, "closed without the internal error");
                return;
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => panic!("socket error {e}"),
        }
    }
}
