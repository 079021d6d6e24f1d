//! A listener that changes the style prompt every few seconds through the WebSocket
//! and reports whether the stream ever ran dry (the server's underrun count) and how
//! long each new style took to arrive:
//!
//! ```text
//! rill serve --random-weights --precision int8 --threads 2 --prompt "warm up" &
//! cargo run --release -p rill-server --example prompt_changes -- 127.0.0.1:8080 30 2
//! ```
//!
//! Arguments: the server's address, seconds to listen (default 30), seconds between
//! prompts (default 2).

use std::time::{Duration, Instant};

mod listener;
use listener::Listener;

const PROMPTS: [&str; 8] = [
    "disco funk",
    "ambient piano",
    "jazz=0.7 | techno=0.3",
    "heavy metal guitar",
    "lofi hip hop beats",
    "cinematic orchestral strings",
    "reggae dub bass",
    "synthwave 80s retro",
];

/// `"a=0.7 | b=0.3"` → the protocol's prompt list.
fn prompts(line: &str) -> serde_json::Value {
    line.split('|')
        .map(|p| {
            let p = p.trim();
            match p.rsplit_once('=') {
                Some((t, w)) if w.parse::<f64>().is_ok() => {
                    serde_json::json!({"text": t, "weight": w.parse::<f64>().unwrap_or(1.0)})
                }
                _ => serde_json::json!({"text": p}),
            }
        })
        .collect()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let addr = args.get(1).cloned().unwrap_or("127.0.0.1:8080".into());
    let seconds: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(30.0);
    let every: f64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let mut music = Listener::start(&addr).await;
    let t0 = Instant::now();
    let (mut changes, mut styled) = (0usize, Vec::new());
    let mut next_change = t0 + Duration::from_secs_f64(every);
    let mut sent_at = t0;
    while t0.elapsed().as_secs_f64() < seconds {
        if Instant::now() >= next_change {
            let line = PROMPTS[changes % PROMPTS.len()];
            let msg = serde_json::json!({"type": "control", "prompts": prompts(line)});
            music.send(msg).await;
            sent_at = Instant::now();
            changes += 1;
            next_change += Duration::from_secs_f64(every);
        }
        if let Some(v) = music.poll().await {
            if v["type"] == "style" {
                styled.push(sent_at.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    let (frames, underruns) = (music.frames, music.underruns);
    styled.sort_by(f64::total_cmp);
    let median = styled.get(styled.len() / 2).copied().unwrap_or(f64::NAN);
    let max = styled.last().copied().unwrap_or(f64::NAN);
    println!(
        "{seconds} s: {frames} frames, {underruns} server underruns; {changes} prompts sent, {} styles applied (median {median:.0} ms, max {max:.0} ms after sending)",
        styled.len()
    );
}
