//! sentencepiece's `Normalizer` (`normalizer.cc`): the precompiled character map, the
//! user-defined-symbol matcher and the whitespace rules, byte for byte.
//!
//! The charsmap is read as sentencepiece reads it, not with `spm_precompiled` (the
//! Hugging Face crate behind `tokenizers`): that crate normalises grapheme by grapheme,
//! while sentencepiece takes the longest charsmap key at each byte position of the input,
//! whatever the graphemes; the two differ, e.g. when a key spans a grapheme boundary.
//! The charsmap is a little-endian `u32` trie size, a darts-clone double array of that
//! many bytes, then the NUL-separated replacement strings.

use super::trie::Trie;

/// A darts-clone double array, read from the charsmap's bytes.
pub struct DoubleArray {
    units: Vec<u32>,
}

fn has_leaf(u: u32) -> bool {
    (u >> 8) & 1 == 1
}
fn value(u: u32) -> u32 {
    u & ((1 << 31) - 1)
}
fn label(u: u32) -> u32 {
    u & ((1 << 31) | 0xff)
}
fn offset(u: u32) -> usize {
    ((u >> 10) << ((u & (1 << 9)) >> 6)) as usize
}

impl DoubleArray {
    /// darts-clone's `commonPrefixSearch` over `key`, capped at `max` results like
    /// sentencepiece's fixed result array: `(value, length)` of every key that is a
    /// prefix of `key`, shortest first. An index outside the array (a corrupt charsmap)
    /// ends the search, where C++ would read out of bounds.
    fn common_prefix_search(&self, key: &[u8], max: usize, out: &mut Vec<(u32, usize)>) {
        out.clear();
        let Some(&root) = self.units.first() else {
            return;
        };
        let mut pos = offset(root);
        for (i, &c) in key.iter().enumerate() {
            pos ^= c as usize;
            let Some(&unit) = self.units.get(pos) else {
                return;
            };
            if label(unit) != c as u32 {
                return;
            }
            pos ^= offset(unit);
            if has_leaf(unit) {
                let Some(&leaf) = self.units.get(pos) else {
                    return;
                };
                if out.len() < max {
                    out.push((value(leaf), i + 1));
                }
            }
        }
    }
}

/// The normaliser of one model.
pub struct Normalizer {
    charsmap: Option<(DoubleArray, Vec<u8>)>,
    /// User-defined symbols, kept as typed (not normalised).
    user_defined: Trie,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    escape_whitespaces: bool,
    treat_whitespace_as_suffix: bool,
}

const SPACE_SYMBOL: &[u8] = "\u{2581}".as_bytes();
const REPLACEMENT: &[u8] = "\u{fffd}".as_bytes();

/// sentencepiece's `OneCharLen`: the UTF-8 sequence length its first byte announces.
pub fn one_char_len(b: u8) -> usize {
    [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4][(b >> 4) as usize]
}

/// sentencepiece's `DecodeUTF8` validity: the length of the valid UTF-8 character at the
/// start of `s`, or `None` for a malformed sequence.
fn valid_char_len(s: &[u8]) -> Option<usize> {
    let n = match s[0] {
        0..=0x7f => return Some(1),
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return None,
    };
    std::str::from_utf8(s.get(..n)?).ok().map(|_| n)
}

impl Normalizer {
    /// Reads the spec; a charsmap sentencepiece refuses is an error.
    pub fn new(
        spec: &super::proto::NormalizerSpec,
        treat_whitespace_as_suffix: bool,
        user_defined: Trie,
    ) -> Result<Normalizer, String> {
        let blob = &spec.precompiled_charsmap;
        let charsmap = if blob.is_empty() {
            None
        } else {
            if blob.len() <= 4 {
                return Err("precompiled charsmap is broken (4 bytes or fewer)".into());
            }
            let size = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
            if size >= blob.len() {
                return Err(format!(
                    "precompiled charsmap: trie of {size} bytes exceeds the {}-byte blob",
                    blob.len()
                ));
            }
            // sentencepiece 0.2.1's checks (newer than the Darts code it reads with):
            // whole 1024-byte blocks of units, NUL-terminated replacement strings.
            if size == 0 || !size.is_multiple_of(1024) {
                return Err(format!(
                    "precompiled charsmap: trie of {size} bytes is not a positive multiple of 1024"
                ));
            }
            let trie = &blob[4..4 + size];
            let strings = blob[4 + size..].to_vec();
            if strings.last() != Some(&0) {
                return Err("precompiled charsmap: replacement strings not NUL-terminated".into());
            }
            let units: Vec<u32> = trie
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            Some((DoubleArray { units }, strings))
        };
        Ok(Normalizer {
            charsmap,
            user_defined,
            add_dummy_prefix: spec.add_dummy_prefix,
            remove_extra_whitespaces: spec.remove_extra_whitespaces,
            escape_whitespaces: spec.escape_whitespaces,
            treat_whitespace_as_suffix,
        })
    }

    /// `NormalizePrefix`: the normalised form of the start of `input` and how many
    /// input bytes it consumes (at least 1).
    fn prefix<'a>(&'a self, input: &'a [u8], scratch: &mut Vec<(u32, usize)>) -> (&'a [u8], usize) {
        let n = self.user_defined.longest_prefix(input);
        if n > 0 {
            return (&input[..n], n);
        }
        let mut longest = (0usize, 0u32);
        if let Some((array, strings)) = &self.charsmap {
            array.common_prefix_search(input, 32, scratch);
            // A replacement offset outside the strings counts as no match, as in
            // sentencepiece 0.2.1 (older versions read past the buffer).
            for &(v, len) in scratch
                .iter()
                .filter(|(v, _)| (*v as usize) < strings.len())
            {
                if longest.0 == 0 || len > longest.0 {
                    longest = (len, v);
                }
            }
            if longest.0 > 0 {
                let s = &strings[longest.1 as usize..];
                let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
                return (&s[..end], longest.0);
            }
        }
        match valid_char_len(input) {
            Some(n) => (&input[..n], n),
            None => (REPLACEMENT, 1),
        }
    }

    /// `Normalize`: the text the model segments (sentencepiece's `norm_to_orig` is not
    /// needed for ids).
    pub fn normalize(&self, text: &[u8]) -> Vec<u8> {
        let mut input = text;
        let mut out = Vec::with_capacity(text.len() * 3);
        let mut scratch = Vec::new();
        if input.is_empty() {
            return out;
        }
        if self.remove_extra_whitespaces {
            while !input.is_empty() {
                let (s, n) = self.prefix(input, &mut scratch);
                if s != b" " {
                    break;
                }
                input = &input[n..];
            }
        }
        if input.is_empty() {
            return out;
        }
        let space: &[u8] = if self.escape_whitespaces {
            SPACE_SYMBOL
        } else {
            b" "
        };
        if !self.treat_whitespace_as_suffix && self.add_dummy_prefix {
            out.extend_from_slice(space);
        }
        let mut is_prev_space = self.remove_extra_whitespaces;
        while !input.is_empty() {
            let (mut s, n) = self.prefix(input, &mut scratch);
            while is_prev_space && s.first() == Some(&b' ') {
                s = &s[1..];
            }
            if !s.is_empty() {
                for &b in s {
                    if self.escape_whitespaces && b == b' ' {
                        out.extend_from_slice(SPACE_SYMBOL);
                    } else {
                        out.push(b);
                    }
                }
                is_prev_space = s.last() == Some(&b' ');
            }
            input = &input[n..];
            if !self.remove_extra_whitespaces {
                is_prev_space = false;
            }
        }
        if self.remove_extra_whitespaces {
            while out.ends_with(space) {
                out.truncate(out.len() - space.len());
            }
        }
        if self.treat_whitespace_as_suffix && self.add_dummy_prefix {
            out.extend_from_slice(space);
        }
        out
    }
}
