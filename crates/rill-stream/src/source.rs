//! Where an MRT2 model comes from and how it runs, decided once for every host
//! (the `rill` command, `rill serve`, the Python package): the checkpoint named,
//! else the default locations ([`rill_mrt2::locate`]), else an error that says
//! how to get one; the cache of random-weight checkpoints; the precision policy
//! (the one asked for, else a pre-quantised file's own, else f32; the codec's by
//! use); loading. What a host prints while this happens is its own: synthesis
//! reports through a callback ([`SynthProgress`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rill_checkpoint::synth::{self, SynthSummary};
use rill_checkpoint::{Checkpoint, CheckpointError};
use rill_mrt2::{layout, locate, ModelError, ModelKind, Mrt2, Precision};
use rill_spectrostream::{Codec, CodecError, CodecOptions, CodecPrecision};

/// How a host's users name the ways to get a model, for errors that say what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// How to name a checkpoint: `--checkpoint PATH` (the `rill` command),
    /// `checkpoint=PATH` (Python).
    pub pass_checkpoint: &'static str,
    /// How to try rill without downloading anything (one or more lines, no
    /// trailing newline).
    pub try_random: &'static str,
}

/// An error of finding or loading a model; the not-found ones say what to do.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// No checkpoint where named or looked for; the message ends with the
    /// download instructions.
    #[error("{0}")]
    NotFound(String),
    /// The checkpoint is not what was asked for (another size, an unknown
    /// pre-quantised precision).
    #[error("{0}")]
    Invalid(String),
    /// The cache directory of random-weight checkpoints cannot be made.
    #[error("cannot create the cache directory {path}: {source}")]
    Cache {
        /// The directory.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// Writing a random-weight checkpoint failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file being written.
        path: PathBuf,
        /// Why it failed.
        source: CheckpointError,
    },
    /// The checkpoint file cannot be read or is not an MRT2 checkpoint.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The language model refused the weights.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The codec refused the weights.
    #[error(transparent)]
    Codec(#[from] CodecError),
}

/// How to get real weights of `kind`: the download instructions, how to pass
/// the file and how to try without one (the end of every [`SourceError::NotFound`]).
pub fn download_help(kind: ModelKind, hints: &Hints) -> String {
    format!(
        "{}\nthen pass {} (or set RILL_CHECKPOINT).\n{}",
        locate::download_instructions(kind.name()),
        hints.pass_checkpoint,
        hints.try_random
    )
}

/// The checkpoint to load: `explicit` if it exists, else the first default
/// location of `kind` ([`locate::find_default`]).
pub fn resolve_checkpoint(
    explicit: Option<&Path>,
    kind: ModelKind,
    hints: &Hints,
) -> Result<PathBuf, SourceError> {
    match explicit {
        Some(p) if p.exists() => Ok(p.to_path_buf()),
        Some(p) => Err(SourceError::NotFound(format!(
            "checkpoint {} does not exist\n\n{}",
            p.display(),
            download_help(kind, hints)
        ))),
        None => locate::find_default(kind.name()).ok_or_else(|| {
            SourceError::NotFound(format!(
                "no MRT2 checkpoint given and none found in the default locations\n\n{}",
                download_help(kind, hints)
            ))
        }),
    }
}

/// Cache directory of synthesised checkpoints: `$XDG_CACHE_HOME/rill`, else
/// `~/.cache/rill`, else `rill-cache` in the temporary directory.
pub fn cache_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(x).join("rill");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".cache/rill"),
        None => std::env::temp_dir().join("rill-cache"),
    }
}

/// What [`synthesise`] and [`random_checkpoint`] report while they work.
#[derive(Debug, Clone, Copy)]
pub enum SynthProgress<'a> {
    /// Synthesis of this file starts (none complete was in the cache).
    Start {
        /// The file being written.
        path: &'a Path,
    },
    /// `done` of `total` bytes written.
    Bytes {
        /// Bytes written so far.
        done: u64,
        /// Bytes of the whole file.
        total: u64,
    },
    /// The file is complete.
    Done {
        /// The file written.
        path: &'a Path,
        /// Its tensors, parameters, bytes and checksum.
        summary: &'a SynthSummary,
        /// Wall time of the synthesis.
        seconds: f64,
    },
}

/// Writes a random-weight checkpoint of `kind` in the real layout from the
/// portable recipe (weights `seed`), reporting to `progress`.
pub fn synthesise(
    kind: ModelKind,
    seed: u64,
    path: &Path,
    progress: &mut dyn FnMut(SynthProgress<'_>),
) -> Result<SynthSummary, SourceError> {
    let start = Instant::now();
    let tensors = layout::synth_tensors(kind);
    let summary = synth::write_checkpoint(
        &kind.synth_file(seed),
        &tensors,
        path,
        &mut |done, total| progress(SynthProgress::Bytes { done, total }),
    )
    .map_err(|source| SourceError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    progress(SynthProgress::Done {
        path,
        summary: &summary,
        seconds: start.elapsed().as_secs_f64(),
    });
    Ok(summary)
}

/// [`cache_dir`], created if missing.
pub fn created_cache_dir() -> Result<PathBuf, SourceError> {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).map_err(|source| SourceError::Cache {
        path: dir.clone(),
        source,
    })?;
    Ok(dir)
}

/// The random-weight checkpoint of `kind` from weights `seed` in [`cache_dir`],
/// synthesised first unless a complete one is there (a file of the exact length).
pub fn random_checkpoint(
    kind: ModelKind,
    seed: u64,
    progress: &mut dyn FnMut(SynthProgress<'_>),
) -> Result<PathBuf, SourceError> {
    let dir = created_cache_dir()?;
    let path = dir.join(format!("{}_random_seed{seed}.safetensors", kind.name()));
    let want = synth::file_len(&kind.synth_file(seed), &layout::synth_tensors(kind));
    if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(want) {
        progress(SynthProgress::Start { path: &path });
        synthesise(kind, seed, &path, progress)?;
    }
    Ok(path)
}

/// Opens a checkpoint and checks it is a complete MRT2 one; returns its size.
pub fn open(path: &Path) -> Result<(Checkpoint, ModelKind), SourceError> {
    let ckpt = Checkpoint::open(path)?;
    let kind = layout::validate(&ckpt)?;
    Ok((ckpt, kind))
}

/// The language model's precision: `explicit`, else the one a pre-quantised
/// file was made for, else f32.
pub fn precision(explicit: Option<Precision>, ckpt: &Checkpoint) -> Result<Precision, SourceError> {
    if let Some(p) = explicit {
        return Ok(p);
    }
    match ckpt.quantized_precision() {
        Some(name) => Precision::from_name(name).ok_or_else(|| {
            SourceError::Invalid(format!(
                "{} is pre-quantised to an unknown precision {name:?}",
                ckpt.path().display()
            ))
        }),
        None => Ok(Precision::F32),
    }
}

/// The codec's precision: `explicit`, else int16 early layers for live use
/// (play, serve, bench) and with [`Precision::Mixed`], else the exact f32 codec.
pub fn codec_precision(
    explicit: Option<CodecPrecision>,
    lm: Precision,
    live: bool,
) -> CodecPrecision {
    match explicit {
        Some(p) => p,
        None if live || lm == Precision::Mixed => CodecPrecision::I16Weights,
        None => CodecPrecision::F32,
    }
}

/// Loads the language model of `ckpt` in `precision`.
pub fn load_lm(ckpt: &Checkpoint, precision: Precision) -> Result<Arc<Mrt2>, SourceError> {
    Ok(Arc::new(Mrt2::load(ckpt, precision)?))
}

/// Loads the SpectroStream decoder of `ckpt` in `precision` (the default ISA
/// and rescale).
pub fn load_codec(ckpt: &Checkpoint, precision: CodecPrecision) -> Result<Arc<Codec>, SourceError> {
    Ok(Arc::new(Codec::load_with(
        ckpt,
        CodecOptions {
            precision,
            ..CodecOptions::default()
        },
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HINTS: Hints = Hints {
        pass_checkpoint: "--checkpoint PATH",
        try_random: "try --random-weights",
    };

    #[test]
    fn a_missing_checkpoint_says_what_to_do() {
        let e = resolve_checkpoint(
            Some(Path::new("no/such.safetensors")),
            ModelKind::Base,
            &HINTS,
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, SourceError::NotFound(_)), "{e:?}");
        assert!(
            msg.starts_with("checkpoint no/such.safetensors does not exist"),
            "{msg}"
        );
        assert!(msg.contains("checkpoints/mrt2_base.safetensors"), "{msg}");
        assert!(
            msg.contains("then pass --checkpoint PATH (or set RILL_CHECKPOINT)."),
            "{msg}"
        );
        assert!(msg.ends_with("try --random-weights"), "{msg}");
    }

    #[test]
    fn codec_precision_policy() {
        use CodecPrecision as C;
        assert_eq!(codec_precision(None, Precision::F32, false), C::F32);
        assert_eq!(codec_precision(None, Precision::F32, true), C::I16Weights);
        assert_eq!(
            codec_precision(None, Precision::Mixed, false),
            C::I16Weights
        );
        assert_eq!(
            codec_precision(Some(C::F16), Precision::Mixed, true),
            C::F16
        );
        for p in C::ALL {
            assert_eq!(C::from_name(p.name()), Some(p));
        }
    }
}
