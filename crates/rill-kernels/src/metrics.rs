//! How close two signals are: the parity metrics of the tests, `rill bench
//! --quality` and the codec's SNR report (one definition each, in f64).

/// Cosine similarity of `a` and `b` in f64: 1 for two zero vectors, 0 when only
/// one is zero.
///
/// # Panics
/// If the lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len(), "cosine of vectors of different lengths");
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    match (aa == 0.0, bb == 0.0) {
        (true, true) => 1.0,
        (false, false) => ab / (aa.sqrt() * bb.sqrt()),
        _ => 0.0,
    }
}

/// Largest absolute difference of corresponding elements.
///
/// # Panics
/// If the lengths differ.
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(
        a.len(),
        b.len(),
        "difference of vectors of different lengths"
    );
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Signal-to-noise ratio of `test` against `reference` in dB: the reference's
/// energy over the energy of the difference (computed in f32, summed in f64);
/// infinite when they are equal.
///
/// # Panics
/// If the lengths differ.
pub fn snr_db(reference: &[f32], test: &[f32]) -> f64 {
    assert_eq!(
        reference.len(),
        test.len(),
        "SNR of signals of different lengths"
    );
    let (mut s, mut n) = (0f64, 0f64);
    for (&r, &t) in reference.iter().zip(test) {
        s += f64::from(r) * f64::from(r);
        n += f64::from(r - t) * f64::from(r - t);
    }
    if n == 0.0 {
        return f64::INFINITY;
    }
    10.0 * (s / n).log10()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-12);
        assert_eq!(cosine(&[0.0; 3], &[0.0; 3]), 1.0);
        assert_eq!(cosine(&[0.0; 2], &[1.0, 1.0]), 0.0);
        assert_eq!(max_abs_diff(&[1.0, -2.0], &[1.5, 1.0]), 3.0);
        assert_eq!(snr_db(&[1.0, 1.0], &[1.0, 1.0]), f64::INFINITY);
        // Signal energy 2, noise energy 0.02: 20 dB.
        assert!((snr_db(&[1.0, 1.0], &[1.1, 0.9]) - 20.0).abs() < 1e-5);
    }
}
