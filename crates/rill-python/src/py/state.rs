//! `_rill.State`: a resumable generation state, picklable as opaque bytes.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use super::to_py;
use crate::model::Model as Core;
use crate::state::State as CoreState;

enum Inner {
    /// Made by a call of this process: the state and the model that can serialise it.
    Parsed {
        state: Arc<CoreState>,
        model: Arc<Core>,
    },
    /// Unpickled bytes (header checked), validated when a model resumes them.
    Raw(Vec<u8>),
}

/// Where a generation stopped; pass it as `state=` to continue bit-identically.
/// Picklable (`pickle.dumps(state)`, or `bytes(state)` / `State.from_bytes(b)`).
#[pyclass(frozen, module = "rill_mrt._rill")]
pub struct State {
    inner: Inner,
}

impl State {
    pub(crate) fn parsed(state: CoreState, model: &Arc<Core>) -> State {
        State {
            inner: Inner::Parsed {
                state: Arc::new(state),
                model: model.clone(),
            },
        }
    }

    /// The state for `model` (raw bytes are parsed and validated against it).
    pub(crate) fn resolve(&self, model: &Core) -> PyResult<Arc<CoreState>> {
        match &self.inner {
            Inner::Parsed { state, .. } => Ok(state.clone()),
            Inner::Raw(b) => CoreState::from_bytes(b, model.lm(), model.codec())
                .map(Arc::new)
                .map_err(to_py),
        }
    }

    fn bytes_vec(&self) -> Vec<u8> {
        match &self.inner {
            Inner::Parsed { state, model } => state.to_bytes(model.lm()),
            Inner::Raw(b) => b.clone(),
        }
    }
}

#[pymethods]
impl State {
    /// A state from `to_bytes()` output (checked when a model resumes it).
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<State> {
        CoreState::check_header(data).map_err(to_py)?;
        Ok(State {
            inner: Inner::Raw(data.to_vec()),
        })
    }

    /// The serialised state.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.bytes_vec())
    }

    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        self.to_bytes(py)
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let f = py.import("rill_mrt")?.getattr("_state_from_bytes")?;
        let args = PyTuple::new(py, [self.to_bytes(py)])?;
        PyTuple::new(py, [f, args.into_any()])
    }

    /// Language-model frames generated since the start (`None` for unparsed bytes).
    #[getter]
    fn frame(&self) -> Option<u64> {
        match &self.inner {
            Inner::Parsed { state, .. } => Some(state.frame()),
            Inner::Raw(_) => None,
        }
    }

    /// Whether audio can continue from this state (`False` after `generate_tokens`).
    #[getter]
    fn has_audio(&self) -> Option<bool> {
        match &self.inner {
            Inner::Parsed { state, .. } => Some(state.has_audio()),
            Inner::Raw(_) => None,
        }
    }

    fn __repr__(&self) -> String {
        match &self.inner {
            Inner::Parsed { state, .. } => format!(
                "rill_mrt.State(frame={}, audio={})",
                state.frame(),
                state.has_audio()
            ),
            Inner::Raw(b) => format!("rill_mrt.State(<{} bytes, not yet resumed>)", b.len()),
        }
    }
}
