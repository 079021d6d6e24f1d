//! End-to-end test of the instrument page in headless Chromium: an in-process
//! `rill serve` (random-weight mrt2_small, int8) and `tests/browser/e2e.mjs`
//! (playwright-core driving the system Chromium) clicking Start, holding a piano
//! key, and checking that audio frames and status messages arrive; a text prompt
//! and an uploaded clip restyle the playing stream (random-weight MusicCoCa); the
//! Speech card speaks with the random-weight voice (a few frames per sentence),
//! playing the WAV stream as it arrives, and shows the server's refusals.
//!
//! Needs `node` (≥ 20), Chromium (`/usr/bin/chromium` or `$CHROMIUM_PATH`) and
//! `npm ci` in `tests/browser`. With `RILL_BROWSER_TEST=1` anything missing is a
//! failure; otherwise the test prints `SKIP` and passes, so plain `cargo test`
//! works on machines without a browser.
//!
//! The screenshot lands in `target/browser-artifacts/rill-serve.png`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rill_server::{AppState, ServerOptions};

mod common;

const TIMEOUT: Duration = Duration::from_secs(480);

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// What is missing to run the browser test, if anything.
fn missing_prerequisites() -> Vec<String> {
    let mut missing = Vec::new();
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => {
            let v = String::from_utf8_lossy(&o.stdout);
            let major: u32 = v
                .trim()
                .trim_start_matches('v')
                .split('.')
                .next()
                .and_then(|m| m.parse().ok())
                .unwrap_or(0);
            if major < 20 {
                missing.push(format!("node ≥ 20 (found {})", v.trim()));
            }
        }
        _ => missing.push("node (Node.js ≥ 20 on PATH)".into()),
    }
    let chrome = chromium();
    if !chrome.is_file() {
        missing.push(format!(
            "Chromium at {} (apt-get install chromium, or set CHROMIUM_PATH)",
            chrome.display()
        ));
    }
    let pw = browser_dir().join("node_modules/playwright-core/package.json");
    if !pw.is_file() {
        missing.push(format!(
            "playwright-core (run `npm ci` in {})",
            browser_dir().display()
        ));
    }
    missing
}

/// Frames per sentence of the test's voice (46 ms each): enough for several
/// chunks of a streamed reply, few enough to keep the test short.
const TTS_FRAMES: usize = 32;

/// Starts `rill serve` in-process on 127.0.0.1:0; returns its address.
fn start_server() -> SocketAddr {
    let engine = common::engine(2, rill_stream::Stages::TwoStage, 2);
    // Default limits: the page must pass the same-origin check as served.
    // Random-weight MusicCoCa with the oracle's tiny tokenizer: the prompt box works.
    let dir = rill_musiccoca::synth::random_assets_dir(&rill_testkit::rill_cache(), 1)
        .expect("random-weight MusicCoCa");
    let model = rill_musiccoca::StyleModel::load(&dir, rill_kernels::isa::active()).unwrap();
    let style = rill_server::style::StyleService::start(model, rill_musiccoca::Mapper::Seed(0))
        .expect("the style encoder");
    // The oracle's random-weight voice, as `rill serve --tts-random-weights` loads
    // it, capped as `--tts-max-frames` does.
    let mut voice = rill_stream::tts::Voice::load(
        rill_stream::tts::VoiceSource::Random(0),
        rill_kernels::WeightFormat::F32,
    )
    .expect("random-weight voice");
    voice.params.max_decoder_steps = TTS_FRAMES;
    let tts = rill_server::tts::TtsService::new(voice, &engine)
        .expect("the speech setup thread")
        .with_random_weights(true);
    let state = Arc::new(
        AppState::new(
            engine,
            serde_json::json!({
                "model": "mrt2_small (random weights)",
                "precision": "int8",
                "random_weights": true,
            }),
            ServerOptions::default(),
        )
        .with_style(style)
        .with_tts(tts),
    );
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
    std_listener.set_nonblocking(true).unwrap();
    let addr = std_listener.local_addr().unwrap();
    std::thread::Builder::new()
        .name("rill-serve".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("tokio runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
                rill_server::run(listener, state).await
            })
            .expect("rill serve stopped");
        })
        .unwrap();
    addr
}

#[test]
fn instrument_page_plays_in_headless_chromium() {
    let required = std::env::var("RILL_BROWSER_TEST").is_ok_and(|v| v == "1");
    let missing = missing_prerequisites();
    if !missing.is_empty() {
        let what = missing.join("; ");
        if required {
            panic!("RILL_BROWSER_TEST=1 but the browser test cannot run; missing: {what}");
        }
        // Straight to stderr, past the test harness's output capture, so the
        // skip is visible in a plain `cargo test`.
        let _ = writeln!(
            std::io::stderr(),
            "SKIP browser end-to-end test (set RILL_BROWSER_TEST=1 to require it); missing: {what}"
        );
        return;
    }

    let addr = start_server();
    let url = format!("http://{addr}/");
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target directory")
        .join("browser-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("rill-serve.png");
    let _ = std::fs::remove_file(&shot);

    let mut child = Command::new("node")
        .arg("e2e.mjs")
        .arg(&url)
        .arg(&shot)
        .current_dir(browser_dir())
        .env("CHROMIUM_PATH", chromium())
        .stdin(Stdio::null())
        .spawn()
        .expect("starting node");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for node") {
            break s;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the browser test did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        status.success(),
        "e2e.mjs failed ({status}) against {url}; its output above says which step"
    );
    let size = std::fs::metadata(&shot)
        .unwrap_or_else(|e| panic!("no screenshot at {}: {e}", shot.display()))
        .len();
    assert!(
        size > 10_000,
        "screenshot {} is only {size} bytes",
        shot.display()
    );
    println!("screenshot: {}", shot.display());
}
