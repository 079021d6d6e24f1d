//! `_rill.SpeechModel` and `_rill.SpeechStream`: Magpie TTS (text → 22.05 kHz mono).
//!
//! Synthesis runs on a Rust thread ([`crate::speech::SpeechStream`]); the caller
//! waits for its frames with the GIL released, checking for Ctrl-C between
//! waits. Dropped characters become one `RuntimeWarning` per call, raised before
//! any audio is made.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyRuntimeWarning, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString};

use super::{run_detached, to_py};
use crate::error::Error;
use crate::speech::{
    Planned, Poll, Speech, SpeechLoad, SpeechRequest, SpeechStream as CoreStream, VoiceArg,
    SPEECH_CODEBOOKS, SPEECH_SAMPLE_RATE,
};

/// How long a wait for a frame lasts before Python gets to check its signals.
const WAIT: Duration = Duration::from_millis(100);

/// A loaded Magpie TTS voice (wrapped by `rill_mrt.Speech`).
#[pyclass(frozen, module = "rill_mrt._rill")]
pub struct SpeechModel {
    core: Arc<Speech>,
}

/// The voice argument: an index (`int` ≥ 0) or a name (`str`).
fn voice_arg(v: &Bound<'_, PyAny>) -> PyResult<VoiceArg> {
    if v.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(
            "voice must be an int index or a str name",
        ));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(VoiceArg::Name(v.extract::<String>()?));
    }
    match v.extract::<i64>() {
        Ok(i) if i >= 0 => Ok(VoiceArg::Index(i as usize)),
        Ok(i) => Err(to_py(Error::invalid(format!(
            "voice {i} is out of range: give an index from 0 or a name"
        )))),
        Err(_) => Err(PyTypeError::new_err(
            "voice must be an int index or a str name",
        )),
    }
}

/// Plans a request without the GIL and reports dropped characters as a warning.
fn plan(py: Python<'_>, core: &Speech, r: &SpeechRequest) -> PyResult<Planned> {
    let planned = run_detached(py, || core.plan(r))?;
    if !planned.dropped().is_empty() {
        let msg = format!(
            "the {} front end cannot encode {} character(s) of the text; they are left out: {}",
            planned.language().name(),
            planned.dropped().len(),
            planned.describe_dropped()
        );
        let category = py.get_type::<PyRuntimeWarning>();
        // stacklevel 2: the frame that called the rill_mrt method.
        PyErr::warn(py, &category, &std::ffi::CString::new(msg)?, 2)?;
    }
    Ok(planned)
}

#[allow(clippy::too_many_arguments)]
fn request(
    text: String,
    voice: &Bound<'_, PyAny>,
    language: String,
    seed: u64,
    temperature: Option<f32>,
    top_k: Option<usize>,
    cfg_scale: Option<f32>,
    max_frames: Option<usize>,
    normalize: bool,
) -> PyResult<SpeechRequest> {
    Ok(SpeechRequest {
        text,
        voice: voice_arg(voice)?,
        language,
        seed,
        temperature,
        top_k,
        cfg_scale,
        max_frames,
        normalize,
    })
}

#[pymethods]
impl SpeechModel {
    #[new]
    #[pyo3(signature = (checkpoint, codec, random_weights, all_languages, precision, threads))]
    fn new(
        py: Python<'_>,
        checkpoint: Option<PathBuf>,
        codec: Option<PathBuf>,
        random_weights: Option<u64>,
        all_languages: Option<bool>,
        precision: Option<String>,
        threads: Option<usize>,
    ) -> PyResult<SpeechModel> {
        let o = SpeechLoad {
            checkpoint,
            codec,
            random_weights,
            all_languages,
            precision,
            threads,
        };
        let core = run_detached(py, || Speech::load(&o))?;
        Ok(SpeechModel {
            core: Arc::new(core),
        })
    }

    #[getter]
    fn voices(&self) -> Vec<String> {
        self.core.voices()
    }

    #[getter]
    fn languages(&self) -> Vec<&'static str> {
        self.core.languages()
    }

    #[getter]
    fn sample_rate(&self) -> u32 {
        SPEECH_SAMPLE_RATE
    }

    #[getter]
    fn precision(&self) -> &'static str {
        self.core.precision()
    }

    #[getter]
    fn threads(&self) -> usize {
        self.core.threads()
    }

    /// The whole speech: `(samples [N·1024] float32, codes [N, 8] int32)`.
    #[pyo3(signature = (text, voice, language, seed, temperature, top_k, cfg_scale, max_frames, normalize))]
    #[allow(clippy::too_many_arguments)]
    fn speak<'py>(
        &self,
        py: Python<'py>,
        text: String,
        voice: &Bound<'py, PyAny>,
        language: String,
        seed: u64,
        temperature: Option<f32>,
        top_k: Option<usize>,
        cfg_scale: Option<f32>,
        max_frames: Option<usize>,
        normalize: bool,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let r = request(
            text,
            voice,
            language,
            seed,
            temperature,
            top_k,
            cfg_scale,
            max_frames,
            normalize,
        )?;
        let planned = plan(py, &self.core, &r)?;
        let core = &self.core;
        let mut stream = run_detached(py, || core.start(planned))?;
        let (mut samples, mut codes) = (Vec::new(), Vec::new());
        loop {
            // Frames for up to WAIT at a time, then Python checks its signals.
            let done = run_detached(py, || {
                let until = Instant::now() + WAIT;
                loop {
                    let left = until.saturating_duration_since(Instant::now());
                    match stream.poll(left)? {
                        Poll::Frame(f) => {
                            samples.extend_from_slice(&f.samples);
                            codes.extend(f.codes.iter().map(|&c| c as i32));
                            if left.is_zero() {
                                return Ok(false);
                            }
                        }
                        Poll::Pending => return Ok(false),
                        Poll::End => return Ok(true),
                    }
                }
            })?;
            if done {
                break;
            }
            // Ctrl-C: the error drops the stream, which stops the synthesis.
            py.check_signals()?;
        }
        let n = codes.len() / SPEECH_CODEBOOKS;
        let codes = PyArray1::from_vec(py, codes)
            .reshape([n, SPEECH_CODEBOOKS])?
            .into_any();
        Ok((PyArray1::from_vec(py, samples).into_any(), codes))
    }

    /// A stream of frames (1024 float32 samples each), made on a Rust thread.
    #[pyo3(signature = (text, voice, language, seed, temperature, top_k, cfg_scale, max_frames, normalize))]
    #[allow(clippy::too_many_arguments)]
    fn stream(
        &self,
        py: Python<'_>,
        text: String,
        voice: &Bound<'_, PyAny>,
        language: String,
        seed: u64,
        temperature: Option<f32>,
        top_k: Option<usize>,
        cfg_scale: Option<f32>,
        max_frames: Option<usize>,
        normalize: bool,
    ) -> PyResult<SpeechStream> {
        let r = request(
            text,
            voice,
            language,
            seed,
            temperature,
            top_k,
            cfg_scale,
            max_frames,
            normalize,
        )?;
        let planned = plan(py, &self.core, &r)?;
        let core = &self.core;
        let stream = run_detached(py, || core.start(planned))?;
        Ok(SpeechStream {
            inner: Mutex::new(Some(stream)),
        })
    }
}

/// An iterator of 1024-sample float32 frames; `close()` (or dropping it) stops
/// the synthesis.
#[pyclass(frozen, module = "rill_mrt._rill")]
pub struct SpeechStream {
    /// `None` once closed or finished.
    inner: Mutex<Option<CoreStream>>,
}

#[pymethods]
impl SpeechStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let inner = &self.inner;
        loop {
            let r = run_detached(py, || {
                let mut guard = inner.lock().map_err(|_| {
                    Error::Runtime("this speech stream failed earlier; start a new one".into())
                })?;
                let Some(s) = guard.as_mut() else {
                    return Ok(Poll::End);
                };
                match s.poll(WAIT) {
                    Ok(Poll::End) => {
                        *guard = None;
                        Ok(Poll::End)
                    }
                    Err(e) => {
                        *guard = None;
                        Err(e)
                    }
                    other => other,
                }
            })?;
            match r {
                Poll::Frame(f) => return Ok(Some(PyArray1::from_vec(py, f.samples).into_any())),
                Poll::End => return Ok(None),
                Poll::Pending => py.check_signals()?,
            }
        }
    }

    /// Stops the synthesis; the iterator then ends.
    fn close(&self) -> PyResult<()> {
        let mut guard = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("this speech stream failed earlier"))?;
        *guard = None;
        Ok(())
    }
}
