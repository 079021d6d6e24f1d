//! MeCab 0.996's lattice as OpenJTalk 1.11 bundles it (`tokenizer.cpp` `lookup`,
//! `viterbi.cpp` `connect` and EOS), on the compiled dictionary OpenJTalk ships
//! (`sys.dic`, `unk.dic`, `matrix.bin`, `char.bin`, as `mecab-dict-index` writes them).
//!
//! The subtleties that decide segmentation are MeCab's: leading spaces skipped into the
//! node's `rlength`; unknown words made by invoke/group/length with `seekToOtherType`
//! chaining, `max_grouping_size` 24 and the read of the terminating NUL at the end of
//! the text; `utf8_to_ucs2` giving U+0000 for characters outside the BMP; the order of
//! the begin and end lists and the strict `<` tie-break.
//!
//! The dictionary is untrusted input: every size in a header is checked against the
//! bytes present when the files are opened, and every offset read from them (double
//! array units, token ranges, feature strings, connection ids, character categories) is
//! checked where it is used. A damaged dictionary gives a clear error when it is
//! opened, or odd output, never a panic or a read out of bounds.

use std::path::Path;

use super::dic::{bad, le16, le32, Blob, Dic};
use crate::TextError;

/// The four files, in the order [`Dictionary::from_bytes`] takes them.
pub const FILES: [&str; 4] = ["sys.dic", "unk.dic", "matrix.bin", "char.bin"];

/// `max_grouping_size` of MeCab 0.996.
const MAX_GROUPING: usize = 24;
/// MeCab looks words up in at most this many bytes.
const MAX_LOOKUP: usize = 65535;
/// Entries of `char.bin`'s code point map (U+0000..U+FFFE).
const CHAR_MAP: usize = 0xffff;

/// A `char.def` category bit field as `char.bin` stores it.
#[derive(Clone, Copy, Default)]
struct CharInfo(u32);

impl CharInfo {
    fn kinds(self) -> u32 {
        self.0 & 0x3ffff
    }
    fn default_type(self) -> usize {
        ((self.0 >> 18) & 0xff) as usize
    }
    fn length(self) -> usize {
        ((self.0 >> 26) & 0xf) as usize
    }
    fn group(self) -> bool {
        (self.0 >> 30) & 1 == 1
    }
    fn invoke(self) -> bool {
        (self.0 >> 31) & 1 == 1
    }
    fn is_kind_of(self, c: CharInfo) -> bool {
        self.kinds() & c.kinds() != 0
    }
}

/// OpenJTalk's compiled MeCab dictionary.
pub struct Dictionary {
    sys: Dic,
    unk: Dic,
    matrix: Blob,
    lsize: usize,
    rsize: usize,
    chars: Blob,
    char_off: usize,
    /// The unk.dic token range of each character category.
    unk_tokens: Vec<std::ops::Range<usize>>,
}

/// One word of the best path.
pub struct Word<'a> {
    pub surface: &'a str,
    pub feature: &'a str,
}

struct Node {
    start: usize,
    len: usize,
    rlen: usize,
    lc: u16,
    rc: u16,
    wcost: i16,
    cost: i64,
    prev: usize,
    unknown: bool,
    feature: u32,
}

/// MeCab's `utf8_to_ucs2`: (code unit, bytes used); 0 for anything outside the BMP.
fn utf8_to_ucs2(s: &[u8]) -> (u16, usize) {
    let len = s.len();
    let b0 = s[0];
    let cont = |i: usize| u16::from(s[i] & 0x3f);
    if b0 < 0x80 {
        (u16::from(b0), 1)
    } else if len >= 2 && b0 & 0xe0 == 0xc0 {
        ((u16::from(b0 & 0x1f) << 6) | cont(1), 2)
    } else if len >= 3 && b0 & 0xf0 == 0xe0 {
        ((u16::from(b0 & 0x0f) << 12) | (cont(1) << 6) | cont(2), 3)
    } else if len >= 4 && b0 & 0xf8 == 0xf0 {
        (0, 4)
    } else if len >= 5 && b0 & 0xfc == 0xf8 {
        (0, 5)
    } else if len >= 6 && b0 & 0xfe == 0xfc {
        (0, 6)
    } else {
        (0, 1)
    }
}

impl Dictionary {
    /// Maps the four files of `dir`.
    pub fn open(dir: &Path) -> Result<Dictionary, TextError> {
        let mut blobs = Vec::with_capacity(4);
        for name in FILES {
            let path = dir.join(name);
            let io = |source| TextError::Io {
                path: path.clone(),
                source,
            };
            let file = std::fs::File::open(&path).map_err(io)?;
            // SAFETY: the map is read-only; rill never writes dictionary files while they
            // are mapped (a concurrent external truncation could raise SIGBUS, the
            // accepted contract of every mmap-based loader).
            let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
            blobs.push(Blob::Map(map));
        }
        let mut it = blobs.into_iter();
        let mut next = || it.next().unwrap_or(Blob::Vec(Vec::new()));
        let (s, u, m, c) = (next(), next(), next(), next());
        Self::from_blobs(s, u, m, c, &dir.display().to_string())
    }

    /// The dictionary from the four files' bytes (`sys.dic`, `unk.dic`, `matrix.bin`,
    /// `char.bin`).
    pub fn from_bytes(
        sys: Vec<u8>,
        unk: Vec<u8>,
        matrix: Vec<u8>,
        chars: Vec<u8>,
    ) -> Result<Dictionary, TextError> {
        Self::from_blobs(
            Blob::Vec(sys),
            Blob::Vec(unk),
            Blob::Vec(matrix),
            Blob::Vec(chars),
            "",
        )
    }

    fn from_blobs(
        sys: Blob,
        unk: Blob,
        matrix: Blob,
        chars: Blob,
        dir: &str,
    ) -> Result<Dictionary, TextError> {
        let name = |f: &str| {
            if dir.is_empty() {
                f.to_string()
            } else {
                format!("{dir}/{f}")
            }
        };
        let sys = Dic::new(sys, &name("sys.dic"))?;
        let unk = Dic::new(unk, &name("unk.dic"))?;

        let file = name("matrix.bin");
        let (lsize, rsize) = match (le16(&matrix, 0), le16(&matrix, 2)) {
            (Some(l), Some(r)) => (usize::from(l), usize::from(r)),
            _ => return Err(bad(&file, "shorter than its 4-byte header")),
        };
        if matrix.len() != 4 + 2 * lsize * rsize {
            return Err(bad(
                &file,
                format!(
                    "{} bytes; a {lsize} × {rsize} connection matrix takes {}",
                    matrix.len(),
                    4 + 2 * lsize * rsize
                ),
            ));
        }

        let file = name("char.bin");
        let Some(csize) = le32(&chars, 0) else {
            return Err(bad(&file, "shorter than its 4-byte header"));
        };
        let csize = csize as usize;
        let want = (csize.checked_mul(32))
            .and_then(|n| n.checked_add(4 + 4 * CHAR_MAP))
            .filter(|&n| n == chars.len());
        if want.is_none() {
            return Err(bad(
                &file,
                format!(
                    "{} bytes does not fit {csize} categories and the 65,535-entry character map",
                    chars.len()
                ),
            ));
        }
        let mut unk_tokens = Vec::with_capacity(csize);
        for i in 0..csize {
            let raw = &chars[4 + 32 * i..4 + 32 * (i + 1)];
            let Some(end) = raw.iter().position(|&b| b == 0) else {
                return Err(bad(
                    &file,
                    format!("category name {i} is not NUL-terminated"),
                ));
            };
            let Some(value) = unk.exact(&raw[..end]) else {
                return Err(bad(
                    &name("unk.dic"),
                    format!(
                        "has no entry for the character category {:?} of char.bin",
                        String::from_utf8_lossy(&raw[..end])
                    ),
                ));
            };
            unk_tokens.push(unk.range(value));
        }
        let dict = Dictionary {
            sys,
            unk,
            matrix,
            lsize,
            rsize,
            chars,
            char_off: 4 + 32 * csize,
            unk_tokens,
        };
        Ok(dict)
    }

    fn info(&self, code: u16) -> CharInfo {
        let code = usize::from(code);
        if code >= CHAR_MAP {
            // C MeCab reads one entry past its map here; rill reads none.
            return CharInfo(0);
        }
        CharInfo(le32(&self.chars, self.char_off + 4 * code).unwrap_or(0))
    }

    fn char_info(&self, s: &[u8]) -> (CharInfo, usize) {
        let (code, len) = utf8_to_ucs2(s);
        (self.info(code), len)
    }

    /// `connect` cost of `left` then a node with left id `lc` (0 out of range).
    fn cost(&self, rc: u16, lc: u16) -> i64 {
        let (rc, lc) = (usize::from(rc), usize::from(lc));
        if rc >= self.lsize || lc >= self.rsize {
            return 0;
        }
        let at = 4 + 2 * (rc + self.lsize * lc);
        i64::from(le16(&self.matrix, at).unwrap_or(0) as i16)
    }

    /// MeCab's `seekToOtherType`: (stop, info of the stopping character, its length,
    /// characters passed).
    fn seek_to_other_type(
        &self,
        s: &[u8],
        mut p: usize,
        end: usize,
        mut c: CharInfo,
    ) -> (usize, CharInfo, usize, usize) {
        let (mut clen, mut fail, mut mblen) = (0, CharInfo(0), 0);
        while p < end {
            let (f, l) = self.char_info(&s[p..end]);
            fail = f;
            mblen = l;
            if !c.is_kind_of(f) {
                break;
            }
            p += l;
            clen += 1;
            c = f;
        }
        (p.min(end), fail, mblen, clen)
    }

    fn unknown_nodes(
        &self,
        cinfo: CharInfo,
        begin: usize,
        end: usize,
        pos: usize,
        out: &mut Vec<Node>,
    ) {
        let Some(range) = self.unk_tokens.get(cinfo.default_type()) else {
            return;
        };
        for k in range.clone() {
            if let Some(t) = self.unk.token(k) {
                out.push(Node {
                    start: begin,
                    len: end - begin,
                    rlen: end - pos,
                    lc: t.lc,
                    rc: t.rc,
                    wcost: t.wcost,
                    cost: 0,
                    prev: 0,
                    unknown: true,
                    feature: t.feature,
                });
            }
        }
    }

    /// The words of MeCab's best path through `text`.
    pub fn parse<'a>(&'a self, text: &'a str) -> Vec<Word<'a>> {
        let s = text.as_bytes();
        let len = s.len();
        let mut nodes = vec![Node {
            start: 0,
            len: 0,
            rlen: 0,
            lc: 0,
            rc: 0,
            wcost: 0,
            cost: 0,
            prev: usize::MAX,
            unknown: false,
            feature: 0,
        }];
        // Nodes ending at each byte, oldest first (MeCab walks them newest first).
        let mut ends: Vec<Vec<usize>> = vec![Vec::new(); len + 1];
        ends[0].push(0);
        let mut found = Vec::new();
        let mut created: Vec<Node> = Vec::new();
        let space = self.info(0x20);
        for pos in 0..len {
            if ends[pos].is_empty() {
                continue;
            }
            created.clear();
            let end = if len - pos >= MAX_LOOKUP {
                pos + MAX_LOOKUP
            } else {
                len
            };
            let (begin, cinfo, first_len, _) = self.seek_to_other_type(s, pos, end, space);
            self.sys.common_prefix(&s[begin..end], &mut found);
            for &(value, l) in &found {
                for j in self.sys.range(value) {
                    if let Some(t) = self.sys.token(j) {
                        created.push(Node {
                            start: begin,
                            len: l,
                            rlen: begin - pos + l,
                            lc: t.lc,
                            rc: t.rc,
                            wcost: t.wcost,
                            cost: 0,
                            prev: 0,
                            unknown: false,
                            feature: t.feature,
                        });
                    }
                }
            }
            if begin < end && (created.is_empty() || cinfo.invoke()) {
                let mut begin3 = begin + first_len;
                if begin3 > end {
                    self.unknown_nodes(cinfo, begin, end, pos, &mut created);
                } else {
                    let mut group_end = usize::MAX;
                    if cinfo.group() {
                        let (p, _, _, clen) = self.seek_to_other_type(s, begin3, end, cinfo);
                        if clen <= MAX_GROUPING {
                            self.unknown_nodes(cinfo, begin, p, pos, &mut created);
                        }
                        group_end = p;
                    }
                    for _ in 1..=cinfo.length() {
                        if begin3 > end {
                            break;
                        }
                        if begin3 == group_end {
                            continue;
                        }
                        self.unknown_nodes(cinfo, begin, begin3, pos, &mut created);
                        // At the end MeCab reads the terminating NUL: U+0000, one byte.
                        let (ci, l) = if begin3 >= end {
                            (self.info(0), 1)
                        } else {
                            self.char_info(&s[begin3..end])
                        };
                        if !cinfo.is_kind_of(ci) {
                            break;
                        }
                        begin3 += l;
                    }
                    if created.is_empty() {
                        self.unknown_nodes(cinfo, begin, begin3.min(end), pos, &mut created);
                    }
                }
            }
            // MeCab's begin list holds the nodes newest first.
            for mut r in created.drain(..).rev() {
                if r.start + r.len > len || pos + r.rlen > len {
                    continue;
                }
                let mut best = i64::MAX;
                let mut best_node = usize::MAX;
                for &l in ends[pos].iter().rev() {
                    let left = &nodes[l];
                    let c = left.cost + self.cost(left.rc, r.lc) + i64::from(r.wcost);
                    if c < best || best_node == usize::MAX {
                        best = c;
                        best_node = l;
                    }
                }
                r.prev = best_node;
                r.cost = best;
                let x = pos + r.rlen;
                ends[x].push(nodes.len());
                nodes.push(r);
            }
        }
        // EOS connects to the nodes ending at the last position reached.
        let mut best_node = usize::MAX;
        if let Some(p) = (0..=len).rev().find(|&p| !ends[p].is_empty()) {
            let mut best = i64::MAX;
            for &l in ends[p].iter().rev() {
                let left = &nodes[l];
                let c = left.cost + self.cost(left.rc, 0);
                if c < best || best_node == usize::MAX {
                    best = c;
                    best_node = l;
                }
            }
        }
        let mut path = Vec::new();
        let mut cur = best_node;
        while cur != 0 && cur < nodes.len() {
            let n = &nodes[cur];
            let dic = if n.unknown { &self.unk } else { &self.sys };
            path.push(Word {
                surface: text.get(n.start..n.start + n.len).unwrap_or(""),
                feature: dic.feature(n.feature),
            });
            cur = n.prev;
        }
        path.reverse();
        path
    }
}
