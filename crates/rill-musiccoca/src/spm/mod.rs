//! SentencePiece **unigram** encoding, bit-exact with `sentencepiece` 0.2.1's
//! `EncodeAsIds`, reading the model file (`spm.model`) MusicCoCa ships; and upstream's
//! prompt preprocessing on top of it ([`Spm::encode_prompt`]).
//!
//! What is reproduced, from sentencepiece's sources (`sentencepiece_processor.cc`,
//! `normalizer.cc`, `model_interface.cc`, `unigram_model.cc`):
//! * loading: the checks of `ModelInterface::InitializePieces` (empty or repeated pieces,
//!   no or two `<unk>`, byte pieces without byte fallback or fewer than 256 with it), the
//!   charsmap checks of the normaliser; other model types than unigram are refused;
//! * normalisation: user-defined symbols kept as typed, the precompiled charsmap's longest
//!   match at each byte, U+FFFD for malformed UTF-8 (only reachable through a charsmap's
//!   replacement strings), leading/trailing/repeated whitespace removal, the `▁` dummy
//!   prefix (or suffix with `treat_whitespace_as_suffix`), whitespace escaping;
//! * segmentation: `EncodeOptimized`, sentencepiece's default Viterbi, including its
//!   arithmetic: a piece's candidate path score is computed in f64 (its score is a
//!   double), compared with the f32 best score so far and stored as f32; the unknown
//!   piece scores `min normal score - 10` in f32; a user-defined piece scores
//!   `length·max_score - 0.1`, where `max_score` starts at `FLT_MIN` (so it is about
//!   -0.1 when every score is negative); a later candidate replaces an earlier one only
//!   if strictly better; unused pieces never match; a character no piece of exactly its
//!   length covers also gets an unknown node;
//! * output: a run of unknown pieces becomes one `<unk>` id, or with byte fallback each
//!   unknown piece becomes the ids of its UTF-8 bytes' `<0xXX>` pieces.
//!
//! Not reproduced: the model's self-test samples (sentencepiece refuses a model whose
//! stored samples do not encode as stored; they are ignored here); a normal or unused
//! piece holding a NUL byte is cut there as in sentencepiece, but one cut to nothing or
//! to another piece's key is refused (sentencepiece's trie builder throws or misbehaves),
//! and a user-defined one is refused (sentencepiece aborts). A charsmap with more than 32
//! keys that are prefixes of one another at one position (none in real charsmaps) keeps
//! the 32 shortest here; sentencepiece 0.2.1's behaviour there was not checked.

mod normalizer;
mod proto;
mod trie;

use std::path::{Path, PathBuf};

use crate::Error;
use normalizer::{one_char_len, Normalizer};
use proto::PieceType;
use trie::Trie;

/// Positions of the text tower's input: upstream's `[1] + ids[:127]`, padded.
pub const TEXT_LEN: usize = 128;
/// The id upstream puts before every prompt's pieces (a constant, not the tokenizer's).
pub const TEXT_SOS_ID: i32 = 1;
/// The id upstream pads the text with.
pub const TEXT_PAD_ID: i32 = 0;

/// A loaded SentencePiece unigram model.
pub struct Spm {
    /// Type and score of every piece, by id.
    pieces: Vec<(PieceType, f32)>,
    /// The normal, user-defined and unused pieces, to their ids.
    trie: Trie,
    normalizer: Normalizer,
    unk_id: u32,
    /// With byte fallback, the id of `<0xXX>` for every byte.
    byte_ids: Option<Box<[u32; 256]>>,
    min_score: f32,
    max_score: f32,
}

/// Upstream's text-tower input for one prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextIds {
    /// `[1] + spm_ids[:127]`, then 0 up to 128 positions.
    pub ids: [i32; TEXT_LEN],
    /// The number of real positions, `min(len(spm_ids) + 1, 128)`.
    pub num_tokens: usize,
    /// The prompt's SentencePiece pieces before the cut to 127.
    pub pieces: usize,
}

impl TextIds {
    /// Upstream's paddings mask: 0.0 on the real positions, 1.0 after.
    pub fn paddings(&self) -> [f32; TEXT_LEN] {
        std::array::from_fn(|i| if i < self.num_tokens { 0.0 } else { 1.0 })
    }
}

/// A piece as sentencepiece's C-string tries see it: up to its first NUL.
fn trie_key(piece: &[u8]) -> &[u8] {
    piece.split(|&b| b == 0).next().unwrap_or(piece)
}

/// The name of a byte piece, `<0x%02X>`, as sentencepiece spells it.
fn byte_piece(b: u8) -> String {
    format!("<0x{b:02X}>")
}

impl Spm {
    /// Reads `spm.model` from `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Spm, Error> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                Error::MissingAsset {
                    path: path.to_path_buf(),
                    hint: "MusicCoCa's SentencePiece model is `resources/musiccoca/spm.model` \
                           in upstream's download (google/magenta-realtime-2)"
                        .into(),
                }
            } else {
                Error::Io {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })?;
        Spm::from_bytes(&bytes, path)
    }

    /// Reads a serialized model; `path` only names it in errors. A file sentencepiece
    /// would refuse (or one of another model type than unigram) is [`Error::BadAsset`].
    pub fn from_bytes(bytes: &[u8], path: impl AsRef<Path>) -> Result<Spm, Error> {
        let bad = |what: String| Error::BadAsset {
            path: PathBuf::from(path.as_ref()),
            what: format!("SentencePiece model: {what}"),
        };
        if bytes.len() > i32::MAX as usize {
            return Err(bad("larger than protobuf's 2 GiB limit".into()));
        }
        let model = proto::parse(bytes).map_err(|e| bad(format!("not a ModelProto: {e}")))?;
        if model.trainer.model_type != 1 {
            return Err(bad(format!(
                "model type {} (only unigram, 1, is supported)",
                model.trainer.model_type
            )));
        }
        let byte_fallback = model.trainer.byte_fallback;
        let mut normal = std::collections::HashSet::new();
        let mut reserved = std::collections::HashSet::new();
        let mut keys = std::collections::HashSet::new();
        let mut unk_id = None;
        let mut byte_ids = [u32::MAX; 256];
        let mut user_defined = Vec::new();
        let mut min_score = f32::MAX;
        let mut max_score = f32::MIN_POSITIVE;
        for (id, p) in model.pieces.iter().enumerate() {
            let id = id as u32;
            let shown = String::from_utf8_lossy(&p.piece);
            if p.piece.is_empty() {
                return Err(bad(format!("piece {id} is empty")));
            }
            let is_normal = matches!(
                p.kind,
                PieceType::Normal | PieceType::UserDefined | PieceType::Unused
            );
            let set = if is_normal {
                &mut normal
            } else {
                &mut reserved
            };
            if !set.insert(p.piece.as_slice()) {
                return Err(bad(format!("piece {id} {shown:?} is already defined")));
            }
            // sentencepiece's tries take C strings: a normal or unused piece is cut at its
            // first NUL; a user-defined one with a NUL makes sentencepiece abort.
            if p.piece.contains(&0) && is_normal {
                let key = trie_key(&p.piece);
                if key.is_empty() || p.kind == PieceType::UserDefined || !keys.insert(key) {
                    return Err(bad(format!(
                        "piece {id} {shown:?} holds a NUL byte sentencepiece cannot index"
                    )));
                }
            } else if is_normal && !keys.insert(&p.piece) {
                return Err(bad(format!(
                    "piece {id} {shown:?} collides with a piece cut at a NUL byte"
                )));
            }
            match p.kind {
                PieceType::UserDefined => user_defined.push(p.piece.as_slice()),
                PieceType::Unknown if unk_id.is_some() => {
                    return Err(bad(format!("a second unknown piece, {id} {shown:?}")))
                }
                PieceType::Unknown => unk_id = Some(id),
                PieceType::Byte => {
                    if !byte_fallback {
                        return Err(bad(format!(
                            "byte piece {shown:?} although byte_fallback is false"
                        )));
                    }
                    let b = (0..=255u8)
                        .find(|&b| byte_piece(b).as_bytes() == p.piece)
                        .ok_or_else(|| bad(format!("byte piece {shown:?} is invalid")))?;
                    byte_ids[b as usize] = id;
                }
                PieceType::Normal => {
                    min_score = min_score.min(p.score);
                    max_score = max_score.max(p.score);
                }
                _ => {}
            }
        }
        let unk_id = unk_id.ok_or_else(|| bad("no unknown piece (<unk>)".into()))?;
        let byte_ids = if byte_fallback {
            if byte_ids.contains(&u32::MAX) {
                return Err(bad(
                    "byte_fallback is true but not all 256 byte pieces are there".into(),
                ));
            }
            Some(Box::new(byte_ids))
        } else {
            None
        };
        if normal.is_empty() {
            return Err(bad("no normal, user-defined or unused pieces".into()));
        }
        let trie = Trie::new(
            model
                .pieces
                .iter()
                .enumerate()
                .filter(|(_, p)| {
                    matches!(
                        p.kind,
                        PieceType::Normal | PieceType::UserDefined | PieceType::Unused
                    )
                })
                .map(|(id, p)| (trie_key(&p.piece), id as u32)),
        );
        let user_defined = Trie::new(user_defined.into_iter().map(|p| (p, 0)));
        let normalizer = Normalizer::new(
            &model.normalizer,
            model.trainer.treat_whitespace_as_suffix,
            user_defined,
        )
        .map_err(bad)?;
        Ok(Spm {
            pieces: model.pieces.iter().map(|p| (p.kind, p.score)).collect(),
            trie,
            normalizer,
            unk_id,
            byte_ids,
            min_score,
            max_score,
        })
    }

    /// The number of pieces (ids are below it).
    pub fn vocab_size(&self) -> usize {
        self.pieces.len()
    }

    /// The id of the unknown piece.
    pub fn unk_id(&self) -> u32 {
        self.unk_id
    }

    /// The normalised text the model segments (`▁` for spaces, dummy prefix, …), as bytes:
    /// a charsmap can in principle produce malformed UTF-8.
    pub fn normalize(&self, text: &str) -> Vec<u8> {
        self.normalizer.normalize(text.as_bytes())
    }

    /// `EncodeAsIds(text)`: the ids of the best segmentation, exactly as sentencepiece
    /// 0.2.1 gives them.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let normalized = self.normalize(text);
        let mut ids = Vec::new();
        let mut prev_unk = false;
        for (piece, id) in self.viterbi(&normalized) {
            let is_unk = id == self.unk_id;
            match &self.byte_ids {
                Some(bytes) if is_unk => ids.extend(piece.iter().map(|&b| bytes[b as usize])),
                _ if is_unk && prev_unk => {}
                _ => ids.push(id),
            }
            prev_unk = is_unk;
        }
        ids
    }

    /// `EncodeOptimized`: the best path as `(piece bytes, id)`, unknown runs not merged.
    fn viterbi<'a>(&self, s: &'a [u8]) -> Vec<(&'a [u8], u32)> {
        #[derive(Clone, Copy)]
        struct Best {
            id: u32,
            score: f32,
            starts_at: Option<usize>,
        }
        let size = s.len();
        let unk_score = self.min_score - 10.0;
        let mut best = vec![
            Best {
                id: 0,
                score: 0.0,
                starts_at: None
            };
            size + 1
        ];
        let mut starts_at = 0;
        while starts_at < size {
            let here = best[starts_at].score;
            let mblen = one_char_len(s[starts_at]).min(size - starts_at);
            let mut has_single_node = false;
            self.trie.prefixes(&s[starts_at..], |length, id| {
                let (kind, score) = self.pieces[id as usize];
                if kind == PieceType::Unused {
                    return;
                }
                let score = if kind == PieceType::UserDefined {
                    f64::from(length as f32 * self.max_score) - 0.1
                } else {
                    f64::from(score)
                };
                let candidate = score + f64::from(here);
                let target = &mut best[starts_at + length];
                if target.starts_at.is_none() || candidate > f64::from(target.score) {
                    *target = Best {
                        id,
                        score: candidate as f32,
                        starts_at: Some(starts_at),
                    };
                }
                has_single_node |= length == mblen;
            });
            if !has_single_node {
                let candidate = unk_score + here;
                let target = &mut best[starts_at + mblen];
                if target.starts_at.is_none() || candidate > target.score {
                    *target = Best {
                        id: self.unk_id,
                        score: candidate,
                        starts_at: Some(starts_at),
                    };
                }
            }
            starts_at += mblen;
        }
        let mut out = Vec::new();
        let mut end = size;
        while end > 0 {
            let node = best[end];
            // Every end reached from a character start has a node; stop rather than
            // loop if that ever failed.
            let Some(start) = node.starts_at.filter(|&b| b < end) else {
                break;
            };
            out.push((&s[start..end], node.id));
            end = start;
        }
        out.reverse();
        out
    }

    /// Upstream's prompt preprocessing (`magenta_rt/musiccoca.py`, DBraun's
    /// `encode_text`): `ids = EncodeAsIds(prompt.lower())[:127]`, then `[1] + ids`
    /// padded with 0 to 128 positions. Lowercasing is Python's `str.lower()`
    /// ([`python_lower`]).
    pub fn encode_prompt(&self, prompt: &str) -> TextIds {
        let spm_ids = self.encode(&python_lower(prompt));
        let mut ids = [TEXT_PAD_ID; TEXT_LEN];
        ids[0] = TEXT_SOS_ID;
        let n = spm_ids.len().min(TEXT_LEN - 1);
        for (slot, &id) in ids[1..].iter_mut().zip(&spm_ids[..n]) {
            // Ids are below the piece count, which a < 2 GiB file keeps below i32::MAX.
            *slot = id as i32;
        }
        TextIds {
            ids,
            num_tokens: n + 1,
            pieces: spm_ids.len(),
        }
    }
}

/// Characters Rust's `char::to_lowercase` (Unicode 16+) lowercases but Python 3.11's
/// `str.lower()` (Unicode 14.0, the oracle's Python) leaves alone: case pairs added in
/// Unicode 15 and 16. `tests/spm.rs` compares the whole table with Python's.
const NEWER_THAN_PYTHON: &[(u32, u32)] = &[
    (0x1c89, 0x1c89),
    (0xa7cb, 0xa7cc),
    (0xa7ce, 0xa7ce),
    (0xa7d2, 0xa7d2),
    (0xa7d4, 0xa7d4),
    (0xa7da, 0xa7da),
    (0xa7dc, 0xa7dc),
    (0x10d50, 0x10d65),
    (0x16ea0, 0x16eb8),
];

/// Python's `str.lower()`: full Unicode lowercasing (`İ` becomes `i̇`), with the
/// final-sigma rule (`Σ` becomes `ς` at the end of a word, `σ` elsewhere), as Python 3.11
/// (Unicode 14.0) does it. Rust's `to_lowercase` implements the same rules on a newer
/// Unicode; the case pairs added since are left as they are, as Python 3.11 leaves them.
/// (The final-sigma context still uses Rust's newer cased/case-ignorable properties; they
/// differ from Python's only next to characters assigned after Unicode 14.)
pub fn python_lower(text: &str) -> String {
    let newer = |c: char| {
        NEWER_THAN_PYTHON
            .iter()
            .any(|&(a, b)| (a..=b).contains(&(c as u32)))
    };
    if !text.chars().any(newer) {
        return text.to_lowercase();
    }
    // Walk the input and Rust's lowercasing side by side: every character maps to the
    // characters of its own lowercase, except `Σ`, which maps to one context-dependent
    // character.
    let full = text.to_lowercase();
    let mut lowered = full.chars();
    let mut out = String::with_capacity(full.len());
    for c in text.chars() {
        let n = if c == 'Σ' {
            1
        } else {
            c.to_lowercase().count()
        };
        let mapped: String = lowered.by_ref().take(n).collect();
        if newer(c) {
            out.push(c);
        } else {
            out.push_str(&mapped);
        }
    }
    out
}
