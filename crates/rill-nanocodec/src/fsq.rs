//! FSQ dequantisation (`GroupFiniteScalarQuantizer.decode`, spec §5.1): group `g`
//! holds 4 dims with levels `[8, 7, 6, 6]`; code `n` has digit
//! `k_d = (n / base_d) mod L_d` and value `(k_d − ⌊L_d/2⌋) / ⌊L_d/2⌋`, exact in f32.

use crate::config::{CODEBOOKS, CODEBOOK_SIZE, FSQ_BASES, FSQ_LEVELS, LATENT_DIM};
use crate::error::CodecError;

/// Checks that every code is a NanoCodec code (`< 2016`).
pub fn check_codes(codes: &[u32; CODEBOOKS]) -> Result<(), CodecError> {
    match codes.iter().position(|&c| c >= CODEBOOK_SIZE) {
        Some(g) => Err(CodecError::BadCode {
            codebook: g,
            code: codes[g],
        }),
        None => Ok(()),
    }
}

/// The 32 latent values of one frame (`out[4g + d]`); codes must be checked.
pub fn dequantize(codes: &[u32; CODEBOOKS], out: &mut [f32; LATENT_DIM]) {
    for (g, &n) in codes.iter().enumerate() {
        for d in 0..FSQ_LEVELS.len() {
            let k = (n / FSQ_BASES[d]) % FSQ_LEVELS[d];
            let half = FSQ_LEVELS[d] / 2;
            out[4 * g + d] = (k as f32 - half as f32) / half as f32;
        }
    }
}
