//! Weight quantisers: MLX-compatible affine quantisation and 4-bit palettisation.
//!
//! Affine (MLX `mx.quantize`, groups along the input axis of an `[out][in]` matrix):
//! per group, `w ≈ q·scale + bias` with `q ∈ [0, 2^bits − 1]`. MLX picks the group's
//! edge value (the extreme with the larger magnitude) as the bias and nudges the
//! scale so the edge is an integer number of steps from zero, which makes 0.0
//! exactly representable. This module reproduces that arithmetic in f32.

/// An affine-quantised matrix: `q` (one value per byte), per-group scales and biases.
#[derive(Debug, Clone)]
pub struct Affine {
    pub bits: u32,
    pub group: usize,
    pub q: Vec<u8>,
    pub scales: Vec<f32>,
    pub biases: Vec<f32>,
}

/// MLX's affine quantisation of row-major `w` (`cols` per row, groups of `group`).
pub fn affine(w: &[f32], cols: usize, group: usize, bits: u32) -> Affine {
    assert!(
        cols.is_multiple_of(group),
        "columns must be a multiple of the group size"
    );
    let n_bins = ((1u32 << bits) - 1) as f32;
    let groups = w.len() / group;
    let mut q = vec![0u8; w.len()];
    let mut scales = vec![0f32; groups];
    let mut biases = vec![0f32; groups];
    for g in 0..groups {
        let ws = &w[g * group..(g + 1) * group];
        let (mut mn, mut mx) = (f32::INFINITY, f32::NEG_INFINITY);
        for &v in ws {
            mn = mn.min(v);
            mx = mx.max(v);
        }
        let min_is_edge = mn.abs() > mx.abs();
        let mut scale = ((mx - mn) / n_bins).max(1e-7);
        if !min_is_edge {
            scale = -scale;
        }
        let edge = if min_is_edge { mn } else { mx };
        let q0 = (edge / scale).round_ties_even();
        let bias;
        if q0 == 0.0 {
            bias = 0.0;
        } else {
            scale = edge / q0;
            bias = edge;
        }
        for (d, &v) in q[g * group..(g + 1) * group].iter_mut().zip(ws) {
            *d = ((v - bias) / scale).round_ties_even().clamp(0.0, n_bins) as u8;
        }
        scales[g] = scale;
        biases[g] = bias;
    }
    Affine {
        bits,
        group,
        q,
        scales,
        biases,
    }
}

impl Affine {
    /// The dequantised weights.
    pub fn dequantize(&self) -> Vec<f32> {
        self.q
            .iter()
            .enumerate()
            .map(|(i, &q)| {
                let g = i / self.group;
                q as f32 * self.scales[g] + self.biases[g]
            })
            .collect()
    }
}

/// A 4-bit palettised matrix: one 16-entry codebook per `rows_per_group` rows.
#[derive(Debug, Clone)]
pub struct Palette {
    pub rows_per_group: usize,
    /// `[groups][16]` codebook values.
    pub lut: Vec<f32>,
    /// One 4-bit index per weight (stored one per byte here; packed by the matrix).
    pub idx: Vec<u8>,
}

/// 1-D k-means (Lloyd) palettisation with 16 levels per group of `rows_per_group`
/// rows, initialised at the quantiles of the group's weights.
pub fn palettize(w: &[f32], cols: usize, rows_per_group: usize) -> Palette {
    let rows = w.len() / cols;
    let groups = rows.div_ceil(rows_per_group);
    let mut lut = vec![0f32; groups * 16];
    let mut idx = vec![0u8; w.len()];
    let mut sorted = Vec::new();
    for g in 0..groups {
        let r0 = g * rows_per_group;
        let r1 = (r0 + rows_per_group).min(rows);
        let ws = &w[r0 * cols..r1 * cols];
        sorted.clear();
        sorted.extend_from_slice(ws);
        sorted.sort_by(|a, b| a.total_cmp(b));
        let n = sorted.len();
        let mut c: [f32; 16] = std::array::from_fn(|k| sorted[((2 * k + 1) * n / 32).min(n - 1)]);
        // Lloyd iterations on the sorted values: boundaries are midpoints.
        for _ in 0..12 {
            let mut sum = [0f64; 16];
            let mut cnt = [0usize; 16];
            let mut k = 0;
            for &v in &sorted {
                while k < 15 && v > 0.5 * (c[k] + c[k + 1]) {
                    k += 1;
                }
                sum[k] += v as f64;
                cnt[k] += 1;
            }
            for k in 0..16 {
                if cnt[k] > 0 {
                    c[k] = (sum[k] / cnt[k] as f64) as f32;
                }
            }
            c.sort_by(|a, b| a.total_cmp(b));
        }
        lut[g * 16..g * 16 + 16].copy_from_slice(&c);
        for (d, &v) in idx[r0 * cols..r1 * cols].iter_mut().zip(ws) {
            let mut best = 0;
            let mut bd = f32::INFINITY;
            for (k, &ck) in c.iter().enumerate() {
                let dist = (v - ck).abs();
                if dist < bd {
                    bd = dist;
                    best = k;
                }
            }
            *d = best as u8;
        }
    }
    Palette {
        rows_per_group,
        lut,
        idx,
    }
}

/// Symmetric int16 quantisation of an activation vector with one scale:
/// `x ≈ xq·scale`. Also returns per-group sums of `xq` (for affine bias terms).
///
/// Inlined so that the GEMV's AVX2 build of its activation set-up
/// (`matrix::products`) compiles it for 8-lane registers; every build gives the
/// same bits (a maximum is exact in any order, and nothing is fused).
#[inline(always)]
pub fn quantize_activations_i16(
    x: &[f32],
    group: usize,
    xq: &mut [i16],
    group_sums: &mut [i32],
) -> f32 {
    // Eight independent running maxima: a single one is a serial chain the
    // compiler may not reorder.
    let mut lanes = [0f32; 8];
    let chunks = x.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for (m, v) in lanes.iter_mut().zip(c) {
            *m = m.max(v.abs());
        }
    }
    let maxabs = tail.iter().chain(&lanes).fold(0f32, |m, v| m.max(v.abs()));
    if maxabs == 0.0 || !maxabs.is_finite() {
        xq.fill(0);
        group_sums.fill(0);
        return if maxabs.is_finite() { 0.0 } else { f32::NAN };
    }
    let inv = 32767.0 / maxabs;
    // Round-half-even by adding and subtracting 1.5·2^23 (|v·inv| ≤ 32767), which
    // vectorises where `round_ties_even` would call libm.
    const MAGIC: f32 = 12_582_912.0;
    for (d, &v) in xq.iter_mut().zip(x) {
        *d = ((v * inv + MAGIC) - MAGIC) as i16;
    }
    for (s, c) in group_sums.iter_mut().zip(xq.chunks_exact(group)) {
        *s = c.iter().map(|&v| v as i32).sum();
    }
    maxabs / 32767.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affine_matches_mlx_example() {
        // Reproduces the arithmetic checked against mx.quantize(bits=8, group 64):
        // the edge value dequantises exactly and zero is representable.
        let w: Vec<f32> = (0..128)
            .map(|i| ((i as f32) * 0.37).sin() * 2.0 - 0.3)
            .collect();
        let a = affine(&w, 128, 64, 8);
        let d = a.dequantize();
        for g in 0..2 {
            let step = a.scales[g].abs();
            for i in 0..64 {
                // The edge nudge may clip the far extreme by up to one step (as MLX).
                assert!((d[g * 64 + i] - w[g * 64 + i]).abs() <= 1.5 * step + 1e-6);
            }
            // zero exactly representable: -bias/scale is an integer
            let z = -a.biases[g] / a.scales[g];
            assert!((z - z.round()).abs() < 1e-3, "{z}");
        }
        let a4 = affine(&w, 128, 32, 4);
        assert!(a4.q.iter().all(|&q| q < 16));
    }

    #[test]
    fn palette_error_small() {
        let w: Vec<f32> = (0..64 * 32)
            .map(|i| (i * 7919 % 1000) as f32 / 1000.0 - 0.5)
            .collect();
        let p = palettize(&w, 64, 16);
        let mut err = 0f64;
        let mut pow = 0f64;
        for (i, &v) in w.iter().enumerate() {
            let g = (i / 64) / 16;
            let d = p.lut[g * 16 + p.idx[i] as usize];
            err += ((d - v) as f64).powi(2);
            pow += (v as f64).powi(2);
        }
        // Uniform data, 16 levels: SNR ≈ 24 dB.
        assert!(10.0 * (pow / err).log10() > 22.0);
    }
}
