//! Hugging Face's `ByT5Tokenizer().encode(text)` (transformers 5.25, the slow
//! `PythonBackend` tokenizer that NeMo's `AutoTokenizer("google/byt5-small")` gives),
//! the front end of fr, it, vi and `text_ce_tokenizer` (spec `magpie_languages.md` §3).
//!
//! Byte b of the UTF-8 text is id `3 + b`; no normalisation, no case change, so NFD
//! text gives other ids than NFC text. What `encode` adds around that, all checked
//! against the recordings (`testdata/magpie/tokenizer_fr.json` etc.):
//! * the literal special tokens `<pad>` (0), `</s>` (1), `<unk>` (2) and
//!   `<extra_id_N>` (N = 0..=124, id 259 + N) in the text are single ids (HF splits
//!   on added tokens first);
//! * `<pad>`, `</s>` and `<unk>` eat the whitespace on both sides (`AddedToken`
//!   `lstrip`/`rstrip`, Python `str.isspace`); `<extra_id_N>` does not;
//! * `</s>` (1) is appended unless the ids already end with it
//!   (`_add_eos_if_not_present`).
//!
//! Written by hand (no crate reproduces HF's added-token rules), and simple: no
//! special token contains `<` or `>` inside, so no two can overlap and a left-to-right
//! scan finds exactly the matches HF's trie finds.

use crate::unicode::is_py_space;

/// Ids of one ByT5 table (the aggregated vocabulary adds the tokenizer's offset).
pub const PAD: u32 = 0;
pub const EOS: u32 = 1;
pub const UNK: u32 = 2;
/// Id of byte 0.
pub const BYTE_OFFSET: u32 = 3;
/// `extra_ids` of `ByT5Tokenizer()`; `<extra_id_N>` is `FIRST_EXTRA + N`.
pub const EXTRA_IDS: u32 = 125;
pub const FIRST_EXTRA: u32 = 259;
/// Ids of one table: 256 bytes + 3 specials + 125 extra ids.
pub const TABLE_SIZE: u32 = 384;

/// One piece of the text after splitting on special tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    /// Its id, and whether it strips the whitespace around it.
    Special(u32, bool),
}

/// The special token starting at the beginning of `s`, with its length.
fn special_at(s: &str) -> Option<(u32, bool, usize)> {
    let rest = s.strip_prefix('<')?;
    for (name, id) in [("pad>", PAD), ("/s>", EOS), ("unk>", UNK)] {
        if rest.starts_with(name) {
            return Some((id, true, 1 + name.len()));
        }
    }
    let digits = rest.strip_prefix("extra_id_")?;
    let end = digits.find('>')?;
    let number = &digits[..end];
    // Only the exact spellings "0".."124" are tokens ("07" is not).
    let n: u32 = number.parse().ok()?;
    if number.bytes().all(|b| b.is_ascii_digit()) && n.to_string() == number && n < EXTRA_IDS {
        Some((FIRST_EXTRA + n, false, 1 + "extra_id_".len() + end + 1))
    } else {
        None
    }
}

fn split(text: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while let Some(off) = text[i..].find('<') {
        i += off;
        if let Some((id, strips, len)) = special_at(&text[i..]) {
            if start < i {
                pieces.push(Piece::Text(&text[start..i]));
            }
            pieces.push(Piece::Special(id, strips));
            i += len;
            start = i;
        } else {
            i += 1;
        }
    }
    if start < text.len() {
        pieces.push(Piece::Text(&text[start..]));
    }
    pieces
}

/// `ByT5Tokenizer().encode(text)`: ids of one table (offset not applied), `</s>` last.
pub fn encode(text: &str) -> Vec<u32> {
    let mut pieces = split(text);
    // HF's loop over the tokens, in order: a stripping special trims its neighbours.
    for i in 0..pieces.len() {
        if let Piece::Special(_, true) = pieces[i] {
            if let Some(Piece::Text(t)) = pieces.get_mut(i + 1) {
                *t = t.trim_start_matches(is_py_space);
            }
            if let Some(Piece::Text(t)) = i.checked_sub(1).and_then(|j| pieces.get_mut(j)) {
                *t = t.trim_end_matches(is_py_space);
            }
        }
    }
    let mut ids = Vec::with_capacity(text.len() + 1);
    for p in pieces {
        match p {
            Piece::Text(t) => ids.extend(t.bytes().map(|b| BYTE_OFFSET + u32::from(b))),
            Piece::Special(id, _) => ids.push(id),
        }
    }
    if ids.last() != Some(&EOS) {
        ids.push(EOS);
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_specials_and_eos() {
        assert_eq!(encode(""), [1]);
        assert_eq!(encode("é"), [198, 172, 1]);
        assert_eq!(encode("x <pad> y"), [123, 0, 124, 1]);
        assert_eq!(encode("a <extra_id_124> b"), [100, 35, 383, 35, 101, 1]);
        assert_eq!(encode("</s></s>"), [1, 1]);
        assert_eq!(encode("a</s>"), [100, 1]);
        assert_eq!(encode("<extra_id_07>").len(), 14);
        assert_eq!(encode("<extra_id_125>").len(), 15);
        assert_eq!(encode("<<pad>"), [63, 0, 1]);
    }
}
