//! The committed seed corpora (`fuzz/seeds/<target>/`), made with rill's own
//! writers: a few valid inputs per target and a few near-valid ones (truncated,
//! one field off), all kilobytes at most. `tests/seeds.rs` checks the committed
//! files equal these and rewrites them with `RILL_WRITE_SEEDS=1`.

use std::collections::HashMap;
use std::path::PathBuf;

use rill_checkpoint::layout::RVQ_CODEBOOK;
use rill_checkpoint::quantized::{self, part_name};
use rill_checkpoint::writer::{self, Tensor};
use rill_checkpoint::Dtype;
use rill_io::{Array, Data};
use rill_mrt2::conditioning::Conditioning;
use rill_mrt2::layout::{decoder_embedding_name, tensor_specs};
use rill_mrt2::sampler::SamplingParams;
use rill_mrt2::session_file::{ModelId, SessionData};
use rill_mrt2::{LmState, ModelKind, Precision, LEVELS};

/// One seed: target, file name, bytes.
pub type Seed = (&'static str, String, Vec<u8>);

/// The seeds of MusicCoCa's readers and of audio decoding.
mod media;
use media::{audio_seeds, musiccoca_spm_seeds, tflite_seeds};

/// A scratch file path for the writers (which write files, not buffers), in a
/// directory of its own: tests build the seeds on several threads at once, and a
/// shared directory could be removed under another thread's writer.
fn scratch(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("rill-fuzz-seeds-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("creating a scratch directory");
    dir.join(name)
}

/// Runs a writer on a scratch file and returns the bytes it wrote.
fn written(name: &str, write: impl FnOnce(&std::path::Path)) -> Vec<u8> {
    let p = scratch(name);
    write(&p);
    let bytes = std::fs::read(&p).expect("reading a scratch file");
    std::fs::remove_file(&p).expect("removing a scratch file");
    let _ = std::fs::remove_dir(p.parent().expect("scratch dir"));
    bytes
}

fn arrays() -> Vec<(&'static str, Array)> {
    vec![
        (
            "f32",
            Array::new(vec![2, 3], Data::F32(vec![1.0, -2.5, 0.0, 3.25, 1e-3, 7.0])),
        ),
        ("f64", Array::new(vec![2], Data::F64(vec![0.5, -0.25]))),
        (
            "i16",
            Array::new(vec![3, 1, 2], Data::I16(vec![1, -2, 3, -4, 5, -32768])),
        ),
        (
            "i32",
            Array::new(
                vec![1, 12],
                Data::I32((0..12).map(|k| 6 + 1024 * k).collect()),
            ),
        ),
        ("i64", Array::new(vec![0, 4], Data::I64(vec![]))),
        (
            "u32",
            Array::new(vec![2, 2], Data::U32(vec![0, 42, 7, u32::MAX])),
        ),
        ("u8", Array::new(vec![], Data::U8(vec![9]))),
        (
            "bool",
            Array::new(vec![3], Data::Bool(vec![true, false, true])),
        ),
    ]
}

fn npy_seeds() -> Vec<Seed> {
    let mut out = Vec::new();
    for (name, a) in arrays() {
        let b = written("a.npy", |p| rill_io::write_npy(p, &a).expect("writing npy"));
        out.push(("npy", format!("{name}.npy"), b));
    }
    // Fortran order, big-endian, truncated data, an unsupported dtype.
    let header = rill_io::raw_npy;
    let d: Vec<u8> = (0u8..48).collect();
    out.push((
        "npy",
        "fortran.npy".into(),
        header(
            "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 4), }",
            &d,
        ),
    ));
    out.push((
        "npy",
        "big_endian.npy".into(),
        header(
            "{'descr': '>i4', 'fortran_order': False, 'shape': (2, 2, 3), }",
            &d,
        ),
    ));
    out.push((
        "npy",
        "truncated.npy".into(),
        header(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (7,), }",
            &d,
        ),
    ));
    out.push((
        "npy",
        "unicode.npy".into(),
        header(
            "{'descr': '<U3', 'fortran_order': False, 'shape': (), }",
            &d[..12],
        ),
    ));
    out
}

fn npz_seeds() -> Vec<Seed> {
    let a = arrays();
    let all = written("a.npz", |p| {
        rill_io::write_npz(p, a.iter().map(|(n, a)| (*n, a))).expect("writing npz")
    });
    let one = written("b.npz", |p| {
        rill_io::write_npz(p, [("tokens", &a[3].1)]).expect("writing npz")
    });
    let cut = one[..one.len() - 30].to_vec();
    vec![
        ("npz", "all_dtypes.npz".into(), all),
        ("npz", "tokens.npz".into(), one),
        ("npz", "truncated.npz".into(), cut),
    ]
}

fn safetensors(
    name: &str,
    tensors: Vec<(String, Tensor<'static>)>,
    meta: HashMap<String, String>,
) -> Vec<u8> {
    written(name, |p| {
        writer::write(p, &tensors, meta).expect("writing safetensors")
    })
}

fn checkpoint_seeds() -> Vec<Seed> {
    let mut out = Vec::new();
    let small = vec![
        (
            "a".to_string(),
            Tensor::f32(vec![2, 2], &[1.0, 2.0, 3.0, 4.0]),
        ),
        ("b".to_string(), Tensor::bf16(&[0x3f80, 0xc020])),
        ("c".to_string(), Tensor::zeros(Dtype::F16, &[3])),
        ("d".to_string(), Tensor::u8(vec![1, 2, 3])),
        (
            decoder_embedding_name(),
            Tensor::zeros(Dtype::F32, &[0, 1024]),
        ),
    ];
    let meta = HashMap::from([("rill.note".to_string(), "seed".to_string())]);
    out.push((
        "checkpoint",
        "small.safetensors".into(),
        safetensors("c.safetensors", small, meta),
    ));
    // The codebook with too few levels (the codec loader's first check).
    let rvq = vec![(
        RVQ_CODEBOOK.to_string(),
        Tensor::zeros(Dtype::BF16, &[1, 4, 256]),
    )];
    out.push((
        "checkpoint",
        "codec_rvq.safetensors".into(),
        safetensors("r.safetensors", rvq, HashMap::new()),
    ));
    // Header-only pre-quantised mrt2_small: every tensor present as an empty
    // `#int8:q` part, so layout validation passes and the model loader runs.
    let parts = tensor_specs(ModelKind::Small)
        .into_iter()
        .map(|s| {
            (
                part_name(&s.name, "int8", "q"),
                Tensor::zeros(Dtype::U8, &[0]),
            )
        })
        .collect();
    let meta = HashMap::from([
        (quantized::PRECISION_KEY.to_string(), "int8".to_string()),
        (quantized::MODEL_KEY.to_string(), "mrt2_small".to_string()),
        (
            quantized::FORMAT_KEY.to_string(),
            quantized::FORMAT.to_string(),
        ),
    ]);
    out.push((
        "checkpoint",
        "prequantized_header.safetensors".into(),
        safetensors("q.safetensors", parts, meta),
    ));
    out
}

/// The stream part of a state file (see `rill_stream`'s `state.rs`): notes 60 and
/// 64 sustained in onset mode 0, which gives the pianoroll `session` stores.
fn stream_json(pending: Option<[u32; LEVELS]>) -> String {
    let mut notes = vec![0u8; 128];
    notes[60] = 2;
    notes[64] = 1;
    serde_json::json!({
        "pending": pending.map(|p| p.to_vec()),
        "notes": notes,
        "onset_mode": 0,
        "unmask_width": 0,
    })
    .to_string()
}

fn session(frame: u64) -> SessionData {
    let c = crate::tiny_config();
    let n = c.dims.temporal.layers * c.dims.window * c.temporal_inner();
    let mut conditioning = Conditioning::default()
        .with_held_notes(&[60, 64])
        .expect("MIDI pitches");
    conditioning.style = Some([325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]);
    conditioning.drums = Some(false);
    let prev = if frame == 0 {
        [0; LEVELS]
    } else {
        std::array::from_fn(|k| (6 + 1024 * k + k) as u32)
    };
    SessionData {
        state: LmState {
            frame,
            prev,
            key: [0, 42],
            self_k: vec![0.5; n],
            self_v: vec![-0.5; n],
            cross_k: vec![1.0; n],
            cross_v: vec![0.0; n],
        },
        sampling: SamplingParams::default(),
        conditioning,
        // One codec array: the full codec state is megabytes, too big for a seed
        // (the `codec_state` target fuzzes its import).
        extra: if frame == 0 {
            vec![]
        } else {
            vec![("codec/lookahead/countdown".into(), vec![1], vec![4.0])]
        },
        meta: vec![("stream".into(), stream_json((frame > 0).then_some(prev)))],
    }
}

fn session_seeds() -> Vec<Seed> {
    let write = |d: &SessionData, precision| {
        let id = ModelId {
            config: crate::tiny_config(),
            precision,
            weights: 0x5eed_0000_0000_0001,
        };
        d.to_bytes(&id).expect("writing a state file")
    };
    let mut greedy = session(0);
    greedy.sampling.temperature = 0.0;
    greedy.conditioning.style = None;
    let mut bad_t = session(3);
    bad_t.sampling.temperature = f32::NAN;
    let mut lm_only = session(2);
    lm_only.meta.clear();
    let mut mismatch = session(2);
    mismatch.conditioning.notes[64] = rill_mrt2::conditioning::NoteValue::Off;
    [
        ("fresh", write(&session(0), Precision::F32)),
        ("mid_stream", write(&session(45), Precision::F32)),
        ("greedy_int8", write(&greedy, Precision::Int8)),
        ("nan_temperature", write(&bad_t, Precision::F32)),
        ("lm_only", write(&lm_only, Precision::F32)),
        ("notes_mismatch", write(&mismatch, Precision::F32)),
    ]
    .into_iter()
    .map(|(n, b)| ("session_file", format!("{n}.state"), b))
    .collect()
}

fn codec_state_seeds() -> Vec<Seed> {
    // Edit lists for `codec_state` (op byte, then its operands).
    let ops: [(&str, &[u8]); 7] = [
        ("unchanged", &[]),
        // Renames array 0 to "É", then cuts that name after one char (once a panic:
        // the harness cut names at a byte inside the two-byte char).
        (
            "non_ascii_rename",
            &[
                2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xc9, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0,
                0, 0,
            ],
        ),
        ("drop_first", &[0, 0, 0, 0, 0]),
        ("set_nan", &[5, 1, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0xc0, 0x7f]),
        // Array 17 is the lookahead countdown: set to 1, and to −0 (once a failed
        // check: an accepted −0 reads back as 0).
        ("countdown", &[5, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3f]),
        (
            "countdown_negative_zero",
            &[5, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80],
        ),
        ("reshape", &[3, 2, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0]),
    ];
    ops.iter()
        .map(|(n, b)| ("codec_state", format!("{n}.bin"), b.to_vec()))
        .collect()
}

fn openai_speech_seeds() -> Vec<Seed> {
    let bodies = [
        (
            "wav",
            r#"{"model":"magpie-tts-multilingual","input":"Hello there.","voice":"Sofia","response_format":"wav"}"#,
        ),
        (
            "pcm_extra",
            r#"{"model":"tts-1","input":"Hola.","voice":2,"response_format":"pcm","speed":1.0,"language":"es","normalize":false,"seed":3,"max_frames":40}"#,
        ),
        (
            "bad_voice",
            r#"{"model":"tts-1","input":"Hi.","voice":"alloy"}"#,
        ),
        (
            "bad_fields",
            r#"{"model":"tts-1","input":"Hi.","voice":"0","speed":1e308,"instructions":"x"}"#,
        ),
    ];
    bodies
        .iter()
        .map(|(n, b)| ("openai_speech", format!("{n}.json"), b.as_bytes().to_vec()))
        .collect()
}

fn wyoming_seeds() -> Vec<Seed> {
    let events: [(&str, &[u8]); 6] = [
        ("describe", b"{\"type\":\"describe\"}\n"),
        (
            "synthesize",
            b"{\"type\":\"synthesize\",\"version\":\"1.10.2\",\"data_length\":66}\n{\"text\":\"It costs $3.50.\",\"voice\":{\"name\":\"Sofia\",\"speaker\":null}}",
        ),
        (
            "synthesize_inline_language",
            b"{\"type\":\"synthesize\",\"data\":{\"text\":\"Hallo.\",\"voice\":{\"language\":\"de_DE\"}}}\n",
        ),
        (
            "streamed",
            b"{\"type\":\"synthesize-start\",\"data\":{\"voice\":{\"name\":\"2\"}}}\n{\"type\":\"synthesize-chunk\",\"data\":{\"text\":\"Hi \"}}\n{\"type\":\"synthesize-stop\"}\n",
        ),
        (
            "audio_chunk",
            b"{\"type\":\"audio-chunk\",\"data\":{\"rate\":22050,\"width\":2,\"channels\":1},\"payload_length\":4}\n\x01\x02\x03\x04{\"type\":\"ping\"}\n",
        ),
        (
            "bad_lengths",
            b"{\"type\":\"synthesize\",\"data_length\":-1,\"payload_length\":1e9}\n",
        ),
    ];
    events
        .iter()
        .map(|(n, b)| ("wyoming", format!("{n}.bin"), b.to_vec()))
        .collect()
}

fn protocol_seeds() -> Vec<Seed> {
    let msgs = [
        (
            "start",
            r#"{"type":"start","seed":42,"style_codes":[325,98,979,657,802,453,475,622,729,934,567,782],"notes":[60,64,67],"drums":"on","temperature":1.3,"top_k":40,"cfg_musiccoca":3,"cfg_notes":1,"cfg_drums":1}"#,
        ),
        (
            "control",
            r#"{"type":"control","notes":[],"style_codes":null,"drums":null,"seed":7}"#,
        ),
        (
            "prompts",
            r#"{"type":"control","prompts":[{"text":"jazz","weight":0.7},{"clip":"00ff00ff00ff00ff","weight":0.3}]}"#,
        ),
        ("stop", r#"{"type":"stop"}"#),
        ("reset", r#"{"type":"reset"}"#),
        ("bad_field", r#"{"type":"control","volume":3}"#),
        (
            "bad_range",
            r#"{"type":"control","temperature":1e300,"top_k":0,"notes":[128]}"#,
        ),
    ];
    msgs.iter()
        .map(|(n, m)| ("protocol", format!("{n}.json"), m.as_bytes().to_vec()))
        .collect()
}

/// A GGUF v3 file (ggml's layout) with one value of each metadata kind and the given
/// tensors (`name`, ggml `ne` dims, ggml type, bytes).
fn gguf_file(arch: &str, tensors: &[(&str, &[u64], u32, Vec<u8>)]) -> Vec<u8> {
    fn s(b: &mut Vec<u8>, t: &str) {
        b.extend((t.len() as u64).to_le_bytes());
        b.extend(t.as_bytes());
    }
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend((tensors.len() as u64).to_le_bytes());
    b.extend(4u64.to_le_bytes());
    s(&mut b, "general.architecture");
    b.extend(8u32.to_le_bytes());
    s(&mut b, arch);
    s(&mut b, "general.alignment");
    b.extend(4u32.to_le_bytes());
    b.extend(32u32.to_le_bytes());
    s(&mut b, "x.flag");
    b.extend(7u32.to_le_bytes());
    b.push(1);
    s(&mut b, "x.list");
    b.extend(9u32.to_le_bytes());
    b.extend(5u32.to_le_bytes());
    b.extend(2u64.to_le_bytes());
    b.extend(3i32.to_le_bytes());
    b.extend(4i32.to_le_bytes());
    let mut offset = 0u64;
    let mut data = Vec::new();
    for (name, ne, ty, bytes) in tensors {
        s(&mut b, name);
        b.extend((ne.len() as u32).to_le_bytes());
        ne.iter().for_each(|d| b.extend(d.to_le_bytes()));
        b.extend(ty.to_le_bytes());
        b.extend(offset.to_le_bytes());
        data.extend(bytes);
        while !data.len().is_multiple_of(32) {
            data.push(0);
        }
        offset = data.len() as u64;
    }
    while !b.len().is_multiple_of(32) {
        b.push(0);
    }
    b.extend(data);
    b
}

fn gguf_seeds() -> Vec<Seed> {
    let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let tensors: Vec<(&str, &[u64], u32, Vec<u8>)> = vec![
        (
            "text_embedding.weight",
            &[2, 2],
            0,
            f32s(&[1.0, 2.0, 3.0, 4.0]),
        ),
        (
            "encoder.layers.0.pos_ff.proj.conv.weight.k0",
            &[2, 2],
            1,
            vec![0, 60, 0, 188, 0, 0, 0, 60],
        ),
        ("_baked_embedding_T", &[], 26, 3i32.to_le_bytes().to_vec()),
    ];
    let magpie = gguf_file("magpietts", &tensors);
    let codec = gguf_file(
        "nemo-nano-codec",
        &[("dec.pre.b", &[1, 2, 1], 0, f32s(&[0.5, -0.5]))],
    );
    let truncated = magpie[..magpie.len() - 40].to_vec(); // into the last tensor
    vec![
        ("gguf", "magpie.gguf".into(), magpie),
        ("gguf", "codec.gguf".into(), codec),
        ("gguf", "truncated.gguf".into(), truncated),
    ]
}

/// Real `torch.save` files (torch 2.12), from the loader fixtures.
const TORCH_DTYPES: &[u8] = include_bytes!("../../testdata/magpie/loaders/torch_dtypes.ckpt");
const TORCH_MODULE: &[u8] = include_bytes!("../../testdata/magpie/loaders/torch_module.ckpt");

fn torch_seeds() -> Vec<Seed> {
    vec![
        ("torch", "dtypes.ckpt".into(), TORCH_DTYPES.to_vec()),
        ("torch", "module.ckpt".into(), TORCH_MODULE.to_vec()),
    ]
}

/// A `.nemo`-style tar (`./` members) of a config, an artifact and a torch checkpoint.
fn nemo_tar(config: &str) -> Vec<u8> {
    let mut out = tar::Builder::new(Vec::new());
    for (name, data) in [
        (
            "./0123_ipa_cmudict-0.7b_nv23.01.txt",
            &b"HELLO  h\xc9\x99\xcb\x88lo\xca\x8a\n"[..],
        ),
        ("./model_config.yaml", config.as_bytes()),
        ("./model_weights.ckpt", TORCH_MODULE),
    ] {
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        out.append_data(&mut h, name, data).expect("in-memory tar");
    }
    out.into_inner().expect("in-memory tar")
}

fn nemo_seeds() -> Vec<Seed> {
    let magpie = "target: nemo.collections.tts.models.magpietts.MagpieTTSModel\nmodel_type: decoder_ce\n\
                  inference_parameters:\n  temperature: 0.6\n  prior_epsilon: 0.1\n  apply_prior_to_layers:\n  - 0\n";
    let codec =
        "target: nemo.collections.tts.models.audio_codec.AudioCodecModel\naudio_decoder:\n  \
                 base_channels: 64\n  up_sample_rates: [8, 8, 4, 2, 2]\n";
    vec![
        ("nemo", "magpie.nemo".into(), nemo_tar(magpie)),
        ("nemo", "codec.nemo".into(), nemo_tar(codec)),
    ]
}

fn text_seeds() -> Vec<Seed> {
    let texts: [(&str, u8, &str); 6] = [
        (
            "en",
            0,
            "Hello world, I read the rill docs. Dr. Smith — 42 😀",
        ),
        ("fr", 5, "Bonjour <pad> a </s> <extra_id_3> e\u{301}té !"),
        ("hi", 6, "नमस्ते, आप कैसे हैं? Thank you ४२।ठीक॥ क़"),
        ("it", 7, "Perché l'Italia è così bella? Perché sì!"),
        ("vi", 8, "Xin chào, bạn có khỏe không?"),
        ("zh", 3, "你好。你好吗？好！"),
    ];
    texts
        .iter()
        .map(|(n, pick, t)| {
            let mut b = vec![*pick];
            b.extend_from_slice(t.as_bytes());
            ("text", format!("{n}.txt"), b)
        })
        .collect()
}

fn normalize_seeds() -> Vec<Seed> {
    let texts: [(&str, u8, &str); 3] = [
        (
            "en_money_dates",
            0,
            "The coffee costs $3.50 on January 5, 2024 at 3:30 pm; about 1,200 people, 15%.",
        ),
        (
            "en_mixed",
            0,
            "Dr. Smith lives at 123 Main St. Call 555-123-4567. It was 72°F, 5 km, 2-3 cm, \
             the 1990s, 1/2 cup, World War II, 14:05, 2024-01-05, 01/05/2024, -5, 21st.",
        ),
        ("de", 2, "Es kostet 3,50 €."),
    ];
    texts
        .iter()
        .map(|(n, pick, t)| {
            let mut b = vec![*pick];
            b.extend_from_slice(t.as_bytes());
            ("normalize", format!("{n}.txt"), b)
        })
        .collect()
}

/// Every seed of every target.
pub fn all() -> Vec<Seed> {
    let mut v = npy_seeds();
    v.extend(npz_seeds());
    v.extend(checkpoint_seeds());
    v.extend(session_seeds());
    v.extend(codec_state_seeds());
    v.extend(protocol_seeds());
    v.extend(openai_speech_seeds());
    v.extend(wyoming_seeds());
    v.extend(gguf_seeds());
    v.extend(torch_seeds());
    v.extend(nemo_seeds());
    v.extend(musiccoca_spm_seeds());
    v.extend(tflite_seeds());
    v.extend(audio_seeds());
    v.extend(ipa_lexicon_seeds());
    v.extend(text_seeds());
    v.extend(normalize_seeds());
    v.extend(ja_dictionary_seeds());
    v
}

/// `[u16 length][bytes]`.
fn push_section(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = u16::try_from(bytes.len()).expect("a seed section under 64 KB");
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(bytes);
}

/// rill's tiny written dictionary (`rill_text::japanese::writer::sample`) in the
/// structured form of `ja_dictionary` with three texts, and raw files cut short.
fn ja_dictionary_seeds() -> Vec<Seed> {
    let [sys, unk, matrix, chars] = rill_text::japanese::writer::sample();
    let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    // char.bin back to its structured form: names, then runs of equal infos.
    let count = word(&chars) as usize;
    let mut spec = vec![count as u8];
    for i in 0..count {
        let field = &chars[4 + 32 * i..4 + 32 * (i + 1)];
        let name = &field[..field.iter().position(|&b| b == 0).unwrap_or(32)];
        spec.push(name.len() as u8);
        spec.extend_from_slice(name);
    }
    let map: Vec<u32> = chars[4 + 32 * count..].chunks_exact(4).map(word).collect();
    let fallback = map[0];
    spec.extend_from_slice(&fallback.to_le_bytes());
    let mut code = 0;
    while code < map.len() {
        let start = code;
        while code < map.len() && map[code] == map[start] {
            code += 1;
        }
        if map[start] != fallback {
            spec.extend_from_slice(&(start as u16).to_le_bytes());
            spec.extend_from_slice(&((code - 1) as u16).to_le_bytes());
            spec.extend_from_slice(&map[start].to_le_bytes());
        }
    }
    let mut mspec = vec![matrix[0], matrix[2]];
    mspec.extend_from_slice(&matrix[4..]);
    let texts = [
        ("today", "今日は晴れです。"),
        ("mixed", "一時間２０円、ＡＢＣ x😀 ｶﾞ"),
        ("empty", ""),
    ];
    let mut seeds: Vec<Seed> = texts
        .iter()
        .map(|(name, text)| {
            let mut b = vec![1];
            for part in [&sys, &unk, &mspec, &spec] {
                push_section(&mut b, part);
            }
            b.extend_from_slice(text.as_bytes());
            ("ja_dictionary", format!("{name}.bin"), b)
        })
        .collect();
    let mut raw = vec![0];
    for part in [&sys, &unk, &matrix[..matrix.len().min(512)], &chars[..512]] {
        push_section(&mut raw, part);
    }
    raw.extend_from_slice("今日".as_bytes());
    seeds.push(("ja_dictionary", "raw_truncated.bin".into(), raw));
    seeds
}

/// Spanish and German dictionaries (valid, NFD, Windows line ends, one line without a
/// pronunciation, invalid UTF-8) and texts for the small fixed front ends.
fn ipa_lexicon_seeds() -> Vec<Seed> {
    let seed = |name: &str, mode: u8, body: &[u8]| -> Seed {
        let mut bytes = vec![mode];
        bytes.extend_from_slice(body);
        ("ipa_lexicon", name.into(), bytes)
    };
    let es = ";;; comentario\nA  ˈa\nCASA  ˈkasa\nCASA(1)  ˈkaza\nÑANDÚ  ɲandˈu\nÁRBOL  ˈaɾβol\n";
    let de = "'n  ˈɛn\nAbend  ˈaːbənt\nABEND  ˈaːbn̩t\nÖl  ˈøːl\nz.B.  t͡sbˈeː\n\0Abend\nÖl\n\n";
    vec![
        seed("es.dict", 0, es.as_bytes()),
        seed("de.dict", 1, de.as_bytes()),
        seed(
            "de_nfd_crlf.dict",
            1,
            "O\u{308}l  ˈøːl\r\nMu\u{308}ller  ˈmʏlɐ\r\n".as_bytes(),
        ),
        seed("no_pronunciation.dict", 0, b"CASA  k\nPERRO\n"),
        seed("invalid_utf8.dict", 0, b"CASA  \xff\xfe\n"),
        seed(
            "text_es.txt",
            2,
            "¿Dónde está la casa? «Ñandú» 2024 |a b|".as_bytes(),
        ),
        seed(
            "text_de.txt",
            3,
            "„Abend“ – im Jahr 2024 war's Öl-Preis \u{1F600} e\u{301}".as_bytes(),
        ),
    ]
}
