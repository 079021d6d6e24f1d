//! NeMo's `IpaG2p.__call__` for `en-US` with `phoneme_probability = 1.0` (what NeMo's
//! inference runner sets, spec trap T2): every word that the dictionary knows becomes
//! its first pronunciation, heteronyms and unknown words become upper-case graphemes.
//! Upstream: `nemo/collections/tts/g2p/models/i18n_ipa.py` (`parse_one_word`,
//! `__call__`) and `english_word_tokenize` in `tokenizer_utils.py`.

use crate::ipa_lexicon::is_word_or_digit;
use crate::lexicon::Lexicon;
use crate::unicode::{nfc, py_upper};

/// One piece of `english_word_tokenize`'s / `any_locale_word_tokenize`'s output
/// (`_WORDS_RE_EN` / `_WORDS_RE_ANY_LOCALE` groups; W = the locale's word characters).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// Group 1, `W+(?:[W\-']*W+)*` (English lower-cases it).
    Word(&'a str),
    /// Group 2, `\|[^|]*\|`: passed through unchanged, split at spaces.
    Unchanged(&'a str),
    /// Group 3, `[^W|]+`: punctuation, spaces, digits, any other script.
    Other(&'a str),
}

/// `_WORDS_RE_EN.findall(text)` (`is_word`: ASCII letters) or
/// `_WORDS_RE_ANY_LOCALE.findall(text)` without a regex engine. The three alternatives
/// start on disjoint characters (a word character, `|`, anything else), so each position
/// has at most one candidate: group 1 is the longest run of word characters, `'` and `-`
/// that ends on a word character (what the backtracking pattern settles on); a `|` with
/// no closing `|` matches nothing and is skipped, as `findall` skips it.
pub(crate) fn word_pieces(text: &str, is_word: fn(char) -> bool) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut i = 0;
    while let Some(c) = text[i..].chars().next() {
        if is_word(c) {
            let base = i + c.len_utf8();
            let mut end = base;
            for (j, d) in text[base..].char_indices() {
                if is_word(d) {
                    end = base + j + d.len_utf8();
                } else if d != '-' && d != '\'' {
                    break;
                }
            }
            pieces.push(Piece::Word(&text[i..end]));
            i = end;
        } else if c == '|' {
            match text[i + 1..].find('|') {
                Some(k) => {
                    pieces.push(Piece::Unchanged(&text[i + 1..i + 1 + k]));
                    i += k + 2;
                }
                None => i += 1,
            }
        } else {
            let len = text[i..]
                .find(|d: char| is_word(d) || d == '|')
                .unwrap_or(text.len() - i);
            pieces.push(Piece::Other(&text[i..i + len]));
            i += len;
        }
    }
    pieces
}

fn graphemes(word: &str, out: &mut Vec<String>) {
    out.extend(word.chars().map(String::from));
}

fn push_pron(pron: &str, out: &mut Vec<String>) {
    out.extend(pron.chars().map(String::from));
}

/// `parse_one_word`: appends the word's symbols and returns whether it was handled
/// (false only for an out-of-vocabulary word, which the caller may split at hyphens).
fn parse_one_word(lexicon: &Lexicon, word: &str, out: &mut Vec<String>) -> bool {
    let word = py_upper(word);
    // Punctuation (no letter or digit): the characters themselves.
    if !word.chars().any(is_word_or_digit) {
        graphemes(&word, out);
        return true;
    }
    // phoneme_probability = 1.0: the random "keep as graphemes" branch never fires.
    if lexicon.is_heteronym(&word) {
        graphemes(&word, out);
        return true;
    }
    let n_chars = word.chars().count();
    // `'s` suffix of a word the dictionary lacks but whose stem it has.
    if n_chars > 2 && (word.ends_with("'s") || word.ends_with("'S")) {
        if let Some((pron, last)) = stem_pronunciation(lexicon, &word, 2) {
            push_pron(pron, out);
            match last {
                Some('T' | 't') => out.push("s".into()),
                Some('S' | 's') => out.extend(["ɪ".into(), "z".into()]),
                _ => out.push("z".into()),
            }
            return true;
        }
    }
    // `s` suffix without an apostrophe.
    if n_chars > 1 && (word.ends_with('s') || word.ends_with('S')) {
        if let Some((pron, last)) = stem_pronunciation(lexicon, &word, 1) {
            push_pron(pron, out);
            match last {
                Some('T' | 't') => out.push("s".into()),
                _ => out.push("z".into()),
            }
            return true;
        }
    }
    if let Some(pron) = lexicon.pronunciation(&word) {
        push_pron(pron, out);
        return true;
    }
    graphemes(&word, out);
    false
}

/// When the dictionary lacks `word` but has its stem (the word without its last
/// `suffix_len` ASCII characters, as spelt or upper-cased): the stem's pronunciation
/// and its last letter.
fn stem_pronunciation<'l>(
    lexicon: &'l Lexicon,
    word: &str,
    suffix_len: usize,
) -> Option<(&'l str, Option<char>)> {
    let known = |w: &str| lexicon.pronunciation(w).is_some();
    if known(word) || known(&py_upper(word)) {
        return None;
    }
    let stem = &word[..word.len() - suffix_len];
    if let Some(pron) = lexicon.pronunciation(stem) {
        return Some((pron, stem.chars().last()));
    }
    let upper = py_upper(stem);
    lexicon
        .pronunciation(&upper)
        .map(|pron| (pron, upper.chars().last()))
}

/// `IpaG2p.__call__` on text that `english_text_preprocessing` already prepared:
/// the G2P symbols (phonemes, graphemes, punctuation, spaces), one string each.
pub fn g2p(lexicon: &Lexicon, text: &str) -> Vec<String> {
    let text = nfc(text);
    let mut out = Vec::with_capacity(text.len() * 2);
    for piece in word_pieces(&text, |c| c.is_ascii_alphabetic()) {
        match piece {
            Piece::Unchanged(inner) => out.extend(inner.split(' ').map(String::from)),
            Piece::Word(word) => parse_with_hyphens(lexicon, &word.to_ascii_lowercase(), &mut out),
            Piece::Other(other) => parse_with_hyphens(lexicon, other, &mut out),
        }
    }
    out
}

/// An out-of-vocabulary word containing hyphens is parsed again piece by piece,
/// the pieces joined by `-`.
fn parse_with_hyphens(lexicon: &Lexicon, word: &str, out: &mut Vec<String>) {
    let mark = out.len();
    if parse_one_word(lexicon, word, out) || !word.contains('-') {
        return;
    }
    out.truncate(mark);
    for (k, sub) in word.split('-').enumerate() {
        if k > 0 {
            out.push("-".into());
        }
        parse_one_word(lexicon, sub, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_follow_the_regex() {
        use Piece::*;
        assert_eq!(
            word_pieces("It's 5 o'clock-- |a b| x|y z-'", |c| c
                .is_ascii_alphabetic()),
            [
                Word("It's"),
                Other(" 5 "),
                Word("o'clock"),
                Other("-- "),
                Unchanged("a b"),
                Other(" "),
                Word("x"),
                Word("y"),
                Other(" "),
                Word("z"),
                Other("-'"),
            ]
        );
        assert_eq!(word_pieces("é|", |c| c.is_ascii_alphabetic()), [Other("é")]);
    }
}
