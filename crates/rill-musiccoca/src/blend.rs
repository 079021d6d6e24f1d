//! Weighted blends of style embeddings, as upstream's C++ engine
//! (`mlx_engine.cpp` `fetch_musiccoca_tokens` / `reblend_musiccoca_tokens`): up to six
//! prompts; each positive weight divided by the sum of the positive ones; the
//! embeddings averaged with those weights; the caller re-quantises the result.

use crate::tower::DIM;
use crate::Error;

/// Most prompts in one blend (upstream's apps and engine).
pub const MAX_PROMPTS: usize = 6;
/// Smallest sum of positive weights upstream's engine accepts.
pub const MIN_WEIGHT_SUM: f32 = 1e-4;

/// The weights actually applied: positive ones over their sum (added in order, f32),
/// the others 0.
pub fn normalised_weights(weights: &[f32]) -> Result<Vec<f32>, Error> {
    if weights.is_empty() || weights.len() > MAX_PROMPTS {
        return Err(Error::Input(format!(
            "a blend takes 1 to {MAX_PROMPTS} prompts, got {}",
            weights.len()
        )));
    }
    if let Some(w) = weights.iter().find(|w| !w.is_finite()) {
        return Err(Error::Input(format!(
            "prompt weight {w} is not a finite number"
        )));
    }
    let mut sum = 0.0f32;
    for &w in weights.iter().filter(|&&w| w > 0.0) {
        sum += w;
    }
    if sum < MIN_WEIGHT_SUM {
        return Err(Error::Input(format!(
            "the prompts' positive weights sum to {sum}; give at least one prompt a weight above 0 \
             (weights are relative: jazz=0.7 techno=0.3)"
        )));
    }
    Ok(weights
        .iter()
        .map(|&w| if w > 0.0 { w / sum } else { 0.0 })
        .collect())
}

/// `Σ wᵢ·eᵢ` over the members with the weights of [`normalised_weights`]: each
/// product rounded, then added in order (f32), as the recordings define it.
pub fn blend(members: &[(&[f32], f32)]) -> Result<Vec<f32>, Error> {
    let raw: Vec<f32> = members.iter().map(|m| m.1).collect();
    let weights = normalised_weights(&raw)?;
    let mut acc = vec![0.0f32; DIM];
    for ((e, _), w) in members.iter().zip(weights) {
        if e.len() != DIM {
            return Err(Error::Input(format!(
                "a style embedding has {} values, expected {DIM}",
                e.len()
            )));
        }
        for (a, &v) in acc.iter_mut().zip(e.iter()) {
            let p = w * v;
            *a += p;
        }
    }
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_normalise_over_the_positive_ones() {
        assert_eq!(normalised_weights(&[3.0, 1.0]).unwrap(), vec![0.75, 0.25]);
        assert_eq!(
            normalised_weights(&[1.0, -1.0, 0.0]).unwrap(),
            vec![1.0, 0.0, 0.0]
        );
        assert!(normalised_weights(&[0.0, -2.0]).is_err());
        assert!(normalised_weights(&[]).is_err());
        assert!(normalised_weights(&[1.0; 7]).is_err());
        assert!(normalised_weights(&[f32::NAN]).is_err());
        assert!(normalised_weights(&[5e-5]).is_err());
    }
}
