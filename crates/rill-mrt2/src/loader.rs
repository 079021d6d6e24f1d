//! Reads checkpoint tensors into engine layouts at a given precision.
//!
//! JAX kernels are `[in, out]` (or `[in, H, Dh]`); the engine stores every matrix
//! row-major `[out][in]` so a matrix-vector product streams contiguous rows.

use rill_checkpoint::Checkpoint;
use rill_kernels::matrix::{round_bf16, transpose};
use rill_kernels::Matrix;

use crate::error::ModelError;
use crate::precision::{Precision, Role};

pub(crate) struct Loader<'a> {
    pub ckpt: &'a Checkpoint,
    pub precision: Precision,
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
        Ok(t.to_f32()?)
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

    /// A JAX `[in, out...]` kernel as an `[out][in]` matrix.
    pub fn dense(&self, name: &str, din: usize, dout: usize, role: Role) -> Result<Matrix, ModelError> {
        let v = self.raw(name, din * dout)?;
        Ok(Matrix::from_f32_transposed(dout, din, &v, self.precision.format(role)))
    }

    /// Several JAX `[in, out_i]` kernels sharing the input, stacked as one
    /// `[Σ out_i][in]` matrix (one pass over the input, e.g. fused q/k/v).
    pub fn dense_stacked(&self, names: &[&str], din: usize, dout: usize, role: Role) -> Result<Matrix, ModelError> {
        let mut rows = Vec::with_capacity(names.len() * din * dout);
        for name in names {
            let v = self.raw(name, din * dout)?;
            rows.extend_from_slice(&transpose(din, dout, &v));
        }
        Ok(Matrix::from_f32(names.len() * dout, din, rows, self.precision.format(role)))
    }

    /// A kernel already in `[out][in]` order (attention output projection
    /// `[D, H, Dh]`, embedding tables `[rows, dim]`).
    pub fn rows(&self, name: &str, rows: usize, cols: usize, role: Role) -> Result<Matrix, ModelError> {
        let v = self.raw(name, rows * cols)?;
        Ok(Matrix::from_f32(rows, cols, v, self.precision.format(role)))
    }
}
