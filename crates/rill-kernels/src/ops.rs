//! Small vector operations of a transformer step. Each follows the formula of the
//! MLX op it mirrors (cited per function); all arithmetic is f32.

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
pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
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
    let r = 1.0 / (var / n + eps).sqrt();
    for (((o, xi), wi), bi) in out.iter_mut().zip(x).zip(w).zip(b) {
        *o = (xi - mean) * r * wi + bi;
    }
}

/// `mlx.nn.gelu_approx` (tanh form): `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
pub fn gelu_tanh(x: &mut [f32]) {
    let c = (2.0f64 / std::f64::consts::PI).sqrt() as f32;
    for v in x {
        let u = *v;
        *v = 0.5 * u * (1.0 + (c * (u + 0.044715 * (u * u * u))).tanh());
    }
}

/// Output-logit soft cap `cap·tanh(x/cap)`.
pub fn soft_cap(x: &mut [f32], cap: f32) {
    for v in x {
        *v = (*v / cap).tanh() * cap;
    }
}

/// In-place softmax in f32 (max-subtracted).
pub fn softmax(x: &mut [f32]) {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut s = 0f32;
    for v in x.iter_mut() {
        *v = (*v - m).exp();
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
    fn softmax_sums_to_one() {
        let mut x = [1.0f32, -2.0, 0.5, 3.0];
        softmax(&mut x);
        assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(x[3] > x[0] && x[0] > x[2] && x[2] > x[1]);
    }
}
