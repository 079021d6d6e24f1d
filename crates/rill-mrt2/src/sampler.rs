//! The reference sampler, bit for bit (spec §3.6, trap T9).
//!
//! Per depth step `k` the logits of the level's 1024 ids are top-k filtered
//! (ties with the k-th value kept) and the token is `argmax(logits + T·g)` where
//! `g` is MLX's Gumbel noise for the step's key over the full 12294-id vocabulary.
//! The key then advances by `split(key)[1]`. The PRNG is MLX's Threefry-2x32 with
//! MLX's `bits` layout, reproduced exactly; the Gumbel transform uses Rust's `ln`,
//! whose results equal MLX's x86 `log` on every recorded value (the parity tests
//! compare the noise exactly; numpy's `log` differs by a few ulp, ≈1e-6).

use crate::error::InvalidValue;
use crate::model::LEVELS;

/// The full output vocabulary: the reserved ids, then every level's ids.
pub const VOCAB: usize = RESERVED + LEVELS * LEVEL;
/// Ids per RVQ level: one per codebook entry of the codec.
pub const LEVEL: usize = rill_spectrostream::CODES;
/// Reserved ids before the first level (0 = SOS).
pub const RESERVED: usize = rill_spectrostream::RESERVED_IDS as usize;
/// `-0.7·f32::MAX`, the reference's "large negative number" for masked logits.
pub const MASKED: f32 = -0.7 * f32::MAX;

/// An MLX PRNG key.
pub type Key = [u32; 2];

/// `mx.random.key(seed)`.
pub fn key(seed: u64) -> Key {
    [(seed >> 32) as u32, seed as u32]
}

/// Threefry-2x32 with 20 rounds (MLX `threefry.cpp`, identical to JAX).
pub fn threefry2x32(k: Key, c: [u32; 2]) -> [u32; 2] {
    const ROT: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];
    let ks = [k[0], k[1], k[0] ^ k[1] ^ 0x1BD1_1BDA];
    let mut x0 = c[0].wrapping_add(ks[0]);
    let mut x1 = c[1].wrapping_add(ks[1]);
    for i in 0..5 {
        for &r in &ROT[i % 2] {
            x0 = x0.wrapping_add(x1);
            x1 = x1.rotate_left(r);
            x1 ^= x0;
        }
        x0 = x0.wrapping_add(ks[(i + 1) % 3]);
        x1 = x1.wrapping_add(ks[(i + 2) % 3]).wrapping_add(i as u32 + 1);
    }
    [x0, x1]
}

/// Word `j` of `bits(n, key)` in MLX's layout: for `i < n/2`,
/// `(word[i], word[i + n/2 + odd]) = threefry(key, (i, i + n/2 + odd))`.
pub fn bits_word(k: Key, n: usize, j: usize) -> u32 {
    let half = n / 2;
    let odd = n % 2;
    if j < half {
        threefry2x32(k, [j as u32, (j + half + odd) as u32])[0]
    } else if odd == 1 && j == half {
        threefry2x32(k, [half as u32, 0])[0]
    } else {
        let i = j - half - odd;
        threefry2x32(k, [i as u32, (i + half + odd) as u32])[1]
    }
}

/// `mx.random.split(key)[1]`: the key the reference keeps after each depth step.
pub fn split_keep_second(k: Key) -> Key {
    // bits((2,2)) = 4 words: rows [w0, w1], [w2, w3]; row 1 = (hash(0,2)[1], hash(1,3)[1]).
    [bits_word(k, 4, 2), bits_word(k, 4, 3)]
}

/// `mx.random.split(key)` (both rows).
pub fn split(k: Key) -> [Key; 2] {
    [
        [bits_word(k, 4, 0), bits_word(k, 4, 1)],
        [bits_word(k, 4, 2), bits_word(k, 4, 3)],
    ]
}

/// MLX uniform from one random word: `min(f32(bits) / 2³², nextafter(1, 0))`.
#[inline]
pub fn uniform_from_bits(b: u32) -> f32 {
    let u = b as f32 / 4_294_967_296.0f32;
    u.min(0.999_999_94)
}

/// `-log(-log(u))` in f32.
#[inline]
pub fn gumbel_from_bits(b: u32) -> f32 {
    -(-uniform_from_bits(b).ln()).ln()
}

/// The Gumbel noise `gumbel(key, [12294])[lo..lo + out.len()]`.
pub fn gumbel_slice(k: Key, lo: usize, out: &mut [f32]) {
    for (j, o) in out.iter_mut().enumerate() {
        *o = gumbel_from_bits(bits_word(k, VOCAB, lo + j));
    }
}

/// Sampling settings (upstream Python defaults: T 1.3, top-k 40).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplingParams {
    /// Multiplies the Gumbel noise; 0 = greedy.
    pub temperature: f32,
    /// Keep the `top_k` largest logits (ties kept); clipped to 1..=12294 as upstream.
    pub top_k: usize,
}

impl SamplingParams {
    /// Temperature finite and ≥ 0, top-k in 1..=12294.
    pub fn validate(&self) -> Result<(), InvalidValue> {
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(InvalidValue::new(
                "temperature",
                self.temperature,
                "a finite number ≥ 0",
            ));
        }
        if !(1..=VOCAB).contains(&self.top_k) {
            return Err(InvalidValue::new("top-k", self.top_k, "in 1..=12294"));
        }
        Ok(())
    }
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            temperature: 1.3,
            top_k: 40,
        }
    }
}

/// Picks the id (0..1024 within the level) from the level's soft-capped logits
/// and the step's Gumbel noise (same length). `scratch` needs 1024 floats.
pub fn sample_level(
    logits: &[f32],
    gumbel: &[f32],
    p: SamplingParams,
    scratch: &mut [f32],
) -> usize {
    debug_assert_eq!(logits.len(), gumbel.len());
    let n = logits.len();
    let k = p.top_k.clamp(1, VOCAB);
    // k-th largest over the full vocabulary: the other levels hold MASKED, so for
    // k > n the threshold is MASKED and every level logit is kept.
    let threshold = if k > n {
        MASKED
    } else {
        let s = &mut scratch[..n];
        s.copy_from_slice(logits);
        let (_, kth, _) = s.select_nth_unstable_by(n - k, |a, b| a.total_cmp(b));
        *kth
    };
    let mut best = 0usize;
    let mut best_v = f32::NEG_INFINITY;
    for i in 0..n {
        let x = if logits[i] >= threshold {
            logits[i]
        } else {
            MASKED
        };
        let v = if p.temperature == 0.0 {
            x
        } else {
            x + gumbel[i] * p.temperature
        };
        // First maximum wins (argmax); NaN never wins.
        if v > best_v {
            best_v = v;
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mlx_test_vectors() {
        // mrt2_spec.md §3.6 (mlx 0.32.4).
        assert_eq!(key(42), [0, 42]);
        assert_eq!(
            split(key(42)),
            [[2465931498, 3679230171], [255383827, 267815257]]
        );
        let mut k = key(42);
        let mut used = vec![k];
        for _ in 0..24 {
            k = split_keep_second(k);
            used.push(k);
        }
        assert_eq!(used[1], [255383827, 267815257]);
        assert_eq!(used[2], [754422081, 3987528881]);
        assert_eq!(used[12], [1119419823, 4082539319]);
        assert_eq!(used[24], [2623895157, 1611261976]);
        let mut g = [0f32; 6];
        gumbel_slice(key(42), 0, &mut g);
        let want = [
            -0.78351384,
            0.54610205,
            -0.49333143,
            0.040_448_5,
            1.312_634_6,
            0.01167862,
        ];
        for (a, b) in g.iter().zip(want) {
            assert!((a - b).abs() < 2e-6, "{a} vs {b}");
        }
        let mut g = [0f32; 4];
        gumbel_slice(used[1], 0, &mut g);
        let want = [3.796_899_3, -0.31035134, -0.36500925, -0.18377836];
        for (a, b) in g.iter().zip(want) {
            assert!((a - b).abs() < 2e-6, "{a} vs {b}");
        }
    }

    #[test]
    fn top_k_keeps_ties_and_greedy() {
        let logits = [1.0, 3.0, 3.0, 2.0, -1.0];
        let mut s = [0f32; 5];
        // Greedy: first maximum.
        let p = SamplingParams {
            temperature: 0.0,
            top_k: 1,
        };
        assert_eq!(sample_level(&logits, &[0.0; 5], p, &mut s), 1);
        // top-1 keeps both tied 3.0s; noise picks between them.
        let p = SamplingParams {
            temperature: 1.0,
            top_k: 1,
        };
        assert_eq!(
            sample_level(&logits, &[0.0, 0.0, 0.5, 9.0, 9.0], p, &mut s),
            2
        );
        // top-2 of [1,3,3,2,-1] is 3 (ties) -> index 3 (value 2) excluded.
        let p = SamplingParams {
            temperature: 1.0,
            top_k: 2,
        };
        assert_eq!(
            sample_level(&logits, &[0.0, 0.0, 0.0, 9.0, 0.0], p, &mut s),
            1
        );
        // k larger than the level keeps everything.
        let p = SamplingParams {
            temperature: 1.0,
            top_k: 5000,
        };
        assert_eq!(
            sample_level(&logits, &[0.0, 0.0, 0.0, 0.0, 9.0], p, &mut s),
            4
        );
    }
}
