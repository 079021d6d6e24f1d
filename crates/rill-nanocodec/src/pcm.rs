//! 16-bit PCM output.

use crate::config::SAMPLES_PER_FRAME;

/// `round(x · 32767)` as int16, for decoder output in `[-1, 1]` (values outside
/// saturate, NaN becomes 0). The decoder's last op is a clamp to `[-1, 1]`, so this
/// loses only the rounding.
pub fn float_to_int16(x: f32) -> i16 {
    // `as` saturates and maps NaN to 0.
    (x * 32767.0).round() as i16
}

/// One frame of decoder output as int16 ([`float_to_int16`] per sample).
pub fn frame_to_int16(frame: &[f32; SAMPLES_PER_FRAME], out: &mut [i16; SAMPLES_PER_FRAME]) {
    for (o, &x) in out.iter_mut().zip(frame) {
        *o = float_to_int16(x);
    }
}
