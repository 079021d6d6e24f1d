//! The Unicode operations NeMo's English front end performs, on the tables of the
//! Python that ran the oracle (`unicode_tables.rs`, Unicode 14.0.0), so that an
//! accent, a singleton decomposition or a digit of another script is treated exactly
//! as upstream treats it.

use crate::unicode_tables as tables;

/// Where the code-point range `lo..=hi` lies against `cp` (`Equal`: it holds it), for
/// binary searches of the sorted range tables.
fn range_vs(lo: u32, hi: u32, cp: u32) -> std::cmp::Ordering {
    if hi < cp {
        std::cmp::Ordering::Less
    } else if lo > cp {
        std::cmp::Ordering::Greater
    } else {
        std::cmp::Ordering::Equal
    }
}

fn in_ranges(ranges: &[(u32, u32)], c: char) -> bool {
    let cp = c as u32;
    ranges
        .binary_search_by(|&(lo, hi)| range_vs(lo, hi, cp))
        .is_ok()
}

/// General category Mn (what `english_text_preprocessing` drops after NFD).
pub fn is_nonspacing_mark(c: char) -> bool {
    in_ranges(tables::NONSPACING, c)
}

/// General category Nd: what Python's `\d` matches in a `str` pattern.
pub fn is_decimal_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && in_ranges(tables::DECIMAL, c))
}

/// Python's `str.isspace()` (it differs from `char::is_whitespace` on U+001C..U+001F).
pub fn is_py_space(c: char) -> bool {
    match c {
        '\t'..='\r' | '\u{1C}'..='\u{20}' => true,
        _ if (c as u32) < 0x85 => false,
        _ => tables::PY_WHITESPACE.binary_search(&(c as u32)).is_ok(),
    }
}

/// Python's `str.strip()` without arguments.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// Assigned in Unicode 14 (Python 3.11's `unicodedata`).
fn is_assigned(c: char) -> bool {
    c.is_ascii() || !in_ranges(tables::UNASSIGNED, c)
}

/// Appends `mapped` (Rust's case mapping of `c`) where Python 3.11 has the same
/// mapping, else `c`: Rust's tables are newer, and case pairs only ever gain mappings
/// to newly encoded characters, so a mapping from or to a character Unicode 14 lacks
/// is one Python does not have.
fn push_py_case(c: char, mapped: impl Iterator<Item = char> + Clone, out: &mut String) {
    if is_assigned(c) && mapped.clone().all(is_assigned) {
        out.extend(mapped);
    } else {
        out.push(c);
    }
}

/// `s` case-mapped as Python maps it: `ascii` for an ASCII string, else each
/// character by `map` (see [`push_py_case`]).
fn py_case<I: Iterator<Item = char> + Clone>(
    s: &str,
    ascii: fn(&str) -> String,
    map: fn(char) -> I,
) -> String {
    if s.is_ascii() {
        return ascii(s);
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        push_py_case(c, map(c), &mut out);
    }
    out
}

/// Python's `str.upper()` (full, unconditional case mapping, e.g. `ß` → `SS`).
pub fn py_upper(s: &str) -> String {
    py_case(s, str::to_ascii_uppercase, char::to_uppercase)
}

/// Python's `str.lower()` character by character (without the final-sigma rule, which
/// only matters for Greek words; rill compares the result with ASCII only).
pub fn py_lower(s: &str) -> String {
    py_case(s, str::to_ascii_lowercase, char::to_lowercase)
}

/// Python's `c.isupper()` for one character.
pub fn py_isupper(c: char) -> bool {
    is_assigned(c) && c.is_uppercase()
}

/// Python's `c.islower()` for one character.
fn py_islower(c: char) -> bool {
    is_assigned(c) && c.is_lowercase()
}

/// General category Lt (title case), which `str.isupper()` rejects: fixed since Unicode 5.
fn is_titlecase(c: char) -> bool {
    matches!(c as u32, 0x1C5 | 0x1C8 | 0x1CB | 0x1F2 | 0x1F88..=0x1F8F | 0x1F98..=0x1F9F
        | 0x1FA8..=0x1FAF | 0x1FBC | 0x1FCC | 0x1FFC)
}

/// Python's `str.isupper()`: at least one upper-case character and no lower-case or
/// title-case one.
pub fn py_str_isupper(s: &str) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if py_islower(c) || is_titlecase(c) {
            return false;
        }
        cased |= py_isupper(c);
    }
    cased
}

fn combining_class(c: char) -> u8 {
    let cp = c as u32;
    if cp < 0x300 {
        return 0;
    }
    match tables::COMBINING.binary_search_by(|&(lo, hi, _)| range_vs(lo, hi, cp)) {
        Ok(i) => tables::COMBINING[i].2,
        Err(_) => 0,
    }
}

const HANGUL_S_BASE: u32 = 0xAC00;
const HANGUL_L_BASE: u32 = 0x1100;
const HANGUL_V_BASE: u32 = 0x1161;
const HANGUL_T_BASE: u32 = 0x11A7;
const HANGUL_T_COUNT: u32 = 28;
const HANGUL_N_COUNT: u32 = 21 * 28;
const HANGUL_S_COUNT: u32 = 19 * HANGUL_N_COUNT;

/// Appends the full canonical decomposition of `c` (not yet canonically ordered).
fn decompose_into(c: char, out: &mut Vec<char>) {
    let cp = c as u32;
    if c.is_ascii() {
        out.push(c);
        return;
    }
    if (HANGUL_S_BASE..HANGUL_S_BASE + HANGUL_S_COUNT).contains(&cp) {
        let s = cp - HANGUL_S_BASE;
        let jamo = [
            HANGUL_L_BASE + s / HANGUL_N_COUNT,
            HANGUL_V_BASE + (s % HANGUL_N_COUNT) / HANGUL_T_COUNT,
            HANGUL_T_BASE + s % HANGUL_T_COUNT,
        ];
        let n = if jamo[2] == HANGUL_T_BASE { 2 } else { 3 };
        out.extend(jamo[..n].iter().filter_map(|&j| char::from_u32(j)));
        return;
    }
    match tables::DECOMPOSITIONS.binary_search_by_key(&cp, |&(k, _)| k) {
        Ok(i) => out.extend(tables::DECOMPOSITIONS[i].1.chars()),
        Err(_) => out.push(c),
    }
}

/// Canonical ordering: a stable sort of every run of non-starters by combining class.
fn canonical_order(chars: &mut [char]) {
    let mut i = 0;
    while i < chars.len() {
        if combining_class(chars[i]) == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && combining_class(chars[i]) != 0 {
            i += 1;
        }
        chars[start..i].sort_by_key(|&c| combining_class(c));
    }
}

/// `english_text_preprocessing(text, lower=False)` (NeMo `tokenizer_utils.py`): NFD,
/// drop every Mn character (accents), then map the typographic quotes ’ ” “ to ASCII.
pub fn english_text_preprocessing(text: &str) -> String {
    if text.is_ascii() {
        return text.to_string();
    }
    let mut decomposed = Vec::with_capacity(text.len());
    for c in text.chars() {
        decompose_into(c, &mut decomposed);
    }
    canonical_order(&mut decomposed);
    decomposed
        .into_iter()
        .filter(|&c| c.is_ascii() || !is_nonspacing_mark(c))
        .map(|c| match c {
            '\u{2019}' => '\'',
            '\u{201D}' | '\u{201C}' => '"',
            other => other,
        })
        .collect()
}

/// Unicode NFC (`unicodedata.normalize("NFC", text)` on Python 3.11's tables): full
/// canonical decomposition, canonical ordering, then canonical composition of every
/// unblocked pair (UAX #15). Text that is certainly NFC already comes back borrowed.
/// Hand-written on the generated tables rather than taken from a crate, so that the
/// Unicode version is the oracle's (a newer crate also composes characters that
/// Unicode 14 does not have).
pub fn nfc(text: &str) -> std::borrow::Cow<'_, str> {
    if is_certainly_nfc(text) {
        return text.into();
    }
    let mut chars = Vec::with_capacity(text.len());
    for c in text.chars() {
        decompose_into(c, &mut chars);
    }
    canonical_order(&mut chars);
    let mut out: Vec<char> = Vec::with_capacity(chars.len());
    // The last starter and the combining class of the last character kept after it
    // (None: nothing after the starter yet).
    let mut starter: Option<usize> = None;
    let mut last_class: Option<u8> = None;
    for c in chars {
        let class = combining_class(c);
        if let Some(s) = starter {
            let blocked = last_class.is_some_and(|last| last >= class);
            if !blocked {
                if let Some(composite) = compose_pair(out[s], c) {
                    out[s] = composite;
                    continue;
                }
            }
        }
        if class == 0 {
            starter = Some(out.len());
            last_class = None;
        } else {
            last_class = Some(class);
        }
        out.push(c);
    }
    out.into_iter().collect::<String>().into()
}

fn compose_pair(first: char, second: char) -> Option<char> {
    let (a, b) = (first as u32, second as u32);
    let l_count = 19;
    let v_count = 21;
    if (HANGUL_L_BASE..HANGUL_L_BASE + l_count).contains(&a)
        && (HANGUL_V_BASE..HANGUL_V_BASE + v_count).contains(&b)
    {
        let s =
            HANGUL_S_BASE + ((a - HANGUL_L_BASE) * v_count + (b - HANGUL_V_BASE)) * HANGUL_T_COUNT;
        return char::from_u32(s);
    }
    if (HANGUL_S_BASE..HANGUL_S_BASE + HANGUL_S_COUNT).contains(&a)
        && (a - HANGUL_S_BASE).is_multiple_of(HANGUL_T_COUNT)
        && (HANGUL_T_BASE + 1..HANGUL_T_BASE + HANGUL_T_COUNT).contains(&b)
    {
        return char::from_u32(a + (b - HANGUL_T_BASE));
    }
    tables::COMPOSITIONS
        .binary_search_by_key(&(a, b), |&(x, y, _)| (x, y))
        .ok()
        .and_then(|i| char::from_u32(tables::COMPOSITIONS[i].2))
}

/// True if NFC certainly leaves `s` unchanged: no character with a non-zero combining
/// class and none that NFC could replace or join to what precedes it. Dictionary lines
/// are NFC-normalised by NeMo; rill checks instead (the shipped files pass).
pub fn is_certainly_nfc(s: &str) -> bool {
    // Below U+0300 (UTF-8 lead bytes < 0xCC) nothing has a combining class or composes
    // with what precedes it.
    if s.bytes().all(|b| b < 0xCC) {
        return true;
    }
    s.chars()
        .all(|c| c.is_ascii() || (combining_class(c) == 0 && !in_ranges(tables::NFC_TRAILING, c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_the_oracles_unicode() {
        assert_eq!(tables::UNICODE_VERSION, "14.0.0");
    }

    #[test]
    fn accents_are_dropped_and_quotes_mapped() {
        assert_eq!(
            english_text_preprocessing("Café naïve ’x’ “y”"),
            "Cafe naive 'x' \"y\""
        );
        // A singleton decomposition (KELVIN SIGN → K) and a Hangul syllable (jamo stay).
        assert_eq!(english_text_preprocessing("\u{212A}"), "K");
        assert_eq!(
            english_text_preprocessing("\u{D55C}"),
            "\u{1112}\u{1161}\u{11AB}"
        );
    }

    #[test]
    fn nfc_recomposes_what_survives_decomposition() {
        // Hangul (LV and LVT syllables), Bengali and Balinese two-part vowels; Kannada
        // U+0CCB loses its Mn first part, so the rest stays apart (values from Python:
        // NFC(NFD(text) without Mn)).
        let cases = [
            (
                "\u{D55C}\u{AD6D}\u{C5B4} \u{AC00}",
                "\u{D55C}\u{AD6D}\u{C5B4} \u{AC00}",
            ),
            (
                "\u{09CB}\u{0CCB}\u{1B06}",
                "\u{09CB}\u{0CC2}\u{0CD5}\u{1B06}",
            ),
            ("plain é", "plain e"),
        ];
        for (text, want) in cases {
            let pre = english_text_preprocessing(text);
            assert_ne!(pre, text);
            assert_eq!(nfc(&pre), want);
        }
    }

    #[test]
    fn case_mapping_is_pythons() {
        let table = include_str!("../tests/data/python_case_14.txt");
        let hex_chars = |field: &str| -> String {
            field
                .split_whitespace()
                .map(|h| char::from_u32(u32::from_str_radix(h, 16).unwrap()).unwrap())
                .collect()
        };
        let mut listed = std::collections::HashMap::new();
        for line in table.lines() {
            let fields: Vec<&str> = line.split(';').collect();
            let cp = u32::from_str_radix(fields[0], 16).unwrap();
            listed.insert(
                cp,
                (hex_chars(fields[1]), hex_chars(fields[2]), fields[3] == "1"),
            );
        }
        assert!(listed.len() > 2800, "{}", listed.len());
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let same = c.to_string();
            let (upper, lower, isupper) =
                listed
                    .remove(&(c as u32))
                    .unwrap_or((same.clone(), same, false));
            let s = c.to_string();
            assert_eq!(py_upper(&s), upper, "upper of U+{:04X}", c as u32);
            assert_eq!(py_lower(&s), lower, "lower of U+{:04X}", c as u32);
            assert_eq!(py_isupper(c), isupper, "isupper of U+{:04X}", c as u32);
        }
    }

    #[test]
    fn python_whitespace_and_digits() {
        assert!(is_py_space('\u{1C}') && is_py_space(' ') && is_py_space('\u{3000}'));
        assert!(!is_py_space('\u{200B}') && !is_py_space('a'));
        assert!(is_decimal_digit('7') && is_decimal_digit('\u{0663}') && !is_decimal_digit('²'));
    }

    #[test]
    fn nfc_is_pythons() {
        // unicodedata.normalize("NFC", ...) on Python 3.11: blocked and unblocked marks,
        // reordering, singletons, Hangul, Indic two-part vowels, an excluded composition.
        let cases = [
            ("e\u{301}", "\u{e9}"),
            ("e\u{327}\u{301}", "\u{229}\u{301}"),
            ("e\u{301}\u{327}", "\u{229}\u{301}"),
            ("a\u{328}\u{301}\u{328}", "\u{105}\u{328}\u{301}"),
            ("\u{1100}\u{1161}\u{11a8}", "\u{ac01}"),
            ("\u{212b}\u{212a}", "\u{c5}K"),
            ("o\u{308}\u{304}", "\u{22b}"),
            ("\u{344}x", "\u{308}\u{301}x"),
            ("s\u{323}\u{307}", "\u{1e69}"),
            ("\u{915}\u{93c}", "\u{915}\u{93c}"),
            ("a\u{5ae}\u{300}\u{301}b", "\u{e0}\u{5ae}\u{301}b"),
            ("\u{9c7}\u{9be}", "\u{9cb}"),
            ("A\u{30a}\u{301}", "\u{1fa}"),
            ("A\u{300}\u{315}\u{300}", "\u{c0}\u{300}\u{315}"),
        ];
        for (text, want) in cases {
            assert_eq!(nfc(text), want, "{text:?}");
        }
        assert!(py_str_isupper("ÄRGER'S") && !py_str_isupper("ÄRGEr") && !py_str_isupper("12"));
        assert!(!py_str_isupper("A\u{1C5}") && py_str_isupper("\u{1C4}"));
    }

    #[test]
    fn nfc_check() {
        assert!(is_certainly_nfc("ÉCOLE  eɪˈkoʊl"));
        assert!(!is_certainly_nfc("E\u{301}COLE"));
        assert!(!is_certainly_nfc("\u{212B}"));
    }
}
