//! The vector operations of a transformer step as MLX computes them on bf16 arrays
//! (upstream's compute dtype in its shipped modes): every MLX op rounds its result
//! to bf16, and the `fast` norms compute in f32 and round before the scale. Each
//! function here places the roundings exactly where MLX 0.32 does (checked op by op
//! against MLX on CPU), so activations fed to [`crate::gemv_mlx8`] carry the same
//! bits as upstream's.

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

/// `nn.RMSNorm` on bf16: `bf(bf(x·rsqrt(mean(x²) + eps))·w)` (the mean in f32).
pub fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    let ms = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let r = 1.0 / (ms + eps).sqrt();
    for ((o, xi), wi) in out.iter_mut().zip(x).zip(w) {
        *o = bf(bf(xi * r) * wi);
    }
}

/// sequence_layers' `LayerNormalization` on bf16 (`reductions_in_at_least_fp32`):
/// the input cast to f32, `nn.LayerNorm` in f32 with the bf16 scale and bias, one
/// rounding at the end.
pub fn layer_norm(x: &[f32], w: &[f32], b: &[f32], eps: f32, out: &mut [f32]) {
    let n = x.len() as f32;
    let mean = x.iter().sum::<f32>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
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
    fn rounding_is_to_nearest_even() {
        // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties to the even 1.
        assert_eq!(bf(1.0 + 1.0 / 256.0), 1.0);
        assert_eq!(bf(1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0);
        assert!(bf(f32::NAN).is_nan());
    }
}
