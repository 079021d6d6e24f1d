//! Seeds of the MusicCoCa readers (SentencePiece models and texts, TFLite files) and of
//! audio decoding (small WAV files).

use super::Seed;

pub(super) fn musiccoca_spm_seeds() -> Vec<Seed> {
    let tagged = |mode: u8, b: &[u8]| [&[mode][..], b].concat();
    let rules = include_bytes!("../../../testdata/musiccoca/spm_rules.model");
    let mut v: Vec<Seed> = vec![
        (
            "musiccoca_spm",
            "model_bytes.bin".into(),
            tagged(
                0,
                include_bytes!("../../../testdata/musiccoca/spm_bytes.model"),
            ),
        ),
        ("musiccoca_spm", "model_rules.bin".into(), tagged(0, rules)),
        (
            "musiccoca_spm",
            "model_truncated.bin".into(),
            tagged(0, &rules[..rules.len() / 2]),
        ),
        (
            "musiccoca_spm",
            "model_plain.bin".into(),
            tagged(
                0,
                include_bytes!("../../../testdata/musiccoca/spm_plain.model"),
            ),
        ),
    ];
    for (name, text) in [
        ("text_prompt.bin", &b"A Jazz Piano Trio, 120 BPM"[..]),
        (
            "text_unicode.bin",
            "Caf\u{e9} \u{ff2a}\u{ff21}\u{ff3a}\u{ff3a}\u{3000}3 5 \u{fb01} \u{97f3}\u{697d} \u{1f3b9}\t\n\0 \u{2581}".as_bytes(),
        ),
        ("text_invalid_utf8.bin", b"\xff\xe2\x96a \xc3"),
    ] {
        v.push(("musiccoca_spm", name.into(), tagged(1, text)));
    }
    v
}

/// A small TFLite model: two subgraphs, float and int constants (a `;`-fused name, a
/// look-alike), activations, FULLY_CONNECTED and GATHER ops, one buffer after the
/// flatbuffer (`offset`/`size`).
fn tflite_model(external: bool) -> Vec<u8> {
    use rill_musiccoca::tflite::write::{ModelSpec, SubgraphSpec, TensorData, TensorSpec};
    use rill_musiccoca::tflite::{builtin, tensor_type};
    let mut main = SubgraphSpec::new("main");
    let x = main.activation("input", &[2, 3], tensor_type::FLOAT32);
    let k = main.constant(
        "a/key/einsum;a/value/einsum",
        &[2, 3],
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    );
    main.constant("a/value/einsum", &[2, 3], vec![-1.0; 6]);
    main.constant("b/ln/broadcast_in_dim1", &[3], vec![1.0, 1.5, 2.0]);
    let b = main.constant("b/ln/broadcast_in_dim", &[3], vec![0.0, 0.5, 0.25]);
    let ids = main.push(TensorSpec {
        name: "ids".into(),
        shape: vec![2],
        dtype: tensor_type::INT32,
        data: TensorData::Bytes(vec![1, 0, 0, 0, 2, 0, 0, 0]),
    });
    if external {
        main.push(TensorSpec {
            name: "far/away".into(),
            shape: vec![2],
            dtype: tensor_type::FLOAT32,
            data: TensorData::External(
                [0.5f32, 8.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
            ),
        });
    }
    let y = main.activation("out", &[2, 2], tensor_type::FLOAT32);
    main.op(builtin::FULLY_CONNECTED, &[x, k, b], &[y]);
    main.op(builtin::GATHER, &[k, ids], &[y]);
    main.inputs = vec![x];
    main.outputs = vec![y];
    let mut body = SubgraphSpec::new("body");
    body.activation("jax2tf_arg_1/x", &[2], tensor_type::FLOAT32);
    body.constant("jax2tf_arg_12/w", &[2], vec![7.0, 8.0]);
    ModelSpec {
        description: "rill fuzz seed".into(),
        subgraphs: vec![main, SubgraphSpec::new("cond"), body],
    }
    .to_bytes()
}

pub(super) fn tflite_seeds() -> Vec<Seed> {
    let small = tflite_model(false);
    let truncated = small[..small.len() - 24].to_vec();
    vec![
        ("musiccoca_tflite", "small.tflite".into(), small),
        (
            "musiccoca_tflite",
            "external.tflite".into(),
            tflite_model(true),
        ),
        ("musiccoca_tflite", "truncated.tflite".into(), truncated),
    ]
}

/// A canonical WAV file: `fmt ` (tag 1 = PCM, 3 = IEEE float) then `data`.
fn wav(tag: u16, rate: u32, channels: u16, bits: u16, data: &[u8]) -> Vec<u8> {
    let block = channels * bits / 8;
    let mut v = b"RIFF".to_vec();
    v.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    v.extend_from_slice(b"WAVEfmt ");
    v.extend_from_slice(&16u32.to_le_bytes());
    v.extend_from_slice(&tag.to_le_bytes());
    v.extend_from_slice(&channels.to_le_bytes());
    v.extend_from_slice(&rate.to_le_bytes());
    v.extend_from_slice(&(rate * u32::from(block)).to_le_bytes());
    v.extend_from_slice(&block.to_le_bytes());
    v.extend_from_slice(&bits.to_le_bytes());
    v.extend_from_slice(b"data");
    v.extend_from_slice(&(data.len() as u32).to_le_bytes());
    v.extend_from_slice(data);
    v
}

pub(super) fn audio_seeds() -> Vec<Seed> {
    let i16s: Vec<u8> = (0..800i32)
        .flat_map(|i| (((i * 7919) % 65536 - 32768) as i16).to_le_bytes())
        .collect();
    let f32s: Vec<u8> = (0..600)
        .flat_map(|i| ((i as f32 * 0.37).sin() * 0.9).to_le_bytes())
        .collect();
    let mono = wav(1, 16_000, 1, 16, &i16s);
    let mut truncated = mono.clone();
    truncated.truncate(mono.len() / 2);
    vec![
        ("audio_decode", "mono_i16.wav".into(), mono),
        (
            "audio_decode",
            "stereo_f32.wav".into(),
            wav(3, 44_100, 2, 32, &f32s),
        ),
        ("audio_decode", "truncated.wav".into(), truncated),
        (
            "audio_decode",
            "rate0.wav".into(),
            wav(1, 0, 1, 16, &i16s[..64]),
        ),
        (
            "audio_decode",
            "prime_rate.wav".into(),
            wav(1, 44_101, 1, 16, &i16s[..400]),
        ),
    ]
}
