//! Reads checkpoint tensors into engine layouts at a given precision.
//!
//! JAX kernels are `[in, out]` (or `[in, H, Dh]`); the engine stores every matrix
//! row-major `[out][in]` so a matrix-vector product streams contiguous rows. A
//! pre-quantised file (`rill quantize`) already holds matrices in that layout and
//! format (`rill_checkpoint::quantized`); they load without re-quantising.

use std::cell::RefCell;

use rill_checkpoint::Checkpoint;
use rill_kernels::matrix::{round_bf16, transpose};
use rill_kernels::{Matrix, Ops, WeightFormat};

use crate::error::ModelError;
use crate::precision::{Precision, Role};

/// A matrix as loaded, keyed by its checkpoint tensor name (for `rill quantize`).
pub(crate) type RecordedMatrix = (String, Matrix);

pub(crate) struct Loader<'a> {
    pub ckpt: &'a Checkpoint,
    pub precision: Precision,
    /// The kernels every block of the model runs on (resolved once, at load).
    pub ops: Ops,
    /// When set, every matrix loaded by name is also recorded here.
    pub record: Option<RefCell<Vec<RecordedMatrix>>>,
}

impl Loader<'_> {
    fn raw(&self, name: &str, numel: usize) -> Result<Vec<f32>, ModelError> {
        let t = self.ckpt.tensor(name)?;
        if t.numel() != numel {
            return Err(ModelError::Shape {
                name: name.to_string(),
                expected: numel,
                found: t.numel(),
            });
        }
        let v = t.to_f32()?;
        self.ckpt.release(name);
        Ok(v)
    }

    /// A small vector (norm scale, bias, sink, per-dim scale), bf16-rounded if the
    /// precision mode rounds every depthformer weight.
    pub fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>, ModelError> {
        let mut v = self.raw(name, len)?;
        if self.precision.rounds_vectors_to_bf16() {
            v.iter_mut().for_each(|x| *x = round_bf16(*x));
        }
        Ok(v)
    }

    /// The `rows × cols` engine matrix of tensor `name`, transposing JAX `[in, out]`
    /// kernels when `in_major`.
    fn matrix(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
        in_major: bool,
        role: Role,
    ) -> Result<Matrix, ModelError> {
        let format = self.precision.format(role);
        let m = match self.ckpt.quantized_format(name) {
            Some(stored) => self.prequantized(name, stored, format, rows, cols)?,
            None => {
                let v = self.raw(name, rows * cols)?;
                let v = if in_major {
                    transpose(cols, rows, &v)
                } else {
                    v
                };
                Matrix::from_f32(rows, cols, v, format)
            }
        };
        if let Some(r) = &self.record {
            r.borrow_mut().push((name.to_string(), m.clone()));
        }
        Ok(m)
    }

    fn prequantized(
        &self,
        name: &str,
        stored: &str,
        format: WeightFormat,
        rows: usize,
        cols: usize,
    ) -> Result<Matrix, ModelError> {
        if stored != format.name() {
            let run_with = self
                .ckpt
                .quantized_precision()
                .map(|p| format!(" (--precision {p})"))
                .unwrap_or_default();
            let needs = format.name();
            return Err(ModelError::Prequantized {
                name: name.to_string(),
                reason: format!(
                    "stored as {stored}, but precision {} needs {needs}; run with the precision the file was quantised for{run_with}",
                    self.precision
                ),
            });
        }
        Ok(self.ckpt.quantized_matrix(name, format, rows, cols)?)
    }

    /// A JAX `[in, out...]` kernel as an `[out][in]` matrix.
    pub fn dense(
        &self,
        name: &str,
        din: usize,
        dout: usize,
        role: Role,
    ) -> Result<Matrix, ModelError> {
        self.matrix(name, dout, din, true, role)
    }

    /// Several JAX `[in, out_i]` kernels sharing the input, stacked as one
    /// `[Σ out_i][in]` matrix (one pass over the input, e.g. fused q/k/v).
    pub fn dense_stacked(
        &self,
        names: &[&str],
        din: usize,
        dout: usize,
        role: Role,
    ) -> Result<Matrix, ModelError> {
        let parts = names
            .iter()
            .map(|n| self.dense(n, din, dout, role))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Matrix::stack(parts))
    }

    /// A kernel already in `[out][in]` order (attention output projection
    /// `[D, H, Dh]`, embedding tables `[rows, dim]`).
    pub fn rows(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
        role: Role,
    ) -> Result<Matrix, ModelError> {
        self.matrix(name, rows, cols, false, role)
    }
}
