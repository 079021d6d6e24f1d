//! Live note state → pianoroll values, with the onset/sustain semantics of the
//! upstream C++ engine (spec §5.4, `midi_note_tracker.cpp`).
//!
//! A note-on starts an *onset*; after one frame has used it, the note is
//! *sustained*. A note-off during the onset frame is still heard once as an onset
//! (*onset released*), then the pitch is idle. Values per frame:
//! * onset mode 0 (default, "mask onsets"): any active pitch → 3 (on);
//! * onset mode 1: onset → 2, sustain → 1.
//!
//! Pitches that are not active are masked (the model decides), except within
//! `unmask_width` semitones of an active note, where they are explicitly off; a
//! width ≥ 127 makes every idle pitch explicitly off.

use rill_mrt2::conditioning::{check_pitch, NoteValue, PITCHES};
use rill_mrt2::InvalidValue;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    Onset,
    Sustain,
    OnsetReleased,
}

/// Per-pitch note state of one live stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteTracker {
    state: [State; PITCHES],
    /// 0: active pitches are "on" (3); 1: onsets (2) and sustains (1) are distinguished.
    pub onset_mode: u8,
    /// Semitones around active notes that are explicitly "off" instead of masked.
    pub unmask_width: u8,
}

impl Default for NoteTracker {
    fn default() -> Self {
        NoteTracker {
            state: [State::Idle; PITCHES],
            onset_mode: 0,
            unmask_width: 0,
        }
    }
}

impl NoteTracker {
    /// Starts `pitch` (0..=127) with an onset.
    pub fn note_on(&mut self, pitch: u8) -> Result<(), InvalidValue> {
        check_pitch(pitch)?;
        self.on(pitch as usize);
        Ok(())
    }

    /// Releases `pitch` (0..=127).
    pub fn note_off(&mut self, pitch: u8) -> Result<(), InvalidValue> {
        check_pitch(pitch)?;
        self.off(pitch as usize);
        Ok(())
    }

    fn on(&mut self, p: usize) {
        self.state[p] = State::Onset;
    }

    fn off(&mut self, p: usize) {
        let s = &mut self.state[p];
        *s = match *s {
            State::Onset => State::OnsetReleased,
            State::Sustain => State::Idle,
            other => other,
        };
    }

    /// Releases every note.
    pub fn all_off(&mut self) {
        for p in 0..PITCHES {
            self.off(p);
        }
    }

    /// Makes exactly `held` the set of sounding pitches: new ones start with an
    /// onset, missing ones are released (what a client sending its held set means).
    /// An out-of-range pitch is an error and changes nothing.
    pub fn set_held(&mut self, held: &[u8]) -> Result<(), InvalidValue> {
        let mut want = [false; PITCHES];
        for &p in held {
            check_pitch(p)?;
            want[p as usize] = true;
        }
        for (p, &want) in want.iter().enumerate() {
            let active = matches!(self.state[p], State::Onset | State::Sustain);
            if want && !active {
                self.on(p);
            } else if !want && active {
                self.off(p);
            }
        }
        Ok(())
    }

    /// Pitches currently sounding (held, or released during their onset frame).
    pub fn active(&self) -> impl Iterator<Item = u8> + '_ {
        (0..PITCHES as u8).filter(|&p| self.state[p as usize] != State::Idle)
    }

    /// The pianoroll values for the next frame.
    pub fn values(&self) -> [NoteValue; PITCHES] {
        let default = if self.unmask_width >= 127 {
            NoteValue::Off
        } else {
            NoteValue::Masked
        };
        let mut v = [default; PITCHES];
        let u = self.unmask_width as i32;
        for p in self.active() {
            if u > 0 && u < 127 {
                let lo = (p as i32 - u).max(0) as usize;
                let hi = (p as i32 + u).min(PITCHES as i32 - 1) as usize;
                for q in &mut v[lo..=hi] {
                    if *q == NoteValue::Masked {
                        *q = NoteValue::Off;
                    }
                }
            }
        }
        for p in self.active() {
            v[p as usize] = match (self.onset_mode, self.state[p as usize]) {
                (0, _) => NoteValue::On,
                (_, State::Sustain) => NoteValue::Sustain,
                _ => NoteValue::Onset,
            };
        }
        v
    }

    /// Called after a frame used [`NoteTracker::values`]: onsets become sustains,
    /// notes released during their onset become idle.
    pub fn advance(&mut self) {
        for s in &mut self.state {
            *s = match *s {
                State::Onset => State::Sustain,
                State::OnsetReleased => State::Idle,
                other => other,
            };
        }
    }
}

/// State-file codes of the per-pitch states (see `state.rs`).
const CODES: [(State, u8); 4] = [
    (State::Idle, 0),
    (State::Onset, 1),
    (State::Sustain, 2),
    (State::OnsetReleased, 3),
];

impl NoteTracker {
    /// Each pitch's state as a code: 0 idle, 1 onset, 2 sustain, 3 onset released.
    pub(crate) fn state_codes(&self) -> Vec<u8> {
        self.state
            .iter()
            .map(|s| CODES.iter().find(|(c, _)| c == s).map_or(0, |&(_, n)| n))
            .collect()
    }

    /// Rebuilds a tracker from [`Self::state_codes`] through the checked note
    /// methods (sustained notes: on, then one frame; onsets: on; released onsets:
    /// on, off). A wrong count or an unknown code is an error naming the pitch.
    pub(crate) fn from_state_codes(
        codes: &[u64],
        onset_mode: u8,
        unmask_width: u8,
    ) -> Result<NoteTracker, String> {
        if codes.len() != PITCHES {
            return Err(format!(
                "{} note states, not one per MIDI pitch ({PITCHES})",
                codes.len()
            ));
        }
        let mut t = NoteTracker {
            onset_mode,
            unmask_width,
            ..Default::default()
        };
        let mut state = [State::Idle; PITCHES];
        for (p, &c) in codes.iter().enumerate() {
            state[p] = CODES
                .iter()
                .find(|&&(_, n)| n as u64 == c)
                .map(|&(s, _)| s)
                .ok_or_else(|| format!("note state of pitch {p} is {c}, not a code 0..=3"))?;
        }
        let pitches = |want: State| {
            (0..PITCHES as u8)
                .filter(|&p| state[p as usize] == want)
                .collect::<Vec<_>>()
        };
        let err = |e: InvalidValue| e.to_string();
        for p in pitches(State::Sustain) {
            t.note_on(p).map_err(err)?;
        }
        t.advance();
        for p in pitches(State::Onset) {
            t.note_on(p).map_err(err)?;
        }
        for p in pitches(State::OnsetReleased) {
            t.note_on(p).map_err(err)?;
            t.note_off(p).map_err(err)?;
        }
        debug_assert_eq!(t.state, state);
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onset_sustain_release() {
        let mut t = NoteTracker {
            onset_mode: 1,
            ..Default::default()
        };
        t.note_on(60).unwrap();
        assert_eq!(t.values()[60], NoteValue::Onset);
        assert_eq!(t.values()[61], NoteValue::Masked);
        t.advance();
        assert_eq!(t.values()[60], NoteValue::Sustain);
        t.note_off(60).unwrap();
        assert_eq!(t.values()[60], NoteValue::Masked);
        // Released during its onset frame: heard once as an onset.
        t.note_on(64).unwrap();
        t.note_off(64).unwrap();
        assert_eq!(t.values()[64], NoteValue::Onset);
        t.advance();
        assert_eq!(t.values()[64], NoteValue::Masked);
    }

    #[test]
    fn state_codes_round_trip() {
        let mut t = NoteTracker {
            onset_mode: 1,
            unmask_width: 3,
            ..Default::default()
        };
        t.set_held(&[10, 60, 127]).unwrap();
        t.advance();
        t.note_on(64).unwrap();
        t.note_on(0).unwrap();
        t.note_off(0).unwrap();
        let codes: Vec<u64> = t.state_codes().iter().map(|&c| c as u64).collect();
        assert_eq!((codes[60], codes[64], codes[0], codes[1]), (2, 1, 3, 0));
        assert_eq!(NoteTracker::from_state_codes(&codes, 1, 3), Ok(t));
        let mut bad = codes.clone();
        bad[77] = 4;
        let e = NoteTracker::from_state_codes(&bad, 0, 0).unwrap_err();
        assert!(e.contains("pitch 77"), "{e}");
        assert!(NoteTracker::from_state_codes(&codes[1..], 0, 0).is_err());
    }

    #[test]
    fn mode0_and_unmask_width() {
        let mut t = NoteTracker {
            unmask_width: 2,
            ..Default::default()
        };
        t.set_held(&[60]).unwrap();
        let v = t.values();
        assert_eq!(v[60], NoteValue::On);
        assert_eq!(v[58], NoteValue::Off);
        assert_eq!(v[62], NoteValue::Off);
        assert_eq!(v[57], NoteValue::Masked);
        t.unmask_width = 127;
        assert_eq!(t.values()[0], NoteValue::Off);
        t.set_held(&[]).unwrap();
        t.advance();
        assert_eq!(t.active().count(), 0);
    }
}
