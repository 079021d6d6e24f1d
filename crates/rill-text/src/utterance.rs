//! What every front end's utterances obey, written once: a blank text is
//! [`TextError::Empty`], a text with nothing to speak is refused, EOS ends each
//! utterance, one longer than the model's limit is [`TextError::UtteranceTooLong`];
//! a long text is split into sentences and those with nothing to speak are left out.

use crate::{excerpt, py_blank, Result, TextError};

/// The utterance-level rules of one front end.
pub(crate) struct Rules {
    /// The vocabulary's end-of-sequence id.
    pub eos: u32,
    /// Longest utterance, EOS included.
    pub max_tokens: usize,
}

impl Rules {
    /// One utterance of `text`: `ids()` gives its token ids and whether they speak
    /// anything; `nothing()` is the error when they do not.
    pub fn utterance(
        &self,
        text: &str,
        ids: impl FnOnce() -> Result<(Vec<u32>, bool)>,
        nothing: impl FnOnce() -> TextError,
    ) -> Result<Vec<u32>> {
        if py_blank(text) {
            return Err(TextError::Empty);
        }
        let (mut ids, speaks) = ids()?;
        if !speaks {
            return Err(nothing());
        }
        ids.push(self.eos);
        if ids.len() > self.max_tokens {
            return Err(TextError::UtteranceTooLong {
                tokens: ids.len(),
                max: self.max_tokens,
                excerpt: excerpt(text),
            });
        }
        Ok(ids)
    }
}

/// Utterances of `text`: one (`sentences` is `None`), or one per sentence with the
/// sentences that have nothing to speak left out; `nothing()` if none is left.
pub(crate) fn utterances(
    text: &str,
    sentences: Option<Vec<String>>,
    mut one: impl FnMut(&str) -> Result<Vec<u32>>,
    nothing: impl FnOnce() -> TextError,
) -> Result<Vec<Vec<u32>>> {
    if py_blank(text) {
        return Err(TextError::Empty);
    }
    let Some(sentences) = sentences else {
        return Ok(vec![one(text)?]);
    };
    let mut out = Vec::new();
    for sentence in sentences {
        match one(&sentence) {
            Ok(ids) => out.push(ids),
            Err(
                TextError::Unencodable(_) | TextError::NothingEncodable { .. } | TextError::Empty,
            ) => {}
            Err(other) => return Err(other),
        }
    }
    if out.is_empty() {
        return Err(nothing());
    }
    Ok(out)
}
