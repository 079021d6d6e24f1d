//! numpy's legacy `np.random.RandomState(seed).randn(n)`, bit for bit: upstream draws the
//! mapper's noise as `np.random.RandomState(seed).randn(768).astype(np.float32)`.
//!
//! What numpy 2.x does (`numpy/random/_mt19937.pyx` `_legacy_seeding`,
//! `src/mt19937/mt19937.c`, `src/legacy/legacy-distributions.c`):
//! * an integer seed in `0..=2**32-1` seeds MT19937 with Matsumoto and Nishimura's
//!   `init_genrand` (numpy raises `ValueError` for a negative seed or one of 2**32 or more,
//!   so this API takes a `u32`);
//! * a uniform double is `genrand_res53`: `((a >> 5) * 2**26 + (b >> 6)) / 2**53` from two
//!   32-bit outputs;
//! * a Gaussian is the legacy polar (Marsaglia) method: draw `x1 = 2u - 1`, `x2 = 2u - 1`
//!   until `0 < r2 = x1² + x2² < 1`, then `f = sqrt(-2 ln r2 / r2)`; return `f·x2` and
//!   keep `f·x1` for the next call. The kept value survives across `randn` calls on one
//!   state.
//!
//! The arithmetic is plain IEEE f64 without fused multiply-adds, as numpy's baseline
//! build computes it; `ln` is the platform's `log`, the function numpy calls too, so on a
//! glibc system both use glibc's.

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// The state of numpy's legacy `RandomState`: MT19937 plus the cached second Gaussian.
#[derive(Clone)]
pub struct RandomState {
    key: [u32; N],
    pos: usize,
    gauss: Option<f64>,
}

impl RandomState {
    /// `np.random.RandomState(seed)` for an integer seed (numpy accepts exactly the `u32`
    /// range for integers).
    pub fn new(seed: u32) -> RandomState {
        let mut key = [0u32; N];
        let mut s = seed;
        for (pos, k) in key.iter_mut().enumerate() {
            *k = s;
            s = 1_812_433_253u32
                .wrapping_mul(s ^ (s >> 30))
                .wrapping_add(pos as u32 + 1);
        }
        RandomState {
            key,
            pos: N,
            gauss: None,
        }
    }

    fn regenerate(&mut self) {
        let mag = |y: u32| if y & 1 == 1 { MATRIX_A } else { 0 };
        for i in 0..N {
            let y = (self.key[i] & UPPER_MASK) | (self.key[(i + 1) % N] & LOWER_MASK);
            self.key[i] = self.key[(i + M) % N] ^ (y >> 1) ^ mag(y);
        }
        self.pos = 0;
    }

    /// The next raw 32-bit MT19937 output (tempered).
    pub fn next_u32(&mut self) -> u32 {
        if self.pos == N {
            self.regenerate();
        }
        let mut y = self.key[self.pos];
        self.pos += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random_sample()`: a double in `[0, 1)` with 53 random bits (`genrand_res53`).
    pub fn next_f64(&mut self) -> f64 {
        let a = self.next_u32() >> 5;
        let b = self.next_u32() >> 6;
        (a as f64 * 67_108_864.0 + b as f64) / 9_007_199_254_740_992.0
    }

    /// One standard normal draw by numpy's legacy polar method (`legacy_gauss`).
    pub fn gauss(&mut self) -> f64 {
        if let Some(g) = self.gauss.take() {
            return g;
        }
        loop {
            let x1 = 2.0 * self.next_f64() - 1.0;
            let x2 = 2.0 * self.next_f64() - 1.0;
            let r2 = x1 * x1 + x2 * x2;
            if r2 >= 1.0 || r2 == 0.0 {
                continue;
            }
            let f = (-2.0 * r2.ln() / r2).sqrt();
            self.gauss = Some(f * x1);
            return f * x2;
        }
    }

    /// `randn(n)`: `n` standard normal draws, in order.
    pub fn randn(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.gauss()).collect()
    }
}

/// `np.random.RandomState(seed).randn(n)`, as float64.
pub fn randn(seed: u32, n: usize) -> Vec<f64> {
    RandomState::new(seed).randn(n)
}

/// `np.random.RandomState(seed).randn(n).astype(np.float32)`: upstream's mapper noise
/// (`n` = 768), each double rounded to nearest f32 as numpy's cast does.
pub fn randn_f32(seed: u32, n: usize) -> Vec<f32> {
    randn(seed, n).into_iter().map(|x| x as f32).collect()
}
