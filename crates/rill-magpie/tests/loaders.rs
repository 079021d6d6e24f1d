//! The Magpie mappings of the real file formats, on tiny models written by
//! `testdata/magpie/make_loader_fixtures.py` with torch 2.12 and PyPI `gguf` 0.19
//! (NeMo-Speech.cpp `conversion/tts.py` conventions): every tensor the model reads
//! must equal what the script wrote (sha256 of the widened values, conv taps
//! re-interleaved), the config and the inference parameters must be read, and
//! broken files must list every problem at once.

mod common;

use std::io::Read;
use std::sync::Arc;

use rill_checkpoint::nemo::Nemo;
use rill_magpie::load::{gguf, nemo::MagpieNemo};
use rill_magpie::weights::TensorData;
use rill_magpie::{Config, InferenceParams, LoadedModel, MagpieError, Model, Session};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn expected() -> Value {
    common::json("loaders/expected.json")
}

fn hex(d: impl AsRef<[u8]>) -> String {
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

/// Every tensor the model reads equals the generator's record.
fn check_tensors(m: &LoadedModel, want: &Value) {
    let c = m.weights.config();
    let names: Vec<String> = c
        .float_specs()
        .into_iter()
        .chain(c.int_specs())
        .map(|(n, _)| n)
        .collect();
    for name in &names {
        let t = m.weights.get(name).unwrap_or_else(|| panic!("{name}"));
        let w = &want[name];
        assert_eq!(t.shape, usizes(&w["shape"]), "{name}");
        let mut h = Sha256::new();
        match &t.data {
            TensorData::F32(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
            TensorData::I64(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
        }
        assert_eq!(hex(h.finalize()), w["sha256"].as_str().unwrap(), "{name}");
    }
    let recorded = want
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| !k.ends_with(".causal_mask"))
        .count();
    assert_eq!(names.len(), recorded, "every recorded tensor is read");
}

fn expected_config(e: &Value) -> Config {
    let c = &e["config"];
    let u = |k: &str| c[k].as_u64().unwrap() as usize;
    Config {
        dim: u("dim"),
        text_vocab: u("text_vocab"),
        encoder_layers: u("encoder_layers"),
        encoder_kernel: u("encoder_kernel"),
        encoder_positions: u("encoder_positions"),
        decoder_layers: u("decoder_layers"),
        decoder_positions: u("decoder_positions"),
        heads: u("heads"),
        ffn: u("ffn"),
        xattn_dim: u("xattn_dim"),
        codebooks: u("codebooks"),
        codebook_vocab: u("codebook_vocab"),
        lt_dim: u("lt_dim"),
        lt_ffn: u("lt_ffn"),
        lt_positions: u("lt_positions"),
        lt_layers: u("lt_layers"),
        speakers: u("speakers"),
        context_frames: u("context_frames"),
    }
}

fn expected_params(e: &Value) -> InferenceParams {
    let p = &e["inference_parameters"];
    let u = |k: &str| p[k].as_u64().unwrap() as usize;
    let f = |k: &str| p[k].as_f64().unwrap() as f32;
    let layers = |k: &str| (!p[k].is_null()).then(|| usizes(&p[k]));
    InferenceParams {
        max_decoder_steps: u("max_decoder_steps"),
        temperature: f("temperature"),
        topk: u("topk"),
        use_cfg: p["use_cfg"].as_bool().unwrap(),
        cfg_scale: f("cfg_scale"),
        apply_attention_prior: p["apply_attention_prior"].as_bool().unwrap(),
        attention_prior_epsilon: f("attention_prior_epsilon"),
        attention_prior_lookahead_window: u("attention_prior_lookahead_window"),
        estimate_alignment_from_layers: layers("estimate_alignment_from_layers"),
        apply_prior_to_layers: layers("apply_prior_to_layers"),
        start_prior_after_n_audio_steps: u("start_prior_after_n_audio_steps"),
        min_generated_frames: u("min_generated_frames"),
    }
}

/// A few frames through the real session: the loaded model and parameters are usable.
/// `linears` is the one format every weight matrix must be stored in by default
/// (f16 for an F16 GGUF: exact halves kept as halves).
fn run(m: LoadedModel, linears: &str) -> usize {
    let pool = rill_kernels::Pool::new(1);
    let vocab = m.weights.config().codebook_vocab as u16;
    let model = Arc::new(Model::new(m.weights).unwrap());
    let formats = model.linear_formats();
    assert_eq!(
        formats.keys().copied().collect::<Vec<_>>(),
        [linears],
        "{formats:?}"
    );
    let mut s = Session::new(model, &[1, 2, 3, 4], 1, m.params.clone(), 7, &pool).unwrap();
    let mut frames = 0;
    while let Some(f) = s.step(&pool).unwrap() {
        assert!(f.iter().all(|&c| c < vocab));
        frames += 1;
    }
    assert!((1..=m.params.max_decoder_steps).contains(&frames));
    frames
}

#[test]
fn gguf_loads_exact_tensors_config_and_the_configs_own_parameters() {
    let e = expected();
    let m = gguf::load(common::require("loaders/tiny_magpie.f16.gguf")).unwrap();
    assert_eq!(m.weights.config(), &expected_config(&e));
    check_tensors(&m, &e["gguf_magpie"]);
    // config_json's legacy keys (prior_epsilon 0.2, lookahead_window_size 3), not the
    // typed keys the converter filled with its defaults (0.1, 5).
    assert_eq!(m.params, expected_params(&e));
    assert_eq!(
        m.speaker_names,
        e["speaker_names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect::<Vec<_>>()
    );
    assert_eq!(m.model_config["model_type"], "decoder_ce");
    // The config's tokenizer list in its order (it sets every language's offset).
    assert_eq!(m.text_tokenizers, ["english_phoneme"]);
    run(m, "f16");
}

#[test]
fn without_config_json_the_typed_gguf_keys_are_used() {
    // Rename the key in place (same length): the file then has only the typed keys, which
    // the converter filled from the new key names only: the legacy prior values are lost.
    let mut bytes = std::fs::read(common::require("loaders/tiny_magpie.f16.gguf")).unwrap();
    let key = b"magpietts.config_json";
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap();
    bytes[at + key.len() - 1] = b'X';
    let g = rill_checkpoint::gguf::Gguf::from_bytes("no_json.gguf", bytes).unwrap();
    let m = gguf::from_gguf(&g).unwrap();
    let want = InferenceParams {
        attention_prior_epsilon: 0.1,
        attention_prior_lookahead_window: 5,
        ..expected_params(&expected())
    };
    assert_eq!(m.params, want);
    assert!(m.model_config.is_null());
    assert!(m.text_tokenizers.is_empty());
}

#[test]
fn v2602s_tokenizers_listed_sorted_in_a_gguf_are_read_in_v2602s_order() {
    // NeMo-Speech.cpp writes config_json with sorted keys: NVIDIA's v2602 GGUF lists
    // the ten text tokenizers alphabetically. Rewrite the fixture's JSON so (the new
    // string padded to keep the data section's alignment: its offsets stay valid).
    let mut bytes = std::fs::read(common::require("loaders/tiny_magpie.f16.gguf")).unwrap();
    let key = b"magpietts.config_json";
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    assert_eq!(
        u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()),
        8,
        "a string"
    );
    let len = u64::from_le_bytes(bytes[at + 4..at + 12].try_into().unwrap()) as usize;
    let start = at + 12;
    let mut config: Value = serde_json::from_slice(&bytes[start..start + len]).unwrap();
    let mut names: Vec<&str> = rill_text::v2602_tokenizer_names().to_vec();
    names.sort_unstable();
    let sorted: String = names
        .iter()
        .map(|n| format!("\"{n}\": {{}}"))
        .collect::<Vec<_>>()
        .join(", ");
    config["text_tokenizers"] = Value::String(String::new());
    let json = serde_json::to_string(&config).unwrap().replace(
        "\"text_tokenizers\":\"\"",
        &format!("\"text_tokenizers\": {{{sorted}}}"),
    );
    let mut json = json.into_bytes();
    let grown = (json.len().max(len) - len).div_ceil(32) * 32;
    json.resize(len + grown, b' ');
    bytes.splice(
        at + 4..start + len,
        [(json.len() as u64).to_le_bytes().to_vec(), json].concat(),
    );
    let g = rill_checkpoint::gguf::Gguf::from_bytes("sorted.gguf", bytes).unwrap();
    let m = gguf::from_gguf(&g).unwrap();
    assert_eq!(m.text_tokenizers, rill_text::v2602_tokenizer_names());
}

#[test]
fn nemo_loads_exact_tensors_config_parameters_and_lexicon() {
    let e = expected();
    let n = MagpieNemo::open(common::require("loaders/tiny_magpie.nemo")).unwrap();
    let lex = n.english_lexicon().unwrap();
    assert_eq!(lex.pronunciation("HELLO"), Some("həˈloʊ"));
    assert!(lex.is_heteronym("ABSTRACT"));
    let m = n.load().unwrap();
    assert_eq!(m.weights.config(), &expected_config(&e));
    check_tensors(&m, &e["nemo_state_dict"]);
    assert_eq!(m.params, expected_params(&e));
    assert!(m.speaker_names.is_empty());
    assert_eq!(m.text_tokenizers, ["english_phoneme"]);
    run(m, "f32");
}

#[test]
fn a_broken_gguf_lists_every_problem() {
    let e = gguf::load(common::require("loaders/tiny_magpie_bad.f16.gguf")).unwrap_err();
    let MagpieError::Load { problems, .. } = &e else {
        panic!("{e}")
    };
    let text = e.to_string();
    for needle in [
        "encoder.layers.0.pos_ff.proj.conv.weight: taps [0, 2]",
        "tensor encoder.layers.0.pos_ff.proj.conv.weight: missing",
        "eos_detection_method is \"argmax\"",
    ] {
        assert!(text.contains(needle), "{needle} not in:\n{text}");
    }
    assert_eq!(problems.len(), 3, "{text}");
}

#[test]
fn contradicting_gguf_metadata_lists_every_problem() {
    let e = gguf::load(common::require("loaders/tiny_magpie_badmeta.f16.gguf")).unwrap_err();
    let text = e.to_string();
    for needle in [
        "metadata magpietts.encoder.layers is I32(2), but the tensors (or rill) need 1",
        "metadata magpietts.audio_eos_id is I32(99), but the tensors (or rill) need 5",
        "magpietts.baked_context_lens",
        "apply_prior_to_layers is [0, 5]",
    ] {
        assert!(text.contains(needle), "{needle} not in:\n{text}");
    }
    let MagpieError::Load { problems, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(problems.len(), 4, "{text}");
}

/// The fixture archive with `model_config.yaml` replaced (or dropped when `None`).
fn nemo_with_config(yaml: Option<&str>, weights: Option<&[u8]>) -> Nemo {
    let good = std::fs::read(common::require("loaders/tiny_magpie.nemo")).unwrap();
    let mut archive = tar::Archive::new(good.as_slice());
    let mut out = tar::Builder::new(Vec::new());
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        let data = match name.as_str() {
            "./model_config.yaml" => match yaml {
                Some(y) => y.as_bytes().to_vec(),
                None => continue,
            },
            "./model_weights.ckpt" => weights.map(<[u8]>::to_vec).unwrap_or(data),
            _ => data,
        };
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        out.append_data(&mut h, &name, data.as_slice()).unwrap();
    }
    Nemo::from_bytes("edited.nemo", out.into_inner().unwrap()).unwrap()
}

fn config_text() -> String {
    let n = Nemo::open(common::require("loaders/tiny_magpie.nemo")).unwrap();
    n.config_yaml().unwrap().to_string()
}

#[test]
fn a_nemo_config_that_disagrees_lists_every_problem() {
    let yaml = config_text()
        .replace(
            "  n_layers: 1\n  is_causal: true\n  max_length_causal_mask: 32",
            "  n_layers: 2\n  is_causal: true\n  max_length_causal_mask: 32",
        )
        .replace("temperature: 0.55", "temperature: hot")
        .replace(
            "eos_detection_method: argmax_or_multinomial_any",
            "eos_detection_method: multinomial",
        )
        .replace(
            "lookahead_window_size: 3",
            "lookahead_window_size: 3\n  attention_prior_lookahead_window: 4",
        )
        .replace("topk: 7", "topk: 999")
        .replace("model_type: decoder_ce", "model_type: decoder_context_tts");
    let n = MagpieNemo::new(nemo_with_config(Some(&yaml), None)).unwrap();
    let e = n.load().unwrap_err();
    let text = e.to_string();
    for needle in [
        "config decoder.n_layers is 2, but the tensors (or rill) need 1",
        "inference_parameters.temperature is \"hot\"",
        "rill implements only \"argmax_or_multinomial_any\"",
        "both attention_prior_lookahead_window and its legacy name",
        "topk is 999",
        "model_type is decoder_context_tts",
    ] {
        assert!(text.contains(needle), "{needle} not in:\n{text}");
    }
    let MagpieError::Load { problems, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(problems.len(), 6, "{text}");
}

#[test]
fn broken_nemo_archives_are_errors() {
    // No config member.
    let e = MagpieNemo::new(nemo_with_config(None, None)).unwrap_err();
    assert!(e.to_string().contains("no model_config.yaml"), "{e}");
    // A YAML alias (refused: no alias expansion) and a non-mapping config.
    let e = MagpieNemo::new(nemo_with_config(Some("a: &x [1]\nb: *x\n"), None)).unwrap_err();
    assert!(e.to_string().contains("aliases"), "{e}");
    let e = MagpieNemo::new(nemo_with_config(Some("- 1\n- 2\n"), None)).unwrap_err();
    assert!(e.to_string().contains("not a mapping"), "{e}");
    // Weights of another model: the missing tensors are named.
    let other = std::fs::read(common::require("loaders/torch_dtypes.ckpt")).unwrap();
    let n = MagpieNemo::new(nemo_with_config(Some(&config_text()), Some(&other))).unwrap();
    let e = n.load().unwrap_err();
    assert!(e.to_string().contains("text_embedding.weight"), "{e}");
    // Garbage weights.
    let n = MagpieNemo::new(nemo_with_config(Some(&config_text()), Some(b"not a zip"))).unwrap();
    assert!(n
        .load()
        .unwrap_err()
        .to_string()
        .contains("model_weights.ckpt"));
}

fn gunzip_repo(rel: &str) -> Vec<u8> {
    let gz = std::fs::read(rill_testkit::repo_root().join(rel))
        .unwrap_or_else(|e| panic!("{rel} (part of the repository): {e}"));
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The fixture archive with `yaml` as its config and `extra` members added, written
/// to a scratch file (MagpieNemo reads a path).
fn nemo_file_with(name: &str, yaml: &str, extra: &[(&str, &[u8])]) -> std::path::PathBuf {
    let good = std::fs::read(common::require("loaders/tiny_magpie.nemo")).unwrap();
    let mut archive = tar::Archive::new(good.as_slice());
    let mut out = tar::Builder::new(Vec::new());
    let mut append = |name: &str, data: &[u8]| {
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        out.append_data(&mut h, name, data).unwrap();
    };
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        if name == "./model_config.yaml" {
            data = yaml.as_bytes().to_vec();
        }
        append(&name, &data);
    }
    for (name, data) in extra {
        append(&format!("./{name}"), data);
    }
    let path = rill_testkit::scratch_dir("magpie-loaders").join(name);
    std::fs::write(&path, out.into_inner().unwrap()).unwrap();
    path
}

#[test]
fn nemo_brings_the_spanish_and_german_dictionaries_its_config_names() {
    use rill_text::{IpaFrontEnd, Language};
    let es = gunzip_repo("crates/rill-text/data/es_ES_nv230301.dict.gz");
    let het = gunzip_repo("crates/rill-text/data/de_nv230119.heteronym.gz");
    // NeMo's previous German dictionary, edited to v2602's symbols (as rill-text's
    // German test does), stands in for the checkpoint's.
    let old_de = gunzip_repo("testdata/magpie/de_nv221025.dict.gz");
    let de = String::from_utf8(old_de.clone())
        .unwrap()
        .replace('ʏ', "ʊ")
        .replace('\u{329}', "")
        + "Åland  ˈoːland\nåsa  ˈoːza1\n";
    let tokenizers = "text_tokenizers:\n\
        \x20 spanish_phoneme:\n\
        \x20   g2p:\n\
        \x20     phoneme_dict: nemo:aa_es_ES_nv230301.dict\n\
        \x20 german_phoneme:\n\
        \x20   g2p:\n\
        \x20     phoneme_dict: nemo:bb_de_nv230119.dict\n\
        \x20     heteronyms: nemo:cc_de_nv230119.heteronym\n";
    let yaml = config_text().replacen("text_tokenizers:\n", tokenizers, 1);
    let path = nemo_file_with(
        "es_de.nemo",
        &yaml,
        &[
            ("aa_es_ES_nv230301.dict", &es),
            ("bb_de_nv230119.dict", de.as_bytes()),
            ("cc_de_nv230119.heteronym", &het),
        ],
    );
    let n = MagpieNemo::open(&path).unwrap();
    let text = "Guten Morgen, wie geht es Ihnen? Die Straße ist lang.";
    let german = n.ipa_front_end(Language::German).unwrap().unwrap();
    let want = IpaFrontEnd::german(de.as_bytes(), &het).unwrap();
    assert_eq!(german.encode(text).unwrap(), want.encode(text).unwrap());
    let spanish = n.ipa_front_end(Language::Spanish).unwrap().unwrap();
    let text = "¿Dónde está la biblioteca?";
    assert_eq!(
        spanish.encode(text).unwrap(),
        IpaFrontEnd::spanish_from_bytes(&es)
            .unwrap()
            .encode(text)
            .unwrap()
    );
    // Languages that read no dictionary, and an archive without these tokenizers.
    assert!(n.ipa_front_end(Language::English).is_none());
    assert!(n.ipa_front_end(Language::French).is_none());
    let plain = MagpieNemo::open(common::require("loaders/tiny_magpie.nemo")).unwrap();
    assert!(plain.ipa_front_end(Language::German).is_none());

    // A dictionary that is not the checkpoint's, or a member that is missing: an
    // error for that language, naming the problem.
    let path = nemo_file_with(
        "old_de.nemo",
        &yaml,
        &[
            ("aa_es_ES_nv230301.dict", &es),
            ("bb_de_nv230119.dict", &old_de),
            ("cc_de_nv230119.heteronym", &het),
        ],
    );
    let n = MagpieNemo::open(&path).unwrap();
    let err = n.ipa_front_end(Language::German).unwrap().unwrap_err();
    assert!(err.to_string().contains("not v2602's 150"), "{err}");
    let n = MagpieNemo::open(nemo_file_with("no_de.nemo", &yaml, &[])).unwrap();
    let err = n.ipa_front_end(Language::German).unwrap().unwrap_err();
    assert!(err.to_string().contains("no member for"), "{err}");
}
