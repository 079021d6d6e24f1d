//! Weight matrices in row-major `[rows = out][cols = in]` layout and their
//! matrix-vector products, split over a [`Pool`] by blocks of rows.
//!
//! Each output row is computed by one thread with a fixed summation order, so
//! results do not depend on the number of threads.

use std::ops::Range;

use std::cell::RefCell;

use crate::gemv_int8::{Act, Q8};
use crate::gemv_lut4::{self, Lut4};
use crate::gemv_mlx8::{self, Mlx8};
use crate::gemv_q4::{self, AFFINE_GROUP, PALETTE_ROWS};
use crate::isa::{self, Isa};
use crate::pool::Pool;
use crate::quant;
use crate::{gemv_float, gemv_int8};

/// Storage format of a weight matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WeightFormat {
    /// IEEE f32.
    F32,
    /// bfloat16 (f32 rounded to nearest even), widened exactly to f32 in the kernel.
    Bf16,
    /// IEEE half (f32 rounded to nearest even; ±∞ past 65504), widened exactly: the
    /// bytes of bf16 with 3 more mantissa bits, and exact for weights that come as
    /// f16 (NVIDIA's F16 GGUF).
    F16,
    /// MLX affine int8, groups of 64 along the input (`nn.quantize(bits=8)`).
    Int8,
    /// MLX affine int4, groups of 32 along the input (`nn.quantize(bits=4, group_size=32)`).
    Int4,
    /// 4-bit palettisation: a 16-level k-means codebook per 16 output rows.
    Lut4,
    /// Upstream's default int8 exactly: bf16 weights, `mx.quantize` (g64, 8 bits)
    /// with bf16 scales and biases, multiplied with MLX's CPU `quantized_matmul`
    /// arithmetic (bf16 activations, bf16 running sum; see `gemv_mlx8`).
    MlxInt8,
}

impl WeightFormat {
    pub fn name(self) -> &'static str {
        match self {
            WeightFormat::F32 => "f32",
            WeightFormat::Bf16 => "bf16",
            WeightFormat::F16 => "f16",
            WeightFormat::Int8 => "int8",
            WeightFormat::Int4 => "int4",
            WeightFormat::Lut4 => "lut4",
            WeightFormat::MlxInt8 => "mlx-int8",
        }
    }
}

#[derive(Clone)]
enum Storage {
    F32(Vec<f32>),
    Bf16(Vec<u16>),
    F16(Vec<half::f16>),
    Int8(Q8),
    /// Packed nibbles (see `gemv_q4`), per-group scales and biases.
    Int4 {
        packed: Vec<u8>,
        scales: Vec<f32>,
        biases: Vec<f32>,
    },
    /// Blocked 4-bit indices, int8 levels and a scale per 16 rows.
    Lut4(Lut4),
    Mlx8(Mlx8),
}

/// Per-thread activation quantisation buffers (grown once, then reused).
#[derive(Default)]
struct ActScratch {
    xq: Vec<i16>,
    hi: Vec<i8>,
    lo: Vec<i8>,
    sums: Vec<i32>,
    sums_f: Vec<f32>,
    /// The activations rounded to bf16 (MLX int8 inputs).
    xb: Vec<f32>,
}

thread_local! {
    static ACT: RefCell<ActScratch> = RefCell::new(ActScratch::default());
}

/// A `[rows][cols]` weight matrix.
#[derive(Clone)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: Storage,
}

impl std::fmt::Debug for Matrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Matrix({}x{}, {})",
            self.rows,
            self.cols,
            self.format().name()
        )
    }
}

/// One stored array of a matrix in a pre-quantised file.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Raw bytes (int8 values, packed nibbles).
    U8(Vec<u8>),
    /// bf16 bit patterns.
    Bf16(Vec<u16>),
    F32(Vec<f32>),
}

/// Rows per pool task: small enough to balance two cores, large enough that the
/// per-task claim (one CAS) is negligible.
const ROWS_PER_TASK: usize = 32;

/// Rounds f32 to bf16 bits, nearest-even (as MLX `astype(bfloat16)`).
pub fn f32_to_bf16_bits(v: f32) -> u16 {
    half::bf16::from_f32(v).to_bits()
}

/// Whether every value is exactly an IEEE half (weights from an F16 file): stored
/// as half they keep every bit and stream half the bytes.
pub fn all_exact_f16(values: &[f32]) -> bool {
    values
        .iter()
        .all(|&v| half::f16::from_f32(v).to_f32().to_bits() == v.to_bits())
}

/// Rounds f32 to the nearest bf16 value, kept as f32.
pub fn round_bf16(v: f32) -> f32 {
    half::bf16::from_f32(v).to_f32()
}

/// Transposes a row-major `[rows][cols]` array into `[cols][rows]`.
pub fn transpose(rows: usize, cols: usize, a: &[f32]) -> Vec<f32> {
    assert_eq!(a.len(), rows * cols, "transpose input length");
    let mut t = vec![0f32; rows * cols];
    // Blocked so both sides stay cache-friendly for 1024x4096 kernels.
    const B: usize = 64;
    for r0 in (0..rows).step_by(B) {
        for c0 in (0..cols).step_by(B) {
            for r in r0..(r0 + B).min(rows) {
                let src = &a[r * cols..(r + 1) * cols];
                for c in c0..(c0 + B).min(cols) {
                    t[c * rows + r] = src[c];
                }
            }
        }
    }
    t
}

impl Matrix {
    /// Builds a matrix from row-major f32 values, converting to `format`.
    pub fn from_f32(rows: usize, cols: usize, values: Vec<f32>, format: WeightFormat) -> Matrix {
        assert_eq!(values.len(), rows * cols, "matrix data length");
        let data = match format {
            WeightFormat::F32 => Storage::F32(values),
            WeightFormat::Bf16 => {
                Storage::Bf16(values.iter().map(|&v| f32_to_bf16_bits(v)).collect())
            }
            WeightFormat::F16 => {
                Storage::F16(values.iter().map(|&v| half::f16::from_f32(v)).collect())
            }
            WeightFormat::Int8 if cols.is_multiple_of(gemv_int8::GROUP) => {
                let a = quant::affine(&values, cols, gemv_int8::GROUP, 8);
                Storage::Int8(Q8::from_affine(&a, rows, cols))
            }
            WeightFormat::Int4 if cols.is_multiple_of(AFFINE_GROUP) => {
                let a = quant::affine(&values, cols, AFFINE_GROUP, 4);
                Storage::Int4 {
                    packed: gemv_q4::pack(&a.q),
                    scales: a.scales,
                    biases: a.biases,
                }
            }
            WeightFormat::Lut4 if cols.is_multiple_of(32) => {
                let p = quant::palettize(&values, cols, PALETTE_ROWS);
                Storage::Lut4(Lut4::from_palette(&p, rows, cols))
            }
            WeightFormat::MlxInt8 if cols.is_multiple_of(gemv_mlx8::GROUP) => {
                Storage::Mlx8(Mlx8::quantize(rows, cols, &values))
            }
            // Upstream leaves matrices whose input width is not a multiple of the
            // group unquantised (bf16).
            WeightFormat::MlxInt8 => {
                Storage::Bf16(values.iter().map(|&v| f32_to_bf16_bits(v)).collect())
            }
            // Shapes the grouped formats cannot hold stay exact.
            WeightFormat::Int8 | WeightFormat::Int4 | WeightFormat::Lut4 => Storage::F32(values),
        };
        Matrix { rows, cols, data }
    }

    /// Builds a matrix from a `[cols][rows]` (input-major, JAX `kernel[in, out]`) array.
    pub fn from_f32_transposed(
        rows: usize,
        cols: usize,
        in_major: &[f32],
        format: WeightFormat,
    ) -> Matrix {
        Matrix::from_f32(rows, cols, transpose(cols, rows, in_major), format)
    }

    /// The arrays that store this matrix, by part name (e.g. `q`, `scales`).
    pub fn parts(&self) -> Vec<(&'static str, Part)> {
        match &self.data {
            Storage::F32(v) => vec![("f32", Part::F32(v.clone()))],
            Storage::Bf16(v) => vec![("bf16", Part::Bf16(v.clone()))],
            // Widened (exact), so the part types stay three.
            Storage::F16(v) => vec![("f16", Part::F32(v.iter().map(|h| h.to_f32()).collect()))],
            Storage::Int8(m) => {
                let a = m.to_affine();
                vec![
                    ("q", Part::U8(a.q)),
                    ("scales", Part::F32(a.scales)),
                    ("biases", Part::F32(a.biases)),
                ]
            }
            Storage::Int4 {
                packed,
                scales,
                biases,
            } => vec![
                ("q", Part::U8(packed.clone())),
                ("scales", Part::F32(scales.clone())),
                ("biases", Part::F32(biases.clone())),
            ],
            Storage::Lut4(m) => vec![
                ("q", Part::U8(gemv_q4::pack(&m.indices()))),
                ("lut", Part::F32(m.lut())),
            ],
            // The dequantised weights (what the product multiplies).
            Storage::Mlx8(m) => vec![("w", Part::Bf16(m.to_dequantized()))],
        }
    }

    /// Rebuilds a matrix of `format` from its parts (as written by [`Matrix::parts`]),
    /// checking every length.
    pub fn from_parts(
        format: WeightFormat,
        rows: usize,
        cols: usize,
        mut get: impl FnMut(&str) -> Option<Part>,
    ) -> Result<Matrix, String> {
        let mut take = |name: &str, len: usize| -> Result<Part, String> {
            let p = get(name).ok_or_else(|| format!("part {name} is missing"))?;
            let found = match &p {
                Part::U8(v) => v.len(),
                Part::Bf16(v) => v.len(),
                Part::F32(v) => v.len(),
            };
            if found != len {
                return Err(format!("part {name} has {found} values, expected {len}"));
            }
            Ok(p)
        };
        let n = rows * cols;
        let wrong = |name: &str| format!("part {name} has the wrong element type");
        let data = match format {
            WeightFormat::F32 => match take("f32", n)? {
                Part::F32(v) => Storage::F32(v),
                _ => return Err(wrong("f32")),
            },
            WeightFormat::Bf16 => match take("bf16", n)? {
                Part::Bf16(v) => Storage::Bf16(v),
                _ => return Err(wrong("bf16")),
            },
            WeightFormat::F16 => match take("f16", n)? {
                Part::F32(v) => Storage::F16(v.iter().map(|&x| half::f16::from_f32(x)).collect()),
                _ => return Err(wrong("f16")),
            },
            WeightFormat::Int8 => {
                let g = n / gemv_int8::GROUP;
                match (take("q", n)?, take("scales", g)?, take("biases", g)?) {
                    (Part::U8(q), Part::F32(scales), Part::F32(biases)) => {
                        let a = quant::Affine {
                            bits: 8,
                            group: gemv_int8::GROUP,
                            q,
                            scales,
                            biases,
                        };
                        Storage::Int8(Q8::from_affine(&a, rows, cols))
                    }
                    _ => return Err(wrong("q/scales/biases")),
                }
            }
            WeightFormat::Int4 => {
                let g = n / AFFINE_GROUP;
                match (take("q", n / 2)?, take("scales", g)?, take("biases", g)?) {
                    (Part::U8(packed), Part::F32(scales), Part::F32(biases)) => Storage::Int4 {
                        packed,
                        scales,
                        biases,
                    },
                    _ => return Err(wrong("q/scales/biases")),
                }
            }
            WeightFormat::Lut4 => {
                match (
                    take("q", n / 2)?,
                    take("lut", rows.div_ceil(PALETTE_ROWS) * 16)?,
                ) {
                    (Part::U8(packed), Part::F32(lut)) => {
                        let idx = (0..n).map(|i| gemv_q4::unpack_at(&packed, i)).collect();
                        let p = quant::Palette {
                            rows_per_group: PALETTE_ROWS,
                            lut,
                            idx,
                        };
                        Storage::Lut4(Lut4::from_palette(&p, rows, cols))
                    }
                    _ => return Err(wrong("q/lut")),
                }
            }
            WeightFormat::MlxInt8 => match take("w", n)? {
                Part::Bf16(w) => Storage::Mlx8(Mlx8::from_dequantized(rows, cols, &w)),
                _ => return Err(wrong("w")),
            },
        };
        Ok(Matrix { rows, cols, data })
    }

    /// Stacks matrices of one format with equal column counts (rows concatenated;
    /// every format here is row-wise, so this equals quantising the stacked matrix
    /// except for palettes, whose 16-row groups must not straddle the parts).
    pub fn stack(parts: Vec<Matrix>) -> Matrix {
        let cols = parts[0].cols;
        let rows = parts.iter().map(|m| m.rows).sum();
        let format = parts[0].format();
        assert!(
            parts.iter().all(|m| m.cols == cols && m.format() == format),
            "stack needs equal formats and widths"
        );
        assert!(
            format != WeightFormat::Lut4 || parts.iter().all(|m| m.rows % PALETTE_ROWS == 0),
            "palette parts must be whole 16-row groups"
        );
        if format == WeightFormat::Lut4 {
            let parts = parts
                .into_iter()
                .map(|m| match m.data {
                    Storage::Lut4(q) => q,
                    _ => unreachable!("formats checked above"),
                })
                .collect();
            return Matrix {
                rows,
                cols,
                data: Storage::Lut4(Lut4::stack(parts)),
            };
        }
        if format == WeightFormat::Int8 {
            let q8 = parts
                .into_iter()
                .map(|m| match m.data {
                    Storage::Int8(q) => q,
                    _ => unreachable!("formats checked above"),
                })
                .collect();
            return Matrix {
                rows,
                cols,
                data: Storage::Int8(Q8::stack(q8)),
            };
        }
        if let Storage::Mlx8(_) = parts[0].data {
            let mut w = Vec::with_capacity(rows * cols);
            for m in &parts {
                let Storage::Mlx8(m) = &m.data else {
                    unreachable!("formats checked above")
                };
                w.extend(m.to_dequantized());
            }
            return Matrix {
                rows,
                cols,
                data: Storage::Mlx8(Mlx8::from_dequantized(rows, cols, &w)),
            };
        }
        let mut it = parts.into_iter();
        let first = it.next().expect("at least one part");
        let mut data = first.data;
        for m in it {
            match (&mut data, m.data) {
                (Storage::F32(a), Storage::F32(b)) => a.extend(b),
                (Storage::Bf16(a), Storage::Bf16(b)) => a.extend(b),
                (Storage::F16(a), Storage::F16(b)) => a.extend(b),
                (
                    Storage::Int4 {
                        packed,
                        scales,
                        biases,
                    },
                    Storage::Int4 {
                        packed: p2,
                        scales: s2,
                        biases: b2,
                    },
                ) => {
                    packed.extend(p2);
                    scales.extend(s2);
                    biases.extend(b2);
                }
                _ => unreachable!("formats checked above"),
            }
        }
        Matrix { rows, cols, data }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn format(&self) -> WeightFormat {
        match self.data {
            Storage::F32(_) => WeightFormat::F32,
            Storage::Bf16(_) => WeightFormat::Bf16,
            Storage::F16(_) => WeightFormat::F16,
            Storage::Int8(_) => WeightFormat::Int8,
            Storage::Int4 { .. } => WeightFormat::Int4,
            Storage::Lut4(_) => WeightFormat::Lut4,
            Storage::Mlx8(_) => WeightFormat::MlxInt8,
        }
    }

    /// Bytes of weight data (what one product streams from memory).
    pub fn bytes(&self) -> usize {
        match &self.data {
            Storage::F32(v) => v.len() * 4,
            Storage::Bf16(v) => v.len() * 2,
            Storage::F16(v) => v.len() * 2,
            Storage::Int8(m) => m.bytes(),
            Storage::Int4 {
                packed,
                scales,
                biases,
            } => packed.len() + 4 * (scales.len() + biases.len()),
            Storage::Lut4(m) => m.bytes(),
            Storage::Mlx8(m) => m.bytes(),
        }
    }

    /// Row `r` widened to f32 (embedding lookup).
    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        let c = self.cols;
        match &self.data {
            Storage::F32(v) => out.copy_from_slice(&v[r * c..(r + 1) * c]),
            Storage::Bf16(v) => {
                for (o, &b) in out.iter_mut().zip(&v[r * c..(r + 1) * c]) {
                    *o = gemv_float::bf16_to_f32(b);
                }
            }
            Storage::F16(v) => {
                half::slice::HalfFloatSliceExt::convert_to_f32_slice(&v[r * c..(r + 1) * c], out)
            }
            Storage::Int8(m) => m.row_into(r, out),
            Storage::Int4 {
                packed,
                scales,
                biases,
            } => {
                for (i, o) in out.iter_mut().enumerate() {
                    let gi = (r * c + i) / AFFINE_GROUP;
                    *o = gemv_q4::unpack_at(packed, r * c + i) as f32 * scales[gi] + biases[gi];
                }
            }
            Storage::Lut4(m) => m.row_into(r, out),
            Storage::Mlx8(m) => m.row_into(r, out),
        }
    }

    /// `y = W·x` over all rows.
    pub fn gemv(&self, x: &[f32], y: &mut [f32], pool: &Pool) {
        self.gemv_rows(x, y, 0..self.rows, pool);
    }

    /// `y[i] = (W·x)[rows.start + i]` for a contiguous range of rows.
    pub fn gemv_rows(&self, x: &[f32], y: &mut [f32], rows: Range<usize>, pool: &Pool) {
        self.gemv_rows_isa(isa::active(), x, y, rows, pool);
    }

    /// `y0 = W·x0` and `y1 = W·x1` (two rows of a batch, e.g. the conditional and
    /// unconditional rows of classifier-free guidance). Float weights are read once
    /// for both; every output has exactly the bits [`Matrix::gemv`] gives it.
    pub fn gemv2(&self, x: [&[f32]; 2], y: [&mut [f32]; 2], pool: &Pool) {
        self.gemv2_isa(isa::active(), x, y, pool);
    }

    /// [`Matrix::gemv2`] on an explicit ISA tier.
    pub fn gemv2_isa(&self, isa: Isa, x: [&[f32]; 2], y: [&mut [f32]; 2], pool: &Pool) {
        let cols = self.cols;
        for v in 0..2 {
            assert_eq!(x[v].len(), cols, "gemv2 input length");
            assert_eq!(y[v].len(), self.rows, "gemv2 output length");
        }
        let [y0, y1] = y;
        let tasks = self.rows.div_ceil(ROWS_PER_TASK);
        let (o0, o1) = (SendPtr(y0.as_mut_ptr()), SendPtr(y1.as_mut_ptr()));
        let rows = self.rows;
        // SAFETY (both arms): tasks cover disjoint row ranges [lo, hi) of `y0` and
        // `y1`, which outlive `pool.run`.
        let block = |t: usize| {
            let lo = t * ROWS_PER_TASK;
            let hi = (lo + ROWS_PER_TASK).min(rows);
            let a = unsafe { std::slice::from_raw_parts_mut(o0.get().add(lo), hi - lo) };
            let b = unsafe { std::slice::from_raw_parts_mut(o1.get().add(lo), hi - lo) };
            (lo, hi, [a, b])
        };
        let run_all = |f: &(dyn Fn(usize) + Sync)| {
            if tasks <= 1 {
                f(0);
            } else {
                pool.run(tasks, f);
            }
        };
        match &self.data {
            Storage::F32(w) => run_all(&|t| {
                let (r0, r1, ys) = block(t);
                gemv_float::rows_n::<_, 2>(isa, &w[r0 * cols..r1 * cols], cols, x, ys)
            }),
            Storage::Bf16(w) => run_all(&|t| {
                let (r0, r1, ys) = block(t);
                gemv_float::rows_n::<_, 2>(isa, &w[r0 * cols..r1 * cols], cols, x, ys)
            }),
            Storage::F16(w) => run_all(&|t| {
                let (r0, r1, ys) = block(t);
                gemv_float::rows_n::<_, 2>(isa, &w[r0 * cols..r1 * cols], cols, x, ys)
            }),
            _ => {
                self.gemv_rows_isa(isa, x[0], y0, 0..rows, pool);
                self.gemv_rows_isa(isa, x[1], y1, 0..rows, pool);
            }
        }
    }

    /// Like [`Matrix::gemv_rows`] on an explicit ISA tier (for cross-checking paths).
    pub fn gemv_rows_isa(
        &self,
        isa: Isa,
        x: &[f32],
        y: &mut [f32],
        rows: Range<usize>,
        pool: &Pool,
    ) {
        assert_eq!(x.len(), self.cols, "gemv input length");
        assert_eq!(y.len(), rows.len(), "gemv output length");
        assert!(rows.end <= self.rows, "gemv row range");
        let n = rows.len();
        let tasks = n.div_ceil(ROWS_PER_TASK);
        let out = SendPtr(y.as_mut_ptr());
        let cols = self.cols;
        // SAFETY (all arms): tasks cover disjoint output ranges [lo, hi) of `y`,
        // which outlives `pool.run`.
        let block = |t: usize| {
            let lo = t * ROWS_PER_TASK;
            let hi = (lo + ROWS_PER_TASK).min(n);
            let ys = unsafe { std::slice::from_raw_parts_mut(out.get().add(lo), hi - lo) };
            (rows.start + lo, rows.start + hi, ys)
        };
        let run_all = |f: &(dyn Fn(usize) + Sync)| {
            if tasks <= 1 {
                f(0);
            } else {
                pool.run(tasks, f);
            }
        };
        match &self.data {
            Storage::F32(w) => run_all(&|t| {
                let (r0, r1, ys) = block(t);
                gemv_float::rows(isa, &w[r0 * cols..r1 * cols], cols, x, ys)
            }),
            Storage::Bf16(w) => run_all(&|t| {
                let (r0, r1, ys) = block(t);
                gemv_float::rows(isa, &w[r0 * cols..r1 * cols], cols, x, ys)
            }),
            Storage::F16(w) => run_all(&|t| {
                let (r0, r1, ys) = block(t);
                gemv_float::rows(isa, &w[r0 * cols..r1 * cols], cols, x, ys)
            }),
            Storage::Int8(m) => with_quantized(x, gemv_int8::GROUP, |act| {
                let (n, blocks_of) = block_tasks(&rows);
                let task = |t: usize| {
                    let (b, k) = blocks_of(t);
                    m.run_blocks(isa, &b[..k], &rows, act, out.get());
                };
                if n <= 1 {
                    task(0);
                } else {
                    pool.run(n, &task);
                }
            }),
            Storage::Int4 {
                packed,
                scales,
                biases,
            } => with_quantized(x, AFFINE_GROUP, |act| {
                let (xq, xs, sx) = (act.xq, act.sums, act.scale);
                let groups = cols / AFFINE_GROUP;
                run_all(&|t| {
                    let (r0, r1, ys) = block(t);
                    let (sc, bi) = (
                        &scales[r0 * groups..r1 * groups],
                        &biases[r0 * groups..r1 * groups],
                    );
                    gemv_q4::affine_rows(
                        isa,
                        &packed[r0 * cols / 2..r1 * cols / 2],
                        sc,
                        cols,
                        xq,
                        ys,
                    );
                    finish_affine(isa, ys, bi, groups, xs, sx);
                })
            }),
            Storage::Lut4(m) => with_quantized(x, gemv_int8::GROUP, |act| {
                let sums = gemv_lut4::byte_sums(act);
                let (n, blocks_of) = block_tasks(&rows);
                let task = |t: usize| {
                    let (b, k) = blocks_of(t);
                    m.run_blocks(isa, &b[..k], &rows, act, sums, out.get());
                };
                if n <= 1 {
                    task(0);
                } else {
                    pool.run(n, &task);
                }
            }),
            Storage::Mlx8(m) => with_bf16(x, |xb| {
                // One task per pair of 16-row blocks; rows outside `rows` are
                // computed and dropped.
                let b0 = rows.start / gemv_mlx8::BLOCK;
                let b1 = rows.end.div_ceil(gemv_mlx8::BLOCK);
                let pairs = (b1 - b0).div_ceil(2);
                let task = |t: usize| {
                    let lo = b0 + 2 * t;
                    let hi = (lo + 2).min(b1);
                    let mut tmp = [0f32; 2 * gemv_mlx8::BLOCK];
                    let tmp = &mut tmp[..(hi - lo) * gemv_mlx8::BLOCK];
                    m.run_blocks(isa, lo..hi, xb, tmp);
                    let r0 = (lo * gemv_mlx8::BLOCK).max(rows.start);
                    let r1 = (hi * gemv_mlx8::BLOCK).min(rows.end);
                    let src = &tmp[r0 - lo * gemv_mlx8::BLOCK..r1 - lo * gemv_mlx8::BLOCK];
                    // SAFETY: tasks cover disjoint row ranges of `y`, which
                    // outlives `pool.run`.
                    let ys = unsafe {
                        std::slice::from_raw_parts_mut(out.get().add(r0 - rows.start), r1 - r0)
                    };
                    ys.copy_from_slice(src);
                };
                if pairs <= 1 {
                    task(0);
                } else {
                    pool.run(pairs, &task);
                }
            }),
        }
    }
}

/// Splits the 16-row blocks covering `rows` into tasks of up to 4 blocks taken a
/// quarter of the range apart (four long memory streams per task); returns the task
/// count and, per task, its block indices.
fn block_tasks(rows: &Range<usize>) -> (usize, impl Fn(usize) -> ([usize; 4], usize) + Sync + '_) {
    let b_first = rows.start / gemv_int8::BLOCK;
    let nb = rows.end.div_ceil(gemv_int8::BLOCK) - b_first;
    let tasks = nb.div_ceil(4);
    let f = move |t: usize| {
        let mut b = [0usize; 4];
        let mut k = 0;
        for q in 0..4 {
            let i = t + q * tasks;
            if i < nb {
                b[k] = b_first + i;
                k += 1;
            }
        }
        (b, k)
    };
    (tasks, f)
}

/// Quantises `x` to int16 (and its byte split) in this thread's scratch and calls `f`.
fn with_quantized<R>(x: &[f32], group: usize, f: impl FnOnce(&Act<'_>) -> R) -> R {
    ACT.with(|act| {
        let mut act = act.borrow_mut();
        let s = &mut *act;
        let groups = x.len() / group;
        s.xq.resize(x.len(), 0);
        s.hi.resize(x.len(), 0);
        s.lo.resize(x.len(), 0);
        s.sums.resize(groups, 0);
        s.sums_f.resize(groups, 0.0);
        let scale = quant::quantize_activations_i16(x, group, &mut s.xq, &mut s.sums);
        for (f, &i) in s.sums_f.iter_mut().zip(&s.sums) {
            *f = i as f32;
        }
        gemv_int8::split_bytes(&s.xq, &mut s.hi, &mut s.lo);
        f(&Act {
            xq: &s.xq,
            hi: &s.hi,
            lo: &s.lo,
            sums: &s.sums_f,
            scale,
        })
    })
}

/// Rounds `x` to bf16 values in this thread's scratch and calls `f` (the cast to
/// the compute dtype upstream's quantised layers make before `quantized_matmul`).
fn with_bf16<R>(x: &[f32], f: impl FnOnce(&[f32]) -> R) -> R {
    ACT.with(|act| {
        let mut act = act.borrow_mut();
        let xb = &mut act.xb;
        xb.clear();
        xb.extend(x.iter().map(|&v| round_bf16(v)));
        f(xb)
    })
}

/// Adds the affine bias terms `Σ_g bias[r,g]·xsum[g]` (a small f32 GEMV over the
/// block's `[rows][groups]` biases) and applies the activation scale.
pub(crate) fn finish_affine(
    isa: Isa,
    y: &mut [f32],
    biases: &[f32],
    groups: usize,
    xsum: &[f32],
    sx: f32,
) {
    let mut terms = [0f32; ROWS_PER_TASK];
    for (yc, bc) in y
        .chunks_mut(ROWS_PER_TASK)
        .zip(biases.chunks(ROWS_PER_TASK * groups))
    {
        let t = &mut terms[..yc.len()];
        gemv_float::rows(isa, bc, groups, xsum, t);
        for (o, b) in yc.iter_mut().zip(t.iter()) {
            *o = sx * (*o + b);
        }
    }
}

/// A raw pointer that may cross threads; users guarantee disjoint access.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr<T>(pub *mut T);
// SAFETY: only used to hand disjoint sub-slices to pool tasks.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}
impl<T> SendPtr<T> {
    #[inline]
    pub fn get(self) -> *mut T {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }

    fn reference(w: &[f32], cols: usize, x: &[f32]) -> Vec<f64> {
        w.chunks(cols)
            .map(|r| r.iter().zip(x).map(|(a, b)| *a as f64 * *b as f64).sum())
            .collect()
    }

    /// The weights a format actually multiplies with (its dequantised values).
    fn effective(m: &Matrix, rows: usize, cols: usize) -> Vec<f32> {
        let mut w = vec![0f32; rows * cols];
        for r in 0..rows {
            m.row_into(r, &mut w[r * cols..(r + 1) * cols]);
        }
        w
    }

    #[test]
    fn every_isa_matches_f64_reference() {
        let tiers = crate::isa::tiers_under_test("matrix::every_isa_matches_f64_reference");
        let pool = Pool::new(2);
        let mut seed = 7u64;
        let shapes = [
            (1, 1),
            (3, 17),
            (37, 768),
            (130, 1024),
            (64, 33),
            (5, 64),
            (67, 192),
        ];
        for &(rows, cols) in &shapes {
            let w: Vec<f32> = (0..rows * cols).map(|_| lcg(&mut seed)).collect();
            let mut x: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
            x[0] = 3.0; // an outlier, as transformer activations have
            for format in [
                WeightFormat::F32,
                WeightFormat::Bf16,
                WeightFormat::F16,
                WeightFormat::Int8,
                WeightFormat::Int4,
                WeightFormat::Lut4,
            ] {
                let m = Matrix::from_f32(rows, cols, w.clone(), format);
                let want = reference(&effective(&m, rows, cols), cols, &x);
                // int8 also quantises activations to int16 (error ≈ max|x|/65534 per entry).
                let act_err = if matches!(
                    m.format(),
                    WeightFormat::Int8 | WeightFormat::Int4 | WeightFormat::Lut4
                ) {
                    3.0 / 32767.0
                } else {
                    0.0
                };
                for &isa in &tiers {
                    let mut y = vec![0f32; rows];
                    m.gemv_rows_isa(isa, &x, &mut y, 0..rows, &pool);
                    for (a, b) in y.iter().zip(&want) {
                        let tol = 1e-5 * (cols as f64).sqrt() + act_err * 0.5 * cols as f64 * 0.5;
                        assert!(
                            (*a as f64 - b).abs() < tol,
                            "{isa:?} {format:?} {rows}x{cols}: {a} vs {b}"
                        );
                    }
                }
            }
        }
    }

    /// Half-exact weights (an F16 file) stored as F16 give the bits of F32 storage.
    #[test]
    fn exact_halves_stored_as_f16_change_no_bit() {
        let tiers = crate::isa::tiers_under_test("matrix::exact_halves_stored_as_f16");
        let pool = Pool::new(2);
        let mut seed = 8u64;
        let (rows, cols) = (70, 256);
        let w: Vec<f32> = (0..rows * cols)
            .map(|_| half::f16::from_f32(lcg(&mut seed)).to_f32())
            .collect();
        assert!(all_exact_f16(&w) && !all_exact_f16(&[0.1]));
        let x: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
        let a = Matrix::from_f32(rows, cols, w.clone(), WeightFormat::F32);
        let b = Matrix::from_f32(rows, cols, w, WeightFormat::F16);
        for &isa in &tiers {
            let (mut ya, mut yb) = (vec![0f32; rows], vec![0f32; rows]);
            a.gemv_rows_isa(isa, &x, &mut ya, 0..rows, &pool);
            b.gemv_rows_isa(isa, &x, &mut yb, 0..rows, &pool);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&ya), bits(&yb), "{isa}");
        }
    }

    #[test]
    fn gemv2_gives_the_bits_of_two_gemvs() {
        let tiers = crate::isa::tiers_under_test("matrix::gemv2_gives_the_bits_of_two_gemvs");
        let pool = Pool::new(2);
        let mut seed = 21u64;
        for &(rows, cols) in &[(1, 1), (37, 768), (130, 1024), (67, 33), (300, 128)] {
            let w: Vec<f32> = (0..rows * cols).map(|_| lcg(&mut seed)).collect();
            let x0: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
            let x1: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
            for format in [
                WeightFormat::F32,
                WeightFormat::Bf16,
                WeightFormat::F16,
                WeightFormat::Int8,
            ] {
                let m = Matrix::from_f32(rows, cols, w.clone(), format);
                for &isa in &tiers {
                    let (mut a0, mut a1) = (vec![0f32; rows], vec![0f32; rows]);
                    m.gemv_rows_isa(isa, &x0, &mut a0, 0..rows, &pool);
                    m.gemv_rows_isa(isa, &x1, &mut a1, 0..rows, &pool);
                    let (mut b0, mut b1) = (vec![1f32; rows], vec![1f32; rows]);
                    m.gemv2_isa(isa, [&x0, &x1], [&mut b0, &mut b1], &pool);
                    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&a0), bits(&b0), "{isa} {format:?} {rows}x{cols} row 0");
                    assert_eq!(bits(&a1), bits(&b1), "{isa} {format:?} {rows}x{cols} row 1");
                }
            }
        }
    }

    #[test]
    fn int8_paths_agree_closely() {
        let tiers = crate::isa::tiers_under_test("matrix::int8_paths_agree_closely");
        // Integer sums are exact on every path; only f32 group accumulation order differs.
        let pool = Pool::single();
        let mut seed = 3u64;
        let (rows, cols) = (96, 1024);
        let w: Vec<f32> = (0..rows * cols).map(|_| lcg(&mut seed)).collect();
        let x: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
        let m = Matrix::from_f32(rows, cols, w, WeightFormat::Int8);
        let mut base = vec![0f32; rows];
        m.gemv_rows_isa(Isa::PORTABLE, &x, &mut base, 0..rows, &pool);
        for &isa in &tiers {
            let mut y = vec![0f32; rows];
            m.gemv_rows_isa(isa, &x, &mut y, 0..rows, &pool);
            for (a, b) in y.iter().zip(&base) {
                assert!(
                    (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                    "{isa:?}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn unaligned_row_ranges_stacking_and_parts() {
        let tiers = crate::isa::tiers_under_test("matrix::unaligned_row_ranges_stacking_and_parts");
        let pool = Pool::new(2);
        let mut seed = 11u64;
        let (rows, cols) = (300, 128);
        let w: Vec<f32> = (0..rows * cols).map(|_| lcg(&mut seed)).collect();
        let x: Vec<f32> = (0..cols).map(|_| lcg(&mut seed)).collect();
        for format in [WeightFormat::Int8, WeightFormat::Int4, WeightFormat::Lut4] {
            let m = Matrix::from_f32(rows, cols, w.clone(), format);
            let mut full = vec![0f32; rows];
            m.gemv(&x, &mut full, &pool);
            for &isa in &tiers {
                // A window like one RVQ level of `to_logits` (not block aligned).
                let mut part = vec![0f32; 170];
                m.gemv_rows_isa(isa, &x, &mut part, 6..176, &pool);
                for (a, b) in part.iter().zip(&full[6..176]) {
                    assert!(
                        (a - b).abs() <= 1e-4 * b.abs().max(1.0),
                        "{format:?} {isa:?}: {a} vs {b}"
                    );
                }
            }
            // Parts round-trip exactly; stacking equals converting the stacked matrix.
            let back = Matrix::from_parts(format, rows, cols, {
                let parts = m.parts();
                move |name| {
                    parts
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, p)| p.clone())
                }
            })
            .unwrap();
            let mut y2 = vec![0f32; rows];
            back.gemv(&x, &mut y2, &pool);
            assert_eq!(y2, full, "{format:?} parts");
            let top = Matrix::from_f32(160, cols, w[..160 * cols].to_vec(), format);
            let bottom = Matrix::from_f32(128, cols, w[160 * cols..288 * cols].to_vec(), format);
            let stacked = Matrix::stack(vec![top, bottom]);
            let whole = Matrix::from_f32(288, cols, w[..288 * cols].to_vec(), format);
            let (mut a, mut b) = (vec![0f32; 288], vec![0f32; 288]);
            stacked.gemv(&x, &mut a, &pool);
            whole.gemv(&x, &mut b, &pool);
            assert_eq!(a, b, "{format:?} stack");
        }
    }

    #[test]
    fn row_range_and_transpose() {
        let pool = Pool::single();
        let (rows, cols) = (10, 6);
        let w: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        let mut t = vec![0f32; rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                t[c * rows + r] = w[r * cols + c];
            }
        }
        let m = Matrix::from_f32_transposed(rows, cols, &t, WeightFormat::F32);
        let x = vec![1f32; cols];
        let mut y = vec![0f32; 3];
        m.gemv_rows(&x, &mut y, 4..7, &pool);
        for (i, v) in y.iter().enumerate() {
            let r = 4 + i;
            assert_eq!(*v, (0..cols).map(|c| (r * cols + c) as f32).sum::<f32>());
        }
    }
}
