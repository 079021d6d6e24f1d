//! `rill decode`: a token file to a WAV file through the SpectroStream decoder.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use rill_io::{Array, Data};
use rill_kernels::Pool;

use crate::model_source;
use crate::output::{PendingFile, WavOut};
use crate::progress;
use crate::stats::Timings;
use crate::tokens::read_tokens;

#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// Checkpoint with the SpectroStream decoder (`params/soundstream/...`).
    #[arg(long, value_name = "PATH")]
    pub checkpoint: Option<PathBuf>,

    /// Use a random-weight checkpoint synthesised from this weights seed.
    #[arg(long, value_name = "SEED", num_args = 0..=1, default_missing_value = "0", conflicts_with = "checkpoint")]
    pub random_weights: Option<u64>,

    /// [N,12] int32 .npy of unique token ids (as written by `rill generate --tokens-out`).
    #[arg(long, value_name = "FILE.npy")]
    pub tokens: PathBuf,

    /// Output WAV (48 kHz, 16-bit stereo; `-`: standard output).
    #[arg(short = 'o', long, value_name = "FILE.wav")]
    pub output: PathBuf,

    /// Decode all frames at once (offline; no 40 ms lookahead latency, so the
    /// audio equals streaming mode shifted by 1920 samples and is one frame shorter).
    #[arg(long)]
    pub batched: bool,

    /// Also write decoder_stft, audio_float (before gain) and audio_int16 as .npz.
    #[arg(long, value_name = "FILE.npz")]
    pub dump: Option<PathBuf>,

    /// Codec weights: f32 (exact) or f16 for the bandwidth-bound early layers.
    #[arg(long, default_value = "f32", value_parser = crate::args::names_parser(
        &rill_spectrostream::CodecPrecision::ALL, rill_spectrostream::CodecPrecision::name))]
    pub codec: rill_spectrostream::CodecPrecision,

    /// Worker threads (default: $RILL_THREADS or the number of cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

pub fn run(args: DecodeArgs) -> Result<()> {
    // Outputs first: an unwritable path fails before any work is done.
    let mut wav = WavOut::create(&args.output)?;
    let dump_out = args.dump.as_deref().map(PendingFile::reserve).transpose()?;
    let frames = read_tokens(&args.tokens)?;
    let margs = crate::args::ModelArgs {
        checkpoint: args.checkpoint.clone(),
        random_weights: args.random_weights,
        codec: Some(args.codec),
        threads: args.threads,
        stages: None,
        lm_threads: None,
    };
    let path = model_source::resolve(&margs)?;
    let ckpt = rill_checkpoint::Checkpoint::open(&path)?;
    let codec = model_source::load_codec(
        &ckpt,
        model_source::codec_precision(&margs, rill_mrt2::Precision::F32, false),
    )?;
    drop(ckpt);
    let pool = Pool::new(margs.thread_count()?);
    let n = frames.len();
    let start = Instant::now();
    let mut nonfinite = 0;
    let (stft, audio, pcm, out_frames);
    if args.batched {
        let out = codec.decode_batched(&frames, &pool)?;
        let mut p = vec![0i16; out.audio.len()];
        nonfinite += rill_spectrostream::float_to_int16(&out.audio, &mut p);
        wav.write(&p)?;
        out_frames = n - 1;
        stft = out.stft;
        audio = out.audio;
        pcm = p;
        eprintln!(
            "decoded {n} frames in batched mode in {:.2} s",
            start.elapsed().as_secs_f64()
        );
    } else {
        let mut st = codec.new_state();
        let mut a = vec![0f32; 2 * 1920];
        let mut s = vec![0f32; 4 * 480 * 4];
        let mut p = vec![0i16; 2 * 1920];
        let (mut all_s, mut all_a, mut all_p) = (Vec::new(), Vec::new(), Vec::new());
        let mut timings = Timings::default();
        let bar = progress::frames_bar(n as u64, "decoding");
        for t in &frames {
            let t0 = Instant::now();
            codec.step(&mut st, t, &mut a, Some(&mut s), &pool)?;
            timings.codec.push(t0.elapsed());
            nonfinite += rill_spectrostream::float_to_int16(&a, &mut p);
            wav.write(&p)?;
            if dump_out.is_some() {
                all_s.extend_from_slice(&s);
                all_a.extend_from_slice(&a);
                all_p.extend_from_slice(&p);
            }
            bar.inc(1);
        }
        bar.finish_and_clear();
        let wall = start.elapsed();
        let med = crate::stats::summarize(&timings.codec).median;
        eprintln!(
            "decoded {n} frames in {:.2} s: {med:.1} ms/frame (median); real-time factor {:.2}",
            wall.as_secs_f64(),
            wall.as_secs_f64() / (n as f64 * 0.04)
        );
        out_frames = n;
        stft = all_s;
        audio = all_a;
        pcm = all_p;
    }
    wav.finish()?;
    if let Some(p) = dump_out {
        let stft_frames = stft.len() / (480 * 4);
        let arrays = [
            (
                "decoder_stft",
                if args.batched {
                    Array::new(vec![stft_frames, 480, 4], Data::F32(stft))
                } else {
                    Array::new(vec![out_frames, 4, 480, 4], Data::F32(stft))
                },
            ),
            (
                "audio_float",
                Array::new(vec![out_frames, 1920, 2], Data::F32(audio)),
            ),
            (
                "audio_int16",
                Array::new(vec![out_frames, 1920, 2], Data::I16(pcm)),
            ),
        ];
        rill_io::write_npz(p.partial_path(), arrays.iter().map(|(k, a)| (*k, a)))?;
        p.commit()?;
    }
    if nonfinite > 0 {
        eprintln!("warning: {nonfinite} non-finite audio samples were replaced by silence");
    }
    eprintln!(
        "wrote {} ({:.2} s of audio)",
        args.output.display(),
        out_frames as f64 * 0.04
    );
    Ok(())
}
