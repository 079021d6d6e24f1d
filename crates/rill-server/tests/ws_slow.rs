//! A listener that stops reading: the server's sends block once the socket's
//! buffers are full, the stream's 200 ms engine buffer fills and its generation
//! pauses (so a stalled client costs bounded memory and no frames), and on
//! resuming the client hears the very frames it would have heard without the
//! stall.

mod common;

use common::*;
use rill_stream::{Control, Generator, FRAME_PCM};

const STYLE: [u16; 12] = [660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22];
/// How long the slow client reads nothing.
const STALL: Duration = Duration::from_secs(8);

/// A WebSocket whose client side has a small receive buffer, so a few frames
/// left unread fill it.
async fn connect_small_buffer(addr: &str) -> Ws {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(8 * 1024).unwrap();
    let stream = socket.connect(addr.parse().unwrap()).await.unwrap();
    tokio_tungstenite::client_async(format!("ws://{addr}/ws"), MaybeTlsStream::Plain(stream))
        .await
        .unwrap()
        .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_listener_fills_its_buffer_and_loses_no_frame() {
    // One stream, so that the scheduler serves it whenever its buffer has
    // room (with a second, starving stream on a machine slower than real time,
    // earliest-deadline-first would rightly serve only the other one).
    let addr = server(1).await;
    let mut slow = connect_small_buffer(&addr).await;
    let start = serde_json::json!({"type": "start", "style_codes": STYLE, "seed": 42});
    send(&mut slow, start).await;
    let mut heard = vec![clean_frame(&mut slow).await];

    // The client reads nothing for STALL.
    tokio::time::sleep(STALL).await;
    let paced = (STALL.as_secs_f64() / 0.040) as u64;

    // Resume: drain what the server queued before its sends blocked and what
    // it sends after, keeping the status reports.
    let mut reports = Vec::new();
    while heard.len() < 15 {
        match next(&mut slow, 60).await {
            Ok(frame) => heard.push(frame),
            Err(j) if j["type"] == "error" => panic!("the stalled stream got {j}"),
            Err(j) => reports.push(j),
        }
    }
    let sent = reports.iter().map(|j| j["frame"].as_u64().unwrap()).max();
    let sent = sent.expect("no status report");
    let slowest = reports.iter().map(|j| j["rtf"].as_f64().unwrap());
    let slowest = slowest.fold(0.0, f64::max);
    eprintln!("stalled {STALL:?} (real-time pace: {paced} frames); the reports: {reports:?}");
    // The server stopped sending once the socket was full, long before the
    // stall ended: by the end of the drain it has sent the frames queued when
    // it blocked plus the ones read since, far fewer than a paced stream...
    assert!(
        sent + 25 < paced,
        "the server sent {sent} frames during a stall of {paced} frames: the socket never filled"
    );
    // ...while the engine, even at the slowest pace it reported, could have
    // generated more frames than were sent plus the 5 its buffer holds: so the
    // buffer filled, and the frame-by-frame check below shows that generation
    // then paused instead of dropping (or queueing without bound).
    let could_generate = paced as f64 / slowest;
    assert!(
        could_generate > (sent + 5) as f64,
        "at RTF {slowest} the stall left room for only {could_generate:.0} frames"
    );

    // Every frame the stalled client heard is the stream's next frame: none
    // was lost or repeated.
    let (lm, codec) = weights();
    let pool = rill_stream::StagePools::new(rill_stream::Stages::Sequential, 2, None);
    let mut g = Generator::new(lm, codec, 42, &pool);
    g.apply(Control::Style(Some(STYLE))).unwrap();
    let mut pcm = vec![0i16; FRAME_PCM];
    for (i, frame) in heard.iter().enumerate() {
        g.step(&pool, &mut pcm);
        let bytes: Vec<u8> = pcm.iter().flat_map(|s| s.to_le_bytes()).collect();
        assert!(&bytes == frame, "frame {i} is not the stream's frame {i}");
    }
}
