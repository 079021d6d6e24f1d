//! Finding the checkpoint (or synthesising a random-weight one) and loading it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use rill_checkpoint::synth;
use rill_checkpoint::{locate, Checkpoint, ModelKind};
use rill_mrt2::{layout, Mrt2, Precision};
use rill_spectrostream::{Codec, CodecOptions, CodecPrecision};

use crate::args::{CodecArg, ModelArgs};
use crate::progress;

/// How to get real weights, printed whenever none are found.
pub fn download_help() -> String {
    format!(
        "{}
then pass --checkpoint PATH (or set RILL_CHECKPOINT).
To try rill without downloading anything, add --random-weights: a checkpoint with
random weights in the real layout is synthesised (~1.1 GB, ~10 s); the output is
not music, but every stage runs exactly as with real weights.",
        locate::download_instructions("mrt2_small")
    )
}

/// Cache directory for synthesised checkpoints: `$XDG_CACHE_HOME/rill` or `~/.cache/rill`.
pub fn cache_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(x).join("rill");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".cache/rill"),
        None => std::env::temp_dir().join("rill-cache"),
    }
}

/// Resolves the checkpoint path from the arguments; synthesises random weights if asked.
pub fn resolve(args: &ModelArgs) -> Result<PathBuf> {
    if let Some(seed) = args.random_weights {
        let dir = cache_dir();
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create the cache directory {}", dir.display()))?;
        let path = dir.join(format!("mrt2_small_random_seed{seed}.safetensors"));
        if !is_complete_synth(&path, seed) {
            eprintln!(
                "synthesising a random-weight mrt2_small checkpoint (weights seed {seed}) at {}",
                path.display()
            );
            synthesise(ModelKind::Small, seed, &path)?;
        }
        eprintln!("note: random weights — every stage runs as with real weights, but the output is not music");
        return Ok(path);
    }
    if let Some(p) = &args.checkpoint {
        if !p.exists() {
            bail!(
                "checkpoint {} does not exist\n\n{}",
                p.display(),
                download_help()
            );
        }
        return Ok(p.clone());
    }
    if let Some(c) = locate::find_default("mrt2_small") {
        return Ok(c);
    }
    bail!(
        "no MRT2 checkpoint given and none found in the default locations\n\n{}",
        download_help()
    )
}

fn is_complete_synth(path: &Path, seed: u64) -> bool {
    let want = synth::file_len(
        ModelKind::Small,
        seed,
        &layout::synth_tensors(ModelKind::Small),
    );
    std::fs::metadata(path).map(|m| m.len()).ok() == Some(want)
}

/// Writes a synthetic checkpoint with a progress bar.
pub fn synthesise(kind: ModelKind, seed: u64, path: &Path) -> Result<()> {
    let start = Instant::now();
    let bar = progress::bytes_bar("synthesising");
    let tensors = layout::synth_tensors(kind);
    let summary = synth::write_checkpoint(kind, seed, &tensors, path, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
    .with_context(|| format!("writing {}", path.display()))?;
    bar.finish_and_clear();
    eprintln!(
        "wrote {} ({} tensors, {} parameters, {:.1} GB) in {:.1} s; sha256 {}{}",
        path.display(),
        summary.tensors,
        summary.params,
        summary.bytes as f64 / 1e9,
        start.elapsed().as_secs_f64(),
        summary.sha256,
        if summary.oracle_checked {
            " (identical to the reference's file)"
        } else {
            ""
        }
    );
    Ok(())
}

/// Opens and validates a checkpoint.
pub fn open(path: &Path) -> Result<(Checkpoint, ModelKind)> {
    let ckpt = Checkpoint::open(path)?;
    let kind = layout::validate(&ckpt)?;
    Ok((ckpt, kind))
}

/// The precision to run: `--precision`, else a pre-quantised file's own, else f32.
pub fn precision(args: &ModelArgs, ckpt: &Checkpoint) -> Result<Precision> {
    if let Some(p) = args.precision {
        return p.try_into();
    }
    match ckpt.quantized_precision() {
        Some(name) => Precision::from_name(name).with_context(|| {
            format!(
                "{} is pre-quantised to an unknown precision {name:?}",
                ckpt.path().display()
            )
        }),
        None => Ok(Precision::F32),
    }
}

/// Loads the language model, reporting the time taken.
pub fn load_lm(ckpt: &Checkpoint, precision: Precision) -> Result<Arc<Mrt2>> {
    let start = Instant::now();
    let m = Mrt2::load(ckpt, precision)?;
    eprintln!(
        "loaded {} language model ({precision}) from {} in {:.1} s",
        m.config.kind,
        ckpt.path().display(),
        start.elapsed().as_secs_f64()
    );
    Ok(Arc::new(m))
}

/// The codec weights to use: `--codec`, else int16 early layers for live use
/// (play, serve, bench) and for `mixed`, else the exact f32 codec.
pub fn codec_precision(args: &ModelArgs, lm: Precision, live: bool) -> CodecPrecision {
    match (args.codec, lm) {
        (Some(CodecArg::F32), _) => CodecPrecision::F32,
        (Some(CodecArg::F16), _) => CodecPrecision::F16Weights,
        (Some(CodecArg::I16), _) => CodecPrecision::I16Weights,
        (Some(CodecArg::Fp16), _) => CodecPrecision::F16,
        (None, Precision::Mixed) => CodecPrecision::I16Weights,
        (None, _) if live => CodecPrecision::I16Weights,
        (None, _) => CodecPrecision::F32,
    }
}

pub fn codec_name(p: CodecPrecision) -> &'static str {
    match p {
        CodecPrecision::F32 => "f32",
        CodecPrecision::F16Weights => "f16 early weights",
        CodecPrecision::I16Weights => "int16 early weights",
        CodecPrecision::F16 => "fp16 activations and weights (rescaled)",
    }
}

/// Loads the SpectroStream decoder.
pub fn load_codec(ckpt: &Checkpoint, precision: CodecPrecision) -> Result<Arc<Codec>> {
    let start = Instant::now();
    let c = Codec::load_with(
        ckpt,
        CodecOptions {
            precision,
            isa: None,
            rescale: None,
        },
    )?;
    eprintln!(
        "loaded SpectroStream decoder ({}) in {:.1} s",
        codec_name(precision),
        start.elapsed().as_secs_f64()
    );
    Ok(Arc::new(c))
}
