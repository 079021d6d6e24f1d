//! The synthetic checkpoint files are byte-identical to the oracle's
//! `synth_checkpoint.py` output (sha256 of the whole file: small seeds 0, 1, 2 and
//! base seed 0), and the sha256 values docs/parity.md prints, the recordings name and
//! the code checks are one and the same.

use std::io::Read;

use rill_mrt2::layout::{oracle_sha256, ORACLE_FILE_SHA256};
use rill_mrt2::ModelKind;
use sha2::{Digest, Sha256};

fn file_sha256(path: &std::path::Path) -> String {
    let mut f = std::fs::File::open(path).unwrap();
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 22];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn synthetic_files_match_oracle_sha256() {
    let want = rill_testkit::json("synth_file_sha256.json");
    for seed in [0u64, 1, 2] {
        let path = rill_testkit::synthetic_checkpoint(ModelKind::Small.synth_file(seed));
        let got = file_sha256(&path);
        assert_eq!(got, want[seed.to_string()].as_str().unwrap(), "seed {seed}");
    }
}

/// The 9.8 GB mrt2_base file (the DB recording's weights), hashed once more here
/// because the parity test only loads it.
#[test]
fn synthetic_base_file_matches_oracle_sha256() {
    let want = rill_testkit::json("synth_file_sha256_base.json");
    let path = rill_testkit::synthetic_checkpoint(ModelKind::Base.synth_file(0));
    assert_eq!(file_sha256(&path), want["0"].as_str().unwrap());
}

#[test]
fn one_sha256_per_file_in_docs_code_and_recordings() {
    // The recorded lists.
    for (file, kind) in [
        ("synth_file_sha256.json", ModelKind::Small),
        ("synth_file_sha256_base.json", ModelKind::Base),
    ] {
        let j = rill_testkit::json(file);
        for (seed, sha) in j.as_object().unwrap() {
            let seed: u64 = seed.parse().unwrap();
            assert_eq!(
                oracle_sha256(kind, seed),
                sha.as_str(),
                "{file} seed {seed}"
            );
        }
    }
    // The checkpoints the recordings were made from.
    for name in ["D1", "D2", "D3", "DB", "C2", "D1-bf16", "D2-bf16"] {
        let meta = rill_testkit::json(&format!("{name}.json"));
        let kind = match meta["model"].as_str().unwrap() {
            "mrt2_small" => ModelKind::Small,
            "mrt2_base" => ModelKind::Base,
            m => panic!("{name}: unknown model {m}"),
        };
        let w = &meta["weights"];
        let seed = w["weights_seed"].as_u64().unwrap();
        assert_eq!(
            oracle_sha256(kind, seed),
            w["checkpoint_sha256"].as_str(),
            "{name}: checkpoint sha256"
        );
    }
    // The table in docs/parity.md, row by row, and no other hash in that page.
    let parity_md = "docs/parity.md";
    let doc = std::fs::read_to_string(rill_testkit::repo_root().join(parity_md)).unwrap();
    for (kind, seed, sha) in ORACLE_FILE_SHA256 {
        let row = format!("| {}, weights seed {seed} | `{sha}` |", kind.name());
        assert!(doc.contains(&row), "{parity_md} lacks the row {row}");
    }
    let hashes = doc
        .split(|c: char| !c.is_ascii_hexdigit())
        .filter(|w| w.len() == 64)
        .count();
    assert_eq!(hashes, ORACLE_FILE_SHA256.len(), "{parity_md} hashes");
}
