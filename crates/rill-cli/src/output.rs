//! Output files that are checked before any work starts and appear atomically
//! ([`rill_io::AtomicFile`]: written as `NAME.partial`, synced and renamed when
//! complete; an aborted run leaves no truncated file under the final name).
//! A WAV path of `-` is standard output: the file is built in memory and written
//! there whole when it is finished (its header then has the right sizes).

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufWriter, Cursor, Seek, SeekFrom, Write};
use std::path::Path;
use std::rc::Rc;

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

/// Whether `path` is `-`, standard input or output.
pub fn is_std_stream(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// A 16-bit WAV file being written (48 kHz stereo for music, 22.05 kHz mono for speech).
pub struct WavOut {
    target: WavTarget,
}

enum WavTarget {
    File {
        pending: PendingFile,
        writer: hound::WavWriter<BufWriter<File>>,
    },
    /// `-o -`: the WAV in memory until [`WavOut::finish`] writes it to stdout.
    Stdout(hound::WavWriter<SharedBuf>, SharedBuf),
}

/// A growable in-memory file that stays readable after its writer is finalised.
#[derive(Clone, Default)]
struct SharedBuf(Rc<RefCell<Cursor<Vec<u8>>>>);

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Seek for SharedBuf {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.0.borrow_mut().seek(pos)
    }
}

impl WavOut {
    /// 48 kHz stereo (MRT2).
    pub fn create(path: &Path) -> Result<WavOut> {
        WavOut::create_with(path, 2, 48_000)
    }

    pub fn create_with(path: &Path, channels: u16, sample_rate: u32) -> Result<WavOut> {
        let spec = hound::WavSpec {
            channels,
            sample_rate,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        if is_std_stream(path) {
            let buf = SharedBuf::default();
            let writer = hound::WavWriter::new(buf.clone(), spec)
                .context("cannot start the WAV for standard output")?;
            return Ok(WavOut {
                target: WavTarget::Stdout(writer, buf),
            });
        }
        let pending = PendingFile::reserve(path)?;
        let file = File::create(pending.partial_path())
            .with_context(|| format!("cannot write output {}", path.display()))?;
        let writer = hound::WavWriter::new(BufWriter::new(file), spec)
            .with_context(|| format!("cannot write WAV {}", path.display()))?;
        Ok(WavOut {
            target: WavTarget::File { pending, writer },
        })
    }

    /// Appends interleaved samples.
    pub fn write(&mut self, samples: &[i16]) -> Result<()> {
        match &mut self.target {
            WavTarget::File { writer, .. } => write_samples(writer, samples),
            WavTarget::Stdout(writer, _) => write_samples(writer, samples),
        }
    }

    pub fn finish(self) -> Result<()> {
        match self.target {
            WavTarget::File { pending, writer } => {
                writer.finalize().context("finalising the WAV file")?;
                pending.commit()
            }
            WavTarget::Stdout(writer, buf) => {
                writer.finalize().context("finalising the WAV")?;
                let bytes = buf.0.take().into_inner();
                let mut out = std::io::stdout().lock();
                out.write_all(&bytes)
                    .and_then(|()| out.flush())
                    .context("cannot write the WAV to standard output")
            }
        }
    }
}

fn write_samples<W: std::io::Write + std::io::Seek>(
    writer: &mut hound::WavWriter<W>,
    samples: &[i16],
) -> Result<()> {
    let mut w = writer.get_i16_writer(samples.len() as u32);
    for &s in samples {
        w.write_sample(s);
    }
    w.flush().context("writing WAV samples")?;
    Ok(())
}
