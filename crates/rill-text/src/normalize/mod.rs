//! Numbers read aloud: text normalisation (written → spoken form) before the tokenizer,
//! as NeMo's `MagpieTTSModel.do_tts(apply_TN=True)` does with `nemo_text_processing`'s
//! `Normalizer(input_case='cased', lang=L).normalize(text, verbose=False)`.
//!
//! NeMo's normaliser is a set of weighted finite-state grammars (Pynini/OpenFst); no Rust
//! crate reproduces them, so each language here is hand-written rules written against
//! recordings of NeMo's own output (`testdata/magpie/normalize_*.json`, made by
//! `make_normalize.py`). They cover everyday text: cardinals, ordinals, decimals,
//! fractions, percentages, money, dates, years, times, measures, phone numbers,
//! addresses and common abbreviations. They are not NeMo's grammars: unusual input may be
//! read differently (the measured agreement and every difference are listed in
//! `docs/languages.md`).
//!
//! Built for all nine languages: English, Spanish, German, French and Italian as rules
//! word by word; Vietnamese, Hindi, Mandarin and Japanese as NeMo's cheapest tagging of
//! the whole sentence (each class's candidates with NeMo's weights, the cheapest path in
//! one pass). Callers that want NeMo's `apply_TN=False` path (`--no-normalize`) skip it.
//!
//! No panics on any input: words are processed one by one without recursion, digit
//! strings too long for a cardinal are read digit by digit, and input is bounded by
//! [`crate::MAX_TEXT_BYTES`].
//!
//! ```
//! use rill_text::normalize::normalize;
//! use rill_text::Language;
//! let n = normalize("It costs $3.50.", Language::English).unwrap();
//! assert_eq!(n.text, "It costs three dollars fifty cents.");
//! assert_eq!(n.spans[0].written, 9..15);
//! ```

mod de;
mod en;
mod en_forms;
mod en_tables;
mod es;
mod fr;
mod hi;
mod it;
mod ja;
mod lattice;
mod numbers;
mod scan;
mod vi;
mod zh;

use std::ops::Range;

use crate::Language;

/// The spoken form of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    /// The text with every written form replaced by its spoken form; words are separated
    /// by single spaces, leading and trailing whitespace removed (as NeMo's output).
    pub text: String,
    /// What was replaced, in order.
    pub spans: Vec<Span>,
}

/// One replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Byte range of the written form in the input text.
    pub written: Range<usize>,
    /// Its spoken form as it appears in [`Normalized::text`].
    pub spoken: String,
}

/// Why a text was not normalised.
#[derive(Debug, thiserror::Error)]
pub enum NormalizeError {
    #[error("the text is {bytes} bytes, more than the {max} one call accepts: send it in parts")]
    TooLong { bytes: usize, max: usize },
}

/// Rewrites `text` in spoken form for `language` ("$3.50" → "three dollars fifty
/// cents"). Every language has one. Errors: the text is longer than
/// [`crate::MAX_TEXT_BYTES`].
pub fn normalize(text: &str, language: Language) -> Result<Normalized, NormalizeError> {
    if text.len() > crate::MAX_TEXT_BYTES {
        return Err(NormalizeError::TooLong {
            bytes: text.len(),
            max: crate::MAX_TEXT_BYTES,
        });
    }
    let mut changes = Vec::new();
    let text = match language {
        Language::English => en::normalize(text, &mut changes),
        Language::Spanish => es::normalize(text, &mut changes),
        Language::German => de::normalize(text, &mut changes),
        Language::French => fr::normalize(text, &mut changes),
        Language::Italian => it::normalize(text, &mut changes),
        Language::Vietnamese => vi::normalize(text, &mut changes),
        Language::Hindi => hi::normalize(text, &mut changes),
        Language::Mandarin => zh::normalize(text, &mut changes),
        Language::Japanese => ja::normalize(text, &mut changes),
    };
    let spans = changes
        .into_iter()
        .map(|(written, spoken)| Span { written, spoken })
        .collect();
    Ok(Normalized { text, spans })
}
