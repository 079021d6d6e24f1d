//! `_rill.Model`: a loaded model and its generation call.

use std::path::PathBuf;
use std::sync::Arc;

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use super::state::State;
use super::stream::Stream;
use super::{run_detached, to_py, PyControls};
use crate::continuation::Continuation;
use crate::controls::Controls;
use crate::error::Error;
use crate::model::{forced_rows, LoadOptions, Model as Core, Request};
use crate::{stream, FRAME_SAMPLES};
use rill_mrt2::sampler::LEVEL;
use rill_mrt2::LEVELS;

#[pyclass(frozen, module = "rill_mrt._rill")]
pub struct Model {
    pub(crate) core: Arc<Core>,
}

type Arrays<'py> = (
    Bound<'py, PyAny>,
    Option<Bound<'py, PyAny>>,
    Option<Bound<'py, PyAny>>,
    State,
);

#[pymethods]
impl Model {
    #[new]
    #[pyo3(signature = (checkpoint, size, precision, codec, threads))]
    fn new(
        py: Python<'_>,
        checkpoint: Option<PathBuf>,
        size: String,
        precision: Option<String>,
        codec: String,
        threads: Option<usize>,
    ) -> PyResult<Model> {
        let o = LoadOptions {
            checkpoint,
            size,
            precision,
            codec,
            threads,
        };
        let core = run_detached(py, || Core::load(&o))?;
        Ok(Model {
            core: Arc::new(core),
        })
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.core.path().to_path_buf()
    }

    #[getter]
    fn size(&self) -> &'static str {
        self.core.kind().name()
    }

    #[getter]
    fn precision(&self) -> &'static str {
        self.core.precision().name()
    }

    #[getter]
    fn threads(&self) -> String {
        self.core.describe_threads()
    }

    /// One call: `(tokens [N,12] int32, samples [N·1920,2] float32 | None,
    /// logits [steps,12,1024] float32 | None, state)`. `continue_from`: `None`, a
    /// path (`str`), or `(samples [N, channels] float32, sample_rate)`; then
    /// `keep_style` and `encoder` (a path or `None`) apply.
    #[pyo3(signature = (controls, frames, seed, state, forced, audio, logits, continue_from=None, keep_style=false, encoder=None))]
    #[allow(clippy::too_many_arguments)]
    fn generate<'py>(
        &self,
        py: Python<'py>,
        controls: PyControls,
        frames: usize,
        seed: u64,
        state: Option<&State>,
        forced: Option<PyReadonlyArray2<'py, i64>>,
        audio: bool,
        logits: bool,
        continue_from: Option<Bound<'py, PyAny>>,
        keep_style: bool,
        encoder: Option<PathBuf>,
    ) -> PyResult<Arrays<'py>> {
        let controls = Controls::from(controls);
        let clip = match continue_from {
            None => None,
            Some(c) => Some(clip(py, &c, keep_style, encoder)?),
        };
        let state = state.map(|s| s.resolve(&self.core)).transpose()?;
        let forced = match &forced {
            Some(f) => {
                if f.shape()[1] != LEVELS {
                    return Err(to_py(Error::invalid(format!(
                        "forced_tokens must have shape [N, 12], got {:?}",
                        f.shape()
                    ))));
                }
                let flat = f
                    .as_slice()
                    .map_err(|e| to_py(Error::invalid(e.to_string())))?;
                Some(forced_rows(flat).map_err(to_py)?)
            }
            None => None,
        };
        let core = &self.core;
        let out = run_detached(py, || {
            core.generate(
                &Request {
                    controls,
                    frames,
                    seed,
                    forced: forced.as_deref(),
                    audio,
                    logits,
                    continue_from: clip.as_ref(),
                },
                state.as_deref(),
            )
        })?;
        let n = out.tokens.len() / LEVELS;
        let tokens = PyArray1::from_vec(py, out.tokens)
            .reshape([n, LEVELS])?
            .into_any();
        let samples = if audio {
            Some(
                PyArray1::from_vec(py, out.audio)
                    .reshape([n * FRAME_SAMPLES, 2])?
                    .into_any(),
            )
        } else {
            None
        };
        let logits = if logits {
            let steps = out.logits.len() / (LEVELS * LEVEL);
            Some(
                PyArray1::from_vec(py, out.logits)
                    .reshape([steps, LEVELS, LEVEL])?
                    .into_any(),
            )
        } else {
            None
        };
        let state = out
            .state
            .ok_or_else(|| to_py(Error::Runtime("the call returned no state".into())))?;
        let state = State::parsed(state, core);
        Ok((tokens, samples, logits, state))
    }

    /// A frame-by-frame stream (`frames=None`: endless).
    #[pyo3(signature = (controls, seed, state, frames))]
    fn stream(
        &self,
        py: Python<'_>,
        controls: PyControls,
        seed: u64,
        state: Option<&State>,
        frames: Option<usize>,
    ) -> PyResult<Stream> {
        let controls = Controls::from(controls);
        let state = state.map(|s| s.resolve(&self.core)).transpose()?;
        let core = self.core.clone();
        let s = run_detached(py, || {
            stream::Stream::new(core, controls, seed, state.as_deref(), frames)
        })?;
        Ok(Stream::new(s, self.core.clone()))
    }
}

/// The clip of `continue_from`: a file path, or `(samples [N, channels], rate)`.
fn clip(
    py: Python<'_>,
    c: &Bound<'_, PyAny>,
    keep_style: bool,
    encoder: Option<PathBuf>,
) -> PyResult<Continuation> {
    if let Ok(path) = c.extract::<PathBuf>() {
        return run_detached(py, || Continuation::from_file(&path, keep_style, encoder));
    }
    let Ok((samples, rate)) = c.extract::<(PyReadonlyArray2<'_, f32>, u32)>() else {
        return Err(PyTypeError::new_err(
            "continue_from must be a path to an audio file, or (samples [N, channels] float32, sample_rate)",
        ));
    };
    let channels = samples.shape()[1];
    let audio = samples
        .as_slice()
        .map_err(|e| to_py(Error::invalid(e.to_string())))?
        .to_vec();
    Ok(Continuation {
        audio,
        rate,
        channels,
        keep_style,
        encoder,
    })
}
