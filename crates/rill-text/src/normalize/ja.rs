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

/// One candidate token: where it ends (in chars), its cost, its spoken form, the number
/// of orderings NeMo tries for it, and whether NeMo's verbaliser fails on it.
struct Tok {
    end: usize,
    cost: i64,
    out: String,
    perms: u64,
    fail: bool,
}

/// A token of `cost` with `fields` fields (NeMo tries fields! orderings).
fn tok(end: usize, cost: i64, out: String, fields: u64) -> Tok {
    Tok {
        end,
        cost,
        out,
        perms: (1..=fields).product(),
        fail: false,
    }
}

/// The text as chars with their byte offsets.
struct Text<'a> {
    s: &'a str,
    chars: Vec<(usize, char)>,
    /// How many ASCII digits run from each char on.
    runs: Vec<usize>,
    /// How many punctuation marks run from each char on (a "〜" only first).
    puncts: Vec<usize>,
}

impl Text<'_> {
    fn byte(&self, i: usize) -> usize {
        self.chars.get(i).map_or(self.s.len(), |c| c.0)
    }
    fn slice(&self, i: usize, j: usize) -> &str {
        &self.s[self.byte(i)..self.byte(j)]
    }
    fn rest(&self, i: usize) -> &str {
        &self.s[self.byte(i).min(self.s.len())..]
    }
    fn digits(&self, i: usize) -> usize {
        self.runs.get(i).copied().unwrap_or(0)
    }
    fn at(&self, i: usize) -> Option<char> {
        self.chars.get(i).map(|c| c.1)
    }
    /// Chars in `p` if the text at `i` starts with it.
    fn starts(&self, i: usize, p: &str) -> Option<usize> {
        self.rest(i).starts_with(p).then(|| p.chars().count())
    }
}

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
    let chars: Vec<(usize, char)> = trimmed.char_indices().collect();
    let n = chars.len();
    let mut runs = vec![0; n + 1];
    let mut puncts = vec![0; n + 1];
    for (k, c) in chars.iter().enumerate().rev() {
        if c.1.is_ascii_digit() {
            runs[k] = runs[k + 1] + 1;
        }
        if is_punct(c.1) {
            // A "〜" ends the run before it (NeMo reads it から there), but after "<".
            let next = c.1 != '<' && chars.get(k + 1).is_some_and(|d| d.1 == '〜');
            puncts[k] = if next { 1 } else { puncts[k + 1] + 1 };
        }
    }
    let t = Text {
        s: trimmed,
        chars,
        runs,
        puncts,
    };
    // best[i]: cheapest cost of tagging the first i chars, and the token ending there.
    let mut best: Vec<Option<(i64, usize, Tok)>> = (0..=n).map(|_| None).collect();
    best[0] = Some((0, 0, tok(0, 0, String::new(), 1)));
    for i in 0..n {
        let Some(here) = best[i].as_ref().map(|b| b.0) else {
            continue;
        };
        for c in candidates(&t, i) {
            let cost = here + c.cost;
            let end = c.end;
            if best[end].as_ref().is_none_or(|b| cost < b.0) {
                best[end] = Some((cost, i, c));
            }
        }
    }
    if best[n].is_none() {
        // White space outside a date or fraction: NeMo's tagger finds no path and raises.
        return collapse(trimmed);
    }
    let mut path = Vec::new();
    let mut j = n;
    while j > 0 {
        let Some((_, start, tk)) = best[j].take() else {
            break;
        };
        path.push((start, tk));
        j = start;
    }
    path.reverse();
    if path.iter().any(|(_, tk)| tk.fail) {
        return collapse(&escape(trimmed));
    }
    let mut out = String::new();
    let mut group = 1u64;
    for (start, tk) in path {
        if tk.perms * group > MAX_PERMUTATIONS {
            out.push(' ');
            group = 1;
        }
        group *= tk.perms;
        let written = t.slice(start, tk.end);
        if written != tk.out {
            let range = base + t.byte(start)..base + t.byte(tk.end);
            changes.push((range, tk.out.clone()));
        }
        out.push_str(&tk.out);
    }
    collapse(&out)
}

/// NeMo's `pynini.escape` on the text it returns when its verbaliser fails.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '[' | ']' | '\\') {
            o.push('\\');
        }
        o.push(c);
    }
    o
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
