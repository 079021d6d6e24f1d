//! Token selection of the local transformer and the EOS stream (spec §4.5, §4.6):
//! forbidden ids (trap T11), top-k keeping ties (T12), temperature, softmax, and
//! torch's `multinomial(p, 1)` as `argmax(p / q)` with exponential noise `q`.

use crate::config::Config;

/// Sets the ids that may never be sampled to `-inf`: audio BOS and the specials after
/// EOS always, EOS too while `forbid_eos` (`mm.py:361-377`, `idx < min_generated_frames`).
pub fn mask_forbidden(logits: &mut [f32], config: &Config, forbid_eos: bool) {
    let bos = config.codebook_size();
    logits[bos] = f32::NEG_INFINITY;
    if forbid_eos {
        logits[bos + 1] = f32::NEG_INFINITY;
    }
    for l in &mut logits[bos + 2..config.codebook_vocab] {
        *l = f32::NEG_INFINITY;
    }
}

/// `l[l < topk(l, k).values[-1]] = -inf`: values equal to the k-th largest all stay.
/// `scratch` holds at least `logits.len()` floats.
pub fn top_k(logits: &mut [f32], k: usize, scratch: &mut [f32]) {
    let n = logits.len();
    if k == 0 || k >= n {
        return;
    }
    let s = &mut scratch[..n];
    s.copy_from_slice(logits);
    let (_, kth, _) = s.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    let thr = *kth;
    for l in logits.iter_mut() {
        if *l < thr {
            *l = f32::NEG_INFINITY;
        }
    }
}

/// `softmax(l / t)` in place (max-subtracted, divided by the sum, as torch's CPU kernel).
pub fn softmax_temperature(logits: &mut [f32], t: f32) {
    for l in logits.iter_mut() {
        *l /= t;
    }
    let m = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0f32;
    for l in logits.iter_mut() {
        *l = (*l - m).exp();
        sum += *l;
    }
    for l in logits.iter_mut() {
        *l /= sum;
    }
}

/// `argmax(p / q)`: the first maximum; a NaN ratio wins, as torch's `argmax` does.
pub fn pick(p: &[f32], q: &[f32]) -> usize {
    let mut best = 0;
    let mut best_v = f32::NEG_INFINITY;
    for (i, (&pi, &qi)) in p.iter().zip(q).enumerate() {
        let v = pi / qi;
        if v.is_nan() {
            return i;
        }
        if v > best_v {
            best_v = v;
            best = i;
        }
    }
    best
}

/// The first index of the maximum (temperature ≤ 0).
pub fn argmax(x: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if v > x[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_ids_and_ties() {
        let c = Config::oracle();
        let mut l = vec![0.5f32; 2024];
        mask_forbidden(&mut l, &c, true);
        let inf: Vec<usize> = (0..2024).filter(|&i| l[i] == f32::NEG_INFINITY).collect();
        assert_eq!(inf, vec![2016, 2017, 2018, 2019, 2020, 2021, 2022, 2023]);
        let mut l = vec![0.5f32; 2024];
        mask_forbidden(&mut l, &c, false);
        assert_eq!(l[2017], 0.5, "EOS allowed from min_generated_frames on");
        // top-k keeps every value equal to the k-th.
        let mut x = vec![1.0f32, 3.0, 2.0, 2.0, 2.0, 0.0];
        let mut s = vec![0f32; 6];
        top_k(&mut x, 2, &mut s);
        assert_eq!(
            x,
            vec![f32::NEG_INFINITY, 3.0, 2.0, 2.0, 2.0, f32::NEG_INFINITY]
        );
        let mut one = vec![1.0f32, 3.0, 3.0, 0.0];
        top_k(&mut one, 1, &mut s);
        softmax_temperature(&mut one, 0.01);
        assert_eq!(one, vec![0.0, 0.5, 0.5, 0.0]);
    }

    #[test]
    fn pick_is_the_exponential_race() {
        assert_eq!(pick(&[0.2, 0.5, 0.3], &[1.0, 1.0, 1.0]), 1);
        assert_eq!(pick(&[0.2, 0.5, 0.3], &[0.1, 1.0, 1.0]), 0);
        assert_eq!(pick(&[0.0, 1.0, 0.0], &[1e-30, 5.0, 1e-30]), 1);
        assert_eq!(
            pick(&[0.0, 1.0, 0.0], &[0.0, 5.0, 1.0]),
            0,
            "0/0 is NaN, which torch's argmax returns"
        );
    }
}
