//! Deterministic test data and result digests shared by the conv kernels' tests.

/// SplitMix64 (the checkpoint synthesiser's mixer, so the values are the ones the
/// codec's tests used).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Deterministic pseudo-random values in [-1, 1).
pub(crate) fn values(n: usize, seed: u64) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let z = splitmix64(seed.wrapping_mul(0x9e37).wrapping_add(i as u64));
            ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// FNV-1a over the bits of `v`.
pub(crate) fn bits_hash(v: &[f32]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for x in v {
        for b in x.to_bits().to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Signal-to-noise ratio of `test` against `reference`, in dB.
#[cfg(target_arch = "aarch64")]
pub(crate) fn snr_db(reference: &[f32], test: &[f32]) -> f64 {
    assert_eq!(reference.len(), test.len());
    let (mut s, mut n) = (0f64, 0f64);
    for (&r, &t) in reference.iter().zip(test) {
        s += (r as f64) * (r as f64);
        n += ((r - t) as f64) * ((r - t) as f64);
    }
    if n == 0.0 {
        return f64::INFINITY;
    }
    10.0 * (s / n).log10()
}
