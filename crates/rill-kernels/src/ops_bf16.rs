//! The vector operations of a transformer step as MLX computes them on bf16 arrays
//! (upstream's compute dtype in its shipped modes): every MLX op rounds its result
//! to bf16, and the `fast` norms compute in f32 and round before the scale. Each
//! function here places the roundings exactly where MLX 0.32 does, sums in MLX's CPU
//! order (sequential on x86, means as `sum·(1/n)`) and uses MLX's own `exp` where
//! it matters, so activations fed to [`crate::gemv_mlx8`] carry the same bits as
//! upstream's (checked op by op against MLX on CPU, and end to end on the D1-int8 /
//! D2-int8 recordings: every value bit-identical).

/// Rounds to the nearest bf16 (ties to even), kept as f32.
#[inline]
pub fn bf(v: f32) -> f32 {
    half::bf16::from_f32(v).to_f32()
}

/// Rounds every value to bf16 (an `astype(bfloat16)`).
pub fn round(x: &mut [f32]) {
    for v in x {
        *v = bf(*v);
    }
}

/// `x = x + y` in bf16.
pub fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a = bf(*a + b);
    }
}

/// `nn.RMSNorm` on bf16: `bf(bf(x·rsqrt(mean(x²) + eps))·w)` (the mean in f32,
/// summed in order as MLX's CPU reduction does).
pub fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    // `mx.mean` multiplies by 1/n (not the same as dividing for n = 768).
    let ms = x.iter().map(|v| v * v).sum::<f32>() * (1.0 / x.len() as f32);
    let r = 1.0 / (ms + eps).sqrt();
    for ((o, xi), wi) in out.iter_mut().zip(x).zip(w) {
        *o = bf(bf(xi * r) * wi);
    }
}

/// sequence_layers' `LayerNormalization` on bf16 (`reductions_in_at_least_fp32`):
/// the input cast to f32, `nn.LayerNorm` in f32 with the bf16 scale and bias, one
/// rounding at the end.
pub fn layer_norm(x: &[f32], w: &[f32], b: &[f32], eps: f32, out: &mut [f32]) {
    let inv_n = 1.0 / x.len() as f32;
    let mean = x.iter().sum::<f32>() * inv_n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() * inv_n;
    let r = 1.0 / (var + eps).sqrt();
    for (((o, xi), wi), bi) in out.iter_mut().zip(x).zip(w).zip(b) {
        *o = bf((xi - mean) * r * wi + bi);
    }
}

/// `nn.gelu_approx` on bf16: `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))` with the
/// constants and every intermediate in bf16.
pub fn gelu_tanh(x: &mut [f32]) {
    let c = bf((2.0f64 / std::f64::consts::PI).sqrt() as f32);
    let k = bf(0.044715);
    for v in x {
        let u = *v;
        // `x**3` is a `power` op: powf, which can differ from `x·x·x` in the last bit.
        let t = bf(c * bf(u + bf(k * bf(u.powf(3.0)))));
        *v = bf(bf(0.5 * u) * bf(1.0 + bf(t.tanh())));
    }
}

/// MLX's CPU `exp` (`mlx/backend/cpu/simd/math.h`, a Cephes polynomial in FMAs),
/// which its softmax uses instead of libm's: `2^round(x·log2 e)` times a degree-6
/// polynomial of the fraction. The constants are MLX's, verbatim.
#[allow(clippy::approx_constant, clippy::excessive_precision)]
pub fn mlx_exp(v: f32) -> f32 {
    if v.is_nan() {
        return v;
    }
    if v > 88.0 {
        return f32::INFINITY;
    }
    if v < -88.0 {
        return 0.0;
    }
    let x = v * 1.442695f32;
    let ipart = (x + 0.5).floor();
    let f = x - ipart;
    let mut p = 1.535336188319500e-4f32;
    for c in [
        1.339887440266574e-3f32,
        9.618437357674640e-3,
        5.550332471162809e-2,
        2.402264791363012e-1,
        6.931472028550421e-1,
        1.0,
    ] {
        p = p.mul_add(f, c);
    }
    f32::from_bits(((ipart as i32 + 127) << 23) as u32) * p
}

/// MLX's precise softmax of bf16 values: in f32 with [`mlx_exp`], the sum in
/// order, `· (1/sum)`, rounded to bf16.
pub fn softmax(x: &mut [f32]) {
    crate::ops::softmax_with(x, mlx_exp);
    round(x);
}

/// The logit soft cap `tanh(x/cap)·cap` on bf16.
pub fn soft_cap(x: &mut [f32], cap: f32) {
    for v in x {
        *v = bf(bf(bf(*v / cap).tanh()) * cap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mlx_exp_is_close_to_exp_and_saturates_like_mlx() {
        // Measured 3.7e-6 (near the bottom of the range, where 2^ipart is tiny).
        const WORST: f32 = 4e-6;
        let mut worst = 0f32;
        for i in -850..=850 {
            let x = i as f32 * 0.1;
            let (a, b) = (mlx_exp(x), x.exp());
            worst = worst.max(((a - b) / b).abs());
        }
        eprintln!("mlx_exp vs exp: worst relative difference {worst:e}");
        assert!(worst < WORST, "mlx_exp differs from exp by {worst:e}");
        assert_eq!(mlx_exp(0.0), 1.0);
        assert_eq!(mlx_exp(88.5), f32::INFINITY);
        assert_eq!(mlx_exp(-88.5), 0.0);
        assert!(mlx_exp(f32::NAN).is_nan());
    }

    #[test]
    fn rounding_is_to_nearest_even() {
        // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties to the even 1.
        assert_eq!(bf(1.0 + 1.0 / 256.0), 1.0);
        assert_eq!(bf(1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0);
        assert!(bf(f32::NAN).is_nan());
    }
}
