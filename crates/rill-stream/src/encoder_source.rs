//! Where the SpectroStream encoder of a continuation prefill comes from: upstream's
//! download keeps it at `ROOT/resources/spectrostream/encoder.safetensors` beside
//! `ROOT/checkpoints/`, its RVQ codebook is the MRT2 checkpoint's
//! (`params/soundstream/quantizer/embedding`); with random weights it is synthesised
//! into the cache from the recipe built into `rill-spectrostream`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rill_checkpoint::synth::{self, SynthFile};
use rill_checkpoint::Checkpoint;
use rill_spectrostream::encoder::layout;
use rill_spectrostream::Encoder;

use crate::source::{created_cache_dir, SourceError, SynthProgress};

/// The encoder's path inside upstream's download directory.
pub const ENCODER_IN_DOWNLOAD: &str = "resources/spectrostream/encoder.safetensors";

/// The command that downloads the encoder into upstream's default directory.
pub const DOWNLOAD_COMMAND: &str = "huggingface-cli download google/magenta-realtime-2 resources/spectrostream/encoder.safetensors --local-dir ~/Documents/Magenta/magenta-rt-v2";

/// Where upstream's download keeps the encoder of checkpoint `ckpt`:
/// `ROOT/resources/spectrostream/encoder.safetensors` for `ROOT/checkpoints/FILE`,
/// else beside the checkpoint's directory's `resources/`.
pub fn encoder_path_for(ckpt: &Path) -> PathBuf {
    let dir = ckpt.parent().unwrap_or(Path::new("."));
    let root = match dir.file_name() {
        Some(n) if n == "checkpoints" => dir.parent().unwrap_or(Path::new(".")),
        _ => dir,
    };
    root.join(ENCODER_IN_DOWNLOAD)
}

/// The encoder file: `explicit` (the host's `--encoder`), else the one beside
/// `ckpt`. A missing file is [`SourceError::NotFound`] with a one-line message that
/// names the file and how to download it; `pass_encoder` is how the host's users
/// name a file (`--encoder PATH`).
pub fn resolve_encoder(
    explicit: Option<&Path>,
    ckpt: &Path,
    pass_encoder: &str,
) -> Result<PathBuf, SourceError> {
    let path = explicit.map_or_else(|| encoder_path_for(ckpt), Path::to_path_buf);
    if path.is_file() {
        return Ok(path);
    }
    Err(SourceError::NotFound(format!(
        "no SpectroStream encoder at {} (continuing from audio needs it): download it with `{DOWNLOAD_COMMAND}` or pass {pass_encoder}",
        path.display()
    )))
}

/// The random-weight encoder of weights `seed` in [`crate::source::cache_dir`], synthesised first
/// unless a complete one is there.
pub fn random_encoder(
    seed: u64,
    progress: &mut dyn FnMut(SynthProgress<'_>),
) -> Result<PathBuf, SourceError> {
    let dir = created_cache_dir()?;
    let file = SynthFile {
        model: layout::SYNTH_MODEL,
        seed,
        oracle_sha256: None,
    };
    let tensors = layout::synth_tensors();
    let path = dir.join(format!("{}_random_seed{seed}.safetensors", file.model));
    if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(synth::file_len(&file, &tensors)) {
        progress(SynthProgress::Start { path: &path });
        let start = std::time::Instant::now();
        let summary = synth::write_checkpoint(&file, &tensors, &path, &mut |done, total| {
            progress(SynthProgress::Bytes { done, total })
        })
        .map_err(|source| SourceError::Write {
            path: path.clone(),
            source,
        })?;
        progress(SynthProgress::Done {
            path: &path,
            summary: &summary,
            seconds: start.elapsed().as_secs_f64(),
        });
    }
    Ok(path)
}

/// Loads the encoder from `encoder` with the RVQ codebooks of the model checkpoint
/// `codebook`, on the active kernel tier.
pub fn load_encoder(encoder: &Path, codebook: &Checkpoint) -> Result<Arc<Encoder>, SourceError> {
    let enc = Checkpoint::open(encoder)?;
    Ok(Arc::new(Encoder::load(
        &enc,
        codebook,
        rill_kernels::isa::active(),
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoder_lives_beside_the_checkpoints_dir() {
        let root = Path::new("dl");
        assert_eq!(
            encoder_path_for(&root.join("checkpoints/mrt2_small.safetensors")),
            root.join(ENCODER_IN_DOWNLOAD)
        );
        assert_eq!(
            encoder_path_for(&root.join("m.safetensors")),
            root.join(ENCODER_IN_DOWNLOAD)
        );
    }

    #[test]
    fn a_missing_encoder_says_how_to_download_it() {
        let e = resolve_encoder(
            Some(Path::new("no/such/encoder.safetensors")),
            Path::new("x"),
            "--encoder PATH",
        )
        .unwrap_err()
        .to_string();
        assert!(!e.contains('\n'), "{e}");
        assert!(e.contains("no/such/encoder.safetensors"), "{e}");
        assert!(e.contains(DOWNLOAD_COMMAND), "{e}");
        assert!(e.ends_with("--encoder PATH"), "{e}");
    }
}
