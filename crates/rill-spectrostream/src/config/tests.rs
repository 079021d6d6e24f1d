use super::*;

/// The block table the decoder ran on before it was derived (upstream's
/// `ratios` and `mults` in reverse, channels recombined in decoder_0).
#[test]
fn derived_blocks_are_the_decoder_table() {
    let b = |index, cin, cout, stride, f_in, groups| BlockSpec {
        index,
        cin,
        cout,
        stride,
        f_in,
        groups,
    };
    let expected = [
        b(0, 512, 1024, [2, 1], 5, 1),
        b(1, 512, 256, [2, 2], 5, 2),
        b(2, 256, 256, [1, 2], 10, 2),
        b(3, 256, 256, [1, 2], 20, 2),
        b(4, 256, 128, [1, 3], 40, 2),
        b(5, 128, 128, [1, 2], 120, 2),
        b(6, 128, 64, [1, 2], 240, 2),
    ];
    assert_eq!(SPECTROSTREAM.blocks(), expected);
    assert_eq!(SPECTROSTREAM.input_bins(), 5);
    assert_eq!(SPECTROSTREAM.input_channels(), 512);
    assert_eq!(SPECTROSTREAM.stft_per_frame(), 4);
    let last = expected[BLOCK_COUNT - 1];
    assert_eq!(last.f_out(), SPECTROSTREAM.stft_bins);
    assert_eq!(last.cout, SPECTROSTREAM.base_channels);
    let convts: Vec<String> = expected.iter().map(|b| b.convt_path()).collect();
    assert_eq!(
        convts,
        [
            "decoder_0/conv2dtranspose_4x3",
            "decoder_1/conv2dtranspose_4x4",
            "decoder_2/conv2dtranspose_3x4",
            "decoder_3/conv2dtranspose_3x4",
            "decoder_4/conv2dtranspose_3x6",
            "decoder_5/conv2dtranspose_3x4",
            "decoder_6/conv2dtranspose_3x4",
        ]
    );
}

/// The codec's tensors are the reference checkpoints' `params/soundstream/…`
/// tensors: names, shapes, init rules (mean and std to the bit), nothing more.
#[test]
fn tensor_specs_match_the_reference_manifests() {
    let mut ours = SPECTROSTREAM.tensor_specs();
    ours.sort_by(|a, b| a.name.cmp(&b.name));
    for file in ["manifest_mrt2_small.json", "manifest_mrt2_base.json"] {
        let manifest = rill_testkit::json(file);
        let reference: Vec<&serde_json::Value> = manifest["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| {
                t["name"]
                    .as_str()
                    .unwrap()
                    .starts_with("params/soundstream/")
            })
            .collect();
        assert_eq!(ours.len(), reference.len(), "{file}: tensor count");
        for (spec, t) in ours.iter().zip(reference) {
            rill_testkit::assert_spec_is_manifest_entry(spec, t);
        }
    }
}
