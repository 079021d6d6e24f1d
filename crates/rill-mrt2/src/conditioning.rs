//! Controls → the 144 conditioning tokens of the encoder (spec §1.5, §1.8, T7).
//!
//! Layout: 12 MusicCoCa style codes, 128 pianoroll pitches, 1 drum channel, then the
//! CFG bins (musiccoca, notes) and (drums). Every channel is offset by +7
//! (6 reserved ids + 1 dropout id), so "masked" (raw −1) becomes 6.

use crate::error::InvalidValue;

/// Number of conditioning channels.
pub const CHANNELS: usize = 144;
/// MusicCoCa style levels.
pub const STYLE_LEVELS: usize = 12;
/// Pianoroll pitches (MIDI 0..127).
pub const PITCHES: usize = 128;
/// Offset added to every raw value (6 reserved + 1 dropout).
pub const TOKEN_OFFSET: i32 = 7;
/// Token of a masked channel (raw −1).
pub const MASK_TOKEN: i32 = 6;

/// Raw pianoroll value of a pitch (spec §1.5, `config.py:150-156`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteValue {
    /// −1: the model decides (default for pitches not mentioned).
    Masked,
    /// 0: the pitch is off.
    Off,
    /// 1: sustained from an earlier onset.
    Sustain,
    /// 2: onset in this frame.
    Onset,
    /// 3: on (onset/sustain not specified).
    On,
}

impl NoteValue {
    /// The value of a raw pianoroll entry (−1..=3), `None` for any other.
    pub fn from_raw(raw: i64) -> Option<NoteValue> {
        Some(match raw {
            -1 => NoteValue::Masked,
            0 => NoteValue::Off,
            1 => NoteValue::Sustain,
            2 => NoteValue::Onset,
            3 => NoteValue::On,
            _ => return None,
        })
    }

    pub fn raw(self) -> i32 {
        match self {
            NoteValue::Masked => -1,
            NoteValue::Off => 0,
            NoteValue::Sustain => 1,
            NoteValue::Onset => 2,
            NoteValue::On => 3,
        }
    }
}

/// CFG scales (upstream defaults musiccoca 3, notes 1, drums 1). They enter the
/// model only as discretised conditioning tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CfgScales {
    pub musiccoca: f64,
    pub notes: f64,
    pub drums: f64,
}

impl CfgScales {
    /// Every scale finite (upstream bins -1..7 and clamps beyond: documented, not an error).
    pub fn validate(&self) -> Result<(), InvalidValue> {
        for (what, v) in [
            ("cfg musiccoca", self.musiccoca),
            ("cfg notes", self.notes),
            ("cfg drums", self.drums),
        ] {
            if !v.is_finite() {
                return Err(InvalidValue::new(what, v, "a finite number"));
            }
        }
        Ok(())
    }
}

impl Default for CfgScales {
    fn default() -> Self {
        CfgScales {
            musiccoca: 3.0,
            notes: 1.0,
            drums: 1.0,
        }
    }
}

/// `discretize_cfg` of `system.py:46-67`: `clamp(round((clamp(s, −1, 7) + 1)/step), 0, max_bin)`
/// with Python's round-half-to-even in f64.
pub fn cfg_bin(scale: f64, step: f64, max_bin: i32) -> i32 {
    let s = if scale.is_nan() {
        0.0
    } else {
        scale.clamp(-1.0, 7.0)
    };
    let b = ((s + 1.0) / step).round_ties_even();
    (b as i32).clamp(0, max_bin)
}

/// How many MusicCoCa style levels the conditioning feeds; the finer levels are
/// masked (token 6). Upstream's Python (`MagentaRT2System`) feeds all 12; upstream's
/// C++ engine (`mlx_engine.cpp` `generate_frame`, `kMusicCoCaMaskedTailLevels = 6`)
/// only the coarsest 6, in generation and in a prefill that keeps the style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StyleLevels {
    /// Levels 0–5 fed, 6–11 masked (upstream's C++ engine).
    Coarse6,
    /// All 12 levels fed (upstream's Python; the default).
    #[default]
    All12,
}

impl StyleLevels {
    /// The number of levels fed: 6 or 12.
    pub const fn count(self) -> usize {
        match self {
            StyleLevels::Coarse6 => 6,
            StyleLevels::All12 => 12,
        }
    }

    /// The setting feeding `n` levels; only 6 and 12 exist.
    pub fn from_count(n: u64) -> Result<StyleLevels, InvalidValue> {
        match n {
            6 => Ok(StyleLevels::Coarse6),
            12 => Ok(StyleLevels::All12),
            _ => Err(InvalidValue::new("style levels", n, "6 or 12")),
        }
    }
}

impl std::fmt::Display for StyleLevels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.count())
    }
}

/// What the user steers: style, notes, drums and CFG.
#[derive(Debug, Clone, PartialEq)]
pub struct Conditioning {
    /// 12 MusicCoCa RVQ codes 0..1023; `None` = masked.
    pub style: Option<[u16; STYLE_LEVELS]>,
    /// How many of the style's levels are fed (the rest masked).
    pub style_levels: StyleLevels,
    /// Raw pianoroll value per MIDI pitch.
    pub notes: [NoteValue; PITCHES],
    /// Drum channel: Some(true) = drums, Some(false) = no drums, None = masked.
    pub drums: Option<bool>,
    pub cfg: CfgScales,
}

impl Default for Conditioning {
    fn default() -> Self {
        Conditioning {
            style: None,
            style_levels: StyleLevels::default(),
            notes: [NoteValue::Masked; PITCHES],
            drums: None,
            cfg: CfgScales::default(),
        }
    }
}

/// A MIDI pitch, 0..=127.
pub fn check_pitch(p: u8) -> Result<(), InvalidValue> {
    if (p as usize) < PITCHES {
        Ok(())
    } else {
        Err(InvalidValue::new("MIDI pitch", p, "in 0..=127"))
    }
}

/// Twelve MusicCoCa codes, each 0..=1023.
pub fn check_style(codes: &[u16; STYLE_LEVELS]) -> Result<(), InvalidValue> {
    match codes.iter().find(|&&c| c > 1023) {
        Some(&c) => Err(InvalidValue::new("MusicCoCa style code", c, "in 0..=1023")),
        None => Ok(()),
    }
}

impl Conditioning {
    /// Holds `pitches` on (raw 3) and masks every other pitch, as `rill generate --notes`.
    pub fn with_held_notes(mut self, pitches: &[u8]) -> Result<Self, InvalidValue> {
        self.notes = [NoteValue::Masked; PITCHES];
        for &p in pitches {
            check_pitch(p)?;
            self.notes[p as usize] = NoteValue::On;
        }
        Ok(self)
    }

    /// Style codes in range and CFG scales finite.
    pub fn validate(&self) -> Result<(), InvalidValue> {
        if let Some(s) = &self.style {
            check_style(s)?;
        }
        self.cfg.validate()
    }

    /// The 144 encoder tokens (style levels beyond [`Self::style_levels`] masked).
    pub fn tokens(&self) -> [i32; CHANNELS] {
        let mut t = [MASK_TOKEN; CHANNELS];
        if let Some(style) = self.style {
            let fed = self.style_levels.count();
            for (dst, &c) in t[..fed].iter_mut().zip(&style) {
                // (`validate` rejects codes > 1023; the min only keeps the
                // embedding lookup in bounds for an unvalidated value.)
                *dst = c.min(1023) as i32 + TOKEN_OFFSET;
            }
        }
        for (dst, n) in t[STYLE_LEVELS..STYLE_LEVELS + PITCHES]
            .iter_mut()
            .zip(&self.notes)
        {
            *dst = n.raw() + TOKEN_OFFSET;
        }
        t[140] = match self.drums {
            None => MASK_TOKEN,
            Some(d) => d as i32 + TOKEN_OFFSET,
        };
        t[141] = cfg_bin(self.cfg.musiccoca, 0.2, 40) + TOKEN_OFFSET;
        t[142] = cfg_bin(self.cfg.notes, 0.2, 40) + TOKEN_OFFSET;
        t[143] = cfg_bin(self.cfg.drums, 1.0, 8) + TOKEN_OFFSET;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_spec_1_8() {
        let c = Conditioning {
            style: Some([660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22]),
            ..Default::default()
        };
        let t = c.tokens();
        assert_eq!(
            &t[..12],
            &[667, 1023, 302, 213, 864, 848, 398, 864, 626, 77, 408, 29]
        );
        assert!(t[12..141].iter().all(|&v| v == 6));
        assert_eq!(&t[141..], &[27, 17, 9]);
    }

    #[test]
    fn six_style_levels_mask_the_finer_six() {
        let c = Conditioning {
            style: Some([660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22]),
            style_levels: StyleLevels::Coarse6,
            ..Default::default()
        };
        let t = c.tokens();
        assert_eq!(&t[..12], &[667, 1023, 302, 213, 864, 848, 6, 6, 6, 6, 6, 6]);
        assert_eq!(
            &t[12..],
            &Conditioning {
                style_levels: StyleLevels::All12,
                ..c.clone()
            }
            .tokens()[12..]
        );
        let masked = Conditioning { style: None, ..c };
        assert!(masked.tokens()[..12].iter().all(|&v| v == MASK_TOKEN));
    }

    #[test]
    fn style_levels_are_six_or_twelve() {
        assert_eq!(StyleLevels::from_count(6), Ok(StyleLevels::Coarse6));
        assert_eq!(StyleLevels::from_count(12), Ok(StyleLevels::All12));
        assert_eq!(StyleLevels::default().count(), 12);
        for n in [0, 5, 7, 11, 13] {
            let e = StyleLevels::from_count(n).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("style levels is {n}, but must be 6 or 12")
            );
        }
    }

    #[test]
    fn cfg_bins_edges() {
        assert_eq!(cfg_bin(7.0, 0.2, 40), 40);
        assert_eq!(cfg_bin(100.0, 0.2, 40), 40);
        assert_eq!(cfg_bin(-5.0, 0.2, 40), 0);
        assert_eq!(cfg_bin(7.0, 1.0, 8), 8);
        assert_eq!(cfg_bin(5.0, 0.2, 40), 30);
        assert_eq!(cfg_bin(2.0, 0.2, 40), 15);
        // Half-to-even: (0.5 + 1) / 1 = 1.5 -> 2; (1.5 + 1) = 2.5 -> 2.
        assert_eq!(cfg_bin(0.5, 1.0, 8), 2);
        assert_eq!(cfg_bin(1.5, 1.0, 8), 2);
    }
}
