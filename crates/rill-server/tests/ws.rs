//! `rill serve` over a real WebSocket: frame format, status, control round trip,
//! malformed input, busy rejection while admitted streams keep playing, a closed
//! socket freeing its slot, and the key-press-to-audible-change latency.
//! Then the limits: oversized messages, out-of-range controls, garbage from one
//! client while another streams, the Host and Origin checks, the idle timeout
//! and the connection cap.

mod common;

use common::*;
use rill_stream::{Control, Generator, FRAME_PCM};
const STYLE: [u16; 12] = [660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_status_controls_and_errors() {
    let addr = server(2).await;
    let info: serde_json::Value =
        serde_json::from_str(&http_get(&addr, "/api/info").await).unwrap();
    assert_eq!(info["capacity"], 2);
    let page = http_get(&addr, "/").await;
    assert!(page.contains("<html"), "the instrument page is served at /");
    // …and each file it loads.
    for (path, needle) in [
        ("/style.css", ".top"),
        ("/worklet.js", "class JitterBuffer"),
        ("/notes.js", "function installNotes"),
        ("/prompts.js", "function installPrompts"),
        ("/app.js", "new WebSocket"),
    ] {
        assert!(page.contains(&path[1..]), "the page does not load {path}");
        assert!(http_get(&addr, path).await.contains(needle), "{path}");
    }

    let mut ws = connect(&addr).await;
    // Control before start is a bad request, not a crash.
    send(&mut ws, serde_json::json!({"type": "control", "top_k": 10})).await;
    assert_eq!(next_json(&mut ws).await["code"], "bad_request");
    send(
        &mut ws,
        serde_json::json!({"type": "start", "style_codes": STYLE, "drums": "on", "seed": 42}),
    )
    .await;
    let f = next_frame(&mut ws).await;
    assert_eq!(f.len(), 7680, "1920 stereo int16 samples");
    let status = loop {
        let j = next_json(&mut ws).await;
        if j["type"] == "status" {
            break j;
        }
    };
    for k in ["rtf", "buffer_ms", "underruns", "frame"] {
        assert!(status[k].is_number(), "status.{k}: {status}");
    }
    // Controls are accepted silently; malformed ones get an error and the stream goes on.
    send(&mut ws, serde_json::json!({"type": "control", "notes": [60, 64], "temperature": 1.0, "cfg_notes": 2})).await;
    for bad in [
        serde_json::json!({"type": "control", "style_codes": [1, 2]}),
        serde_json::json!({"type": "control", "notes": [300]}),
        serde_json::json!({"type": "jump"}),
    ] {
        send(&mut ws, bad).await;
        assert_eq!(next_error(&mut ws).await["code"], "bad_request");
    }
    ws.send(Message::Text("{not json".into())).await.unwrap();
    assert_eq!(next_error(&mut ws).await["code"], "bad_request");
    ws.send(Message::Binary(vec![1, 2, 3].into()))
        .await
        .unwrap();
    assert_eq!(next_error(&mut ws).await["code"], "bad_request");
    assert_eq!(
        next_frame(&mut ws).await.len(),
        7680,
        "still streaming after errors"
    );
    send(&mut ws, serde_json::json!({"type": "stop"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_listeners_are_refused_and_admitted_ones_keep_playing() {
    let addr = server(2).await;
    let (mut a, mut b) = two_playing(&addr).await;
    // Ten listeners on a server that sustains two: eight are refused cleanly.
    let mut refused = Vec::new();
    for _ in 0..8 {
        let mut c = connect(&addr).await;
        send(&mut c, serde_json::json!({"type": "start"})).await;
        let j = next_json(&mut c).await;
        assert_eq!(j["code"], "busy", "{j}");
        assert!(j["message"].as_str().unwrap().contains("busy"));
        assert_eq!(
            (j["active"].as_u64(), j["capacity"].as_u64()),
            (Some(2), Some(2)),
            "{j}"
        );
        refused.push(c);
    }
    for _ in 0..5 {
        assert_eq!(next_frame(&mut a).await.len(), 7680);
        assert_eq!(next_frame(&mut b).await.len(), 7680);
    }
    // A closed socket frees its slot.
    a.close(None).await.unwrap();
    drop(a);
    let mut c = refused.pop().unwrap();
    let mut admitted = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        send(&mut c, serde_json::json!({"type": "start"})).await;
        match next(&mut c, 60).await {
            Ok(_) => {
                admitted = true;
                break;
            }
            Err(j) if j["code"] == "busy" => continue,
            Err(j) if j["type"] == "status" || j["type"] == "started" => {
                admitted = true;
                break;
            }
            Err(j) => panic!("unexpected {j}"),
        }
    }
    assert!(admitted, "the freed slot was not reused");
}

/// Frames heard by the client from a key press until the audio changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_press_latency_in_frames() {
    let addr = server(1).await;
    let mut ws = connect(&addr).await;
    send(
        &mut ws,
        serde_json::json!({"type": "start", "style_codes": STYLE, "seed": 42}),
    )
    .await;
    let mut heard: Vec<Vec<u8>> = Vec::new();
    for _ in 0..15 {
        heard.push(next_frame(&mut ws).await);
    }
    let pressed_at = heard.len();
    send(&mut ws, serde_json::json!({"type": "control", "style_codes": [325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]})).await;
    for _ in 0..15 {
        heard.push(next_frame(&mut ws).await);
    }
    // What the stream would have played without the key press.
    let (lm, codec) = weights();
    let pool = rill_stream::StagePools::new(rill_stream::Stages::Sequential, 2, None);
    let mut g = Generator::new(lm, codec, 42, &pool);
    g.apply(Control::Style(Some(STYLE))).unwrap();
    let mut pcm = vec![0i16; FRAME_PCM];
    let mut first_change = None;
    for (i, frame) in heard.iter().enumerate() {
        g.step(&pool, &mut pcm);
        let bytes: Vec<u8> = pcm.iter().flat_map(|s| s.to_le_bytes()).collect();
        if &bytes != frame {
            first_change = Some(i);
            break;
        }
    }
    let first_change = first_change.expect("the control never changed the audio");
    assert!(
        first_change >= pressed_at,
        "audio changed before the key press"
    );
    let latency = first_change - pressed_at;
    eprintln!(
        "key press → audible change: {latency} frames ({} ms) after the press, server buffer 200 ms",
        latency * 40
    );
    // Bounded by the server's 5-frame buffer plus the frame in flight.
    assert!(latency <= 6, "latency {latency} frames");
}

/// A `too_large` error naming the limit, then close code 1009.
fn assert_too_large((code, message, close): (String, String, u16)) {
    assert_eq!((code.as_str(), close), ("too_large", 1009), "{message}");
    assert!(message.contains("65536"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_messages_close_only_that_socket() {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    let addr = server(1).await;
    let mut a = connect(&addr).await;
    send(&mut a, serde_json::json!({"type": "start"})).await;
    clean_frame(&mut a).await;

    // One 100 KiB text message (a single frame over the limit).
    let mut b = connect(&addr).await;
    let big = format!(
        r#"{{"type":"control","notes":[{}60]}}"#,
        "60,".repeat(100 * 1024 / 3)
    );
    b.send(Message::Text(big.into())).await.unwrap();
    assert_too_large(closed_with(&mut b).await);

    // 80 KiB in two fragments, each under the limit: the message still counts.
    let mut c = connect(&addr).await;
    let part = vec![b' '; 40 * 1024];
    c.send(Message::Frame(Frame::message(
        part.clone(),
        OpCode::Data(Data::Text),
        false,
    )))
    .await
    .unwrap();
    c.send(Message::Frame(Frame::message(
        part,
        OpCode::Data(Data::Continue),
        true,
    )))
    .await
    .unwrap();
    assert_too_large(closed_with(&mut c).await);

    for _ in 0..5 {
        assert_eq!(clean_frame(&mut a).await.len(), 7680);
    }
    // Just under the limit is an ordinary (bad) request on an open socket.
    let mut d = connect(&addr).await;
    let padded = format!(r#"{{"type":"control"{}}}"#, " ".repeat(65536 - 20));
    assert!(padded.len() <= 65536);
    d.send(Message::Text(padded.into())).await.unwrap();
    d.send(Message::Text(r#"{"type":"control"}"#.into()))
        .await
        .unwrap();
    assert_eq!(next_json(&mut d).await["code"], "bad_request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_range_controls_are_refused_while_another_stream_plays() {
    let addr = server(1).await;
    let mut a = connect(&addr).await;
    send(
        &mut a,
        serde_json::json!({"type": "start", "style_codes": STYLE}),
    )
    .await;
    clean_frame(&mut a).await;
    // b has no stream: its bad messages are rejected before anything else.
    let mut b = connect(&addr).await;
    let too_many: Vec<u32> = (0..129).map(|i| i % 128).collect();
    let garbage = [
        (
            serde_json::json!({"type": "control", "notes": too_many}),
            "notes",
        ),
        (
            serde_json::json!({"type": "control", "notes": [60, 200]}),
            "notes[1]",
        ),
        (
            serde_json::json!({"type": "control", "notes": [-1]}),
            "notes[0]",
        ),
        (
            serde_json::json!({"type": "control", "notes": [1.5]}),
            "notes[0]",
        ),
        (
            serde_json::json!({"type": "control", "temperature": 1e300}),
            "temperature",
        ),
        (
            serde_json::json!({"type": "control", "temperature": -0.5}),
            "temperature",
        ),
        (
            serde_json::json!({"type": "control", "temperature": "NaN"}),
            "temperature",
        ),
        (
            serde_json::json!({"type": "control", "cfg_notes": 1e300}),
            "cfg_notes",
        ),
        (serde_json::json!({"type": "control", "top_k": 0}), "top_k"),
        (serde_json::json!({"type": "control", "seed": -1}), "seed"),
        (serde_json::json!({"type": "start", "seed": 1.5}), "seed"),
    ];
    for (bad, field) in garbage {
        send(&mut b, bad.clone()).await;
        let j = next_error(&mut b).await;
        let message = j["message"].as_str().unwrap();
        assert_eq!(j["code"], "bad_request", "{bad}: {j}");
        assert!(
            message.starts_with(field) && message.contains("..="),
            "{bad}: the error names the field and the range: {message}"
        );
        assert_eq!(clean_frame(&mut a).await.len(), 7680);
    }
    for text in [
        r#"{"type":"control","temperature":NaN}"#,
        r#"{"type":"control","temperature":1e400}"#,
        "\u{0}\u{1}",
    ] {
        b.send(Message::Text(text.into())).await.unwrap();
        let j = next_error(&mut b).await;
        assert_eq!(j["code"], "bad_request", "{text}: {j}");
        assert_eq!(clean_frame(&mut a).await.len(), 7680);
    }
    // b's socket is still open and answers.
    send(&mut b, serde_json::json!({"type": "stop"})).await;
    send(&mut b, serde_json::json!({"type": "jump"})).await;
    assert_eq!(next_json(&mut b).await["code"], "bad_request");
}

/// A WebSocket handshake with an `Origin` header; the HTTP status on refusal.
async fn connect_from(addr: &str, origin: &str) -> Result<Ws, u16> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Error;
    let mut req = format!("ws://{addr}/ws").into_client_request().unwrap();
    req.headers_mut().insert("origin", origin.parse().unwrap());
    match tokio_tungstenite::connect_async(req).await {
        Ok((ws, _)) => Ok(ws),
        Err(Error::Http(resp)) => Err(resp.status().as_u16()),
        Err(e) => panic!("handshake failed without an HTTP status: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_origins_are_forbidden() {
    let options = ServerOptions {
        allowed_origins: vec![rill_server::limits::Origin::parse("http://localhost:3000").unwrap()],
        ..Default::default()
    };
    let addr = server_with(1, options).await;
    let port = addr.rsplit_once(':').unwrap().1;
    for foreign in [
        "http://evil.example".to_string(),
        format!("http://localhost:{port}"), // not literally the Host the client used
        format!("https://127.0.0.1:{port}"),
        "http://localhost:3001".into(),
        "null".into(),
    ] {
        assert_eq!(
            connect_from(&addr, &foreign).await.err(),
            Some(403),
            "{foreign}"
        );
    }
    for allowed in [format!("http://{addr}"), "http://localhost:3000".into()] {
        let mut ws = connect_from(&addr, &allowed)
            .await
            .unwrap_or_else(|s| panic!("{allowed}: HTTP {s}"));
        send(&mut ws, serde_json::json!({"type": "jump"})).await;
        assert_eq!(next_json(&mut ws).await["code"], "bad_request");
    }
    // No Origin header: not a browser, admitted.
    let mut ws = connect(&addr).await;
    send(&mut ws, serde_json::json!({"type": "jump"})).await;
    assert_eq!(next_json(&mut ws).await["code"], "bad_request");
}

/// One HTTP/1.1 request with the given `Host`; the status code.
async fn status_with_host(addr: &str, path: &str, host: &str, origin: Option<&str>) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = TcpStream::connect(addr).await.unwrap();
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    // A WebSocket upgrade for /ws, a plain GET otherwise.
    let upgrade = if path == "/ws" {
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    } else {
        "Connection: close\r\n"
    };
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{origin}{upgrade}\r\n").as_bytes())
        .await
        .unwrap();
    let mut buf = [0u8; 12];
    s.read_exact(&mut buf).await.unwrap();
    String::from_utf8_lossy(&buf[9..12]).parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_rebinding_pages_are_forbidden_on_every_route() {
    let options = ServerOptions {
        allowed_hosts: vec![rill_server::limits::HostName::parse("studio.local").unwrap()],
        ..Default::default()
    };
    let addr = server_with(1, options).await;
    let port = addr.rsplit_once(':').unwrap().1;
    // A page of evil.example whose name now resolves to this machine: its Origin
    // matches its Host, so only the Host check stands in the way.
    let evil = format!("evil.example:{port}");
    let evil_origin = format!("http://{evil}");
    for path in ["/", "/api/info", "/ws"] {
        assert_eq!(
            status_with_host(&addr, path, &evil, Some(&evil_origin)).await,
            403,
            "{path}"
        );
    }
    // Names of this server: an IP address, localhost, an --allow-host name.
    for host in [
        addr.clone(),
        format!("localhost:{port}"),
        format!("studio.local:{port}"),
    ] {
        let origin = format!("http://{host}");
        assert_eq!(
            status_with_host(&addr, "/api/info", &host, None).await,
            200,
            "{host}"
        );
        assert_eq!(
            status_with_host(&addr, "/ws", &host, Some(&origin)).await,
            101,
            "{host}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_are_closed_and_busy_ones_are_not() {
    let options = ServerOptions {
        idle_timeout: Duration::from_secs(1),
        ..Default::default()
    };
    let addr = server_with(1, options).await;
    let mut idle = connect(&addr).await;
    let mut talking = connect(&addr).await;
    let mut playing = connect(&addr).await;
    send(&mut playing, serde_json::json!({"type": "start"})).await;
    assert_eq!(next_json(&mut playing).await["type"], "started");
    let t = std::time::Instant::now();
    // Three timeouts' worth of time: the talker sends a (refused) message every
    // 0.3 s, the player has a stream; only the silent socket is closed.
    while t.elapsed() < Duration::from_secs(3) {
        send(&mut talking, serde_json::json!({"type": "jump"})).await;
        assert_eq!(next_json(&mut talking).await["code"], "bad_request");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let (code, message, close) = closed_with(&mut idle).await;
    assert_eq!((code.as_str(), close), ("idle", 1000), "{message}");
    assert!(message.contains("--idle-timeout"), "{message}");
    assert_eq!(clean_frame(&mut playing).await.len(), 7680);
    // Stopping the stream starts the idle clock again.
    send(&mut playing, serde_json::json!({"type": "stop"})).await;
    let (code, _, _) = closed_with(&mut playing).await;
    assert_eq!(code, "idle");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_capped_and_released_on_close() {
    let options = ServerOptions {
        max_connections: 2,
        ..Default::default()
    };
    let addr = server_with(1, options).await;
    let mut a = connect(&addr).await;
    let mut b = connect(&addr).await;
    let refused = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status().as_u16(), 503);
        }
        other => panic!("a third connection was not refused with 503: {other:?}"),
    }
    let info: serde_json::Value =
        serde_json::from_str(&http_get(&addr, "/api/info").await).unwrap();
    assert_eq!(
        (
            info["connections"].as_u64(),
            info["max_connections"].as_u64()
        ),
        (Some(2), Some(2)),
        "{info}"
    );
    // The open ones still work; a closed one frees its slot.
    send(&mut b, serde_json::json!({"type": "jump"})).await;
    assert_eq!(next_json(&mut b).await["code"], "bad_request");
    a.close(None).await.unwrap();
    drop(a);
    let mut admitted = None;
    for _ in 0..50 {
        if let Ok((ws, _)) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await {
            admitted = Some(ws);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut c = admitted.expect("the closed connection's slot was not released");
    send(&mut c, serde_json::json!({"type": "start"})).await;
    assert_eq!(next_frame(&mut c).await.len(), 7680);
}

/// Minimal HTTP GET (keeps the test free of an HTTP client dependency).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_flood_gets_429_with_retry_after() {
    let options = ServerOptions {
        max_upgrades_per_second: 5,
        ..Default::default()
    };
    let addr = server_with(1, options).await;
    let (mut open, mut refused) = (Vec::new(), Vec::new());
    let start = std::time::Instant::now();
    // Upgrades until three are refused (at most 40: a refusal must come).
    for _ in 0..40 {
        if refused.len() == 3 {
            break;
        }
        match tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await {
            Ok((ws, _)) => open.push(ws),
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => refused.push((
                resp.status().as_u16(),
                resp.headers().get("retry-after").cloned(),
            )),
            Err(e) => panic!("handshake failed without an HTTP status: {e}"),
        }
    }
    // A burst of 5 plus at most what refilled while the loop ran (5/s; a loaded
    // machine may take a while over the handshakes) is admitted, then refused.
    let refilled = (start.elapsed().as_secs_f64() * 5.0).ceil() as usize;
    assert_eq!(refused.len(), 3, "no upgrade was refused");
    assert!(
        (5..=5 + refilled.max(2)).contains(&open.len()),
        "{} upgrades admitted at 5/s in {:?}",
        open.len(),
        start.elapsed()
    );
    for (status, retry) in &refused {
        assert_eq!(*status, 429);
        assert_eq!(retry.as_ref().map(|v| v.to_str().unwrap()), Some("1"));
    }
    // The admitted sockets work, and after a pause new ones are admitted again.
    send(&mut open[0], serde_json::json!({"type": "jump"})).await;
    assert_eq!(next_json(&mut open[0]).await["code"], "bad_request");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert!(tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .is_ok());
}
