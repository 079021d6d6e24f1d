//! The extension module `rill_mrt._rill` (built by maturin; the public API is the
//! Python package `rill_mrt`, which wraps these classes).

mod model;
mod speech;
mod state;
mod stream;
mod style;

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::controls::Controls;
use crate::error::Error;

/// Python exception of an [`Error`].
pub(crate) fn to_py(e: Error) -> PyErr {
    match e {
        Error::Invalid(m) => PyValueError::new_err(m),
        Error::NotFound(m) => PyFileNotFoundError::new_err(m),
        Error::Os(m) => PyOSError::new_err(m),
        Error::Runtime(m) => PyRuntimeError::new_err(m),
    }
}

/// Runs `f` without the GIL; an error becomes its exception and a panic (a bug in
/// rill) a `RuntimeError`, never a Python-level panic.
pub(crate) fn run_detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    let r = py.detach(|| catch_unwind(AssertUnwindSafe(f)));
    match r {
        Ok(r) => r.map_err(to_py),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!(
                "internal error in rill (please report it): {msg}"
            )))
        }
    }
}

/// The controls as the Python layer passes them (already split from upstream's
/// dict): `(style, style_levels, notes, drums, (cfg musiccoca, notes, drums),
/// temperature, top_k)`.
#[derive(FromPyObject)]
pub(crate) struct PyControls(
    Option<Vec<i64>>,
    i64,
    Option<Vec<i64>>,
    Option<i64>,
    (f64, f64, f64),
    f64,
    i64,
);

impl From<PyControls> for Controls {
    fn from(
        PyControls(style, style_levels, notes, drums, cfg, temperature, top_k): PyControls,
    ) -> Controls {
        Controls {
            style,
            style_levels,
            notes,
            drums,
            cfg: [cfg.0, cfg.1, cfg.2],
            temperature,
            top_k,
        }
    }
}

/// Validates controls: `(style, style_levels, notes, drums, (cfg×3), temperature, top_k)`.
#[pyfunction]
fn check_controls(controls: PyControls) -> PyResult<()> {
    Controls::from(controls)
        .resolve()
        .map(|_| ())
        .map_err(to_py)
}

/// The 144 encoder tokens of the controls (upstream's `_build_conditioning` block).
#[pyfunction]
fn conditioning_tokens(controls: PyControls) -> PyResult<Vec<i32>> {
    let (c, _) = Controls::from(controls).resolve().map_err(to_py)?;
    Ok(c.tokens().to_vec())
}

/// The names `precision=` accepts.
#[pyfunction]
fn precisions() -> Vec<&'static str> {
    crate::model::precision_names()
}

/// Writes a random-weight checkpoint in the real layout (as `rill synth-checkpoint`).
#[pyfunction]
#[pyo3(signature = (path, size="mrt2_small", seed=0))]
fn synth_checkpoint(
    py: Python<'_>,
    path: std::path::PathBuf,
    size: &str,
    seed: u64,
) -> PyResult<(String, usize, u64, u64, bool)> {
    let kind = crate::model::parse_size(size).map_err(to_py)?;
    if path.is_dir() {
        return Err(to_py(Error::invalid(format!(
            "{} is a directory; give a file name like mrt2_small_random.safetensors",
            path.display()
        ))));
    }
    let s = run_detached(py, || {
        rill_stream::source::synthesise(kind, seed, &path, &mut |_| {}).map_err(Error::from)
    })?;
    Ok((s.sha256, s.tensors, s.params, s.bytes, s.oracle_checked))
}

/// The SIMD tier the kernels run on.
#[pyfunction]
fn isa() -> String {
    rill_kernels::isa::active().to_string()
}

#[pymodule(name = "_rill")]
mod rill_module {
    #[pymodule_export]
    use super::model::Model;
    #[pymodule_export]
    use super::speech::{SpeechModel, SpeechStream};
    #[pymodule_export]
    use super::state::State;
    #[pymodule_export]
    use super::stream::Stream;
    #[pymodule_export]
    use super::style::StyleModel;
    #[pymodule_export]
    use super::{check_controls, conditioning_tokens, isa, precisions, synth_checkpoint};
}
