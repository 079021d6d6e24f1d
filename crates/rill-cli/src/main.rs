//! `rill`: Magenta RealTime 2 music generation on ordinary CPUs.
//!
//! Exit status: 0 on success; 1 when the work fails (a file that cannot be read
//! or written, a bad checkpoint, an error while generating); 2 for a usage error
//! (an unknown or missing flag, a value out of range, an empty text, an unknown
//! speaker, a bad `RILL_ISA`), found before any weights load where no weights are
//! needed to find it. A path of `-` is
//! standard input for `--text-file` and standard output for `-o` (the WAV;
//! messages and progress stay on standard error).

#![deny(unsafe_op_in_unsafe_fn)]

mod args;
mod batch;
mod batch_csv;
mod bench;
mod bench_magpie;
mod bench_style;
mod continuation;
mod decode;
mod doctor;
mod dump;
mod generate;
mod live;
mod model_source;
mod output;
mod overload;
mod play;
mod progress;
mod quantize;
mod serve;
mod soak;
mod stats;
mod style;
mod style_cmd;
mod synth;
mod tokens;
mod tts;
mod tts_dump;
mod usage;

use clap::{Parser, Subcommand};

/// Large blocks (the weights every frame streams) on transparent huge pages.
#[global_allocator]
static ALLOC: rill_kernels::huge_pages::HugePageAlloc = rill_kernels::huge_pages::HugePageAlloc;

#[derive(Debug, Parser)]
#[command(
    name = "rill",
    version,
    about = "Magenta RealTime 2 music generation on the CPU",
    long_about = "rill runs Google's Magenta RealTime 2 (MRT2) streaming music model on ordinary CPUs: \
style codes, MIDI notes and drum controls in, 48 kHz stereo audio out, one 40 ms frame at a time.\n\n\
Quick start without downloading weights:\n    rill generate --random-weights --seconds 4 -o smoke.wav\n\
With the real checkpoint:\n    rill generate --checkpoint mrt2_small.safetensors --seconds 10 --notes 60,64,67 -o out.wav",
    after_help = usage::AFTER_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check this machine: SIMD tiers, huge pages, memory bandwidth, parity of every
    /// tier with upstream's recording, and the precision to use live (about a minute).
    Doctor(doctor::DoctorArgs),
    /// Generate music (tokens and 48 kHz stereo audio) from style, note and drum controls.
    Generate(generate::GenerateArgs),
    /// Generate one WAV per row of a prompts CSV (OUT/{row}.wav), as upstream's
    /// bulk_generate.py: resumable, --shard I/N to split it across machines.
    Batch(batch::BatchArgs),
    /// Decode a [N,12] token file into a WAV file with the SpectroStream decoder.
    Decode(decode::DecodeArgs),
    /// Time every stage per frame (median, p90, p99, max), real-time factor and peak
    /// memory; with --quality, agreement of each precision with f32.
    Bench(bench::BenchArgs),
    /// Play live to the default audio device, steered by MIDI input.
    Play(play::PlayArgs),
    /// Serve the browser instrument and one WebSocket stream per listener.
    Serve(serve::ServeArgs),
    /// Stream through the live engine for a long time (default 1 h) and print, per
    /// minute, output level, peak, non-finite/clipped samples, memory and underruns.
    Soak(soak::SoakArgs),
    /// Load a `rill serve` on this machine with 10× more listeners than it admits
    /// and a connect/disconnect flood; check admitted streams and memory.
    Overload(overload::OverloadArgs),
    /// Print the 12 MusicCoCa style codes of text prompts or audio clips (or of their
    /// weighted blend), as --style-codes takes them; --json adds the embeddings.
    Style(style_cmd::StyleArgs),
    /// Write a pre-quantised checkpoint that loads without re-quantising.
    Quantize(quantize::QuantizeArgs),
    /// Write a random-weight checkpoint in the real MRT2 layout (tests, smoke runs).
    SynthCheckpoint(synth::SynthArgs),
    /// Speak text with Magpie TTS and NanoCodec (22.05 kHz mono WAV); --language
    /// picks one of the checkpoint's (--list-languages).
    #[command(visible_alias = "tts")]
    Speak(tts::TtsArgs),
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = rill_kernels::isa::from_env() {
        eprintln!("error: {e}");
        std::process::exit(usage::USAGE);
    }
    let result = match cli.command {
        Command::Doctor(a) => doctor::run(a),
        Command::Generate(a) => generate::run(a),
        Command::Batch(a) => batch::run(a),
        Command::Decode(a) => decode::run(a),
        Command::SynthCheckpoint(a) => synth::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Quantize(a) => quantize::run(a),
        Command::Play(a) => play::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Soak(a) => soak::run(a),
        Command::Overload(a) => overload::run(a),
        Command::Speak(a) => tts::run(a),
        Command::Style(a) => style_cmd::run(a),
    };
    if let Err(e) = result {
        eprintln!("error: {}", usage::message(&e));
        std::process::exit(usage::exit_code(&e));
    }
}
