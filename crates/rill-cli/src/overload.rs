//! `rill overload`: a bounded overload run against a `rill serve` on this
//! machine. It admits as many listeners as the server has capacity for, then
//! opens `--factor`× more (each must be refused `busy`) and floods the server
//! with connect/start/disconnect cycles, while checking that the admitted
//! streams keep playing without underruns and that the server's memory returns
//! to its baseline afterwards. A command, not a test: it needs a quiet machine.
//! Its own threads run at nice +10, standing in for clients on other machines.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::usage::usage_bail;
use clap::Args;
use futures_util::{SinkExt, StreamExt};
use rill_server::protocol::{ServerMsg, Wire, WireControls};
use tokio_tungstenite::tungstenite::Message;

#[derive(Debug, Args)]
pub struct OverloadArgs {
    /// The server to load (loopback addresses only).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,

    /// Extra listeners beyond capacity, as a multiple of capacity.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub factor: u32,

    /// Most connect/start/disconnect cycles of the flood, which runs for the
    /// whole watch window unless this many are done first.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(0..=10_000_000))]
    pub flood: u32,

    /// Flood cycles per second (the client and server share this machine's
    /// cores, so an unpaced flood measures the CPU, not the server).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub rate: u32,

    /// How long the admitted streams are watched, in seconds.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(5..=3600))]
    pub seconds: u32,
}

/// What one admitted listener saw.
#[derive(Default)]
struct Watch {
    frames: AtomicU64,
    /// Underruns in the server's latest status report for this stream.
    underruns: AtomicU64,
    errors: AtomicU64,
    playing: AtomicBool,
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub fn run(args: OverloadArgs) -> Result<()> {
    if !args.addr.ip().is_loopback() {
        usage_bail!(
            "rill overload only targets a server on this machine (a loopback address), not {}",
            args.addr
        );
    }
    // The load runs on the server's own cores but stands in for remote clients,
    // so it yields to the server's generation threads as the server's own network
    // threads do (nice +10): what is measured is the server's cost of a flood.
    rill_server::rate::lower_thread_priority();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .on_thread_start(rill_server::rate::lower_thread_priority)
        .enable_all()
        .build()?;
    rt.block_on(overload(args))
}

async fn overload(args: OverloadArgs) -> Result<()> {
    let addr = args.addr;
    let info = api_info(addr).await?;
    let capacity = info["capacity"]
        .as_u64()
        .context("/api/info has no capacity")? as usize;
    // The baseline is taken after every slot has played once and closed: the
    // first streams grow the allocator's pools, which is not a leak.
    let (_, warm) = admit(addr, capacity).await?;
    warm.store(true, Ordering::Release);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss0 = api_info(addr).await?["rss_bytes"].as_u64();
    eprintln!(
        "server {addr}: capacity {capacity} stream(s), {} connection(s) max, RSS {} after a warm-up",
        info["max_connections"],
        mb(rss0)
    );
    // 1. Admit `capacity` listeners and wait until each plays.
    let (watches, stop) = admit(addr, capacity).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let underruns0: Vec<u64> = watches
        .iter()
        .map(|w| w.underruns.load(Ordering::Relaxed))
        .collect();
    let frames0: Vec<u64> = watches
        .iter()
        .map(|w| w.frames.load(Ordering::Relaxed))
        .collect();
    let started = Instant::now();

    // 2. factor × capacity more listeners, held open: each must be refused.
    let extra = args.factor as usize * capacity.max(1);
    let (mut busy, mut refused_http, mut admitted_wrongly) = (0usize, 0usize, 0usize);
    let mut held = Vec::new();
    for _ in 0..extra {
        match connect(addr).await {
            Ok(mut ws) => {
                ws.send(start_message()).await?;
                match first_reply(&mut ws).await {
                    Some(code) if code == "busy" => busy += 1,
                    _ => admitted_wrongly += 1,
                }
                held.push(ws);
            }
            Err(_) => refused_http += 1, // the upgrade rate (429) or connection cap (503)
        }
    }
    // 3. The flood: short-lived connections, 8 at a time.
    let flood_done = Arc::new(AtomicU64::new(0));
    let flood_failed = Arc::new(AtomicU64::new(0));
    let per_task = args.flood.div_ceil(8);
    let deadline = started + Duration::from_secs(args.seconds as u64);
    let pause = Duration::from_secs_f64(8.0 / args.rate as f64);
    let mut flood = Vec::new();
    for k in 0..8u32 {
        let n = per_task.min(args.flood.saturating_sub(k * per_task));
        let (done, failed) = (flood_done.clone(), flood_failed.clone());
        flood.push(tokio::spawn(async move {
            for _ in 0..n {
                if Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(pause).await;
                match connect(addr).await {
                    Ok(mut ws) => {
                        let _ = ws.send(start_message()).await;
                        let _ = ws.close(None).await;
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for f in flood {
        let _ = f.await;
    }
    let flood_s = started.elapsed().as_secs_f64();
    let rest = Duration::from_secs(args.seconds as u64).saturating_sub(started.elapsed());
    tokio::time::sleep(rest).await;
    let watched = started.elapsed().as_secs_f64();

    // 4. Report the admitted streams, then close everything.
    println!(
        "admitted {capacity} stream(s); {extra} more listeners: {busy} refused busy, \
         {refused_http} refused over HTTP (upgrade rate 429 / connection cap 503), {admitted_wrongly} not refused"
    );
    println!(
        "flood: {} connect/start/close cycles in {flood_s:.1} s ({} refused over HTTP: upgrade rate or connection cap)",
        flood_done.load(Ordering::Relaxed),
        flood_failed.load(Ordering::Relaxed)
    );
    let mut total_underruns = 0;
    for (i, w) in watches.iter().enumerate() {
        let u = w.underruns.load(Ordering::Relaxed) - underruns0[i];
        let f = w.frames.load(Ordering::Relaxed) - frames0[i];
        total_underruns += u;
        println!(
            "stream {i}: {f} frames in {watched:.1} s (real time: {:.0}), {u} underruns, {} errors",
            watched * 25.0,
            w.errors.load(Ordering::Relaxed)
        );
    }
    stop.store(true, Ordering::Release);
    drop(held);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = api_info(addr).await?;
    let rss1 = after["rss_bytes"].as_u64();
    println!(
        "after: {} active stream(s), {} open connection(s), RSS {} (baseline {}{})",
        after["active"],
        after["connections"],
        mb(rss1),
        mb(rss0),
        match (rss0, rss1) {
            (Some(a), Some(b)) if a > 0 =>
                format!(", {:+.2} %", (b as f64 - a as f64) / a as f64 * 100.0),
            _ => String::new(),
        }
    );
    if admitted_wrongly > 0 || total_underruns > 0 {
        bail!("overload changed the admitted streams or admitted too many (see above)");
    }
    Ok(())
}

/// Opens `n` streams and waits until each plays; they are watched until the
/// returned flag is set.
async fn admit(addr: SocketAddr, n: usize) -> Result<(Vec<Arc<Watch>>, Arc<AtomicBool>)> {
    let watches: Vec<Arc<Watch>> = (0..n).map(|_| Arc::default()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    for w in &watches {
        let mut ws = connect(addr).await?;
        ws.send(start_message()).await?;
        tokio::spawn(watch(ws, w.clone(), stop.clone()));
    }
    let t = Instant::now();
    while !watches.iter().all(|w| w.playing.load(Ordering::Acquire)) {
        if t.elapsed() > Duration::from_secs(30) {
            bail!("the admitted streams did not start playing within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok((watches, stop))
}

fn mb(b: Option<u64>) -> String {
    b.map_or("n/a".into(), |b| format!("{:.1} MB", b as f64 / 1e6))
}

async fn connect(addr: SocketAddr) -> Result<Ws> {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .with_context(|| format!("connecting to ws://{addr}/ws"))?;
    Ok(ws)
}

/// `{"type":"start"}` with no controls: the server's defaults.
fn start_message() -> Message {
    let start = Wire::Start(WireControls::default());
    Message::Text(
        serde_json::to_string(&start)
            .expect("a client message serialises")
            .into(),
    )
}

/// The error code of the first text reply, else its type (`None` if a frame,
/// nothing or something else came).
async fn first_reply(ws: &mut Ws) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => {
                return match serde_json::from_str::<ServerMsg>(t.as_str()).ok()? {
                    ServerMsg::Error { code, .. } => Some(code),
                    ServerMsg::Started { .. } => Some("started".into()),
                    ServerMsg::Status { .. } => Some("status".into()),
                    ServerMsg::Style { .. } => Some("style".into()),
                };
            }
            Ok(Some(Ok(Message::Binary(_)))) => return None,
            Ok(Some(Ok(_))) => continue,
            _ => return None,
        }
    }
    None
}

/// Reads an admitted stream until `stop`: counts frames, keeps the server's
/// underrun count from its status reports, counts errors.
async fn watch(mut ws: Ws, w: Arc<Watch>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Acquire) {
        let m = match tokio::time::timeout(Duration::from_millis(200), ws.next()).await {
            Err(_) => continue,
            Ok(Some(Ok(m))) => m,
            Ok(_) => {
                w.errors.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        match m {
            Message::Binary(_) => {
                w.frames.fetch_add(1, Ordering::Relaxed);
                w.playing.store(true, Ordering::Release);
            }
            Message::Text(t) => match serde_json::from_str::<ServerMsg>(t.as_str()) {
                Ok(ServerMsg::Status { underruns, .. }) => {
                    w.underruns.store(underruns, Ordering::Relaxed);
                }
                Ok(ServerMsg::Error { .. }) => {
                    w.errors.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            },
            _ => {}
        }
    }
    let _ = ws.close(None).await;
}

/// `GET /api/info` (hyper's HTTP/1 client on one connection).
async fn api_info(addr: SocketAddr) -> Result<serde_json::Value> {
    use http_body_util::{BodyExt, Empty, Limited};
    use hyper::body::Bytes;
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to {addr} (is `rill serve` running there?)"))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .context("HTTP handshake with the server")?;
    tokio::spawn(async move {
        // Its errors surface in `send_request` below.
        let _ = conn.await;
    });
    let request = hyper::Request::get("/api/info")
        .header(hyper::header::HOST, addr.to_string())
        .body(Empty::<Bytes>::new())?;
    let response = sender
        .send_request(request)
        .await
        .context("GET /api/info")?;
    if !response.status().is_success() {
        bail!("GET /api/info answered {}", response.status());
    }
    let body = Limited::new(response.into_body(), 1 << 20)
        .collect()
        .await
        .map_err(|e| anyhow::anyhow!("reading /api/info: {e}"))?
        .to_bytes();
    serde_json::from_slice(&body).with_context(|| {
        format!(
            "/api/info is not JSON: {:.200}",
            String::from_utf8_lossy(&body)
        )
    })
}
