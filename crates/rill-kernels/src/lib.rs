//! CPU kernels for rill.
//!
//! * [`isa`]: which SIMD tier this CPU runs (detected once, overridable with `RILL_ISA`).
//! * [`pool`]: a persistent worker pool in which the caller participates.
//! * [`Ops`]: a model's hot-path kernels on the SIMD tier it resolved once at load
//!   (products, attention loops, GELU); no step reads the process-wide tier.
//! * [`matrix`]: weight matrices in several formats and their matrix-vector products.
//! * [`ops`]: the small vector operations of a transformer step (norms, GELU, softmax).
//! * [`metrics`]: how close two signals are (cosine, largest difference, SNR).
//! * [`matmul`]: weight-once products of one matrix with several input rows (Magpie).
//! * [`conv`]: the implicit-GEMM convolution kernels of the SpectroStream and
//!   NanoCodec decoders, per SIMD tier.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod buf;
pub mod conv;
mod disjoint;
pub mod huge_pages;
pub mod isa;
pub mod matmul;
pub mod matrix;
pub mod metrics;
pub mod ops;
pub mod ops_bf16;
mod ops_table;
pub mod pool;
pub mod quant;

mod gemv_float;
mod gemv_int8;
mod gemv_lut4;
pub mod gemv_mlx8;
mod gemv_q4;
pub mod simd;

pub use buf::AVec;
pub use disjoint::DisjointOut;
pub use isa::{Isa, Tier};
pub use matrix::{
    all_exact_f16, GemvScratch, Matrix, MatrixArrays, MatrixArraysError, WeightFormat,
};
pub use ops_table::Ops;
pub use pool::Pool;
