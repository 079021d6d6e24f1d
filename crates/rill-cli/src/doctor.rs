//! `rill doctor`: what a user runs first. It names the CPU and the SIMD tiers rill
//! found, the system's transparent-huge-page mode and the memory bandwidth, checks
//! that every tier of this CPU reproduces upstream's recording (a random-weight
//! checkpoint, tokens and audio against embedded reference frames), and measures
//! the live precisions to advise one.
//!
//! The parity and speed checks run this same binary as a child process (`rill
//! generate`, `rill bench`), so they exercise exactly the code a user runs, with
//! `RILL_ISA` choosing each tier.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use rill_io::Npz;
use rill_kernels::isa::{self, Isa};

/// The first [`REFERENCE_FRAMES`] frames of upstream's recording D1 (magenta-rt
/// 2.0.3, f32, random weights of seed 0): `tokens` `[N,12]` (unique ids) and
/// `audio_int16` `[N,1920,2]`. `tests/doctor.rs` checks it against
/// `testdata/mrt2/D1.npz` and says how to rewrite it.
pub const REFERENCE_NPZ: &[u8] = include_bytes!("doctor/d1_head.npz");
/// Frames in [`REFERENCE_NPZ`].
pub const REFERENCE_FRAMES: usize = 8;
/// D1's style codes (its other settings are rill's defaults: temperature 1.3,
/// top-k 40, CFG 3/1/1, sampler seed 42, notes and drums masked).
pub const REFERENCE_STYLE: &str = "660,1016,295,206,857,841,391,857,619,70,401,22";

/// Largest int16 difference from the recording the parity check accepts (the
/// parity tests' bound: f32 audio ≈ 107 dB SNR rounds to the same int16 or a
/// neighbour).
const MAX_LSB: i64 = 1;
/// Least share of int16 samples identical to the recording (the parity tests'
/// bound; measured 99.4–99.6 %).
const MIN_IDENTICAL: f64 = 0.99;
/// A precision is advised for live use when its median frame takes at most this
/// share of the 40 ms frame (headroom for the host's other work and for p99).
const LIVE_RTF: f64 = 0.8;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Skip the speed measurement (and with it the advice): only the machine
    /// report and the parity check (about 20 s).
    #[arg(long)]
    pub quick: bool,

    /// Worker threads for the checks (default: $RILL_THREADS or the number of cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

/// One precision's measured live speed.
struct Speed {
    precision: &'static str,
    rtf: f64,
    p99_ms: f64,
}

pub fn run(args: DoctorArgs) -> Result<()> {
    let start = Instant::now();
    let exe = std::env::current_exe().context("cannot find the rill binary to run the checks")?;
    let work = WorkDir::new()?;
    println!("rill doctor: this machine, rill's tiers on it, and parity with upstream");
    println!(
        "cpu           {} ({} threads)",
        rill_stream::process::cpu_name(),
        cores()
    );
    if let Some(load) = load_average().filter(|&l| l > 0.5 * cores() as f64) {
        println!(
            "load          {load:.1} (1-minute average): other work is running, so the \
             bandwidth and speed below are lower than this machine can do"
        );
    }
    let tiers = Isa::available();
    let active = isa::active();
    let names: Vec<_> = tiers.iter().map(|t| t.name()).collect();
    println!(
        "simd tiers    {} (in use: {}{})",
        names.join(", "),
        active.name(),
        if std::env::var_os("RILL_ISA").is_some() {
            ", lowered by RILL_ISA"
        } else {
            ""
        }
    );
    let thp = rill_kernels::huge_pages::system_mode().unwrap_or_else(|| "unknown".into());
    println!(
        "huge pages    transparent huge pages: {thp}{}",
        if thp == "never" {
            " (rill's weights stream faster with madvise or always)"
        } else {
            ""
        }
    );
    let (one, all) = read_bandwidth();
    println!(
        "memory        read bandwidth {one:.1} GB/s (1 thread), {all:.1} GB/s ({} threads)",
        cores()
    );

    let reference = Npz::from_bytes("d1_head.npz", REFERENCE_NPZ)?;
    let (_, want_tokens) = reference.i64("tokens")?;
    let (_, want_audio) = reference.i64("audio_int16")?;
    println!(
        "              (rill generate on random weights per tier; the first run synthesises \
         a 1.1 GB checkpoint in the cache)"
    );
    let mut failed = Vec::new();
    for (i, &tier) in tiers.iter().enumerate() {
        let label = if i == 0 { "parity" } else { "" };
        let t = Instant::now();
        match parity(&exe, &work, tier, args.threads, &want_tokens, &want_audio) {
            Ok(msg) => println!(
                "{label:<13} {:<14} ok: {msg} ({:.1} s)",
                tier.name(),
                t.elapsed().as_secs_f64()
            ),
            Err(e) => {
                println!("{label:<13} {:<14} FAILED: {e:#}", tier.name());
                failed.push(tier.name());
            }
        }
    }

    if !args.quick {
        let mut speeds = Vec::new();
        for precision in ["int8", "mixed"] {
            let s = speed(&exe, precision, args.threads)?;
            println!(
                "{:<13} {:<14} real-time factor {:.2} (median frame {:.1} ms, p99 {:.1} ms of 40 ms)",
                if speeds.is_empty() { "live speed" } else { "" },
                s.precision,
                s.rtf,
                s.rtf * 40.0,
                s.p99_ms
            );
            speeds.push(s);
        }
        println!("advice        {}", advice(&speeds));
    }
    println!("({:.0} s)", start.elapsed().as_secs_f64());
    if !failed.is_empty() {
        bail!(
            "tier(s) {} did not reproduce upstream's recording on this CPU: please report it \
             with this output; meanwhile RILL_ISA={} selects a tier that did",
            failed.join(", "),
            tiers
                .iter()
                .rev()
                .find(|t| !failed.contains(&t.name()))
                .map_or("portable", |t| t.name())
        );
    }
    Ok(())
}

/// What to use live, from the measured speeds (int8 first: it is closer to f32).
fn advice(speeds: &[Speed]) -> String {
    match speeds.iter().find(|s| s.rtf <= LIVE_RTF) {
        Some(s) => format!(
            "--precision {} for live use (rill play / rill serve): real time with {:.0} % headroom \
             (rill quantize --precision {} writes a file that loads faster)",
            s.precision,
            (1.0 - s.rtf) * 100.0,
            s.precision
        ),
        None => {
            let best = speeds
                .iter()
                .min_by(|a, b| a.rtf.total_cmp(&b.rtf))
                .map_or(f64::NAN, |s| s.rtf);
            format!(
                "this machine is not fast enough for live play (best real-time factor {best:.2}, \
                 live needs ≤ {LIVE_RTF}); rill generate renders files at any speed"
            )
        }
    }
}

/// Runs `rill generate` on the reference's settings with `tier` forced and compares
/// its tokens and int16 audio with the recording.
fn parity(
    exe: &Path,
    work: &WorkDir,
    tier: Isa,
    threads: Option<usize>,
    want_tokens: &[i64],
    want_audio: &[i64],
) -> Result<String> {
    let dump = work.path.join(format!("parity-{}.npz", tier.name()));
    let frames = REFERENCE_FRAMES.to_string();
    let mut args = vec![
        "generate",
        "--random-weights",
        "0",
        "--frames",
        &frames,
        "--style-codes",
        REFERENCE_STYLE,
        "--precision",
        "f32",
        "--codec",
        "f32",
    ];
    let threads = threads.map(|t| t.to_string());
    if let Some(t) = &threads {
        args.extend(["--threads", t]);
    }
    let dump_arg = dump.to_string_lossy().into_owned();
    args.extend(["--dump", &dump_arg]);
    child(exe, &args, &[("RILL_ISA", tier.name())])?;
    let got = Npz::read(&dump)?;
    let (_, tokens) = got.i64("tokens")?;
    let same = tokens
        .chunks(12)
        .zip(want_tokens.chunks(12))
        .take_while(|(a, b)| a == b)
        .count();
    if same < REFERENCE_FRAMES {
        bail!("tokens differ from upstream's from frame {same} on");
    }
    let (_, audio) = got.i64("audio_int16")?;
    if audio.len() != want_audio.len() {
        bail!(
            "{} audio samples, the recording has {}",
            audio.len(),
            want_audio.len()
        );
    }
    let worst = audio
        .iter()
        .zip(want_audio)
        .map(|(a, b)| (a - b).abs())
        .max()
        .unwrap_or(0);
    let identical = audio.iter().zip(want_audio).filter(|(a, b)| a == b).count() as f64
        / audio.len().max(1) as f64;
    if worst > MAX_LSB || identical < MIN_IDENTICAL {
        bail!(
            "audio differs from upstream's by up to {worst} LSB, {:.2} % identical \
             (allowed {MAX_LSB} LSB, ≥ {:.0} %)",
            identical * 100.0,
            MIN_IDENTICAL * 100.0
        );
    }
    Ok(format!(
        "{REFERENCE_FRAMES}/{REFERENCE_FRAMES} frames of tokens equal upstream's, audio within \
         {worst} LSB ({:.2} % identical)",
        identical * 100.0
    ))
}

/// Runs `rill bench` for one precision on random weights and reads its JSON.
fn speed(exe: &Path, precision: &'static str, threads: Option<usize>) -> Result<Speed> {
    let threads = threads.map(|t| t.to_string());
    let mut args = vec![
        "bench",
        "--random-weights",
        "0",
        "--precision",
        precision,
        "--frames",
        "60",
        "--json",
    ];
    if let Some(t) = &threads {
        args.extend(["--threads", t]);
    }
    let out = child(exe, &args, &[])?;
    let v: serde_json::Value = serde_json::from_slice(&out)
        .with_context(|| format!("rill bench --precision {precision} printed no JSON"))?;
    let rtf = v["rtf"].as_f64().context("rill bench's JSON has no rtf")?;
    let p99_ms = v["total_ms"]["p99"]
        .as_f64()
        .context("rill bench's JSON has no total_ms.p99")?;
    Ok(Speed {
        precision,
        rtf,
        p99_ms,
    })
}

/// Runs this binary with `args` (and `env`), returning its standard output; a
/// failure carries the child's last lines of standard error.
fn child(exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Vec<u8>> {
    let mut cmd = Command::new(exe);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {}", exe.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<_> = err.lines().rev().take(3).collect();
        bail!(
            "`rill {}` failed: {}",
            args.join(" "),
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        );
    }
    Ok(out.stdout)
}

/// Read bandwidth in GB/s over a buffer far larger than any cache: one thread, and
/// one per core (the best of three passes each).
fn read_bandwidth() -> (f64, f64) {
    const BYTES: usize = 512 << 20;
    let buf: Vec<u64> = (0..BYTES / 8).map(|i| i as u64).collect();
    let pass = |threads: usize| {
        let t = Instant::now();
        let sum: u64 = std::thread::scope(|s| {
            let chunk = buf.len().div_ceil(threads);
            let handles: Vec<_> = buf
                .chunks(chunk)
                .map(|part| s.spawn(move || sum_words(part)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(0))
                .fold(0, u64::wrapping_add)
        });
        std::hint::black_box(sum);
        BYTES as f64 / t.elapsed().max(Duration::from_nanos(1)).as_secs_f64() / 1e9
    };
    let best = |threads: usize| (0..3).map(|_| pass(threads)).fold(0.0, f64::max);
    (best(1), best(cores()))
}

/// A wrapping sum in eight lanes (vectorised: integer addition is associative).
fn sum_words(words: &[u64]) -> u64 {
    let mut lanes = [0u64; 8];
    let chunks = words.chunks_exact(8);
    let rest: u64 = chunks.remainder().iter().fold(0, |a, &w| a.wrapping_add(w));
    for c in chunks {
        for (l, &w) in lanes.iter_mut().zip(c) {
            *l = l.wrapping_add(w);
        }
    }
    lanes.iter().fold(rest, |a, &l| a.wrapping_add(l))
}

/// The 1-minute load average (Linux), if known.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A scratch directory for the children's files, removed when dropped.
struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    fn new() -> Result<WorkDir> {
        let path = std::env::temp_dir().join(format!("rill-doctor-{}", std::process::id()));
        std::fs::create_dir_all(&path)
            .with_context(|| format!("cannot create the scratch directory {}", path.display()))?;
        Ok(WorkDir { path })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
