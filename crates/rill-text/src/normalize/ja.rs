//! The Japanese normaliser, after NeMo's Japanese grammars (`nemo_text_processing` 1.2.0,
//! `text_normalization/ja`). NeMo tags the whole sentence at once and keeps the cheapest
//! path: every character it does not recognise costs 100, a run of punctuation 1 (and
//! "〜" read から 0), a fraction 1, a date, time, cardinal, ordinal or whitelisted word
//! 1.1, a decimal 3.05. This file does the same: each class offers candidates at each
//! character, and a shortest-path pass over the characters picks the cheapest tagging.
//! The classes themselves are in `ja/classes.rs`, the cardinal in `ja/num.rs`.
//!
//! No recursion; candidates per character are bounded (numbers of up to twelve digits,
//! punctuation runs measured once), so the pass is linear in the text.

use std::ops::Range;

mod classes;
mod num;
mod tables;

use super::lattice::{cheapest, escape, tok, Tagged, Text, Tok};
use tables::{PUNCT_RANGES, WHITELIST};

/// Weights ×100 (NeMo's are in tenths and hundredths).
const WORD: i64 = 10_000;
const PUNCT: i64 = 100;
const RANGE: i64 = 0;
const FRACTION: i64 = 100;
const CLASS: i64 = 110;
const DECIMAL: i64 = 305;

/// Most orderings NeMo's permutation search takes per group of tokens; past it the
/// output gets a space between groups.
const MAX_PERMUTATIONS: u64 = 729;

/// Longest punctuation-run prefixes offered besides the whole run.
const SHORT_RUNS: usize = 8;

/// What NeMo's Japanese grammars count as white space (never inside a token but a date's
/// brackets or a fraction's whole part).
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{a0}')
}

/// NeMo's punctuation tagger's marks: Unicode punctuation and a few CJK marks, less the
/// symbols it reads as words (& # @ % * + / = ^ | ~ $ ¥ ° …) and `[` `]`.
fn is_punct(c: char) -> bool {
    if c.is_ascii() {
        return matches!(
            c,
            '!' | '"'
                | '\''
                | '('
                | ')'
                | ','
                | '-'
                | '.'
                | ':'
                | ';'
                | '<'
                | '>'
                | '?'
                | '\\'
                | '`'
                | '{'
                | '}'
        );
    }
    let u = c as u32;
    let k = PUNCT_RANGES.partition_point(|r| r.1 < u);
    PUNCT_RANGES.get(k).is_some_and(|r| r.0 <= u)
}

pub(super) fn normalize(text: &str, changes: &mut Vec<(Range<usize>, String)>) -> String {
    let trimmed = text.trim();
    let base = trimmed.as_ptr() as usize - text.as_ptr() as usize;
    // A "〜" ends the run of marks before it (NeMo reads it から there), but after "<".
    let t = Text::new(trimmed, is_punct, |c, next| c != '<' && next == Some('〜'));
    match cheapest(&t, base, MAX_PERMUTATIONS, candidates, changes) {
        Tagged::Spoken(out) => collapse(&out),
        Tagged::Failed => collapse(&escape(trimmed)),
        // White space outside a date or fraction: NeMo's tagger finds no path and raises.
        Tagged::NoPath => collapse(trimmed),
    }
}

/// Runs of white space become one space; none at either end.
fn collapse(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_whitespace() {
            if !o.ends_with(' ') {
                o.push(' ');
            }
            continue;
        }
        o.push(c);
    }
    o.trim().to_string()
}

/// Every token NeMo's tagger could start at char `i`.
fn candidates(t: &Text, i: usize) -> Vec<Tok> {
    let c = t.chars[i].1;
    let mut v = Vec::new();
    if !is_space(c) {
        v.push(tok(i + 1, WORD, c.to_string(), 1));
    }
    let len = t.puncts[i];
    if len > 0 {
        for l in (1..=len.min(SHORT_RUNS)).chain((len > SHORT_RUNS).then_some(len)) {
            v.push(tok(i + l, PUNCT, t.slice(i, i + l).to_string(), 1));
        }
    }
    if c == '〜' {
        v.push(tok(i + 1, RANGE, "から".into(), 1));
    }
    if c == '<' {
        emphasis(t, i, &mut v);
    }
    let rest = t.rest(i);
    for (w, spoken) in WHITELIST {
        if rest.starts_with(w) {
            let mut tk = tok(i + w.chars().count(), CLASS, spoken.to_string(), 1);
            // A reading with spaces fails NeMo's whitelist verbaliser.
            tk.fail = spoken.contains(' ');
            v.push(tk);
        }
    }
    classes::numbers(t, i, &mut v);
    classes::fractions(t, i, &mut v);
    classes::dates(t, i, &mut v);
    classes::times(t, i, &mut v);
    v
}

/// "<…>" with no space or angle bracket inside is one punctuation token, kept as written.
fn emphasis(t: &Text, i: usize, v: &mut Vec<Tok>) {
    let mut k = i + 1;
    while let Some(c) = t.at(k) {
        if c == '>' {
            if k > i + 1 {
                v.push(tok(k + 1, PUNCT, t.slice(i, k + 1).to_string(), 1));
            }
            return;
        }
        if c == '<' || is_space(c) {
            return;
        }
        k += 1;
    }
}
