//! The bytes of MeCab's compiled dictionary files: `sys.dic` and `unk.dic` (header,
//! Darts double array, tokens, features), with every size checked when opened and
//! every offset checked where it is read.

use std::ops::Deref;

use crate::TextError;

const MAGIC: u32 = 0xef71_8f77;
const VERSION: u32 = 102;
pub(super) const HEADER: usize = 72;

/// Bytes of one file: mapped, or owned (tests, fuzzing).
pub(super) enum Blob {
    Map(memmap2::Mmap),
    Vec(Vec<u8>),
}

impl Deref for Blob {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Blob::Map(m) => m,
            Blob::Vec(v) => v,
        }
    }
}

pub(super) fn le32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

pub(super) fn le16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

pub(super) fn bad(file: &str, reason: impl Into<String>) -> TextError {
    TextError::Dictionary {
        file: file.to_string(),
        line: None,
        reason: reason.into(),
    }
}

#[derive(Clone, Copy)]
pub(super) struct Token {
    pub(super) lc: u16,
    pub(super) rc: u16,
    pub(super) wcost: i16,
    pub(super) feature: u32,
}

/// `sys.dic` or `unk.dic`: header, Darts double array, tokens, features.
pub(super) struct Dic {
    data: Blob,
    da_units: usize,
    tokens: usize,
    tok_off: usize,
    feat_off: usize,
    feat_len: usize,
}

impl Dic {
    pub(super) fn new(data: Blob, file: &str) -> Result<Dic, TextError> {
        let len = data.len();
        if len < HEADER {
            return Err(bad(
                file,
                format!("{len} bytes, shorter than its 72-byte header"),
            ));
        }
        let u = |i: usize| le32(&data, i * 4).unwrap_or(0);
        if (u(0) ^ MAGIC) as usize != len {
            return Err(bad(
                file,
                "not a MeCab dictionary of this size (its magic number does not match; a \
                 truncated or foreign file?)",
            ));
        }
        if u(1) != VERSION {
            return Err(bad(
                file,
                format!("MeCab dictionary version {}, not {VERSION}", u(1)),
            ));
        }
        let (dsize, tsize, fsize) = (u(6) as usize, u(7) as usize, u(8) as usize);
        let end = HEADER
            .checked_add(dsize)
            .and_then(|x| x.checked_add(tsize))
            .and_then(|x| x.checked_add(fsize));
        if end.is_none_or(|e| e > len) {
            return Err(bad(
                file,
                format!("its header claims {dsize} + {tsize} + {fsize} bytes of data; the file has {len}"),
            ));
        }
        if dsize % 8 != 0 || tsize % 16 != 0 {
            return Err(bad(
                file,
                "its header's array or token size is not a whole number of entries",
            ));
        }
        Ok(Dic {
            da_units: dsize / 8,
            tokens: tsize / 16,
            tok_off: HEADER + dsize,
            feat_off: HEADER + dsize + tsize,
            feat_len: fsize,
            data,
        })
    }

    /// Double-array unit `i` (base, check); out of range reads as a unit nothing matches.
    #[inline]
    pub(super) fn unit(&self, i: usize) -> (i32, u32) {
        if i >= self.da_units {
            return (0, u32::MAX);
        }
        let o = HEADER + i * 8;
        match (le32(&self.data, o), le32(&self.data, o + 4)) {
            (Some(b), Some(c)) => (b as i32, c),
            _ => (0, u32::MAX),
        }
    }

    /// Darts `commonPrefixSearch`: (value, byte length) of every key that prefixes `key`.
    pub(super) fn common_prefix(&self, key: &[u8], out: &mut Vec<(u32, usize)>) {
        out.clear();
        let mut b = self.unit(0).0 as u32;
        for (i, &k) in key.iter().enumerate() {
            let (n, c) = self.unit(b as usize);
            if b == c && n < 0 {
                out.push(((-(n as i64) - 1) as u32, i));
            }
            let p = b.wrapping_add(u32::from(k) + 1) as usize;
            let (nb, c) = self.unit(p);
            if b == c {
                b = nb as u32;
            } else {
                return;
            }
        }
        let (n, c) = self.unit(b as usize);
        if b == c && n < 0 {
            out.push(((-(n as i64) - 1) as u32, key.len()));
        }
    }

    /// Darts `exactMatchSearch`.
    pub(super) fn exact(&self, key: &[u8]) -> Option<u32> {
        let mut b = self.unit(0).0 as u32;
        for &k in key {
            let p = b.wrapping_add(u32::from(k) + 1) as usize;
            let (nb, c) = self.unit(p);
            if b == c {
                b = nb as u32;
            } else {
                return None;
            }
        }
        let (n, c) = self.unit(b as usize);
        (b == c && n < 0).then(|| (-(n as i64) - 1) as u32)
    }

    pub(super) fn token(&self, i: usize) -> Option<Token> {
        if i >= self.tokens {
            return None;
        }
        let d = self
            .data
            .get(self.tok_off + i * 16..self.tok_off + i * 16 + 16)?;
        Some(Token {
            lc: u16::from_le_bytes([d[0], d[1]]),
            rc: u16::from_le_bytes([d[2], d[3]]),
            wcost: i16::from_le_bytes([d[6], d[7]]),
            feature: u32::from_le_bytes([d[8], d[9], d[10], d[11]]),
        })
    }

    /// The NUL-terminated feature at `offset` ("" when it is out of range or not UTF-8).
    pub(super) fn feature(&self, offset: u32) -> &str {
        let section = &self.data[self.feat_off..self.feat_off + self.feat_len];
        let Some(s) = section.get(offset as usize..) else {
            return "";
        };
        let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
        std::str::from_utf8(&s[..end]).unwrap_or("")
    }

    /// The tokens of a double-array value: (first, count), clipped to the tokens present.
    pub(super) fn range(&self, value: u32) -> std::ops::Range<usize> {
        let first = (value >> 8) as usize;
        let n = (value & 0xff) as usize;
        first.min(self.tokens)..(first + n).min(self.tokens)
    }
}
