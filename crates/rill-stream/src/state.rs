//! Persisted stream state: a whole [`Snapshot`] (language model, codec, undecoded
//! tokens, note tracker, controls, sampling) as one state file, so a stream
//! continues bit-identically in another process.
//!
//! The format is the language model's state file (`rill_mrt2::session_file`,
//! `rill-state v1`), which already holds the LM state, sampling and conditioning
//! (style and its fed level count, drums, CFG and the pianoroll values the note tracker gives), checks the
//! model, precision and weights and validates every LM field. The stream adds:
//! * the codec state arrays as F32 tensors `codec/<name>` (validated by
//!   [`CodecState::import`]: every array present once, exact shape, finite);
//! * metadata `stream`, JSON `{"pending": null | [12 ids], "notes": [128 codes],
//!   "onset_mode": 0|1, "unmask_width": 0..=255}`: the tokens the LM produced but the
//!   codec has not decoded (each in its level), each pitch's note state
//!   (0 idle, 1 onset, 2 sustain, 3 onset released) and the tracker's settings.
//!
//! The stored conditioning's pianoroll must be what the stored note tracker gives.
//! Anything else in the file is an error; every error names the field. The codec
//! arrays are checked last (the `codec_state` fuzz target covers their import; the
//! `session_file` one, on small files, everything before it).

use std::path::{Path, PathBuf};

use rill_checkpoint::{Checkpoint, CheckpointError};
use rill_mrt2::conditioning::Conditioning;
use rill_mrt2::sampler::{LEVEL, RESERVED};
use rill_mrt2::session_file::{self, ModelId, SessionData};
use rill_mrt2::{ModelError, Mrt2, LEVELS};
use rill_spectrostream::{Codec, CodecState};
use serde::{Deserialize, Serialize};

use crate::generator::Snapshot;
use crate::notes::NoteTracker;
use crate::pipeline::FramePipeline;

/// Prefix of the codec state arrays.
const CODEC: &str = "codec/";
/// Metadata key of the stream part.
const STREAM: &str = "stream";

/// The name errors use for a state given as bytes.
const BYTES_NAME: &str = "(state bytes)";

impl Snapshot {
    /// The one constructor of a running stream's snapshot: `pipe`'s LM state,
    /// sampling and undecoded tokens, the style, drums and CFG of `controls`
    /// (its pianoroll is `notes`'s), the codec state and the note tracker.
    pub fn capture(
        pipe: &FramePipeline,
        controls: &Conditioning,
        codec: CodecState,
        notes: NoteTracker,
    ) -> Snapshot {
        let session = pipe.session();
        Snapshot {
            lm: session.state().clone(),
            codec,
            pending: pipe.pending(),
            style: controls.style,
            style_levels: controls.style_levels,
            drums: controls.drums,
            cfg: controls.cfg,
            sampling: session.sampling(),
            notes,
        }
    }

    /// The conditioning the next frame uses: style, drums, CFG and the note
    /// tracker's pianoroll values.
    pub fn conditioning(&self) -> Conditioning {
        Conditioning {
            style: self.style,
            style_levels: self.style_levels,
            notes: self.notes.values(),
            drums: self.drums,
            cfg: self.cfg,
        }
    }

    /// The snapshot as the bytes of a state file for the model `lm` (which records
    /// its model, precision and weights fingerprint).
    pub fn to_bytes(&self, lm: &Mrt2) -> Vec<u8> {
        self.to_bytes_for(&ModelId::of(lm))
    }

    fn data(&self) -> SessionData {
        let extra = self
            .codec
            .export()
            .into_iter()
            .map(|(name, shape, v)| (format!("{CODEC}{name}"), shape, v))
            .collect();
        let stream = StreamMeta {
            pending: self.pending.map(|p| p.iter().map(|&t| t as u64).collect()),
            notes: self
                .notes
                .state_codes()
                .into_iter()
                .map(u64::from)
                .collect(),
            onset_mode: self.notes.onset_mode as u64,
            unmask_width: self.notes.unmask_width as u64,
        };
        SessionData {
            state: self.lm.clone(),
            sampling: self.sampling,
            conditioning: self.conditioning(),
            extra,
            meta: vec![(STREAM.to_string(), stream.to_json())],
        }
    }

    /// Reads a state file's bytes (untrusted: every field is validated, see the
    /// module doc) for the model `lm` and the codec `codec`.
    pub fn from_bytes(bytes: &[u8], lm: &Mrt2, codec: &Codec) -> Result<Snapshot, ModelError> {
        parse(
            Path::new(BYTES_NAME),
            bytes.to_vec(),
            &ModelId::of(lm),
            codec,
        )
    }

    /// As [`Snapshot::to_bytes`], for a model known by its [`ModelId`] only.
    pub fn to_bytes_for(&self, id: &ModelId) -> Vec<u8> {
        self.data()
            .to_bytes(id)
            // The names are this module's (`codec/…`, `stream`), never the format's
            // own, and the codec exports shapes that match its values.
            .expect("a snapshot's arrays and names are always writable")
    }

    /// As [`Snapshot::from_bytes`], for a model known by its [`ModelId`] only
    /// (what the fuzz target runs, on a tiny model shape).
    pub fn from_bytes_for(
        bytes: &[u8],
        id: &ModelId,
        codec: &Codec,
    ) -> Result<Snapshot, ModelError> {
        parse(Path::new(BYTES_NAME), bytes.to_vec(), id, codec)
    }

    /// Writes the state file atomically (`PATH.partial`, renamed when complete).
    pub fn save(&self, path: &Path, lm: &Mrt2) -> Result<(), ModelError> {
        rill_checkpoint::writer::write_bytes(path, &self.to_bytes(lm)).map_err(|e| {
            let reason = match e {
                CheckpointError::Io { source, .. } => format!("cannot write it: {source}"),
                other => other.to_string(),
            };
            ModelError::SessionFile {
                path: path.to_path_buf(),
                reason,
            }
        })
    }

    /// Reads and validates a state file written by [`Snapshot::save`].
    pub fn load(path: &Path, lm: &Mrt2, codec: &Codec) -> Result<Snapshot, ModelError> {
        let bytes = std::fs::read(path).map_err(|e| ModelError::SessionFile {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        parse(path, bytes, &ModelId::of(lm), codec)
    }
}

fn parse(path: &Path, bytes: Vec<u8>, id: &ModelId, codec: &Codec) -> Result<Snapshot, ModelError> {
    let err = |reason: String| ModelError::SessionFile {
        path: PathBuf::from(path),
        reason,
    };
    let ckpt = Checkpoint::from_bytes(path, bytes).map_err(|e| match e {
        CheckpointError::NotSafetensors { reason, .. } => err(format!(
            "not a readable state file ({reason}); it may be truncated or corrupt"
        )),
        other => ModelError::from(other),
    })?;
    let data = session_file::read(&ckpt, id)?;
    drop(ckpt);

    let mut stream = None;
    for (k, v) in &data.meta {
        if k != STREAM {
            return Err(err(format!("unknown metadata entry {k}")));
        }
        stream = Some(v.as_str());
    }
    let stream = stream.ok_or_else(|| {
        err(format!(
            "metadata has no {STREAM} part: a language-model session file (Session::save), not a stream state"
        ))
    })?;
    let (pending, notes) = parse_stream(stream, data.state.frame).map_err(err)?;
    let values = notes.values();
    if let Some(p) = (0..values.len()).find(|&p| values[p] != data.conditioning.notes[p]) {
        return Err(err(format!(
            "conditioning.notes[{p}] is {}, but the note tracker gives {} for pitch {p}",
            data.conditioning.notes[p].raw(),
            values[p].raw()
        )));
    }
    let mut arrays = Vec::with_capacity(data.extra.len());
    for (name, shape, v) in data.extra {
        let Some(short) = name.strip_prefix(CODEC) else {
            return Err(err(format!(
                "unknown tensor {name} (a state file holds lm/ and {CODEC} tensors)"
            )));
        };
        arrays.push((short.to_string(), shape, v));
    }
    let mut codec_state = codec.new_state();
    codec_state
        .import(&arrays)
        .map_err(|e| err(format!("codec state: {e}")))?;

    let c = data.conditioning;
    Ok(Snapshot {
        lm: data.state,
        codec: codec_state,
        pending,
        style: c.style,
        style_levels: c.style_levels,
        drums: c.drums,
        cfg: c.cfg,
        sampling: data.sampling,
        notes,
    })
}

type Pending = Option<[u32; LEVELS]>;

/// The `stream` metadata as stored; serde refuses unknown and missing fields
/// and wrong types, [`parse_stream`] the values.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamMeta {
    // In key order: the bytes of files written before serde did this.
    notes: Vec<u64>,
    onset_mode: u64,
    pending: Option<Vec<u64>>,
    unmask_width: u64,
}

impl StreamMeta {
    fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a struct of integers serialises")
    }
}

fn parse_stream(s: &str, frame: u64) -> Result<(Pending, NoteTracker), String> {
    let meta: StreamMeta = session_file::from_json(s, STREAM)?;
    let pending = match meta.pending {
        None => None,
        Some(a) if a.len() == LEVELS => {
            if frame == 0 {
                return Err(format!(
                    "{STREAM}.pending holds tokens, but lm/frame is 0 (no frame was generated)"
                ));
            }
            let mut p = [0u32; LEVELS];
            for (k, (d, &x)) in p.iter_mut().zip(&a).enumerate() {
                let lo = (RESERVED + LEVEL * k) as u64;
                let hi = lo + LEVEL as u64 - 1;
                if !(lo..=hi).contains(&x) {
                    return Err(format!(
                        "{STREAM}.pending[{k}] is {x}, outside level {k}'s ids {lo}..={hi}"
                    ));
                }
                *d = x as u32;
            }
            Some(p)
        }
        Some(a) => {
            return Err(format!(
                "{STREAM}.pending holds {} ids, not {LEVELS} (or null)",
                a.len()
            ))
        }
    };
    let small = |k: &str, x: u64, max: u64| -> Result<u8, String> {
        (x <= max)
            .then_some(x as u8)
            .ok_or_else(|| format!("{STREAM}.{k} is {x}, not an integer 0..={max}"))
    };
    let onset_mode = small("onset_mode", meta.onset_mode, 1)?;
    let unmask_width = small("unmask_width", meta.unmask_width, 255)?;
    let notes = NoteTracker::from_state_codes(&meta.notes, onset_mode, unmask_width)
        .map_err(|e| format!("{STREAM}.notes: {e}"))?;
    Ok((pending, notes))
}
