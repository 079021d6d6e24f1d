//! NeMo's cheapest tagging of a whole sentence, character by character, for the
//! normalisers that follow it that way (Mandarin, Japanese): every class offers
//! candidate tokens at each character with NeMo's weight, one forward pass keeps the
//! cheapest way to reach each character (the first found on a tie), and the path is
//! written out as NeMo's verbaliser would, with a space where its permutation search
//! splits a long group. No recursion; linear in the candidates.

use std::ops::Range;

/// One candidate token: where it ends (in chars), its cost, its spoken form, the number
/// of orderings NeMo tries for it, and whether NeMo's verbaliser fails on it.
pub(super) struct Tok {
    pub(super) end: usize,
    pub(super) cost: i64,
    pub(super) out: String,
    pub(super) perms: u64,
    pub(super) fail: bool,
}

/// A token of `cost` with `fields` fields (NeMo tries fields! orderings).
pub(super) fn tok(end: usize, cost: i64, out: String, fields: u64) -> Tok {
    Tok {
        end,
        cost,
        out,
        perms: (1..=fields).product(),
        fail: false,
    }
}

/// The text as chars with their byte offsets, and the runs the classes look at.
pub(super) struct Text<'a> {
    s: &'a str,
    pub(super) chars: Vec<(usize, char)>,
    /// How many ASCII digits run from each char on.
    runs: Vec<usize>,
    /// How many punctuation marks run from each char on.
    pub(super) puncts: Vec<usize>,
}

impl<'a> Text<'a> {
    /// `s` with its digit runs and its runs of `is_punct` marks; a run of marks ends
    /// after a mark `c` where `ends_after(c, next)`.
    pub(super) fn new(
        s: &'a str,
        is_punct: impl Fn(char) -> bool,
        ends_after: impl Fn(char, Option<char>) -> bool,
    ) -> Text<'a> {
        let chars: Vec<(usize, char)> = s.char_indices().collect();
        let n = chars.len();
        let mut runs = vec![0; n + 1];
        let mut puncts = vec![0; n + 1];
        for (k, c) in chars.iter().enumerate().rev() {
            if c.1.is_ascii_digit() {
                runs[k] = runs[k + 1] + 1;
            }
            if is_punct(c.1) {
                let next = chars.get(k + 1).map(|d| d.1);
                puncts[k] = if ends_after(c.1, next) {
                    1
                } else {
                    puncts[k + 1] + 1
                };
            }
        }
        Text {
            s,
            chars,
            runs,
            puncts,
        }
    }
    pub(super) fn byte(&self, i: usize) -> usize {
        self.chars.get(i).map_or(self.s.len(), |c| c.0)
    }
    pub(super) fn slice(&self, i: usize, j: usize) -> &str {
        &self.s[self.byte(i)..self.byte(j)]
    }
    pub(super) fn rest(&self, i: usize) -> &str {
        &self.s[self.byte(i)..]
    }
    pub(super) fn digits(&self, i: usize) -> usize {
        self.runs.get(i).copied().unwrap_or(0)
    }
    pub(super) fn at(&self, i: usize) -> Option<char> {
        self.chars.get(i).map(|c| c.1)
    }
    /// Chars in `p` if the text at `i` starts with it.
    pub(super) fn starts(&self, i: usize, p: &str) -> Option<usize> {
        self.rest(i).starts_with(p).then(|| p.chars().count())
    }
}

/// How the cheapest path came out.
pub(super) enum Tagged {
    /// The spoken text (spaces only where the text had them or NeMo's permutation
    /// search splits a group).
    Spoken(String),
    /// The path has a token NeMo's verbaliser fails on: NeMo returns its input.
    Failed,
    /// No path covers the text: NeMo's tagger raises.
    NoPath,
}

/// The cheapest path of `candidates` over `t`, written out. A group of tokens whose
/// orderings would pass `max_perms` gets a space before it. Replacements go to
/// `changes` (byte ranges offset by `base`), only when the text is spoken.
pub(super) fn cheapest(
    t: &Text,
    base: usize,
    max_perms: u64,
    candidates: impl Fn(&Text, usize) -> Vec<Tok>,
    changes: &mut Vec<(Range<usize>, String)>,
) -> Tagged {
    let n = t.chars.len();
    // best[i]: cheapest cost of tagging the first i chars, and the token ending there.
    let mut best: Vec<Option<(i64, usize, Tok)>> = (0..=n).map(|_| None).collect();
    best[0] = Some((0, 0, tok(0, 0, String::new(), 1)));
    for i in 0..n {
        let Some(here) = best[i].as_ref().map(|b| b.0) else {
            continue;
        };
        for c in candidates(t, i) {
            let cost = here + c.cost;
            let end = c.end;
            if best[end].as_ref().is_none_or(|b| cost < b.0) {
                best[end] = Some((cost, i, c));
            }
        }
    }
    if best[n].is_none() {
        return Tagged::NoPath;
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
        return Tagged::Failed;
    }
    let mut out = String::new();
    let mut group = 1u64;
    for (start, tk) in path {
        if tk.perms * group > max_perms {
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
    Tagged::Spoken(out)
}

/// NeMo's `pynini.escape` on the text it returns when its verbaliser fails.
pub(super) fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '[' | ']' | '\\') {
            o.push('\\');
        }
        o.push(c);
    }
    o
}
