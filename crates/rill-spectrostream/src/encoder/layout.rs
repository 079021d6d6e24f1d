//! The encoder's weight file layout, for synthesising a random-weight
//! `encoder.safetensors` without the test data: the oracle's portable-init
//! manifest (`manifest_spectrostream_encoder.json`, a copy of
//! `testdata/mrt2/encoder/`'s) compiled into the crate.

use rill_checkpoint::synth::SynthTensor;

/// Model name of the synthetic encoder file (the manifest's `model`).
pub const SYNTH_MODEL: &str = "spectrostream_encoder";

const MANIFEST: &str = include_str!("manifest_spectrostream_encoder.json");

/// Every tensor of `encoder.safetensors` with its portable-init mean and std, in
/// the manifest's order.
pub fn synth_tensors() -> Vec<SynthTensor> {
    let m: serde_json::Value =
        serde_json::from_str(MANIFEST).expect("the built-in encoder manifest is JSON");
    let bits = |v: &serde_json::Value| {
        let hex = v.as_str().expect("manifest bits are strings");
        f64::from_bits(
            u64::from_str_radix(hex.trim_start_matches("0x"), 16).expect("manifest bits are hex"),
        )
    };
    m["tensors"]
        .as_array()
        .expect("the built-in encoder manifest lists tensors")
        .iter()
        .map(|t| SynthTensor {
            name: t["name"].as_str().expect("tensor name").to_string(),
            shape: t["shape"]
                .as_array()
                .expect("tensor shape")
                .iter()
                .map(|d| d.as_u64().expect("dimension") as usize)
                .collect(),
            mean: bits(&t["mean_f64_bits"]),
            std: bits(&t["std_f64_bits"]),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn manifest_lists_every_parameter() {
        let t = super::synth_tensors();
        assert_eq!(t.len(), 48);
        assert_eq!(t.iter().map(|t| t.numel()).sum::<usize>(), 9_251_904);
    }

    #[test]
    fn the_copy_is_the_test_data_manifest() {
        let testdata =
            include_str!("../../../../testdata/mrt2/encoder/manifest_spectrostream_encoder.json");
        assert_eq!(super::MANIFEST, testdata);
    }
}
