//! The portable random-weight recipe against the oracle's test vectors (the
//! tensors from its manifest; rill-mrt2's layout test checks the layout against it).

use std::path::PathBuf;

use rill_checkpoint::synth;
use sha2::{Digest, Sha256};

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/mrt2")
        .join(name)
}

/// A reference file that must exist: a missing one fails, saying how to get it back.
fn json(name: &str) -> serde_json::Value {
    let path = testdata(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "testdata/mrt2/{name} ({}): {e}. It is part of the repository: restore it with \
             `git checkout -- testdata/mrt2/{name}` (testdata/mrt2/README.md says how it was made)",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

fn hex_u64(v: &serde_json::Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

fn sha256_f32le(values: &[f32]) -> String {
    let mut h = Sha256::new();
    for chunk in values.chunks(1 << 16) {
        let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
        h.update(&bytes);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn test_vectors_seed0() {
    let tv = json("portable_init_test_vectors_seed0.json");
    for c in tv["fnv1a64_checks"].as_array().unwrap() {
        assert_eq!(
            synth::fnv1a64(c["input"].as_str().unwrap().as_bytes()),
            hex_u64(&c["hash"])
        );
    }
    for c in tv["splitmix64_checks"].as_array().unwrap() {
        assert_eq!(synth::splitmix64(hex_u64(&c["x"])), hex_u64(&c["out"]));
    }
    let specs = rill_testkit::manifest_tensors("mrt2_small");
    for t in tv["tensors"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        assert_eq!(synth::tensor_key(0, name), hex_u64(&t["key"]), "{name}");
        let spec = specs.iter().find(|s| s.name == name).unwrap();
        let values = synth::tensor_values(0, spec);
        for v in t["values"].as_array().unwrap() {
            let i = v["i"].as_u64().unwrap() as usize;
            assert_eq!(
                values[i].to_bits() as u64,
                hex_u64(&v["f32_bits"]),
                "{name}[{i}]"
            );
        }
        assert_eq!(
            sha256_f32le(&values),
            t["sha256_f32le"].as_str().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn every_tensor_sha256_seed0() {
    let tv = json("portable_init_test_vectors_seed0.json");
    let all = tv["all_tensors_sha256_f32le"].as_object().unwrap();
    let specs = rill_testkit::manifest_tensors("mrt2_small");
    assert_eq!(all.len(), specs.len());
    for spec in &specs {
        let values = synth::tensor_values(0, spec);
        assert_eq!(
            sha256_f32le(&values),
            all[&spec.name].as_str().unwrap(),
            "{}",
            spec.name
        );
    }
}
