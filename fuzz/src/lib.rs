//! The bodies of the fuzz targets (`fuzz_targets/*.rs` only call these), shared
//! with the seed-corpus test so every committed seed is known to run.
//!
//! Each body feeds untrusted bytes to one parser and then checks what the parser
//! promises about what it accepted; a panic, abort, overflow or allocation beyond
//! `-rss_limit_mb` is a bug in the library, never something to catch here.

use std::sync::{Mutex, OnceLock};

use rill_checkpoint::layout::{RVQ_CODEBOOK, SOUNDSTREAM};
use rill_checkpoint::{Checkpoint, Dtype};
use rill_io::Npz;
use rill_mrt2::config::{ModelDims, StackDims};
use rill_mrt2::sampler::{LEVEL, RESERVED, VOCAB};
use rill_mrt2::session_file::{self, ModelId};
use rill_mrt2::{layout, ModelKind, Mrt2, Mrt2Config, Precision};
use rill_spectrostream::{Codec, CodecState};
use rill_stream::Snapshot;

pub mod seeds;

/// `.npy` reading: an accepted array holds exactly the elements its shape says.
pub fn npy(data: &[u8]) {
    if let Ok(a) = rill_io::npy_from_bytes("fuzz.npy", data) {
        assert_eq!(a.numel(), a.data_len(), "shape {:?}", a.shape);
    }
}

/// `.npz` reading, and every accessor on what was read.
pub fn npz(data: &[u8]) {
    let Ok(z) = Npz::from_bytes("fuzz.npz", data) else {
        return;
    };
    let names: Vec<String> = z
        .arrays
        .keys()
        .chain(z.unreadable.keys())
        .cloned()
        .collect();
    for name in names {
        if let Ok(a) = z.get(&name) {
            assert_eq!(a.numel(), a.data_len(), "{name}: shape {:?}", a.shape);
        }
        let _ = z.f32(&name);
        let _ = z.i64(&name);
        let _ = z.bool(&name);
    }
    let _ = z.get("no such array");
}

/// The safetensors checkpoint loader, layout validation and, for files that pass
/// validation (e.g. header-only pre-quantised files), the model and codec loaders.
pub fn checkpoint(data: &[u8]) {
    let Ok(ckpt) = Checkpoint::from_bytes("fuzz.safetensors", data.to_vec()) else {
        return;
    };
    let names: Vec<String> = ckpt.names().map(str::to_string).collect();
    for n in &names {
        let t = ckpt.tensor(n).expect("a listed tensor opens");
        let bits = t.numel() as u128 * t.dtype.bitsize() as u128;
        assert_eq!(
            bits,
            t.bytes.len() as u128 * 8,
            "{n}: {:?} {:?}",
            t.dtype,
            t.shape
        );
        if let Ok(v) = t.to_f32() {
            assert_eq!(v.len(), t.numel());
        }
        let _ = ckpt.quantized_format(n);
        ckpt.release(n);
    }
    let _ = ckpt.metadata().len();
    let _ = layout::detect_model(&ckpt);
    let _ = ckpt.problems(&layout::tensor_specs(ModelKind::Small));
    if layout::validate(&ckpt).is_ok() {
        let precision = ckpt
            .quantized_precision()
            .and_then(Precision::from_name)
            .unwrap_or_default();
        let _ = Mrt2::load(&ckpt, precision);
    }
    if ckpt.entry(RVQ_CODEBOOK).is_some() {
        let _ = Codec::load(&ckpt);
    }
}

/// A model shape with a 12-float key/value ring, so a complete, valid session file
/// is a few hundred bytes (the real mrt2_small ring is 2 MB per cache).
pub fn tiny_config() -> Mrt2Config {
    let stack = StackDims {
        layers: 2,
        dim: 4,
        ffn: 8,
        heads: 1,
        head_dim: 2,
    };
    Mrt2Config {
        kind: ModelKind::Small,
        dims: ModelDims {
            enc_dim: 4,
            temporal: stack,
            depth: stack,
            window: 3,
        },
    }
}

/// The model a fuzzed state file is checked against: the tiny shapes, and the
/// precision and weights fingerprint the file names, so the fuzzer gets past
/// those checks to the fields.
pub fn tiny_id(ckpt: &Checkpoint) -> ModelId {
    let meta = ckpt.metadata();
    ModelId {
        config: tiny_config(),
        precision: meta
            .get("precision")
            .and_then(|p| Precision::from_name(p))
            .unwrap_or_default(),
        weights: meta
            .get("weights")
            .and_then(|w| u64::from_str_radix(w, 16).ok())
            .unwrap_or(0),
    }
}

/// State-file loading, both layers: whatever `session_file::read` accepts is safe
/// to hand to a session, and whatever `Snapshot::from_bytes_for` accepts (the
/// stream part, then the codec arrays against a zero-weight codec) is a valid
/// snapshot that writes back to a file reading the same.
pub fn session_file(data: &[u8]) {
    let Ok(ckpt) = Checkpoint::from_bytes("fuzz.state", data.to_vec()) else {
        return;
    };
    let id = tiny_id(&ckpt);
    let config = id.config;
    let Ok(d) = session_file::read(&ckpt, &id) else {
        return;
    };
    drop(ckpt);
    let ring = config.dims.temporal.layers * config.dims.window * config.temporal_inner();
    let st = &d.state;
    for v in [&st.self_k, &st.self_v, &st.cross_k, &st.cross_v] {
        assert_eq!(v.len(), ring);
        assert!(v.iter().all(|x| x.is_finite()));
    }
    for (k, &t) in st.prev.iter().enumerate() {
        let lo = (RESERVED + LEVEL * k) as u32;
        assert!(t == 0 && st.frame == 0 || (lo..lo + LEVEL as u32).contains(&t));
    }
    let p = d.sampling;
    assert!(p.temperature.is_finite() && p.temperature >= 0.0);
    assert!((1..=VOCAB).contains(&p.top_k));
    assert!(d.conditioning.style.iter().flatten().all(|&c| c < 1024));
    let _ = d.conditioning.tokens();

    let codec = zero_codec();
    let Ok(snap) = Snapshot::from_bytes_for(data, &id, codec) else {
        return;
    };
    assert_eq!(snap.conditioning().notes, d.conditioning.notes);
    for (k, &t) in snap.pending.iter().flatten().enumerate() {
        let lo = (RESERVED + LEVEL * k) as u32;
        assert!((lo..lo + LEVEL as u32).contains(&t));
    }
    let again = Snapshot::from_bytes_for(&snap.to_bytes_for(&id), &id, codec)
        .expect("a snapshot's own bytes read back");
    assert!(again == snap, "a snapshot changed through its bytes");
}

/// A codec with all-zero weights, built in memory (the state's shapes depend only on
/// the layer shapes), with one stream state reused across runs.
struct CodecFixture {
    codec: Codec,
    /// The state of a fresh stream: what every run edits.
    template: Vec<StateArray>,
    /// The reused state and what it holds (the last accepted import).
    state: Mutex<(CodecState, Vec<StateArray>)>,
}

type StateArray = (String, Vec<usize>, Vec<f32>);

fn codec_fixture() -> &'static CodecFixture {
    static F: OnceLock<CodecFixture> = OnceLock::new();
    F.get_or_init(|| {
        let mut specs: Vec<_> = layout::tensor_specs(ModelKind::Small)
            .into_iter()
            .filter(|s| s.name.starts_with(SOUNDSTREAM))
            .collect();
        for s in &mut specs {
            if s.name == RVQ_CODEBOOK {
                s.shape[0] = rill_spectrostream::LEVELS; // only the first 12 levels are read
            }
        }
        let biggest = specs.iter().map(|s| s.numel()).max().unwrap_or(0);
        let zeros = vec![0u8; 2 * biggest];
        let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = specs
            .iter()
            .map(|s| {
                let bytes = &zeros[..2 * s.numel()];
                let v = safetensors::tensor::TensorView::new(Dtype::BF16, s.shape.clone(), bytes)
                    .expect("a zero tensor view");
                (s.name.clone(), v)
            })
            .collect();
        let bytes = safetensors::serialize(views, None).expect("serialising the zero codec");
        let ckpt = Checkpoint::from_bytes("zero-codec.safetensors", bytes).expect("zero codec");
        let codec = Codec::load(&ckpt).expect("loading the zero codec");
        let state = codec.new_state();
        let template = state.export();
        CodecFixture {
            codec,
            state: Mutex::new((state, template.clone())),
            template,
        }
    })
}

/// The zero-weight codec of the fixture (the state's shapes are the real ones).
pub fn zero_codec() -> &'static Codec {
    &codec_fixture().codec
}

/// Reads little-endian values off the fuzz input; zeros once it runs out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn index(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.u32() as usize % n
        }
    }
}

/// Codec-state import: the input is a list of edits to a valid exported state
/// (drop, duplicate, rename, reshape, resize an array, overwrite a value with any
/// bit pattern, add an array). An accepted import must equal its input; a refused
/// one must change nothing.
pub fn codec_state(data: &[u8]) {
    let fixture = codec_fixture();
    let mut guard = fixture.state.lock().unwrap_or_else(|e| e.into_inner());
    let (state, held) = &mut *guard;
    let mut arrays = fixture.template.clone();
    let mut b = Bytes(data);
    while !b.0.is_empty() {
        let n = arrays.len();
        match b.u8() % 8 {
            0 if n > 0 => {
                arrays.remove(b.index(n));
            }
            1 if n > 0 => {
                let a = arrays[b.index(n)].clone();
                arrays.push(a);
            }
            2 if n > 0 => {
                let (i, j) = (b.index(n), b.index(n));
                // Cut at a char, not a byte: the pushed char may be non-ASCII.
                let name = arrays[j].0.clone();
                let cut = b.index(name.chars().count() + 1);
                arrays[i].0 = name.chars().take(cut).collect();
                if b.u8() % 2 == 1 {
                    arrays[i].0.push(b.u8() as char);
                }
            }
            3 if n > 0 => {
                let i = b.index(n);
                let shape = &mut arrays[i].1;
                let d = b.index(shape.len() + 1);
                let v = b.u32() as usize;
                if d < shape.len() {
                    shape[d] = v;
                } else {
                    shape.push(v % 8);
                }
            }
            4 if n > 0 => {
                let i = b.index(n);
                let v = &mut arrays[i].2;
                let m = b.index(v.len() + 2);
                v.resize(m, 0.0);
            }
            5 if n > 0 => {
                let i = b.index(n);
                let v = &mut arrays[i].2;
                let at = b.index(v.len());
                let x = f32::from_bits(b.u32());
                if let Some(slot) = v.get_mut(at) {
                    *slot = x;
                }
            }
            6 => {
                let len = b.index(4);
                let name: String = (0..b.index(24))
                    .map(|_| (b.u8() % 96 + 32) as char)
                    .collect();
                arrays.push((name, vec![len], vec![0.5; len]));
            }
            _ if n > 1 => {
                let (i, j) = (b.index(n), b.index(n));
                arrays.swap(i, j);
            }
            _ => {}
        }
    }
    match state.import(&arrays) {
        Ok(()) => {
            // Arrays may come in any order; `held` keeps export order.
            let now = state.export();
            for (name, shape, values) in &now {
                let given = arrays
                    .iter()
                    .find(|(n, _, _)| n == name)
                    .expect("imported array");
                assert_eq!((&given.1, values.len()), (shape, given.2.len()), "{name}");
                // Bit for bit, except that the countdown is an integer: −0 comes
                // back as 0 (a fuzz find; both mean "no frames left to mask").
                let integer = name == "lookahead/countdown";
                let same = given
                    .2
                    .iter()
                    .zip(values)
                    .all(|(a, b)| a.to_bits() == b.to_bits() || (integer && a == b));
                assert!(same, "{name}: imported values differ");
            }
            *held = now;
        }
        Err(_) => assert!(
            state.export() == *held,
            "a refused import changed the state"
        ),
    }
}

/// The WebSocket protocol parser on any text (and on lossily decoded bytes).
pub fn protocol(data: &[u8]) {
    match std::str::from_utf8(data) {
        Ok(s) => {
            let _ = rill_server::protocol::parse(s);
        }
        Err(_) => {
            let _ = rill_server::protocol::parse(&String::from_utf8_lossy(data));
        }
    }
}

/// An OpenAI speech request body (`POST /v1/audio/speech`) against v2602's five
/// voices: accepted requests name one of them, a served format, speed 1 and an input
/// within OpenAI's limit.
pub fn openai_speech(data: &[u8]) {
    let voices: Vec<String> = ["John", "Sofia", "Aria", "Jason", "Leo"]
        .map(String::from)
        .to_vec();
    if let Ok(s) = rill_server::openai::parse_request(data, &voices) {
        assert!(s.options.speaker < voices.len());
        assert!(!s.text.trim().is_empty());
        assert!(s.text.chars().count() <= rill_server::openai::MAX_INPUT_CHARS);
    }
}

/// Wyoming bytes (as a client sends them): `rill_server::wyoming::read_event` event
/// after event until the bytes run out or one is refused, each within the bounds;
/// `synthesize` data through `parse_synthesize` against five voices in every
/// language: what is accepted names one of them and has text within the limit.
pub fn wyoming(data: &[u8]) {
    use rill_server::wyoming::{event, parse_synthesize, read_event};
    let voices: Vec<String> = ["John", "Sofia", "Aria", "Jason", "Leo"]
        .map(String::from)
        .to_vec();
    let mut rest = data;
    while let Ok(Some((e, used))) = read_event(rest) {
        assert!(used > 0 && used <= rest.len());
        assert!(e.payload.len() <= event::MAX_PAYLOAD_BYTES);
        assert!(!e.kind.is_empty());
        rest = &rest[used..];
        if e.kind == "synthesize" {
            if let Ok(s) = parse_synthesize(&e.data, &voices, &rill_text::Language::ALL) {
                assert!(s.options.speaker < voices.len());
                assert!(!s.text.trim().is_empty());
                assert!(s.text.chars().count() <= rill_server::tts::MAX_TTS_TEXT_CHARS);
            }
        }
        // What the server writes reads back as the same event.
        let mut out = rill_server::wyoming::Event::new(&e.kind, serde_json::json!({}));
        out.payload = e.payload.clone();
        if e.kind.len() < 1024 {
            let (back, n) = read_event(&out.encode())
                .expect("its own framing")
                .expect("a whole event");
            assert_eq!((back, n), (out.clone(), out.encode().len()));
        }
    }
}

/// The Magpie text front ends on any text in any language (first byte picks it): what
/// is accepted is ids inside v2602's table ending with EOS, each built language's ids
/// inside its own table, the dropped characters sorted and unique; sentence splitting
/// and NFC never panic.
pub fn text(data: &[u8]) {
    use rill_text::{Language, TextFrontEnd, TextVocabulary};
    static FRONT: OnceLock<TextFrontEnd> = OnceLock::new();
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let language = Language::ALL[usize::from(pick) % Language::ALL.len()];
    let text = String::from_utf8_lossy(rest);
    let front = FRONT.get_or_init(|| TextFrontEnd::new(TextVocabulary::v2602()));
    if let Ok(enc) = front.encode_utterances(&text, language) {
        let info = language.info();
        for ids in &enc.utterances {
            let (last, body) = ids.split_last().expect("EOS at least");
            assert_eq!(*last, rill_text::V2602_EOS);
            for &id in body {
                assert!(
                    (info.offset..info.offset + info.size).contains(&id),
                    "{} id {id} outside its table",
                    info.code
                );
            }
        }
        assert!(enc.dropped.windows(2).all(|w| w[0] < w[1]));
    }
    let _ = rill_text::split_sentences_in(&text, language);
    let _ = rill_text::needs_splitting_in(&text, language);
    let _ = rill_text::any_locale_text_preprocessing(&text);
}

/// Splits `[u16 length][bytes]` off the front of `data`.
fn section<'a>(data: &mut &'a [u8]) -> &'a [u8] {
    let Some((len, rest)) = data.split_first_chunk::<2>() else {
        return std::mem::take(data);
    };
    let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
    let (part, rest) = rest.split_at(len);
    *data = rest;
    part
}

/// The Japanese front end on a dictionary made of fuzzed bytes, then a text through it:
/// `mode`, then `sys.dic`, `unk.dic`, matrix and characters as `[u16 length][bytes]`
/// sections, the rest the text. Mode bit 0 clear: the four sections are the files
/// themselves (header and size checks). Set: the two dictionaries get a consistent
/// magic number, the matrix section is `lsize`, `rsize`, costs, the character section
/// `[u8 count]([u8 length][name])*`, the default info (u32), then runs of (u16 first,
/// u16 last, u32 info), expanded to `char.bin` with rill's writer, so the bytes reach
/// the lattice. An accepted dictionary encodes to ids inside the 175-symbol table,
/// padded with a space at both ends.
pub fn ja_dictionary(data: &[u8]) {
    use rill_text::japanese::{writer, Dictionary, JapaneseFrontEnd, JAPANESE_TOKENS};
    let Some((&mode, mut rest)) = data.split_first() else {
        return;
    };
    let mut sys = section(&mut rest).to_vec();
    let mut unk = section(&mut rest).to_vec();
    let mut matrix = section(&mut rest).to_vec();
    let mut chars = section(&mut rest).to_vec();
    if mode & 1 == 1 {
        for d in [&mut sys, &mut unk] {
            if d.len() >= 4 {
                let magic = (d.len() as u32) ^ 0xef71_8f77;
                d[..4].copy_from_slice(&magic.to_le_bytes());
            }
        }
        let (l, r) = (
            matrix.first().copied().unwrap_or(0),
            matrix.get(1).copied().unwrap_or(0),
        );
        let costs: Vec<i16> = matrix
            .get(2..)
            .unwrap_or_default()
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect();
        matrix = writer::matrix_file(u16::from(l), u16::from(r), &costs);
        let mut spec = chars.as_slice();
        let mut names = Vec::new();
        let count = spec.split_first().map_or(0, |(&n, _)| n);
        spec = spec.get(1..).unwrap_or_default();
        for _ in 0..count {
            let Some((&n, tail)) = spec.split_first() else {
                break;
            };
            let n = usize::from(n).min(tail.len());
            names.push(String::from_utf8_lossy(&tail[..n]).into_owned());
            spec = &tail[n..];
        }
        let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let fallback = spec.get(..4).map_or(0, word);
        let runs: Vec<(u16, u16, u32)> = spec
            .get(4..)
            .unwrap_or_default()
            .chunks_exact(8)
            .map(|c| {
                (
                    u16::from_le_bytes([c[0], c[1]]),
                    u16::from_le_bytes([c[2], c[3]]),
                    word(&c[4..]),
                )
            })
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        chars = writer::char_file(&names, &runs, fallback);
    }
    let Ok(dict) = Dictionary::from_bytes(sys, unk, matrix, chars) else {
        return;
    };
    let front = JapaneseFrontEnd::from_dictionary(dict);
    let text = String::from_utf8_lossy(rest);
    let mut dropped = Vec::new();
    let ids = front.encode(&text, &mut dropped);
    assert!(
        ids.len() >= 2 && ids[0] == 0 && ids[ids.len() - 1] == 0,
        "{ids:?}"
    );
    assert!(ids.iter().all(|&i| (i as usize) < JAPANESE_TOKENS.len()));
    let _ = front.word_count(&text);
}

/// The text normaliser on any text (first byte picks the language): English always
/// succeeds on text within `MAX_TEXT_BYTES`, its output has no leading, trailing or
/// doubled spaces, and its spans are in order, inside the input and on character
/// boundaries; other languages refuse.
pub fn normalize(data: &[u8]) {
    use rill_text::normalize::normalize;
    use rill_text::Language;
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let language = Language::ALL[usize::from(pick) % Language::ALL.len()];
    let text = String::from_utf8_lossy(rest);
    match normalize(&text, language) {
        Ok(n) => {
            assert_eq!(n.text.trim(), n.text);
            assert!(!n.text.contains("  "));
            let mut end = 0;
            for s in &n.spans {
                assert!(end <= s.written.start && s.written.start < s.written.end);
                assert!(text.get(s.written.clone()).is_some());
                end = s.written.end;
            }
        }
        // Every language has a normaliser: only an over-long text is refused.
        Err(_) => assert!(text.len() > rill_text::MAX_TEXT_BYTES),
    }
}

/// Reads every tensor of a parsed foreign checkpoint (the view checks must make
/// each read safe) and returns how many elements came out.
fn read_all<'a>(tensors: impl Iterator<Item = rill_checkpoint::raw::RawTensor<'a>>) -> usize {
    let mut n = 0;
    for t in tensors {
        let got = if t.dtype.is_float() {
            t.to_f32().map(|v| v.len())
        } else {
            t.to_i64().map(|v| v.len())
        };
        if let Ok(k) = got {
            assert_eq!(k, t.numel(), "{}", t.name);
            n += k;
        }
    }
    n
}

/// GGUF: `Gguf::from_bytes`, every tensor, then the Magpie and NanoCodec mappings.
pub fn gguf(data: &[u8]) {
    let Ok(g) = rill_checkpoint::gguf::Gguf::from_bytes("fuzz.gguf", data.to_vec()) else {
        return;
    };
    let n = read_all(g.names().filter_map(|name| g.tensor(name).ok()));
    // Tensor data never overlaps, so it decodes to at most 8 elements per byte (f64 → i64 aside).
    assert!(n <= data.len(), "{n} elements from {} bytes", data.len());
    let _ = rill_magpie::load::gguf::from_gguf(&g);
    let _ = rill_nanocodec::load::from_gguf(&g);
}

/// torch zip checkpoints: `StateDict::parse` (zip directory, code-free pickle) and every tensor.
pub fn torch(data: &[u8]) {
    if let Ok(sd) = rill_checkpoint::torch::StateDict::parse(data) {
        let names: Vec<String> = sd.names().map(str::to_string).collect();
        let n = read_all(names.iter().filter_map(|name| sd.tensor(name).ok()));
        assert!(
            n <= 2 * data.len(),
            "{n} elements from {} bytes",
            data.len()
        );
    }
}

/// `.nemo`: the tar members, the YAML config, artifacts, the state dict, then the
/// Magpie and NanoCodec mappings.
pub fn nemo(data: &[u8]) {
    let Ok(n) = rill_checkpoint::nemo::Nemo::from_bytes("fuzz.nemo", data.to_vec()) else {
        return;
    };
    let _ = n.config_json();
    let _ = n.artifact("ipa_cmudict-0.7b_nv23.01.txt");
    if let Ok(sd) = n.state_dict() {
        let names: Vec<String> = sd.names().map(str::to_string).collect();
        read_all(names.iter().filter_map(|name| sd.tensor(name).ok()));
    }
    let _ = rill_nanocodec::load::from_nemo(&n);
    if let Ok(m) = rill_magpie::load::nemo::MagpieNemo::new(n) {
        let _ = m.load();
        let _ = m.english_lexicon();
    }
}

/// The small SentencePiece models of `testdata/musiccoca/` the text half of
/// [`musiccoca_spm`] encodes with: the oracle's tiny model (nmt_nfkc charsmap), one with
/// byte fallback and user-defined symbols, one with a small hand-written charsmap, and
/// one with user-defined pieces and scores in tenths.
pub fn musiccoca_models() -> &'static [rill_musiccoca::Spm] {
    static MODELS: OnceLock<Vec<rill_musiccoca::Spm>> = OnceLock::new();
    MODELS.get_or_init(|| {
        [
            &include_bytes!("../../testdata/musiccoca/spm.model")[..],
            include_bytes!("../../testdata/musiccoca/spm_bytes.model"),
            include_bytes!("../../testdata/musiccoca/spm_rules.model"),
            include_bytes!("../../testdata/musiccoca/spm_tenths.model"),
        ]
        .iter()
        .map(|b| rill_musiccoca::Spm::from_bytes(b, "testdata").expect("a committed model"))
        .collect()
    })
}

fn spm_check(spm: &rill_musiccoca::Spm, text: &str) {
    let ids = spm.encode(text);
    assert!(
        ids.iter().all(|&i| (i as usize) < spm.vocab_size()),
        "{ids:?}"
    );
    let p = spm.encode_prompt(text);
    assert!((1..=rill_musiccoca::spm::TEXT_LEN).contains(&p.num_tokens));
    assert_eq!(p.ids[0], rill_musiccoca::spm::TEXT_SOS_ID);
}

/// MusicCoCa's SentencePiece reader and encoder. The first byte picks what the rest
/// is: even, a model file (refused with an error, or loaded and then encoding a few
/// texts); odd, a text (bytes read as lossy UTF-8) through [`musiccoca_models`]. Every
/// id must be below the model's vocabulary size, and a prompt's ids start with 1.
pub fn musiccoca_spm(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        if let Ok(spm) = rill_musiccoca::Spm::from_bytes(rest, "fuzz.model") {
            for t in [
                "",
                "a jazz piano trio",
                "  Caf\u{e9}  3 5\tJAZZ \u{97f3}\u{1f3b9} \0 ",
                "\u{2581}x",
            ] {
                spm_check(&spm, t);
            }
        }
    } else {
        let text = String::from_utf8_lossy(rest);
        for spm in musiccoca_models() {
            spm_check(spm, &text);
        }
    }
}

/// The TFLite reader of MusicCoCa's assets: whatever verifies can be walked (tensor
/// bytes are slices of the input, f32 tensors hold exactly their shape's elements),
/// and `convert.py`'s look-ups and per-file loaders only ever return errors.
pub fn musiccoca_tflite(data: &[u8]) {
    use rill_musiccoca::{assets, tflite::TfliteModel, Weights};
    let Ok(m) = TfliteModel::from_bytes("fuzz.tflite", data.to_vec()) else {
        return;
    };
    for i in 0..m.subgraphs.len() {
        let sg = m.subgraph(i).expect("a listed subgraph opens");
        for t in 0..sg.sg.tensors.len() {
            if let Ok(Some(b)) = sg.tensor_bytes(t as i32) {
                assert!(b.len() <= data.len());
            }
            if let Ok(f) = sg.f32_data(t as i32) {
                assert_eq!(f.data.len(), f.shape.iter().product::<usize>());
                assert!(4 * f.data.len() <= data.len());
            }
        }
        for op in &sg.sg.operators {
            let _ = m.op_code(op);
            for &k in op.inputs.iter().chain(&op.outputs) {
                let _ = sg.tensor(k);
            }
        }
        let _ = sg.find("key/einsum", &[2, 3]);
        let _ = sg.find(&format!("ln/broadcast_in_dim{}", assets::NOT_1), &[3]);
        let _ = sg.arg(12);
    }
    let mut w = Weights::new();
    let _ = assets::load_frontend(&m, &mut w);
    let _ = assets::load_quantizer(&m, &mut w);
    let _ = assets::load_mapper(&m, &mut w);
    let _ = assets::load_music_encoder(&m, &mut w);
    let _ = assets::load_text_encoder(&m, &mut w);
}

/// Audio decoding (`rill_io::decode_bytes`, no extension hint: every format is
/// probed): what it accepts is whole frames of finite samples at a positive rate;
/// short accepted clips also go through the downmix and the resampler to 16 kHz,
/// whose output has exactly the promised length.
///
/// Panics inside symphonia (its header arithmetic overflows on hostile input where
/// overflow checks are on, as in fuzz builds) are caught by `rill_io`, which turns
/// them into errors; libFuzzer's panic hook would abort first, so it is wrapped to
/// let panics located in symphonia's sources through to that catch. Every other
/// panic, rill's own included, still aborts.
pub fn audio_decode(data: &[u8]) {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_symphonia = info
                .location()
                .is_some_and(|l| l.file().contains("symphonia"));
            if !in_symphonia {
                abort(info);
            }
        }));
    });
    let Ok(a) = rill_io::decode_bytes_limited(data, None, 1 << 22) else {
        return;
    };
    assert!(
        a.rate > 0 && a.channels > 0,
        "{} Hz, {} ch",
        a.rate,
        a.channels
    );
    assert_eq!(a.samples.len() % a.channels, 0);
    assert!(a.samples.iter().all(|x| x.is_finite()));
    let mono = rill_io::downmix_mono(&a.samples, a.channels);
    assert_eq!(mono.len(), a.frames());
    if mono.len() <= 1 << 16 {
        if let Ok(r) = rill_io::resample(&mono, a.rate, 16_000, 1) {
            let want = (2 * mono.len() as u128 * 16_000 + a.rate as u128) / (2 * a.rate as u128);
            assert_eq!(
                r.len() as u128,
                want,
                "{} frames at {} Hz",
                mono.len(),
                a.rate
            );
        }
    }
}

/// Small Spanish and German front ends on hand-written dictionaries, for the text half
/// of [`ipa_lexicon`].
fn ipa_fronts() -> &'static [rill_text::IpaFrontEnd] {
    static FRONTS: OnceLock<Vec<rill_text::IpaFrontEnd>> = OnceLock::new();
    FRONTS.get_or_init(|| {
        let es = "CASA  ˈkasa\nÑANDÚ  ɲandˈu\nEX-PRESIDENTE  ˈekspɾesiðˈente\n";
        let de = "Abend  ˈaːbənt\nJahr  jˈaːɐ\nÖl  ˈøːl\nSTRASSE  ʃtʁˈaːsə\n";
        vec![
            rill_text::IpaFrontEnd::with_derived_table(
                rill_text::SPANISH,
                es.as_bytes(),
                "es",
                None,
            )
            .expect("a valid dictionary"),
            rill_text::IpaFrontEnd::with_derived_table(
                rill_text::GERMAN,
                de.as_bytes(),
                "de",
                Some(b"Abend\n"),
            )
            .expect("a valid dictionary"),
        ]
    })
}

fn ipa_check(front: &rill_text::IpaFrontEnd, text: &str) {
    let Ok(encoded) = front.encode(text) else {
        return; // only over-long text is refused
    };
    let table = front.table();
    assert!(encoded.ids.iter().all(|&i| (i as usize) < table.len()));
    let space = table.space_id();
    assert_eq!(encoded.ids.first(), Some(&space));
    assert_eq!(encoded.ids.last(), Some(&space));
    assert_eq!(encoded.speakable, encoded.ids.iter().any(|&i| i != space));
}

/// The IPA pronunciation-dictionary reader of the Spanish and German front ends
/// (`rill_text::IpaFrontEnd`). The first byte picks the locale (bit 0) and what the
/// rest is (bit 1): a dictionary and a heteronym list split at the first NUL (refused,
/// or loaded, then the derived table is checked and a few texts encoded), or text for
/// two small fixed front ends. Every id is inside the table, padded with spaces.
pub fn ipa_lexicon(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 2 != 0 {
        let text = String::from_utf8_lossy(rest);
        for front in ipa_fronts() {
            ipa_check(front, &text);
        }
        return;
    }
    let locale = if mode & 1 == 0 {
        rill_text::SPANISH
    } else {
        rill_text::GERMAN
    };
    let (dict, heteronyms) = match rest.iter().position(|&b| b == 0) {
        Some(k) => (&rest[..k], Some(&rest[k + 1..])),
        None => (rest, None),
    };
    let Ok(front) =
        rill_text::IpaFrontEnd::with_derived_table(locale, dict, "fuzz.dict", heteronyms)
    else {
        return;
    };
    let tokens = front.table().tokens();
    let space = front.table().space_id() as usize;
    assert!(
        tokens[..space].windows(2).all(|w| w[0] < w[1]),
        "sorted, distinct"
    );
    assert_eq!(&tokens[space..], [" ", "<pad>", "<oov>"]);
    for text in [
        "",
        "¿Dónde está? im Jahr 2024 war |a b| x-y",
        "Abend ABEND e\u{301} \u{2019}s \u{1F600}",
        &String::from_utf8_lossy(dict),
    ] {
        ipa_check(&front, text);
    }
}
