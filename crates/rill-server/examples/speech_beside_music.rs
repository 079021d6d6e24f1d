//! A music listener plays while speech requests arrive at `/api/tts`; prints how each
//! request was handled (status, place in the queue or the refusal's reason, time to
//! first audio, RTF) and whether the music ever ran dry (the server's underrun count):
//! the check of the speech policy in `docs/deployment.md` ("music first").
//!
//! ```text
//! rill serve --random-weights --tts-random-weights --tts-max-frames 100 --threads 2 &
//! cargo run --release -p rill-server --example speech_beside_music -- 127.0.0.1:8080 30 3
//! ```
//!
//! Arguments: the server's address, seconds to listen (default 30), seconds between
//! speech requests (default 3).

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod listener;
use listener::Listener;

const SENTENCES: [&str; 4] = [
    "The quick brown fox jumps over the lazy dog.",
    "Music first, then speech, in whatever time is left.",
    "Twenty-three listeners heard the show on the fourth of May.",
    "Every request is answered with its reason.",
];

/// One speech request's outcome.
struct Outcome {
    status: u16,
    /// `x-rill-queue-position`, or the refusal's text.
    note: String,
    first_audio: Option<f64>,
    seconds: f64,
    audio: f64,
}

/// POSTs `text` to `/api/tts` and reads the streamed reply.
async fn speak(addr: &str, text: &str) -> Outcome {
    let t0 = Instant::now();
    let body = serde_json::json!({ "text": text }).to_string();
    let mut s = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"));
    let req = format!(
        "POST /api/tts HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.expect("sending");
    let (mut raw, mut buf) = (Vec::new(), vec![0u8; 1 << 16]);
    let mut first_audio = None;
    let mut head_end = None;
    loop {
        let n = s.read(&mut buf).await.expect("reading");
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        if head_end.is_none() {
            head_end = raw.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);
        }
        // The WAV header (44 bytes) and chunk framing come first; audio after them.
        if first_audio.is_none() && head_end.is_some_and(|h| raw.len() > h + 200) {
            first_audio = Some(t0.elapsed().as_secs_f64());
        }
    }
    let h = head_end.expect("an HTTP response");
    let head = String::from_utf8_lossy(&raw[..h]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = if head.contains("transfer-encoding: chunked") {
        dechunk(&raw[h..])
    } else {
        raw[h..].to_vec()
    };
    let note = if status == 200 {
        let pos = head
            .lines()
            .find_map(|l| l.strip_prefix("x-rill-queue-position:"))
            .map_or("?".into(), |v| v.trim().to_string());
        format!("queue position {pos}")
    } else {
        String::from_utf8_lossy(&body).trim().to_string()
    };
    let audio = if status == 200 {
        body.len().saturating_sub(44) as f64 / 2.0 / 22050.0
    } else {
        0.0
    };
    Outcome {
        status,
        note,
        first_audio,
        seconds: t0.elapsed().as_secs_f64(),
        audio,
    }
}

/// The body of a chunked reply.
fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let Some(n) = std::str::from_utf8(&rest[..eol])
            .ok()
            .and_then(|t| usize::from_str_radix(t.trim(), 16).ok())
        else {
            break;
        };
        rest = &rest[eol + 2..];
        if n == 0 || rest.len() < n {
            break;
        }
        out.extend_from_slice(&rest[..n]);
        rest = &rest[(n + 2).min(rest.len())..];
    }
    out
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let addr = args.get(1).cloned().unwrap_or("127.0.0.1:8080".into());
    let seconds: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(30.0);
    let every: f64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let mut music = Listener::start(&addr).await;
    let t0 = Instant::now();
    let mut sent = 0usize;
    let mut requests = Vec::new();
    let mut next_request = t0 + Duration::from_secs_f64(every);
    while t0.elapsed().as_secs_f64() < seconds {
        if Instant::now() >= next_request {
            let (a, text) = (addr.clone(), SENTENCES[sent % SENTENCES.len()]);
            let at = t0.elapsed().as_secs_f64();
            requests.push((at, tokio::spawn(async move { speak(&a, text).await })));
            sent += 1;
            next_request += Duration::from_secs_f64(every);
        }
        music.poll().await;
    }
    println!(
        "music: {seconds} s, {} frames, {} server underruns",
        music.frames, music.underruns
    );
    let _ = music.ws.close(None).await;
    for (i, (at, task)) in requests.into_iter().enumerate() {
        let o = task.await.expect("a speech request");
        let rtf = if o.audio > 0.0 {
            format!(
                "{:.2}",
                (o.seconds - o.first_audio.unwrap_or(0.0)) / o.audio.max(1e-9)
            )
        } else {
            "-".into()
        };
        println!(
            "speech {i} (sent at {at:.1} s): HTTP {} ({}); first audio {}, done after {:.1} s, {:.1} s of audio, RTF after the first audio {rtf}",
            o.status,
            o.note,
            o.first_audio
                .map_or("-".into(), |f| format!("{f:.2} s")),
            o.seconds,
            o.audio
        );
    }
}
