//! Many machines behind HAProxy (`deploy/haproxy.cfg`, Debian's `haproxy`): two
//! `rill serve --capacity 1` replicas on loopback. Streams go to the replica with
//! room, a full cluster refuses new streams with HAProxy's 503, and a replica killed
//! mid-run loses only its own stream while the balancer stops routing to it.
//!
//! Needs the `haproxy` binary: without it the test says SKIP, unless
//! `RILL_HAPROXY_TEST=1` (set by CI, which installs it) makes that a failure.

#[allow(dead_code)]
mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `rill serve` with one stream slot on a free port; (process, address).
fn replica(home: &std::path::Path) -> (Proc, String) {
    let mut child = common::rill_command(
        &[
            "serve",
            "--random-weights",
            "--precision",
            "int8",
            "--capacity",
            "1",
            "--threads",
            "1",
            "--addr",
            "127.0.0.1:0",
        ],
        home,
        &[],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("starting rill serve");
    let stderr = child.stderr.take().unwrap();
    let proc = Proc(child);
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = String::new();
    let addr = loop {
        let Some(Ok(line)) = lines.next() else {
            panic!("rill serve ended before listening:\n{seen}");
        };
        seen.push_str(&line);
        seen.push('\n');
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.split('/').next().unwrap().to_string();
        }
    };
    // Keep draining its stderr so the pipe never fills.
    std::thread::spawn(move || for _ in lines {});
    (proc, addr)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The status of `GET path` at `addr`.
async fn status(addr: &str, path: &str) -> u16 {
    get(addr, path).await.0
}

/// `GET path` at `addr`: (status, whole response); status 0 if it failed.
async fn get(addr: &str, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return (0, String::new());
    };
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return (0, String::new());
    }
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (code, text)
}

/// Waits until HAProxy itself refuses at `front`: every replica is out of its
/// rotation. (A 503 from a full replica it still routes to carries rill's JSON;
/// its checks run every 300 ms, so a replica that just filled up may still be in.)
async fn wait_for_haproxy_refusal(front: &str) {
    let start = Instant::now();
    loop {
        let (code, text) = get(front, "/ready").await;
        if code == 503 && !text.contains("\"ready\"") {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "HAProxy still routes to a replica: {text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until `GET path` at `addr` answers `want` (HAProxy's checks run every
/// 300 ms).
async fn wait_for(addr: &str, path: &str, want: u16) {
    let start = Instant::now();
    loop {
        let got = status(addr, path).await;
        if got == want {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{addr}{path} answered {got}, not {want}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A stream through `addr`: Ok(socket with its first frame received), or Err(the
/// HTTP status or the server's JSON refusal).
async fn stream(addr: &str) -> Result<Ws, String> {
    let (mut ws, _) = match tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await {
        Ok(v) => v,
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
            return Err(format!("HTTP {}", r.status().as_u16()))
        }
        Err(e) => return Err(e.to_string()),
    };
    ws.send(Message::Text(r#"{"type":"start"}"#.into()))
        .await
        .unwrap();
    loop {
        let m = tokio::time::timeout(Duration::from_secs(60), ws.next())
            .await
            .expect("a reply within 60 s");
        match m {
            Some(Ok(Message::Binary(_))) => return Ok(ws),
            Some(Ok(Message::Text(t))) if t.contains("\"error\"") => return Err(t.to_string()),
            Some(Ok(_)) => {}
            other => return Err(format!("{other:?}")),
        }
    }
}

/// Whether `ws` still delivers audio at its pace: frames keep arriving through a 3 s
/// window (frames buffered in transit are read first; a dead stream's stop).
async fn still_playing(ws: &mut Ws) -> bool {
    let window = Instant::now();
    let mut last = None;
    while window.elapsed() < Duration::from_secs(3) {
        match tokio::time::timeout(Duration::from_millis(500), ws.next()).await {
            Ok(Some(Ok(Message::Binary(_)))) => last = Some(Instant::now()),
            Ok(Some(Ok(_))) | Err(_) => {}
            Ok(_) => return false,
        }
    }
    last.is_some_and(|t| t.elapsed() < Duration::from_millis(500))
}

/// Whether `ws` ends (closed or broken) within 20 s, once its buffered frames are
/// read.
async fn ends(ws: &mut Ws) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        match tokio::time::timeout(Duration::from_secs(2), ws.next()).await {
            Ok(None) | Ok(Some(Err(_))) | Ok(Some(Ok(Message::Close(_)))) => return true,
            Ok(Some(Ok(_))) | Err(_) => {}
        }
    }
    false
}

/// The replica (0 or 1) whose /ready is 503, i.e. the one holding the stream.
async fn full_replica(replicas: &[String; 2]) -> usize {
    let a = status(&replicas[0], "/ready").await;
    let b = status(&replicas[1], "/ready").await;
    match (a, b) {
        (503, 200) => 0,
        (200, 503) => 1,
        other => panic!("one replica should be full: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn haproxy_spreads_streams_and_refuses_a_full_cluster() {
    let required = std::env::var("RILL_HAPROXY_TEST").is_ok_and(|v| v == "1");
    if std::process::Command::new("haproxy")
        .arg("-v")
        .output()
        .is_err()
    {
        assert!(
            !required,
            "RILL_HAPROXY_TEST=1 but haproxy is not installed"
        );
        eprintln!("SKIP: haproxy is not installed (apt-get install haproxy)");
        return;
    }
    let home = common::tmp("haproxy");
    let (r1, a1) = replica(&home);
    let (r2, a2) = replica(&home);
    let replicas = [a1, a2];
    let front = format!("127.0.0.1:{}", free_port());
    let config = rill_testkit::repo_root().join("deploy/haproxy.cfg");
    let haproxy = Proc(
        std::process::Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .env("RILL_FRONTEND", &front)
            .env("RILL_REPLICA_1", &replicas[0])
            .env("RILL_REPLICA_2", &replicas[1])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting haproxy"),
    );
    wait_for(&front, "/ready", 200).await;

    // The first stream fills one replica, which leaves the rotation.
    let mut first = stream(&front).await.expect("the first stream");
    let full = full_replica(&replicas).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The second goes to the replica with room.
    let mut second = stream(&front)
        .await
        .expect("the second stream, on the other replica");
    for r in &replicas {
        assert_eq!(status(r, "/ready").await, 503, "{r} is full");
    }
    // The cluster is full: HAProxy refuses a third stream cleanly.
    wait_for_haproxy_refusal(&front).await;
    let third = stream(&front).await;
    assert_eq!(
        third.err().as_deref(),
        Some("HTTP 503"),
        "a full cluster refuses"
    );

    // Kill the replica of the first stream: it loses its stream, the other plays on.
    let (mut killed, mut kept) = if full == 0 { (r1, r2) } else { (r2, r1) };
    killed.0.kill().unwrap();
    let _ = killed.0.wait();
    assert!(ends(&mut first).await, "the killed replica's stream ended");
    assert!(
        still_playing(&mut second).await,
        "the other replica's stream plays on"
    );
    // The survivor is full, the dead one is out: still refused.
    assert_eq!(stream(&front).await.err().as_deref(), Some("HTTP 503"));
    // The survivor's listener leaves: new streams go to it, never to the dead one.
    drop(second);
    wait_for(&front, "/ready", 200).await;
    let mut again = stream(&front)
        .await
        .expect("a stream on the surviving replica");
    assert!(still_playing(&mut again).await);
    let survivor = &replicas[1 - full];
    assert_eq!(
        status(survivor, "/ready").await,
        503,
        "it holds the new stream"
    );
    assert!(
        kept.0.try_wait().unwrap().is_none(),
        "the survivor is running"
    );
    drop(haproxy);
    let _ = std::fs::remove_dir_all(&home);
}
