//! MusicCoCa for the Python API: [`Style`] holds rill's style model
//! ([`rill_musiccoca::StyleModel`]) and its worker threads, and answers upstream's
//! `embed_style` / `tokenize_style` (text or audio to a 768-float embedding, an
//! embedding to 12 style codes).

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rill_io::audio::DecodedAudio;
use rill_kernels::Pool;
use rill_musiccoca::{Mapper, StyleModel};

use crate::error::{Error, Result};
use crate::model::thread_count;

/// The width of a style embedding.
pub const EMBEDDING_DIM: usize = rill_musiccoca::tower::DIM;

/// A loaded MusicCoCa and the threads it runs on.
pub struct Style {
    model: StyleModel,
    /// One embedding at a time uses the pool.
    pool: Mutex<Pool>,
}

impl From<rill_musiccoca::Error> for Error {
    fn from(e: rill_musiccoca::Error) -> Error {
        use rill_musiccoca::Error as E;
        match e {
            E::MissingAsset { .. } => Error::NotFound(e.to_string()),
            E::Io { .. } => Error::Os(e.to_string()),
            E::BadAsset { .. } | E::Weight { .. } | E::Input(_) => Error::Invalid(e.to_string()),
        }
    }
}

impl Style {
    /// Loads the assets of `dir`, else the first directory
    /// [`rill_musiccoca::locate::find`] names beside `checkpoint`; none found is a
    /// [`Error::NotFound`] whose message holds the download instructions.
    pub fn load(
        dir: Option<&Path>,
        checkpoint: Option<&Path>,
        threads: Option<usize>,
    ) -> Result<Style> {
        let threads = thread_count(threads)?;
        if let Some(d) = dir {
            if !d.join("text_encoder.tflite").is_file() {
                return Err(Error::NotFound(format!(
                    "{}: no MusicCoCa assets there (spm.model and the .tflite files).\n{}",
                    d.display(),
                    rill_musiccoca::locate::download_instructions()
                )));
            }
        }
        let model = StyleModel::locate_and_load(dir, checkpoint, rill_kernels::isa::active())?;
        Ok(Style {
            model,
            pool: Mutex::new(Pool::new(threads)),
        })
    }

    /// The directory the assets came from.
    pub fn dir(&self) -> &Path {
        self.model.dir()
    }

    fn pool(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The embedding of a text; `mapper_seed` maps it toward the audio embeddings
    /// with that seed's noise (upstream's `use_mapper=True, seed=`).
    pub fn embed_text(&self, text: &str, mapper_seed: Option<u32>) -> Result<Vec<f32>> {
        let mapper = mapper_seed.map_or(Mapper::Off, Mapper::Seed);
        Ok(self.model.embed_text(text, mapper, &self.pool())?)
    }

    /// The embeddings of interleaved audio (`channels` channels at `rate` Hz): one
    /// (the mean over its 10 s clips) when `pooled`, else one per clip.
    pub fn embed_audio(
        &self,
        samples: Vec<f32>,
        channels: usize,
        rate: u32,
        pooled: bool,
    ) -> Result<Vec<Vec<f32>>> {
        if channels == 0 || rate == 0 {
            return Err(Error::invalid(format!(
                "audio needs at least one channel and a positive sample rate, got {channels} channels at {rate} Hz"
            )));
        }
        if samples.is_empty() {
            return Err(Error::invalid("the audio is empty (no samples)"));
        }
        if samples.iter().any(|v| !v.is_finite()) {
            return Err(Error::invalid("the audio holds NaN or infinite samples"));
        }
        let audio = DecodedAudio {
            rate,
            channels,
            samples,
        };
        let pool = self.pool();
        Ok(if pooled {
            vec![self.model.embed_audio(&audio, &pool)?]
        } else {
            self.model.embed_audio_clips(&audio, &pool)?
        })
    }

    /// The 12 style codes (0..1023) of an embedding.
    pub fn tokenize(&self, embedding: &[f32]) -> Result<Vec<i64>> {
        if embedding.len() != EMBEDDING_DIM {
            return Err(Error::invalid(format!(
                "a MusicCoCa embedding has {EMBEDDING_DIM} values, got {}",
                embedding.len()
            )));
        }
        if embedding.iter().any(|v| !v.is_finite()) {
            return Err(Error::invalid("the embedding holds NaN or infinite values"));
        }
        let q = self.model.tokenize(embedding, &self.pool())?;
        Ok(q.tokens.iter().map(|&t| i64::from(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_folder_is_not_found_with_the_download_command() {
        let dir = std::env::temp_dir().join("rill-python-no-musiccoca-here");
        let Err(Error::NotFound(msg)) = Style::load(Some(&dir), None, Some(1)) else {
            panic!("a missing assets folder must be NotFound");
        };
        assert!(msg.contains("google/magenta-realtime-2"), "{msg}");
        assert!(msg.contains("resources/musiccoca"), "{msg}");
    }
}
