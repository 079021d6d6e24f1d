//! A small writer of MeCab's compiled dictionary format (what `mecab-dict-index`
//! writes), for tests and fuzz seeds: tiny dictionaries to feed
//! [`super::Dictionary::from_bytes`]. Not a replacement for `mecab-dict-index` (no
//! `.def` parsing, no cost estimation).

use std::collections::BTreeMap;

/// One dictionary word: surface, left and right context ids, cost, feature CSV.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub surface: &'a str,
    pub left: u16,
    pub right: u16,
    pub cost: i16,
    pub feature: &'a str,
}

const MAGIC: u32 = 0xef71_8f77;

/// A `sys.dic` or `unk.dic` holding `entries` (entries of one surface share a key).
pub fn dic_file(entries: &[Entry]) -> Vec<u8> {
    let mut by_key: BTreeMap<&[u8], Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        by_key.entry(e.surface.as_bytes()).or_default().push(e);
    }
    let mut tokens = Vec::new();
    let mut features = Vec::new();
    let mut keys = Vec::new();
    let mut index = 0u32;
    for (key, group) in &by_key {
        keys.push((key.to_vec(), (index << 8) | group.len().min(255) as u32));
        for e in group.iter().take(255) {
            tokens.extend_from_slice(&e.left.to_le_bytes());
            tokens.extend_from_slice(&e.right.to_le_bytes());
            tokens.extend_from_slice(&0u16.to_le_bytes()); // posid
            tokens.extend_from_slice(&e.cost.to_le_bytes());
            tokens.extend_from_slice(&(features.len() as u32).to_le_bytes());
            tokens.extend_from_slice(&0u32.to_le_bytes()); // compound
            features.extend_from_slice(e.feature.as_bytes());
            features.push(0);
            index += 1;
        }
    }
    let units = double_array(&keys);
    let mut da = Vec::with_capacity(units.len() * 8);
    for (base, check) in units {
        da.extend_from_slice(&base.to_le_bytes());
        da.extend_from_slice(&check.to_le_bytes());
    }
    let len = 72 + da.len() + tokens.len() + features.len();
    let mut out = Vec::with_capacity(len);
    let header = [
        len as u32 ^ MAGIC,
        102,
        0,
        index,
        0,
        0,
        da.len() as u32,
        tokens.len() as u32,
        features.len() as u32,
        0,
    ];
    for h in header {
        out.extend_from_slice(&h.to_le_bytes());
    }
    let mut charset = [0u8; 32];
    charset[..5].copy_from_slice(b"UTF-8");
    out.extend_from_slice(&charset);
    out.extend_from_slice(&da);
    out.extend_from_slice(&tokens);
    out.extend_from_slice(&features);
    out
}

/// A Darts double array of `keys` (sorted, distinct; no NUL bytes) → values: a child
/// with code `c` (byte + 1, 0 for the key's end) of a node with base `b` sits at
/// `b + c` with check `b`; a key's end holds `-value - 1`.
fn double_array(keys: &[(Vec<u8>, u32)]) -> Vec<(i32, u32)> {
    let mut units: Vec<(i32, u32)> = vec![(0, 0)];
    let mut used = vec![true];
    let mut bases = std::collections::HashSet::new();
    let root = place(keys, 0, &mut units, &mut used, &mut bases);
    units[0].0 = root;
    units
}

fn place(
    keys: &[(Vec<u8>, u32)],
    depth: usize,
    units: &mut Vec<(i32, u32)>,
    used: &mut Vec<bool>,
    bases: &mut std::collections::HashSet<usize>,
) -> i32 {
    // Children: (code, range of keys).
    let mut children: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
    let mut i = 0;
    while i < keys.len() {
        let code = keys[i].0.get(depth).map_or(0, |&b| usize::from(b) + 1);
        let start = i;
        while i < keys.len() && keys[i].0.get(depth).map_or(0, |&b| usize::from(b) + 1) == code {
            i += 1;
        }
        children.push((code, start..i));
    }
    let mut base = 1;
    while bases.contains(&base)
        || children
            .iter()
            .any(|(c, _)| used.get(base + c).copied().unwrap_or(false))
    {
        base += 1;
    }
    bases.insert(base);
    for (c, _) in &children {
        let at = base + c;
        if units.len() <= at {
            units.resize(at + 1, (0, u32::MAX));
            used.resize(at + 1, false);
        }
        used[at] = true;
        units[at].1 = base as u32;
    }
    for (c, range) in children {
        if c == 0 {
            units[base].0 = -(keys[range.start].1 as i32) - 1;
        } else {
            let child = place(&keys[range], depth + 1, units, used, bases);
            units[base + c].0 = child;
        }
    }
    base as i32
}

/// A `matrix.bin`: the cost of a word with right id `r` followed by one with left id
/// `l` is `costs[r + lsize * l]`, as MeCab reads it (`lsize * rsize` costs, missing
/// ones 0).
pub fn matrix_file(lsize: u16, rsize: u16, costs: &[i16]) -> Vec<u8> {
    let n = usize::from(lsize) * usize::from(rsize);
    let mut out = Vec::with_capacity(4 + 2 * n);
    out.extend_from_slice(&lsize.to_le_bytes());
    out.extend_from_slice(&rsize.to_le_bytes());
    for i in 0..n {
        out.extend_from_slice(&costs.get(i).copied().unwrap_or(0).to_le_bytes());
    }
    out
}

/// A `char.def` entry as `char.bin` stores it: the categories it belongs to (bit
/// field), its default category, and that category's invoke, group and length.
pub fn char_info(kinds: u32, default_type: u32, length: u32, group: bool, invoke: bool) -> u32 {
    (kinds & 0x3ffff)
        | ((default_type & 0xff) << 18)
        | ((length & 0xf) << 26)
        | (u32::from(group) << 30)
        | (u32::from(invoke) << 31)
}

/// A `char.bin`: category names (at most 31 bytes each), then the info of every code
/// point below U+FFFF: `runs` of (first, last, info) over a default of `fallback`.
pub fn char_file(categories: &[&str], runs: &[(u16, u16, u32)], fallback: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 32 * categories.len() + 4 * 0xffff);
    out.extend_from_slice(&(categories.len() as u32).to_le_bytes());
    for name in categories {
        let mut field = [0u8; 32];
        let b = name.as_bytes();
        let n = b.len().min(31);
        field[..n].copy_from_slice(&b[..n]);
        out.extend_from_slice(&field);
    }
    let mut map = vec![fallback; 0xffff];
    for &(first, last, info) in runs {
        for slot in map
            .iter_mut()
            .take(usize::from(last) + 1)
            .skip(usize::from(first))
        {
            *slot = info;
        }
    }
    for v in map {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// A tiny dictionary in OpenJTalk's shape (a dozen naist-jdic words, its unknown-word
/// categories, a small matrix): the four files, in [`super::mecab::FILES`] order.
pub fn sample() -> [Vec<u8>; 4] {
    let w = |surface, id, cost, feature| Entry {
        surface,
        left: id,
        right: id,
        cost,
        feature,
    };
    let sys = dic_file(&[
        w(
            "今日",
            1,
            3394,
            "名詞,副詞可能,*,*,*,*,今日,キョウ,キョー,1/2,C3",
        ),
        w(
            "は",
            2,
            3143,
            "助詞,係助詞,*,*,*,*,は,ハ,ワ,0/1,名詞%F1/動詞%F2@0/形容詞%F2@0",
        ),
        w("晴れ", 3, 5153, "名詞,一般,*,*,*,*,晴れ,ハレ,ハレ,2/2,C4"),
        w(
            "です",
            4,
            3489,
            "助動詞,*,*,*,特殊・デス,基本形,です,デス,デス’,1/2,名詞%F2@1/動詞%F1/形容詞%F2@0",
        ),
        w("円", 5, 7132, "名詞,接尾,助数詞,*,*,*,円,エン,エン,1/2,C3"),
        w("二", 6, 2621, "名詞,数,*,*,*,*,二,ニ,ニ,1/1,C3"),
        w("２", 6, 2621, "名詞,数,*,*,*,*,２,ニ,ニ,1/1,C3"),
        w("０", 6, 2621, "名詞,数,*,*,*,*,０,ゼロ,ゼロ,1/2,C3"),
        w("、", 7, -2944, "記号,読点,*,*,*,*,、,、,、,*/*,*"),
        w("。", 7, -2944, "記号,句点,*,*,*,*,。,。,。,*/*,*"),
        w(
            "一時間",
            1,
            3000,
            "名詞,一般,*,*,*,*,一:時間,イチ:ジカン,イチ:ジカン,2/2:0/3,C1",
        ),
    ]);
    let unk = dic_file(&[
        w("DEFAULT", 7, 4190, "記号,一般,*,*,*,*,*"),
        w("SPACE", 7, 8094, "記号,空白,*,*,*,*,*"),
        w("KANJI", 3, 10654, "名詞,一般,*,*,*,*,*"),
        w("SYMBOL", 3, 15331, "名詞,サ変接続,*,*,*,*,*"),
        w("NUMERIC", 6, 25847, "名詞,数,*,*,*,*,*"),
        w("ALPHA", 3, 11820, "名詞,一般,*,*,*,*,*"),
        w("ALPHA", 0, 14043, "感動詞,*,*,*,*,*,*"),
        w("HIRAGANA", 3, 12341, "名詞,一般,*,*,*,*,*"),
        w("KATAKANA", 3, 10000, "名詞,一般,*,*,*,*,*"),
    ]);
    let costs: Vec<i16> = (0..64).map(|i| ((i * 37) % 400 - 150) as i16).collect();
    let matrix = matrix_file(8, 8, &costs);
    let cats = [
        "DEFAULT", "SPACE", "KANJI", "SYMBOL", "NUMERIC", "ALPHA", "HIRAGANA", "KATAKANA",
    ];
    let of = |t: u32, length, group, invoke| char_info(1 << t, t, length, group, invoke);
    let chars = char_file(
        &cats,
        &[
            (0x09, 0x0d, of(1, 0, true, false)),
            (0x20, 0x20, of(1, 0, true, false)),
            (0x21, 0x2f, of(3, 0, true, true)),
            (0x30, 0x39, of(4, 0, true, true)),
            (0x41, 0x5a, of(5, 0, true, true)),
            (0x61, 0x7a, of(5, 0, true, true)),
            (0x3000, 0x303f, of(3, 0, true, true)),
            (0x3041, 0x309f, of(6, 2, true, false)),
            (0x30a1, 0x30ff, of(7, 2, true, false)),
            (0x4e00, 0x9fff, of(2, 2, false, false)),
            (0xff10, 0xff19, of(4, 0, true, true)),
            (0xff21, 0xff3a, of(5, 0, true, true)),
            (0xff41, 0xff5a, of(5, 0, true, true)),
        ],
        of(0, 0, true, false),
    );
    [sys, unk, matrix, chars]
}
