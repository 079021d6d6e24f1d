//! torch's CPU generator against vectors from the oracle's numpy re-implementation
//! (`torch_rng.json`, made by `make_model_fixtures.py` with `torch_rng_ref.py`) and
//! against the exponential noise recorded inside upstream's first `multinomial` call.

mod common;

use rill_magpie::rng::Mt19937;
use rill_magpie::sampler::pick;

fn bits_u64(s: &serde_json::Value) -> u64 {
    u64::from_str_radix(s.as_str().unwrap(), 16).unwrap()
}
fn bits_u32(s: &serde_json::Value) -> u32 {
    u32::from_str_radix(s.as_str().unwrap(), 16).unwrap()
}

#[test]
fn mt19937_uniform_and_exponential_match_torch() {
    let j = common::json("torch_rng.json");
    for case in j["cases"].as_array().unwrap() {
        let seed = case["seed"].as_u64().unwrap();
        let mut g = Mt19937::new(seed);
        for w in case["u32_first8"].as_array().unwrap() {
            assert_eq!(g.next_u32() as u64, w.as_u64().unwrap(), "seed {seed}");
        }
        let mut g = Mt19937::new(seed);
        let u: Vec<f64> = (0..700).map(|_| g.uniform_f64()).collect();
        for (i, b) in case["uniform_idx"]
            .as_array()
            .unwrap()
            .iter()
            .zip(case["uniform_f64_bits"].as_array().unwrap())
        {
            assert_eq!(u[i.as_u64().unwrap() as usize].to_bits(), bits_u64(b));
        }
        let mut g = Mt19937::new(seed);
        let want = case["exponential_f32_bits"].as_array().unwrap();
        assert_eq!(want.len(), 700);
        for (i, b) in want.iter().enumerate() {
            assert_eq!(
                g.exponential_f32().to_bits(),
                bits_u32(b),
                "seed {seed} draw {i}"
            );
        }
    }
}

#[test]
fn multinomial_is_argmax_of_p_over_noise() {
    let j = &common::json("torch_rng.json")["multinomial"];
    let (rows, cols) = (
        j["rows"].as_u64().unwrap() as usize,
        j["cols"].as_u64().unwrap() as usize,
    );
    let p: Vec<f32> = j["probs_f32_bits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| f32::from_bits(bits_u32(b)))
        .collect();
    let mut g = Mt19937::new(j["seed"].as_u64().unwrap());
    let mut q = vec![0f32; rows * cols];
    g.fill_exponential(&mut q);
    for r in 0..rows {
        let got = pick(&p[r * cols..(r + 1) * cols], &q[r * cols..(r + 1) * cols]);
        assert_eq!(got as u64, j["picks"][r].as_u64().unwrap());
    }
}

#[test]
fn recorded_sampler_noise_is_reproduced() {
    // The noise torch drew inside the cached run's first multinomial call (2 rows x 2024).
    let z = common::npz("model_cached.npz");
    let (_, want) = common::f32s(&z, "mn_noise_first");
    let mut g = Mt19937::new(0);
    let mut q = vec![0f32; want.len()];
    g.fill_exponential(&mut q);
    let same = q
        .iter()
        .zip(&want)
        .filter(|(a, b)| a.to_bits() == b.to_bits())
        .count();
    assert_eq!(
        same,
        want.len(),
        "{} of {} noise values bit-exact",
        same,
        want.len()
    );
}
