//! Files that appear whole or not at all: every writer of rill (checkpoints,
//! pre-quantised files, state files, WAV, `.npy`/`.npz`) goes through here.
//!
//! The data goes to `NAME.partial` next to the destination. [`AtomicFile::commit`]
//! flushes it to disk (`fsync`), renames it over the destination and, on Unix,
//! syncs the directory, so after a crash the destination holds the old file or
//! the whole new one, never a truncated one. Dropped without a commit, the
//! partial file is removed.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// An output file being written under a temporary name.
#[derive(Debug)]
pub struct AtomicFile {
    destination: PathBuf,
    partial: PathBuf,
    committed: bool,
}

impl AtomicFile {
    /// Creates (truncates) `path.partial` now, so an unwritable location fails
    /// before any work is done.
    pub fn create(path: &Path) -> io::Result<(AtomicFile, File)> {
        let partial = partial_path(path);
        let file = File::create(&partial)?;
        Ok((
            AtomicFile {
                destination: path.to_path_buf(),
                partial,
                committed: false,
            },
            file,
        ))
    }

    /// Where the data goes until [`AtomicFile::commit`] (for writers that open
    /// files by path themselves).
    pub fn partial_path(&self) -> &Path {
        &self.partial
    }

    /// The final name.
    pub fn destination(&self) -> &Path {
        &self.destination
    }

    /// Flushes the partial file to disk and moves it into place (every handle
    /// to it must have been flushed and closed).
    pub fn commit(mut self) -> io::Result<()> {
        File::open(&self.partial)?.sync_all()?;
        std::fs::rename(&self.partial, &self.destination)?;
        self.committed = true;
        sync_parent(&self.destination);
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

/// Writes `bytes` to `path` atomically (see the module docs).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (pending, mut file) = AtomicFile::create(path)?;
    io::Write::write_all(&mut file, bytes)?;
    drop(file);
    pending.commit()
}

fn partial_path(path: &Path) -> PathBuf {
    let mut p = OsString::from(path.as_os_str());
    p.push(".partial");
    PathBuf::from(p)
}

/// Makes the rename itself durable (best effort: not every file system lets a
/// directory be opened and synced, and the data is already safe).
fn sync_parent(path: &Path) {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rill-atomic-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn appears_whole_on_commit_and_not_at_all_on_drop() {
        let dir = scratch("commit");
        let path = dir.join("out.bin");
        std::fs::write(&path, b"old").unwrap();
        {
            let (pending, mut f) = AtomicFile::create(&path).unwrap();
            io::Write::write_all(&mut f, b"half").unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"old", "not yet in place");
            // Dropped: the old file stays, the partial one goes.
            drop(pending);
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert!(!partial_path(&path).exists());
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert!(!partial_path(&path).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_place_fails_at_create() {
        let dir = scratch("missing");
        let path = dir.join("no such dir").join("out.bin");
        assert!(AtomicFile::create(&path).is_err());
        assert!(write_atomic(&path, b"x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
