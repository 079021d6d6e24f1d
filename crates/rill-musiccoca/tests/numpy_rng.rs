//! numpy's legacy `RandomState(seed).randn(n)` against numpy 2.3.5
//! (`testdata/musiccoca/rng_cases.json`, made by `make_rng_cases.py`), bit for bit.

use std::path::PathBuf;

use rill_musiccoca::numpy_rng::{randn, randn_f32, RandomState};

fn cases() -> serde_json::Value {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/musiccoca/rng_cases.json");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (part of the repository; restore it with git)",
            p.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

fn bits(v: &serde_json::Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| u64::from_str_radix(x.as_str().unwrap(), 16).unwrap())
        .collect()
}

#[test]
fn randn_is_numpys() {
    let cases = cases();
    let cases = cases["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for c in cases {
        let seed = c["seed"].as_u64().unwrap() as u32;
        let want = bits(&c["bits"]);
        let got: Vec<u64> = match c.get("calls") {
            None => {
                let n = c["n"].as_u64().unwrap() as usize;
                randn(seed, n).iter().map(|x| x.to_bits()).collect()
            }
            Some(calls) => {
                let mut rs = RandomState::new(seed);
                calls
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|k| rs.randn(k.as_u64().unwrap() as usize))
                    .map(|x| x.to_bits())
                    .collect()
            }
        };
        assert_eq!(got.len(), want.len(), "seed {seed}");
        let first = got.iter().zip(&want).position(|(a, b)| a != b);
        assert_eq!(first, None, "seed {seed}: first difference at {first:?}");
    }
}

#[test]
fn f32_noise_is_the_rounded_f64() {
    let d = randn(0, 768);
    let f = randn_f32(0, 768);
    assert_eq!(f.len(), 768);
    assert!(d
        .iter()
        .zip(&f)
        .all(|(&a, &b)| (a as f32).to_bits() == b.to_bits()));
    // numpy: RandomState(0).randn(1)[0] = 1.764052345967664
    assert_eq!(d[0], 1.764052345967664);
}
