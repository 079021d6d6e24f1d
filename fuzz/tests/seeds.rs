//! The committed seed corpora are the ones `rill_fuzz::seeds` makes (same files;
//! bytes can differ because safetensors writes its metadata map in hash order), the
//! valid ones reach the deep paths, and every committed seed runs through its
//! target's body without a panic (a plain, uninstrumented build).
//! `RILL_WRITE_SEEDS=1 cargo test --manifest-path fuzz/Cargo.toml` rewrites them.

use std::path::Path;

#[test]
fn committed_seeds_are_current_and_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
    let write = std::env::var_os("RILL_WRITE_SEEDS").is_some();
    for (target, name, bytes) in rill_fuzz::seeds::all() {
        let p = root.join(target).join(&name);
        if write {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, &bytes).unwrap();
        }
        let bytes = std::fs::read(&p)
            .unwrap_or_else(|e| panic!("{}: {e}; run with RILL_WRITE_SEEDS=1", p.display()));
        assert!(bytes.len() <= 64 << 10, "{target}/{name}: keep seeds small");
        let run = match target {
            "npy" => rill_fuzz::npy,
            "npz" => rill_fuzz::npz,
            "checkpoint" => rill_fuzz::checkpoint,
            "session_file" => rill_fuzz::session_file,
            "codec_state" => rill_fuzz::codec_state,
            "protocol" => rill_fuzz::protocol,
            "openai_speech" => rill_fuzz::openai_speech,
            "wyoming" => rill_fuzz::wyoming,
            "gguf" => rill_fuzz::gguf,
            "torch" => rill_fuzz::torch,
            "nemo" => rill_fuzz::nemo,
            "musiccoca_spm" => rill_fuzz::musiccoca_spm,
            "musiccoca_tflite" => rill_fuzz::musiccoca_tflite,
            "audio_decode" => rill_fuzz::audio_decode,
            "ipa_lexicon" => rill_fuzz::ipa_lexicon,
            "text" => rill_fuzz::text,
            "normalize" => rill_fuzz::normalize,
            "ja_dictionary" => rill_fuzz::ja_dictionary,
            other => panic!("unknown target {other}"),
        };
        run(&bytes);
    }
}

#[test]
fn valid_seeds_reach_the_deep_paths() {
    use rill_checkpoint::Checkpoint;
    let seeds = rill_fuzz::seeds::all();
    let get = |name: &str| {
        let (_, _, b) = seeds.iter().find(|(_, n, _)| n == name).unwrap();
        b.clone()
    };
    let c = Checkpoint::from_bytes("q", get("prequantized_header.safetensors")).unwrap();
    assert!(rill_mrt2::layout::validate(&c).is_ok());
    // Valid up to the codec arrays (a full codec state is megabytes): the LM
    // layer accepts them and the stream layer gets as far as the codec import.
    for name in ["fresh.state", "mid_stream.state", "greedy_int8.state"] {
        let c = Checkpoint::from_bytes(name, get(name)).unwrap();
        let id = rill_fuzz::tiny_id(&c);
        rill_mrt2::session_file::read(&c, &id).unwrap();
        let e = rill_stream::Snapshot::from_bytes_for(&get(name), &id, rill_fuzz::zero_codec())
            .unwrap_err();
        assert!(e.to_string().contains("codec state"), "{name}: {e}");
    }
    for (name, word) in [
        ("lm_only.state", "no stream part"),
        ("notes_mismatch.state", "conditioning.notes[64]"),
    ] {
        let c = Checkpoint::from_bytes(name, get(name)).unwrap();
        let id = rill_fuzz::tiny_id(&c);
        let e = rill_stream::Snapshot::from_bytes_for(&get(name), &id, rill_fuzz::zero_codec())
            .unwrap_err();
        assert!(e.to_string().contains(word), "{name}: {e}");
    }
    for name in ["f32.npy", "fortran.npy", "big_endian.npy", "bool.npy"] {
        rill_io::npy_from_bytes(name, &get(name)).unwrap();
    }
    let z = rill_io::Npz::from_bytes("z", &get("all_dtypes.npz")).unwrap();
    assert_eq!(z.arrays.len(), 8);
    assert!(rill_server::protocol::parse(std::str::from_utf8(&get("start.json")).unwrap()).is_ok());
    let g = rill_checkpoint::gguf::Gguf::from_bytes("g", get("magpie.gguf")).unwrap();
    assert_eq!(
        g.tensor("encoder.layers.0.pos_ff.proj.conv.weight.k0")
            .unwrap()
            .to_f32()
            .unwrap(),
        [1.0, -1.0, 0.0, 1.0]
    );
    assert!(rill_checkpoint::gguf::Gguf::from_bytes("t", get("truncated.gguf")).is_err());
    assert_eq!(
        rill_checkpoint::torch::StateDict::parse(&get("dtypes.ckpt"))
            .unwrap()
            .len(),
        11
    );
    for name in ["model_bytes.bin", "model_rules.bin", "model_plain.bin"] {
        rill_musiccoca::Spm::from_bytes(&get(name)[1..], name).unwrap();
    }
    assert!(rill_musiccoca::Spm::from_bytes(&get("model_truncated.bin")[1..], "t").is_err());
    assert_eq!(rill_fuzz::musiccoca_models().len(), 4);
    let n = rill_checkpoint::nemo::Nemo::from_bytes("n", get("magpie.nemo")).unwrap();
    assert_eq!(n.state_dict().unwrap().len(), 8);
    assert!(n
        .artifact("ipa_cmudict-0.7b_nv23.01.txt")
        .unwrap()
        .is_some());
    let t = rill_musiccoca::tflite::TfliteModel::from_bytes("t", get("external.tflite")).unwrap();
    let main = t.subgraph(0).unwrap();
    assert_eq!(main.find("far/away", &[2]).unwrap().data, [0.5, 8.0]);
    assert_eq!(main.find("value/einsum", &[2, 3]).unwrap().data, [-1.0; 6]);
    assert_eq!(t.subgraph(2).unwrap().arg(12).unwrap().data, [7.0, 8.0]);
    assert!(rill_musiccoca::tflite::TfliteModel::from_bytes("t", get("truncated.tflite")).is_err());
}

#[test]
fn audio_seeds_decode_or_fail_as_meant() {
    let seeds = rill_fuzz::seeds::all();
    let get = |name: &str| {
        let (_, _, b) = seeds.iter().find(|(_, n, _)| n == name).unwrap();
        b.clone()
    };
    let a = rill_io::decode_bytes(&get("mono_i16.wav"), None).unwrap();
    assert_eq!((a.rate, a.channels, a.frames()), (16_000, 1, 800));
    let a = rill_io::decode_bytes(&get("stereo_f32.wav"), None).unwrap();
    assert_eq!((a.rate, a.channels, a.frames()), (44_100, 2, 300));
    let a = rill_io::decode_bytes(&get("prime_rate.wav"), None).unwrap();
    assert_eq!(
        rill_io::resample(&a.samples, a.rate, 16_000, 1)
            .unwrap()
            .len(),
        73
    );
    for bad in ["truncated.wav", "rate0.wav"] {
        assert!(rill_io::decode_bytes(&get(bad), None).is_err(), "{bad}");
    }
}
