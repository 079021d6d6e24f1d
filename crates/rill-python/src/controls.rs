//! Upstream's raw conditioning values → rill's [`Conditioning`] and sampling.
//!
//! Upstream (`MagentaRT2System._build_conditioning`) concatenates, per frame, the
//! raw values of every input — 12 MusicCoCa codes (`mulan_tokens_25hz`), 128
//! pianoroll values (`pianoroll_with_onsets_tokens`), one drum value
//! (`drum_pianoroll_tokens`) and the binned CFG scales — and adds 7 (6 reserved ids
//! + the dropout id), so a raw −1 is the mask token. A missing input is all −1.

use rill_mrt2::conditioning::{
    check_style, CfgScales, Conditioning, NoteValue, StyleLevels, PITCHES, STYLE_LEVELS,
};
use rill_mrt2::sampler::SamplingParams;

use crate::error::{Error, Result};

/// The controls of one generation call, as upstream's Python takes them.
#[derive(Debug, Clone, PartialEq)]
pub struct Controls {
    /// `mulan_tokens_25hz`: 12 codes, each 0..=1023 or −1 (masked); `None` = masked.
    pub style: Option<Vec<i64>>,
    /// Style levels fed: 12 (all, upstream's Python) or 6 (the coarsest, levels 6–11
    /// masked, as upstream's C++ engine).
    pub style_levels: i64,
    /// `pianoroll_with_onsets_tokens`: 128 values −1..=3 (masked, off, sustain,
    /// onset, on) per MIDI pitch; `None` = all masked.
    pub notes: Option<Vec<i64>>,
    /// `drum_pianoroll_tokens`: −1 (masked), 0 (no drums), 1 (drums); `None` = masked.
    pub drums: Option<i64>,
    /// CFG scales (musiccoca, notes, drums); binned as upstream's `discretize_cfg`.
    pub cfg: [f64; 3],
    pub temperature: f64,
    pub top_k: i64,
}

impl Default for Controls {
    fn default() -> Self {
        let c = CfgScales::default();
        Controls {
            style: None,
            style_levels: StyleLevels::default().count() as i64,
            notes: None,
            drums: None,
            cfg: [c.musiccoca, c.notes, c.drums],
            temperature: 1.3,
            top_k: 40,
        }
    }
}

/// The pianoroll value of a raw upstream value.
pub fn note_value(raw: i64) -> Result<NoteValue> {
    NoteValue::from_raw(raw).ok_or_else(|| {
        Error::invalid(format!(
            "pianoroll_with_onsets_tokens value {raw} is not one of -1 (masked), 0 (off), \
             1 (sustained), 2 (onset), 3 (on)"
        ))
    })
}

/// The style codes: all −1 = masked, else 12 codes 0..=1023.
pub fn style_codes(raw: &[i64]) -> Result<Option<[u16; STYLE_LEVELS]>> {
    if raw.len() != STYLE_LEVELS {
        return Err(Error::invalid(format!(
            "mulan_tokens_25hz needs {STYLE_LEVELS} MusicCoCa codes, got {}",
            raw.len()
        )));
    }
    if raw.iter().all(|&c| c == -1) {
        return Ok(None);
    }
    if let Some(i) = raw.iter().position(|&c| c == -1) {
        return Err(Error::invalid(format!(
            "mulan_tokens_25hz code {i} is -1 (masked) but others are not: rill masks the \
             style as a whole (12 codes 0..1023, or all -1)"
        )));
    }
    let mut codes = [0u16; STYLE_LEVELS];
    for (i, (dst, &c)) in codes.iter_mut().zip(raw).enumerate() {
        if !(0..=1023).contains(&c) {
            return Err(Error::invalid(format!(
                "mulan_tokens_25hz code {i} is {c}, but MusicCoCa codes must be in 0..=1023 \
                 (or -1 for masked)"
            )));
        }
        *dst = c as u16;
    }
    check_style(&codes)?;
    Ok(Some(codes))
}

impl Controls {
    /// The conditioning and sampling these controls mean; rejects any invalid value.
    pub fn resolve(&self) -> Result<(Conditioning, SamplingParams)> {
        let mut c = Conditioning::default();
        if let Some(s) = &self.style {
            c.style = style_codes(s)?;
        }
        c.style_levels = u64::try_from(self.style_levels)
            .ok()
            .and_then(|n| StyleLevels::from_count(n).ok())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "style_levels is {}, but must be 12 (all MusicCoCa levels, as upstream's Python)                      or 6 (the coarsest six, as upstream's C++ engine)",
                    self.style_levels
                ))
            })?;
        if let Some(n) = &self.notes {
            if n.len() != PITCHES {
                return Err(Error::invalid(format!(
                    "pianoroll_with_onsets_tokens needs {PITCHES} values (one per MIDI pitch), got {}",
                    n.len()
                )));
            }
            for (dst, &v) in c.notes.iter_mut().zip(n) {
                *dst = note_value(v)?;
            }
        }
        c.drums = match self.drums {
            None | Some(-1) => None,
            Some(0) => Some(false),
            Some(1) => Some(true),
            Some(v) => {
                return Err(Error::invalid(format!(
                    "drum_pianoroll_tokens value {v} is not one of -1 (masked), 0 (no drums), 1 (drums)"
                )))
            }
        };
        let [musiccoca, notes, drums] = self.cfg;
        c.cfg = CfgScales {
            musiccoca,
            notes,
            drums,
        };
        c.validate()?;
        let temperature = self.temperature as f32;
        if !(self.temperature.is_finite() && temperature.is_finite()) {
            return Err(Error::invalid(format!(
                "temperature is {}, but must be a finite number ≥ 0",
                self.temperature
            )));
        }
        let top_k = usize::try_from(self.top_k).map_err(|_| {
            Error::invalid(format!("top-k is {}, but must be in 1..=12294", self.top_k))
        })?;
        let p = SamplingParams { temperature, top_k };
        p.validate()?;
        Ok((c, p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rill_mrt2::conditioning::cfg_bin;

    #[test]
    fn masked_everything_is_the_default_conditioning() {
        let (c, p) = Controls::default().resolve().unwrap();
        assert_eq!(c, Conditioning::default());
        assert_eq!(p, SamplingParams::default());
        let all_masked = Controls {
            style: Some(vec![-1; 12]),
            notes: Some(vec![-1; 128]),
            drums: Some(-1),
            ..Default::default()
        };
        assert_eq!(all_masked.resolve().unwrap().0, Conditioning::default());
    }

    #[test]
    fn raw_values_map_to_tokens_like_upstream() {
        let mut notes = vec![-1; 128];
        notes[60] = 3;
        notes[64] = 2;
        notes[67] = 0;
        notes[70] = 1;
        let c = Controls {
            style: Some((0..12).map(|i| i * 80).collect()),
            notes: Some(notes.clone()),
            drums: Some(1),
            ..Default::default()
        };
        let t = c.resolve().unwrap().0.tokens();
        // Upstream: every raw value + 7 (-1 → 6).
        for i in 0..12 {
            assert_eq!(t[i], i as i32 * 80 + 7);
        }
        for (p, &v) in notes.iter().enumerate() {
            assert_eq!(t[12 + p], v as i32 + 7);
        }
        assert_eq!(t[140], 8);
        assert_eq!(&t[141..], &[27, 17, 9]);
        let six = Controls {
            style_levels: 6,
            ..c
        };
        let t6 = six.resolve().unwrap().0.tokens();
        assert_eq!(&t6[..6], &t[..6]);
        assert!(t6[6..12].iter().all(|&v| v == 6), "levels 6–11 masked");
        assert_eq!(&t6[12..], &t[12..]);
    }

    #[test]
    fn bad_values_are_rejected_with_their_key() {
        let bad = [
            Controls {
                style: Some(vec![1; 11]),
                ..Default::default()
            },
            Controls {
                style: Some(vec![1024; 12]),
                ..Default::default()
            },
            Controls {
                style: Some([vec![-1], vec![5; 11]].concat()),
                ..Default::default()
            },
            Controls {
                notes: Some(vec![4; 128]),
                ..Default::default()
            },
            Controls {
                notes: Some(vec![0; 127]),
                ..Default::default()
            },
            Controls {
                drums: Some(2),
                ..Default::default()
            },
            Controls {
                cfg: [f64::NAN, 1.0, 1.0],
                ..Default::default()
            },
            Controls {
                temperature: -0.1,
                ..Default::default()
            },
            Controls {
                temperature: 1e300,
                ..Default::default()
            },
            Controls {
                top_k: 0,
                ..Default::default()
            },
            Controls {
                top_k: -3,
                ..Default::default()
            },
            Controls {
                style_levels: 7,
                ..Default::default()
            },
            Controls {
                style_levels: -6,
                ..Default::default()
            },
        ];
        for c in bad {
            let e = c.resolve().unwrap_err();
            assert!(matches!(e, Error::Invalid(_)), "{c:?}: {e:?}");
        }
    }

    /// Upstream's CFG token bins map back to scales `-1 + step·bin`, which rill bins
    /// to the same token (the Python layer relies on this for `cfg_conditioning_tokens`).
    #[test]
    fn cfg_bins_round_trip_through_scales() {
        for b in 0..=40 {
            assert_eq!(cfg_bin(-1.0 + 0.2 * b as f64, 0.2, 40), b);
        }
        for b in 0..=8 {
            assert_eq!(cfg_bin(-1.0 + 1.0 * b as f64, 1.0, 8), b);
        }
    }
}
