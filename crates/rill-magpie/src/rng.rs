//! torch's CPU default generator and the noise of `torch.multinomial` (spec §4.8):
//! MT19937 seeded with `init_genrand(seed & 0xffffffff)`, `random64 = (hi << 32) | lo`
//! (first draw high), `u = (random64 & (2^53 − 1))·2^-53`, exponential noise
//! `q = f32(−log1p(−u))`, one per probability in row-major order.

const N: usize = 624;
const M: usize = 397;

/// MT19937 (Matsumoto & Nishimura) as torch's `mt19937` engine.
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; N],
    index: usize,
}

impl std::fmt::Debug for Mt19937 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mt19937(index {})", self.index)
    }
}

impl Mt19937 {
    /// `torch.manual_seed(seed)`: `init_genrand` of the low 32 bits.
    pub fn new(seed: u64) -> Self {
        let mut state = [0u32; N];
        state[0] = seed as u32;
        for i in 1..N {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { state, index: N }
    }

    fn twist(&mut self) {
        for i in 0..N {
            let y = (self.state[i] & 0x8000_0000) | (self.state[(i + 1) % N] & 0x7fff_ffff);
            let mut v = self.state[(i + M) % N] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= 0x9908_b0df;
            }
            self.state[i] = v;
        }
        self.index = 0;
    }

    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// torch's `random64()`: the first draw is the high word.
    pub fn next_u64(&mut self) -> u64 {
        let hi = self.next_u32() as u64;
        let lo = self.next_u32() as u64;
        (hi << 32) | lo
    }

    /// A uniform double in [0, 1) from 53 random bits.
    pub fn uniform_f64(&mut self) -> f64 {
        const MASK: u64 = (1 << 53) - 1;
        (self.next_u64() & MASK) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `exponential_(1)` of one float32 element: `f32(−log1p(−u))`.
    pub fn exponential_f32(&mut self) -> f32 {
        (-(-self.uniform_f64()).ln_1p()) as f32
    }

    /// Fills `out` with exponential noise, in order.
    pub fn fill_exponential(&mut self, out: &mut [f32]) {
        for o in out {
            *o = self.exponential_f32();
        }
    }
}
