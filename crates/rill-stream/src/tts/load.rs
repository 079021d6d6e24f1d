//! Loading a [`Voice`]: Magpie and NanoCodec weights from their files (NVIDIA's
//! `.nemo` archives, NeMo-Speech.cpp GGUFs or safetensors state dicts), or both
//! synthesised from a seed; shared by `rill speak`, `rill serve --tts-…` and any
//! other host.

use std::path::Path;
use std::sync::Arc;

use rill_kernels::WeightFormat;
use rill_magpie::{InferenceParams, Model};
use rill_nanocodec::NanoCodec;
use rill_text::{Language, TextFrontEnd, TextVocabulary};

use super::{TtsError, Voice};

/// Where the real weights come from, several lines without a trailing newline:
/// the end of every [`TtsError::MissingWeights`].
pub fn download_instructions() -> &'static str {
    "Magpie TTS weights are a separate download under the NVIDIA Open Model License:\n  \
     huggingface-cli download nvidia/magpie_tts_multilingual_357m\n  \
     huggingface-cli download nvidia/nemo-nano-codec-22khz-1.89kbps-21.5fps"
}

/// Where a voice's weights come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoiceSource<'a> {
    /// Magpie weights (`.nemo`, GGUF or a safetensors state dict) and NanoCodec
    /// weights (the same formats); `None` is reported as missing.
    Files {
        /// The Magpie TTS checkpoint.
        magpie: Option<&'a Path>,
        /// The NanoCodec checkpoint.
        codec: Option<&'a Path>,
    },
    /// Both models synthesised in memory from this seed (the test oracle's
    /// recipe): speech-shaped noise, not words. The oracle's English-only text
    /// table (98 rows), so English keeps its exact parity.
    Random(u64),
    /// The same with v2602's full text table (2362 rows; its first 98 rows equal
    /// [`VoiceSource::Random`]'s, the recipe is per element): every language runs.
    RandomAllLanguages(u64),
}

impl Voice {
    /// Loads a voice from `source` with Magpie's linear layers in `format`: the
    /// weights, the checkpoint's inference parameters (upstream's defaults where
    /// it has none), the `.nemo`'s own dictionaries when it has them (English,
    /// Spanish, German: about 0.13 s to parse the latter two) and the machine's
    /// OpenJTalk dictionary for Japanese when there is one.
    /// A missing file is a [`TtsError::MissingWeights`] that includes
    /// [`download_instructions`].
    pub fn load(source: VoiceSource<'_>, format: WeightFormat) -> Result<Voice, TtsError> {
        let mut lexicon = None;
        let mut ipa = Vec::new();
        let mut text_tokenizers = Vec::new();
        let mut speaker_names = Vec::new();
        let (weights, params, codec) = match source {
            VoiceSource::Random(seed) | VoiceSource::RandomAllLanguages(seed) => {
                let config = match source {
                    VoiceSource::Random(_) => rill_magpie::Config::oracle(),
                    _ => rill_magpie::Config::v2602(TextVocabulary::V2602_ROWS),
                };
                let w = rill_magpie::synth::build(&config, seed)?;
                let codec = NanoCodec::new(&rill_nanocodec::Weights::synthetic(seed))?;
                (w, InferenceParams::default(), codec)
            }
            VoiceSource::Files { magpie, codec } => {
                let (Some(mp), Some(cp)) = (magpie, codec) else {
                    return Err(TtsError::MissingWeights(format!(
                        "no weights given\n{}",
                        download_instructions()
                    )));
                };
                for p in [mp, cp] {
                    if !p.exists() {
                        return Err(TtsError::MissingWeights(format!(
                            "{} does not exist\n{}",
                            p.display(),
                            download_instructions()
                        )));
                    }
                }
                let (w, params) = match extension(mp).as_str() {
                    "gguf" => {
                        let m = rill_magpie::load::gguf::load(mp)?;
                        text_tokenizers = m.text_tokenizers;
                        speaker_names = m.speaker_names;
                        (m.weights, m.params)
                    }
                    "nemo" => {
                        let nemo = rill_magpie::load::nemo::MagpieNemo::open(mp)?;
                        lexicon = Some(Arc::new(nemo.english_lexicon()?));
                        // Spanish's and German's dictionaries, as the config names
                        // them (one that cannot be used disables that language only).
                        for l in [Language::Spanish, Language::German] {
                            if let Some(front) = nemo.ipa_front_end(l) {
                                ipa.push((l, front));
                            }
                        }
                        let m = nemo.load()?;
                        text_tokenizers = m.text_tokenizers;
                        speaker_names = m.speaker_names;
                        (m.weights, m.params)
                    }
                    _ => (
                        rill_magpie::Weights::load(mp).map_err(|e| {
                            TtsError::Weights(format!(
                                "loading Magpie weights {}: {e}",
                                mp.display()
                            ))
                        })?,
                        InferenceParams::default(),
                    ),
                };
                let codec = match extension(cp).as_str() {
                    "gguf" => NanoCodec::new(&rill_nanocodec::load::load_gguf(cp)?)?,
                    "nemo" => NanoCodec::new(&rill_nanocodec::load::load_nemo(cp)?)?,
                    _ => NanoCodec::load_safetensors(cp).map_err(|e| {
                        TtsError::Weights(format!(
                            "loading NanoCodec weights {}: {e}",
                            cp.display()
                        ))
                    })?,
                };
                (w, params, codec)
            }
        };
        let model = Arc::new(Model::with_format(weights, format)?);
        // The config's tokenizer list (in order) says which languages the text table
        // holds; without one, the row count does.
        let vocab =
            TextVocabulary::from_tokenizer_names(&text_tokenizers, model.config.text_vocab)?;
        let mut front = match lexicon {
            Some(l) => TextFrontEnd::with_lexicon(l, vocab),
            None => TextFrontEnd::new(vocab),
        };
        for (language, ipa_front) in ipa {
            front = front.with_ipa(language, ipa_front);
        }
        // Japanese reads OpenJTalk's dictionary from the machine (no checkpoint has
        // one); a host may give another with `TextFrontEnd::with_japanese`.
        let front = front.with_installed_japanese();
        Ok(Voice {
            model,
            codec: Arc::new(codec),
            front,
            params,
            speaker_names,
        })
    }
}

/// A file's extension in lower case (`""` without one).
fn extension(p: &Path) -> String {
    p.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}
