//! NeMo's `.nemo` archive of a Magpie model (spec §2.1): `model_config.yaml`, the
//! torch state dict `model_weights.ckpt` (fp32, `causal_mask` buffers included and
//! skipped here, trap T20) and the tokenizer artifacts the English front end reads.

use std::collections::BTreeMap;
use std::path::Path;

use rill_checkpoint::nemo::Nemo;
use serde_json::Value;

use super::{
    check_config, check_params, params_from_config, unreachable_load, weights_or_problems,
    LoadedModel, Problems,
};
use crate::config::Config;
use crate::error::{MagpieError, Result};
use crate::weights::{Tensor, TensorData, Weights};

/// The English dictionary and heteronym list basenames NeMo registers (spec §2.1).
pub const ENGLISH_DICT: &str = "ipa_cmudict-0.7b_nv23.01.txt";
pub const ENGLISH_HETERONYMS: &str = "heteronyms-052722";

/// An opened Magpie `.nemo` with its parsed config.
#[derive(Debug)]
pub struct MagpieNemo {
    nemo: Nemo,
    config: Value,
}

impl MagpieNemo {
    /// Maps the archive and parses `model_config.yaml`.
    pub fn open(path: impl AsRef<Path>) -> Result<MagpieNemo> {
        Self::new(Nemo::open(path)?)
    }

    /// Wraps an archive already opened (e.g. from memory).
    pub fn new(nemo: Nemo) -> Result<MagpieNemo> {
        let config = nemo.config_json()?;
        Ok(MagpieNemo { nemo, config })
    }

    pub fn archive(&self) -> &Nemo {
        &self.nemo
    }

    /// The model config as JSON.
    pub fn config(&self) -> &Value {
        &self.config
    }

    /// Reads and validates the weights and inference parameters; every problem at once.
    pub fn load(&self) -> Result<LoadedModel> {
        let mut p = Problems::default();
        let sd = self.nemo.state_dict()?;
        // Dimensions from the shapes alone, then only the tensors the model reads are
        // decoded (anything else in the archive, e.g. training buffers, stays unread).
        let params = params_from_config(&self.config, &mut p);
        let config = match Config::detect(|n| sd.meta(n).map(|m| m.shape.clone()), sd.names()) {
            Ok(c) => c,
            Err(e) => {
                p.push(e.to_string());
                p.finish(self.nemo.path())?;
                return unreachable_load(self.nemo.path());
            }
        };
        let mut tensors = BTreeMap::new();
        let wanted = config.float_specs().into_iter().chain(config.int_specs());
        for (name, shape) in wanted {
            let Some(meta) = sd.meta(&name) else {
                continue; // Weights::from_tensors names it
            };
            if meta.shape != shape {
                // Not decoded: Weights::from_tensors reports the shape.
                let data = if meta.dtype.is_float() {
                    TensorData::F32(Vec::new())
                } else {
                    TensorData::I64(Vec::new())
                };
                let shape = meta.shape.clone();
                tensors.insert(name, Tensor { shape, data });
                continue;
            }
            let read = sd.tensor(&name).and_then(|t| {
                let data = if t.dtype.is_float() {
                    TensorData::F32(t.to_f32()?)
                } else {
                    TensorData::I64(t.to_i64()?)
                };
                Ok(Tensor {
                    shape: t.shape.clone(),
                    data,
                })
            });
            match read {
                Ok(t) => {
                    tensors.insert(name, t);
                }
                Err(e) => p.push(e.to_string()),
            }
        }
        let weights = weights_or_problems(Weights::from_tensors(tensors), &mut p);
        if let Some(w) = &weights {
            check_config(&self.config, w.config(), &mut p);
            check_params(&params, w.config(), &mut p);
        }
        if weights.is_none() && p.0.is_empty() {
            p.push("no weights were read");
        }
        p.finish(self.nemo.path())?;
        let Some(weights) = weights else {
            return unreachable_load(self.nemo.path());
        };
        Ok(LoadedModel {
            weights,
            params,
            speaker_names: Vec::new(),
            model_config: self.config.clone(),
            text_tokenizers: self.text_tokenizers()?,
        })
    }

    /// The config's `text_tokenizers` names in document order (empty if none).
    pub fn text_tokenizers(&self) -> Result<Vec<String>> {
        let yaml = self.nemo.config_yaml()?;
        rill_checkpoint::yaml::top_level_keys(yaml, "text_tokenizers")
            .map(Option::unwrap_or_default)
            .map_err(|reason| MagpieError::Load {
                path: self.nemo.path().to_path_buf(),
                problems: vec![format!("model_config.yaml: {reason}")],
            })
    }

    /// The bytes of an artifact the config names at `config_path` (e.g.
    /// `text_tokenizers.english_phoneme.g2p.phoneme_dict`), or by `default` basename.
    fn artifact(&self, config_path: &str, default: &str) -> Result<&[u8]> {
        let named = config_path
            .split('.')
            .try_fold(&self.config, |v, k| v.get(k))
            .and_then(|v| v.as_str())
            .unwrap_or(default);
        match self.nemo.artifact(named)? {
            Some((_, bytes)) => Ok(bytes),
            None => Err(MagpieError::Load {
                path: self.nemo.path().to_path_buf(),
                problems: vec![format!(
                    "no member for {named} (config {config_path}); members: {}",
                    self.nemo.members().collect::<Vec<_>>().join(", ")
                )],
            }),
        }
    }

    /// The Spanish or German front end from the archive's own dictionary (and, for
    /// German, heteronym list), as the config's `spanish_phoneme` / `german_phoneme`
    /// tokenizer names them; `None` when the config has no such tokenizer or the
    /// language reads no dictionary. A dictionary that is missing or is not the
    /// checkpoint's (its symbols do not give the checkpoint's table) is an error
    /// for that language alone.
    pub fn ipa_front_end(
        &self,
        language: rill_text::Language,
    ) -> Option<Result<rill_text::IpaFrontEnd>> {
        use rill_text::{FrontEnd, IpaFrontEnd, GERMAN, SPANISH};
        let info = language.info();
        if !matches!(info.front_end, FrontEnd::SpanishIpa | FrontEnd::GermanIpa) {
            return None;
        }
        let g2p = format!("text_tokenizers.{}.g2p", info.tokenizer);
        self.config
            .pointer(&format!("/{}", g2p.replace('.', "/")))?;
        let dict = |default| self.artifact(&format!("{g2p}.phoneme_dict"), default);
        Some(match info.front_end {
            FrontEnd::GermanIpa => dict(GERMAN.dict_file).and_then(|dict| {
                let het = self.artifact(
                    &format!("{g2p}.heteronyms"),
                    GERMAN.heteronyms_file.unwrap_or_default(),
                )?;
                Ok(IpaFrontEnd::german(dict, het)?)
            }),
            _ => dict(SPANISH.dict_file).and_then(|d| Ok(IpaFrontEnd::spanish_from_bytes(d)?)),
        })
    }

    /// The English IPA dictionary and heteronym list of the archive, parsed for
    /// `rill_text` (the same files NeMo's `IpaG2p` reads).
    pub fn english_lexicon(&self) -> Result<rill_text::Lexicon> {
        let g2p = "text_tokenizers.english_phoneme.g2p";
        let dict = self.artifact(&format!("{g2p}.phoneme_dict"), ENGLISH_DICT)?;
        let het = self.artifact(&format!("{g2p}.heteronyms"), ENGLISH_HETERONYMS)?;
        Ok(rill_text::Lexicon::from_bytes(dict, het)?)
    }
}
