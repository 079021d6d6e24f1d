//! The foreign container readers against files made with the real tools
//! (`testdata/magpie/make_loader_fixtures.py`: torch 2.12 `torch.save`, Python's
//! `tarfile`, PyPI `gguf` 0.19): every tensor must come out exactly as written
//! (sha256 of the widened values), and hostile inputs must give errors, never panics.

use std::io::Write;

use rill_checkpoint::gguf::{Gguf, MetaValue};
use rill_checkpoint::nemo::Nemo;
use rill_checkpoint::pickle;
use rill_checkpoint::raw::RawTensor;
use rill_checkpoint::torch::StateDict;
use rill_testkit::{loader_expected as expected, require_loader as require};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn hex(d: impl AsRef<[u8]>) -> String {
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of the values widened as the generator documents (f32 / i64, little-endian).
fn digest(t: &RawTensor<'_>) -> String {
    let mut h = Sha256::new();
    if t.dtype.is_float() {
        for v in t.to_f32().unwrap() {
            h.update(v.to_le_bytes());
        }
    } else {
        for v in t.to_i64().unwrap() {
            h.update(v.to_le_bytes());
        }
    }
    hex(h.finalize())
}

fn check(t: &RawTensor<'_>, want: &Value) {
    let shape: Vec<usize> = want["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(t.shape, shape, "{}", t.name);
    assert_eq!(digest(t), want["sha256"].as_str().unwrap(), "{}", t.name);
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn torch_save_of_mixed_dtypes_views_and_parameters_reads_exactly() {
    let bytes = std::fs::read(require("torch_dtypes.ckpt")).unwrap();
    let sd = StateDict::parse(&bytes).unwrap();
    let want = &expected()["torch_dtypes"];
    let mut names: Vec<String> = sd.names().map(str::to_string).collect();
    let mut wanted = keys(want);
    names.sort();
    wanted.sort();
    assert_eq!(names, wanted);
    for name in sd.names() {
        check(&sd.tensor(name).unwrap(), &want[name]);
    }
    assert_eq!(sd.tensor("scalar").unwrap().to_i64().unwrap(), vec![7]);
}

#[test]
fn a_real_module_state_dict_with_metadata_and_weight_norm_reads_exactly() {
    let bytes = std::fs::read(require("torch_module.ckpt")).unwrap();
    let sd = StateDict::parse(&bytes).unwrap();
    let want = &expected()["torch_module"];
    let mut names: Vec<&str> = sd.names().collect();
    names.sort();
    assert_eq!(names, keys(want));
    assert!(names.contains(&"2.parametrizations.weight.original0"));
    for name in sd.names() {
        check(&sd.tensor(name).unwrap(), &want[name]);
    }
}

#[test]
fn nemo_members_config_artifacts_and_state_dict() {
    let nemo = Nemo::open(require("tiny_magpie.nemo")).unwrap();
    let e = expected();
    let members: Vec<&str> = nemo.members().collect();
    let dict = &e["artifacts"]["ipa_cmudict-0.7b_nv23.01.txt"];
    assert_eq!(
        members,
        [
            dict["member"].as_str().unwrap(),
            e["artifacts"]["heteronyms-052722"]["member"]
                .as_str()
                .unwrap(),
            "model_config.yaml",
            "model_weights.ckpt"
        ]
    );
    assert!(nemo
        .config_yaml()
        .unwrap()
        .contains("inference_parameters:"));
    for name in [
        "ipa_cmudict-0.7b_nv23.01.txt".to_string(),
        format!("nemo:{}", dict["member"].as_str().unwrap()),
    ] {
        let (member, bytes) = nemo.artifact(&name).unwrap().unwrap();
        assert_eq!(member, dict["member"].as_str().unwrap());
        assert_eq!(hex(Sha256::digest(bytes)), dict["sha256"].as_str().unwrap());
    }
    assert!(nemo.artifact("no_such_file.txt").unwrap().is_none());
    let sd = nemo.state_dict().unwrap();
    let want = &e["nemo_state_dict"];
    let mut names: Vec<&str> = sd.names().collect();
    names.sort();
    assert_eq!(names, keys(want)); // serde_json's map is sorted
    for name in sd.names() {
        check(&sd.tensor(name).unwrap(), &want[name]);
    }
    // The generator saved a transposed view and two views of one storage.
    let fp = sd.meta("final_proj.weight").unwrap();
    assert_eq!(fp.stride, vec![1, fp.shape[0]]);
    let (a, b) = (
        sd.meta("audio_embeddings.0.weight").unwrap(),
        sd.meta("audio_embeddings.1.weight").unwrap(),
    );
    assert_eq!(a.storage_key, b.storage_key);
    assert_eq!(b.offset, a.shape[0] * a.shape[1]);
}

#[test]
fn gguf_header_metadata_and_tensors() {
    let g = Gguf::open(require("tiny_magpie.f16.gguf")).unwrap();
    assert_eq!(g.version(), 3);
    assert_eq!(g.alignment(), 32);
    let meta = |k: &str| g.get(k).unwrap_or_else(|| panic!("{k}"));
    assert_eq!(meta("general.architecture").as_str(), Some("magpietts"));
    assert_eq!(meta("magpietts.encoder.layers"), &MetaValue::I32(1));
    assert_eq!(
        meta("magpietts.inference.temperature"),
        &MetaValue::F32(0.55)
    );
    assert_eq!(
        meta("magpietts.inference.apply_attention_prior").as_bool(),
        Some(true)
    );
    let names: Vec<&str> = meta("magpietts.speaker_names")
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(names, ["John", "Sofia", "Aria", "Jason", "Leo"]);
    let cfg: Value = serde_json::from_str(meta("magpietts.config_json").as_str().unwrap()).unwrap();
    assert_eq!(cfg["inference_parameters"]["prior_epsilon"], 0.2);

    let want = &expected()["gguf_magpie"];
    let mut taps = 0;
    for name in g.names() {
        assert!(!name.ends_with(".causal_mask"), "{name}");
        let info = g.info(name).unwrap();
        let t = g.tensor(name).unwrap();
        if name.contains(".conv.weight.k") {
            taps += 1;
            assert_eq!((t.shape.len(), info.ggml_type), (2, 1), "{name}: 2-D f16");
        } else {
            check(&t, &want[name]);
            let float_2d = t.dtype.is_float() && t.shape.len() >= 2 && !name.ends_with(".bias");
            let ty = if float_2d {
                1
            } else if t.dtype.is_float() {
                0
            } else {
                26
            };
            assert_eq!(info.ggml_type, ty, "{name}");
        }
    }
    // Encoder k = 3 (2 convs), decoder and LT k = 1 (2 convs each).
    assert_eq!(taps, 2 * 3 + 2 + 2);
}

/// Reads every tensor of whatever parsed: must not panic.
fn read_all_gguf(g: &Gguf) {
    for n in g.names() {
        if let Ok(t) = g.tensor(n) {
            let _ = if t.dtype.is_float() {
                t.to_f32().map(|_| ())
            } else {
                t.to_i64().map(|_| ())
            };
        }
    }
}

fn read_all_nemo(n: &Nemo) {
    let _ = n.config_yaml();
    if let Ok(sd) = n.state_dict() {
        for name in sd.names() {
            let t = sd.tensor(name).unwrap();
            let _ = if t.dtype.is_float() {
                t.to_f32().map(|_| ())
            } else {
                t.to_i64().map(|_| ())
            };
        }
    }
}

/// Cut points: every byte of the first 256, then 97 spread over the file.
fn cuts(len: usize) -> Vec<usize> {
    (0..256.min(len))
        .chain((0..97).map(|i| i * len / 97))
        .collect()
}

#[test]
fn truncated_files_are_errors_not_panics() {
    let gguf = std::fs::read(require("tiny_magpie.f16.gguf")).unwrap();
    for cut in cuts(gguf.len()) {
        let r = Gguf::from_bytes("cut.gguf", gguf[..cut].to_vec());
        // The last tensor ends at most 31 bytes (alignment padding) before the end.
        if cut + 32 <= gguf.len() {
            assert!(r.is_err(), "GGUF cut at {cut} parsed");
        }
        if let Ok(g) = r {
            read_all_gguf(&g);
        }
    }
    let ckpt = std::fs::read(require("torch_dtypes.ckpt")).unwrap();
    for cut in cuts(ckpt.len()) {
        assert!(
            StateDict::parse(&ckpt[..cut]).is_err(),
            "torch zip cut at {cut}"
        );
    }
    let nemo = std::fs::read(require("tiny_magpie.nemo")).unwrap();
    for cut in cuts(nemo.len()) {
        match Nemo::from_bytes("cut.nemo", nemo[..cut].to_vec()) {
            // Past the weights only tar's zero padding is cut; before it the state dict must fail.
            Ok(n) => {
                if cut < 500_000 {
                    assert!(n.state_dict().is_err(), "nemo cut at {cut}");
                }
                read_all_nemo(&n)
            }
            Err(e) => assert!(e.to_string().contains(".nemo"), "{e}"),
        }
    }
}

/// A deterministic byte flipper (splitmix64).
fn flips(seed: u64, n: usize, len: usize) -> Vec<(usize, u8)> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            ((z as usize) % len, (z >> 56) as u8 | 1)
        })
        .collect()
}

#[test]
fn corrupted_bytes_never_panic() {
    let gguf = std::fs::read(require("tiny_magpie.f16.gguf")).unwrap();
    // Flips inside the header and metadata (the first 8 kB) are the interesting ones.
    for (i, (pos, x)) in flips(1, 400, 8192).into_iter().enumerate() {
        let mut b = gguf.clone();
        b[pos] ^= x;
        if let Ok(g) = Gguf::from_bytes(format!("flip{i}.gguf"), b) {
            read_all_gguf(&g);
        }
    }
    let ckpt = std::fs::read(require("torch_dtypes.ckpt")).unwrap();
    for (pos, x) in flips(2, 600, ckpt.len()) {
        let mut b = ckpt.clone();
        b[pos] ^= x;
        if let Ok(sd) = StateDict::parse(&b) {
            for n in sd.names() {
                let _ = sd.tensor(n).unwrap().to_i64();
            }
        }
    }
    let nemo = std::fs::read(require("tiny_magpie.nemo")).unwrap();
    // The tar headers and the pickle (first 8 kB of the weights member).
    let pkl_at = nemo
        .windows(8)
        .position(|w| w == b"data.pkl")
        .expect("data.pkl name in the archive");
    for (i, (pos, x)) in flips(3, 300, 4096)
        .into_iter()
        .chain(
            flips(4, 300, 8192)
                .into_iter()
                .map(|(p, x)| (pkl_at + p, x)),
        )
        .enumerate()
    {
        let mut b = nemo.clone();
        b[pos] ^= x;
        if let Ok(n) = Nemo::from_bytes(format!("flip{i}.nemo"), b) {
            read_all_nemo(&n);
        }
    }
}

// ---- hand-made hostile inputs ----

fn gguf_bytes(n_tensors: u64, kv: &[u8], tensors: &[u8], data: &[u8]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(n_tensors.to_le_bytes());
    b.extend(((!kv.is_empty()) as u64).to_le_bytes());
    b.extend(kv);
    b.extend(tensors);
    while !b.len().is_multiple_of(32) {
        b.push(0);
    }
    b.extend(data);
    b
}

fn gstr(s: &str) -> Vec<u8> {
    let mut b = (s.len() as u64).to_le_bytes().to_vec();
    b.extend(s.as_bytes());
    b
}

fn tensor_info(name: &str, ne: &[u64], ty: u32, offset: u64) -> Vec<u8> {
    let mut b = gstr(name);
    b.extend((ne.len() as u32).to_le_bytes());
    for d in ne {
        b.extend(d.to_le_bytes());
    }
    b.extend(ty.to_le_bytes());
    b.extend(offset.to_le_bytes());
    b
}

fn gguf_err(b: Vec<u8>) -> String {
    Gguf::from_bytes("hostile.gguf", b).unwrap_err().to_string()
}

#[test]
fn hostile_gguf_headers_are_errors() {
    let ok = gguf_bytes(1, &[], &tensor_info("t", &[2, 2], 0, 0), &[0u8; 16]);
    let g = Gguf::from_bytes("ok.gguf", ok).unwrap();
    assert_eq!(g.tensor("t").unwrap().shape, vec![2, 2]);

    assert!(gguf_err(b"GGUX\x03\0\0\0".to_vec()).contains("magic"));
    let mut huge = gguf_bytes(0, &[], &[], &[]);
    huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(gguf_err(huge).contains("cannot fit"));
    // A metadata string claiming 2^60 bytes.
    let mut kv = gstr("k");
    kv.extend(8u32.to_le_bytes());
    kv.extend((1u64 << 60).to_le_bytes());
    assert!(gguf_err(gguf_bytes(0, &kv, &[], &[])).contains("claims"));
    // An array claiming 2^40 values.
    let mut kv = gstr("k");
    kv.extend(9u32.to_le_bytes());
    kv.extend(5u32.to_le_bytes());
    kv.extend((1u64 << 40).to_le_bytes());
    assert!(gguf_err(gguf_bytes(0, &kv, &[], &[])).contains("cannot fit"));
    // Unknown metadata type.
    let mut kv = gstr("k");
    kv.extend(99u32.to_le_bytes());
    assert!(gguf_err(gguf_bytes(0, &kv, &[], &[0; 8])).contains("unknown metadata type"));
    // Tensor data past the end, a misaligned offset, an overflowing shape, too many dims.
    let e = gguf_err(gguf_bytes(
        1,
        &[],
        &tensor_info("t", &[4, 4], 0, 0),
        &[0u8; 16],
    ));
    assert!(e.contains("runs past the end"), "{e}");
    let e = gguf_err(gguf_bytes(
        1,
        &[],
        &tensor_info("t", &[1], 0, 4),
        &[0u8; 64],
    ));
    assert!(e.contains("alignment"), "{e}");
    let e = gguf_err(gguf_bytes(
        1,
        &[],
        &tensor_info("t", &[1 << 40, 1 << 40], 0, 0),
        &[0u8; 64],
    ));
    assert!(e.contains("overflows"), "{e}");
    let e = gguf_err(gguf_bytes(
        1,
        &[],
        &tensor_info("t", &[1; 5], 0, 0),
        &[0u8; 64],
    ));
    assert!(e.contains("dimensions"), "{e}");
    let e = gguf_err(gguf_bytes(
        1,
        &[],
        &tensor_info("t", &[1], 0, u64::MAX - 31),
        &[0u8; 64],
    ));
    assert!(e.contains("runs past the end"), "{e}");
    // Two tensors over the same bytes.
    let mut infos = tensor_info("a", &[4], 0, 0);
    infos.extend(tensor_info("b", &[4], 0, 0));
    let e = gguf_err(gguf_bytes(2, &[], &infos, &[0u8; 16]));
    assert!(e.contains("share bytes"), "{e}");
    // A quantised type is listed but refused on read.
    let g = Gguf::from_bytes(
        "q.gguf",
        gguf_bytes(1, &[], &tensor_info("q", &[32], 8, 0), &[0u8; 64]),
    )
    .unwrap();
    assert!(g.tensor("q").unwrap_err().to_string().contains("quantised"));
}

/// A short read names where it happened, in each container's own words.
#[test]
fn short_reads_say_where() {
    let e = Gguf::from_bytes("short.gguf", b"GGUF\x03\x00".to_vec()).unwrap_err();
    let e = e.to_string();
    assert!(
        e.contains("version at byte 4 needs 4 bytes but the file ends at 6"),
        "{e}"
    );
    let mut kv = b"GGUF\x03\x00\x00\x00".to_vec();
    kv.extend(0u64.to_le_bytes()); // tensors
    kv.extend(1u64.to_le_bytes()); // metadata entries
    kv.extend(3u64.to_le_bytes()); // key length
    kv.extend(b"key\x08\x00\x00\x00"); // type: string
    kv.extend(100u64.to_le_bytes()); // value length
    let e = Gguf::from_bytes("short.gguf", kv).unwrap_err().to_string();
    assert!(
        e.contains("key claims 100, more than the 0 bytes left"),
        "{e}"
    );
    assert_eq!(
        pickle::load(b"\x80\x02J\x01").unwrap_err(),
        "truncated: needs 4 bytes at 3 of 4"
    );
    assert_eq!(
        pickle::load(b"\x80\x02X\x05\x00\x00\x00ab").unwrap_err(),
        "truncated: needs 5 bytes at 7 of 9"
    );
    assert_eq!(
        pickle::load(b"\x80\x02ccollections\nOrdered").unwrap_err(),
        "truncated GLOBAL name"
    );
}

#[test]
fn hostile_pickles_are_errors() {
    let err = |p: &[u8]| pickle::load(p).unwrap_err();
    // A working minimal state dict: OrderedDict() with one int item.
    let ok = b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01X\x01\x00\x00\x00aK\x05s.";
    assert!(pickle::load(ok).is_ok());
    assert!(err(b"\x80\x02cos\nsystem\n.").contains("refuses the global os.system"));
    assert!(err(b"\x80\x02cbuiltins\neval\n.").contains("refuses"));
    assert!(err(b"\x80\x02ctorch\nFancyStorage\n.").contains("refuses"));
    assert!(err(b"\x80\x02i__main__\nX\n.").contains("unsupported pickle opcode 0x69"));
    assert!(err(b"\x80\x02\x81.").contains("unsupported pickle opcode"));
    assert!(err(b"\x80\x02X\xff\xff\xff\xff").contains("truncated"));
    assert!(err(b"\x80\x02\x8d\xff\xff\xff\xff\xff\xff\xff\xff").contains("truncated"));
    assert!(err(b"\x80\x02h\x07.").contains("memo"));
    assert!(err(b"\x80\x02.").contains("underflow"));
    assert!(err(b"\x80\x02(").contains("truncated"));
    assert!(err(&[b'('; 5000]).contains("MARK"));
    assert!(err(b"\x80\x02K\x01K\x02R.").contains("not a tuple"));
    assert!(err(b"\x80\x02ccollections\nOrderedDict\nK\x01\x85R.").contains("OrderedDict"));
    // DUP + APPEND on a shared list copies it each time: bounded, not quadratic.
    let mut bomb = b"\x80\x02]".to_vec();
    for _ in 0..4000 {
        bomb.extend(b"K\x01a");
    }
    for _ in 0..200_000 {
        bomb.extend(b"2K\x01a");
    }
    bomb.push(b'.');
    assert!(err(&bomb).contains("copies more"));
}

/// A torch-style zip with the given `data.pkl` and storages.
fn torch_zip(pkl: &[u8], records: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    w.start_file("archive/data.pkl", opts).unwrap();
    w.write_all(pkl).unwrap();
    for (name, bytes) in records {
        w.start_file(format!("archive/{name}"), opts).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// `{"w": _rebuild_tensor_v2(FloatStorage "0" of `numel`, offset, (n,), (1,), False, OrderedDict())}`.
fn tensor_pickle(numel: u8, offset: u8, n: u8) -> Vec<u8> {
    let mut p = b"\x80\x02}q\x00X\x01\x00\x00\x00wctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK".to_vec();
    p.push(numel);
    p.extend(b"tQK");
    p.push(offset);
    p.push(b'K');
    p.push(n);
    p.extend(b"\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtRs.");
    p
}

#[test]
fn hostile_torch_zips_are_errors() {
    let data = [0u8; 16];
    let ok = torch_zip(&tensor_pickle(4, 0, 4), &[("data/0", &data)]);
    let sd = StateDict::parse(&ok).unwrap();
    assert_eq!(sd.tensor("w").unwrap().to_f32().unwrap(), vec![0.0; 4]);

    let e = StateDict::parse(&torch_zip(&tensor_pickle(4, 0, 4), &[])).unwrap_err();
    assert!(
        e.contains("storage record archive/data/0 is missing"),
        "{e}"
    );
    let e =
        StateDict::parse(&torch_zip(&tensor_pickle(8, 0, 8), &[("data/0", &data)])).unwrap_err();
    assert!(e.contains("claims 8 elements"), "{e}");
    let e =
        StateDict::parse(&torch_zip(&tensor_pickle(4, 2, 4), &[("data/0", &data)])).unwrap_err();
    assert!(e.contains("reach past its storage"), "{e}");
    // One storage viewed as a tensor 64 times its size (stride 0).
    let mut p = tensor_pickle(4, 0, 255);
    let at = p.len() - 35; // the stride tuple `K\x01\x85` of tensor_pickle
    assert_eq!(&p[at..at + 3], b"K\x01\x85");
    p[at + 1] = 0;
    let e = StateDict::parse(&torch_zip(&p, &[("data/0", &data)])).unwrap_err();
    assert!(e.contains("more than 2x"), "{e}");
    let e = StateDict::parse(&torch_zip(b"\x80\x02K\x01.", &[])).unwrap_err();
    assert!(e.contains("does not hold a dict"), "{e}");
    let e = StateDict::parse(b"PK\x03\x04 not really a zip").unwrap_err();
    assert!(e.contains("not a torch zip"), "{e}");
}
