//! `rill serve`: the browser instrument and WebSocket streams.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::builder::TypedValueParser as _;
use clap::Args;
use rill_server::limits::{
    HostName, Origin, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, MAX_CONNECTIONS_LIMIT,
    MAX_IDLE_TIMEOUT_SECS,
};
use rill_server::rate::{self, DEFAULT_UPGRADES_PER_SECOND, MAX_UPGRADES_PER_SECOND};
use rill_server::{AppState, ServerOptions};

use crate::args::{names_parser, parse_style_codes, parse_style_levels, ModelArgs, PrecisionArgs};
use crate::live;
use crate::style::StylePromptArgs;

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub model: ModelArgs,

    #[command(flatten)]
    pub precision: PrecisionArgs,

    /// The style of streams whose client names none: 12 MusicCoCa codes
    /// (default: masked, no style). Clients change it with `style_codes` or `prompts`.
    #[arg(long, value_name = "C0,...,C11")]
    pub style_codes: Option<String>,

    /// --prompt / --style-audio: the default style as words or clips (as `rill
    /// generate`); MusicCoCa also serves the clients' prompts.
    #[command(flatten)]
    pub style: StylePromptArgs,

    /// MusicCoCa levels fed to the model unless a client says otherwise: 12 (every
    /// level, upstream's Python) or 6 (levels 0–5, upstream's app) [default: 12].
    #[arg(long, value_name = "6|12", value_parser = parse_style_levels)]
    pub style_levels: Option<rill_mrt2::conditioning::StyleLevels>,

    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,

    /// Most simultaneous streams, at least 1 (default: as many as the CPU
    /// sustains in real time, measured at start-up; never more than that).
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=u32::MAX as u64).map(|n| n as usize))]
    pub max_sessions: Option<usize>,

    /// Admit exactly N simultaneous streams without measuring this CPU (for
    /// operators who know their hardware, and tests that need a fixed capacity;
    /// more than the CPU sustains will stutter).
    #[arg(long, value_name = "N", conflicts_with = "max_sessions",
          value_parser = clap::value_parser!(u64).range(1..=1024).map(|n| n as usize))]
    pub capacity: Option<usize>,

    /// Admit one music stream even when the start-up measurement says this
    /// machine cannot generate it in real time (its listeners hear gaps);
    /// without it every stream is refused with the reason (code "too_slow").
    #[arg(long, conflicts_with = "capacity")]
    pub allow_stutter: bool,

    /// Most WebSocket connections open at once, playing or idle (1..=65536);
    /// one more gets HTTP 503. Streams are capped separately (--max-sessions).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CONNECTIONS_LIMIT as u64))]
    pub max_connections: u64,

    /// Most new WebSockets per second, sustained, with bursts of as many
    /// (1..=100000); past it an upgrade gets HTTP 429 with Retry-After, so a
    /// connect flood cannot take the CPU the admitted streams need.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_UPGRADES_PER_SECOND,
          value_parser = clap::value_parser!(u32).range(1..=MAX_UPGRADES_PER_SECOND as i64))]
    pub max_upgrade_rate: u32,

    /// Also admit WebSockets from pages of ORIGIN (scheme://host[:port], e.g.
    /// http://localhost:3000; repeatable). Pages this server serves are always
    /// admitted, other origins get HTTP 403; clients that send no Origin header
    /// (not browsers) are admitted.
    #[arg(long, value_name = "ORIGIN", value_parser = Origin::parse)]
    pub allow_origin: Vec<Origin>,

    /// Also answer requests that name this server NAME in their Host header
    /// (a DNS name, e.g. studio.local, when others reach this machine by name;
    /// repeatable). IP addresses and localhost always work; any other name gets
    /// HTTP 403, which stops web pages that re-point their own domain at this
    /// machine (DNS rebinding).
    #[arg(long, value_name = "NAME", value_parser = HostName::parse)]
    pub allow_host: Vec<HostName>,

    /// Close a WebSocket that has no stream playing and sends nothing for this
    /// many seconds (1..=86400), with an `idle` error, so idle clients cannot
    /// hold every connection slot.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_IDLE_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=MAX_IDLE_TIMEOUT_SECS))]
    pub idle_timeout: u64,

    /// Also serve streaming text-to-speech at POST /api/tts with these Magpie TTS
    /// weights (as `rill speak --checkpoint`; needs --tts-codec): JSON
    /// {"text": "…", "speaker": 0, "seed": 0, …} in, a WAV stream out that grows by
    /// one 46 ms frame per decoder step.
    #[arg(long, value_name = "PATH", requires = "tts_codec")]
    pub tts_checkpoint: Option<PathBuf>,

    /// NanoCodec weights for --tts-checkpoint.
    #[arg(long, value_name = "PATH", requires = "tts_checkpoint")]
    pub tts_codec: Option<PathBuf>,

    /// Serve /api/tts on random Magpie and NanoCodec weights from SEED (smoke test).
    #[arg(long, value_name = "SEED", num_args = 0..=1, default_missing_value = "0",
          conflicts_with_all = ["tts_checkpoint", "tts_codec"])]
    pub tts_random_weights: Option<u64>,

    /// German pronunciation dictionary for /api/tts (the checkpoint's
    /// de_nv230119.dict; as `rill speak --lexicon`): a .nemo brings its own, a GGUF
    /// does not.
    #[arg(long, value_name = "FILE")]
    pub tts_lexicon: Option<PathBuf>,

    /// OpenJTalk's dictionary folder for Japanese on /api/tts (as `rill speak
    /// --japanese-dictionary`). Default: $OPEN_JTALK_DICT_DIR, else Debian's
    /// open-jtalk-mecab-naist-jdic folder.
    #[arg(long, value_name = "DIR")]
    pub tts_japanese_dictionary: Option<PathBuf>,

    /// Weight format of the voice's linear layers (as `rill speak --precision`).
    #[arg(long, default_value = "f32",
          value_parser = names_parser(&rill_magpie::Precision::ALL, rill_magpie::Precision::name))]
    pub tts_precision: rill_magpie::Precision,

    /// Also speak the Wyoming protocol (Home Assistant's, as Piper does) on this
    /// TCP address, e.g. 0.0.0.0:10200; needs a voice (--tts-checkpoint and
    /// --tts-codec, or --tts-random-weights). Port 0 picks a free port (printed).
    #[arg(long, value_name = "HOST:PORT")]
    pub wyoming: Option<SocketAddr>,

    /// Most frames (46.4 ms each) the voice makes per sentence, for every door
    /// (default: the checkpoint's, 500 for v2602); a request's own max_frames
    /// still applies on /api/tts and /v1/audio/speech.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=100_000).map(|n| n as usize))]
    pub tts_max_frames: Option<usize>,

    /// Speech requests that may wait behind the running one (default 4; every door
    /// shares the queue; one more gets 503 with the reason; 0 refuses any request
    /// while one runs). Speech runs in the CPU time music streams leave
    /// (docs/deployment.md).
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(0..=1024).map(|n| n as usize))]
    pub tts_queue: Option<usize>,
}

pub fn run(args: ServeArgs) -> Result<()> {
    // Bind first: a taken port fails before the model is loaded.
    let std_listener = std::net::TcpListener::bind(args.addr).with_context(|| {
        format!(
            "cannot listen on {} (in use? try --addr 127.0.0.1:0)",
            args.addr
        )
    })?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    let has_voice = args.tts_checkpoint.is_some() || args.tts_random_weights.is_some();
    if args.wyoming.is_some() && !has_voice {
        return Err(crate::usage::usage(
            "--wyoming needs a voice: add --tts-checkpoint M --tts-codec C (or --tts-random-weights)",
        ));
    }
    if args.tts_max_frames.is_some() && !has_voice {
        return Err(crate::usage::usage(
            "--tts-max-frames needs a voice: add --tts-checkpoint M --tts-codec C (or --tts-random-weights)",
        ));
    }
    if args.tts_queue.is_some() && !has_voice {
        return Err(crate::usage::usage(
            "--tts-queue needs a voice: add --tts-checkpoint M --tts-codec C (or --tts-random-weights)",
        ));
    }
    let wyoming_listener = match args.wyoming {
        Some(a) => {
            let l = std::net::TcpListener::bind(a).with_context(|| {
                format!("cannot listen on {a} for Wyoming (in use? try --wyoming 127.0.0.1:0)")
            })?;
            l.set_nonblocking(true)?;
            Some(l)
        }
        None => None,
    };
    let codes = args
        .style_codes
        .as_deref()
        .map(parse_style_codes)
        .transpose()?;
    args.style.inputs()?; // usage errors before any load
    let checkpoint = crate::model_source::resolve(&args.model)?;
    let (style, prompt_codes) = load_style(&args, &checkpoint)?;
    let mut initial = Vec::new();
    if let Some(c) = codes.or(prompt_codes) {
        initial.push(rill_stream::Control::Style(Some(c)));
    }
    if let Some(l) = args.style_levels {
        initial.push(rill_stream::Control::StyleLevels(l));
    }
    let admission = match args.capacity {
        Some(n) => live::Admission::Fixed(n),
        None => live::Admission::Measured(args.max_sessions),
    };
    let loaded = live::start_engine(
        &args.model,
        args.precision.precision,
        admission,
        args.allow_stutter,
    )?;
    let options = ServerOptions {
        max_connections: args.max_connections as usize,
        allowed_origins: args.allow_origin,
        allowed_hosts: args.allow_host,
        max_upgrades_per_second: args.max_upgrade_rate,
        idle_timeout: std::time::Duration::from_secs(args.idle_timeout),
    };
    let origins: Vec<String> = options
        .allowed_origins
        .iter()
        .map(Origin::to_string)
        .collect();
    let limits = format!(
        "up to {} WebSocket connections, {} new per second, pages from this server{}",
        options.max_connections,
        options.max_upgrades_per_second,
        if origins.is_empty() {
            String::new()
        } else {
            format!(" and {}", origins.join(", "))
        }
    );
    let mut state = AppState::new(loaded.engine, loaded.info, options).with_initial(initial);
    let style_line = match style {
        Some(s) => {
            state = state.with_style(s);
            format!("; style clips at POST http://{addr}/api/clips")
        }
        None => String::new(),
    };
    let mut tts_line = String::new();
    if has_voice {
        // Read first: a bad dictionary costs no load.
        let german = match &args.tts_lexicon {
            Some(p) => Some(
                rill_text::IpaFrontEnd::german_from_files(Some(p), None)
                    .map_err(|e| crate::usage::usage(format!("--tts-lexicon: {e}")))?,
            ),
            None => None,
        };
        let japanese = match &args.tts_japanese_dictionary {
            Some(dir) => Some(
                rill_text::japanese::JapaneseFrontEnd::open(dir)
                    .map_err(|e| crate::usage::usage(format!("--tts-japanese-dictionary: {e}")))?,
            ),
            None => None,
        };
        let mut voice = crate::tts::load_voice(
            args.tts_checkpoint.as_deref(),
            args.tts_codec.as_deref(),
            args.tts_random_weights,
            args.tts_precision.format(),
            // Random weights keep the oracle's English-only table here; a real
            // v2602 checkpoint serves every built language.
            rill_text::Language::English,
        )?;
        if let Some(front) = german {
            voice.front = voice.front.with_ipa(
                rill_text::Language::German,
                Ok::<_, rill_text::TextError>(front),
            );
        }
        if let Some(front) = japanese {
            voice.front = voice
                .front
                .with_japanese(Ok::<_, rill_text::TextError>(front));
        }
        if let Some(n) = args.tts_max_frames {
            voice.params.max_decoder_steps = n;
        }
        // Speech runs on the music's engine: what it costs is measured here.
        let service = rill_server::tts::TtsService::new(voice, &state.engine)
            .context("starting the speech setup thread")?;
        let speaker = service.speaker();
        if speaker.rtf() > 0.0 {
            let beside = match speaker.expected_rtf_beside(1) {
                Some(r) => format!("about {r:.1}"),
                None => "nothing: it waits for the music to stop".into(),
            };
            eprintln!(
                "one speech alone runs at real-time factor {:.2}; beside a music stream it gets the capacity the music leaves (real-time factor {beside})",
                speaker.rtf()
            );
        }
        state = state.with_tts(
            service
                .with_random_weights(args.tts_random_weights.is_some())
                .with_queue(
                    args.tts_queue
                        .unwrap_or(rill_server::speech_queue::DEFAULT_SPEECH_QUEUE),
                ),
        );
        tts_line = format!("; text-to-speech at POST http://{addr}/api/tts");
    }
    let wyoming = match (wyoming_listener, &state.tts) {
        (Some(l), Some(service)) => Some((l, Arc::clone(service))),
        _ => None,
    };
    let state = Arc::new(state);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        // The network yields the CPU to generation (rill_server::rate).
        .on_thread_start(rate::lower_thread_priority)
        .enable_all()
        .build()?;
    // The accept loop runs on this thread; the engine's threads, started above,
    // keep their priority.
    rate::lower_thread_priority();
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        eprintln!(
            "rill is listening on http://{addr}/  (Ctrl-C stops; {limits}){tts_line}{style_line}"
        );
        if let Some((l, service)) = wyoming {
            let l = tokio::net::TcpListener::from_std(l)?;
            eprintln!(
                "rill speaks Wyoming on tcp://{}  (Home Assistant: add the Wyoming Protocol integration with this host and port)",
                l.local_addr()?
            );
            tokio::spawn(async move {
                if let Err(e) = rill_server::wyoming::serve(l, service).await {
                    eprintln!("wyoming: {e}");
                }
            });
        }
        rill_server::run(listener, state).await
    })
    .with_context(|| format!("serving on {addr}"))
}

/// The encoder of the clients' prompts, with MusicCoCa loaded before the engine (so
/// loading never competes with a stream), and the codes of `--prompt` /
/// `--style-audio`. Without assets the server still runs (clients send codes) unless
/// the user asked for prompts or a MusicCoCa folder.
fn load_style(
    args: &ServeArgs,
    checkpoint: &std::path::Path,
) -> Result<(Option<rill_server::style::StyleService>, Option<[u16; 12]>)> {
    let random = args.model.random_weights;
    let asked = args.style.any() || args.style.model.musiccoca.is_some();
    if random.is_some() && !asked {
        eprintln!(
            "note: text and audio prompts are off with --random-weights (they need a 0.95 GB random MusicCoCa); \
             add --musiccoca DIR, or --prompt TEXT to write and use one"
        );
        return Ok((None, None));
    }
    let model = match args.style.model.load(Some(checkpoint), random) {
        Ok(m) => m,
        Err(e) if !asked => {
            eprintln!(
                "note: text and audio prompts are off ({e:#}); clients can still send style codes"
            );
            return Ok((None, None));
        }
        Err(e) => return Err(e),
    };
    let threads = crate::args::thread_count(args.model.threads)?;
    let codes = args
        .style
        .resolve_with(&model, &rill_kernels::Pool::new(threads))?;
    let service = rill_server::style::StyleService::start(model, args.style.model.mapper())
        .context("starting the style encoder thread")?;
    Ok((Some(service), codes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn parse(args: &[&str]) -> Result<ServeArgs, String> {
        let argv = std::iter::once("serve").chain(args.iter().copied());
        Cli::try_parse_from(argv)
            .map(|c| c.serve)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn style_flags() {
        let a = parse(&["--prompt", "jazz=0.7", "--style-levels", "6"]).unwrap();
        assert_eq!(a.style.prompt, vec!["jazz=0.7".to_string()]);
        assert_eq!(
            a.style_levels,
            Some(rill_mrt2::conditioning::StyleLevels::Coarse6)
        );
        assert!(parse(&["--style-levels", "7"]).is_err());
        let e = parse(&[
            "--prompt",
            "jazz",
            "--style-codes",
            "1,2,3,4,5,6,7,8,9,10,11,12",
        ])
        .unwrap_err();
        assert!(e.contains("cannot be used with"), "{e}");
    }

    #[test]
    fn wyoming_flags() {
        let a = parse(&["--tts-random-weights", "--wyoming", "127.0.0.1:10200"]).unwrap();
        assert_eq!(a.wyoming, Some("127.0.0.1:10200".parse().unwrap()));
        assert_eq!(
            parse(&["--tts-max-frames", "8"]).unwrap().tts_max_frames,
            Some(8)
        );
        assert!(parse(&["--tts-max-frames", "0"]).is_err());
        assert_eq!(parse(&[]).unwrap().tts_queue, None);
        assert_eq!(parse(&["--tts-queue", "0"]).unwrap().tts_queue, Some(0));
        assert!(parse(&["--tts-queue", "1025"]).is_err());
        assert!(parse(&["--wyoming", "10200"]).is_err());
    }

    #[test]
    fn limit_flags() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.max_connections, DEFAULT_MAX_CONNECTIONS as u64);
        assert!(a.allow_origin.is_empty());
        let a = parse(&[
            "--max-connections",
            "3",
            "--allow-origin",
            "http://localhost:3000",
            "--allow-origin",
            "https://music.example",
        ])
        .unwrap();
        assert_eq!(a.max_connections, 3);
        assert_eq!(
            parse(&["--max-sessions", "2"]).unwrap().max_sessions,
            Some(2)
        );
        assert_eq!(a.allow_origin.len(), 2);
        for (bad, says) in [
            (["--max-connections", "0"], "1..=65536"),
            (["--max-sessions", "0"], "1..=4294967295"),
            (["--max-connections", "65537"], "1..=65536"),
            (["--allow-origin", "localhost:3000"], "scheme://host[:port]"),
            (["--allow-origin", "http://a.example/page"], "no path"),
        ] {
            let e = parse(&bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}
