//! Pre-quantised checkpoints written by `rill quantize`.
//!
//! Same safetensors container and tensor names as the upstream checkpoint, except
//! that each weight matrix stored in a compact format is replaced by its parts,
//! named `NAME#FORMAT:PART` (for example `…/query_projection/kernel#int8:q`,
//! `…#int8:scales`, `…#int8:biases`), in the engine's `[out][in]` layout. Every
//! other tensor (norms, biases, the codec) is copied unchanged. The metadata key
//! [`PRECISION_KEY`] names the precision mode the file was made for.

/// Metadata key holding the precision mode of a pre-quantised file.
pub const PRECISION_KEY: &str = "rill.precision";
/// Metadata key holding the model (`mrt2_small` / `mrt2_base`) of a pre-quantised file.
pub const MODEL_KEY: &str = "rill.model";
/// Metadata key holding the file format version.
pub const FORMAT_KEY: &str = "rill.format";
/// Current format version.
pub const FORMAT: &str = "rill-quantized v1";

/// Name of one part of a pre-quantised tensor.
pub fn part_name(tensor: &str, format: &str, part: &str) -> String {
    format!("{tensor}#{format}:{part}")
}
