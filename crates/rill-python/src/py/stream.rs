//! `_rill.Stream`: an iterator of 40 ms frames.

use std::sync::Arc;

use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;

use super::state::State;
use super::{run_detached, PyControls};
use crate::controls::Controls;
use crate::model::Model as Core;
use crate::{stream, FRAME_SAMPLES};

#[pyclass(module = "rill_mrt._rill")]
pub struct Stream {
    inner: stream::Stream,
    model: Arc<Core>,
}

impl Stream {
    pub(crate) fn new(inner: stream::Stream, model: Arc<Core>) -> Stream {
        Stream { inner, model }
    }
}

type FramePair<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>);

#[pymethods]
impl Stream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// `(samples [1920,2] float32, tokens [12] int32)`.
    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<FramePair<'py>>> {
        let inner = &mut self.inner;
        let Some(f) = run_detached(py, || inner.next_frame())? else {
            return Ok(None);
        };
        let samples = PyArray1::from_vec(py, f.samples)
            .reshape([FRAME_SAMPLES, 2])?
            .into_any();
        let tokens: Vec<i32> = f.tokens.iter().map(|&t| t as i32).collect();
        Ok(Some((samples, PyArray1::from_vec(py, tokens).into_any())))
    }

    /// New controls from the next language-model step on.
    fn update(&mut self, py: Python<'_>, controls: PyControls) -> PyResult<()> {
        let inner = &mut self.inner;
        run_detached(py, || inner.update(Controls::from(controls)))
    }

    /// The state after the last frame returned.
    fn state(&self) -> State {
        State::parsed(self.inner.state(), &self.model)
    }
}
