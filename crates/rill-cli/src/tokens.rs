//! Token files: `[N, 12]` integer `.npy` arrays of unique ids.

use std::path::Path;

use anyhow::{bail, Result};
use rill_mrt2::sampler::{LEVEL, RESERVED};
use rill_mrt2::LEVELS;

/// Reads and validates a `[N, 12]` token file: level k's id must lie in
/// `6 + 1024k .. 6 + 1024(k+1)`.
pub fn read_tokens(path: &Path) -> Result<Vec<[u32; LEVELS]>> {
    let a = rill_io::read_npy(path)?;
    let Some(values) = a.to_i64() else {
        bail!(
            "{}: token ids must be an integer array, found floats or bools",
            path.display()
        );
    };
    if a.shape.len() != 2 || a.shape[1] != LEVELS || a.shape[0] == 0 {
        bail!(
            "{}: expected a [N, 12] array of token ids (N ≥ 1), found shape {:?}",
            path.display(),
            a.shape
        );
    }
    let mut out = Vec::with_capacity(a.shape[0]);
    for (n, row) in values.chunks(LEVELS).enumerate() {
        let mut t = [0u32; LEVELS];
        for (k, &v) in row.iter().enumerate() {
            let lo = (RESERVED + LEVEL * k) as i64;
            if !(lo..lo + LEVEL as i64).contains(&v) {
                bail!(
                    "{}: row {n}, level {k}: id {v} is outside {lo}..{} (ids are 6 + 1024·level + code)",
                    path.display(),
                    lo + LEVEL as i64 - 1
                );
            }
            t[k] = v as u32;
        }
        out.push(t);
    }
    Ok(out)
}
