//! Output files that are checked before any work starts and appear atomically
//! ([`rill_io::AtomicFile`]: written as `NAME.partial`, synced and renamed when
//! complete; an aborted run leaves no truncated file under the final name).

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use anyhow::{Context, Result};
use rill_io::AtomicFile;

/// A reserved output path.
pub struct PendingFile(AtomicFile);

impl PendingFile {
    /// Creates `path.partial` now, failing early if the location is not writable.
    pub fn reserve(path: &Path) -> Result<PendingFile> {
        let (pending, _) = AtomicFile::create(path)
            .with_context(|| format!("cannot write output {}", path.display()))?;
        Ok(PendingFile(pending))
    }

    /// Path data should be written to.
    pub fn partial_path(&self) -> &Path {
        self.0.partial_path()
    }

    /// Moves the finished file into place.
    pub fn commit(self) -> Result<()> {
        let dest = self.0.destination().to_path_buf();
        self.0
            .commit()
            .with_context(|| format!("cannot move the output into place at {}", dest.display()))
    }
}

/// A 16-bit WAV file being written (48 kHz stereo for music, 22.05 kHz mono for speech).
pub struct WavOut {
    pending: PendingFile,
    writer: hound::WavWriter<BufWriter<File>>,
}

impl WavOut {
    /// 48 kHz stereo (MRT2).
    pub fn create(path: &Path) -> Result<WavOut> {
        WavOut::create_with(path, 2, 48_000)
    }

    pub fn create_with(path: &Path, channels: u16, sample_rate: u32) -> Result<WavOut> {
        let pending = PendingFile::reserve(path)?;
        let file = File::create(pending.partial_path())
            .with_context(|| format!("cannot write output {}", path.display()))?;
        let spec = hound::WavSpec {
            channels,
            sample_rate,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let writer = hound::WavWriter::new(BufWriter::new(file), spec)
            .with_context(|| format!("cannot write WAV {}", path.display()))?;
        Ok(WavOut { pending, writer })
    }

    /// Appends interleaved samples.
    pub fn write(&mut self, samples: &[i16]) -> Result<()> {
        let mut w = self.writer.get_i16_writer(samples.len() as u32);
        for &s in samples {
            w.write_sample(s);
        }
        w.flush().context("writing WAV samples")?;
        Ok(())
    }

    pub fn finish(self) -> Result<()> {
        self.writer.finalize().context("finalising the WAV file")?;
        self.pending.commit()
    }
}
