//! The Mandarin normaliser, after NeMo's Chinese grammars (`nemo_text_processing` 1.2.0,
//! `text_normalization/zh`). NeMo tags the whole sentence at once and keeps the cheapest
//! path: every character it does not recognise costs 100, a run of punctuation 1, and
//! each class its own weight (cardinal, time, date, money, ordinal, whitelist 1.1, measure
//! 1.05, decimal 3.05, a fraction −2, a date −0.9, money written with 元 −1.9). This file
//! does the same: each class offers candidates at each character, and a shortest-path
//! pass over the characters picks the cheapest tagging, so NeMo's odd choices come out as
//! they do there.
//!
//! What it reads: cardinals ("25" → 二十五, "2000" → 两千, "12345" → 一万两千三百四十五,
//! "110" → 一百一十), signs ("-5" → 负五), "第N", decimals digit by digit after 点 (with
//! 万/亿 after them), fractions ("3/8" → 八分之三, "5%" → 百分之五, "100%" → 百分之百),
//! money ("$500" → 五百美元, "¥30" → 三十圆, "￥" → 人民币, "50元"), measures with
//! Latin units ("5kg" → 五千克, "36.6°C" → 三十六点六摄氏度), times ("10:30" →
//! 十点三十分, "14:00" → 十四点零分, "2点" → 两点, "2个小时" → 两个小时), dates
//! ("2024年1月5日" → 二零二四年一月五日, "2023-10-01", "5号" → 五日) and NeMo's
//! whitelist ("FIFA" → fifa, "O2O" → "O to O" with no-break spaces).
//!
//! NeMo's quirks kept: any number before 年 is a year read digit by digit ("20年" →
//! 二零年); "2024/12/31" is two fractions (一分之两千零二十四三十一分之二); "3:2" is a
//! time (三点二分); "85.5分" reads 八十五.五分 (分 is money); "88号" → 八八日; minute 32
//! is 三十三; a range of two dates keeps only the later values ("2015年至2018年" →
//! 二零一八年至); ASCII digits only (full-width ones are left as written). NeMo gives up
//! and returns the input as written for text with `"`, a "%" with no number before it,
//! "分之N" with no denominator, an ordinal range ("第1-3名", "第10章到第12章" is not one),
//! two measures in a row ("5kg3g") or a decimal amount with two currency names
//! ("7.2元人民币"); so does this (with runs of spaces still collapsed). Spaces are kept
//! as written, runs of them collapsed to one. Where NeMo's tagging is a tie between
//! equally cheap paths (a digit run longer than twelve digits cut into several numbers,
//! "¥3999.99" read 三九十九九点九九圆 after a currency sign), its pick depends on the
//! compiled automaton and is not reproduced.
//!
//! No recursion; the pass is linear in the text (digit and punctuation runs are measured
//! once), numbers longer than twelve digits are read as several numbers.

use std::ops::Range;

mod classes;
mod num;
mod tables;

use super::lattice::{cheapest, escape, tok, Tagged, Text, Tok};
use num::{cardinal, digit_by_digit};
use tables::{UNITS, WHITELIST};

/// Weights ×10 000 (NeMo's are in tenths and hundredths); the other classes' are in
/// `classes.rs`.
const WORD: i64 = 1_000_000;
const PUNCT: i64 = 10_000;
const CARDINAL: i64 = 11_000;
const ORDINAL: i64 = 11_000;
const DECIMAL: i64 = 30_500;
const MEASURE: i64 = 10_500;
const WHITELISTED: i64 = 11_000;

/// Most orderings NeMo's permutation search takes per group of tokens; past it the
/// output gets a space between groups.
const MAX_PERMUTATIONS: u64 = 729;

/// Quantity words allowed after a decimal or an amount.
const QUANTITY: &[&str] = &[
    "万", "十万", "百万", "千万", "亿", "十亿", "百亿", "千亿", "萬", "十萬", "百萬", "千萬", "億",
    "十億", "百億", "千億", "拾萬", "佰萬", "仟萬", "拾億", "佰億", "仟億", "拾万", "佰万", "仟万",
    "仟亿", "佰亿",
];

/// Unicode punctuation NeMo's punctuation tagger takes (general category P, less the
/// symbols it leaves to words).
fn is_punct(c: char) -> bool {
    matches!(
        c,
        '!' | '"' | '\'' | '(' | ')' | ',' | '-' | '.' | ':' | ';' | '?' | '\\' | '{' | '}'
    ) || matches!(c as u32, 0x2010..=0x2027 | 0x2030..=0x2043 | 0x2045..=0x2051 | 0x3001..=0x3003 | 0x3008..=0x3011 | 0x3014..=0x301f)
        || matches!(
            c,
            '¡' | '¿'
                | '«'
                | '»'
                | '·'
                | '！'
                | '＂'
                | '＃'
                | '＆'
                | '＇'
                | '（'
                | '）'
                | '，'
                | '－'
                | '．'
                | '／'
                | '：'
                | '；'
                | '？'
                | '＠'
                | '［'
                | '］'
                | '＿'
                | '｛'
                | '｝'
                | '｡'
                | '､'
        )
}

pub(super) fn normalize(text: &str, changes: &mut Vec<(Range<usize>, String)>) -> String {
    let trimmed = text.trim();
    let base = trimmed.as_ptr() as usize - text.as_ptr() as usize;
    // A `"` breaks NeMo's token parser whatever it is tagged as.
    if trimmed.contains('"') {
        return collapse(&escape(trimmed));
    }
    let t = Text::new(trimmed, is_punct, |_, _| false);
    match cheapest(&t, base, MAX_PERMUTATIONS, candidates, changes) {
        Tagged::Spoken(out) => collapse(&out),
        // Every char is at least a word: there is always a path.
        Tagged::Failed | Tagged::NoPath => collapse(&escape(trimmed)),
    }
}

/// Runs of spaces become one; no space at either end.
fn collapse(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        if c == ' ' && o.ends_with(' ') {
            continue;
        }
        o.push(c);
    }
    o.trim().to_string()
}

/// Every token NeMo's tagger could start at char `i`.
fn candidates(t: &Text, i: usize) -> Vec<Tok> {
    let c = t.chars[i].1;
    let mut v = vec![tok(i + 1, WORD, c.to_string(), 1)];
    let len = t.puncts[i];
    if len > 0 {
        v.push(tok(i + len, PUNCT, t.slice(i, i + len).to_string(), 1));
    }
    let rest = t.rest(i);
    for (w, spoken) in WHITELIST {
        if rest.starts_with(w) {
            v.push(tok(
                i + w.chars().count(),
                WHITELISTED,
                spoken.to_string(),
                1,
            ));
        }
    }
    numbers(t, i, &mut v);
    classes::money(t, i, &mut v);
    classes::dates(t, i, &mut v);
    classes::times(t, i, &mut v);
    v
}

/// Cardinals, decimals, ordinals, fractions and measures starting at `i`.
fn numbers(t: &Text, i: usize, v: &mut Vec<Tok>) {
    // Signs: "-" and 负 for cardinals; decimals and fractions also take 負.
    let (sign, at) = match t.at(i) {
        Some('-') => (1, i + 1),
        Some('负') => (1, i + 1),
        Some('負') => (2, i + 1),
        _ => (0, i),
    };
    if t.at(i) == Some('第') {
        ordinal(t, i, v);
    }
    if sign == 0 {
        classes::fraction_words(t, i, v);
        classes::bare_percent(t, i, v);
    }
    let nd = t.digits(at);
    if nd == 0 {
        return;
    }
    let neg = if sign > 0 { "负" } else { "" };
    let keys = if sign > 0 { 2 } else { 1 };
    for len in 1..=nd.min(12) {
        let s = t.slice(at, at + len);
        let Some(num) = cardinal(s) else { continue };
        let end = at + len;
        if sign < 2 {
            v.push(tok(end, CARDINAL, format!("{neg}{num}"), keys));
            for (u, name) in units(t, end) {
                v.push(tok(u, MEASURE, format!("{neg}{num}{name}"), 2 * keys));
                // NeMo's measure takes several amounts in a row ("5kg3g") as one token,
                // which its verbaliser then fails on.
                let at2 = u + usize::from(t.at(u) == Some('-'));
                let nd2 = t.digits(at2);
                for len2 in 1..=nd2.min(12) {
                    for (u2, _) in units(t, at2 + len2) {
                        v.push(Tok {
                            end: u2,
                            cost: MEASURE,
                            out: String::new(),
                            perms: 1,
                            fail: true,
                        });
                    }
                }
            }
        }
        classes::fractions(t, end, neg, &num, keys, v);
        // Decimals: "." and digits, then an optional quantity.
        if t.at(end) == Some('.') {
            let fd = t.digits(end + 1);
            for flen in fraction_lengths(fd) {
                let fe = end + 1 + flen;
                let frac = digit_by_digit(t.slice(end + 1, fe));
                let spoken = format!("{neg}{num}点{frac}");
                v.push(tok(fe, DECIMAL, spoken.clone(), keys + 1));
                classes::decimal_percent(t, fe, &spoken, keys + 1, v);
                for q in QUANTITY {
                    if let Some(ql) = t.starts(fe, q) {
                        v.push(tok(fe + ql, DECIMAL, format!("{spoken}{q}"), keys + 2));
                    }
                }
                for (u, name) in units(t, fe) {
                    v.push(tok(u, MEASURE, format!("{spoken}{name}"), 2 * (keys + 1)));
                }
            }
        }
    }
}

/// Lengths tried for the digits after a decimal point: all short ones and the whole run
/// (a long run is never cut in the middle: that would only cost more).
fn fraction_lengths(fd: usize) -> impl Iterator<Item = usize> {
    (1..=fd.min(24)).chain((fd > 24).then_some(fd))
}

/// Units NeMo's measure tagger knows right at `i`: (end, name).
fn units(t: &Text, i: usize) -> Vec<(usize, &'static str)> {
    let rest = t.rest(i);
    UNITS
        .iter()
        .filter(|(u, _)| rest.starts_with(u))
        .map(|(u, name)| (i + u.chars().count(), *name))
        .collect()
}

/// 第 and a cardinal; a range after it ("第1-3", "第1到第3") makes NeMo fail.
fn ordinal(t: &Text, i: usize, v: &mut Vec<Tok>) {
    let nd = t.digits(i + 1);
    for len in 1..=nd.min(12) {
        let end = i + 1 + len;
        let Some(num) = cardinal(t.slice(i + 1, end)) else {
            continue;
        };
        v.push(tok(end, ORDINAL, format!("第{num}"), 1));
        for goal in ["-", "~", "——", "—", "到", "至"] {
            let Some(gl) = t.starts(end, goal) else {
                continue;
            };
            let mut k = end + gl;
            if t.at(k) == Some('第') {
                k += 1;
            }
            let m = t.digits(k);
            if m > 0 && (m > 1 || t.at(k) != Some('0')) {
                let first = if t.at(k) == Some('0') {
                    k + 1
                } else {
                    k + m.min(12)
                };
                v.push(Tok {
                    end: first,
                    cost: ORDINAL,
                    out: String::new(),
                    perms: 1,
                    fail: true,
                });
            }
        }
    }
}
