//! `_rill.StyleModel`: rill's MusicCoCa (the Python package wraps it as
//! `rill_mrt.MusicCoCa`).

use std::path::PathBuf;

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;

use super::{run_detached, to_py};
use crate::error::Error;
use crate::style::{Style, EMBEDDING_DIM};

#[pyclass(frozen, module = "rill_mrt._rill")]
pub struct StyleModel {
    core: Style,
}

#[pymethods]
impl StyleModel {
    /// Loads the assets of `musiccoca_dir`, else finds them beside `checkpoint`
    /// (and in upstream's download locations).
    #[new]
    #[pyo3(signature = (musiccoca_dir, checkpoint, threads))]
    fn new(
        py: Python<'_>,
        musiccoca_dir: Option<PathBuf>,
        checkpoint: Option<PathBuf>,
        threads: Option<usize>,
    ) -> PyResult<StyleModel> {
        let core = run_detached(py, || {
            Style::load(musiccoca_dir.as_deref(), checkpoint.as_deref(), threads)
        })?;
        Ok(StyleModel { core })
    }

    /// The assets directory.
    #[getter]
    fn dir(&self) -> PathBuf {
        self.core.dir().to_path_buf()
    }

    /// A text's embedding, `[768]` float32 (`mapper_seed=None`: no mapper).
    #[pyo3(signature = (text, mapper_seed))]
    fn embed_text<'py>(
        &self,
        py: Python<'py>,
        text: String,
        mapper_seed: Option<u32>,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let core = &self.core;
        let e = run_detached(py, || core.embed_text(&text, mapper_seed))?;
        Ok(PyArray1::from_vec(py, e))
    }

    /// Interleaved audio's embeddings: `[768]` (`pooled`) or `[clips, 768]` float32.
    #[pyo3(signature = (samples, channels, rate, pooled))]
    fn embed_audio<'py>(
        &self,
        py: Python<'py>,
        samples: PyReadonlyArray1<'py, f32>,
        channels: usize,
        rate: u32,
        pooled: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let samples = samples
            .as_slice()
            .map_err(|e| to_py(Error::invalid(e.to_string())))?
            .to_vec();
        let core = &self.core;
        let each = run_detached(py, || core.embed_audio(samples, channels, rate, pooled))?;
        let n = each.len();
        let flat: Vec<f32> = each.into_iter().flatten().collect();
        let arr = PyArray1::from_vec(py, flat);
        Ok(if pooled {
            arr.into_any()
        } else {
            arr.reshape([n, EMBEDDING_DIM])?.into_any()
        })
    }

    /// The 12 style codes of a `[768]` float32 embedding.
    fn tokenize(&self, py: Python<'_>, embedding: PyReadonlyArray1<'_, f32>) -> PyResult<Vec<i64>> {
        let e = embedding
            .as_slice()
            .map_err(|e| to_py(Error::invalid(e.to_string())))?
            .to_vec();
        let core = &self.core;
        run_detached(py, || core.tokenize(&e))
    }
}
