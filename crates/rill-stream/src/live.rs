//! The music weights live use runs (`rill play`, `rill serve`, `rill soak`) when
//! no precision is asked for: [`LIVE_PRECISION`], the fastest precision that is
//! real time on every CPU measured, read from a pre-quantised copy of a
//! full-precision checkpoint that is made once and kept in the user's cache
//! directory (quantising at every start costs seconds; the copy loads at once).
//!
//! A copy is named by the source's file name, a hash of its absolute path and a
//! hash of its size and modification time: a changed source gets a new copy and
//! the stale one of the same path is removed when it is made.

use std::path::{Path, PathBuf};
use std::time::{Instant, UNIX_EPOCH};

use rill_checkpoint::Checkpoint;
use rill_mrt2::{prequantized, Precision};
use sha2::{Digest, Sha256};

use crate::source::{created_cache_dir, SourceError};

/// The language model's precision for live use of a full-precision checkpoint:
/// int8 runs one `mrt2_small` stream at ≈ 0.55 of a 2-core machine, f32 at
/// 1.2–1.3 (it stutters).
pub const LIVE_PRECISION: Precision = Precision::Int8;

/// The cached pre-quantised copy [`live_copy`] found or made.
#[derive(Debug, Clone)]
pub struct LiveCopy {
    /// The copy to load.
    pub path: PathBuf,
    /// Its precision.
    pub precision: Precision,
    /// Seconds spent making it now; `None` when it was in the cache.
    pub made_in: Option<f64>,
}

/// The file name of the copy of `src` at `precision`, and the prefix shared by
/// every copy of that path (to find stale ones).
fn copy_name(src: &Path, precision: Precision) -> Result<(String, String), SourceError> {
    let meta = std::fs::metadata(src)
        .map_err(|e| SourceError::Invalid(format!("cannot read {}: {e}", src.display())))?;
    let absolute = std::fs::canonicalize(src).unwrap_or_else(|_| src.to_path_buf());
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let short = |bytes: &[u8]| -> String {
        Sha256::digest(bytes)[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let stem = src
        .file_stem()
        .map_or_else(|| "checkpoint".into(), |s| s.to_string_lossy().into_owned());
    let prefix = format!("{stem}-{}-", short(absolute.as_os_str().as_encoded_bytes()));
    let version = short(format!("{} {modified}", meta.len()).as_bytes());
    let name = format!("{prefix}{version}.{}.safetensors", precision.name());
    Ok((name, prefix))
}

/// Where the copy of `src` at `precision` is kept (see [`copy_name`]).
fn copy_path(src: &Path, precision: Precision) -> Result<(PathBuf, String), SourceError> {
    let (name, prefix) = copy_name(src, precision)?;
    let dir = created_cache_dir()?.join("live");
    std::fs::create_dir_all(&dir).map_err(|source| SourceError::Cache {
        path: dir.clone(),
        source,
    })?;
    Ok((dir.join(name), prefix))
}

/// The pre-quantised copy of the full-precision checkpoint `src` at `precision`,
/// from the cache or made now (`making` is told its path first: say so, it takes
/// a while). Errors when the copy cannot be written (disk full, read-only cache):
/// the caller may then quantise at load instead, which gives the same weights.
pub fn live_copy(
    src: &Checkpoint,
    precision: Precision,
    making: &mut dyn FnMut(&Path),
) -> Result<LiveCopy, SourceError> {
    let (path, prefix) = copy_path(src.path(), precision)?;
    if path.is_file() {
        return Ok(LiveCopy {
            path,
            precision,
            made_in: None,
        });
    }
    making(&path);
    let start = Instant::now();
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    let written = prequantized::write(src, precision, &partial)
        .map_err(SourceError::from)
        .and_then(|_| {
            std::fs::rename(&partial, &path).map_err(|e| {
                SourceError::Invalid(format!("cannot move {} into place: {e}", partial.display()))
            })
        });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    remove_stale(&path, &prefix, precision);
    Ok(LiveCopy {
        path,
        precision,
        made_in: Some(start.elapsed().as_secs_f64()),
    })
}

/// How [`live_weights`] came by the weights it returns (for the host to say).
#[derive(Debug)]
pub enum LiveSource {
    /// A precision was asked for, or the file is pre-quantised: as given.
    AsGiven,
    /// The cached copy, found or made now.
    Copy(LiveCopy),
    /// The copy could not be written: quantised at load instead (the same weights).
    QuantisedAtLoad(SourceError),
}

/// The checkpoint and precision live use runs: `explicit` or a pre-quantised
/// file's own as given; a full-precision checkpoint as its cached
/// [`LIVE_PRECISION`] copy ([`live_copy`]; `making` is told when one is made), or
/// quantised at load if the copy cannot be written.
pub fn live_weights(
    ckpt: Checkpoint,
    explicit: Option<Precision>,
    making: &mut dyn FnMut(&Path),
) -> Result<(Checkpoint, Precision, LiveSource), SourceError> {
    if explicit.is_some() || ckpt.quantized_precision().is_some() {
        let precision = crate::source::precision(explicit, &ckpt)?;
        return Ok((ckpt, precision, LiveSource::AsGiven));
    }
    match live_copy(&ckpt, LIVE_PRECISION, making) {
        Ok(copy) => {
            let (copy_ckpt, _) = crate::source::open(&copy.path)?;
            Ok((copy_ckpt, copy.precision, LiveSource::Copy(copy)))
        }
        Err(e) => Ok((ckpt, LIVE_PRECISION, LiveSource::QuantisedAtLoad(e))),
    }
}

/// Removes the copies at `precision` of the same source path but another
/// version (the source was replaced).
fn remove_stale(current: &Path, prefix: &str, precision: Precision) {
    let Some(dir) = current.parent() else { return };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let suffix = format!(".{}.safetensors", precision.name());
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(prefix) && name.ends_with(&suffix) && e.path() != current {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_named_by_path_and_version() {
        let dir = std::env::temp_dir().join(format!("rill-live-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = dir.join("model.safetensors");
        std::fs::write(&a, b"one").unwrap();
        let (name, prefix) = copy_name(&a, Precision::Int8).unwrap();
        assert!(
            name.starts_with(&prefix) && prefix.starts_with("model-"),
            "{name}"
        );
        assert!(name.ends_with(".int8.safetensors"), "{name}");
        // Same file, same copy; a changed file (size) gets another version.
        assert_eq!(copy_name(&a, Precision::Int8).unwrap().0, name);
        std::fs::write(&a, b"longer").unwrap();
        let (name2, prefix2) = copy_name(&a, Precision::Int8).unwrap();
        assert_eq!(prefix2, prefix);
        assert_ne!(name2, name);
        // Another path with the same name: another prefix.
        std::fs::create_dir_all(dir.join("b")).unwrap();
        let b = dir.join("b/model.safetensors");
        std::fs::write(&b, b"longer").unwrap();
        assert_ne!(copy_name(&b, Precision::Int8).unwrap().1, prefix);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
