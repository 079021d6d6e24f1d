//! Float → int16 output conversion of the reference sampler (spec §4.6,
//! `system.py` `_float_samples_to_int16`).

/// Output gain applied before conversion.
pub const OUTPUT_GAIN: f32 = 0.5;

/// `s = clip(0.5·x, −1, 1)`, `out = round_half_even(32767.5·s − 0.5)`, every step in
/// f32 like the reference. Consumers divide by 32768.
///
/// Non-finite samples (NaN, ±inf — a diverged decoder) become 0 instead of
/// full-scale noise; the return value is how many were replaced.
///
/// # Panics
/// If `out` is shorter than `samples`.
pub fn float_to_int16(samples: &[f32], out: &mut [i16]) -> usize {
    assert!(out.len() >= samples.len(), "int16 output buffer too short");
    let mut replaced = 0;
    for (o, &x) in out.iter_mut().zip(samples) {
        if !x.is_finite() {
            *o = 0;
            replaced += 1;
            continue;
        }
        let s = (OUTPUT_GAIN * x).clamp(-1.0, 1.0);
        let v = (32767.5f32 * s - 0.5).round_ties_even();
        // In range by the clip: -32768 ..= 32767.
        *o = v as i16;
    }
    replaced
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(x: f32) -> i16 {
        let mut o = [0i16; 1];
        float_to_int16(&[x], &mut o);
        o[0]
    }

    #[test]
    fn edges_and_rounding() {
        assert_eq!(conv(2.0), 32767);
        assert_eq!(conv(-2.0), -32768);
        assert_eq!(conv(5.0), 32767);
        assert_eq!(conv(-5.0), -32768);
        assert_eq!(conv(0.0), 0); // 32767.5·0 − 0.5 = −0.5 → ties to even → −0 → 0
        assert_eq!(conv(1.0), 16383); // 16383.75 − 0.5 = 16383.25
        assert_eq!(conv(-1.0), -16384); // −16383.75 − 0.5 = −16384.25
    }

    #[test]
    fn ties_round_to_even() {
        // Scan for inputs whose scaled value lands exactly on .5 after the f32 product.
        let mut ties = 0;
        for i in 0..200_000u32 {
            let x = -2.0 + i as f32 * (4.0 / 200_000.0);
            let v = 32767.5f32 * (0.5 * x).clamp(-1.0, 1.0) - 0.5;
            if (v - v.trunc()).abs() == 0.5 {
                ties += 1;
                let got = conv(x) as f32;
                assert_eq!((got - v).abs(), 0.5, "x {x}");
                assert_eq!(got as i32 % 2, 0, "x {x}: tie {v} rounded to odd {got}");
            }
        }
        assert!(ties > 10, "found only {ties} ties");
    }

    #[test]
    fn non_finite_become_silence_and_are_counted() {
        let x = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.3];
        let mut o = [7i16; 4];
        assert_eq!(float_to_int16(&x, &mut o), 3);
        assert_eq!(&o[..3], &[0, 0, 0]);
        assert_eq!(o[3], conv(0.3));
    }
}
