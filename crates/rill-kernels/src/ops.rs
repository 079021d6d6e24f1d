//! Small vector operations of a transformer step. Each follows the formula of the
//! MLX op it mirrors (cited per function); all arithmetic is f32.
//!
//! The operations with a kernel per SIMD tier ([`dots_isa`], [`axpys_isa`],
//! [`gelu_tanh_isa`]) take the tier explicitly; a model calls them through the
//! [`crate::Ops`] it resolved at load, never through a process-wide tier.

use crate::isa::Isa;
#[cfg(target_arch = "x86_64")]
use crate::isa::Tier;

/// Sum with 8 independent lanes (vectorises; order fixed for reproducibility).
pub fn sum(x: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let n8 = x.len() / 8 * 8;
    for c in x[..n8].chunks_exact(8) {
        for l in 0..8 {
            acc[l] += c[l];
        }
    }
    let mut s = 0f32;
    for v in acc {
        s += v;
    }
    for v in &x[n8..] {
        s += v;
    }
    s
}

/// Dot product with 8 independent lanes.
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0f32; 8];
    let n8 = a.len() / 8 * 8;
    for (ca, cb) in a[..n8].chunks_exact(8).zip(b[..n8].chunks_exact(8)) {
        for l in 0..8 {
            acc[l] += ca[l] * cb[l];
        }
    }
    let mut s = 0f32;
    for v in acc {
        s += v;
    }
    for (va, vb) in a[n8..].iter().zip(&b[n8..]) {
        s += va * vb;
    }
    s
}

/// `y += a·x`.
#[inline(always)]
pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// `out[j] = dot(x, row j)` for every `j < out.len()`, row `j` being
/// `rows[j·stride + offset..][..x.len()]` (one head's attention scores over a
/// key cache), on tier `isa`. The same bits as [`dot`] per row on every tier: the
/// compiler only widens the registers (it never fuses a multiply and an add).
pub fn dots_isa(isa: Isa, x: &[f32], rows: &[f32], stride: usize, offset: usize, out: &mut [f32]) {
    match isa.tier() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` of tier AVX2 or above comes only from detecting avx2 and fma.
        Tier::Avx2 | Tier::Avx512 => unsafe { x86::dots(x, rows, stride, offset, out) },
        _ => dots_lanes(x, rows, stride, offset, out),
    }
}

/// `y += Σ_j p[j]·row j` in the order of `j` (rows as in [`dots_isa`]), on tier
/// `isa`: one head's attention output over a value cache, with the bits of one
/// [`axpy`] per row.
pub fn axpys_isa(isa: Isa, p: &[f32], rows: &[f32], stride: usize, offset: usize, y: &mut [f32]) {
    match isa.tier() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` of tier AVX2 or above comes only from detecting avx2 and fma.
        Tier::Avx2 | Tier::Avx512 => unsafe { x86::axpys(p, rows, stride, offset, y) },
        _ => axpys_lanes(p, rows, stride, offset, y),
    }
}

#[inline(always)]
fn dots_lanes(x: &[f32], rows: &[f32], stride: usize, offset: usize, out: &mut [f32]) {
    let n = x.len();
    for (j, o) in out.iter_mut().enumerate() {
        let r = j * stride + offset;
        *o = dot(x, &rows[r..r + n]);
    }
}

#[inline(always)]
fn axpys_lanes(p: &[f32], rows: &[f32], stride: usize, offset: usize, y: &mut [f32]) {
    let n = y.len();
    for (j, &a) in p.iter().enumerate() {
        let r = j * stride + offset;
        axpy(a, &rows[r..r + n], y);
    }
}

/// The portable loops compiled for AVX2: 8 lanes fill one register instead of two.
#[cfg(target_arch = "x86_64")]
mod x86 {
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dots(x: &[f32], rows: &[f32], stride: usize, offset: usize, out: &mut [f32]) {
        super::dots_lanes(x, rows, stride, offset, out)
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn gelu_tanh(x: &mut [f32]) {
        super::gelu_tanh_lanes(x)
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpys(p: &[f32], rows: &[f32], stride: usize, offset: usize, y: &mut [f32]) {
        super::axpys_lanes(p, rows, stride, offset, y)
    }
}

/// `x += y`.
pub fn add_in_place(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// RMSNorm as `mx.fast.rms_norm`: `y = x·rsqrt(mean(x²) + eps)·w`.
pub fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    let n = x.len() as f32;
    let ms = dot(x, x) / n;
    let r = 1.0 / (ms + eps).sqrt();
    for ((o, xi), wi) in out.iter_mut().zip(x).zip(w) {
        *o = (xi * r) * wi;
    }
}

/// LayerNorm as `mx.fast.layer_norm`: `y = (x − mean)·rsqrt(var + eps)·w + b`.
pub fn layer_norm(x: &[f32], w: &[f32], b: &[f32], eps: f32, out: &mut [f32]) {
    let (mean, r) = layer_norm_stats(x, eps);
    for (((o, xi), wi), bi) in out.iter_mut().zip(x).zip(w).zip(b) {
        *o = (xi - mean) * r * wi + bi;
    }
}

/// The mean of `x` and `rsqrt(var + eps)`, as [`layer_norm`] uses them (the squares
/// summed in 8 lanes, then the tail): for layer norms without a bias.
pub fn layer_norm_stats(x: &[f32], eps: f32) -> (f32, f32) {
    let n = x.len() as f32;
    let mean = sum(x) / n;
    let mut acc = [0f32; 8];
    let n8 = x.len() / 8 * 8;
    for c in x[..n8].chunks_exact(8) {
        for l in 0..8 {
            let d = c[l] - mean;
            acc[l] += d * d;
        }
    }
    let mut var = acc.iter().sum::<f32>();
    for v in &x[n8..] {
        var += (v - mean) * (v - mean);
    }
    (mean, 1.0 / (var / n + eps).sqrt())
}

/// `e^x` in f32 without a libm call, so loops over it vectorise: range reduction
/// `x = k·ln2 + r` and a degree-6 polynomial for `e^r` (max error ≈ 2 ulp).
#[inline(always)]
pub fn exp_fast(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    // k = round(x / ln2) with the 1.5·2^23 rounding trick (round to nearest even).
    const MAGIC: f32 = 12_582_912.0;
    let k = (x * std::f32::consts::LOG2_E + MAGIC) - MAGIC;
    // Cody–Waite split of ln 2 keeps r exact enough.
    let r = (x - k * 0.693_145_75) - k * 1.428_606_8e-6;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (0.166_666_67
                    + r * (0.041_666_668 + r * (0.008_333_334 + r * 0.001_388_889)))));
    let bits = ((k as i32 + 127) as u32) << 23;
    p * f32::from_bits(bits)
}

/// `tanh(x)` in f32 via [`exp_fast`] (vectorises; absolute error ≈ 1e-7).
#[inline(always)]
pub fn tanh_fast(x: f32) -> f32 {
    let e = exp_fast(2.0 * x.abs());
    let t = 1.0 - 2.0 / (e + 1.0);
    t.copysign(x)
}

/// `mlx.nn.gelu_approx` (tanh form): `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`
/// on tier `isa` (the same bits on every tier). `−∞` gives `−0.0`, the limit of
/// GELU and what large finite negative inputs give (the formula alone gives
/// `−∞·0 = NaN`).
pub fn gelu_tanh_isa(isa: Isa, x: &mut [f32]) {
    match isa.tier() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` of tier AVX2 or above comes only from detecting avx2 and fma.
        Tier::Avx2 | Tier::Avx512 => unsafe { x86::gelu_tanh(x) },
        _ => gelu_tanh_lanes(x),
    }
}

#[inline(always)]
fn gelu_tanh_lanes(x: &mut [f32]) {
    let c = (2.0f64 / std::f64::consts::PI).sqrt() as f32;
    for v in x {
        let u = *v;
        let g = 0.5 * u * (1.0 + tanh_fast(c * (u + 0.044715 * (u * u * u))));
        // A select, not a branch: the loop still vectorises.
        *v = if u == f32::NEG_INFINITY { -0.0 } else { g };
    }
}

/// Output-logit soft cap `cap·tanh(x/cap)`.
pub fn soft_cap(x: &mut [f32], cap: f32) {
    for v in x {
        *v = tanh_fast(*v / cap) * cap;
    }
}

/// In-place softmax in f32 (max-subtracted).
pub fn softmax(x: &mut [f32]) {
    softmax_with(x, f32::exp);
}

/// [`softmax`] with a given `exp`: max-subtracted, summed in order, `·(1/sum)`
/// (MLX's CPU order).
pub fn softmax_with(x: &mut [f32], exp: impl Fn(f32) -> f32) {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut s = 0f32;
    for v in x.iter_mut() {
        *v = exp(*v - m);
        s += *v;
    }
    let inv = 1.0 / s;
    for v in x.iter_mut() {
        *v *= inv;
    }
}

/// ELU with α = 1 as the reference writes it: `where(x > 0, x, exp(x) − 1)`.
pub fn elu(x: &mut [f32]) {
    for v in x {
        if *v <= 0.0 {
            *v = v.exp() - 1.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GELU compiled for each tier gives the portable bits, over the range the
    /// FFN sees, the clamp of `exp_fast` and non-finite inputs.
    #[test]
    fn gelu_tanh_gives_the_portable_bits_on_every_tier() {
        let tiers = crate::isa::tiers_under_test("ops::gelu_tanh");
        let mut x: Vec<f32> = (0..1003).map(|i| (i as f32 - 501.0) * 0.021).collect();
        x.extend([
            -0.0,
            1e-30,
            -60.0,
            60.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ]);
        let mut want = x.clone();
        gelu_tanh_isa(Isa::PORTABLE, &mut want);
        // The portable bits against the formula in f64 (so a CPU with one tier
        // still tests something): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
        let mut worst = 0f64;
        for (&xi, &yi) in x.iter().zip(&want) {
            let v = xi as f64;
            let f = 0.5
                * v
                * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh());
            // (Non-finite inputs: only the bits of the tiers are compared.)
            if v.is_finite() {
                worst = worst.max((yi as f64 - f).abs() / f.abs().max(1.0));
            }
        }
        eprintln!("gelu_tanh vs f64: worst error {worst:e} (relative, absolute below 1)");
        // Measured 9.4e-8 (deterministic inputs); twice that.
        assert!(worst < 1.9e-7, "gelu_tanh is {worst:e} off the f64 formula");
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        for &isa in &tiers {
            let mut y = x.clone();
            gelu_tanh_isa(isa, &mut y);
            assert_eq!(bits(&y), bits(&want), "{isa}");
        }
    }

    /// GELU's limits: `−∞ → −0.0` (as large finite negatives give, not the
    /// formula's `−∞·0 = NaN`), `+∞ → +∞`, NaN stays NaN; on every tier.
    #[test]
    fn gelu_tanh_has_the_limits_of_gelu_on_every_tier() {
        for isa in crate::isa::tiers_under_test("ops::gelu_tanh limits") {
            // Past 8 lanes, so the vector body and the tail both see each value.
            let mut x = [f32::NEG_INFINITY, -60.0, f32::INFINITY, f32::NAN].repeat(5);
            gelu_tanh_isa(isa, &mut x);
            for c in x.chunks(4) {
                assert_eq!(c[0].to_bits(), (-0.0f32).to_bits(), "{isa}: gelu(-inf)");
                assert_eq!(c[1].to_bits(), (-0.0f32).to_bits(), "{isa}: gelu(-60)");
                assert_eq!(c[2], f32::INFINITY, "{isa}: gelu(inf)");
                assert!(c[3].is_nan(), "{isa}: gelu(NaN)");
            }
        }
    }

    #[test]
    fn dots_and_axpys_give_the_bits_of_dot_and_axpy_on_every_tier() {
        let tiers = crate::isa::tiers_under_test("ops::dots_and_axpys");
        let mut rng = crate::gemv_int8::tests::Rng(5);
        let mut rnd = move || rng.unit();
        // (width, rows, stride, offset): a 64-wide head of a 768-wide cache, a
        // 128-wide cross-attention row, widths with a tail past the 8 lanes.
        for (n, rows, stride, offset) in [(64, 37, 768, 320), (128, 9, 128, 0), (13, 5, 40, 27)] {
            let data: Vec<f32> = (0..rows * stride).map(|_| rnd()).collect();
            let x: Vec<f32> = (0..n).map(|_| rnd()).collect();
            let p: Vec<f32> = (0..rows).map(|_| rnd()).collect();
            let row = |j: usize| &data[j * stride + offset..j * stride + offset + n];
            let want_d: Vec<u32> = (0..rows).map(|j| dot(&x, row(j)).to_bits()).collect();
            let mut want_y = x.clone();
            for (j, &a) in p.iter().enumerate() {
                axpy(a, row(j), &mut want_y);
            }
            for &isa in &tiers {
                let mut d = vec![f32::NAN; rows];
                dots_isa(isa, &x, &data, stride, offset, &mut d);
                let d: Vec<u32> = d.iter().map(|v| v.to_bits()).collect();
                assert_eq!(d, want_d, "{isa} dots, width {n}");
                let mut y = x.clone();
                axpys_isa(isa, &p, &data, stride, offset, &mut y);
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&y), bits(&want_y), "{isa} axpys, width {n}");
            }
        }
    }

    #[test]
    fn norms() {
        let x = [1.0f32, 2.0, 3.0, 4.0];
        let mut o = [0f32; 4];
        rms_norm(&x, &[1.0; 4], 0.0, &mut o);
        let r = (7.5f32).sqrt();
        for (a, b) in o.iter().zip(&x) {
            assert!((a - b / r).abs() < 1e-6);
        }
        layer_norm(&x, &[1.0; 4], &[0.5; 4], 0.0, &mut o);
        let sd = 1.25f32.sqrt();
        for (a, b) in o.iter().zip(&x) {
            assert!((a - ((b - 2.5) / sd + 0.5)).abs() < 1e-6);
        }
    }

    #[test]
    fn fast_exp_and_tanh_are_accurate() {
        let mut worst_exp = 0f64;
        let mut worst_tanh = 0f64;
        for i in -20000..20000 {
            let x = i as f32 * 0.004;
            let e = exp_fast(x) as f64;
            let want = (x as f64).exp();
            worst_exp = worst_exp.max(((e - want) / want).abs());
            worst_tanh = worst_tanh.max((tanh_fast(x) as f64 - (x as f64).tanh()).abs());
        }
        assert!(worst_exp < 3e-7, "exp relative error {worst_exp}");
        assert!(worst_tanh < 2e-7, "tanh absolute error {worst_tanh}");
        assert_eq!(tanh_fast(0.0), 0.0);
        assert_eq!(tanh_fast(50.0), 1.0);
        assert_eq!(tanh_fast(-50.0), -1.0);
    }

    #[test]
    fn softmax_sums_to_one() {
        let mut x = [1.0f32, -2.0, 0.5, 3.0];
        softmax(&mut x);
        assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(x[3] > x[0] && x[0] > x[2] && x[2] > x[1]);
    }
}
