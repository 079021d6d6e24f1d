//! Sentence splitting for long inputs, as NeMo's `chunk_text_for_inference` decides it
//! for English (`nemo/collections/tts/parts/utils/tts_dataset_utils.py`,
//! `split_by_sentence`, `LanguageThresholds`; spec §3.3). NeMo runs the sentences of a
//! long text through its long-form path; rill synthesises each as its own utterance.
//! Other languages use their row of the language table ([`crate::LANGUAGES`]):
//! threshold, unit, and the native endings (hi `। ॥`, zh/ja `。？！…`) that split
//! without a following space.

use crate::languages::{Language, SplitUnit};
use crate::unicode::{is_py_space, py_isupper, py_lower, py_strip, py_upper};

/// English texts of at least this many words (Python `len(text.split())`) are split
/// into sentences; shorter ones stay one utterance (NeMo's threshold, ≈ 20 s of audio).
pub const SPLIT_THRESHOLD_WORDS: usize = 45;

/// Abbreviations after which a `.` never ends a sentence (NeMo's `_TITLE_ABBREVIATIONS`).
const TITLES: [&str; 14] = [
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "rev", "gov", "gen", "col", "lt", "sgt", "capt",
];
const LONGEST_TITLE: usize = 4;

/// Number of whitespace-separated words (Python `str.split()`).
pub fn word_count(text: &str) -> usize {
    text.split(is_py_space).filter(|w| !w.is_empty()).count()
}

/// True if NeMo would split English `text` into sentences before synthesis.
pub fn needs_splitting(text: &str) -> bool {
    word_count(text) >= SPLIT_THRESHOLD_WORDS
}

/// NeMo's `LanguageThresholds.get_word_count`: words (Python `split()`) or, for zh
/// (and ja without pyopenjtalk, NeMo's fallback), non-space characters. With its
/// dictionary, Japanese counts pyopenjtalk words
/// ([`crate::japanese::JapaneseFrontEnd::word_count`], used by [`crate::TextFrontEnd`]).
pub fn count_for_split(text: &str, language: Language) -> usize {
    match language.info().split_unit {
        SplitUnit::Words => word_count(text),
        SplitUnit::Chars => text.chars().filter(|&c| !is_py_space(c)).count(),
    }
}

/// True if NeMo would split `text` in `language` into sentences before synthesis.
pub fn needs_splitting_in(text: &str, language: Language) -> bool {
    count_for_split(text, language) >= language.info().split_threshold
}

/// Splits English text into sentences exactly as NeMo's `split_by_sentence`: hyphens
/// become spaces and `*` is removed first; a sentence ends at `.`, `?` or `!` followed
/// by whitespace or the end of the text, except a `.` after a title (`Dr.`, `Mr.`, …);
/// each sentence keeps its punctuation, is trimmed and gets an upper-case first letter.
pub fn split_sentences(text: &str) -> Vec<String> {
    split_sentences_in(text, Language::English)
}

/// [`split_sentences`] for `language`: its native endings split whatever follows them.
pub fn split_sentences_in(text: &str, language: Language) -> Vec<String> {
    let native = language.info().native_endings;
    if py_strip(text).is_empty() {
        return Vec::new();
    }
    let chars: Vec<char> = text
        .chars()
        .filter(|&c| c != '*')
        .map(|c| if c == '-' { ' ' } else { c })
        .collect();
    let mut sentences = Vec::new();
    // Index of the first character of the current sentence.
    let mut start = 0usize;
    for i in 0..chars.len() {
        let is_native = native.contains(&chars[i]);
        if !is_native && !matches!(chars[i], '.' | '?' | '!') {
            continue;
        }
        let next = chars.get(i + 1).copied();
        if !is_native && next.is_some_and(|c| !is_py_space(c)) {
            continue;
        }
        if chars[i] == '.' && is_title_before(&chars[start..i]) {
            continue;
        }
        push_sentence(&chars[start..=i], &mut sentences);
        start = if next.is_some_and(is_py_space) {
            i + 2
        } else {
            i + 1
        };
    }
    if start < chars.len() {
        push_sentence(&chars[start..], &mut sentences);
    }
    sentences
}

/// True if the last whitespace-separated word of `span`, lower-cased, is a title. Scans
/// backwards and gives up after a few characters, so splitting stays linear in the text.
fn is_title_before(span: &[char]) -> bool {
    let end = span
        .iter()
        .rposition(|&c| !is_py_space(c))
        .map_or(0, |p| p + 1);
    let mut word = Vec::with_capacity(LONGEST_TITLE + 1);
    for &c in span[..end].iter().rev() {
        if is_py_space(c) {
            break;
        }
        if word.len() > LONGEST_TITLE {
            return false;
        }
        word.push(c);
    }
    let word = py_lower(&word.iter().rev().collect::<String>());
    TITLES.contains(&word.as_str())
}

fn push_sentence(span: &[char], sentences: &mut Vec<String>) {
    let text: String = span.iter().collect();
    let text = py_strip(&text);
    let mut chars = text.chars();
    let Some(first) = chars.next() else { return };
    if py_isupper(first) {
        sentences.push(text.to_string());
    } else {
        sentences.push(py_upper(&first.to_string()) + chars.as_str());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nemo_docstring_examples() {
        assert_eq!(
            split_sentences("Hello world. How are you?"),
            ["Hello world.", "How are you?"]
        );
        assert_eq!(
            split_sentences("Dr. Smith is here. Good morning!"),
            ["Dr. Smith is here.", "Good morning!"]
        );
    }

    #[test]
    fn punctuation_kept_and_first_letter_raised() {
        assert_eq!(
            split_sentences("  wait... what?!  ok 3.14 is pi. e.g. this"),
            ["Wait...", "What?!", "Ok 3.14 is pi.", "E.g.", "This"]
        );
        assert!(split_sentences(" \t ").is_empty());
        assert!(split_sentences("***").is_empty());
        assert_eq!(split_sentences("a-b *c*"), ["A b c"]);
    }

    #[test]
    fn long_runs_of_titles_stay_linear() {
        let text = "Dr. ".repeat(20_000);
        assert_eq!(split_sentences(&text).len(), 1);
    }

    #[test]
    fn native_endings_split_without_a_space() {
        assert_eq!(
            split_sentences_in("नमस्ते।आप कैसे हैं? ठीक॥ हाँ", Language::Hindi),
            ["नमस्ते।", "आप कैसे हैं?", "ठीक॥", "हाँ"]
        );
        assert_eq!(
            split_sentences_in("你好。你好吗？好！a.b", Language::Mandarin),
            ["你好。", "你好吗？", "好！", "A.b"]
        );
        assert_eq!(split_sentences_in("a।b", Language::French), ["A।b"]);
        assert_eq!(count_for_split(" 你 好\n", Language::Mandarin), 2);
        assert!(needs_splitting_in(&"w ".repeat(69), Language::French));
        assert!(!needs_splitting_in(&"w ".repeat(68), Language::French));
    }

    #[test]
    fn word_count_is_python_split() {
        assert_eq!(word_count("  a \u{1C}b\u{3000}c  "), 3);
        assert!(!needs_splitting(&"w ".repeat(44)) && needs_splitting(&"w ".repeat(45)));
    }
}
