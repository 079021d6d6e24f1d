//! The Vietnamese normaliser, after NeMo's Vietnamese grammars (`nemo_text_processing`
//! 1.2.0, `text_normalization/vi`). NeMo cuts the whole text into tokens along the
//! cheapest path through weighted grammars: every semiotic token (number, decimal, date,
//! time, money, measure, fraction, ordinal, range) costs 1.1, money written with a word
//! ("10 đồng", "5 USD") 1.2, a punctuation mark 2.1, a word 100 (99 when it is only ASCII
//! letters), a Roman numeral with its key word 101; tokens need no space between them,
//! and a punctuation mark is a token only next to a number or word with no space between
//! (")-" alone is a word). This module does the same: the candidates at each position,
//! the cheapest path by dynamic programming over the text (equal costs: the shorter first
//! token), then NeMo's post-processing (no space before `, . ! ? : ; ) ] }`, none after
//! `( [ {`), so punctuation stays where it was.
//!
//! Readings: "hai mươi mốt", "hai mươi tư", "hai mươi lăm", "mười lăm", "một trăm linh
//! năm", "một nghìn linh năm", "hai nghìn hai mươi tư" (no "không trăm"), "nghìn",
//! "triệu", "tỷ", 13 to 21 digits as "… tỷ" and nine more; "12.345" grouped with dots;
//! decimals with "phẩy" and the fraction digit by digit ("1,65" → "một phẩy sáu năm");
//! "phần trăm"; currencies ("đồng", "đô la", "ơ rô", "50 xu"), "25k", "40tr", "1tr5",
//! "5.000đ/ngày" → "năm nghìn đồng trên ngày"; units with metric prefixes ("ki lô mét
//! trên giờ", "độ C", "mét vuông"); dates "ngày D tháng M năm Y" from "15/01/2024",
//! "ngày 2 tháng 9 năm 1945", "tháng 4/2024", "năm 200 TCN" (month 4 "tư", day 24 "hai
//! mươi bốn"); times "8 giờ 30 phút" from "8:30", "14h30", "17 giờ 30 phút" (zero minutes
//! dropped: "7:00" → "bảy giờ"); "thứ nhất", "thứ tư"; "3/4" → "ba phần tư", "2 1/2" →
//! "hai và một phần hai"; ranges of those with "đến" ("8h-17h"); Roman numerals only after
//! key words ("thế kỷ XX", "chương III").
//!
//! NeMo's quirks kept, as its costs make them: key words are case-sensitive ("Tháng
//! 4/2024" is a fraction, "Thế kỷ XXI" stays); "-" before digits is "âm" ("2-1" → "hai âm
//! một", "COVID-19" → "COVID âm mười chín"); a number is split so that a time or money
//! token takes the unit word after it ("60 phút" → "sáu không phút", "-200 đồng" → "âm
//! hai mươi không đồng", "năm 12345" → "năm một nghìn hai trăm ba mươi tư năm"); a number
//! before a word of "đ" and ASCII letters reads "đ" as "đồng" ("32 đi" → "ba mươi hai đồng
//! i"); a key word and Roman letters that begin the next word ("thế kỷ của" → "thế kỷ một
//! trăm ủa", "số di động" → "số năm trăm linh một động"); measures take no dotted number
//! ("384.400 km" → "ba trăm tám mươi tư. bốn trăm ki lô mét"); "3:0" → "ba giờ"; "12/2025"
//! → "mười hai phần hai nghìn hai mươi lăm". Text NeMo cannot cut at all (a "$" or "€"
//! before a number, a "%" standing alone) comes back as written, whitespace collapsed
//! (NeMo raises an error).
//!
//! No recursion; digit runs are looked at 64 digits at a time, so a longer run is read as
//! several numbers of at most 21 digits (where NeMo breaks equal-cost cuts of such runs
//! its own way, the numbers may be cut elsewhere).

use std::ops::Range;

mod dates;
mod forms;
mod tables;

use forms::{composites, dotted, fraction_at, one_space, run_digits, spaces};
use tables::{cardinal, is_cardinal, roman, ROMAN_KEYS};

const SEMIOTIC: u64 = 11_000;
const MINOR_ONLY: u64 = 10_999;
const MONEY_WORD: u64 = 12_000;
const PUNCT_COST: u64 = 21_000;
const WORD: u64 = 1_000_000;
const ASCII_WORD: u64 = 990_000;
const ROMAN: u64 = 1_010_000;

const PUNCT: &str = "!#%&'()*+,-./:;<=>?@^_`{|}~′″°";
const NOT_WORD: &str = "°′″$€₩£¥#%₫";
const NO_SPACE_BEFORE: &str = ",.!?:;)]}";
const NO_SPACE_AFTER: &str = "([{";

/// A candidate token: its length in bytes, cost and spoken form (`None`: kept as written).
type Cand = (usize, u64, Option<String>);

fn is_word_char(c: char) -> bool {
    !c.is_whitespace() && !c.is_ascii_digit() && !NOT_WORD.contains(c)
}

/// Every token that may start at `s` except words and punctuation.
fn semiotic(s: &str, out: &mut Vec<Cand>) {
    let first = s.chars().next().unwrap_or(' ');
    let keyword = ["ngày ", "tháng ", "năm ", "thứ "]
        .iter()
        .any(|k| s.starts_with(k));
    let numeric = first.is_ascii_digit()
        || (matches!(first, '-' | ',') && s[1..].starts_with(|c: char| c.is_ascii_digit()));
    if numeric || keyword {
        let parts = composites(s);
        for (l, _, w) in &parts {
            let rest = &s[*l..];
            let sp = one_space(rest);
            if !rest[sp..].starts_with('-') {
                continue;
            }
            let r = &rest[sp + 1..];
            let sp2 = one_space(r);
            for (l2, _, w2) in composites(&r[sp2..]) {
                let end = l + sp + 1 + sp2 + l2;
                out.push((end, SEMIOTIC, Some(format!("{w} đến {w2}"))));
            }
        }
        out.extend(parts.into_iter().map(|(l, c, w)| (l, c, Some(w))));
    }
    if numeric {
        out.extend(
            fraction_at(s)
                .into_iter()
                .map(|(l, w)| (l, SEMIOTIC, Some(w))),
        );
        let (neg, body, o) = match s.strip_prefix('-') {
            Some(b) => ("âm ", b, 1),
            None => ("", s, 0),
        };
        let r = run_digits(body).min(21);
        for l in 1..=r {
            if is_cardinal(&body[..l]) {
                out.push((o + l, SEMIOTIC, None));
            }
        }
        if let Some((l, d)) = dotted(body) {
            out.push((o + l, SEMIOTIC, Some(format!("{neg}{}", cardinal(&d)))));
        }
    }
    if let Some(r) = s.strip_prefix("thứ ") {
        let n = run_digits(r).min(21);
        for l in 1..=n {
            let w = match &r[..l] {
                "1" => "nhất".to_string(),
                "4" => "tư".to_string(),
                d if is_cardinal(d) => cardinal(d),
                _ => continue,
            };
            out.push(("thứ ".len() + l, SEMIOTIC, Some(format!("thứ {w}"))));
        }
    }
    for key in ROMAN_KEYS {
        let Some(r) = s.strip_prefix(key).and_then(|r| r.strip_prefix(' ')) else {
            continue;
        };
        let n = r
            .bytes()
            .take(16)
            .take_while(|b| b"IVXLCDMivxlcdm".contains(b))
            .count();
        for l in 1..=n {
            if let Some(v) = roman(&r[..l]) {
                let w = format!("{key} {}", cardinal(&v.to_string()));
                out.push((key.len() + 1 + l, ROMAN, Some(w)));
            }
        }
    }
}

/// Normalises Vietnamese text; `changes` receives (byte range in `text`, spoken form) for
/// every span replaced.
pub(super) fn normalize(text: &str, changes: &mut Vec<(Range<usize>, String)>) -> String {
    const NONE: u64 = u64::MAX;
    let n = text.len();
    let starts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    // end of the run of word characters from each char boundary, and the next place inside
    // it where another token may start ("COVID-19", "1,2,3", "pthế kỷ …")
    let mut run_end = vec![n; n + 1];
    let mut split = vec![n; n + 1];
    let mut next_split = n;
    for (i, c) in text.char_indices().rev() {
        let after = i + c.len_utf8();
        run_end[i] = if is_word_char(c) {
            if after < n && text[after..].starts_with(is_word_char) {
                run_end[after]
            } else {
                after
            }
        } else {
            i
        };
        split[i] = next_split;
        if matches!(c, '-' | ',') || keyword_at(&text[i..]) {
            next_split = i;
        }
    }
    // NeMo's tokens come in groups: marks, one number or word, marks; no space inside a
    // group, any between groups. Cheapest cost of text[i..] when a group starts at i
    // (`group`), and when i follows a group's number or word or one of its marks (`tail`).
    let mut group = vec![NONE; n + 1];
    let mut tail = vec![NONE; n + 1];
    let mut group_choice: Vec<Option<Cand>> = vec![None; n + 1];
    let mut tail_mark = vec![false; n + 1];
    tail[n] = 0;
    let next_group = |group: &[u64], i: usize| {
        let j = after_space(text, i);
        if j == n {
            0
        } else {
            group[j]
        }
    };
    let mut cands: Vec<Cand> = Vec::new();
    for &i in starts.iter().rev() {
        let s = &text[i..];
        let c = s.chars().next().unwrap_or(' ');
        if c.is_whitespace() {
            tail[i] = next_group(&group, i);
            continue;
        }
        let mark = PUNCT.contains(c);
        let after_mark = i + c.len_utf8();
        cands.clear();
        semiotic(s, &mut cands);
        if is_word_char(c) {
            let end = run_end[i];
            let mut ends = vec![end];
            let mut j = split[i];
            while j < end && ends.len() < 5 {
                ends.push(j);
                j = split[j];
            }
            for e in ends {
                let w = &text[i..e];
                let cost = if w.bytes().all(|b| b.is_ascii_alphabetic()) {
                    ASCII_WORD
                } else {
                    WORD
                };
                cands.push((e - i, cost, None));
            }
        }
        let mut best = NONE;
        let mut choice: Option<Cand> = None;
        if mark && group[after_mark] != NONE {
            best = PUNCT_COST + group[after_mark];
        }
        for cand in cands.drain(..) {
            let end = i + cand.0;
            if end > n || !text.is_char_boundary(end) || tail[end] == NONE {
                continue;
            }
            let total = tail[end] + cand.1;
            let shorter = choice.as_ref().is_none_or(|c| cand.0 < c.0);
            if total < best || (total == best && shorter) {
                best = total;
                choice = Some(cand);
            }
        }
        group[i] = best;
        group_choice[i] = choice;
        tail[i] = group[i];
        if mark && tail[after_mark] != NONE && PUNCT_COST + tail[after_mark] < tail[i] {
            tail[i] = PUNCT_COST + tail[after_mark];
            tail_mark[i] = true;
        }
    }
    if next_group(&group, 0) == NONE {
        return text.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    let mut tokens: Vec<String> = Vec::new();
    let mut i = after_space(text, 0);
    let mut in_group = true;
    while i < n {
        if !in_group {
            if text[i..].starts_with(char::is_whitespace) {
                i = after_space(text, i);
                in_group = true;
                continue;
            }
            if !tail_mark[i] {
                in_group = true;
                continue;
            }
        }
        let Some((len, _, spoken)) = (if in_group {
            group_choice[i].take()
        } else {
            None
        }) else {
            // a mark, before or after the group's number or word
            let len = text[i..].chars().next().map_or(1, char::len_utf8);
            tokens.push(text[i..i + len].to_string());
            i += len;
            continue;
        };
        let written = &text[i..i + len];
        let spoken = match spoken {
            Some(w) => w,
            None if written.bytes().any(|b| b.is_ascii_digit()) => number_words(written),
            None => written.to_string(),
        };
        if spoken != written {
            changes.push((i..i + len, spoken.clone()));
        }
        tokens.push(spoken);
        i += len;
        in_group = false;
    }
    post_process(&tokens.join(" "))
}

/// Whether a key word of a date, ordinal or Roman numeral starts `s`.
fn keyword_at(s: &str) -> bool {
    ["ngày ", "tháng "].iter().any(|k| s.starts_with(k))
        || ROMAN_KEYS
            .iter()
            .any(|k| s.strip_prefix(k).is_some_and(|r| r.starts_with(' ')))
}

/// A cardinal token kept as a number: "-25" → "âm hai mươi lăm".
fn number_words(w: &str) -> String {
    match w.strip_prefix('-') {
        Some(d) => format!("âm {}", cardinal(d)),
        None => cardinal(w),
    }
}

fn after_space(text: &str, i: usize) -> usize {
    i + spaces(&text[i..])
}

/// NeMo's Vietnamese post-processing: no space before `, . ! ? : ; ) ] }`, none after
/// `( [ {`.
fn post_process(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (k, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let next = chars
                .get(k + 1)
                .is_some_and(|n| NO_SPACE_BEFORE.contains(*n));
            let prev = k > 0 && NO_SPACE_AFTER.contains(chars[k - 1]);
            if next || prev {
                continue;
            }
        }
        out.push(c);
    }
    out.trim().to_string()
}
