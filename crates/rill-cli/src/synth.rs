//! `rill synth-checkpoint`: a random-weight checkpoint in the real layout.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use rill_mrt2::ModelKind;

use crate::model_source;
use crate::output::PendingFile;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModelName {
    #[value(name = "mrt2_small")]
    Small,
    #[value(name = "mrt2_base")]
    Base,
    /// Magpie TTS (v2602 shape, the oracle's 98-row English text table), 0.9 GB.
    #[value(name = "magpie")]
    Magpie,
    /// NanoCodec 22 kHz (decoder and quantizer), 0.13 GB.
    #[value(name = "nanocodec")]
    Nanocodec,
    /// MusicCoCa, MRT2's style model: the five .tflite files of upstream's
    /// resources/musiccoca (0.95 GB) into the directory -o names. Not spm.model: copy
    /// a SentencePiece model there (tests use testdata/musiccoca/spm.model).
    #[value(name = "musiccoca")]
    Musiccoca,
}

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Which model layout to write (mrt2_small: 1.1 GB; mrt2_base: 9.8 GB; magpie and
    /// nanocodec: the TTS pair in NeMo's state-dict layout, for `rill tts`).
    #[arg(long, value_enum, default_value = "mrt2_small")]
    pub model: ModelName,

    /// Weights seed: every value is a pure function of (seed, tensor name, index),
    /// the portable recipe of the reference fixtures (byte-identical files).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Output .safetensors path (a directory for --model musiccoca).
    #[arg(short = 'o', long, value_name = "PATH")]
    pub output: PathBuf,
}

pub fn run(args: SynthArgs) -> Result<()> {
    if let ModelName::Musiccoca = args.model {
        return synth_musiccoca(&args);
    }
    if args.output.is_dir() {
        bail!(
            "{} is a directory; give a file name like mrt2_small_random.safetensors",
            args.output.display()
        );
    }
    let kind = match args.model {
        ModelName::Small => ModelKind::Small,
        ModelName::Base => ModelKind::Base,
        ModelName::Magpie | ModelName::Nanocodec => return synth_tts(&args),
        ModelName::Musiccoca => unreachable!("handled above"),
    };
    // Fail now if the location is not writable (the writer uses its own .partial file).
    drop(PendingFile::reserve(&args.output)?);
    model_source::synthesise(kind, args.seed, &args.output)
}

/// The TTS checkpoints, written to a `.partial` file and moved into place.
fn synth_tts(args: &SynthArgs) -> Result<()> {
    let pending = PendingFile::reserve(&args.output)?;
    let path = pending.partial_path();
    match args.model {
        ModelName::Magpie => {
            rill_magpie::synth::write(&rill_magpie::Config::oracle(), args.seed, path)?
        }
        _ => rill_nanocodec::state_dict::write_synthetic(path, args.seed)?,
    }
    pending.commit()?;
    eprintln!("wrote {}", args.output.display());
    Ok(())
}

/// MusicCoCa's random-weight assets: the five `.tflite` files, each written whole or
/// not at all, into the directory `-o` names (created if missing).
fn synth_musiccoca(args: &SynthArgs) -> Result<()> {
    if args.output.is_file() {
        bail!(
            "{} is a file; --model musiccoca writes five .tflite files into a directory",
            args.output.display()
        );
    }
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    eprintln!(
        "writing MusicCoCa's random-weight assets (seed {}, 0.95 GB) to {}",
        args.seed,
        args.output.display()
    );
    let files = rill_musiccoca::synth::write_synthetic_assets(&args.output, args.seed)?;
    for f in &files {
        eprintln!("wrote {}", f.display());
    }
    if !args.output.join("spm.model").exists() {
        eprintln!(
            "note: spm.model (the SentencePiece model) is not synthesised; copy one into {} \
             (the repository's testdata/musiccoca/spm.model, or the real one from upstream's download)",
            args.output.display()
        );
    }
    Ok(())
}
