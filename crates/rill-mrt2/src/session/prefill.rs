//! Prefill: forcing a user's audio codes through the language model before
//! generation, as upstream's C++ engine does (`MLXEngine::prefill_state_from_tokens`,
//! spec §3.7).
//!
//! A forced frame runs only the temporal step (the embedding of `prev` through the
//! temporal layers, its keys/values appended to the caches); the depth loop and the
//! RNG are skipped, so the sampler key is untouched and nothing is sampled. For `N`
//! frames of ids the engine (`mlx_engine.cpp`, `prefill_with_token_array`: "Option B")
//! seeds `previous_frame = ids[s]` and calls the model for `s = 0..N−1`, appending each
//! of `ids[0..N−1]` once, then seeds `previous_frame = ids[N−1]` without a call (the
//! next generated frame embeds it): `N − 1` temporal steps on `ids[0], …, ids[N−2]`
//! ([`prefill_inputs`]).

use rill_kernels::Pool;

use super::Session;
use crate::conditioning::{Conditioning, NoteValue, StyleLevels, PITCHES};
use crate::error::ModelError;
use crate::model::LEVELS;
use crate::sampler::{LEVEL, RESERVED};

/// Codes per RVQ level (the raw range of a prefill code is `0..CODES`).
pub const CODES: u16 = LEVEL as u16;

/// The unique ids of one frame of raw codes: `c + 1024·k + 6`; a code > 1023 is an error.
pub fn code_ids(codes: &[u16; LEVELS]) -> Result<[u32; LEVELS], ModelError> {
    let mut ids = [0u32; LEVELS];
    for (k, (&c, id)) in codes.iter().zip(&mut ids).enumerate() {
        if c >= CODES {
            return Err(ModelError::Prefill(format!(
                "code {c} at level {k} is outside 0..{CODES}"
            )));
        }
        *id = (RESERVED + LEVEL * k) as u32 + c as u32;
    }
    Ok(ids)
}

/// Which frame of the prefill feeds each of the `n − 1` temporal steps of an
/// `n`-frame prefill (see the module doc): `0, 1, …, n − 2`.
pub fn prefill_inputs(n: usize) -> Vec<usize> {
    (0..n.saturating_sub(1)).collect()
}

/// The conditioning upstream's engine prefills under
/// (`MLXEngine::Impl::prefill_with_token_array`): every note masked; the drum channel
/// "no drums" when the user asked for none, else masked (the engine never feeds
/// "drums on"); the CFG scales kept. The style is masked by default
/// (`mask_musiccoca_during_prefill = true`); with `keep_style` (`= false`) the
/// engine writes only the coarsest 6 levels (`kept_mc_levels = kMusicCoCaRVQLevels −
/// kMusicCoCaMaskedTailLevels`) and masks the rest, whatever the generation feeds.
pub fn prefill_conditioning(c: &Conditioning, keep_style: bool) -> Conditioning {
    Conditioning {
        style: if keep_style { c.style } else { None },
        style_levels: StyleLevels::Coarse6,
        notes: [NoteValue::Masked; PITCHES],
        drums: (c.drums == Some(false)).then_some(false),
        cfg: c.cfg,
    }
}

impl Session {
    /// One forced frame without sampling: the temporal step on the current `prev`
    /// (its keys/values appended to the caches, the frame counter advanced), then
    /// `prev ← next_prev`. The depth loop does not run and the sampler key does not
    /// change. An id outside its level's range is an error and changes nothing.
    pub fn prefill_frame(
        &mut self,
        next_prev: &[u32; LEVELS],
        pool: &Pool,
    ) -> Result<(), ModelError> {
        check_ids(next_prev)?;
        self.temporal_step(pool, None);
        self.state.prev = *next_prev;
        self.state.frame += 1;
        Ok(())
    }

    /// Sets the previous frame's tokens without a model call (the last step of a
    /// prefill). An id outside its level's range is an error.
    pub fn set_prev(&mut self, tokens: &[u32; LEVELS]) -> Result<(), ModelError> {
        check_ids(tokens)?;
        self.state.prev = *tokens;
        Ok(())
    }

    /// Upstream's prefill of `codes` (raw codes `0..1024` per level, one row per
    /// frame) under the current conditioning: see the module doc. Generation then
    /// continues from `prev = ids[N−1]`. No codes, or a code > 1023, is an error and
    /// changes nothing. The caller sets the prefill conditioning
    /// ([`prefill_conditioning`]) before and the generation's after.
    pub fn prefill(&mut self, codes: &[[u16; LEVELS]], pool: &Pool) -> Result<(), ModelError> {
        let ids = codes.iter().map(code_ids).collect::<Result<Vec<_>, _>>()?;
        let (Some(first), Some(last)) = (ids.first(), ids.last()) else {
            return Err(ModelError::Prefill("no frames to prefill".into()));
        };
        self.set_prev(first)?;
        for s in prefill_inputs(ids.len()) {
            // The temporal step on ids[s], then prev ← ids[s + 1].
            self.prefill_frame(&ids[s + 1], pool)?;
        }
        self.set_prev(last)
    }
}

/// Every id inside its level's range (`6 + 1024·k ..`), else the first one that is not.
pub(super) fn check_ids(tokens: &[u32; LEVELS]) -> Result<(), ModelError> {
    for (k, &t) in tokens.iter().enumerate() {
        let lo = (RESERVED + LEVEL * k) as u32;
        if !(lo..lo + LEVEL as u32).contains(&t) {
            return Err(ModelError::ForcedToken {
                level: k,
                token: t,
                lo,
                hi: lo + LEVEL as u32,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_follow_the_engine_loop() {
        assert!(prefill_inputs(0).is_empty());
        assert!(prefill_inputs(1).is_empty());
        assert_eq!(prefill_inputs(2), vec![0]);
        assert_eq!(prefill_inputs(5), vec![0, 1, 2, 3]);
    }

    #[test]
    fn code_ids_offsets_and_range() {
        let mut c = [0u16; LEVELS];
        c[3] = 1023;
        let ids = code_ids(&c).unwrap();
        assert_eq!(ids[0], 6);
        assert_eq!(ids[3], 6 + 3 * 1024 + 1023);
        c[5] = 1024;
        assert!(matches!(code_ids(&c), Err(ModelError::Prefill(_))));
    }

    #[test]
    fn prefill_conditioning_keeps_drums_only() {
        let c = Conditioning {
            style: Some([1; 12]),
            drums: Some(true),
            ..Default::default()
        }
        .with_held_notes(&[60])
        .unwrap();
        let p = prefill_conditioning(&c, false);
        assert_eq!(p.style, None);
        assert_eq!(p.drums, None, "the engine never feeds drums on");
        let off = Conditioning {
            drums: Some(false),
            ..Default::default()
        };
        assert_eq!(prefill_conditioning(&off, false).drums, Some(false));
        assert!(p.notes.iter().all(|n| *n == NoteValue::Masked));
    }

    #[test]
    fn keeping_the_style_keeps_levels_0_to_5_only() {
        let style = [660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22];
        for levels in [StyleLevels::All12, StyleLevels::Coarse6] {
            let c = Conditioning {
                style: Some(style),
                style_levels: levels,
                drums: Some(false),
                ..Default::default()
            }
            .with_held_notes(&[60])
            .unwrap();
            let p = prefill_conditioning(&c, true);
            let t = p.tokens();
            // Upstream: prefill_cond[i] = musiccoca_tokens_[i] + 7 for i < 6, else 6.
            assert_eq!(&t[..12], &[667, 1023, 302, 213, 864, 848, 6, 6, 6, 6, 6, 6]);
            assert!(t[12..140].iter().all(|&v| v == 6), "notes masked");
            assert_eq!(t[140], 7, "no drums kept");
            assert_eq!(&t[141..], &c.tokens()[141..], "CFG kept");
        }
    }
}
