//! The `rill` command's side of loading a model: its flags into
//! [`rill_stream::source`] (which finds, synthesises and loads), with its
//! progress bar and messages.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use rill_checkpoint::Checkpoint;
use rill_mrt2::{ModelKind, Mrt2, Precision};
use rill_spectrostream::{Codec, CodecPrecision};
use rill_stream::source::{self, Hints, SynthProgress};

use crate::args::ModelArgs;
use crate::progress;

/// How the `rill` command's users get a model, for the errors that say what to do.
pub const HINTS: Hints = Hints {
    pass_checkpoint: "--checkpoint PATH",
    try_random: "To try rill without downloading anything, add --random-weights: a checkpoint with
random weights in the real layout is synthesised (~1.1 GB, ~10 s); the output is
not music, but every stage runs exactly as with real weights.",
};

/// Resolves the checkpoint path from the arguments; synthesises random weights if asked.
pub fn resolve(args: &ModelArgs) -> Result<PathBuf> {
    if let Some(seed) = args.random_weights {
        let path = source::random_checkpoint(ModelKind::Small, seed, &mut reporter(seed))?;
        eprintln!("note: random weights — every stage runs as with real weights, but the output is not music");
        return Ok(path);
    }
    Ok(source::resolve_checkpoint(
        args.checkpoint.as_deref(),
        ModelKind::Small,
        &HINTS,
    )?)
}

/// Writes a synthetic checkpoint with a progress bar.
pub fn synthesise(kind: ModelKind, seed: u64, path: &Path) -> Result<()> {
    source::synthesise(kind, seed, path, &mut reporter(seed))?;
    Ok(())
}

/// Shows a synthesis: what is written, a byte bar, the summary line.
fn reporter(seed: u64) -> impl FnMut(SynthProgress<'_>) {
    let mut bar = None;
    move |p| match p {
        SynthProgress::Start { path } => eprintln!(
            "synthesising a random-weight mrt2_small checkpoint (weights seed {seed}) at {}",
            path.display()
        ),
        SynthProgress::Bytes { done, total } => {
            let bar = bar.get_or_insert_with(|| progress::bytes_bar("synthesising"));
            bar.set_length(total);
            bar.set_position(done);
        }
        SynthProgress::Done {
            path,
            summary,
            seconds,
        } => {
            if let Some(bar) = bar.take() {
                bar.finish_and_clear();
            }
            eprintln!(
                "wrote {} ({} tensors, {} parameters, {:.1} GB) in {seconds:.1} s; sha256 {}{}",
                path.display(),
                summary.tensors,
                summary.params,
                summary.bytes as f64 / 1e9,
                summary.sha256,
                if summary.oracle_checked {
                    " (identical to the reference's file)"
                } else {
                    ""
                }
            );
        }
    }
}

/// Opens and validates a checkpoint.
pub fn open(path: &Path) -> Result<(Checkpoint, ModelKind)> {
    Ok(source::open(path)?)
}

/// The precision to run: `--precision`, else a pre-quantised file's own, else f32.
pub fn precision(explicit: Option<Precision>, ckpt: &Checkpoint) -> Result<Precision> {
    Ok(source::precision(explicit, ckpt)?)
}

/// Loads the language model, reporting the time taken.
pub fn load_lm(ckpt: &Checkpoint, precision: Precision) -> Result<Arc<Mrt2>> {
    let start = Instant::now();
    let m = source::load_lm(ckpt, precision)?;
    eprintln!(
        "loaded {} language model ({precision}) from {} in {:.1} s",
        m.config.kind,
        ckpt.path().display(),
        start.elapsed().as_secs_f64()
    );
    Ok(m)
}

/// The codec weights to use: `--codec`, else [`source::codec_precision`]'s
/// choice for live use or not.
pub fn codec_precision(args: &ModelArgs, lm: Precision, live: bool) -> CodecPrecision {
    source::codec_precision(args.codec, lm, live)
}

/// Loads the SpectroStream decoder, reporting the time taken.
pub fn load_codec(ckpt: &Checkpoint, precision: CodecPrecision) -> Result<Arc<Codec>> {
    let start = Instant::now();
    let c = source::load_codec(ckpt, precision)?;
    eprintln!(
        "loaded SpectroStream decoder ({}) in {:.1} s",
        precision.describe(),
        start.elapsed().as_secs_f64()
    );
    Ok(c)
}
