//! Writing pre-quantised checkpoints (`rill quantize`): the language model's
//! matrices as this crate loads them at a precision, stored in the format of
//! [`rill_checkpoint::quantized`] (which also reads them back, see the loader).

use std::path::Path;

use rill_checkpoint::{quantized, Checkpoint};

use crate::config::ModelKind;
use crate::error::ModelError;
use crate::layout;
use crate::model::Mrt2;
use crate::precision::Precision;

/// What [`write`] stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub model: ModelKind,
    /// Matrices stored in the precision's formats (every other tensor is copied).
    pub matrices: usize,
}

/// The precisions a pre-quantised file can hold (all but the source's f32), for
/// error messages.
pub(crate) fn compact_precisions() -> String {
    let names: Vec<&str> = Precision::ALL
        .iter()
        .filter(|&&p| p != Precision::F32)
        .map(|p| p.name())
        .collect();
    names.join(", ")
}

/// Loads the upstream-layout checkpoint `src` at `precision` and writes it to `path`
/// with every matrix already in that precision's format, so it loads without
/// re-quantising.
pub fn write(src: &Checkpoint, precision: Precision, path: &Path) -> Result<Written, ModelError> {
    if precision == Precision::F32 {
        return Err(ModelError::QuantizeToF32);
    }
    let model = layout::validate(src)?;
    if let Some(stored) = src.quantized_precision() {
        return Err(ModelError::AlreadyPrequantized {
            path: src.path().to_path_buf(),
            precision: stored.to_string(),
        });
    }
    let (_, matrices) = Mrt2::load_recording(src, precision)?;
    quantized::write(path, src, model.name(), precision.name(), &matrices)?;
    Ok(Written {
        model,
        matrices: matrices.len(),
    })
}
